import Anthropic, { BadRequestError } from '@anthropic-ai/sdk';
import type { MessageParam, TextBlockParam } from '@anthropic-ai/sdk/resources/messages';
import { anthropicInputTokens, waitFor } from '@platform/testkit';
import OpenAI from 'openai';
import {
  type CompletionRecord,
  type GatewayWorld,
  gauge,
  modelEntry,
  recordCompletions,
  startGatewayWorld,
} from './support';

type Json = Record<string, unknown>;
const ephemeral = { type: 'ephemeral' as const };
const hour = { type: 'ephemeral' as const, ttl: '1h' as const };

/** Claude's prices and Anthropic's cache rates: reads at 10% of input, 5-minute writes at 125% */
const CLAUDE = { input: 3, output: 15, read: 0.3, write: 3.75 };
const HANDBOOK = Array.from({ length: 300 }, (_, i) => `rule${i} of the handbook`).join(' ');

/**
 * Prompt caching through the gateway (decision 0113): the breakpoints a client sets, with Anthropic's SDK on
 * `/v1/messages` (Claude Code) or as `cache_control` in chat completions (LiteLLM's convention), reach an Anthropic
 * model on the same blocks, so its cache is read on the next turn and billed at the cache rates; an OpenAI-protocol
 * model never sees them; a breakpoint of another shape, or a fifth, is the gateway's own 400 before any provider call.
 */
describe('prompt-cache breakpoints through the edge', () => {
  let w: GatewayWorld;
  let token: string;
  let completions: CompletionRecord;

  beforeAll(async () => {
    w = await startGatewayWorld({
      models: [
        modelEntry(
          'cache/claude',
          'completion',
          { provider: 'claude', model: 'cache-claude' },
          {
            input_per_million: CLAUDE.input,
            output_per_million: CLAUDE.output,
            cached_input_per_million: CLAUDE.read,
            cache_write_per_million: CLAUDE.write,
          },
        ),
        modelEntry(
          'cache/gpt',
          'completion',
          { provider: 'sim', model: 'cache-gpt' },
          {
            input_per_million: 2,
            output_per_million: 8,
            cached_input_per_million: 0.5,
          },
        ),
      ],
    });
    ({ token } = (await w.org('cache-breakpoints')).owner);
    completions = recordCompletions(w);
  }, 60_000);
  afterAll(async () => {
    completions?.stop();
    await w?.stop();
  });
  afterEach(() => w.sim.reset());

  const anthropic = () =>
    new Anthropic({ baseURL: w.p.gatewayUrl, apiKey: null, authToken: token, maxRetries: 0 });
  const openai = () => new OpenAI({ baseURL: `${w.p.gatewayUrl}/v1`, apiKey: token, maxRetries: 0 });
  const received = () => w.sim.requests().at(-1)!.body as Json;
  /** USD micros per million tokens: the cost, rounded to micros as the gateway rounds it (decision 0107) */
  const usd = (micros: number) => Math.round(micros) / 1e6;
  const priced = (u: Record<string, number>) =>
    usd(
      u.input_tokens! * CLAUDE.input +
        u.cache_read_input_tokens! * CLAUDE.read +
        u.cache_creation_input_tokens! * CLAUDE.write +
        u.output_tokens! * CLAUDE.output,
    );

  it("Claude Code's breakpoints reach Claude on its blocks, and the next turn reads the cache at its rate", async () => {
    const client = anthropic();
    const system: TextBlockParam[] = [
      { type: 'text', text: 'You are the librarian.' },
      { type: 'text', text: HANDBOOK, cache_control: ephemeral },
    ];
    const first: MessageParam = {
      role: 'user',
      content: [{ type: 'text', text: 'Which rule covers late returns?', cache_control: ephemeral }],
    };
    const one = await client.messages.create({
      model: 'cache/claude',
      max_tokens: 100,
      system,
      messages: [first],
    });

    const sent = received();
    // the system prompt the model reads is the same text, cut after the breakpoint
    expect(sent.system).toEqual([
      { type: 'text', text: `You are the librarian.\n\n${HANDBOOK}`, cache_control: ephemeral },
    ]);
    expect(sent.messages).toEqual([
      {
        role: 'user',
        content: [{ type: 'text', text: 'Which rule covers late returns?', cache_control: ephemeral }],
      },
    ]);
    // the first turn writes the whole prompt to the cache, at the write price
    const usage1 = one.usage as unknown as Record<string, number>;
    expect(usage1).toMatchObject({
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: anthropicInputTokens(sent as never),
      input_tokens: 0,
    });
    expect(usage1.cost).toBeCloseTo(priced(usage1), 12);

    // the next turn, streamed: Claude Code marks the system and its last two user turns
    const text = one.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    const stream = client.messages.stream({
      model: 'cache/claude',
      max_tokens: 100,
      system,
      messages: [
        first,
        { role: 'assistant', content: text },
        { role: 'user', content: [{ type: 'text', text: 'And lost books?', cache_control: ephemeral }] },
      ],
    });
    const two = await stream.finalMessage();
    const usage2 = two.usage as unknown as Record<string, number>;
    expect(usage2.cache_read_input_tokens).toBe(usage1.cache_creation_input_tokens);
    expect(usage2.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(usage2.input_tokens).toBe(0);
    const total = anthropicInputTokens(received() as never);
    expect(usage2.cache_read_input_tokens! + usage2.cache_creation_input_tokens!).toBe(total);

    // the usage event (what the month's cost budget counts) prices the cache reads at their rate
    const event = await waitFor(
      () => completions.events.find((e) => e.usage.cached_tokens === usage2.cache_read_input_tokens),
      { what: 'the second turn’s usage event' },
    );
    expect(event.usage.cache_write_tokens).toBe(usage2.cache_creation_input_tokens);
    expect(event.cost).toBeCloseTo(priced({ ...usage2, output_tokens: event.usage.completion_tokens }), 12);
    // 10× cheaper than the input price for what was read
    expect(event.cost).toBeLessThan(
      (total * CLAUDE.input + event.usage.completion_tokens * CLAUDE.output) / 1e6,
    );
  });

  it('a 1-hour breakpoint is billed at twice the input price (no price of its own), the 5-minute write after it at the write price', async () => {
    const { owner } = await w.org('cache-hour');
    const as = { bearer: owner.token };
    const client = new Anthropic({
      baseURL: w.p.gatewayUrl,
      apiKey: null,
      authToken: owner.token,
      maxRetries: 0,
    });
    const one = await client.messages.create({
      model: 'cache/claude',
      max_tokens: 100,
      // the handbook for an hour, the question for five minutes (Anthropic wants the hour's breakpoints first)
      system: [{ type: 'text', text: HANDBOOK, cache_control: hour }],
      messages: [
        {
          role: 'user',
          content: [{ type: 'text', text: 'Which rule covers fines?', cache_control: ephemeral }],
        },
      ],
    });
    const sent = received();
    expect(sent.system).toEqual([{ type: 'text', text: HANDBOOK, cache_control: hour }]);
    // what the simulated Anthropic wrote for an hour: the prompt up to the system's breakpoint
    const hourWritten = anthropicInputTokens({ tools: [], system: sent.system, messages: [] } as never);
    const usage = one.usage as unknown as Record<string, number> & { cache_creation: Record<string, number> };
    const fiveWritten = usage.cache_creation_input_tokens - hourWritten;
    expect(hourWritten).toBeGreaterThan(1_000);
    expect(fiveWritten).toBeGreaterThan(0);
    expect(usage).toMatchObject({
      input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: anthropicInputTokens(sent as never),
      cache_creation: { ephemeral_5m_input_tokens: fiveWritten, ephemeral_1h_input_tokens: hourWritten },
    });
    const cost = usd(
      hourWritten * 2 * CLAUDE.input + fiveWritten * CLAUDE.write + usage.output_tokens! * CLAUDE.output,
    );
    expect(usage.cost).toBeCloseTo(cost, 12);
    // what pricing every write at the one write price missed (to the micro each rounds to): the hour's 2× input
    // less 1.25×, on each of its tokens
    expect(
      Math.abs(cost - priced(usage) - (hourWritten * (2 * CLAUDE.input - CLAUDE.write)) / 1e6),
    ).toBeLessThanOrEqual(1e-6);

    // the usage event and the month's cost budget count that cost
    const event = await waitFor(() => completions.events.find((e) => e.orgSlug === 'cache-hour'), {
      what: 'the usage event of the 1-hour write',
    });
    expect(event.usage.cache_write_tokens).toBe(usage.cache_creation_input_tokens);
    expect(event.cost).toBeCloseTo(cost, 12);
    const report = await w.counted('cache-hour', as, { requests: 1, cost });
    expect(gauge(report, 'llm.monthly_cost').used).toBeCloseTo(cost, 9);
  });

  /** a chat request in LiteLLM's convention: a breakpoint on a system part, a string message and a tool */
  const chatWithBreakpoints = (model: string) =>
    ({
      model,
      messages: [
        {
          role: 'system',
          content: [
            { type: 'text', text: 'You are the librarian.' },
            { type: 'text', text: HANDBOOK, cache_control: ephemeral },
          ],
        },
        { role: 'user', content: 'Which rule covers late returns?', cache_control: ephemeral },
      ],
      tools: [
        {
          type: 'function',
          function: { name: 'find_rule', parameters: { type: 'object', properties: {} } },
          cache_control: hour,
        },
      ],
      tool_choice: 'none',
    }) as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;

  it('the openai SDK: an Anthropic model gets the chat breakpoints on its blocks and is billed at the cache rates', async () => {
    const answer = await openai().chat.completions.create(chatWithBreakpoints('cache/claude'));
    const sent = received();
    expect(sent.tools).toEqual([
      { name: 'find_rule', input_schema: { type: 'object', properties: {} }, cache_control: hour },
    ]);
    expect(sent.system).toEqual([
      { type: 'text', text: `You are the librarian.\n${HANDBOOK}`, cache_control: ephemeral },
    ]);
    expect(sent.messages).toEqual([
      {
        role: 'user',
        content: [{ type: 'text', text: 'Which rule covers late returns?', cache_control: ephemeral }],
      },
    ]);
    const usage = answer.usage as unknown as Json & { prompt_tokens_details: Record<string, number> };
    expect(usage.prompt_tokens_details.cache_write_tokens).toBe(anthropicInputTokens(sent as never));

    // the same request again reads all of it from the cache
    const again = await openai().chat.completions.create(chatWithBreakpoints('cache/claude'));
    const details = (again.usage as unknown as { prompt_tokens_details: Record<string, number> })
      .prompt_tokens_details;
    expect(details).toEqual({ cached_tokens: again.usage!.prompt_tokens, cache_write_tokens: 0 });
    expect((again.usage as unknown as Json).cost).toBeCloseTo(
      usd(again.usage!.prompt_tokens * CLAUDE.read + again.usage!.completion_tokens * CLAUDE.output),
      12,
    );
  });

  it('the openai SDK: an OpenAI-protocol model never receives them, and answers', async () => {
    const answer = await openai().chat.completions.create(chatWithBreakpoints('cache/gpt'));
    expect(answer.choices[0]!.message.content).toEqual(expect.any(String));
    const sent = received();
    expect(JSON.stringify(sent)).not.toContain('cache_control');
    expect(sent.messages).toEqual([
      {
        role: 'system',
        content: [
          { type: 'text', text: 'You are the librarian.' },
          { type: 'text', text: HANDBOOK },
        ],
      },
      { role: 'user', content: 'Which rule covers late returns?' },
    ]);

    // streamed, through the Messages API too
    const message = await anthropic()
      .messages.stream({
        model: 'cache/gpt',
        max_tokens: 50,
        system: [{ type: 'text', text: HANDBOOK, cache_control: ephemeral }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: ephemeral }] }],
      })
      .finalMessage();
    expect(message.content[0]).toMatchObject({ type: 'text' });
    expect(JSON.stringify(received())).not.toContain('cache_control');
  });

  it('a breakpoint of another shape, or a fifth one, is a 400 naming it before any provider call', async () => {
    const chat = (messages: unknown[]) =>
      w.call(
        'gateway',
        'POST',
        '/v1/chat/completions',
        { bearer: token },
        { model: 'cache/claude', messages },
      );
    const fieldsOf = (reply: { body: { details: { issues: Array<{ field: string }> } } }) =>
      reply.body.details.issues.map((i) => i.field);

    const badType = await chat([
      { role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'persistent' } }] },
    ]);
    expect(badType.status).toBe(400);
    expect(badType.body).toMatchObject({ code: 'INVALID_BODY' });
    expect(fieldsOf(badType)).toEqual(['messages.0.content.0.cache_control.type']);
    const badTtl = await chat([
      { role: 'user', content: 'x', cache_control: { type: 'ephemeral', ttl: '2h' } },
    ]);
    expect(fieldsOf(badTtl)).toEqual(['messages.0.cache_control.ttl']);
    const extra = await w.call(
      'gateway',
      'POST',
      '/v1/chat/completions',
      { bearer: token },
      {
        ...chatWithBreakpoints('cache/gpt'),
        tools: [
          { type: 'function', function: { name: 'f' }, cache_control: { type: 'ephemeral', scope: 'x' } },
        ],
      },
    );
    expect([extra.status, fieldsOf(extra)]).toEqual([400, ['tools.0.cache_control']]);

    // five, whichever provider the model is on (its deployments or failover may be either)
    const five = [
      { role: 'system', content: 'S', cache_control: ephemeral },
      {
        role: 'user',
        content: ['a', 'b', 'c', 'd'].map((text) => ({ type: 'text', text, cache_control: ephemeral })),
      },
    ];
    for (const model of ['cache/claude', 'cache/gpt']) {
      const reply = await w.call(
        'gateway',
        'POST',
        '/v1/chat/completions',
        { bearer: token },
        { model, messages: five },
      );
      expect([model, reply.status, fieldsOf(reply)]).toEqual([
        model,
        400,
        ['messages.1.content.3.cache_control'],
      ]);
      expect(reply.body.details.issues[0].message).toMatch(/at most 4 cache_control breakpoints/);
    }
    // through the SDK: its error of the status
    const sdk = await openai()
      .chat.completions.create({ model: 'cache/claude', messages: five } as never)
      .catch((e: unknown) => e);
    expect(sdk).toBeInstanceOf(OpenAI.BadRequestError);

    // the Messages API: Anthropic's error shape, naming the field
    const err = await anthropic()
      .messages.create({
        model: 'cache/claude',
        max_tokens: 10,
        system: [{ type: 'text', text: 'S', cache_control: { type: 'ephemeral', ttl: '1d' as '1h' } }],
        messages: [
          {
            role: 'user',
            content: ['a', 'b', 'c', 'd', 'e'].map((text) => ({
              type: 'text' as const,
              text,
              cache_control: ephemeral,
            })),
          },
        ],
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    const issues = ((err as BadRequestError).details as unknown as { issues: Array<{ field: string }> })
      .issues;
    expect(issues.map((i) => i.field)).toEqual([
      'system.0.cache_control',
      'messages.0.content.3.cache_control',
    ]);

    // an hour-long breakpoint after a 5-minute one: Anthropic's order, refused for an Anthropic model
    const order = await chat([
      { role: 'system', content: 'S', cache_control: ephemeral },
      { role: 'user', content: 'x', cache_control: hour },
    ]);
    expect(order.status).toBe(400);
    expect(order.body).toMatchObject({ code: 'INVALID_BODY', message: expect.stringMatching(/ttl '1h'/) });
    expect(w.sim.requests()).toEqual([]);
  });
});
