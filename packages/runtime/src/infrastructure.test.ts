import { mkdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { type Bus, createInProcessBus } from '@platform/bus';
import { createLogger, ManualClock } from '@platform/kernel';
import { createEmbeddedStore, DataFolderInUseError, type Store } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import { openBus, openStore, openStoreWhenReachable } from './infrastructure';

const logger = createLogger({ name: 'test', level: 'silent' });

describe('openStoreWhenReachable', () => {
  it('tries again while the database cannot be reached, saying why, and returns the store once it answers', async () => {
    const store = createEmbeddedStore();
    const reasons: string[] = [];
    let attempts = 0;
    const opened = await openStoreWhenReachable(
      async (): Promise<Store> => {
        attempts++;
        if (attempts < 3) throw new Error(`connect ECONNREFUSED (attempt ${attempts})`);
        return store;
      },
      { logger, isTransient: () => true, retryMs: 1, onUnreachable: (r) => reasons.push(r) },
    );
    expect(opened).toBe(store);
    expect(attempts).toBe(3);
    expect(reasons).toEqual(['connect ECONNREFUSED (attempt 1)', 'connect ECONNREFUSED (attempt 2)']);
    await store.close();
  });

  it('gives up at once on a failure that time does not mend', async () => {
    let attempts = 0;
    await expect(
      openStoreWhenReachable(
        async () => {
          attempts++;
          throw new Error('data folder not writable');
        },
        { logger, isTransient: () => false, retryMs: 1 },
      ),
    ).rejects.toThrow('data folder not writable');
    expect(attempts).toBe(1);
  });
});

describe('openStore', () => {
  afterEach(() => jest.useRealTimers());

  it("says in the service's log that a collection file was loaded without its unreadable lines", async () => {
    const data = tempDir('open-store-');
    mkdirSync(path.join(data.dir, 'corrupt'));
    writeFileSync(path.join(data.dir, 'corrupt', 'docs.db'), '{"_id":"a"}\nnot a document\n{"_id":"b"}\n');
    const lines: Array<{ level: number; collection?: string; err?: { type?: string } }> = [];
    const logged = createLogger({
      name: 'test',
      destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
    });
    const store = await openStore({ service: 'corrupt', DATA_DIR: data.dir }, logged);
    try {
      expect((await store.collection<{ _id: string }>('docs').find({})).map((d) => d._id).sort()).toEqual([
        'a',
        'b',
      ]);
      expect(lines).toContainEqual(
        expect.objectContaining({
          level: 50,
          collection: 'docs',
          err: expect.objectContaining({ type: 'CorruptFileError' }),
        }),
      );
    } finally {
      await store.close();
      data.remove();
    }
  });

  /** `DATA_DIR/<service>/store.lock` of a process of another container of this machine, last renewed `agoMs` ago */
  const otherContainersLock = (dataDir: string, service: string, agoMs: number) => {
    const file = path.join(dataDir, service, 'store.lock');
    mkdirSync(path.dirname(file));
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    writeFileSync(file, `7\n${hostname()}\n${boot}/12345\npid:[1]\n`);
    const renewed = new Date(Date.now() - agoMs);
    utimesSync(file, renewed, renewed);
    return file;
  };

  it('waits for the lock of a process elsewhere that is no longer renewed, then opens the store (a container restarted after a kill)', async () => {
    const data = tempDir('open-store-');
    otherContainersLock(data.dir, 'restarted', 9_500);
    // before, the service exited 1, and its restart policy's growing delays kept it away longer still
    const store = await openStore({ service: 'restarted', DATA_DIR: data.dir }, logger);
    try {
      expect(await store.collection<{ _id: string }>('docs').find({})).toEqual([]);
    } finally {
      await store.close();
      data.remove();
    }
  });

  it('waits for a lock without a process id (a power loss while it was written) to be 10 s old, then opens the store, saying so', async () => {
    const data = tempDir('open-store-');
    const file = path.join(data.dir, 'unwritten', 'store.lock');
    mkdirSync(path.dirname(file));
    writeFileSync(file, '');
    // made 7 s ago: still under 10 s old when the store looks, however long a loaded machine takes to get there
    const made = new Date(Date.now() - 7_000);
    utimesSync(file, made, made);
    const madeMs = statSync(file).mtimeMs;
    const lines: Array<Record<string, unknown>> = [];
    const logged = createLogger({
      name: 'test',
      destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
    });
    // before, it waited a minute, logging "pid: NaN"
    const store = await openStore({ service: 'unwritten', DATA_DIR: data.dir }, logged);
    try {
      expect(await store.collection<{ _id: string }>('docs').find({})).toEqual([]);
      const waited = lines.find((line) => line.level === 40)!;
      expect(waited).toEqual(
        expect.objectContaining({
          dataDir: path.dirname(file),
          takenOverAt: new Date(madeMs + 10_000).toISOString(),
          msg: 'store: the data folder has a lock without a process id (a process killed or a machine powered off while writing it, or a hand edit); waiting until it is taken over, 10 s after it was made',
        }),
      );
      expect(waited).not.toHaveProperty('pid');
    } finally {
      await store.close();
      data.remove();
    }
  });

  it('is refused by the lock of a process elsewhere that its holder renews meanwhile', async () => {
    const data = tempDir('open-store-');
    const file = otherContainersLock(data.dir, 'held', 0);
    const renewing = setInterval(() => {
      const now = new Date();
      utimesSync(file, now, now);
    }, 50);
    try {
      await expect(openStore({ service: 'held', DATA_DIR: data.dir }, logger)).rejects.toThrow(
        DataFolderInUseError,
      );
    } finally {
      clearInterval(renewing);
      data.remove();
    }
  });

  it("applies TTL indexes at the service's clock, which wrote the removal dates", async () => {
    // only the store's sweep interval is faked: its I/O runs as usual
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask', 'setTimeout', 'Date'] });
    const data = tempDir('open-store-');
    const clock = new ManualClock('2020-01-01T00:00:00Z');
    const store = await openStore({ service: 'ttl', DATA_DIR: data.dir }, logger, clock);
    try {
      const docs = store.collection<{ _id: string; removeAt: Date }>('docs', [
        { fields: { removeAt: 1 }, expireAfterSeconds: 0 },
      ]);
      await docs.insertOne({ _id: 'due on the clock', removeAt: new Date('2019-12-31T00:00:00Z') });
      // long past on the wall clock, ahead on the service's
      await docs.insertOne({ _id: 'not yet', removeAt: new Date('2020-06-01T00:00:00Z') });
      jest.advanceTimersByTime(60_000);
      jest.useRealTimers();
      const left = async () => (await docs.find({})).map((d) => d._id);
      // the sweep has run once something is gone (up to 10 s: a loaded machine may need more than the 1 s it had)
      await waitFor(async () => (await left()).length < 2, { timeoutMs: 10_000, what: 'the TTL sweep' });
      expect(await left()).toEqual(['not yet']);
    } finally {
      await store.close();
      data.remove();
    }
  });
});

describe('openBus', () => {
  it.each([
    ['in-process', undefined],
    ['local (the IPC bus of `pnpm start`)', createInProcessBus],
  ])(
    "says in the service's log when a durable handler fails, and when it handles messages again: %s",
    async (_, local) => {
      const lines: Array<{ level: number; msg: string; context?: string; err?: { message?: string } }> = [];
      const logged = createLogger({
        name: 'test',
        destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
      });
      const bus: Bus = await openBus({ service: 'llm-quota', DATA_DIR: '.' }, logged, local);
      try {
        await bus.ensureStream({ name: 'USAGE', subjects: ['analytics.>'] });
        const handled: number[] = [];
        await bus.consumeDurable({
          stream: 'USAGE',
          durable: 'usage',
          filterSubject: 'analytics.llm.completion.dead',
          retryDelayMs: 0,
          handler: async (m) => {
            if (m.deliveryCount === 1) throw new Error('the store refuses writes');
            handled.push(m.deliveryCount);
          },
        });
        await bus.publishDurable('analytics.llm.completion.dead', { reason: 'x', raw: '{}', at: 'now' });
        await waitFor(() => lines.some((l) => l.context === 'durable usage'), {
          what: 'the end of the failures logged',
        });
        expect(handled).toEqual([2]);
        expect(lines.filter((l) => l.msg === 'bus error')).toEqual([
          expect.objectContaining({
            level: 40,
            context: expect.stringMatching(/^durable usage: its handler failed; /),
            err: expect.objectContaining({ message: 'the store refuses writes' }),
          }),
          expect.objectContaining({
            level: 40,
            context: 'durable usage',
            err: expect.objectContaining({
              message: expect.stringMatching(
                /^durable usage handles messages again, after 1 failures since /,
              ),
            }),
          }),
        ]);
      } finally {
        await bus.close();
      }
    },
  );
});
