/**
 * Soak run: `pnpm start`'s platform (one process per service, embedded store, a temp DATA_DIR; bench/nlu/api.ts
 * `startBenchPlatform`) under a steady open-loop mix through the edge on loopback for a bounded time, watching
 * whether memory, open files or latency drift.
 *
 *   npx tsx bench/soak/run.ts [seconds=600] [rate=50]
 *   SOAK_HEAP_DIR=/tmp/soak-heap npx tsx bench/soak/run.ts    # also heap snapshots (see below)
 *
 * The mix (`mix` below, `rate` requests per second in all, each sent at its scheduled time whatever the answers, and
 * timed from that time): `openai` SDK chat completions (plain and streamed) and embeddings on the built-in `mock`
 * models, with a session JWT and with an organization API key (a workspace API key has no organization, so the
 * gateway refuses it: 400 NO_ORG_CONTEXT); `GET /llm/v1/quotas/usage` with both (0.5/s each at 50 req/s: the route
 * allows 60 a minute per consumer); `GET /v2/me` (JWT); `GET /v2/workspaces/:id` with a workspace API key; legacy
 * `POST /v1/Messages` to a small trained assistant from a pool of visitors. Every 30 s one churn step: an organization
 * and a workspace API key created, used once and revoked; a workspace created and deleted; an intent created and the
 * previous one deleted (each retrains the assistant).
 *
 * Every 15 s, per process (ids from DATA_DIR/standalone.json, read again each time: a restart shows as a new id):
 * resident memory, open file descriptors (/proc/<pid>/fd) and CPU; and of the requests finished in that window, the
 * p50/p99 per family and the errors. At the end: both tables, per process the RSS slope over the second half (MiB
 * per 10 minutes, least squares, with its r²) and the fd growth, the DATA_DIR files written most, per request kind
 * the p50/p99 of each half, and FLAG lines for what grows steadily.
 *
 * SOAK_HEAP_DIR=<dir>: every service runs with `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=<dir>`; each writes
 * a heap snapshot there at half time (load on) and at the end (load stopped); compare two with
 * `npx tsx bench/soak/heap-diff.ts <first> <second>`. A snapshot stops its process for a few seconds (that window's
 * latency shows it). The folder is kept.
 *
 * Every process it starts is stopped at the end, on an error, and on Ctrl-C (a second Ctrl-C kills them at once).
 */
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import OpenAI from '../../services/llm-gateway/node_modules/openai';
import { type BenchPlatform, cpuTimeMs, LegacyClient, startBenchPlatform } from '../nlu/api';
import { syntheticAssistant } from '../nlu-engine/synthetic';

const SECONDS = Number(process.argv[2] ?? 600);
const RATE = Number(process.argv[3] ?? 50);
const SAMPLE_MS = 15_000;
const CHURN_MS = 30_000;
/** past this many requests in flight, a due request is not sent and counts as an error (`dropped`) */
const MAX_IN_FLIGHT = 1_000;
const VISITORS = 300;
const HEAP_DIR = process.env.SOAK_HEAP_DIR;

const BIG = 1_000_000_000_000;
/** llm-quota plans no load reaches, so that the gateway answers every request (bench/llm-gateway/bench-platform.ts) */
const PLATFORM_ENV: Record<string, string> = {
  LLM_QUOTA_PLANS: JSON.stringify({
    soak: {
      limits: { 'llm.rpm': BIG, 'llm.tpm': BIG, 'llm.monthly_tokens': BIG, 'llm.monthly_cost': BIG },
      per_user_defaults: { rpm: BIG, tpm: BIG },
    },
  }),
  LLM_QUOTA_DEFAULT_PLAN: 'soak',
  // the Messages come from one address, as a connector's do (decision 0112): limited per visitor only
  LEGACY_MESSAGES_UNLIMITED_ADDRESSES: '127.0.0.1',
  ...(HEAP_DIR ? { NODE_OPTIONS: `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${HEAP_DIR}` } : {}),
};

type Family = 'llm' | 'v2' | 'legacy';
interface Kind {
  name: string;
  family: Family;
  /** share of the rate, in percent */
  weight: number;
  send(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const quantile = (sorted: number[], q: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : Number.NaN;

/** Answers statuses other than `expected` as errors naming the status and the start of the body. */
async function http(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: unknown,
  expected = [200],
): Promise<unknown> {
  const res = await fetch(url, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (!expected.includes(res.status))
    throw new Error(`${method} ${new URL(url).pathname}: ${res.status} ${text.slice(0, 200)}`);
  return text ? JSON.parse(text) : null;
}

/** What the load needs: two credentials of an organization, a workspace and its key, a trained assistant. */
async function setUp(base: string) {
  const { token } = (await http(`${base}/v2/login/anonymous`, 'POST', {})) as { token: string };
  const jwt = { authorization: `Bearer ${token}` };
  const slug = `soak-${Date.now().toString(36)}`;
  await http(`${base}/v2/orgs`, 'POST', jwt, { slug, name: 'Soak' }, [201]);
  const mintOrgKey = async () =>
    (await http(
      `${base}/v2/orgs/${slug}/apikeys`,
      'POST',
      jwt,
      { name: 'soak', permissions: ['models:read'] },
      [201],
    )) as { _id: string; apiKey: string };
  const workspace = (await http(`${base}/v2/workspaces`, 'POST', jwt, { name: 'Soak' }, [201])) as {
    id: string;
  };
  const mintWorkspaceKey = async () =>
    (await http(
      `${base}/v2/workspaces/${workspace.id}/security/apikeys`,
      'POST',
      jwt,
      { name: 'soak', rules: [{ action: 'read', subject: 'workspace' }] },
      [201],
    )) as { _id: string; apiKey: string };
  const legacy = new LegacyClient(`${base}/legacy`);
  const assistant = await legacy.newAssistant('soak');
  const { set, tests } = syntheticAssistant(8, 160, 60);
  // intents only: the generator's entity lists may hold values the service refuses (case-only duplicates)
  const intents = set.intents.map((i) => ({
    ...i,
    utterances: i.utterances.map((u) => [{ text: u.map((p) => p.text).join('') }]),
  }));
  await legacy.load(assistant.developerToken, { lang: set.lang, entities: [], intents });
  await legacy.trained(assistant.developerToken);
  return {
    slug,
    jwt,
    token,
    orgKey: await mintOrgKey(),
    mintOrgKey,
    workspace: workspace.id,
    workspaceKey: await mintWorkspaceKey(),
    mintWorkspaceKey,
    legacy,
    assistant,
    sentences: tests.map((t) => t.text),
  };
}
type Setup = Awaited<ReturnType<typeof setUp>>;

function mix(base: string, s: Setup): Kind[] {
  const gateway = `${base}/llm/v1`;
  const viaJwt = new OpenAI({ baseURL: gateway, apiKey: s.token, maxRetries: 0, timeout: 30_000 });
  const viaKey = new OpenAI({
    baseURL: gateway,
    apiKey: s.orgKey.apiKey,
    maxRetries: 0,
    timeout: 30_000,
    defaultHeaders: { 'x-platform-api-key': s.orgKey.apiKey },
  });
  let n = 0;
  const messages = () => [{ role: 'user' as const, content: `soak message ${n++}` }];
  const llm = (who: string, client: OpenAI, weights: [number, number, number]): Kind[] => [
    {
      name: `chat ${who}`,
      family: 'llm',
      weight: weights[0],
      send: async () => {
        await client.chat.completions.create({ model: 'mock/chat', messages: messages() });
      },
    },
    {
      name: `chat stream ${who}`,
      family: 'llm',
      weight: weights[1],
      send: async () => {
        const stream = await client.chat.completions.create({
          model: 'mock/chat',
          messages: messages(),
          stream: true,
        });
        for await (const _ of stream);
      },
    },
    {
      name: `embeddings ${who}`,
      family: 'llm',
      weight: weights[2],
      send: async () => {
        await client.embeddings.create({ model: 'mock/embeddings', input: `soak text ${n++}` });
      },
    },
  ];
  const orgKeyHeader = { 'x-platform-api-key': s.orgKey.apiKey };
  const workspaceKeyHeader = { 'x-platform-api-key': s.workspaceKey.apiKey };
  let visitor = 0;
  return [
    ...llm('jwt', viaJwt, [14, 12, 10]),
    ...llm('org key', viaKey, [12, 10, 8]),
    {
      name: 'quotas/usage jwt',
      family: 'llm',
      weight: 1,
      send: async () => void (await http(`${gateway}/quotas/usage`, 'GET', s.jwt)),
    },
    {
      name: 'quotas/usage org key',
      family: 'llm',
      weight: 1,
      send: async () => void (await http(`${gateway}/quotas/usage`, 'GET', orgKeyHeader)),
    },
    {
      name: 'GET /v2/me',
      family: 'v2',
      weight: 14,
      send: async () => void (await http(`${base}/v2/me`, 'GET', s.jwt)),
    },
    {
      name: 'GET workspace (ws key)',
      family: 'v2',
      weight: 6,
      send: async () => void (await http(`${base}/v2/workspaces/${s.workspace}`, 'GET', workspaceKeyHeader)),
    },
    {
      name: 'legacy /v1/Messages',
      family: 'legacy',
      weight: 12,
      send: async () => {
        const i = visitor++;
        await s.legacy.message(s.assistant.clientToken, {
          userId: `visitor-${i % VISITORS}`,
          text: s.sentences[i % s.sentences.length],
        });
      },
    },
  ];
}

/** One churn step; answers what failed (empty when all went well). */
async function churn(
  base: string,
  s: Setup,
  step: number,
  previousIntent: { id?: string },
): Promise<string[]> {
  const failures: string[] = [];
  const attempt = async (what: string, run: () => Promise<unknown>) => {
    try {
      await run();
    } catch (err) {
      failures.push(`${what}: ${(err as Error).message}`);
    }
  };
  await attempt('organization key', async () => {
    const key = await s.mintOrgKey();
    await http(
      `${base}/llm/v1/embeddings`,
      'POST',
      { 'x-platform-api-key': key.apiKey },
      {
        model: 'mock/embeddings',
        input: 'churn',
      },
    );
    await http(`${base}/v2/orgs/${s.slug}/apikeys/${key._id}`, 'DELETE', s.jwt, undefined, [200, 204]);
  });
  await attempt('workspace key', async () => {
    const key = await s.mintWorkspaceKey();
    await http(`${base}/v2/workspaces/${s.workspace}`, 'GET', { 'x-platform-api-key': key.apiKey });
    await http(
      `${base}/v2/workspaces/${s.workspace}/security/apikeys/${key._id}`,
      'DELETE',
      s.jwt,
      undefined,
      [200, 204],
    );
  });
  await attempt('workspace', async () => {
    const ws = (await http(`${base}/v2/workspaces`, 'POST', s.jwt, { name: `churn ${step}` }, [201])) as {
      id: string;
    };
    await http(`${base}/v2/workspaces/${ws.id}`, 'DELETE', s.jwt, undefined, [200, 204]);
  });
  await attempt('retraining', async () => {
    const developer = { authorization: `Bearer ${s.assistant.developerToken}` };
    const made = (await http(`${base}/legacy/v1/intents`, 'POST', developer, {
      name: `churn-${step}`,
      utterances: { en: [0, 1, 2].map((i) => ({ data: [{ text: `churn phrase ${step} number ${i}` }] })) },
      conditionalResponses: { en: { default: { default: [{ type: 'text', text: [`churn ${step}`] }] } } },
    })) as { id: string };
    if (previousIntent.id) await http(`${base}/legacy/v1/intents/${previousIntent.id}`, 'DELETE', developer);
    previousIntent.id = made.id;
  });
  return failures;
}

/** The requests finished in one window. */
class Window {
  /** latencies (ms) of the answered requests, by family */
  readonly latencies = new Map<Family, number[]>();
  sent = 0;
  errors = 0;
  dropped = 0;
  answered(family: Family, ms: number) {
    const list = this.latencies.get(family) ?? [];
    list.push(ms);
    this.latencies.set(family, list);
  }
}

interface ProcessSample {
  pid: number;
  rssMiB: number;
  fds: number;
  /** CPU used in the window, in percent of one core */
  cpu: number;
}
interface Sample {
  t: number;
  processes: Record<string, ProcessSample | null>;
  window: Window;
  /** p99 of this process's event-loop delay in the window (the load generator's own lag), ms */
  clientLagMs: number;
  load: number;
  /** DATA_DIR's files and their sizes */
  files: Map<string, number>;
}

const rssMiB = (pid: number) => {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
};
const openFds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

/** The size of every file under `dir`, by path relative to it. */
function fileSizes(dir: string, under = ''): Map<string, number> {
  const out = new Map<string, number>();
  for (const entry of readdirSync(path.join(dir, under), { withFileTypes: true })) {
    const rel = path.join(under, entry.name);
    try {
      if (entry.isDirectory()) for (const [f, n] of fileSizes(dir, rel)) out.set(f, n);
      else out.set(rel, statSync(path.join(dir, rel)).size);
    } catch {
      // gone meanwhile (a compaction's temp file)
    }
  }
  return out;
}

/** A process's environment variable, from /proc (the platform's DATA_DIR is a temp folder bench/nlu/api.ts chose). */
function environOf(pid: number, name: string): string | undefined {
  try {
    const entry = readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .find((e) => e.startsWith(`${name}=`));
    return entry?.slice(name.length + 1);
  } catch {
    return undefined; // exited
  }
}

/** Parent process id → its children's, from /proc. */
function childrenByParent(): Map<number, number[]> {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // exited meanwhile
    }
  }
  return parents;
}

/**
 * The platform's processes now: this process's children running a service entry (the supervisor, also when
 * startBenchPlatform failed and kept no handle on it) and all their descendants; not tsx's own esbuild helper.
 */
function platformProcesses(): number[] {
  const parents = childrenByParent();
  const out: number[] = [];
  const visit = (pid: number) => {
    out.push(pid);
    for (const child of parents.get(pid) ?? []) visit(child);
  };
  for (const child of parents.get(process.pid) ?? []) {
    try {
      if (readFileSync(`/proc/${child}/cmdline`, 'utf8').includes('services/')) visit(child);
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** Running (a zombie, exited and waiting for its parent to read its status, is not). */
const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
};

/** The services' process ids now (standalone.json is rewritten when one restarts), and the supervisor's. */
function currentProcesses(platform: BenchPlatform, dataDir: string): Record<string, number> {
  const out: Record<string, number> = { standalone: platform.processes[0]!.pid };
  try {
    const hints = JSON.parse(readFileSync(path.join(dataDir, 'standalone.json'), 'utf8')) as {
      pids?: Record<string, number | undefined>;
    };
    for (const [name, pid] of Object.entries(hints.pids ?? {})) if (pid) out[name] = pid;
  } catch {
    for (const p of platform.processes) out[p.name] = p.pid;
  }
  return out;
}

/** Least-squares slope (per second) and r² of y over t. */
function regression(points: Array<[number, number]>): { slope: number; r2: number } {
  const n = points.length;
  if (n < 3) return { slope: Number.NaN, r2: Number.NaN };
  const mt = points.reduce((a, [t]) => a + t, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let stt = 0;
  let sty = 0;
  let syy = 0;
  for (const [t, y] of points) {
    stt += (t - mt) ** 2;
    sty += (t - mt) * (y - my);
    syy += (y - my) ** 2;
  }
  return { slope: sty / stt, r2: syy === 0 ? 0 : (sty * sty) / (stt * syy) };
}

/** Sends SIGUSR2 to each service in turn and waits until its heap snapshot is written whole. */
async function heapSnapshots(processes: Record<string, number>, label: string) {
  if (!HEAP_DIR) return;
  for (const [name, pid] of Object.entries(processes)) {
    if (name === 'standalone') continue;
    const mine = () =>
      readdirSync(HEAP_DIR).filter((f) => f.includes(`.${pid}.`) && f.endsWith('.heapsnapshot'));
    const before = new Set(mine());
    process.kill(pid, 'SIGUSR2');
    // written whole once its size holds for 1.5 s
    let file: string | undefined;
    let size = -1;
    const deadline = Date.now() + 180_000;
    for (let stable = 0; stable < 3; await sleep(500)) {
      if (Date.now() > deadline) throw new Error(`no heap snapshot of ${name} in ${HEAP_DIR}`);
      file ??= mine().find((f) => !before.has(f));
      if (!file) continue;
      const now = statSync(path.join(HEAP_DIR, file)).size;
      stable = now === size && now > 0 ? stable + 1 : 0;
      size = now;
    }
    console.log(`heap snapshot (${label}) of ${name}: ${path.join(HEAP_DIR, file!)}`);
  }
}

async function main() {
  let interrupted = false;
  let interruptedAt = 0;
  let wakeUp: () => void = () => undefined;
  /** to remove when killed */
  let startedDataDir: string | undefined;
  const onSignal = (signal: string) => {
    // tsx passes the terminal's Ctrl-C on to this process too: a second one within 3 s is the same one
    if (interrupted && Date.now() - interruptedAt < 3_000) return;
    if (interrupted) {
      console.error(`${signal} again: killing the platform now`);
      for (const pid of platformProcesses()) if (alive(pid)) process.kill(pid, 'SIGKILL');
      if (startedDataDir) rmSync(startedDataDir, { recursive: true, force: true });
      process.exit(130);
    }
    interrupted = true;
    interruptedAt = Date.now();
    console.error(`${signal}: stopping the load, then the platform (again to kill at once)`);
    wakeUp();
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => onSignal(signal));

  let platform: BenchPlatform | undefined;
  const seen = new Set<number>();
  try {
    platform = await startBenchPlatform(PLATFORM_ENV);
    const dataDir = environOf(platform.processes[0]!.pid, 'DATA_DIR')!;
    startedDataDir = dataDir;
    const base = platform.legacyUrl.replace(/\/legacy$/, '');
    console.log(
      `soak: ${SECONDS} s at ${RATE} req/s through ${base} (DATA_DIR ${dataDir}); load average ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')}`,
    );
    const setup = await setUp(base);
    const kinds = mix(base, setup);
    // a fixed order spreading each kind over the cycle (each kind at every 100/weight-th slot)
    const cycle = kinds
      .flatMap((k) => Array.from({ length: k.weight }, (_, i) => ({ k, at: (i + 0.5) / k.weight })))
      .sort((a, b) => a.at - b.at)
      .map((x) => x.k);

    const samples: Sample[] = [];
    const totals = new Map<
      string,
      { first: number[]; second: number[]; errors: number; firstError?: string }
    >(kinds.map((k) => [k.name, { first: [], second: [], errors: 0 }]));
    let window = new Window();
    let inFlight = 0;
    const start = performance.now();
    const elapsed = () => (performance.now() - start) / 1000;
    const lag = monitorEventLoopDelay({ resolution: 10 });
    lag.enable();
    const cpuBefore: Record<string, { pid: number; ms: number; at: number }> = {};
    const sample = () => {
      const t = elapsed();
      const now = currentProcesses(platform!, dataDir);
      const processes: Sample['processes'] = {};
      for (const [name, pid] of Object.entries(now)) {
        seen.add(pid);
        try {
          const ms = cpuTimeMs(pid);
          const prev = cpuBefore[name];
          const cpu = prev && prev.pid === pid ? ((ms - prev.ms) / ((t - prev.at) * 1000)) * 100 : Number.NaN;
          processes[name] = { pid, rssMiB: rssMiB(pid), fds: openFds(pid), cpu };
          cpuBefore[name] = { pid, ms, at: t };
        } catch {
          processes[name] = null; // exited between the two reads
        }
      }
      samples.push({
        t,
        processes,
        window,
        clientLagMs: lag.percentile(99) / 1e6,
        load: loadavg()[0]!,
        files: fileSizes(dataDir),
      });
      lag.reset();
      window = new Window();
      printSampleLine(samples[samples.length - 1]!);
    };
    sample();

    // the open-loop schedule: request i is due at start + i / RATE, sent then whatever is in flight
    let sent = 0;
    const fire = (kind: Kind, scheduled: number) => {
      const w = window;
      w.sent++;
      if (inFlight >= MAX_IN_FLIGHT) {
        w.dropped++;
        w.errors++;
        totals.get(kind.name)!.errors++;
        return;
      }
      inFlight++;
      kind.send().then(
        () => {
          inFlight--;
          const ms = performance.now() - scheduled;
          window.answered(kind.family, ms);
          const half = (scheduled - start) / 1000 < SECONDS / 2 ? 'first' : 'second';
          totals.get(kind.name)![half].push(ms);
        },
        (err: Error) => {
          inFlight--;
          window.errors++;
          const total = totals.get(kind.name)!;
          total.errors++;
          total.firstError ??= err.message.slice(0, 300);
        },
      );
    };
    const total = Math.floor(SECONDS * RATE);
    const scheduler = setInterval(() => {
      // requests 0..n are due once their time, n / RATE s, has come
      const due = Math.min(total, Math.floor(elapsed() * RATE) + 1);
      while (sent < due && !interrupted) {
        fire(cycle[sent % cycle.length]!, start + (sent * 1000) / RATE);
        sent++;
      }
    }, 5);
    const sampler = setInterval(sample, SAMPLE_MS);
    const churnFailures: string[] = [];
    let churnSteps = 0;
    const churnLoop = (async () => {
      const previousIntent: { id?: string } = {};
      while (!interrupted && elapsed() < SECONDS) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(CHURN_MS, Math.max(0, (SECONDS - elapsed()) * 1000)));
          wakeUp = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        if (interrupted || elapsed() >= SECONDS) break;
        churnSteps++;
        for (const f of await churn(base, setup, churnSteps, previousIntent))
          churnFailures.push(`step ${churnSteps} ${f}`);
        if (churnSteps === Math.round((SECONDS * 1000) / CHURN_MS / 2))
          await heapSnapshots(currentProcesses(platform!, dataDir), 'half time');
      }
    })();
    await churnLoop;
    clearInterval(scheduler);
    // what is still in flight finishes (or times out) before the last sample
    for (let i = 0; i < 60 && inFlight > 0; i++) await sleep(500);
    clearInterval(sampler);
    sample();
    lag.disable();
    report(samples, kinds, totals, { sent, inFlight, churnSteps, churnFailures });
    await heapSnapshots(currentProcesses(platform, dataDir), 'end');
  } finally {
    await stopEverything(platform, seen, startedDataDir);
  }
}

/**
 * Stops the platform (its supervisor stops the services; 30 s), then whatever it started that is still there:
 * SIGTERM, and SIGKILL 10 s later; then removes its DATA_DIR. Also when the platform did not start
 * (startBenchPlatform leaves its child and folder behind then) or stopped by itself (Ctrl-C reaches it too).
 */
async function stopEverything(platform: BenchPlatform | undefined, seen: Set<number>, known?: string) {
  const running = platformProcesses();
  const dataDir = known ?? running.map((pid) => environOf(pid, 'DATA_DIR')).find(Boolean);
  // a service id seen earlier counts only while it is still a process of this platform (ids are reused)
  const mine = new Set([...running, ...[...seen].filter((pid) => environOf(pid, 'DATA_DIR') === dataDir)]);
  if (platform) {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), 30_000);
    });
    if (!(await Promise.race([platform.stop().then(() => true), late])))
      console.error('the platform did not stop within 30 s');
    clearTimeout(timer);
  }
  const left = () => [...new Set([...mine, ...platformProcesses()])].filter(alive);
  const what = (pid: number) => {
    try {
      return `${pid} (${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').slice(0, 120)})`;
    } catch {
      return String(pid);
    }
  };
  for (const [signal, waitMs] of [
    ['SIGTERM', 10_000],
    ['SIGKILL', 1_000],
  ] as const) {
    const pids = left();
    if (!pids.length) break;
    console.error(`${signal} to processes still running after the stop: ${pids.map(what).join(', ')}`);
    for (const pid of pids) {
      try {
        process.kill(pid, signal);
      } catch {
        // gone meanwhile
      }
    }
    for (let waited = 0; waited < waitMs && left().length; waited += 100) await sleep(100);
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}

const SHOWN = ['edge', 'auth', 'llm-gateway', 'llm-quota', 'legacy-agent', 'standalone'];
const FAMILIES: Family[] = ['llm', 'v2', 'legacy'];
const dataMiB = (s: Sample) => [...s.files.values()].reduce((a, n) => a + n, 0) / 2 ** 20;
const fmt = (x: number, digits = 0) => (Number.isFinite(x) ? x.toFixed(digits) : '-');

function printSampleLine(s: Sample) {
  const procs = SHOWN.map((n) => {
    const p = s.processes[n];
    return p ? `${n} ${fmt(p.rssMiB)}M/${p.fds}fd` : `${n} -`;
  }).join('  ');
  const lat = FAMILIES.map((f) => {
    const l = [...(s.window.latencies.get(f) ?? [])].sort((a, b) => a - b);
    return `${f} ${fmt(quantile(l, 0.5), 1)}/${fmt(quantile(l, 0.99), 1)}`;
  }).join(' ');
  console.log(`t=${fmt(s.t)}s  ${procs}  | ms p50/p99 ${lat}  errors ${s.window.errors}`);
}

function report(
  samples: Sample[],
  kinds: Kind[],
  totals: Map<string, { first: number[]; second: number[]; errors: number; firstError?: string }>,
  run: { sent: number; inFlight: number; churnSteps: number; churnFailures: string[] },
) {
  const pad = (x: string | number, n: number) => String(x).padStart(n);
  console.log('\n## processes: RSS MiB / open fds / CPU % of a core in the window');
  console.log(`${pad('t s', 5)} ${SHOWN.map((n) => pad(n, 20)).join('')}`);
  for (const s of samples)
    console.log(
      `${pad(fmt(s.t), 5)} ${SHOWN.map((n) => {
        const p = s.processes[n];
        return pad(p ? `${fmt(p.rssMiB, 1)} / ${p.fds} / ${fmt(p.cpu)}` : '-', 20);
      }).join('')}`,
    );
  console.log(
    "\n## requests finished in each window: p50/p99 ms from the scheduled time, errors, the load generator's own event-loop p99, load average, DATA_DIR size",
  );
  console.log(
    `${pad('t s', 5)} ${pad('sent', 5)} ${FAMILIES.map((f) => pad(`${f} p50/p99`, 16)).join('')} ${pad('errors', 7)} ${pad('dropped', 8)} ${pad('client lag', 11)} ${pad('load', 5)} ${pad('data MiB', 9)}`,
  );
  for (const s of samples)
    console.log(
      `${pad(fmt(s.t), 5)} ${pad(s.window.sent, 5)} ${FAMILIES.map((f) => {
        const l = [...(s.window.latencies.get(f) ?? [])].sort((a, b) => a - b);
        return pad(`${fmt(quantile(l, 0.5), 1)}/${fmt(quantile(l, 0.99), 1)}`, 16);
      }).join(
        '',
      )} ${pad(s.window.errors, 7)} ${pad(s.window.dropped, 8)} ${pad(fmt(s.clientLagMs, 1), 11)} ${pad(fmt(s.load, 1), 5)} ${pad(fmt(dataMiB(s), 1), 9)}`,
    );

  const flags: string[] = [];
  const end = samples[samples.length - 1]!.t;
  const secondHalf = samples.filter((s) => s.t >= end / 2);
  console.log('\n## per process, over the second half (steady state)');
  console.log(
    `${'process'.padEnd(14)} ${pad('RSS first→last MiB', 20)} ${pad('slope MiB/10min', 16)} ${pad('r²', 5)} ${pad('fds run first→last', 20)} ${pad('2nd half Δfd', 13)} ${pad('fd r²', 6)}  restarts`,
  );
  for (const name of SHOWN) {
    const points = secondHalf.flatMap((s) => (s.processes[name] ? [s] : []));
    if (!points.length) continue;
    const rss = regression(points.map((s) => [s.t, s.processes[name]!.rssMiB]));
    const fd = regression(points.map((s) => [s.t, s.processes[name]!.fds]));
    const all = samples.flatMap((s) => (s.processes[name] ? [s.processes[name]!] : []));
    const pids = new Set(all.map((p) => p.pid));
    const fdGrowth = points[points.length - 1]!.processes[name]!.fds - points[0]!.processes[name]!.fds;
    const slope10 = rss.slope * 600;
    console.log(
      `${name.padEnd(14)} ${pad(`${fmt(all[0]!.rssMiB, 1)} → ${fmt(all[all.length - 1]!.rssMiB, 1)}`, 20)} ${pad(fmt(slope10, 2), 16)} ${pad(fmt(rss.r2, 2), 5)} ${pad(`${all[0]!.fds} → ${all[all.length - 1]!.fds}`, 20)} ${pad(fdGrowth, 13)} ${pad(fmt(fd.r2, 2), 6)}  ${pids.size - 1}`,
    );
    if (slope10 >= 2 && rss.r2 >= 0.6)
      flags.push(
        `${name}: RSS grows ${fmt(slope10, 1)} MiB per 10 min over the second half (r² ${fmt(rss.r2, 2)}), ${fmt(all[0]!.rssMiB)} → ${fmt(all[all.length - 1]!.rssMiB)} MiB`,
      );
    if (fdGrowth >= 3 && fd.r2 >= 0.6)
      flags.push(`${name}: open fds grow by ${fdGrowth} over the second half (r² ${fmt(fd.r2, 2)})`);
    if (pids.size > 1) flags.push(`${name}: restarted (${[...pids].join(' → ')})`);
  }
  const data = regression(secondHalf.map((s) => [s.t, dataMiB(s)]));
  console.log(
    `\nDATA_DIR: ${fmt(dataMiB(samples[0]!), 1)} → ${fmt(dataMiB(samples[samples.length - 1]!), 1)} MiB (${fmt(data.slope * 600, 1)} MiB per 10 min over the second half; the embedded store holds its documents in memory too); the files written most over the whole run (KiB appended between samples: an append-only file shrinks only when compacted, every 10 min):`,
  );
  const appended = new Map<string, number>();
  samples.forEach((s, i) => {
    for (const [f, n] of s.files) {
      const before = i ? (samples[i - 1]!.files.get(f) ?? 0) : n;
      appended.set(f, (appended.get(f) ?? 0) + Math.max(0, n - before));
    }
  });
  const last = samples[samples.length - 1]!.files;
  for (const [f, n] of [...appended].sort((a, b) => b[1] - a[1]).slice(0, 8))
    console.log(`  ${pad(fmt(n / 1024), 9)}  ${f} (now ${fmt((last.get(f) ?? 0) / 1024)})`);

  console.log('\n## per request kind: p50/p99 ms of each half, errors');
  for (const k of kinds) {
    const t = totals.get(k.name)!;
    const q = (v: number[]) => {
      const sorted = [...v].sort((a, b) => a - b);
      return `${fmt(quantile(sorted, 0.5), 1)}/${fmt(quantile(sorted, 0.99), 1)}`;
    };
    console.log(
      `${k.name.padEnd(24)} n=${pad(t.first.length + t.second.length + t.errors, 6)}  first half ${pad(q(t.first), 12)}  second half ${pad(q(t.second), 12)}  errors ${t.errors}${t.firstError ? ` (first: ${t.firstError})` : ''}`,
    );
    const [p1, p2] = [t.first, t.second].map((v) =>
      quantile(
        [...v].sort((a, b) => a - b),
        0.5,
      ),
    );
    if (p2! > 1.5 * p1! && p2! - p1! > 2)
      flags.push(`${k.name}: p50 ${fmt(p1!, 1)} → ${fmt(p2!, 1)} ms from the first half to the second`);
    if (t.errors) flags.push(`${k.name}: ${t.errors} errors`);
  }
  console.log(
    `\nsent ${run.sent} requests; ${run.inFlight} still in flight at the end; ${run.churnSteps} churn steps, ${run.churnFailures.length} failures`,
  );
  for (const f of run.churnFailures.slice(0, 10)) console.log(`  churn ${f}`);
  if (run.churnFailures.length) flags.push(`churn: ${run.churnFailures.length} failures`);
  console.log(flags.length ? `\n${flags.map((f) => `FLAG ${f}`).join('\n')}` : '\nnothing grows steadily');
  console.log(
    `(a shared machine: load average ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}; the figures are indicative)`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
