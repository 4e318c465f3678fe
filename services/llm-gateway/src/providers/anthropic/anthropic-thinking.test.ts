import type { ChatCompletionRequest } from '../types';
import { fromAnthropicResponse, toAnthropicRequest } from './anthropic-translate';

const translate = (
  body: Omit<ChatCompletionRequest, 'model' | 'messages'> & Partial<ChatCompletionRequest>,
) =>
  toAnthropicRequest(
    { model: 'm', messages: [{ role: 'user', content: 'Why?' }], ...body } as ChatCompletionRequest,
    'claude',
    false,
  );

const signed = { type: 'thinking', thinking: 'Because.', signature: 'c2lnbmVk' };
const redacted = { type: 'redacted_thinking', data: 'cmVkYWN0ZWQ=' };

/** Extended thinking on Anthropic models behind chat completions (decision 0114). */
describe('thinking in the Anthropic translation', () => {
  it('turns reasoning_effort into a budget, room made for it above the default bound', () => {
    expect(translate({ reasoning_effort: 'low' })).toMatchObject({
      thinking: { type: 'enabled', budget_tokens: 1024 },
      max_tokens: 4096 + 1024,
    });
    expect(translate({ reasoning_effort: 'high' })).toMatchObject({
      thinking: { type: 'enabled', budget_tokens: 4096 },
      max_tokens: 4096 + 4096,
    });
    // a caller's bound covers the thinking too (OpenAI's max_completion_tokens does): the budget stays under it
    expect(translate({ reasoning_effort: 'high', max_completion_tokens: 3000 })).toMatchObject({
      thinking: { type: 'enabled', budget_tokens: 2999 },
      max_tokens: 3000,
    });
    const none = translate({ reasoning_effort: 'none' });
    expect(none).not.toHaveProperty('thinking');
    expect(none.max_tokens).toBe(4096);
    expect(translate({})).not.toHaveProperty('thinking');
  });

  it("sends Anthropic's own thinking member as it came, and it wins over reasoning_effort", () => {
    expect(
      translate({ thinking: { type: 'enabled', budget_tokens: 2000 }, reasoning_effort: 'high' }),
    ).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 2000 }, max_tokens: 4096 + 2000 });
    expect(translate({ thinking: { type: 'disabled' }, max_tokens: 50 })).toMatchObject({
      thinking: { type: 'disabled' },
      max_tokens: 50,
    });
  });

  it("refuses by name, with Anthropic's own thinking, what Anthropic refuses with it", () => {
    const thinking = { type: 'enabled', budget_tokens: 2000 };
    const tools = [{ type: 'function' as const, function: { name: 'f' } }];
    expect(() => translate({ reasoning_effort: 'extreme' })).toThrow(/reasoning_effort must be one of/);
    expect(() => translate({ thinking: 'on' })).toThrow(/thinking must be an object/);
    expect(() => translate({ thinking, temperature: 0.2 })).toThrow(/temperature 1, not 0.2/);
    expect(() => translate({ thinking, top_p: 0.5 })).toThrow(/top_p/);
    expect(() => translate({ thinking, tools, tool_choice: 'required' })).toThrow(/forces a tool/);
    expect(() => translate({ thinking, response_format: { type: 'json_object' } })).toThrow(
      /response_format/,
    );
    // temperature 1 is the one Anthropic takes with thinking
    expect(translate({ thinking, temperature: 1 }).thinking).toEqual(thinking);
  });

  it('sends reasoning_effort without thinking where the model cannot think as asked, as before 0114', () => {
    const tools = [{ type: 'function' as const, function: { name: 'f' } }];
    const extras: Array<Partial<ChatCompletionRequest>> = [
      { temperature: 0.2 },
      { top_p: 0.5 },
      { tools, tool_choice: 'required' },
      { response_format: { type: 'json_object' } },
      { max_completion_tokens: 1024 },
    ];
    for (const extra of extras) {
      const out = translate({ reasoning_effort: 'low', ...extra });
      expect(out).not.toHaveProperty('thinking');
      expect(out.max_tokens).toBe(extra.max_completion_tokens ?? 4096);
    }
  });

  it('asks no thinking of a model the catalogue says does not reason', () => {
    const old = (body: Partial<ChatCompletionRequest>) =>
      toAnthropicRequest(
        { model: 'm', messages: [{ role: 'user', content: 'Why?' }], ...body } as ChatCompletionRequest,
        'claude-3-haiku',
        false,
        false,
      );
    expect(old({ reasoning_effort: 'high' })).not.toHaveProperty('thinking');
    expect(old({ thinking: { type: 'enabled', budget_tokens: 2000 }, max_tokens: 300 })).toEqual(
      expect.not.objectContaining({ thinking: expect.anything() }),
    );
    expect(old({ thinking: { type: 'enabled', budget_tokens: 2000 }, max_tokens: 300 }).max_tokens).toBe(300);
  });

  it("puts an assistant message's thinking_blocks first, signatures untouched", () => {
    const out = translate({
      messages: [
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: null,
          reasoning_content: 'Because.',
          thinking_blocks: [signed, redacted],
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'w', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      ],
      reasoning_effort: 'low',
    });
    expect(out.messages[1]!.content).toEqual([
      signed,
      redacted,
      { type: 'tool_use', id: 'call_1', name: 'w', input: {} },
    ]);
    expect(out.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect(() =>
      translate({ messages: [{ role: 'assistant', content: 'x', thinking_blocks: [{ type: 'thought' }] }] }),
    ).toThrow(/thinking_blocks\[0\]/);
    // unsigned: another model's thinking, which no Anthropic model could check
    const unsigned = translate({
      messages: [
        { role: 'user', content: 'Hi' },
        {
          role: 'assistant',
          content: 'Hello',
          thinking_blocks: [{ type: 'thinking', thinking: 'x', signature: '' }],
        },
        { role: 'user', content: 'Again' },
      ],
    });
    expect(unsigned.messages[1]!.content).toEqual([{ type: 'text', text: 'Hello' }]);
  });

  it('sends a tool loop whose turn carries no signed thinking without thinking, as Anthropic requires', () => {
    const out = translate({
      messages: [
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'w', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      ],
      reasoning_effort: 'medium',
    });
    expect(out).not.toHaveProperty('thinking');
    expect(out.max_tokens).toBe(4096);
    // unsigned blocks are not sent, so they are none
    const unsigned = translate({
      messages: [
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: null,
          thinking_blocks: [{ type: 'thinking', thinking: 'x', signature: '' }],
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'w', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      ],
      reasoning_effort: 'medium',
    });
    expect(unsigned).not.toHaveProperty('thinking');
  });

  it('reads assistant messages in a row as the one turn Anthropic makes of them, which must start with the thinking', () => {
    const call = (id: string) => ({
      id,
      type: 'function' as const,
      function: { name: 'w', arguments: '{}' },
    });
    const loop = (first: object, second: object) =>
      translate({
        messages: [
          { role: 'user', content: 'Weather in Oslo and Rome?' },
          { role: 'assistant', content: null, ...first, tool_calls: [call('call_1')] },
          { role: 'assistant', content: 'And Rome.', ...second, tool_calls: [call('call_2')] },
          { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
          { role: 'tool', tool_call_id: 'call_2', content: 'rain' },
        ],
        reasoning_effort: 'medium',
      });
    const thinks = loop({ thinking_blocks: [signed] }, {});
    expect(thinks).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 2048 } });
    expect(thinks.messages[1]!.content[0]).toEqual(signed);
    // the merged turn would start with a tool call: Anthropic refuses thinking there
    expect(loop({}, { thinking_blocks: [signed] })).not.toHaveProperty('thinking');
  });

  it('counts the user speaking after the tool results as the same tool loop (one user turn at Anthropic)', () => {
    const loop = [
      { role: 'user' as const, content: 'Weather?' },
      {
        role: 'assistant' as const,
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function' as const, function: { name: 'w', arguments: '{}' } }],
      },
      { role: 'tool' as const, tool_call_id: 'call_1', content: 'sunny' },
      { role: 'user' as const, content: 'And tomorrow?' },
    ];
    const out = translate({ messages: loop, reasoning_effort: 'medium' });
    expect(out.messages.at(-1)!.content.map((b) => b.type)).toEqual(['tool_result', 'text']);
    expect(out).not.toHaveProperty('thinking');
    // a tool loop that ended earlier is no loop: the model thinks about the user's new words
    const answered = [...loop.slice(0, 3), { role: 'assistant' as const, content: 'Sunny.' }, loop[3]!];
    expect(translate({ messages: answered, reasoning_effort: 'medium' }).thinking).toEqual({
      type: 'enabled',
      budget_tokens: 2048,
    });
  });

  it("answers the model's thinking as reasoning_content and its signed blocks as thinking_blocks", () => {
    const completion = fromAnthropicResponse(
      {
        id: 'msg_1',
        type: 'message',
        model: 'claude',
        content: [signed, redacted, { type: 'text', text: 'Yes.' }],
        stop_reason: 'end_turn',
        usage: { input_tokens: 5, output_tokens: 9 },
      },
      0,
    );
    expect(completion.choices[0]!.message).toEqual({
      role: 'assistant',
      content: 'Yes.',
      refusal: null,
      reasoning_content: 'Because.',
      thinking_blocks: [signed, redacted],
    });
    const plain = fromAnthropicResponse(
      {
        id: 'msg_2',
        type: 'message',
        model: 'claude',
        content: [{ type: 'text', text: 'Yes.' }],
        stop_reason: 'end_turn',
        usage: {},
      },
      0,
    );
    expect(plain.choices[0]!.message).toEqual({ role: 'assistant', content: 'Yes.', refusal: null });
  });
});
