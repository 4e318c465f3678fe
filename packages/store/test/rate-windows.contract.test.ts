import { ManualClock } from '@platform/kernel';
import { tempDir, waitFor } from '@platform/testkit';
import { createEmbeddedStore, rateWindowsFor, type Store, StoreRateWindows } from '../src';
import { MemoryWindows } from '../src/rate-windows';
import { rateWindowsContract } from './rate-windows-contract';

// What `pnpm start` and the tests run: the maps of the process owning the embedded store (decision 0078).
rateWindowsContract('maps of the process owning an embedded store', {
  open: async () => createEmbeddedStore(),
  windows: rateWindowsFor,
});

// What MongoDB runs, on the embedded engine: the protocol of the documents is tested here even without MongoDB.
let data: ReturnType<typeof tempDir> | undefined;
rateWindowsContract('documents of an embedded store (the protocol MongoDB runs)', {
  open: async (clock) => {
    data = tempDir('rate-windows-');
    return createEmbeddedStore({ dataDir: data.dir, now: () => clock.now().getTime() });
  },
  windows: (store, clock, options) => new StoreRateWindows(store, clock, options),
  cleanup: async () => data?.remove(),
});

interface StoredWindow {
  _id: string;
  points: number;
  expire: Date;
  removeAt: Date;
}

describe('rate windows: where they live', () => {
  const clock = new ManualClock('2026-11-23T10:00:15Z');
  const minute = { name: 'rpm', durationMs: 60_000 };

  it('are the store’s documents on MongoDB, the process’s maps on the embedded engine', async () => {
    const embedded = createEmbeddedStore();
    const asMongo: Store = { ...embedded, engine: 'mongodb', collection: embedded.collection.bind(embedded) };
    expect(rateWindowsFor(asMongo, clock, minute)).toBeInstanceOf(StoreRateWindows);
    const inProcess = rateWindowsFor(embedded, clock, minute);
    expect(inProcess).toBeInstanceOf(MemoryWindows);
    await inProcess.consume('acme', 1);
    // nothing written: no document, on the embedded engine's disk or in memory
    expect(await embedded.collection('rate_windows').find({})).toEqual([]);
    await embedded.close();
  });

  it('in process: shared by the instances of one store, apart from another store’s', async () => {
    const [one, other] = [createEmbeddedStore(), createEmbeddedStore()];
    await rateWindowsFor(one, clock, minute).consume('acme', 3);
    expect((await rateWindowsFor(one, clock, minute).consume('acme', 1)).consumedPoints).toBe(4);
    expect((await rateWindowsFor(other, clock, minute).consume('acme', 1)).consumedPoints).toBe(1);
    await Promise.all([one.close(), other.close()]);
  });

  it('in process: ended windows are forgotten, at most once per window length', async () => {
    const local = new ManualClock('2026-11-23T10:00:15Z');
    const table = new Map();
    const windows = new MemoryWindows(table, local, 60_000);
    for (const key of ['a', 'b', 'c']) await windows.consume(key, 1);
    local.advance(45_000); // the window ended, but the last sweep was less than a window ago
    await windows.consume('d', 1);
    expect([...table.keys()].sort()).toEqual(['a', 'b', 'c', 'd']);
    local.advance(15_000); // a window after the first sweep: the ended ones go
    await windows.consume('e', 1);
    expect([...table.keys()].sort()).toEqual(['d', 'e']);
  });

  it('in documents: one per key, removed by the store an hour after its window ends', async () => {
    const folder = tempDir('rate-windows-ttl-');
    const storeClock = new ManualClock('2026-11-23T10:00:15Z');
    const store = createEmbeddedStore({
      dataDir: folder.dir,
      ttlSweepIntervalMs: 10,
      now: () => storeClock.now().getTime(),
    });
    try {
      const windows = new StoreRateWindows(store, storeClock, minute);
      await windows.consume('acme', 2);
      await windows.consume('acme', 1);
      const stored = store.collection<StoredWindow>('rate_windows');
      expect(await stored.find({})).toEqual([
        {
          _id: 'rpm:acme',
          points: 3,
          expire: new Date('2026-11-23T10:01:00Z'),
          removeAt: new Date('2026-11-23T11:01:00Z'),
        },
      ]);
      storeClock.set('2026-11-23T11:00:59Z');
      await new Promise((resolve) => setTimeout(resolve, 50)); // five sweeps: still there
      expect(await stored.count({})).toBe(1);
      storeClock.set('2026-11-23T11:01:01Z');
      await waitFor(async () => (await stored.count({})) === 0, {
        timeoutMs: 5_000,
        what: 'the ended window removed',
      });
    } finally {
      await store.close();
      folder.remove();
    }
  });
});
