/**
 * What the NLU benchmarks need of the platform: a running edge in front of legacy-agent (started here as a
 * child process unless LEGACY_URL names one), and a small client of the legacy API.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import path from 'node:path';
import { freePort, tempDir, waitFor } from '@platform/testkit';
import type { NluTrainingSet } from '../../packages/nlu/src';

export interface BenchPlatform {
  legacyUrl: string;
  /**
   * the platform's processes by name (empty when LEGACY_URL names a running platform); for `standalone`, the
   * supervisor (`standalone`) and each service it forked (from DATA_DIR/standalone.json)
   */
  processes: Array<{ name: string; pid: number }>;
  stop(): Promise<void>;
}

/** CPU time (user + system, ms) a process has used so far, from /proc (Linux). */
export function cpuTimeMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in clock ticks of 1/100 s
}

export type Topology = 'standalone' | 'split';

/**
 * The Messages rate limits off (decision 0112), for the benchmarks that send a corpus from one address as fast as it
 * is answered: a test harness, not the visitors the limits are for. The latency benchmark keeps the defaults on and
 * sends as visitors do (bench/nlu/latency.ts).
 */
export const MESSAGE_LIMITS_OFF = { LEGACY_MESSAGES_PER_ADDRESS: '0', LEGACY_MESSAGES_PER_USER: '0' };

/**
 * The platform in processes of its own, so the load generator does not share their event loops:
 * `standalone` is `pnpm start` (a supervisor forking one process per service: auth, llm-quota, llm-gateway,
 * legacy-agent, edge); `split` is the bare production shape for the legacy root, one process per service it needs
 * (auth, legacy-agent, edge; no supervisor, llm-quota or llm-gateway). Embedded
 * store in a temp folder, legacy v1 kept open, every other setting the product's default. BENCH_CPU_PROF=<dir> writes CPU profiles there (a sample
 * every 200 µs, so that a stall of a few milliseconds shows its parts);
 * BENCH_NICE=<n> runs the platform (and the load generator) at that scheduling priority, e.g. -10 on a
 * machine shared with unrelated work, to approximate a host of its own. BENCH_BUILT=1 runs each entry's bundle
 * (`services/<svc>/dist/main.js`, made by `pnpm build`) with plain node instead of its sources under tsx.
 */
export async function startBenchPlatform(
  env: Record<string, string> = {},
  topology: Topology = 'standalone',
): Promise<BenchPlatform> {
  if (process.env.LEGACY_URL)
    return { legacyUrl: process.env.LEGACY_URL, processes: [], stop: async () => undefined };
  const data = tempDir('bench-nlu-');
  const root = path.resolve(__dirname, '../..');
  const common = {
    ...process.env,
    HOST: '127.0.0.1',
    DATA_DIR: data.dir,
    LOG_LEVEL: 'warn',
    PLATFORM_INTERNAL_SECRET: randomBytes(32).toString('base64url'),
    LEGACY_V1_RETIREMENT_DATE: '2099-01-01',
    ...env,
  };
  const children: ChildProcess[] = [];
  const processes: BenchPlatform['processes'] = [];
  const exits: Array<Promise<never>> = [];
  const profile = process.env.BENCH_CPU_PROF
    ? ['--cpu-prof', '--cpu-prof-interval=200', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
    : [];
  const built = process.env.BENCH_BUILT === '1';
  const run = (entry: string, port: number, extra: Record<string, string> = {}) => {
    const program = built
      ? [path.join(root, entry.replace('/src/main.ts', '/dist/main.js'))]
      : [
          '--require',
          'tsx/cjs',
          // BENCH_PROBE_DIR: every process notes its GC pauses and event-loop delays there (bench/llm-gateway/stall-probe.ts)
          ...(process.env.BENCH_PROBE_DIR
            ? ['--require', path.join(root, 'bench/llm-gateway/stall-probe.ts')]
            : []),
          path.join(root, entry),
        ];
    const child = spawn(process.execPath, [...profile, ...program], {
      cwd: root,
      env: { ...common, PORT: String(port), ...extra },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.push(child);
    if (process.env.BENCH_NICE) setPriority(child.pid!, Number(process.env.BENCH_NICE));
    processes.push({ name: path.basename(path.dirname(path.dirname(entry))), pid: child.pid! });
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code) => reject(new Error(`${entry} exited (${code})`))),
    );
    exited.catch(() => undefined);
    exits.push(exited);
  };
  const port = await freePort();
  if (topology === 'standalone') {
    run('services/standalone/src/main.ts', port);
  } else {
    const [auth, legacy] = [await freePort(), await freePort()];
    // each process its own admin listener (the default port would be taken by the first)
    run('services/auth/src/main.ts', auth, { ADMIN_PORT: String(await freePort()) });
    run('services/legacy-agent/src/main.ts', legacy, { ADMIN_PORT: String(await freePort()) });
    run('services/edge/src/main.ts', port, {
      AUTH_URL: `http://127.0.0.1:${auth}`,
      LEGACY_AGENT_URL: `http://127.0.0.1:${legacy}`,
      LLM_QUOTA_URL: 'http://127.0.0.1:9',
      ADMIN_PORT: String(await freePort()),
    });
  }
  const legacyUrl = `http://127.0.0.1:${port}/legacy`;
  await Promise.race([
    waitFor(
      async () => {
        const res = await fetch(`${legacyUrl}/v2/auth/accessToken`).catch(() => null);
        return res?.status === 401;
      },
      { timeoutMs: 60_000, intervalMs: 200, what: 'the platform' },
    ),
    ...exits,
  ]);
  if (topology === 'standalone') {
    // the services pnpm start forked, from the operator hints it writes (docs/decisions/0037)
    const file = path.join(data.dir, 'standalone.json');
    await waitFor(() => existsSync(file), { timeoutMs: 10_000, intervalMs: 50, what: 'standalone.json' });
    const hints = JSON.parse(readFileSync(file, 'utf8')) as { pids?: Record<string, number | undefined> };
    processes[0]!.name = 'standalone';
    for (const [name, pid] of Object.entries(hints.pids ?? {})) if (pid) processes.push({ name, pid });
  }
  return {
    legacyUrl,
    processes,
    stop: async () => {
      for (const child of [...children].reverse()) {
        if (child.exitCode !== null) continue;
        const gone = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await gone;
      }
      data.remove();
    },
  };
}

export class LegacyClient {
  constructor(readonly legacyUrl: string) {}

  async call<T = unknown>(
    method: string,
    route: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<T> {
    const res = await fetch(`${this.legacyUrl}${route}`, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${text.slice(0, 500)}`);
    return JSON.parse(text) as T;
  }

  /** account → assistant, answering the assistant's tokens */
  async newAssistant(name: string, lang = 'en') {
    const username = `bench${randomBytes(6).toString('hex')}`;
    const { sessionToken } = await this.call<{ sessionToken: string }>('POST', '/v2/auth/signup', {
      username,
      password: 'benchmark password',
    });
    return this.call<{ id: string; clientToken: string; developerToken: string }>(
      'POST',
      '/v2/bots',
      { name, lang, description: 'benchmark' },
      { 'x-legacy-session-token': sessionToken },
    );
  }

  /** entities, then intents (each answering its name), from an NLU training set, through the API */
  async load(developerToken: string, set: NluTrainingSet): Promise<Map<string, string>> {
    const auth = { authorization: `Bearer ${developerToken}` };
    const lang = set.lang;
    for (const e of set.entities)
      await this.call(
        'POST',
        '/v1/entities',
        {
          name: e.name,
          automaticallyExtensible: { [lang]: e.automaticallyExtensible },
          useSynonyms: { [lang]: e.useSynonyms },
          data: { [lang]: e.values },
        },
        auth,
      );
    const ids = new Map<string, string>();
    for (const intent of set.intents) {
      const created = await this.call<{ id: string }>(
        'POST',
        '/v1/intents',
        {
          name: intent.name,
          utterances: { [lang]: intent.utterances.map((data) => ({ data })) },
          conditionalResponses: { [lang]: { default: { default: [{ type: 'text', text: [intent.name] }] } } },
        },
        auth,
      );
      ids.set(intent.id, created.id);
    }
    return ids;
  }

  async training(developerToken: string) {
    const bot = await this.call<{ training: TrainingStatus }>('GET', '/v1/bots', undefined, {
      authorization: `Bearer ${developerToken}`,
    });
    return bot.training;
  }

  /** polls until the assistant's models learnt its data; answers the wall time in ms */
  async trained(developerToken: string, timeoutMs = 120_000): Promise<number> {
    const started = performance.now();
    await waitFor(async () => (await this.training(developerToken)).upToDate, {
      timeoutMs,
      intervalMs: 20,
      what: 'training',
    });
    return performance.now() - started;
  }

  message(clientToken: string, body: Record<string, unknown>) {
    return this.call<MessageReply>(
      'POST',
      '/v1/Messages',
      { platform: 'bench', ...body },
      {
        authorization: `Bearer ${clientToken}`,
      },
    );
  }
}

export interface TrainingStatus {
  upToDate: boolean;
  revision: number;
  languages: Record<
    string,
    { revision: number; hasModel: boolean; trainedAt: string | null; trainingMs: number | null }
  >;
}

export interface MessageReply {
  intents: Array<{
    name: string;
    confidence: number;
    isFallback: boolean;
    slots: Record<string, string>;
    entities: Array<{ entity: string; slot: string; value: string; text: string }>;
  }>;
}
