import { Gauge, type Registry } from 'prom-client';
import { checkReadiness, type Readiness } from './admin-server';

/** A scrape waits at most this long for a check (a NATS flush waits for a reconnect). */
const SCRAPE_CHECK_TIMEOUT_MS = 1_000;

/**
 * `dependency_up{dependency}`: 1 when the readiness check of that dependency (store, bus, ...) passes at
 * scrape time, else 0, so an outage of NATS, which readiness only reports, can be alerted on.
 */
export function registerDependencyGauge(registry: Registry, readiness: Readiness): void {
  if (Object.keys({ ...readiness.required, ...readiness.reported }).length === 0) return;
  new Gauge({
    name: 'dependency_up',
    help: "1 when the dependency's readiness check passes at scrape time, else 0",
    labelNames: ['dependency'] as const,
    registers: [registry],
    async collect() {
      const { checks } = await checkReadiness(readiness, SCRAPE_CHECK_TIMEOUT_MS);
      for (const [dependency, result] of Object.entries(checks))
        this.set({ dependency }, result === 'ok' ? 1 : 0);
    },
  });
}
