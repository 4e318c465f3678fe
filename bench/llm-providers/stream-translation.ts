/**
 * CPU cost of the adapters' stream path without any network: a recorded provider stream (a role chunk,
 * 10 content chunks, a finish chunk, a usage chunk, `[DONE]`; and Anthropic's equivalent event sequence)
 * is served from memory through an injected `fetch`, and read raw or through the adapter. The
 * difference is what SSE parsing, JSON parsing, chunk translation and the call guard cost per stream.
 *
 *   npx tsx bench/llm-providers/stream-translation.ts   # BENCH_STREAMS=20000
 */
import { createProviderAdapter } from '../../services/llm-gateway/src/providers';

const STREAMS = Number(process.env.BENCH_STREAMS ?? 20_000);

function openAiStream(): Uint8Array {
  const head = {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    system_fingerprint: 'fp',
  };
  const chunk = (delta: object, finish: string | null) =>
    `data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], usage: null })}\n\n`;
  const frames = [chunk({ role: 'assistant', content: '' }, null)];
  for (let i = 0; i < 10; i += 1) frames.push(chunk({ content: ' word' }, null));
  frames.push(chunk({}, 'stop'));
  frames.push(
    `data: ${JSON.stringify({ ...head, choices: [], usage: { prompt_tokens: 5, completion_tokens: 10, total_tokens: 15 } })}\n\n`,
  );
  frames.push('data: [DONE]\n\n');
  return new TextEncoder().encode(frames.join(''));
}

function anthropicStream(): Uint8Array {
  const event = (name: string, data: object) =>
    `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
  const frames = [
    event('message_start', {
      message: { id: 'msg_1', model: 'm', usage: { input_tokens: 5, output_tokens: 1 } },
    }),
    event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
  ];
  for (let i = 0; i < 10; i += 1)
    frames.push(event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: ' word' } }));
  frames.push(event('content_block_stop', { index: 0 }));
  frames.push(event('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 10 } }));
  frames.push(event('message_stop', {}));
  return new TextEncoder().encode(frames.join(''));
}

const served = (bytes: Uint8Array) =>
  (async () => new Response(bytes, { headers: { 'content-type': 'text/event-stream' } })) as typeof fetch;

async function measure(name: string, once: () => Promise<void>) {
  for (let i = 0; i < 2_000; i += 1) await once();
  const cpu = process.cpuUsage();
  for (let i = 0; i < STREAMS; i += 1) await once();
  const used = process.cpuUsage(cpu);
  console.log(`${name.padEnd(20)} ${((used.user + used.system) / STREAMS).toFixed(1)} µs CPU per stream`);
}

async function main() {
  const body = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] };
  const call = () => ({ model: 'm', headers: {}, timeoutMs: 5_000, signal: new AbortController().signal });
  const openaiBytes = openAiStream();
  const anthropicBytes = anthropicStream();
  const openai = createProviderAdapter(
    { name: 'o', type: 'openai', baseUrl: 'http://x/v1' },
    { fetch: served(openaiBytes) },
  );
  const anthropic = createProviderAdapter(
    { name: 'a', type: 'anthropic' },
    { fetch: served(anthropicBytes) },
  );
  const raw = (bytes: Uint8Array) => async () => {
    const res = await served(bytes)('x');
    for await (const _ of res.body!) {
      // read only
    }
  };
  const through = (adapter: typeof openai) => async () => {
    for await (const _ of adapter.chatStream(body, call())) {
      // read only
    }
  };
  for (let round = 1; round <= 2; round += 1) {
    console.log(`round ${round}, ${STREAMS} streams each`);
    await measure('openai: raw bytes', raw(openaiBytes));
    await measure('openai: adapter', through(openai));
    await measure('anthropic: raw bytes', raw(anthropicBytes));
    await measure('anthropic: adapter', through(anthropic));
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
