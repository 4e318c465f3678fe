import { type ProviderSimulator, startProviderSimulator } from '@platform/testkit';
import {
  type ChatCompletionChunk,
  type ChatCompletionRequest,
  createProviderAdapter,
  type ProviderCall,
} from '../src/providers';

/**
 * The provider adapters report the prompt's cache reads and writes in OpenAI's shape (decision 0107), against the
 * provider simulator scripted to report them in each wire format.
 */
describe('prompt-cache usage from the providers', () => {
  let sim: ProviderSimulator;
  beforeAll(async () => {
    sim = await startProviderSimulator({});
  });
  afterAll(() => sim.close());
  beforeEach(() => sim.reset());

  const clock = { now: () => new Date('2026-03-01T00:00:00Z') };
  const openai = () =>
    createProviderAdapter({ name: 'sim', type: 'openai', baseUrl: sim.openaiBaseUrl }, { clock });
  const claude = () =>
    createProviderAdapter({ name: 'claude', type: 'anthropic', baseUrl: sim.anthropicBaseUrl }, { clock });
  const call = (model: string): ProviderCall => ({
    model,
    headers: {},
    timeoutMs: 10_000, // an answer expected: never a timeout on a loaded machine
    signal: new AbortController().signal,
  });
  const ask: ChatCompletionRequest = {
    model: 'x',
    messages: [{ role: 'user', content: 'Summarise the long document above' }],
  };
  const lastUsage = async (stream: AsyncIterable<ChatCompletionChunk>) => {
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.at(-1)!.choices).toEqual([]);
    return chunks.at(-1)!.usage;
  };
  const cached = { prompt_tokens: 10_000, completion_tokens: 500, cached_tokens: 6_000 };

  it('OpenAI: keeps prompt_tokens_details (cached and cache-written tokens) beside the figures, plain and streamed', async () => {
    sim.script([
      {
        reply: {
          usage: {
            ...cached,
            cache_write_tokens: 3_000,
            completion_tokens_details: { reasoning_tokens: 200 },
          },
        },
      },
    ]);
    const plain = await openai().chat(ask, call('gpt-sim'));
    const expected = {
      prompt_tokens: 10_000,
      completion_tokens: 500,
      total_tokens: 10_500,
      prompt_tokens_details: { cached_tokens: 6_000, cache_write_tokens: 3_000 },
    };
    expect(plain.usage).toEqual(expected);
    expect(plain.body.usage).toMatchObject({ completion_tokens_details: { reasoning_tokens: 200 } });
    const streamed = await lastUsage(
      openai().chatStream({ ...ask, stream: true, stream_options: { include_usage: true } }, call('gpt-sim')),
    );
    expect(streamed).toMatchObject({ ...expected, completion_tokens_details: { reasoning_tokens: 200 } });
  });

  it('Anthropic: prompt_tokens is every input token, the cache reads and writes its cached_tokens and cache_write_tokens', async () => {
    sim.script([{ reply: { usage: { ...cached, cache_write_tokens: 3_000 } } }]);
    const expected = {
      prompt_tokens: 10_000,
      completion_tokens: 500,
      total_tokens: 10_500,
      prompt_tokens_details: { cached_tokens: 6_000, cache_write_tokens: 3_000 },
    };
    const plain = await claude().chat(ask, call('claude-sim'));
    expect(plain.usage).toEqual(expected);
    expect(plain.body.usage).toEqual(expected);
    const streamed = await lastUsage(claude().chatStream({ ...ask, stream: true }, call('claude-sim')));
    expect(streamed).toEqual(expected);
  });

  it('the simulator reports cache reads and writes in each wire format', async () => {
    sim.script([{ reply: { usage: { ...cached, cache_write_tokens: 3_000 } } }]);
    const anthropicHeaders = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' };
    const anthropic = await fetch(`${sim.anthropicBaseUrl}/v1/messages`, {
      method: 'POST',
      headers: anthropicHeaders,
      body: JSON.stringify({ model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(((await anthropic.json()) as { usage: unknown }).usage).toEqual({
      input_tokens: 1_000,
      output_tokens: 500,
      cache_read_input_tokens: 6_000,
      cache_creation_input_tokens: 3_000,
      // Anthropic's split of the writes by TTL: all 5-minute unless scripted (decision 0113)
      cache_creation: { ephemeral_5m_input_tokens: 3_000, ephemeral_1h_input_tokens: 0 },
    });
    const streamed = await fetch(`${sim.anthropicBaseUrl}/v1/messages`, {
      method: 'POST',
      headers: anthropicHeaders,
      body: JSON.stringify({
        model: 'm',
        max_tokens: 100,
        stream: true,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    });
    const start = (await streamed.text())
      .split('\n')
      .find((l) => l.startsWith('data: {"type":"message_start"'));
    expect(JSON.parse(start!.slice(6)).message.usage).toMatchObject({
      input_tokens: 1_000,
      cache_read_input_tokens: 6_000,
      cache_creation_input_tokens: 3_000,
    });
    const openaiAnswer = await fetch(`${sim.openaiBaseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(((await openaiAnswer.json()) as { usage: unknown }).usage).toEqual({
      prompt_tokens: 10_000,
      completion_tokens: 500,
      total_tokens: 10_500,
      prompt_tokens_details: { cached_tokens: 6_000, cache_write_tokens: 3_000 },
    });
  });

  it("Anthropic: a stream's message_delta that repeats the usage with nulls keeps message_start's figures", async () => {
    const events = [
      {
        type: 'message_start',
        message: {
          id: 'msg_1',
          model: 'claude-sim',
          usage: {
            input_tokens: 1_000,
            output_tokens: 1,
            cache_read_input_tokens: 6_000,
            cache_creation_input_tokens: 3_000,
          },
        },
      },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Done.' } },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn' },
        usage: {
          output_tokens: 500,
          input_tokens: null,
          cache_read_input_tokens: null,
          cache_creation_input_tokens: null,
        },
      },
      { type: 'message_stop' },
    ];
    const body = events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('');
    const adapter = createProviderAdapter(
      { name: 'claude', type: 'anthropic', baseUrl: 'https://api.anthropic.com' },
      {
        clock,
        fetch: async () =>
          new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } }),
      },
    );
    expect(await lastUsage(adapter.chatStream({ ...ask, stream: true }, call('claude-sim')))).toEqual({
      prompt_tokens: 10_000,
      completion_tokens: 500,
      total_tokens: 10_500,
      prompt_tokens_details: { cached_tokens: 6_000, cache_write_tokens: 3_000 },
    });
  });

  it('Anthropic: writes to the 1-hour cache are cache_creation_token_details, plain and streamed', async () => {
    const usage = { ...cached, cache_write_tokens: 3_000, cache_write_1h_tokens: 2_000 };
    const expected = {
      prompt_tokens: 10_000,
      completion_tokens: 500,
      total_tokens: 10_500,
      prompt_tokens_details: {
        cached_tokens: 6_000,
        cache_write_tokens: 3_000,
        cache_creation_token_details: { ephemeral_5m_input_tokens: 1_000, ephemeral_1h_input_tokens: 2_000 },
      },
    };
    sim.script([{ reply: { usage } }]);
    expect((await claude().chat(ask, call('claude-sim'))).usage).toEqual(expected);
    sim.script([{ reply: { usage } }]);
    expect(await lastUsage(claude().chatStream({ ...ask, stream: true }, call('claude-sim')))).toEqual(
      expected,
    );
    // as Anthropic reports them: the split beside the sum
    sim.script([{ reply: { usage } }]);
    const answer = await fetch(`${sim.anthropicBaseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(((await answer.json()) as { usage: unknown }).usage).toMatchObject({
      cache_creation_input_tokens: 3_000,
      cache_creation: { ephemeral_5m_input_tokens: 1_000, ephemeral_1h_input_tokens: 2_000 },
    });
  });

  /** an adapter fed Anthropic's stream events as they are given */
  const streamOf = (events: unknown[]) => {
    const body = events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('');
    return createProviderAdapter(
      { name: 'claude', type: 'anthropic', baseUrl: 'https://api.anthropic.com' },
      {
        clock,
        fetch: async () =>
          new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } }),
      },
    ).chatStream({ ...ask, stream: true }, call('claude-sim'));
  };
  const streamed = (start: object, delta: object) => [
    { type: 'message_start', message: { id: 'msg_1', model: 'claude-sim', usage: start } },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Done.' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: delta },
    { type: 'message_stop' },
  ];

  it("Anthropic: a stream's split of the writes by TTL is message_start's, or message_delta's when it gives one", async () => {
    const figures = {
      input_tokens: 1_000,
      cache_read_input_tokens: 6_000,
      cache_creation_input_tokens: 3_000,
    };
    const split = { ephemeral_5m_input_tokens: 1_000, ephemeral_1h_input_tokens: 2_000 };
    const expected = {
      prompt_tokens: 10_000,
      completion_tokens: 500,
      total_tokens: 10_500,
      prompt_tokens_details: {
        cached_tokens: 6_000,
        cache_write_tokens: 3_000,
        cache_creation_token_details: split,
      },
    };
    // message_start's split, with a message_delta repeating the figures with nulls
    const nulls = { input_tokens: null, cache_read_input_tokens: null, cache_creation_input_tokens: null };
    for (const delta of [
      { output_tokens: 500 },
      { output_tokens: 500, ...nulls, cache_creation: null },
      { output_tokens: 500, ...nulls, cache_creation: { ephemeral_5m_input_tokens: null } },
    ])
      expect(
        await lastUsage(streamOf(streamed({ ...figures, output_tokens: 1, cache_creation: split }, delta))),
      ).toEqual(expected);
    // the split given only by message_delta, its cumulative figures with it
    expect(
      await lastUsage(
        streamOf(
          streamed(
            { input_tokens: 1_000, output_tokens: 1 },
            { ...figures, output_tokens: 500, cache_creation: split },
          ),
        ),
      ),
    ).toEqual(expected);
  });

  it('Anthropic: an answer without cache reads or writes has no prompt_tokens_details, as before', async () => {
    const plain = await claude().chat(ask, call('claude-sim'));
    expect(plain.usage).not.toHaveProperty('prompt_tokens_details');
  });
});
