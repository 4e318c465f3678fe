import { mkdirSync, renameSync, rmdirSync } from 'node:fs';
import path from 'node:path';
import { createInProcessBus } from '@platform/bus';
import type { LlmCompletionEvent } from '@platform/contracts';
import { createLogger, ManualClock, OUTAGE_REMINDER_MS } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import { Outbox } from '../src/accounting/outbox';

const event = (i: number): LlmCompletionEvent => ({
  id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
  version: 1,
  occurredAt: '2026-03-01T10:00:00Z',
  orgSlug: 'acme',
  model: 'sim/gpt',
  provider: 'sim',
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  cost: 0,
});

/** the outbox's collection file becomes a folder: every write and read of it fails until repaired */
function breakOutbox(dir: string) {
  const file = path.join(dir, 'outbox.db');
  renameSync(file, `${file}.away`);
  mkdirSync(file);
  return () => {
    rmdirSync(file);
    renameSync(`${file}.away`, file);
  };
}

describe('the usage outbox while its store refuses events', () => {
  it('logs why once, then once a minute, and once when the store takes events again', async () => {
    const data = tempDir('outbox-store-outage-');
    const store = createEmbeddedStore({ dataDir: data.dir });
    const bus = createInProcessBus();
    await bus.ensureStream({ name: 'analytics', subjects: ['analytics.>'], maxAgeMs: 600_000 });
    const seen: string[] = [];
    await bus.consumeDurable({
      stream: 'analytics',
      durable: 't',
      filterSubject: 'analytics.llm.completion',
      handler: async (m) => void seen.push((JSON.parse(m.data) as LlmCompletionEvent).id),
    });
    const lines: Array<{ level: number; msg: string; [field: string]: unknown }> = [];
    const clock = new ManualClock('2026-03-01T10:00:00Z');
    const outbox = new Outbox({
      store,
      bus,
      clock,
      logger: createLogger({
        name: 'test',
        destination: { write: (line: string) => lines.push(JSON.parse(line)) },
      }),
      intervalMs: 1_000,
      publishTimeoutMs: 10_000,
    });
    try {
      let recorded = 0;
      const recordOne = () => outbox.record(event(recorded++));
      await recordOne();
      await waitFor(async () => (await outbox.size()) === 0, { timeoutMs: 10_000, what: 'the outbox empty' });
      const repair = breakOutbox(data.dir);
      // the first write into it starts the outage (reads fail from then on too)
      await recordOne();

      // ten minutes of the timer's flushes, one a second, and a request every 10 s
      const minutes = 10;
      for (let elapsed = 1_000; elapsed <= minutes * 60_000; elapsed += 1_000) {
        clock.advance(1_000);
        if (elapsed % 10_000 === 0) await recordOne();
        await outbox.flushQuietly();
      }
      expect(lines[0]).toEqual(
        expect.objectContaining({
          level: 40,
          msg: expect.stringMatching(
            /^outbox: the store refuses usage events.*llm_gateway_usage_events_total/,
          ),
          err: expect.objectContaining({ message: expect.any(String) }),
        }),
      );
      expect(lines.slice(1)).toEqual(
        Array.from({ length: (minutes * 60_000) / OUTAGE_REMINDER_MS }, (_, i) =>
          expect.objectContaining({
            level: 40,
            msg: 'outbox: the store still refuses usage events',
            held: 0,
            since: '2026-03-01T10:00:00.000Z',
            outageSeconds: ((i + 1) * OUTAGE_REMINDER_MS) / 1000,
          }),
        ),
      );

      repair();
      clock.advance(1_000);
      await recordOne();
      expect(lines).toHaveLength(1 + minutes + 1);
      expect(lines.at(-1)).toEqual(
        expect.objectContaining({
          level: 30,
          msg: 'outbox: the store takes usage events again',
          since: '2026-03-01T10:00:00.000Z',
          outageSeconds: minutes * 60 + 1,
        }),
      );
      // the bus took every event meanwhile: none lost
      await waitFor(() => seen.length === recorded, { timeoutMs: 10_000, what: 'every event delivered' });
      expect(new Set(seen).size).toBe(recorded);
    } finally {
      await outbox.stop();
      await bus.close();
      await store.close();
      data.remove();
    }
  }, 120_000);
});
