/**
 * Platforms (and browsers) a test started and has not stopped yet. A `beforeAll` that times out while the platform is still
 * starting leaves the file's `afterAll` nothing to stop, and the platform, once up, would keep jest from exiting
 * (it did in a loaded CI run). The setup file `test/support/stop-live-platforms.ts` stops what is left after each
 * test file; this module holds no platform code, so unit tests load nothing more.
 */
const live = new Set<Promise<{ stop(): Promise<void> }>>();
/** The test file's end has stopped what was live: whatever starts later (a timed-out hook going on) is stopped once up. */
let ended = false;

/** Notes a platform while it starts; it is forgotten once stopped. Returns the start, unchanged. */
export function tracked<T extends { stop(): Promise<void> }>(starting: Promise<T>): Promise<T> {
  if (ended) {
    starting.then((started) => started.stop()).catch(() => undefined);
    return starting;
  }
  live.add(starting);
  // a start that fails leaves nothing to stop
  starting.catch(() => live.delete(starting));
  return starting;
}

/** Forgets a platform stopped by its test. */
export function untracked(starting: Promise<unknown>): void {
  live.delete(starting as Promise<{ stop(): Promise<void> }>);
}

/** Stops every platform still starting or running, waiting for those still starting. */
export async function stopLivePlatforms(): Promise<void> {
  ended = true;
  const left = [...live];
  live.clear();
  await Promise.allSettled(left.map(async (starting) => (await starting).stop()));
}
