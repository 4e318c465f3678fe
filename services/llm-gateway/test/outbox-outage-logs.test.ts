import { type Bus, createNatsBus } from '@platform/bus';
import type { LlmCompletionEvent } from '@platform/contracts';
import { createLogger, ManualClock, OUTAGE_REMINDER_MS } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { describeWithNats, logLines, startNatsServer, waitFor } from '@platform/testkit';
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

describeWithNats('the usage outbox on a NATS without JetStream', () => {
  it('logs why once, then once a minute, and once when JetStream is there and what waited is delivered', async () => {
    const server = await startNatsServer({ jetstream: false });
    const bus: Bus = await createNatsBus({ url: server.url, name: 'outbox-logs' });
    const store = createEmbeddedStore();
    const { lines, destination } = logLines();
    const clock = new ManualClock('2026-03-01T10:00:00Z');
    const outbox = new Outbox({
      store,
      bus,
      clock,
      logger: createLogger({ name: 'test', destination }),
      intervalMs: 1_000,
      publishTimeoutMs: 10_000,
    });
    const seen: string[] = [];
    try {
      // what llm-quota does at its start: both wait for JetStream
      await bus.ensureStream({ name: 'ANALYTICS', subjects: ['analytics.>'] });
      const consumer = await bus.consumeDurable({
        stream: 'ANALYTICS',
        durable: 'outbox-logs',
        filterSubject: 'analytics.llm.completion',
        handler: async (m) => void seen.push((JSON.parse(m.data) as LlmCompletionEvent).id),
      });
      await Promise.all([1, 2, 3].map((i) => outbox.record(event(i))));
      expect(lines).toEqual([
        expect.objectContaining({
          level: 40,
          msg: expect.stringMatching(/^outbox: the bus refuses events/),
          // why, in the bus's words: what to fix on which server
          err: expect.objectContaining({
            message: expect.stringContaining(`JetStream is not enabled on ${server.url}`),
          }),
        }),
      ]);

      // ten minutes of the timer's flushes, one every 10 s
      const minutes = 10;
      for (let i = 0; i < (minutes * 60_000) / 10_000; i++) {
        clock.advance(10_000);
        await outbox.flush();
      }
      expect(lines.slice(1)).toEqual(
        Array.from({ length: (minutes * 60_000) / OUTAGE_REMINDER_MS }, (_, i) =>
          expect.objectContaining({
            level: 40,
            msg: 'outbox: the bus still refuses events',
            waiting: 3,
            since: '2026-03-01T10:00:00.000Z',
            outageSeconds: ((i + 1) * OUTAGE_REMINDER_MS) / 1000,
          }),
        ),
      );

      await server.stop();
      await server.start({ jetstream: true });
      // flushes until the bus has taken up JetStream and made the stream (the clock stands still meanwhile)
      const back = await waitFor(
        async () => {
          await outbox.flush();
          return lines.find((line) => line.level === 30) ?? null;
        },
        { timeoutMs: 30_000, what: 'the line saying the bus takes events again' },
      );
      expect(back).toMatchObject({
        msg: 'outbox: the bus takes events again; what waited is delivered',
        delivered: 3,
        since: '2026-03-01T10:00:00.000Z',
        outageSeconds: minutes * 60,
      });
      expect(lines).toHaveLength(1 + minutes + 1);
      await waitFor(() => seen.length === 3, { timeoutMs: 15_000, what: 'the three events consumed' });
      expect(seen.sort()).toEqual([1, 2, 3].map((i) => event(i).id));
      await consumer.stop();
    } finally {
      await outbox.stop();
      await bus.close();
      await store.close();
      await server.dispose();
    }
    // its waits' deadlines add up to 45 s beside a nats-server's two starts: a slow step fails naming what it waited for
  }, 90_000);
});
