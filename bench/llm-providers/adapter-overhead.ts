/**
 * What the provider adapter costs on top of a plain `fetch` of the same provider answer: the simulator
 * (own process, answering instantly) is called directly and through `createProviderAdapter`, for a
 * non-streamed chat (full answer) and a stream (time to the first content chunk, and to the end).
 * Reported per mode: requests/s, p50/p99 latency, and the client's CPU time per request (the figure to
 * compare on a shared machine). Rounds alternate the modes.
 *
 *   npx tsx bench/llm-providers/adapter-overhead.ts   # BENCH_SECONDS=4, BENCH_CONCURRENCY=16, BENCH_ROUNDS=2
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { freePort } from '@platform/testkit';
import { createProviderAdapter, type ProviderCall } from '../../services/llm-gateway/src/providers';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);

const body = {
  model: 'sim',
  messages: [{ role: 'user' as const, content: 'Say something short about rivers' }],
};

interface Sample {
  latencyMs: number;
  firstChunkMs?: number;
}

async function run(name: string, once: () => Promise<Sample>) {
  const samples: Sample[] = [];
  const cpuStart = process.cpuUsage();
  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline) samples.push(await once());
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuStart);
  const pct = (values: number[], p: number) =>
    values.sort((a, b) => a - b)[Math.floor((values.length - 1) * p)]!;
  const lat = samples.map((s) => s.latencyMs);
  const first = samples.flatMap((s) => (s.firstChunkMs === undefined ? [] : [s.firstChunkMs]));
  console.log(
    `${name.padEnd(22)} ${(samples.length / elapsed).toFixed(0).padStart(6)} req/s  p50 ${pct(lat, 0.5).toFixed(2)} ms  p99 ${pct(lat, 0.99).toFixed(2)} ms` +
      (first.length
        ? `  first chunk p50 ${pct(first, 0.5).toFixed(2)} ms p99 ${pct(first, 0.99).toFixed(2)} ms`
        : '') +
      `  client CPU ${((cpu.user + cpu.system) / samples.length).toFixed(0)} µs/req`,
  );
}

async function main() {
  const port = await freePort();
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', `${__dirname}/simulator-server.ts`],
    {
      env: { ...process.env, SIM_PORT: String(port) },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await once(child.stdout!, 'data');
  const base = `http://127.0.0.1:${port}/v1`;
  const adapter = createProviderAdapter({ name: 'sim', type: 'openai', baseUrl: base });
  const call = (): ProviderCall => ({
    model: 'sim',
    headers: {},
    timeoutMs: 10_000,
    signal: new AbortController().signal,
  });
  const post = (stream: boolean) =>
    fetch(`${base}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        ...body,
        stream,
        ...(stream ? { stream_options: { include_usage: true } } : {}),
      }),
    });

  const modes: Array<[string, () => Promise<Sample>]> = [
    [
      'chat: fetch',
      async () => {
        const t = performance.now();
        await (await post(false)).json();
        return { latencyMs: performance.now() - t };
      },
    ],
    [
      'chat: adapter',
      async () => {
        const t = performance.now();
        await adapter.chat(body, call());
        return { latencyMs: performance.now() - t };
      },
    ],
    [
      'stream: fetch',
      async () => {
        const t = performance.now();
        const res = await post(true);
        let firstChunkMs: number | undefined;
        for await (const bytes of res.body!) {
          // the first frame is the role chunk; count from the first bytes that carry content
          if (firstChunkMs === undefined && Buffer.from(bytes).includes('"content":"S'))
            firstChunkMs = performance.now() - t;
        }
        return { latencyMs: performance.now() - t, firstChunkMs };
      },
    ],
    [
      'stream: adapter',
      async () => {
        const t = performance.now();
        let firstChunkMs: number | undefined;
        for await (const chunk of adapter.chatStream(body, call())) {
          if (firstChunkMs === undefined && chunk.choices[0]?.delta.content)
            firstChunkMs = performance.now() - t;
        }
        return { latencyMs: performance.now() - t, firstChunkMs };
      },
    ],
  ];
  for (const [, warm] of modes) for (let i = 0; i < 200; i += 1) await warm();
  for (let round = 1; round <= ROUNDS; round += 1) {
    console.log(`round ${round} (concurrency ${CONCURRENCY}, ${SECONDS} s per mode)`);
    for (const [name, fn] of modes) await run(name, fn);
  }
  child.kill('SIGTERM');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
