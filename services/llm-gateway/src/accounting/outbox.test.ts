import { mkdirSync, renameSync, rmdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { createInProcessBus } from '@platform/bus';
import type { LlmCompletionEvent } from '@platform/contracts';
import { createLogger, ManualClock, OUTAGE_REMINDER_MS, silentLogger, systemClock } from '@platform/kernel';
import { type Collection, createEmbeddedStore, type Doc, type Store } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import { Outbox } from './outbox';

const event = (i: number): LlmCompletionEvent => ({
  id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
  version: 1,
  occurredAt: new Date().toISOString(),
  orgSlug: 'acme',
  model: 'sim/gpt',
  provider: 'sim',
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  cost: 0,
});

/** The store, with the number of insertMany calls its `outbox` collection received. */
function countingStore(inner: Store) {
  const writes = { insertMany: 0 };
  const store: Store = {
    engine: inner.engine,
    ping: () => inner.ping(),
    close: () => inner.close(),
    blobs: (bucket) => inner.blobs(bucket),
    collection<T extends Doc>(name: string, indexes?: Parameters<Store['collection']>[1]): Collection<T> {
      const c = inner.collection<T>(name, indexes);
      return Object.assign(Object.create(c) as Collection<T>, {
        insertMany: (docs: T[]) => {
          writes.insertMany++;
          return c.insertMany!(docs);
        },
      });
    },
  };
  return { store, writes };
}

const outboxOn = (store: Store, bus = createInProcessBus()) =>
  new Outbox({
    store,
    bus,
    clock: systemClock,
    logger: silentLogger(),
    intervalMs: 5,
    publishTimeoutMs: 1_000,
  });

/** a bus whose durable publications fail while `away` is true, and a consumer noting what arrives */
async function busThatMayRefuse() {
  const inner = createInProcessBus();
  const seen: string[] = [];
  await inner.ensureStream({ name: 'analytics', subjects: ['analytics.>'], maxAgeMs: 60_000 });
  await inner.consumeDurable({
    stream: 'analytics',
    durable: 't',
    filterSubject: 'analytics.llm.completion',
    concurrency: 64,
    retryDelayMs: 10,
    handler: async (m) => {
      seen.push((JSON.parse(m.data) as LlmCompletionEvent).id);
    },
  });
  const state = { away: false };
  const bus = Object.assign(Object.create(inner) as typeof inner, {
    publishDurable: (...args: Parameters<typeof inner.publishDurable>) =>
      state.away ? Promise.reject(new Error('bus away')) : inner.publishDurable(...args),
  });
  return { bus, inner, seen, state };
}

describe('usage outbox', () => {
  it('group commit: 300 events recorded at once are stored in a few writes, all published, none left', async () => {
    const data = tempDir('outbox-group-');
    const { store, writes } = countingStore(createEmbeddedStore({ dataDir: data.dir }));
    const { bus, seen } = await busThatMayRefuse();
    const outbox = outboxOn(store, bus);
    try {
      await Promise.all(Array.from({ length: 300 }, (_, i) => outbox.record(event(i))));
      expect(writes.insertMany).toBeLessThanOrEqual(3);
      await outbox.stop();
      expect(await outbox.size()).toBe(0);
      expect(new Set(seen).size).toBe(300);
    } finally {
      await bus.close();
      await store.close();
      data.remove();
    }
  });

  it('its timer never ends the process when the data folder disappears: the flush is logged and retried', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const data = tempDir('outbox-gone-');
    const store = createEmbeddedStore({ dataDir: data.dir });
    const outbox = outboxOn(store);
    try {
      await outbox.record(event(1));
      rmSync(data.dir, { recursive: true, force: true });
      // a write into the missing folder breaks the collection (the event goes to the bus directly); every flush
      // then fails to read it
      await expect(outbox.record(event(2))).resolves.toBeUndefined();
      outbox.start();
      await expect(outbox.flushQuietly()).resolves.toBeUndefined();
      await expect(outbox.flush()).rejects.toMatchObject({ kind: 'unavailable' });
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      await outbox.stop();
      await store.close();
      process.off('unhandledRejection', onUnhandled);
      data.remove();
    }
  });

  it('a flush leaves alone the events this instance is still publishing (no duplicate for llm-quota)', async () => {
    const store = createEmbeddedStore();
    const bus = createInProcessBus();
    const published: string[] = [];
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slowBus = Object.assign(Object.create(bus) as typeof bus, {
      publishDurable: async (_subject: string, payload: LlmCompletionEvent) => {
        published.push(payload.id);
        await held;
      },
    });
    const outbox = outboxOn(store, slowBus);
    try {
      const recorded = outbox.record(event(7));
      // stored, its publication not acknowledged yet
      while ((await outbox.size()) === 0) await new Promise((resolve) => setImmediate(resolve));
      await outbox.flush();
      expect(published).toEqual([event(7).id]);
      release();
      await recorded;
      await outbox.stop();
      expect(published).toEqual([event(7).id]);
      expect(await outbox.size()).toBe(0);
    } finally {
      await store.close();
      await bus.close();
    }
  });

  it('an hour of bus outage logs one line when it starts, one a minute while it lasts, and one when it ends', async () => {
    const store = createEmbeddedStore();
    const { bus, inner, seen, state } = await busThatMayRefuse();
    const lines: Array<{ level: number; msg: string; [field: string]: unknown }> = [];
    const logger = createLogger({
      name: 'test',
      destination: { write: (line: string) => lines.push(JSON.parse(line)) },
    });
    const clock = new ManualClock('2026-03-01T10:00:00Z');
    // a flush every 10 s, six a minute: a line per flush shows as plainly as with a flush a second, for a tenth of
    // the store's work (3,600 flushes took half a minute on a loaded CI machine)
    const intervalMs = 10_000;
    const outbox = new Outbox({ store, bus, clock, logger, intervalMs, publishTimeoutMs: 1_000 });
    try {
      await outbox.record(event(0));
      state.away = true;
      // requests go on during the outage: each one's event is refused and waits
      let recorded = 1;
      const recordOne = () => outbox.record(event(recorded++));
      await Promise.all([recordOne(), recordOne(), recordOne()]);
      expect(lines).toEqual([
        expect.objectContaining({
          level: 40,
          msg: expect.stringMatching(/^outbox: the bus refuses events.*llm_gateway_usage_outbox_events/),
          err: expect.objectContaining({ message: 'bus away' }),
          retryEveryMs: intervalMs,
        }),
      ]);

      // the timer's flushes of an hour, a request every 100 s
      const hour = 3_600_000;
      const waitingAt = new Map<number, number>();
      for (let elapsed = intervalMs; elapsed <= hour; elapsed += intervalMs) {
        clock.advance(intervalMs);
        if (elapsed % 100_000 === 0) await recordOne();
        await outbox.flush();
        if (elapsed % OUTAGE_REMINDER_MS === 0) waitingAt.set(elapsed, recorded - 1);
      }
      const reminders = lines.slice(1);
      expect(reminders).toHaveLength(hour / OUTAGE_REMINDER_MS);
      expect(reminders).toEqual(
        [...waitingAt].map(([elapsed, waiting]) =>
          expect.objectContaining({
            level: 40,
            msg: 'outbox: the bus still refuses events',
            since: '2026-03-01T10:00:00.000Z',
            outageSeconds: elapsed / 1000,
            waiting,
          }),
        ),
      );

      state.away = false;
      clock.advance(intervalMs);
      await outbox.flush();
      expect(lines).toHaveLength(1 + hour / OUTAGE_REMINDER_MS + 1);
      expect(lines.at(-1)).toEqual(
        expect.objectContaining({
          level: 30,
          msg: 'outbox: the bus takes events again; what waited is delivered',
          delivered: recorded - 1,
          since: '2026-03-01T10:00:00.000Z',
          outageSeconds: (hour + intervalMs) / 1000,
        }),
      );
      expect(await outbox.size()).toBe(0);
      await waitFor(() => seen.length === recorded, { what: 'every event delivered' });
      expect(new Set(seen).size).toBe(recorded);

      // the next outage is told again
      state.away = true;
      await recordOne();
      expect(lines.at(-1)).toEqual(
        expect.objectContaining({
          level: 40,
          msg: expect.stringMatching(/^outbox: the bus refuses events/),
        }),
      );
    } finally {
      state.away = false;
      await outbox.stop();
      await inner.close();
      await store.close();
    }
  }, 120_000);

  describe('when the store refuses events', () => {
    /** the event published and removed from the outbox (its collection file exists, and nothing waits in it) */
    async function recordedAndRemoved(outbox: Outbox, e: LlmCompletionEvent) {
      await outbox.record(e);
      await waitFor(async () => (await outbox.size()) === 0, { what: 'the outbox empty' });
    }

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

    it('publishes them directly: none lost, each delivered once', async () => {
      const data = tempDir('outbox-direct-');
      const store = createEmbeddedStore({ dataDir: data.dir });
      const { bus, inner, seen } = await busThatMayRefuse();
      const outbox = outboxOn(store, bus);
      try {
        await recordedAndRemoved(outbox, event(1));
        const repair = breakOutbox(data.dir);
        await Promise.all([2, 3, 4].map((i) => outbox.record(event(i))));
        repair();
        await outbox.stop();
        await waitFor(() => seen.length === 4, { what: 'four events delivered' });
        await new Promise((resolve) => setTimeout(resolve, 100)); // and no duplicate after them
        expect(seen.sort()).toEqual([1, 2, 3, 4].map((i) => event(i).id));
        expect(await outbox.size()).toBe(0);
      } finally {
        await inner.close();
        await store.close();
        data.remove();
      }
    });

    it('holds what the bus refuses too, and stores or publishes it once either is back', async () => {
      const data = tempDir('outbox-held-');
      const store = createEmbeddedStore({ dataDir: data.dir });
      const { bus, inner, seen, state } = await busThatMayRefuse();
      const outbox = outboxOn(store, bus);
      try {
        await recordedAndRemoved(outbox, event(1));
        const repair = breakOutbox(data.dir);
        state.away = true;
        await outbox.record(event(2)); // neither the store nor the bus takes it: held
        await expect(outbox.flush()).rejects.toMatchObject({ kind: 'unavailable' });
        repair();
        await outbox.flush(); // the store is back: the held event is stored, the bus still refuses it
        expect(await outbox.size()).toBe(1);
        state.away = false;
        await outbox.flush();
        expect(await outbox.size()).toBe(0);
        await waitFor(() => seen.length === 2, { what: 'both events delivered' });
        expect(seen.sort()).toEqual([event(1).id, event(2).id]);
      } finally {
        await outbox.stop();
        await inner.close();
        await store.close();
        data.remove();
      }
    });

    it('logs each event it still holds when it stops while both are away', async () => {
      const data = tempDir('outbox-lost-');
      const store = createEmbeddedStore({ dataDir: data.dir });
      const { bus, inner, state } = await busThatMayRefuse();
      const lines: string[] = [];
      const logger = createLogger({
        name: 'test',
        destination: { write: (line: string) => lines.push(line) },
      });
      const outcomes: string[] = [];
      const outbox = new Outbox({
        store,
        bus,
        clock: systemClock,
        logger,
        intervalMs: 5,
        publishTimeoutMs: 1_000,
        onPublished: (outcome) => outcomes.push(outcome),
      });
      try {
        await recordedAndRemoved(outbox, event(1));
        const repair = breakOutbox(data.dir);
        state.away = true;
        await outbox.record(event(2));
        await outbox.stop();
        repair();
        const lost = lines.map((l) => JSON.parse(l)).filter((l) => /lost at shutdown/.test(l.msg));
        expect(lost.map((l) => l.event.id)).toEqual([event(2).id]);
        // what llm_gateway_usage_events_total counts, by outcome
        expect(outcomes).toEqual(['published', 'held', 'lost']);
      } finally {
        await inner.close();
        await store.close();
        data.remove();
      }
    });
  });
});
