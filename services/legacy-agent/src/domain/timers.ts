/**
 * The timers of retraining's debounce, injected so that tests move time instead of racing it (a burst of
 * changes that must land within one debounce window is a race on a busy machine).
 */
export interface RetrainTimers {
  /** milliseconds on a monotonic scale */
  now(): number;
  /** calls `fn` after `ms`; never keeps the process alive */
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export const systemTimers: RetrainTimers = {
  now: () => Date.now(),
  set: (fn, ms) => setTimeout(fn, ms).unref(),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
