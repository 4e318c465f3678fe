import { waitFor } from '@platform/testkit';
import type OpenAI from 'openai';
import {
  type CompletionRecord,
  type GatewayWorld,
  gauge,
  INTERNAL_SECRET,
  modelEntry,
  recordCompletions,
  startGatewayWorld,
} from './support';

/**
 * A platform team using prompt caching is charged what its provider charges (decision 0107): through the edge with
 * the official openai SDK, a chat whose prompt the provider partly read from (or wrote to) its cache is priced at
 * the catalogue's cache rates, in `usage.cost`, in the usage event and in what llm-quota counts against the month's
 * cost budget, for OpenAI and Anthropic providers, plain and streamed. The token budgets still count every token.
 */
describe('prompt-cache pricing through the edge', () => {
  let w: GatewayWorld;
  let completions: CompletionRecord;
  let orgs = 0;

  beforeAll(async () => {
    const claudePrices = {
      input_per_million: 3,
      output_per_million: 15,
      cached_input_per_million: 0.3,
      cache_write_per_million: 3.75,
    };
    const claude = { provider: 'claude', model: 'cache-claude' };
    w = await startGatewayWorld({
      models: [
        modelEntry(
          'cache/gpt',
          'completion',
          { provider: 'sim', model: 'cache-gpt' },
          {
            input_per_million: 2,
            output_per_million: 8,
            cached_input_per_million: 0.5,
            cache_write_per_million: 2.5,
          },
        ),
        modelEntry('cache/claude', 'completion', claude, claudePrices),
        // the catalogue's own price of a 1-hour write wins over the rule (twice the input price)
        modelEntry('cache/claude-1h', 'completion', claude, {
          ...claudePrices,
          cache_write_1h_per_million: 6.6,
        }),
      ],
    });
    completions = recordCompletions(w);
  }, 60_000);
  afterAll(async () => {
    completions?.stop();
    await w?.stop();
  });
  afterEach(() => w.sim.reset());

  /** a new organization, so what llm-quota counts is this test's alone */
  const freshOrg = async () => {
    const slug = `cache-org-${++orgs}`;
    const { owner } = await w.org(slug);
    const as = { bearer: owner.token };
    return { slug, as, client: w.client(as) };
  };
  let seq = 0;
  /** one chat through the SDK, plain or streamed (with the usage chunk): its usage and request id */
  const chat = async (client: OpenAI, model: string, stream: boolean) => {
    const requestId = `cache-${++seq}`;
    const messages = [{ role: 'user' as const, content: 'Answer from the cached handbook' }];
    const options = { headers: { 'x-request-id': requestId } };
    if (!stream) {
      const answer = await client.chat.completions.create({ model, messages }, options);
      return { usage: answer.usage as unknown as Record<string, unknown>, requestId };
    }
    const chunks = await client.chat.completions.create(
      { model, messages, stream: true, stream_options: { include_usage: true } },
      options,
    );
    let usage: Record<string, unknown> | undefined;
    for await (const chunk of chunks)
      if (chunk.usage) usage = chunk.usage as unknown as Record<string, unknown>;
    return { usage: usage!, requestId };
  };

  // OpenAI reports cache reads only; Anthropic reads and writes (its input_tokens is the rest of the prompt)
  /** a prompt of 10,000 tokens: 6,000 read from the cache, 3,000 written to it; and 500 completion tokens */
  const readAndWritten = {
    prompt_tokens: 10_000,
    completion_tokens: 500,
    cached_tokens: 6_000,
    cache_write_tokens: 3_000,
  };
  /** the cache's part of that prompt, as `prompt_tokens_details` and the usage event show it */
  const readAndWrittenParts = { cached_tokens: 6_000, cache_write_tokens: 3_000 };
  /** the same prompt with `oneHour` of its 3,000 written tokens written to the 1-hour cache */
  const withHourWrites = (oneHour: number) => ({
    usage: { ...readAndWritten, cache_write_1h_tokens: oneHour },
    details: {
      ...readAndWrittenParts,
      cache_creation_token_details: {
        ephemeral_5m_input_tokens: 3_000 - oneHour,
        ephemeral_1h_input_tokens: oneHour,
      },
    },
    event: readAndWrittenParts,
  });
  const cases = [
    {
      provider: 'OpenAI',
      model: 'cache/gpt',
      api: 'openai' as const,
      usage: { prompt_tokens: 10_000, completion_tokens: 1_000, cached_tokens: 8_000 },
      details: { cached_tokens: 8_000 },
      event: { cached_tokens: 8_000 },
      // 2,000 × 2 + 8,000 × 0.5 + 1,000 × 8 micros (at the input price alone: 0.028)
      cost: 0.016,
    },
    {
      provider: 'Anthropic',
      model: 'cache/claude',
      api: 'anthropic' as const,
      usage: readAndWritten,
      details: readAndWrittenParts,
      event: readAndWrittenParts,
      // 1,000 × 3 + 6,000 × 0.3 + 3,000 × 3.75 + 500 × 15 micros (at the input price alone: 0.0375)
      cost: 0.02355,
    },
    // writes to the 1-hour cache (`ttl: "1h"`, decision 0113): Anthropic bills them at 2× input, not 1.25×
    {
      provider: 'Anthropic, 1-hour writes without their own price',
      model: 'cache/claude',
      api: 'anthropic' as const,
      ...withHourWrites(2_000),
      // 1,000 × 3 + 6,000 × 0.3 + 1,000 × 3.75 + 2,000 × (2 × 3) + 500 × 15 micros (all writes at 3.75: 0.02355)
      cost: 0.02805,
    },
    {
      provider: 'Anthropic, 1-hour writes at the catalogue price',
      model: 'cache/claude-1h',
      api: 'anthropic' as const,
      ...withHourWrites(3_000),
      // 1,000 × 3 + 6,000 × 0.3 + 3,000 × 6.6 + 500 × 15 micros
      cost: 0.0321,
    },
    // an OpenAI-protocol proxy in front of Claude (LiteLLM) reports the split as cache_creation_token_details
    {
      provider: "OpenAI-protocol, 1-hour writes reported in LiteLLM's shape",
      model: 'cache/gpt',
      api: 'openai' as const,
      ...withHourWrites(2_000),
      // 1,000 × 2 + 6,000 × 0.5 + 1,000 × 2.5 + 2,000 × (2 × 2) + 500 × 8 micros
      cost: 0.0195,
    },
  ];

  describe.each(cases)('$provider provider', (c) => {
    it.each([false, true])(
      'a chat with cached prompt tokens (stream: %s) is priced at the cache rates',
      async (stream) => {
        w.sim.script([
          {
            match: { api: c.api },
            reply: { usage: { ...c.usage, completion_tokens_details: { reasoning_tokens: 100 } } },
          },
        ]);
        const { slug, as, client } = await freshOrg();
        const { usage, requestId } = await chat(client, c.model, stream);
        const total = c.usage.prompt_tokens + c.usage.completion_tokens;
        // OpenAI's semantics: prompt_tokens is every input token, the cached ones a part of it
        expect(usage).toMatchObject({
          prompt_tokens: c.usage.prompt_tokens,
          completion_tokens: c.usage.completion_tokens,
          total_tokens: total,
          prompt_tokens_details: c.details,
        });
        if (c.api === 'openai') expect(usage.completion_tokens_details).toEqual({ reasoning_tokens: 100 });
        expect(usage.cost).toBeCloseTo(c.cost, 12);

        const event = await completions.of(requestId);
        expect(event.usage).toEqual({
          prompt_tokens: c.usage.prompt_tokens,
          completion_tokens: c.usage.completion_tokens,
          total_tokens: total,
          ...c.event,
        });
        expect(event.cost).toBeCloseTo(c.cost, 12);
        expect(event).toMatchObject({ stream, outcome: 'success', usageSource: 'provider' });

        // llm-quota counts the cached price against the month's cost, and every token against the token budget
        const report = await w.counted(slug, as, { requests: 1, cost: c.cost, tokens: total });
        expect(gauge(report, 'llm.monthly_cost').used).toBeCloseTo(c.cost, 9);
        expect(gauge(report, 'llm.monthly_tokens').used).toBe(total);
      },
    );
  });

  it('the catalogue API takes the cache prices, refuses a bad one, and the model it wrote is priced with them', async () => {
    const write = (method: string, urlPath: string, body: unknown) =>
      fetch(`${w.p.upstreams.llmGateway}${urlPath}`, {
        method,
        headers: { 'content-type': 'application/json', 'x-platform-internal-secret': INTERNAL_SECRET },
        body: JSON.stringify(body),
      });
    const entry = (pricing: Record<string, number>) =>
      modelEntry(
        'api/claude',
        'completion',
        { provider: 'claude', model: 'api-claude' },
        {
          input_per_million: 3,
          output_per_million: 15,
          ...pricing,
        },
      );
    const bad = await write('POST', '/v1/models', entry({ cached_input_per_million: -0.3 }));
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).toContain('pricing.cached_input_per_million');
    const made = await write('POST', '/v1/models', entry({ cached_input_per_million: 0.3 }));
    expect(made.status).toBe(201);
    const patched = await write('PATCH', '/v1/models/api/claude', {
      pricing: { cache_write_per_million: 4, cache_write_1h_per_million: 6.5 },
    });
    expect(patched.status).toBe(200);
    expect(((await patched.json()) as { pricing: unknown }).pricing).toEqual({
      input_per_million: 3,
      output_per_million: 15,
      cached_input_per_million: 0.3,
      cache_write_per_million: 4,
      cache_write_1h_per_million: 6.5,
    });

    w.sim.script([
      {
        match: { api: 'anthropic' },
        reply: {
          usage: {
            prompt_tokens: 10_000,
            completion_tokens: 0,
            cached_tokens: 6_000,
            cache_write_tokens: 3_000,
            cache_write_1h_tokens: 2_000,
          },
        },
      },
    ]);
    const { client } = await freshOrg();
    // the catalogue reloads on llm.catalogue.updated: the model is served once the snapshot has it
    const { usage } = await waitFor(() => chat(client, 'api/claude', false).catch(() => undefined), {
      what: 'api/claude served',
    });
    // 1,000 × 3 + 6,000 × 0.3 + 1,000 × 4 + 2,000 × 6.5 micros
    expect(usage.cost).toBeCloseTo(0.0218, 12);
  });

  it.each([
    ['sim/gpt', 'openai' as const, 10_000 * 2 + 1_000 * 8],
    ['sim/claude', 'anthropic' as const, 10_000 * 3 + 1_000 * 15],
  ])(
    'a model without cache prices (%s) prices cached tokens at the input price, exactly as before',
    async (model, api, micros) => {
      w.sim.script([
        {
          match: { api },
          reply: {
            usage: {
              prompt_tokens: 10_000,
              completion_tokens: 1_000,
              cached_tokens: 6_000,
              cache_write_tokens: 3_000,
            },
          },
        },
      ]);
      const { slug, as, client } = await freshOrg();
      for (const stream of [false, true]) {
        const { usage } = await chat(client, model, stream);
        expect(usage.cost).toBe(micros / 1_000_000);
      }
      const report = await w.counted(slug, as, { requests: 2, cost: (2 * micros) / 1_000_000 });
      expect(gauge(report, 'llm.monthly_cost').used).toBeCloseTo((2 * micros) / 1_000_000, 9);
    },
  );
});
