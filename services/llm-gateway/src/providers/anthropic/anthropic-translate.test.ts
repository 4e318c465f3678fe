import type { ChatCompletionRequest } from '../types';
import { toAnthropicRequest, usageFromAnthropic } from './anthropic-translate';
import { UntranslatableRequest } from './untranslatable';

const ephemeral = { type: 'ephemeral' } as const;
const hour = { type: 'ephemeral', ttl: '1h' } as const;
const translate = (body: Omit<ChatCompletionRequest, 'model'>) =>
  toAnthropicRequest({ model: 'm', ...body } as ChatCompletionRequest, 'claude', false);

/** Chat's prompt-cache breakpoints (LiteLLM's convention) on the matching Anthropic blocks (decision 0113). */
describe('cache breakpoints in the Anthropic translation', () => {
  it('cuts the system prompt into blocks after each breakpoint, saying the same text', () => {
    const plain = translate({
      messages: [
        { role: 'system', content: 'You are a librarian.' },
        {
          role: 'developer',
          content: [
            { type: 'text', text: 'The handbook:' },
            { type: 'text', text: 'long' },
          ],
        },
        { role: 'system', content: 'Today is Friday.' },
        { role: 'user', content: 'Hi' },
      ],
    });
    expect(plain.system).toBe('You are a librarian.\n\nThe handbook:\nlong\n\nToday is Friday.');

    const cut = translate({
      messages: [
        { role: 'system', content: 'You are a librarian.', cache_control: hour },
        {
          role: 'developer',
          content: [
            { type: 'text', text: 'The handbook:' },
            { type: 'text', text: 'long', cache_control: ephemeral },
          ],
        },
        { role: 'system', content: 'Today is Friday.' },
        { role: 'user', content: 'Hi' },
      ],
    });
    expect(cut.system).toEqual([
      { type: 'text', text: 'You are a librarian.', cache_control: hour },
      { type: 'text', text: '\n\nThe handbook:\nlong', cache_control: ephemeral },
      { type: 'text', text: '\n\nToday is Friday.' },
    ]);
    expect((cut.system as Array<{ text: string }>).map((b) => b.text).join('')).toBe(plain.system);
  });

  it('marks user text and image blocks, a string message, tool results, assistant turns and tools', () => {
    const out = translate({
      messages: [
        { role: 'user', content: 'Find the weather', cache_control: ephemeral },
        {
          role: 'assistant',
          content: 'Looking.',
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{}' } }],
          cache_control: ephemeral,
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'Sunny', cache_control: ephemeral },
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' }, cache_control: ephemeral },
            { type: 'text', text: 'And this?' },
          ],
        },
      ],
      tools: [
        {
          type: 'function',
          function: { name: 'weather', parameters: { type: 'object' } },
          cache_control: null,
        },
      ],
    });
    expect(out.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Find the weather', cache_control: ephemeral }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Looking.' },
          // the message's breakpoint follows its last block
          { type: 'tool_use', id: 'call_1', name: 'weather', input: {}, cache_control: ephemeral },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: 'Sunny', cache_control: ephemeral },
          {
            type: 'image',
            source: { type: 'url', url: 'https://example.com/a.png' },
            cache_control: ephemeral,
          },
          { type: 'text', text: 'And this?' },
        ],
      },
    ]);
    expect(out.tools).toEqual([{ name: 'weather', input_schema: { type: 'object' } }]);
    expect(out.system).toBeUndefined();
  });

  it('puts a tool breakpoint on the tool, and one on an empty part on the block before it', () => {
    const out = translate({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Context' },
            { type: 'text', text: '', cache_control: ephemeral },
          ],
        },
      ],
      tools: [{ type: 'function', function: { name: 'f' }, cache_control: hour }],
    });
    expect(out.tools).toEqual([
      { name: 'f', input_schema: { type: 'object', properties: {} }, cache_control: hour },
    ]);
    expect(out.messages[0]!.content).toEqual([{ type: 'text', text: 'Context', cache_control: ephemeral }]);
  });

  it('refuses more than four, and an hour-long one after a 5-minute one, as Anthropic would', () => {
    const user = (n: number) => ({
      role: 'user' as const,
      content: Array.from({ length: n }, (_, i) => ({
        type: 'text',
        text: `t${i}`,
        cache_control: ephemeral,
      })),
    });
    expect(() => translate({ messages: [user(4)] })).not.toThrow();
    expect(() => translate({ messages: [user(5)] })).toThrow(UntranslatableRequest);
    expect(() =>
      translate({
        messages: [
          { role: 'system', content: 'S', cache_control: ephemeral },
          { ...user(1), cache_control: hour },
        ],
      }),
    ).toThrow(/ttl '1h' must come before/);
    // tools come first: an hour there and five minutes later is the order Anthropic wants
    expect(() =>
      translate({
        messages: [user(1)],
        tools: [{ type: 'function', function: { name: 'f' }, cache_control: hour }],
      }),
    ).not.toThrow();
  });

  it('sends nothing new for a request without breakpoints', () => {
    const out = translate({
      messages: [
        { role: 'system', content: 'S' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
      ],
    });
    expect(JSON.stringify(out)).not.toContain('cache_control');
    expect(out.system).toBe('S');
  });
});

describe("Anthropic's usage in OpenAI's terms", () => {
  it('counts a negative, fractional or non-number figure as whole tokens or none, never a negative cost', () => {
    expect(
      usageFromAnthropic({
        input_tokens: -1_000_000,
        output_tokens: 7.5,
        cache_read_input_tokens: Number.NaN,
        cache_creation_input_tokens: '12' as unknown as number,
      }),
    ).toEqual({ prompt_tokens: 0, completion_tokens: 7, total_tokens: 7 });
    expect(
      usageFromAnthropic({
        input_tokens: 10,
        output_tokens: 5,
        cache_creation: { ephemeral_5m_input_tokens: -3, ephemeral_1h_input_tokens: 4 },
      }),
    ).toEqual({
      prompt_tokens: 14,
      completion_tokens: 5,
      total_tokens: 19,
      prompt_tokens_details: {
        cached_tokens: 0,
        cache_write_tokens: 4,
        cache_creation_token_details: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 4 },
      },
    });
  });

  it('reads a null cache_creation_input_tokens as absent: the writes by TTL count, as before the figures were held', () => {
    expect(
      usageFromAnthropic({
        input_tokens: 10,
        output_tokens: 5,
        cache_creation_input_tokens: null as unknown as number,
        cache_creation: { ephemeral_5m_input_tokens: 2, ephemeral_1h_input_tokens: 4 },
      }),
    ).toEqual({
      prompt_tokens: 16,
      completion_tokens: 5,
      total_tokens: 21,
      prompt_tokens_details: {
        cached_tokens: 0,
        cache_write_tokens: 6,
        cache_creation_token_details: { ephemeral_5m_input_tokens: 2, ephemeral_1h_input_tokens: 4 },
      },
    });
  });
});
