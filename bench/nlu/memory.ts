/**
 * Memory and training time of a large assistant through the platform (issue 12 item 3): 150 intents and 15,000
 * sentences (bench/nlu-engine/synthetic.ts, with its entities) created through the edge, trained once, a few
 * messages answered, then the resident memory (VmRSS right after and after 20 s idle, VmHWM) of each platform process and the service's
 * training time (`GET /v1/bots` training.languages.en.trainingMs: worker start to model stored).
 *
 *   npx tsx bench/nlu/memory.ts              pnpm start's single process (standalone)
 *   npx tsx bench/nlu/memory.ts split        one process per service
 *
 * Retraining is held back while the intents are created (LEGACY_RETRAIN_MAX_DELAY_MS), so that the assistant is
 * trained once. Run it alone: the figure is a process's memory, and training time depends on free cores.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { syntheticAssistant } from '../nlu-engine/synthetic';
import { cpuTimeMs, LegacyClient, MESSAGE_LIMITS_OFF, startBenchPlatform, type Topology } from './api';

const status = (pid: number, field: string): number => {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
};
/** proportional set size (MiB): shared pages (the node binary, libraries) split between the processes sharing them */
const pss = (pid: number): number => {
  const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
};

async function main() {
  const topology = (process.argv[2] as Topology | undefined) ?? 'standalone';
  // the test sentences go from one address as fast as answered
  const platform = await startBenchPlatform(
    { LEGACY_RETRAIN_DEBOUNCE_MS: '3000', LEGACY_RETRAIN_MAX_DELAY_MS: '600000', ...MESSAGE_LIMITS_OFF },
    topology,
  );
  try {
    const api = new LegacyClient(platform.legacyUrl);
    const { set, tests } = syntheticAssistant(150, 15_000, 300);
    const before = Object.fromEntries(
      platform.processes.map((p) => [p.name, { rss: status(p.pid, 'VmRSS'), pss: pss(p.pid) }]),
    );
    const bot = await api.newAssistant('large', 'en');
    await api.load(bot.developerToken, set);
    const cpu0 = Object.fromEntries(platform.processes.map((p) => [p.name, cpuTimeMs(p.pid)]));
    const wall = await api.trained(bot.developerToken, 900_000);
    const cpu = platform.processes.map((p) => `${p.name} ${Math.round(cpuTimeMs(p.pid) - cpu0[p.name]!)} ms`);
    const trainingMs = (await api.training(bot.developerToken)).languages.en?.trainingMs;
    let right = 0;
    for (const [i, t] of tests.entries()) {
      const reply = await api.message(bot.clientToken, { userId: `u${i}`, text: t.text });
      if (
        !reply.intents[0]!.isFallback &&
        reply.intents[0]!.name === set.intents.find((x) => x.id === t.intent)?.name
      )
        right++;
    }
    console.log(
      `150 intents, ${set.intents.reduce((a, i) => a + i.utterances.length, 0)} sentences, ${topology}`,
    );
    console.log(
      `training: ${trainingMs} ms (service figure); wall until answered ${Math.round(wall)} ms; CPU ${cpu.join(', ')}`,
    );
    console.log(
      `held-out accuracy at the defaults: ${(right / tests.length).toFixed(3)} (${right}/${tests.length})`,
    );
    const snapshot = () =>
      Object.fromEntries(
        platform.processes.map((p) => [p.name, { rss: status(p.pid, 'VmRSS'), pss: pss(p.pid) }]),
      );
    const after = snapshot();
    // idle for a while: V8 gives back the heap that training and adoption grew (its memory reducer)
    await new Promise((resolve) => setTimeout(resolve, 20_000));
    const idle = snapshot();
    const mib = (x: number) => String(Math.round(x)).padStart(4);
    console.log('process        RSS MiB: before  after  idle   peak | PSS MiB: after  idle');
    for (const p of platform.processes)
      console.log(
        `${p.name.padEnd(14)}          ${mib(before[p.name]!.rss)}   ${mib(after[p.name]!.rss)}  ${mib(idle[p.name]!.rss)}  ` +
          `${mib(status(p.pid, 'VmHWM'))} |          ${mib(after[p.name]!.pss)}  ${mib(idle[p.name]!.pss)}`,
      );
    const sum = (o: Record<string, { rss: number; pss: number }>, k: 'rss' | 'pss') =>
      Object.values(o).reduce((a, x) => a + x[k], 0);
    console.log(
      `${'platform (sum)'.padEnd(14)}          ${mib(sum(before, 'rss'))}   ${mib(sum(after, 'rss'))}  ${mib(sum(idle, 'rss'))}       |          ` +
        `${mib(sum(after, 'pss'))}  ${mib(sum(idle, 'pss'))}`,
    );
    if (process.env.BENCH_HEAP_SNAPSHOT) {
      // with NODE_OPTIONS=--heapsnapshot-signal=SIGUSR2: the legacy-agent process writes a heap snapshot in its cwd
      const legacy = platform.processes.find((p) => p.name === 'legacy-agent');
      if (legacy) process.kill(legacy.pid, 'SIGUSR2');
      await new Promise((resolve) => setTimeout(resolve, 30_000));
    }
    console.log(
      `load average ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')} (2 cores, shared)`,
    );
  } finally {
    await platform.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
