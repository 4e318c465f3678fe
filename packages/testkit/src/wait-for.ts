/**
 * Polls `probe` until it returns a truthy value or the deadline passes; tests never sleep blindly. The default
 * deadline, 15 s, is no timing the test asserts: a loaded CI machine (jest beside other work on 2 cores) took more
 * than 5 s to count an event a quiet one counts in milliseconds.
 */
export async function waitFor<T>(
  probe: () => T | Promise<T>,
  { timeoutMs = 15_000, intervalMs = 20, what = 'condition' } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Waits, when less than `marginMs` of the current calendar minute is left, for the next minute to begin: a burst a
 * test counts against a per-minute limit then falls in one window (limits count calendar minutes, decision 0016).
 */
export function clearOfMinuteEnd(marginMs = 20_000): Promise<void> {
  return clearOfWindowEnd(60_000, marginMs);
}

/** As clearOfMinuteEnd, for a limit counted in calendar hours (the catalogue's bulk replaces). */
export function clearOfHourEnd(marginMs = 20_000): Promise<void> {
  return clearOfWindowEnd(3_600_000, marginMs);
}

async function clearOfWindowEnd(windowMs: number, marginMs: number): Promise<void> {
  const left = windowMs - (Date.now() % windowMs);
  if (left < marginMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}
