import { type Clock, ManualClock } from '@platform/kernel';
import type { RateWindows, RateWindowsOptions, Store } from '../src';

/** How a suite opens a store and builds one instance's windows on it. */
export interface RateWindowsSubject {
  open(clock: Clock): Promise<Store>;
  windows(store: Store, clock: Clock, options: RateWindowsOptions): RateWindows;
  cleanup?(): Promise<void>;
}

/**
 * A quarter past an hour a little ahead of the real time: one-minute and one-hour windows have 45 s and 59 min 45 s
 * left, and a store whose TTL runs on the real clock (MongoDB) removes nothing while a test runs.
 */
const startOfTest = () => Math.ceil(Date.now() / 3_600_000) * 3_600_000 + 15_000;

const MINUTE = { name: 'rpm', durationMs: 60_000 };

/** The answers of `n` changes started at once, by consumed points: each count answered once when none was lost. */
const counts = async (changes: Array<() => Promise<{ consumedPoints: number }>>) =>
  (await Promise.all(changes.map((change) => change()))).map((r) => r.consumedPoints).sort((a, b) => a - b);
const oneTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

/**
 * The behaviour of rate windows (`RateWindows`) every implementation must show: in the maps of the process owning an
 * embedded store, and in the store's documents (on the embedded engine always, on MongoDB when MONGO_URL is set).
 */
export function rateWindowsContract(label: string, subject: RateWindowsSubject) {
  describe(`rate windows: ${label}`, () => {
    let clock: ManualClock;
    let store: Store;

    beforeEach(async () => {
      clock = new ManualClock(startOfTest());
      store = await subject.open(clock);
    });
    afterEach(async () => {
      await store.close();
      await subject.cleanup?.();
    });

    it('counts points in windows aligned on the clock, and starts afresh when the window ends', async () => {
      const windows = subject.windows(store, clock, MINUTE);
      expect(await windows.consume('acme', 1)).toEqual({ consumedPoints: 1, msBeforeNext: 45_000 });
      clock.advance(44_999);
      expect(await windows.consume('acme', 2)).toEqual({ consumedPoints: 3, msBeforeNext: 1 });
      clock.advance(1);
      expect(await windows.consume('acme', 1)).toEqual({ consumedPoints: 1, msBeforeNext: 60_000 });
      // a window skipped entirely leaves nothing behind
      clock.advance(150_000);
      expect(await windows.consume('acme', 4)).toEqual({ consumedPoints: 4, msBeforeNext: 30_000 });
    });

    it('aligns windows of any length: an hour runs from the hour', async () => {
      const hourly = subject.windows(store, clock, { name: 'bulk', durationMs: 3_600_000 });
      expect(await hourly.consume('ops', 1)).toEqual({ consumedPoints: 1, msBeforeNext: 3_585_000 });
      clock.advance(3_584_999);
      expect((await hourly.consume('ops', 1)).consumedPoints).toBe(2);
      clock.advance(1);
      expect((await hourly.consume('ops', 1)).consumedPoints).toBe(1);
    });

    it('adds a penalty and takes a reward back in the live window', async () => {
      const windows = subject.windows(store, clock, MINUTE);
      await windows.consume('acme', 5);
      expect(await windows.penalty('acme', 3)).toEqual({ consumedPoints: 8, msBeforeNext: 45_000 });
      clock.advance(5_000);
      expect(await windows.reward('acme', 6)).toEqual({ consumedPoints: 2, msBeforeNext: 40_000 });
      expect((await windows.consume('acme', 1)).consumedPoints).toBe(3);
    });

    it('takes a reward back only from the live window: an ended window owes the next one nothing', async () => {
      const windows = subject.windows(store, clock, MINUTE);
      // a request counted at the end of a window, given back (refused, rolled back) just after it ended
      expect((await windows.consume('acme', 1)).consumedPoints).toBe(1);
      clock.advance(45_000);
      expect(await windows.reward('acme', 1)).toEqual({ consumedPoints: 0, msBeforeNext: 60_000 });
      // a settlement that used less than it reserved, in a later window
      clock.advance(150_000);
      await windows.reward('acme', 800);
      expect((await windows.consume('acme', 1)).consumedPoints).toBe(1);
    });

    it('keeps keys apart, and windows of different names apart', async () => {
      const requests = subject.windows(store, clock, MINUTE);
      const tokens = subject.windows(store, clock, { name: 'tpm', durationMs: 60_000 });
      await requests.consume('acme', 1);
      await requests.consume('acme', 1);
      expect((await requests.consume('globex', 1)).consumedPoints).toBe(1);
      expect((await tokens.consume('acme', 500)).consumedPoints).toBe(500);
      expect((await requests.consume('acme', 1)).consumedPoints).toBe(3);
    });

    it('counts concurrent changes each exactly once, in a new window and in a live one', async () => {
      const windows = subject.windows(store, clock, MINUTE);
      // 200 at once on a key with no window: they race to start it
      expect(await counts(Array.from({ length: 200 }, () => () => windows.consume('acme', 1)))).toEqual(
        oneTo(200),
      );
      // the next window: they race to reset the ended one
      clock.advance(60_000);
      expect(await counts(Array.from({ length: 100 }, () => () => windows.consume('acme', 1)))).toEqual(
        oneTo(100),
      );
      // rewards and consumes interleaved: the sum is exact
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          i % 2 ? windows.consume('acme', 2) : windows.reward('acme', 1),
        ),
      );
      expect((await windows.consume('acme', 0)).consumedPoints).toBe(100 + 25 * 2 - 25);
    });

    it('shares the counts of two instances on one store', async () => {
      const a = subject.windows(store, clock, MINUTE);
      const b = subject.windows(store, clock, MINUTE);
      expect((await a.consume('acme', 1)).consumedPoints).toBe(1);
      expect((await b.consume('acme', 1)).consumedPoints).toBe(2);
      expect(
        await counts(Array.from({ length: 100 }, (_, i) => () => (i % 2 ? a : b).consume('globex', 1))),
      ).toEqual(oneTo(100));
      await b.reward('globex', 40);
      expect((await a.consume('globex', 1)).consumedPoints).toBe(61);
    });
  });
}
