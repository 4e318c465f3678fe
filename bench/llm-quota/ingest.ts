/**
 * Event ingestion of llm-quota through a real nats-server JetStream, on the embedded store: first 100 events
 * one at a time (each one's delay from its acknowledged publish until it is counted), then N completion events
 * published by a separate process (the "LLM gateway"), measured until every one is counted; then the totals
 * are checked exactly (500 re-published duplicates included, which must not count).
 *
 *   flock /tmp/bench.lock npx tsx bench/llm-quota/ingest.ts [N]
 *
 * Two runs: "live" (llm-quota consumes while the events are published; the clock starts with the
 * first publish) and "backlog" (the events wait in the stream while llm-quota is stopped, as after
 * an outage; the clock starts when it starts again). Besides events/s (wall clock, which on a shared
 * machine also measures the neighbours, the publisher and nats-server), the CPU time llm-quota's own
 * process spent per event is reported: its capacity on one core is 1e6 / cpuUsPerEvent events/s.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createNatsBus } from '@platform/bus';
import { Subjects } from '@platform/contracts';
import { createLogger, loadConfig, systemClock } from '@platform/kernel';
import { createLlmQuotaService, llmQuotaConfigSchema } from '@platform/llm-quota';
import { createEmbeddedStore } from '@platform/store';
import { startNatsServer, tempDir, waitFor } from '@platform/testkit';
import { connect, StringCodec } from 'nats';
import { quotaCollections } from '../../services/llm-quota/src/data/collections';
import { counterId, monthStart } from '../../services/llm-quota/src/domain/windows';
import { delaySummary } from '../delays';
import { benchEvent, ORGS } from './events';

const N = Number(process.argv[2] ?? 20_000);
const DUPLICATES = 500;

function publish(url: string, run: string, occurredAt: string): Promise<void> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(__dirname, 'publisher.ts'),
      url,
      run,
      String(N),
      String(DUPLICATES),
      occurredAt,
    ],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  return new Promise((resolve, reject) =>
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`publisher exited ${code}`)))),
  );
}

/**
 * llm-quota on the embedded store in a temporary folder, consuming from a nats-server of its own (started: the
 * stream and its durable consumer exist); `months` are the month counters of the bench's organizations.
 */
async function startQuota(now: Date) {
  const nats = await startNatsServer();
  const data = tempDir('bench-llm-quota-');
  const store = createEmbeddedStore({ dataDir: data.dir, compactionIntervalMs: 0 });
  const logger = createLogger({ name: 'llm-quota', level: 'warn' });
  const bus = await createNatsBus({ url: nats.url, name: 'llm-quota-bench' });
  const config = loadConfig(llmQuotaConfigSchema, {
    PLATFORM_INTERNAL_SECRET: 'bench-secret-bench-secret-bench-secret-000',
    DATA_DIR: data.dir,
  });
  const service = await createLlmQuotaService({ config, logger, clock: systemClock, store, bus });
  await service.start();
  const c = quotaCollections(store);
  const monthIds = Array.from({ length: ORGS }, (_, o) =>
    counterId({ orgSlug: `org-${o}` }, 'month', monthStart(now)),
  );
  const months = () => c.counters.find({ _id: { $in: monthIds } });
  return {
    natsUrl: nats.url,
    service,
    c,
    months,
    /** requests counted in the month so far */
    counted: async () => (await months()).reduce((s, d) => s + d.requests, 0),
    async close() {
      await service.stop();
      await bus.close();
      await store.close();
      await nats.dispose();
      data.remove();
    },
  };
}

async function run(mode: 'live' | 'backlog') {
  const now = new Date();
  const quota = await startQuota(now);
  const { service, c } = quota;
  if (mode === 'backlog') await service.stop();

  const runId = `${mode}-${now.getTime()}`;
  let cpuStart = process.cpuUsage();
  const started = process.hrtime.bigint();
  const publishing = publish(quota.natsUrl, runId, now.toISOString());
  let published = 0n;
  publishing.then(() => {
    published = process.hrtime.bigint();
  });
  let clockStart = started;
  if (mode === 'backlog') {
    await publishing;
    clockStart = process.hrtime.bigint();
    cpuStart = process.cpuUsage();
    await service.start();
  }

  await waitFor(async () => (await quota.counted()) >= N, {
    timeoutMs: 300_000,
    intervalMs: 20,
    what: 'all counted',
  });
  const done = process.hrtime.bigint();
  const cpu = process.cpuUsage(cpuStart);
  await publishing;
  // The duplicates are published last: let the consumer see all of them before checking the totals.
  await waitFor(async () => (await c.batches.count({})) === 0, { timeoutMs: 10_000, what: 'no batch open' });
  await new Promise((r) => setTimeout(r, 1_500));

  const docs = await quota.months();
  const requests = docs.reduce((s, d) => s + d.requests, 0);
  const tokens = docs.reduce((s, d) => s + d.tokens, 0);
  const cost = docs.reduce((s, d) => s + d.cost_micros, 0);
  let expectedTokens = 0;
  for (let i = 0; i < N; i++) expectedTokens += benchEvent(runId, i, '').usage.total_tokens;
  const exact = requests === N && tokens === expectedTokens && cost === N * 125;
  const seconds = (a: bigint, b: bigint) => Number(b - a) / 1e9;
  const elapsed = seconds(clockStart, done);
  console.log(
    JSON.stringify({
      mode,
      events: N,
      duplicates: DUPLICATES,
      publishSeconds: +seconds(started, published).toFixed(2),
      countSeconds: +elapsed.toFixed(2),
      eventsPerSecond: Math.round(N / elapsed),
      // llm-quota's process only (the publisher and nats-server are other processes): what one core buys
      cpuUsPerEvent: Math.round((cpu.user + cpu.system) / N),
      eventsPerCpuSecond: Math.round(N / ((cpu.user + cpu.system) / 1e6)),
      requests,
      tokens,
      expectedTokens,
      costMicros: cost,
      exact,
    }),
  );

  await quota.close();
  if (!exact) process.exitCode = 1;
}

/**
 * One event at a time (issue 4: "events appear in the gauges within 1 s"): each published and acknowledged by
 * JetStream, then timed until llm-quota's month counter holds it.
 */
async function oneAtATime(n: number) {
  const now = new Date();
  const quota = await startQuota(now);
  const nc = await connect({ servers: quota.natsUrl });
  const js = nc.jetstream();
  const codec = StringCodec();
  const delays: number[] = [];
  for (let i = 0; i < n; i++) {
    await js.publish(
      Subjects.llmCompletion,
      codec.encode(JSON.stringify(benchEvent('single', i, now.toISOString()))),
    );
    const acked = performance.now();
    await waitFor(async () => (await quota.counted()) === i + 1, {
      timeoutMs: 10_000,
      intervalMs: 1,
      what: `event ${i}`,
    });
    delays.push(performance.now() - acked);
  }
  console.log(
    `one event at a time, acknowledged publish -> counted: ${delaySummary(delays)}; later than 1 s: ${delays.filter((d) => d > 1_000).length}`,
  );
  await nc.drain();
  await quota.close();
}

async function main() {
  await oneAtATime(100);
  await run('live');
  await run('backlog');
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
