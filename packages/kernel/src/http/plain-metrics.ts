import type { Metric, Registry } from 'prom-client';

type Labels = Readonly<Record<string, string>>;

/** One counter series: the hot path adds to `value`; its family renders it at scrape time. */
export interface CounterSeries {
  readonly labels: Labels;
  value: number;
}

/** One histogram series, with plain numbers per bucket (not cumulative; the last slot is +Inf). */
export class HistogramSeries {
  count = 0;
  sum = 0;
  readonly buckets: Float64Array;

  constructor(
    readonly labels: Labels,
    private readonly bounds: readonly number[],
  ) {
    this.buckets = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    this.count++;
    this.sum += value;
    let i = 0;
    while (i < this.bounds.length && value > this.bounds[i]!) i++;
    this.buckets[i]! += 1;
  }
}

/**
 * Counters and histograms kept in plain numbers and rendered by prom-client's registry at scrape time
 * (as the edge's request metrics are): the caller binds a series once (per model, say) and an update is an
 * addition, where prom-client's own `inc(labels)` hashes the label object on every call. A family has no
 * label names of its own: its series' label sets are the caller's, which binds each one once.
 */
export function counterFamily(registry: Registry, name: string, help: string) {
  const series: CounterSeries[] = [];
  const metric = {
    name,
    help,
    type: 'counter',
    aggregator: 'sum',
    get: async () => ({
      name,
      help,
      type: 'counter',
      aggregator: 'sum',
      values: series.map((s) => ({ labels: s.labels, value: s.value })),
    }),
    reset: () => {
      for (const s of series) s.value = 0;
    },
  };
  registry.registerMetric(metric as unknown as Metric);
  return {
    /** a new series; bind it once and keep it */
    series(labels: Labels): CounterSeries {
      const s = { labels, value: 0 };
      series.push(s);
      return s;
    },
  };
}

export function histogramFamily(registry: Registry, name: string, help: string, bounds: readonly number[]) {
  const series: HistogramSeries[] = [];
  const metric = {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    get: async () => {
      const values: Array<{ labels: Record<string, string | number>; value: number; metricName: string }> =
        [];
      for (const s of series) {
        let cumulative = 0;
        bounds.forEach((le, i) => {
          cumulative += s.buckets[i]!;
          values.push({ labels: { ...s.labels, le }, value: cumulative, metricName: `${name}_bucket` });
        });
        values.push({ labels: { ...s.labels, le: '+Inf' }, value: s.count, metricName: `${name}_bucket` });
        values.push({ labels: s.labels, value: s.sum, metricName: `${name}_sum` });
        values.push({ labels: s.labels, value: s.count, metricName: `${name}_count` });
      }
      return { name, help, type: 'histogram', aggregator: 'sum', values };
    },
    reset: () => {
      for (const s of series) {
        s.count = 0;
        s.sum = 0;
        s.buckets.fill(0);
      }
    },
  };
  registry.registerMetric(metric as unknown as Metric);
  return {
    series(labels: Labels): HistogramSeries {
      const s = new HistogramSeries(labels, bounds);
      series.push(s);
      return s;
    },
  };
}

/** A gauge without labels whose value is read at scrape time (a queue's length, a collection's size). */
export function scrapedGauge(
  registry: Registry,
  name: string,
  help: string,
  read: () => number | Promise<number>,
): void {
  const metric = {
    name,
    help,
    type: 'gauge',
    aggregator: 'sum',
    get: async () => ({
      name,
      help,
      type: 'gauge',
      aggregator: 'sum',
      values: [{ labels: {}, value: await read() }],
    }),
    reset: () => undefined,
  };
  registry.registerMetric(metric as unknown as Metric);
}
