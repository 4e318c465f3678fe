import { createLogger, ManualClock, OUTAGE_REMINDER_MS } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { openStoreWhenReachable, STORE_RETRY_MS } from '../src/infrastructure';

describe('a service started while its database cannot be reached', () => {
  it('logs why once, then once a minute, and once when the database answers, however many attempts fail', async () => {
    const store = createEmbeddedStore();
    const lines: Array<{ level: number; msg: string; [field: string]: unknown }> = [];
    const clock = new ManualClock('2026-03-01T10:00:00Z');
    // ten minutes of attempts, one every STORE_RETRY_MS (the clock moves by that much per attempt)
    const minutes = 10;
    const failing = (minutes * 60_000) / STORE_RETRY_MS;
    let attempts = 0;
    // what readiness shows: told at every failed attempt, whatever the log says
    const reasons: string[] = [];
    try {
      const opened = await openStoreWhenReachable(
        async (): Promise<Store> => {
          if (attempts > 0) clock.advance(STORE_RETRY_MS);
          attempts++;
          if (attempts <= failing) throw new Error('connect ECONNREFUSED 127.0.0.1:27017');
          return store;
        },
        {
          logger: createLogger({
            name: 'test',
            destination: { write: (line: string) => lines.push(JSON.parse(line)) },
          }),
          isTransient: () => true,
          onUnreachable: (reason) => reasons.push(reason),
          retryMs: 0,
          clock,
        },
      );
      expect(opened).toBe(store);
      expect(reasons).toEqual(Array(failing).fill('connect ECONNREFUSED 127.0.0.1:27017'));
      expect(lines[0]).toEqual(
        expect.objectContaining({
          level: 40,
          msg: expect.stringMatching(/^store: the database cannot be reached; trying again every 0 ms/),
          reason: 'connect ECONNREFUSED 127.0.0.1:27017',
        }),
      );
      expect(lines.slice(1, -1)).toEqual(
        Array.from({ length: (minutes * 60_000) / OUTAGE_REMINDER_MS - 1 }, (_, i) =>
          expect.objectContaining({
            level: 40,
            msg: 'store: the database still cannot be reached',
            reason: 'connect ECONNREFUSED 127.0.0.1:27017',
            since: '2026-03-01T10:00:00.000Z',
            outageSeconds: ((i + 1) * OUTAGE_REMINDER_MS) / 1000,
          }),
        ),
      );
      expect(lines.at(-1)).toEqual(
        expect.objectContaining({
          level: 30,
          msg: 'store: the database answers',
          attempts: failing + 1,
          outageSeconds: minutes * 60,
        }),
      );
      expect(lines).toHaveLength(1 + (minutes * 60_000) / OUTAGE_REMINDER_MS);
    } finally {
      await store.close();
    }
  });
});
