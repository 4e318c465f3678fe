/**
 * Latency of POST {legacy_url}/v1/Messages through the edge, and retraining time, for an assistant with
 * 100 intents and 2,000 utterances (bench/nlu-engine/synthetic.ts) created through the API (issue 12 item 4).
 *
 *   flock /tmp/bench.lock npx tsx bench/nlu/latency.ts [rate=200] [seconds=30] [split|standalone] [retrainings=10]
 *
 * The platform runs in processes of its own (`split`, the default: one per service as deployed;
 * `standalone`: `pnpm start`, a supervisor and one process per service), embedded store; this process is an
 * open-loop load generator: requests leave on a fixed schedule whatever the answers do, and each latency is measured
 * from its scheduled start (no coordinated omission). Phases: warm-up, steady load, then the same load while
 * `retrainings` retrainings run one after another (until the last one's model answers). Printed: p50/p90/p99/max of the steady phase, of the whole retraining phase, of the requests sent
 * between a change and the new model answering, and of the **adoption windows**: from the training worker's exit
 * (seen as the legacy-agent process losing a child process, sampled every 2 ms from /proc; the worker exits as soon
 * as it has handed the model over) until the new model answers (`trainedAt` of the stored model, which is adopted
 * right after it is stored), plus 50 ms either side; the windows' requests are pooled (one window holds ~25 at 200 req/s, whose p99
 * would be their maximum; ten hold ~250, whose p99 is about their third slowest), and each window's slowest request
 * is printed too. Also the load average and CPU per message.
 *
 * The load is a site's visitors at the product's default settings, the Messages rate limits on (decision 0112): each
 * simulated conversation is a visitor of its own (`userId`) behind an address of its own (the `X-Forwarded-For` a
 * load balancer sends, believed by the edge from the bench's loopback hop: TRUST_PROXY, decision 0031), sending a
 * message every VISITOR_PACE_MS for CONVERSATION_TURNS turns before a new visitor takes its place: at 200 req/s,
 * 2,000 visitors chat at once, 6 messages a minute each, well within the budgets (30 per user, 120 per address), so
 * every message is counted twice and none refused (a refusal would be printed as an error, `429: n`).
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { loadavg, setPriority } from 'node:os';
import { performance } from 'node:perf_hooks';
import { syntheticAssistant } from '../nlu-engine/synthetic';
import { cpuTimeMs, LegacyClient, startBenchPlatform, type Topology } from './api';

const RATE = Number(process.argv[2] ?? 200);
const SECONDS = Number(process.argv[3] ?? 30);
const TOPOLOGY = (process.argv[4] ?? 'split') as Topology;
const RETRAININGS = Number(process.argv[5] ?? 10);

/** A visitor reads each answer and types the next message: one every 10 s (decision 0112: 10-20 s a turn). */
const VISITOR_PACE_MS = 10_000;
/** Messages of a conversation, after which its visitor leaves and a new one (new user, new address) comes. */
const CONVERSATION_TURNS = 6;
/** Messages sent so far, over every phase: visitors carry on from one phase to the next. */
let messagesSent = 0;

/** The visitor sending message `n`: RATE × pace slots, each a conversation of CONVERSATION_TURNS turns at a time. */
function visitorOf(n: number): { userId: string; address: string } {
  const slots = Math.max(1, Math.round((RATE * VISITOR_PACE_MS) / 1000));
  const conversation = Math.floor(Math.floor(n / slots) / CONVERSATION_TURNS);
  const visitor = conversation * slots + (n % slots);
  // an address of its own in 198.18.0.0/15 (set aside for benchmarks, RFC 2544)
  const host = visitor % 131_072;
  return {
    userId: `visitor-${visitor}`,
    address: `198.${18 + (host >> 16)}.${(host >> 8) & 255}.${host & 255}`,
  };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? Number.NaN;
};
const ms = (x: number) => x.toFixed(1);

interface LoadResult {
  latencies: number[];
  /** [scheduled start, latency] of every answered request */
  samples: Array<[due: number, latency: number]>;
  errors: number;
  /** refused by a Messages rate limit (429), among the errors */
  refused: number;
  correct: number;
  fallbacks: number;
  sent: number;
  /** how long the load lasted */
  seconds: number;
}

/** Sends `rate` requests per second for `seconds`, open loop, over keep-alive connections. */
async function load(
  url: URL,
  clientToken: string,
  tests: Array<{ text: string; intent: string }>,
  names: Map<string, string>,
  rate: number,
  seconds: number,
  during?: () => Promise<void>,
): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const total = Math.round(rate * seconds);
  const result: LoadResult = {
    latencies: [],
    samples: [],
    errors: 0,
    refused: 0,
    correct: 0,
    fallbacks: 0,
    sent: 0,
    seconds: 0,
  };
  const pending: Array<Promise<void>> = [];
  const start = performance.now();
  // With work to load (`during`), the load lasts until that work is done, `seconds` being only its bound: retrainings
  // take 5-15 s each on a loaded host, and a fixed phase ended before the last ones, whose adoptions got no requests.
  let sideDone = false;
  const side = during?.().finally(() => {
    sideDone = true;
  });
  for (let i = 0; i < total && !sideDone; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const test = tests[i % tests.length]!;
    const visitor = visitorOf(messagesSent++);
    const body = JSON.stringify({ userId: visitor.userId, platform: 'bench', text: test.text });
    result.sent++;
    pending.push(
      new Promise<void>((resolve) => {
        const req = http.request(
          url,
          {
            method: 'POST',
            agent,
            headers: {
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(body),
              authorization: `Bearer ${clientToken}`,
              'x-forwarded-for': visitor.address,
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              result.latencies.push(performance.now() - due);
              result.samples.push([due, performance.now() - due]);
              if (res.statusCode === 429) result.refused++;
              if (res.statusCode !== 200) result.errors++;
              else {
                const top = JSON.parse(Buffer.concat(chunks).toString()).intents[0];
                if (top?.name === names.get(test.intent)) result.correct++;
                if (top?.isFallback) result.fallbacks++;
              }
              resolve();
            });
          },
        );
        req.on('error', () => {
          result.errors++;
          resolve();
        });
        req.end(body);
      }),
    );
  }
  await Promise.all(pending);
  await side;
  agent.destroy();
  result.seconds = (performance.now() - start) / 1000;
  return result;
}

function print(label: string, r: LoadResult) {
  const l = r.latencies;
  console.log(
    `${label.padEnd(28)} ${String(r.sent).padStart(6)} req in ${r.seconds.toFixed(0)}s  errors ${r.errors}${r.refused ? ` (429: ${r.refused})` : ''}  ` +
      `p50 ${ms(pct(l, 0.5))}  p90 ${ms(pct(l, 0.9))}  p99 ${ms(pct(l, 0.99))}  max ${ms(Math.max(...l))} ms  ` +
      `accuracy ${(r.correct / Math.max(1, r.sent - r.errors)).toFixed(3)} (fallbacks ${r.fallbacks})`,
  );
}

async function main() {
  if (process.env.BENCH_NICE) setPriority(0, Number(process.env.BENCH_NICE));
  // the product's defaults, Messages rate limits on; the edge believes the X-Forwarded-For of the bench's loopback hop
  const platform = await startBenchPlatform({ TRUST_PROXY: 'loopback' }, TOPOLOGY);
  console.log(
    `topology: ${TOPOLOGY}, ${RATE} req/s from ${Math.round((RATE * VISITOR_PACE_MS) / 1000)} visitors at a time ` +
      `(a message each every ${VISITOR_PACE_MS / 1000} s, ${CONVERSATION_TURNS} per conversation), ` +
      `priority ${process.env.BENCH_NICE ?? 'normal'}`,
  );
  const api = new LegacyClient(platform.legacyUrl);
  try {
    const { set, tests } = syntheticAssistant(100, 2000, 1000);
    const bot = await api.newAssistant('Synthetic 100x2000');
    const t0 = performance.now();
    const ids = await api.load(bot.developerToken, set);
    const loadMs = performance.now() - t0;
    await api.trained(bot.developerToken, 300_000);
    const first = await api.training(bot.developerToken);
    console.log(
      `assistant: ${set.intents.length} intents, ${set.intents.reduce((a, i) => a + i.utterances.length, 0)} utterances, ` +
        `${set.entities.length} entities, created through the API in ${Math.round(loadMs)} ms; ` +
        `first training ${first.languages.en?.trainingMs} ms`,
    );
    const names = new Map(
      [...ids].map(([syntheticId]) => [syntheticId, set.intents.find((i) => i.id === syntheticId)!.name]),
    );

    // Retraining: one intent changes; measured from the change's answer until the new model answers.
    const auth = { authorization: `Bearer ${bot.developerToken}` };
    const intentId = ids.get(set.intents[0]!.id)!;
    const retrain = async (n: number) => {
      const current = await api.call<{ utterances: { en: unknown[] } }>(
        'GET',
        `/v1/intents/${intentId}`,
        undefined,
        auth,
      );
      await api.call(
        'POST',
        `/v1/intents/${intentId}`,
        {
          utterances: { en: [...current.utterances.en, { data: [{ text: `one more way to say it ${n}` }] }] },
        },
        auth,
      );
      const wall = await api.trained(bot.developerToken);
      const status = await api.training(bot.developerToken);
      return { wall, training: status.languages.en!.trainingMs! };
    };
    const retrains = [];
    for (let i = 0; i < 3; i++) retrains.push(await retrain(i));
    console.log(
      `retraining after a change (idle): wall until the new model answers ${retrains.map((r) => Math.round(r.wall)).join(', ')} ms ` +
        `(includes the 500 ms debounce); training in the worker ${retrains.map((r) => r.training).join(', ')} ms`,
    );

    const url = new URL(`${platform.legacyUrl}/v1/Messages`);
    const warm = await load(url, bot.clientToken, tests, names, RATE, 5);
    print('warm-up', warm);
    const cpuBefore = platform.processes.map((p) => cpuTimeMs(p.pid));
    const steady = await load(url, bot.clientToken, tests, names, RATE, SECONDS);
    print(`steady ${RATE} req/s`, steady);
    // CPU per message, by process: what the machine's load cannot blur (10 ms clock ticks).
    console.log(
      `CPU per message during the steady phase: ${platform.processes
        .map((p, i) => `${p.name} ${((cpuTimeMs(p.pid) - cpuBefore[i]!) / steady.sent).toFixed(2)} ms`)
        .join(', ')}`,
    );
    // Retrainings under load, one after another: each gives a window of a few dozen requests, too few for a p99 of
    // their own (it would be their maximum), so the adoption figure pools the windows' requests.
    // the training worker's exit: the legacy-agent process's child count falls (sampled from /proc)
    const legacyPid = platform.processes.find((p) => p.name === 'legacy-agent')?.pid;
    const children = () => {
      try {
        return legacyPid
          ? readFileSync(`/proc/${legacyPid}/task/${legacyPid}/children`, 'utf8')
              .trim()
              .split(/\s+/)
              .filter(Boolean).length
          : 0;
      } catch {
        return 0;
      }
    };
    const rounds: Array<{
      from: number;
      to: number;
      workerExit: number;
      storedAt: number;
      wall: number;
      training: number;
    }> = [];
    // the load lasts until the last retraining's model answers; this bounds it
    const busySeconds = 2 + 30 * RETRAININGS;
    const busy = await load(url, bot.clientToken, tests, names, RATE, busySeconds, async () => {
      for (let n = 0; n < RETRAININGS; n++) {
        await new Promise((resolve) => setTimeout(resolve, n === 0 ? 2_000 : 1_000));
        const from = performance.now();
        let workerExit = Number.NaN;
        let last = children();
        let peak = last;
        const sampler = setInterval(() => {
          const now = children();
          peak = Math.max(peak, now);
          if (now < last && peak > now) workerExit = performance.now();
          last = now;
        }, 2);
        const { wall, training } = await retrain(100 + n);
        clearInterval(sampler);
        const to = performance.now();
        const trainedAt = (await api.training(bot.developerToken)).languages.en?.trainedAt;
        const storedAt = trainedAt ? Date.parse(trainedAt) - performance.timeOrigin : Number.NaN;
        rounds.push({ from, to, workerExit, storedAt, wall, training });
      }
    });
    print(`${RATE} req/s while retraining`, busy);
    const within = (from: number, to: number) =>
      busy.samples.filter(([due]) => due >= from && due <= to).map(([, l]) => l);
    // Only the requests sent between a change and the new model answering (training, adoption, storing).
    const inRetraining = rounds.flatMap((r) => within(r.from, r.to));
    const seconds = rounds.reduce((a, r) => a + (r.to - r.from), 0) / 1000;
    console.log(
      `${'  of which in the retrainings'.padEnd(28)} ${String(inRetraining.length).padStart(6)} req in ${seconds.toFixed(1)}s  ` +
        `p50 ${ms(pct(inRetraining, 0.5))}  p90 ${ms(pct(inRetraining, 0.9))}  p99 ${ms(pct(inRetraining, 0.99))}  max ${ms(Math.max(...inRetraining))} ms`,
    );
    // The adoption window: the worker's exit (50 ms before it) until the new model was stored (50 ms after); when
    // the worker's exit was not seen (no /proc, LEGACY_URL), the last second before the model was stored, which
    // holds the adoption on this assistant (~0.1-0.6 s).
    const windows = rounds.map((r) => {
      const from = Number.isNaN(r.workerExit) ? r.storedAt - 1000 : r.workerExit - 50;
      return { from, to: r.storedAt + 50, seen: !Number.isNaN(r.workerExit) };
    });
    const adoption = windows.flatMap((w) => within(w.from, w.to));
    const span = windows.reduce((a, w) => a + (w.to - w.from), 0) / 1000;
    console.log(
      `${'  of which in the adoptions'.padEnd(28)} ${String(adoption.length).padStart(6)} req in ${span.toFixed(2)}s  ` +
        `p50 ${ms(pct(adoption, 0.5))}  p90 ${ms(pct(adoption, 0.9))}  p99 ${ms(pct(adoption, 0.99))}  max ${ms(Math.max(...adoption))} ms` +
        (windows.some((w) => !w.seen)
          ? '  (a worker exit not seen: the last second before its model was stored)'
          : ''),
    );
    console.log(
      `  slowest request of each adoption window: ${windows
        .map((w) => {
          const l = within(w.from, w.to);
          // a window no request fell in (the adoption took less than the gap between two requests)
          return l.length === 0 ? 'none (0 req)' : `${ms(Math.max(...l))} ms (${l.length} req)`;
        })
        .join(', ')}` +
        // wall-clock bounds, to read the stall probe's lines (BENCH_PROBE_DIR) that fall inside
        (process.env.BENCH_PROBE_DIR
          ? `; windows ${windows.map((w) => `[${Math.round(performance.timeOrigin + w.from)}, ${Math.round(performance.timeOrigin + w.to)}]`).join(' ')}`
          : ''),
    );
    console.log(
      `retrainings under load: wall ${rounds.map((r) => Math.round(r.wall)).join(', ')} ms, training in the worker ${rounds.map((r) => r.training).join(', ')} ms`,
    );
    console.log(
      `load average at the end: ${loadavg()
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
