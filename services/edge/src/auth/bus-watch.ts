import type { Bus } from '@platform/bus';
import type { PrincipalResolver } from './principal-resolver';

/** How often the bus is asked whether it is there, and how long its answer is waited for. */
const BUS_CHECK_INTERVAL_MS = 1_000;

/**
 * Keeps the principal cache's trust in step with the bus that brings revocations: pings the bus every second and
 * tells the resolver when it stops answering (within a second) and when it answers again. A ping left waiting (a
 * NATS flush waits for the reconnection) is not asked again until it settles. Returns the stop.
 */
export function watchBus(
  bus: Pick<Bus, 'ping'>,
  principals: Pick<PrincipalResolver, 'busAway' | 'busBack'>,
  intervalMs = BUS_CHECK_INTERVAL_MS,
): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let ping: Promise<boolean> | null = null;
  const check = async () => {
    ping ??= bus
      .ping()
      .then(
        () => true,
        () => false,
      )
      .finally(() => {
        ping = null;
      });
    let wait: NodeJS.Timeout | undefined;
    const up = await Promise.race([
      ping,
      new Promise<boolean>((resolve) => {
        wait = setTimeout(() => resolve(false), intervalMs);
        wait.unref();
      }),
    ]);
    clearTimeout(wait);
    if (stopped) return;
    if (up) principals.busBack();
    else principals.busAway();
    timer = setTimeout(check, intervalMs);
    timer.unref();
  };
  void check();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
