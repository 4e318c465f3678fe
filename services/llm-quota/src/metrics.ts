import { createHttpMetrics, type HttpMetrics } from '@platform/kernel';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { RecoveryOutcome } from './ingest/usage-writer';

type EventOutcome = 'counted' | 'duplicate' | 'retry' | 'dead_letter';

export interface QuotaMetrics {
  /** request count and latency by route (the kernel's), and the registry behind /metrics */
  http: HttpMetrics;
  /** one `analytics.llm.completion` message handled; `lagSeconds` from the event's time to now */
  eventHandled(outcome: EventOutcome, lagSeconds?: number): void;
  /** one counting batch written */
  batchWritten(events: number): void;
  /** one stuck batch (its lease ran out) taken over by a recovery, and what became of it */
  batchRecovered(outcome: RecoveryOutcome): void;
  /** the batches open longer than a lease, after a maintenance pass's recoveries */
  stuckBatches(count: number): void;
}

/**
 * llm-quota's Prometheus metrics (docs/decisions/0097): what became of each usage event (counted, dropped as a
 * duplicate, retried, dead-lettered), how late events are counted, the batches' sizes, and how many batches are
 * stuck (open longer than a lease: their events were acknowledged as counted, their counts are missing) and what the
 * recoveries of stuck batches did.
 */
export function createQuotaMetrics(): QuotaMetrics {
  const http = createHttpMetrics('llm-quota');
  const events = new Counter({
    name: 'llm_quota_events_total',
    help: 'analytics.llm.completion messages handled, by outcome (duplicate: an event counted already, dropped)',
    labelNames: ['outcome'] as const,
    registers: [http.registry],
  });
  // every outcome from the start, so an alert on rate(...{outcome="duplicate"}) sees its first one
  for (const outcome of ['counted', 'duplicate', 'retry', 'dead_letter'] as const) events.inc({ outcome }, 0);
  const lag = new Histogram({
    name: 'llm_quota_ingestion_lag_seconds',
    help: "Counted events: from the event's time (the gateway's clock) to its counting here",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600],
    registers: [http.registry],
  });
  const batchSize = new Histogram({
    name: 'llm_quota_batch_events',
    help: 'events per counting batch',
    buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500],
    registers: [http.registry],
  });
  const recoveries = new Counter({
    name: 'llm_quota_batch_recoveries_total',
    help: 'stuck counting batches (lease run out) taken over by a recovery, by outcome (failed: its counts are still missing)',
    labelNames: ['outcome'] as const,
    registers: [http.registry],
  });
  for (const outcome of ['finished', 'undone', 'failed', 'lost_lease'] as const)
    recoveries.inc({ outcome }, 0);
  const stuck = new Gauge({
    name: 'llm_quota_stuck_batches',
    help: 'counting batches open longer than a lease (neither finished nor undone: their usage is not in the counters), in the whole store, after the last maintenance pass here',
    registers: [http.registry],
  });
  return {
    http,
    eventHandled(outcome, lagSeconds) {
      events.inc({ outcome });
      // a gateway clock ahead of this one gives a negative lag: counted as none
      if (outcome === 'counted' && lagSeconds !== undefined) lag.observe(Math.max(0, lagSeconds));
    },
    batchWritten(size) {
      batchSize.observe(size);
    },
    batchRecovered(outcome) {
      recoveries.inc({ outcome });
    },
    stuckBatches(count) {
      stuck.set(count);
    },
  };
}
