import { readFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir, waitFor } from '@platform/testkit';
import { createEmbeddedStore } from '../src';

interface Visit {
  _id: string;
  expiresAt: Date;
}

type Entry = { _id?: string; $$deleted?: boolean };

/** The ids the collection's file marks deleted (read from the file, not through the store). */
const deletedIn = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    // a write of several documents is one line, `$$batch:[…]`
    .flatMap(
      (line) => (line.startsWith('$$batch:') ? JSON.parse(line.slice(8)) : [JSON.parse(line)]) as Entry[],
    )
    .filter((l) => l.$$deleted)
    .map((l) => l._id);

describe('embedded store: TTL indexes', () => {
  it('removes expired documents that nothing reads, by the store’s clock, also after a restart', async () => {
    const data = tempDir('store-ttl-');
    const file = path.join(data.dir, 'visits.db');
    let now = Date.parse('2026-01-01T00:00:00Z');
    const open = () => {
      const store = createEmbeddedStore({ dataDir: data.dir, ttlSweepIntervalMs: 10, now: () => now });
      const visits = store.collection<Visit>('visits', [{ fields: { expiresAt: 1 }, expireAfterSeconds: 0 }]);
      return { store, visits };
    };
    let { store, visits } = open();
    try {
      await visits.insertOne({ _id: 'soon', expiresAt: new Date('2026-01-01T00:00:10Z') });
      await visits.insertOne({ _id: 'later', expiresAt: new Date('2026-01-01T01:00:00Z') });
      await new Promise((resolve) => setTimeout(resolve, 100)); // ten sweeps: nothing has expired yet
      expect(deletedIn(file)).toEqual([]);

      now += 60_000;
      await waitFor(() => deletedIn(file).includes('soon'), {
        timeoutMs: 5_000,
        what: 'the expired visit removed',
      });
      expect(deletedIn(file)).toEqual(['soon']);
      expect((await visits.find({})).map((v) => v._id)).toEqual(['later']);

      // NeDB's own TTL is forgotten when a file is loaded again; the store's is not
      await store.close();
      ({ store, visits } = open());
      now += 3_600_000;
      await waitFor(() => deletedIn(file).includes('later'), {
        timeoutMs: 5_000,
        what: 'the visit removed after a restart',
      });
      expect(await visits.find({})).toEqual([]);

      // a backlog (an upgrade, a long stop) goes in several writes of a thousand, all of it
      const past = new Date(now - 1_000);
      await visits.insertMany!(
        Array.from({ length: 2_500 }, (_, i) => ({ _id: `old-${i}`, expiresAt: past })),
      );
      // (the reload above rewrote the file without the earlier deletions)
      await waitFor(() => deletedIn(file).filter((id) => id?.startsWith('old-')).length === 2_500, {
        timeoutMs: 10_000,
        what: 'the backlog removed',
      });
      expect(await visits.count({})).toBe(0);
    } finally {
      await store.close();
      data.remove();
    }
  });
});
