import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LlmCompletionEvent } from '@platform/contracts';
import { scoreOf } from '../src/routes/rerank';
import { silentWav } from '../src/routes/wav-fixture';
import { type GatewayWorld, modelEntry, recordCompletions, startGatewayWorld } from './support';

/**
 * A provider that answers what a test tells it to (a misbehaving OpenAI-protocol server): each path's answer is
 * set by the test before the request.
 */
async function startOddProvider() {
  const answers = new Map<string, (req: IncomingMessage, res: ServerResponse) => void>();
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const path = (req.url ?? '').replace(/^\/v1/, '');
      const answer = answers.get(path);
      if (answer) answer(req, res);
      else res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"no"}}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    answer(path: string, status: number, contentType: string, body: string) {
      answers.set(path, (_req, res) => res.writeHead(status, { 'content-type': contentType }).end(body));
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Embeddings, rerank, media and the catalogue administration, against odd inputs and odd providers. */
describe('odd providers and odd catalogue edits, through the edge', () => {
  let w: GatewayWorld;
  let odd: Awaited<ReturnType<typeof startOddProvider>>;
  let admin: { userId: string; token: string };
  let member: { userId: string; token: string };

  beforeAll(async () => {
    odd = await startOddProvider();
    w = await startGatewayWorld({
      models: [
        modelEntry(
          'odd/whisper',
          'audio_transcription',
          { provider: 'odd', model: 'whisper-odd' },
          { per_audio_minute: 0.006 },
        ),
        modelEntry(
          'odd/embed',
          'embeddings',
          { provider: 'odd', model: 'embed-odd' },
          { input_per_million: 1, output_per_million: 0 },
        ),
        modelEntry(
          'odd/rerank',
          'completion',
          { provider: 'odd', model: 'rerank-odd' },
          { input_per_million: 1, output_per_million: 0 },
          { native_rerank: true },
        ),
        modelEntry(
          'odd/chat',
          'completion',
          { provider: 'odd', model: 'chat-odd' },
          { input_per_million: 1, output_per_million: 1 },
        ),
        modelEntry(
          'odd/claude',
          'completion',
          { provider: 'odd-claude', model: 'claude-odd' },
          { input_per_million: 1, output_per_million: 1 },
        ),
      ],
      file: (base) => ({
        ...base,
        providers: [
          ...base.providers,
          { name: 'odd', type: 'openai', baseUrl: odd.baseUrl, apiKey: 'sk-odd' },
          { name: 'odd-claude', type: 'anthropic', baseUrl: odd.baseUrl, apiKey: 'sk-odd' },
        ],
      }),
    });
    admin = await w.platformAdmin();
    member = (await w.org('core-hunt')).owner;
  }, 60_000);
  afterEach(() => w.sim.script([]));
  afterAll(async () => {
    await w?.stop();
    await odd?.close();
  });

  const entry = (model_id: string, extra: Record<string, unknown> = {}) => ({
    model_id,
    type: 'completion',
    provider_config: { provider: 'mock', model: 'mock-chat' },
    pricing: { input_per_million: 1, output_per_million: 2 },
    ...extra,
  });

  it('PUT /v1/models with a null item and a failover outside the list is 400 INVALID_ITEMS, not 500', async () => {
    const res = await w.call(
      'gateway',
      'PUT',
      '/v1/models',
      { bearer: admin.token },
      { models: [null, entry('hunt/a', { failover: 'hunt/none' })] },
    );
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('INVALID_ITEMS');
    expect(res.body.details.items.map((i: { index: number }) => i.index)).toEqual([0, 1]);
  });

  it('PUT /v1/providers refuses headers HTTP cannot carry (400), instead of failing every call as unreachable', async () => {
    for (const headers of [
      { 'x-a b': '1' },
      { 'x-ok': 'one\r\nx-injected: two' },
      { 'x-ok': 'snow ☃' },
      { '': 'x' },
    ]) {
      const res = await w.call(
        'gateway',
        'PUT',
        '/v1/providers/hunt-headers',
        { bearer: admin.token },
        {
          type: 'openai',
          baseUrl: 'https://api.example.com/v1',
          apiKey: 'sk-x',
          headers,
        },
      );
      expect([headers, res.status, res.body.code]).toEqual([headers, 400, 'INVALID_BODY']);
      expect(res.body.details.issues[0].field).toMatch(/^headers/);
    }
    const pasted = await w.call(
      'gateway',
      'PUT',
      '/v1/providers/hunt-headers',
      { bearer: admin.token },
      {
        type: 'openai',
        baseUrl: 'https://api.example.com/v1',
        apiKey: 'sk-pasted\n',
      },
    );
    expect([pasted.status, pasted.body.details.issues[0].field]).toEqual([400, 'apiKey']);
    const fine = await w.call(
      'gateway',
      'PUT',
      '/v1/providers/hunt-headers',
      { bearer: admin.token },
      {
        type: 'openai',
        baseUrl: 'https://api.example.com/v1',
        headers: { 'OpenAI-Organization': 'org-1', 'x-tab': 'a\tb' },
      },
    );
    expect(fine.status).toBe(201);
    expect(fine.body.header_names).toEqual(['OpenAI-Organization', 'x-tab']);
  });

  it('a transcription whose provider reports a negative or impossible duration is billed the upload’s own seconds', async () => {
    for (const duration of [-600, 1e12]) {
      odd.answer('/audio/transcriptions', 200, 'application/json', JSON.stringify({ text: 'hi', duration }));
      const form = new FormData();
      form.append('model', 'odd/whisper');
      form.append('file', new Blob([silentWav(2)], { type: 'audio/wav' }), 'a.wav');
      const res = await fetch(`${w.p.gatewayUrl}/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${member.token}` },
        body: form,
      });
      const body = (await res.json()) as { usage: { seconds: number; cost: number } };
      expect([duration, res.status, body.usage.seconds, body.usage.cost]).toEqual([duration, 200, 2, 0.0002]);
    }
    // a believable one is the provider's
    odd.answer(
      '/audio/transcriptions',
      200,
      'application/json',
      JSON.stringify({ text: 'hi', duration: 1.5 }),
    );
    const form = new FormData();
    form.append('model', 'odd/whisper');
    form.append('file', new Blob([silentWav(2)], { type: 'audio/wav' }), 'a.wav');
    const res = await fetch(`${w.p.gatewayUrl}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${member.token}` },
      body: form,
    });
    expect(((await res.json()) as { usage: { seconds: number } }).usage.seconds).toBe(1.5);
  });

  it('a native rerank whose provider reports negative tokens is never a negative cost', async () => {
    odd.answer(
      '/rerank',
      200,
      'application/json',
      JSON.stringify({
        results: [
          { index: 1, relevance_score: 0.9 },
          { index: 0, relevance_score: 0.1 },
        ],
        usage: { total_tokens: -1_000_000 },
      }),
    );
    const res = await w.call(
      'gateway',
      'POST',
      '/v1/rerank',
      { bearer: member.token },
      { model: 'odd/rerank', query: 'q', documents: ['a', 'b'] },
    );
    expect(res.status).toBe(200);
    expect(res.body.usage.cost).toBeGreaterThanOrEqual(0);
    expect(res.body.usage.prompt_tokens).toBeGreaterThanOrEqual(0);
  });

  it('a native rerank answers only indexes of the documents sent, each once', async () => {
    odd.answer(
      '/rerank',
      200,
      'application/json',
      JSON.stringify({
        results: [
          { index: 7, relevance_score: 0.99 },
          { index: -1, relevance_score: 0.98 },
          { index: 0.5, relevance_score: 0.97 },
          { index: 1, relevance_score: 0.9 },
          { index: 1, relevance_score: 0.8 },
          { index: 0, relevance_score: 0.1 },
        ],
      }),
    );
    const res = await w.call(
      'gateway',
      'POST',
      '/v1/rerank',
      { bearer: member.token },
      { model: 'odd/rerank', query: 'q', documents: ['a', 'b'], return_documents: true },
    );
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([
      { index: 1, relevance_score: 0.9, document: { text: 'b' } },
      { index: 0, relevance_score: 0.1, document: { text: 'a' } },
    ]);
  });

  it("rerank's usage event says who counted: the provider's figures, else the gateway's tokenizer", async () => {
    const record = recordCompletions(w);
    const results = [
      { index: 1, relevance_score: 0.9 },
      { index: 0, relevance_score: 0.1 },
    ];
    const rerank = async (requestId: string, model: string) => {
      const res = await w.call(
        'gateway',
        'POST',
        '/v1/rerank',
        { bearer: member.token },
        { model, query: 'q', documents: ['a', 'b'] },
        { 'x-request-id': requestId },
      );
      expect(res.status).toBe(200);
      const event = await record.of(requestId);
      return { source: event.usageSource, total: event.usage.total_tokens };
    };
    try {
      // native: the provider's tokens, none, or figures that are no counts
      odd.answer('/rerank', 200, 'application/json', JSON.stringify({ results, usage: { total_tokens: 9 } }));
      expect(await rerank('hunt-rerank-reported', 'odd/rerank')).toEqual({ source: 'provider', total: 9 });
      odd.answer('/rerank', 200, 'application/json', JSON.stringify({ results }));
      expect((await rerank('hunt-rerank-unreported', 'odd/rerank')).source).toBe('tokenizer');
      odd.answer(
        '/rerank',
        200,
        'application/json',
        JSON.stringify({ results, usage: { total_tokens: -5 } }),
      );
      expect((await rerank('hunt-rerank-negative', 'odd/rerank')).source).toBe('tokenizer');
      // chat scoring: each call's usage, or none
      w.sim.script([{ match: { endpoint: 'chat' }, reply: { content: '0.5' } }]);
      expect((await rerank('hunt-rerank-scored', 'sim/gpt')).source).toBe('provider');
      w.sim.script([{ match: { endpoint: 'chat' }, reply: { content: '0.5', omitUsage: true } }]);
      expect((await rerank('hunt-rerank-scored-uncounted', 'sim/gpt')).source).toBe('tokenizer');
    } finally {
      record.stop();
    }
  });

  it('a rerank no scoring call of which was answered says tokenizer in its usage event, as every failed call does', async () => {
    const record = recordCompletions(w);
    const failed = async (requestId: string, path: string, body: Record<string, unknown>) => {
      const res = await w.call('gateway', 'POST', path, { bearer: member.token }, body, {
        'x-request-id': requestId,
      });
      expect(res.status).toBe(502);
      const event = await record.of(requestId);
      return { outcome: event.outcome, source: event.usageSource, total: event.usage.total_tokens };
    };
    const refused = JSON.stringify({ error: { message: 'refused' } });
    try {
      odd.answer('/embeddings', 400, 'application/json', refused);
      const embeddings = await failed('hunt-embed-refused', '/v1/embeddings', {
        model: 'odd/embed',
        input: 'x',
      });
      expect(embeddings).toEqual({ outcome: 'provider_error', source: 'tokenizer', total: 0 });
      // native: the provider refuses the rerank call
      odd.answer('/rerank', 400, 'application/json', refused);
      expect(
        await failed('hunt-rerank-refused', '/v1/rerank', {
          model: 'odd/rerank',
          query: 'q',
          documents: ['a'],
        }),
      ).toEqual(embeddings);
      // chat scoring: the provider refuses the only scoring call
      w.sim.script([{ match: { endpoint: 'chat' }, error: { status: 400 } }]);
      expect(
        await failed('hunt-rerank-scoring-refused', '/v1/rerank', {
          model: 'sim/gpt',
          query: 'q',
          documents: ['a'],
        }),
      ).toEqual(embeddings);
    } finally {
      record.stop();
    }
  });

  it('a provider reporting fractional tokens still gives a usage event llm-quota counts (whole tokens)', async () => {
    odd.answer(
      '/embeddings',
      200,
      'application/json',
      JSON.stringify({
        object: 'list',
        data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }],
        usage: { prompt_tokens: 7.5, total_tokens: 7.5 },
      }),
    );
    const record = recordCompletions(w);
    try {
      const res = await w.call(
        'gateway',
        'POST',
        '/v1/embeddings',
        { bearer: member.token },
        { model: 'odd/embed', input: 'x' },
        { 'x-request-id': 'hunt-fractional-tokens' },
      );
      expect(res.status).toBe(200);
      const event = await record.of('hunt-fractional-tokens');
      // llm-quota refuses (dead-letters) an event its contract refuses: the request would never be counted
      expect(LlmCompletionEvent.safeParse(event).success).toBe(true);
      expect(event.usage).toMatchObject({ prompt_tokens: 7, total_tokens: 7 });
    } finally {
      record.stop();
    }
  });

  it('a provider reporting more tokens than a number counts is counted by the tokenizer: a finite cost llm-quota counts', async () => {
    w.sim.script([
      { match: { model: 'gpt-sim' }, reply: { usage: { prompt_tokens: 1e308, completion_tokens: 1 } } },
    ]);
    const record = recordCompletions(w);
    try {
      const res = await w.call(
        'gateway',
        'POST',
        '/v1/chat/completions',
        { bearer: member.token },
        { model: 'sim/gpt', messages: [{ role: 'user', content: 'hi' }] },
        { 'x-request-id': 'hunt-absurd-tokens' },
      );
      expect(res.status).toBe(200);
      expect(res.body.usage.cost).toEqual(expect.any(Number));
      const event = await record.of('hunt-absurd-tokens');
      // a cost of Infinity: the event was refused, the request never counted
      expect(LlmCompletionEvent.safeParse(event).success).toBe(true);
      expect(event.usageSource).toBe('tokenizer');
      expect(event.usage.prompt_tokens).toBeLessThan(100);
    } finally {
      record.stop();
    }
  });

  it('a tool call whose provider gives its arguments as an object is counted with them when it reports no usage', async () => {
    // llama.cpp's server answered arguments as a JSON object for a while; only a string was counted
    const query = 'a long argument '.repeat(50);
    odd.answer(
      '/chat/completions',
      200,
      'application/json',
      JSON.stringify({
        id: 'chatcmpl-odd',
        object: 'chat.completion',
        created: 1,
        model: 'chat-odd',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [
                { id: 'call_1', type: 'function', function: { name: 'search', arguments: { query } } },
              ],
            },
            finish_reason: 'tool_calls',
          },
        ],
      }),
    );
    const record = recordCompletions(w);
    try {
      const res = await w.call(
        'gateway',
        'POST',
        '/v1/chat/completions',
        { bearer: member.token },
        { model: 'odd/chat', messages: [{ role: 'user', content: 'search for me' }] },
        { 'x-request-id': 'hunt-object-arguments' },
      );
      expect(res.status).toBe(200);
      const event = await record.of('hunt-object-arguments');
      expect(event.usageSource).toBe('tokenizer');
      expect(event.usage.completion_tokens).toBeGreaterThan(100);
    } finally {
      record.stop();
    }
  });

  it('an Anthropic-protocol stream closed after its stop reason without message_stop is a whole answer', async () => {
    // gateways that translate another protocol to Anthropic's end the body after message_delta (its stop reason and
    // usage): the answer is whole, as an OpenAI stream with its finish_reason and no [DONE]
    const frame = (event: string, data: Record<string, unknown>) =>
      `event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`;
    odd.answer(
      '/messages',
      200,
      'text/event-stream',
      [
        frame('message_start', {
          message: { id: 'msg_odd', model: 'claude-odd', usage: { input_tokens: 5, output_tokens: 1 } },
        }),
        frame('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
        frame('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hello there' } }),
        frame('content_block_stop', { index: 0 }),
        frame('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 3 } }),
      ].join(''),
    );
    const record = recordCompletions(w);
    try {
      const res = await fetch(`${w.p.gatewayUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${member.token}`,
          'content-type': 'application/json',
          'x-request-id': 'hunt-no-message-stop',
        },
        body: JSON.stringify({
          model: 'odd/claude',
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      const frames = (await res.text()).split('\n\n').filter(Boolean);
      expect(frames.at(-1)).toBe('data: [DONE]');
      const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.slice(6)));
      expect(chunks.some((c) => c.error)).toBe(false);
      expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe('Hello there');
      expect(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason).toBe('stop');
      const event = await record.of('hunt-no-message-stop');
      expect([event.outcome, event.usage.completion_tokens]).toEqual(['success', 3]);
    } finally {
      record.stop();
    }
  });

  it('an absurd output figure, or any absurd figure of an Anthropic-protocol provider, is counted by the tokenizer too', async () => {
    // the output's figure alone absurd was counted as no output at all (a free answer); Anthropic's figures were
    // taken whatever their size (a cost of Infinity, an event llm-quota refuses)
    const record = recordCompletions(w);
    try {
      for (const [path, model, stream] of [
        ['/v1/chat/completions', 'sim/gpt', false],
        ['/v1/chat/completions', 'sim/gpt', true],
        ['/v1/chat/completions', 'sim/claude', false],
        ['/v1/chat/completions', 'sim/claude', true],
        ['/v1/messages', 'sim/claude', false],
        ['/v1/messages', 'sim/claude', true],
      ] as const) {
        for (const [absurd, usage] of [
          ['output', { prompt_tokens: 5, completion_tokens: 1e308 }],
          ['input', { prompt_tokens: 1e308, completion_tokens: 5 }],
        ] as const) {
          w.sim.script([{ reply: { content: 'a few words of answer', usage } }]);
          const requestId = `hunt-absurd-${absurd}-${path.split('/').pop()}-${model.replace('/', '-')}-${stream}`;
          const res = await w.call(
            'gateway',
            'POST',
            path,
            { bearer: member.token },
            { model, stream, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] },
            { 'x-request-id': requestId },
          );
          expect(res.status).toBe(200);
          const event = await record.of(requestId);
          expect([requestId, LlmCompletionEvent.safeParse(event).success, event.usageSource]).toEqual([
            requestId,
            true,
            'tokenizer',
          ]);
          expect([requestId, event.usage.completion_tokens > 0, event.usage.prompt_tokens < 100]).toEqual([
            requestId,
            true,
            true,
          ]);
        }
      }
    } finally {
      record.stop();
    }
  });

  it('chat-scored rerank reads ".75" as 0.75', async () => {
    w.sim.script([{ match: { endpoint: 'chat' }, reply: { content: '.75' } }]);
    const res = await w.call(
      'gateway',
      'POST',
      '/v1/rerank',
      { bearer: member.token },
      { model: 'sim/gpt', query: 'q', documents: ['a'] },
    );
    expect(res.status).toBe(200);
    expect(res.body.results[0].relevance_score).toBe(0.75);
  });
});

describe('chat-scored rerank: the score of an answer', () => {
  it('reads the first number, with or without its leading zero, clamped to [0, 1]', () => {
    expect(['0.75', '.75', 'Score: .3.', '1.', '0.8.', '5', '-0.2', 'none', '2e-1'].map(scoreOf)).toEqual([
      0.75, 0.75, 0.3, 1, 0.8, 1, 0, 0, 0.2,
    ]);
  });
});
