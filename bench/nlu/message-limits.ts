/**
 * What the Messages rate limits (decision 0112) cost a message, in process: legacy-agent on an embedded store in a
 * temp folder (as `pnpm start` runs it), WELCOME messages sent one after another over keep-alive HTTP, each from a new
 * address and a new user (the dearest path: two new windows per message). Three services, interleaved in rounds so the
 * host's drift falls on all alike:
 *
 * - limits off (`LEGACY_MESSAGES_PER_ADDRESS=0`, `LEGACY_MESSAGES_PER_USER=0`);
 * - limits on, the embedded engine's windows: maps of the process owning the store (what `pnpm start` runs);
 * - limits on, the windows in the store's documents (what MongoDB runs; here on the embedded engine, each change a
 *   write to the data folder: what every message paid before the windows moved to the process's maps).
 *
 *   npx tsx bench/nlu/message-limits.ts [messages per round=2000] [rounds=3]
 */
import http from 'node:http';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createInProcessBus } from '@platform/bus';
import { listen, loadConfig, type RunningServer, silentLogger, systemClock } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { tempDir } from '@platform/testkit';
import { createLegacyAgentService, legacyAgentConfigSchema } from '../../services/legacy-agent/src';
import { MESSAGE_LIMITS_OFF } from './api';

const MESSAGES = Number(process.argv[2] ?? 2000);
const ROUNDS = Number(process.argv[3] ?? 3);

interface Setup {
  label: string;
  url: string;
  clientToken: string;
  latencies: number[];
  close(): Promise<void>;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function call(
  url: string,
  method: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Record<string, unknown> }> {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method,
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            json: JSON.parse(Buffer.concat(chunks).toString() || '{}'),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

/** The embedded store presented as MongoDB's: the service keeps its windows in the store's documents. */
const asMongo = (store: Store): Store => ({
  ...store,
  engine: 'mongodb',
  collection: store.collection.bind(store),
});

async function setup(label: string, env: Record<string, string>, onDocuments = false): Promise<Setup> {
  const folder = tempDir('bench-message-limits-');
  const embedded = createEmbeddedStore({ dataDir: folder.dir });
  const bus = createInProcessBus();
  const service = await createLegacyAgentService({
    config: loadConfig(legacyAgentConfigSchema, {
      PLATFORM_INTERNAL_SECRET: 'bench-message-limits-secret-0123456789abcdef',
      LOG_LEVEL: 'silent',
      LEGACY_V1_RETIREMENT_DATE: '2099-01-01',
      LEGACY_PASSWORD_SCRYPT_COST: '1024',
      ...env,
    }),
    logger: silentLogger(),
    clock: systemClock,
    store: onDocuments ? asMongo(embedded) : embedded,
    bus,
  });
  await service.start();
  const server: RunningServer = await listen(service.handler, 0, '127.0.0.1');
  const signup = await call(`${server.url}/v2/auth/signup`, 'POST', {
    username: `bench${Math.random().toString(36).slice(2, 10)}`,
    password: 'benchmark password',
  });
  const bot = await call(
    `${server.url}/v2/bots`,
    'POST',
    { name: 'Welcome', lang: 'en' },
    { 'x-legacy-session-token': String(signup.json.sessionToken) },
  );
  const welcome = await call(
    `${server.url}/v1/intents`,
    'POST',
    {
      name: 'Welcome',
      isWelcome: true,
      conditionalResponses: { en: { default: { default: [{ type: 'text', text: ['Hello!'] }] } } },
    },
    { authorization: `Bearer ${bot.json.developerToken}` },
  );
  if (welcome.status !== 200) throw new Error(`welcome intent: ${welcome.status}`);
  return {
    label,
    url: `${server.url}/v1/Messages`,
    clientToken: String(bot.json.clientToken),
    latencies: [],
    close: async () => {
      await server.close(5_000);
      await service.stop();
      await bus.close();
      await embedded.close();
      folder.remove();
    },
  };
}

let visitor = 0;

async function round(s: Setup, messages: number): Promise<void> {
  for (let i = 0; i < messages; i++) {
    const n = visitor++;
    // a new address (198.18.0.0/15, set aside for benchmarks) and a new user for every message
    const address = `198.${18 + ((n >> 16) & 1)}.${(n >> 8) & 255}.${n & 255}`;
    const started = performance.now();
    const res = await call(
      s.url,
      'POST',
      { userId: `visitor-${n}`, platform: 'web', event: 'WELCOME' },
      { authorization: `Bearer ${s.clientToken}`, 'x-forwarded-for': address },
    );
    if (res.status !== 200) throw new Error(`${s.label}: ${res.status} ${JSON.stringify(res.json)}`);
    s.latencies.push(performance.now() - started);
  }
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor(p * (xs.length - 1))]!;

async function main() {
  const setups = [
    await setup('limits off', MESSAGE_LIMITS_OFF),
    await setup('on, windows in process maps', {}),
    await setup('on, windows in store documents', {}, true),
  ];
  try {
    for (const s of setups) await round(s, 200); // warm-up
    for (const s of setups) s.latencies = [];
    for (let r = 0; r < ROUNDS; r++) for (const s of setups) await round(s, MESSAGES);
    for (const s of setups) {
      const l = s.latencies;
      const mean = l.reduce((a, x) => a + x, 0) / l.length;
      console.log(
        `${s.label.padEnd(32)} ${String(l.length).padStart(6)} messages  mean ${mean.toFixed(2)}  ` +
          `p50 ${pct(l, 0.5).toFixed(2)}  p90 ${pct(l, 0.9).toFixed(2)}  p99 ${pct(l, 0.99).toFixed(2)} ms`,
      );
    }
    console.log(
      `load average at the end: ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')} (2 cores, shared)`,
    );
  } finally {
    agent.destroy();
    for (const s of setups) await s.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
