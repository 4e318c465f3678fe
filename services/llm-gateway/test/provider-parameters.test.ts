import Anthropic from '@anthropic-ai/sdk';
import { type GatewayWorld, gauge, recordCompletions, startGatewayWorld } from './support';
import { reasoningReportAfterFinish } from './usage-after-finish';

/**
 * A deployment's request shaping (`provider_config.parameter_aliases` and `exclude_parameters`, decision 0119), as an
 * operator serves a provider that renamed a parameter, refuses one, or streams badly, without the clients changing:
 * what the provider receives, through the edge with the official `openai` SDK.
 */
describe("a deployment's renamed and excluded request parameters, through the edge", () => {
  let w: GatewayWorld;
  beforeAll(async () => {
    w = await startGatewayWorld({
      models: [
        {
          model_id: 'sim/renamed',
          type: 'completion',
          provider_config: {
            provider: 'sim',
            model: 'renamed-sim',
            parameter_aliases: { max_tokens: 'max_completion_tokens' },
            exclude_parameters: ['top_p', 'presence_penalty'],
          },
          pricing: { input_per_million: 1, output_per_million: 2 },
        },
        {
          model_id: 'sim/unstreamed',
          type: 'completion',
          provider_config: { provider: 'sim', model: 'unstreamed-sim', exclude_parameters: ['stream'] },
          pricing: { input_per_million: 1, output_per_million: 2 },
        },
        {
          model_id: 'sim/claude-unstreamed',
          type: 'completion',
          provider_config: {
            provider: 'claude',
            model: 'claude-unstreamed-sim',
            exclude_parameters: ['stream'],
          },
          pricing: { input_per_million: 3, output_per_million: 15 },
        },
        {
          model_id: 'sim/one-choice',
          type: 'completion',
          provider_config: { provider: 'sim', model: 'one-choice-sim', exclude_parameters: ['n'] },
          pricing: { input_per_million: 1, output_per_million: 2 },
        },
        {
          model_id: 'sim/claude-shaped',
          type: 'completion',
          provider_config: { provider: 'claude', model: 'claude-sim', exclude_parameters: ['temperature'] },
          pricing: { input_per_million: 3, output_per_million: 15 },
        },
      ],
    });
  });
  afterAll(() => w?.stop());
  afterEach(() => w.sim.script([]));

  const lastBody = (model: string) =>
    w.sim
      .requests()
      .filter((r) => r.model === model)
      .at(-1)?.body as Record<string, unknown>;

  it('rename and drop members before the provider receives them; other models get the body as sent', async () => {
    const { owner } = await w.org('shaped-params');
    const client = w.client({ bearer: owner.token });
    const ask = {
      messages: [{ role: 'user' as const, content: 'hello' }],
      max_tokens: 50,
      top_p: 0.5,
      presence_penalty: 0.1,
      temperature: 0.2,
    };
    const answer = await client.chat.completions.create({ ...ask, model: 'sim/renamed' });
    expect(answer.choices[0]!.message.content).toEqual(expect.any(String));
    const sent = lastBody('renamed-sim');
    expect(sent).toMatchObject({ model: 'renamed-sim', max_completion_tokens: 50, temperature: 0.2 });
    expect(Object.keys(sent)).not.toEqual(expect.arrayContaining(['max_tokens']));
    for (const dropped of ['max_tokens', 'top_p', 'presence_penalty'])
      expect(sent).not.toHaveProperty(dropped);

    // streamed too: the gateway's own stream members are shaped alike
    const stream = await client.chat.completions.create({ ...ask, model: 'sim/renamed', stream: true });
    for await (const _chunk of stream);
    expect(lastBody('renamed-sim')).toMatchObject({ max_completion_tokens: 50, stream: true });
    expect(lastBody('renamed-sim')).not.toHaveProperty('top_p');

    // a client that sent the new name itself keeps its own value
    await client.chat.completions.create({ ...ask, model: 'sim/renamed', max_completion_tokens: 70 });
    expect(lastBody('renamed-sim')).toMatchObject({ max_completion_tokens: 70 });
    expect(lastBody('renamed-sim')).not.toHaveProperty('max_tokens');

    // an Anthropic deployment: its translated body is shaped
    await client.chat.completions.create({ ...ask, model: 'sim/claude-shaped' });
    const anthropic = lastBody('claude-sim');
    expect(anthropic).toMatchObject({ model: 'claude-sim', max_tokens: 50 });
    expect(anthropic).not.toHaveProperty('temperature');

    // a model without shaping gets every member
    await client.chat.completions.create({ ...ask, model: 'sim/cheap' });
    expect(lastBody('cheap-sim')).toMatchObject({ max_tokens: 50, top_p: 0.5, presence_penalty: 0.1 });
  });

  it('call a deployment without stream in one request, and stream its answer to the client, counted once', async () => {
    const { owner } = await w.org('shaped-stream');
    const client = w.client({ bearer: owner.token });
    const messages = [{ role: 'user' as const, content: 'Tell me about the weather' }];
    const plain = await client.chat.completions.create({ model: 'sim/unstreamed', messages });
    const stream = await client.chat.completions.create({
      model: 'sim/unstreamed',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish: string | null = null;
    let usage: { total_tokens: number } | null = null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
      expect(chunk.model).toBe('sim/unstreamed');
    }
    expect(chunks).toBeGreaterThanOrEqual(3);
    expect(text).toBe(plain.choices[0]!.message.content);
    expect(finish).toBe('stop');
    expect(usage?.total_tokens).toBe(plain.usage!.total_tokens);
    const sent = lastBody('unstreamed-sim');
    expect(sent).not.toHaveProperty('stream');
    expect(sent).not.toHaveProperty('stream_options');
    expect(w.sim.requests().filter((r) => r.model === 'unstreamed-sim')).toHaveLength(2);

    // text completions alike
    const completion = await client.completions.create({
      model: 'sim/unstreamed',
      prompt: 'def add(a, b):',
      stream: true,
      stream_options: { include_usage: true },
    });
    let completed = '';
    let textUsage = 0;
    for await (const chunk of completion) {
      completed += chunk.choices[0]?.text ?? '';
      if (chunk.usage) textUsage = chunk.usage.total_tokens;
    }
    expect(completed.length).toBeGreaterThan(0);
    expect(textUsage).toBeGreaterThan(0);
    expect(lastBody('unstreamed-sim')).not.toHaveProperty('stream');

    // llm-quota counted what the provider reported, once each: the plain answer, the stream, the text completion
    const tokens = 2 * plain.usage!.total_tokens + textUsage;
    const counted = await w.counted('shaped-stream', { bearer: owner.token }, { requests: 3, tokens });
    expect(gauge(counted, 'llm.monthly_tokens').used).toBe(tokens);
  });

  it("a replay cut by the monthly budget is billed the provider's usage, hidden reasoning included; the stream ends as a cut", async () => {
    const { owner } = await w.org('unstreamed-cut', 'budget');
    const completions = recordCompletions(w);
    try {
      // the whole answer (600 words, over the budget of 400 tokens) and 2,000 hidden tokens were generated
      w.sim.script([
        {
          match: { model: 'unstreamed-sim' },
          reply: {
            content: Array.from({ length: 600 }, (_, i) => `word${i}`).join(' '),
            usage: {
              prompt_tokens: 20,
              completion_tokens: 3_000,
              completion_tokens_details: { reasoning_tokens: 2_000 },
            },
          },
        },
      ]);
      const res = await fetch(`${w.p.gatewayUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${owner.token}`,
          'content-type': 'application/json',
          'x-request-id': 'unstreamed-cut',
        },
        body: JSON.stringify({
          model: 'sim/unstreamed',
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: 'user', content: 'a long answer' }],
        }),
      });
      const frames = (await res.text()).split('\n\n').filter(Boolean);
      expect(frames.at(-1)).toBe('data: [DONE]');
      expect(JSON.parse(frames.at(-2)!.slice(6)).error).toMatchObject({ code: 'MONTHLY_QUOTA_EXCEEDED' });
      const event = await completions.of('unstreamed-cut');
      expect({ outcome: event.outcome, source: event.usageSource, usage: event.usage }).toMatchObject({
        outcome: 'budget_cut',
        source: 'provider',
        usage: { prompt_tokens: 20, completion_tokens: 3_000, total_tokens: 3_020 },
      });
      const counted = await w.counted(
        'unstreamed-cut',
        { bearer: owner.token },
        { requests: 1, tokens: 3_020 },
      );
      expect(gauge(counted, 'llm.monthly_tokens').used).toBe(3_020);
      expect(completions.events.filter((e) => e.requestId === 'unstreamed-cut')).toHaveLength(1);
    } finally {
      completions.stop();
    }
  });

  it("a deployment not sent `n` answers one choice: a client leaving after its finish is billed the provider's report", async () => {
    const completions = recordCompletions(w);
    try {
      // 12 prompt and 501 completion tokens (500 of them hidden reasoning), reported 300 ms after the finish
      w.sim.script([reasoningReportAfterFinish('one-choice-sim')]);
      const { owner } = await w.org('one-choice-leave');
      const as = { bearer: owner.token };
      // the openai SDK's stream, left at the finish as a client that reads no further does
      const stream = await w
        .client(as)
        .chat.completions.create(
          { model: 'sim/one-choice', stream: true, n: 2, messages: [{ role: 'user', content: 'think' }] },
          { headers: { 'x-request-id': 'one-choice-leave' } },
        );
      for await (const chunk of stream) if (chunk.choices.some((c) => c.finish_reason)) break;
      expect(lastBody('one-choice-sim')).not.toHaveProperty('n');
      // its answer was whole: the report that follows is read, as with one choice asked
      const event = await completions.of('one-choice-leave');
      expect({ outcome: event.outcome, source: event.usageSource, usage: event.usage }).toMatchObject({
        outcome: 'client_cancelled',
        source: 'provider',
        usage: { prompt_tokens: 12, completion_tokens: 501 },
      });
      const counted = await w.counted('one-choice-leave', as, { requests: 1, tokens: 513 });
      expect(gauge(counted, 'llm.monthly_tokens').used).toBe(513);
    } finally {
      completions.stop();
    }
  });

  it('refuse a deployment renaming or dropping model, in the envelope, naming the field', async () => {
    const entry = (provider_config: Record<string, unknown>) => ({
      model_id: 'sim/bad-shape',
      type: 'completion',
      provider_config: { provider: 'sim', model: 'bad', ...provider_config },
    });
    const admin = { bearer: (await w.platformAdmin()).token };
    for (const config of [
      { exclude_parameters: ['model'] },
      { parameter_aliases: { model: 'engine' } },
      { parameter_aliases: { max_tokens: 7 } },
    ]) {
      const refused = await w.call('gateway', 'POST', '/v1/models', admin, entry(config));
      expect(refused.status).toBe(400);
      expect(refused.body.code).toBe('INVALID_BODY');
      expect(JSON.stringify(refused.body.details)).toMatch(
        /provider_config\.(exclude_parameters|parameter_aliases)/,
      );
    }
  });

  it("streams the stop sequence that ended the answer, as the plain answer says it (Anthropic's Messages, chat)", async () => {
    const { owner } = await w.org('unstreamed-stop');
    w.sim.script([{ match: { model: 'claude-unstreamed-sim' }, reply: { content: 'Paris. END of answer' } }]);
    const client = new Anthropic({
      baseURL: w.p.gatewayUrl,
      apiKey: null,
      authToken: owner.token,
      maxRetries: 0,
    });
    const ask = {
      model: 'sim/claude-unstreamed',
      max_tokens: 100,
      stop_sequences: ['STOP', 'END'],
      messages: [{ role: 'user' as const, content: 'Capital of France?' }],
    };
    const ended = {
      stop_reason: 'stop_sequence',
      stop_sequence: 'END',
      content: [{ type: 'text', text: 'Paris. ' }],
    };
    expect(await client.messages.create(ask)).toMatchObject(ended);
    expect(await client.messages.stream(ask).finalMessage()).toMatchObject(ended);
    // chat says it on the choice's finish, as vLLM streams it
    const stream = await w.client({ bearer: owner.token }).chat.completions.create({
      model: 'sim/claude-unstreamed',
      messages: ask.messages,
      stop: ['END'],
      stream: true,
    });
    const finishes = [];
    for await (const chunk of stream) for (const c of chunk.choices) if (c.finish_reason) finishes.push(c);
    expect(finishes).toEqual([expect.objectContaining({ finish_reason: 'stop', stop_reason: 'END' })]);
  });

  it('counts a provider usage that is no count as a plain answer does (the tokenizer), never a negative figure', async () => {
    const { owner } = await w.org('unstreamed-usage');
    w.sim.script([{ match: { model: 'unstreamed-sim' }, reply: { usage: { prompt_tokens: -1000 } } }]);
    const client = w.client({ bearer: owner.token });
    const ask = { model: 'sim/unstreamed', messages: [{ role: 'user' as const, content: 'hello' }] };
    const plain = await client.chat.completions.create(ask);
    const stream = await client.chat.completions.create({
      ...ask,
      stream: true,
      stream_options: { include_usage: true },
    });
    let usage: { prompt_tokens: number; total_tokens: number } | null = null;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    expect(plain.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(usage).toMatchObject({ prompt_tokens: plain.usage!.prompt_tokens });
    expect(usage!.total_tokens).toBeGreaterThan(0);
    expect((usage as unknown as { cost: number }).cost).toBeGreaterThan(0);
  });
});
