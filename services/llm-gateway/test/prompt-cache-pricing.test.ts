import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { LlmCompletionEvent } from '@platform/contracts';
import { tempDir } from '@platform/testkit';
import { costMicros, eventUsage } from '../src/accounting/cost';
import { ModelEntrySchema } from '../src/catalogue/model-entry';
import { readGatewayFile } from '../src/gateway-file';
import type { Usage } from '../src/inference/provider-port';

/** Prompt-cache pricing (decision 0107): the arithmetic, the catalogue's prices and the event's fields. */
describe('prompt-cache pricing', () => {
  const usage = (prompt: number, completion: number, details?: Usage['prompt_tokens_details']): Usage => ({
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    ...(details ? { prompt_tokens_details: details } : {}),
  });

  it('prices cache reads and writes at their own rates, the rest of the prompt at the input rate', () => {
    const pricing = {
      input_per_million: 3,
      output_per_million: 15,
      cached_input_per_million: 0.3,
      cache_write_per_million: 3.75,
    };
    // 1,000 uncached, 6,000 read, 3,000 written, 500 out: 3,000 + 1,800 + 11,250 + 7,500 micros
    expect(costMicros(usage(10_000, 500, { cached_tokens: 6_000, cache_write_tokens: 3_000 }), pricing)).toBe(
      23_550,
    );
    // OpenAI reports reads alone
    expect(costMicros(usage(10_000, 0, { cached_tokens: 8_000, audio_tokens: 0 }), pricing)).toBe(
      2_000 * 3 + 8_000 * 0.3,
    );
  });

  it('prices a cache read or write without its own price at the input rate', () => {
    const details = { cached_tokens: 6_000, cache_write_tokens: 3_000 };
    const base = { input_per_million: 3, output_per_million: 15 };
    expect(costMicros(usage(10_000, 500, details), { ...base, cached_input_per_million: 0.3 })).toBe(
      4_000 * 3 + 6_000 * 0.3 + 500 * 15,
    );
    expect(costMicros(usage(10_000, 500, details), { ...base, cache_write_per_million: 6 })).toBe(
      7_000 * 3 + 3_000 * 6 + 500 * 15,
    );
  });

  describe('writes to the 1-hour cache (decision 0113)', () => {
    const hourly = (hour: number) => ({
      cached_tokens: 6_000,
      cache_write_tokens: 3_000,
      cache_creation_token_details: {
        ephemeral_5m_input_tokens: 3_000 - hour,
        ephemeral_1h_input_tokens: hour,
      },
    });
    const claude = {
      input_per_million: 3,
      output_per_million: 15,
      cached_input_per_million: 0.3,
      cache_write_per_million: 3.75,
    };

    it("are priced at the catalogue's cache_write_1h_per_million, the 5-minute ones at the write price", () => {
      // 1,000 × 3 + 6,000 × 0.3 + 1,000 × 3.75 + 2,000 × 6.6 + 500 × 15 micros
      expect(
        costMicros(usage(10_000, 500, hourly(2_000)), { ...claude, cache_write_1h_per_million: 6.6 }),
      ).toBe(3_000 + 1_800 + 3_750 + 13_200 + 7_500);
    });

    it('without their own price, at twice the input price (Anthropic’s rule), never below the write price', () => {
      expect(costMicros(usage(10_000, 500, hourly(2_000)), claude)).toBe(
        3_000 + 1_800 + 3_750 + 12_000 + 7_500,
      );
      // no cache price at all: the 5-minute writes at the input price as before, the hour's still at twice it
      const bare = { input_per_million: 3, output_per_million: 15 };
      expect(costMicros(usage(10_000, 500, hourly(2_000)), bare)).toBe(8_000 * 3 + 2_000 * 6 + 500 * 15);
      // a write price above twice the input (a provider's own): the hour's is not cheaper
      expect(
        costMicros(
          usage(3_000, 0, {
            cache_write_tokens: 3_000,
            cache_creation_token_details: { ephemeral_1h_input_tokens: 3_000 },
          }),
          { ...bare, cache_write_per_million: 7 },
        ),
      ).toBe(3_000 * 7);
    });

    it('are held to the writes, and a split that is no count is none', () => {
      const details = {
        cache_write_tokens: 1_000,
        cache_creation_token_details: { ephemeral_1h_input_tokens: 5_000 },
      };
      expect(costMicros(usage(1_000, 0, details), claude)).toBe(1_000 * 6);
      for (const bad of [-5, Number.NaN, '200'])
        expect(
          costMicros(
            usage(1_000, 0, {
              cache_write_tokens: 1_000,
              cache_creation_token_details: { ephemeral_1h_input_tokens: bad as number },
            }),
            claude,
          ),
        ).toBe(3_750);
    });

    it('the usage event counts them among the cache writes, as the contract has it', () => {
      expect(eventUsage(usage(10_000, 500, hourly(2_000)))).toEqual({
        prompt_tokens: 10_000,
        completion_tokens: 500,
        total_tokens: 10_500,
        cached_tokens: 6_000,
        cache_write_tokens: 3_000,
      });
    });
  });

  it('a catalogue without cache prices prices every usage exactly as before them', () => {
    const before = (u: Usage, p: { input_per_million: number; output_per_million: number }) =>
      Math.round(u.prompt_tokens * p.input_per_million + u.completion_tokens * p.output_per_million);
    let seed = 7;
    const next = () => {
      seed = (seed * 48_271) % 2_147_483_647;
      return seed / 2_147_483_647;
    };
    for (let i = 0; i < 2_000; i += 1) {
      const prompt = Math.floor(next() * 200_000);
      const cached = Math.floor(next() * prompt);
      const u = usage(prompt, Math.floor(next() * 20_000), {
        cached_tokens: cached,
        cache_write_tokens: Math.floor(next() * (prompt - cached)),
      });
      const pricing = { input_per_million: Math.round(next() * 3000) / 100, output_per_million: next() * 60 };
      expect(costMicros(u, pricing)).toBe(before(u, pricing));
    }
  });

  it('holds a report claiming more cached tokens than the prompt to the prompt', () => {
    const pricing = { input_per_million: 10, output_per_million: 0, cached_input_per_million: 1 };
    expect(costMicros(usage(100, 0, { cached_tokens: 500 }), pricing)).toBe(100);
    expect(
      costMicros(usage(100, 0, { cached_tokens: 60, cache_write_tokens: 90 }), {
        ...pricing,
        cache_write_per_million: 2,
      }),
    ).toBe(60 * 1 + 40 * 2);
    // figures that are not counts are no split at all
    expect(costMicros(usage(100, 0, { cached_tokens: -5, cache_write_tokens: Number.NaN }), pricing)).toBe(
      1_000,
    );
  });

  it("the usage event carries the prompt's cached and cache-written tokens, and only when there are some", () => {
    expect(eventUsage(usage(10_000, 500, { cached_tokens: 6_000, cache_write_tokens: 3_000 }))).toEqual({
      prompt_tokens: 10_000,
      completion_tokens: 500,
      total_tokens: 10_500,
      cached_tokens: 6_000,
      cache_write_tokens: 3_000,
    });
    expect(eventUsage(usage(10, 5, { cached_tokens: 0, audio_tokens: 0 }))).toEqual({
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
    });
  });

  it('the event contract (version 1) takes the new usage fields, and events without them as before', () => {
    const event = {
      id: 'evt-1',
      version: 1,
      occurredAt: '2026-11-27T10:00:00.000Z',
      orgSlug: 'acme',
      model: 'claude',
      provider: 'anthropic',
      usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
      cost: 0.001,
    };
    expect(LlmCompletionEvent.parse(event).usage).toEqual(event.usage);
    const cached = { ...event, usage: { ...event.usage, cached_tokens: 60, cache_write_tokens: 30 } };
    expect(LlmCompletionEvent.parse(cached).usage).toEqual(cached.usage);
    const negative = { ...event, usage: { ...event.usage, cached_tokens: -1 } };
    expect(LlmCompletionEvent.safeParse(negative).success).toBe(false);
  });

  describe('the catalogue entry (file and API share the schema)', () => {
    const entry = (pricing: Record<string, unknown>) => ({
      model_id: 'claude/sonnet',
      type: 'completion',
      provider_config: { provider: 'claude', model: 'claude-sonnet' },
      pricing,
    });

    it('takes the cache prices beside the input and output prices, and leaves them absent when not given', () => {
      const priced = ModelEntrySchema.parse(
        entry({
          input_per_million: 3,
          output_per_million: 15,
          cached_input_per_million: 0.3,
          cache_write_per_million: 3.75,
          cache_write_1h_per_million: 6,
        }),
      );
      expect(priced.pricing).toEqual({
        input_per_million: 3,
        output_per_million: 15,
        cached_input_per_million: 0.3,
        cache_write_per_million: 3.75,
        cache_write_1h_per_million: 6,
      });
      const plain = ModelEntrySchema.parse(entry({ input_per_million: 3, output_per_million: 15 }));
      expect(plain.pricing).toEqual({ input_per_million: 3, output_per_million: 15 });
    });

    it('refuses a cache price that is negative or not a number, naming it', () => {
      for (const bad of [-0.1, '0.3', null, Number.POSITIVE_INFINITY]) {
        for (const key of [
          'cached_input_per_million',
          'cache_write_per_million',
          'cache_write_1h_per_million',
        ]) {
          const parsed = ModelEntrySchema.safeParse(
            entry({ input_per_million: 3, output_per_million: 15, [key]: bad }),
          );
          expect(parsed.success).toBe(false);
          expect(parsed.error?.issues.map((i) => i.path.join('.'))).toEqual([`pricing.${key}`]);
        }
      }
    });

    it('the gateway file takes them, and stops the start on a bad one', () => {
      const dir = tempDir('cache-prices-');
      try {
        const file = (pricing: Record<string, unknown>) => {
          const name = path.join(dir.dir, 'gateway.json');
          writeFileSync(
            name,
            JSON.stringify({
              providers: [{ name: 'claude', type: 'anthropic', baseUrl: 'https://api.anthropic.com' }],
              models: [entry(pricing)],
            }),
          );
          return name;
        };
        const read = readGatewayFile(
          file({ input_per_million: 3, output_per_million: 15, cached_input_per_million: 0.3 }),
        );
        expect(read.models[0]!.pricing).toMatchObject({ cached_input_per_million: 0.3 });
        expect(() =>
          readGatewayFile(
            file({ input_per_million: 3, output_per_million: 15, cache_write_per_million: -1 }),
          ),
        ).toThrow(/cache_write_per_million/);
      } finally {
        dir.remove();
      }
    });
  });
});
