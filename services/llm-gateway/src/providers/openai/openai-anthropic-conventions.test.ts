import type { ChatCompletionRequest } from '../types';
import { withoutAnthropicConventions } from './openai-anthropic-conventions';

/** OpenAI refuses members it does not know: chat's prompt-cache breakpoints never reach it (decision 0113). */
describe('breakpoints stripped for OpenAI-protocol providers', () => {
  it('returns a request without them as it is, not a copy', () => {
    const body: ChatCompletionRequest = {
      model: 'm',
      messages: [
        { role: 'system', content: 'S' },
        { role: 'user', content: [{ type: 'text', text: 'a' }] },
      ],
      tools: [{ type: 'function', function: { name: 'f' } }],
    };
    expect(withoutAnthropicConventions(body)).toBe(body);
  });

  it('drops them from tools, messages and parts, copying only what carried one', () => {
    const untouched = { role: 'user' as const, content: 'before' };
    const tool = { type: 'function', function: { name: 'g' } };
    const body: ChatCompletionRequest = {
      model: 'm',
      temperature: 0.2,
      messages: [
        untouched,
        { role: 'system', content: 'S', cache_control: { type: 'ephemeral' } },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'a', cache_control: { type: 'ephemeral', ttl: '1h' } },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c', content: 'r', cache_control: null },
      ],
      tools: [{ type: 'function', function: { name: 'f' }, cache_control: { type: 'ephemeral' } }, tool],
    };
    const copy = structuredClone(body);
    const out = withoutAnthropicConventions(body);
    expect(out).toEqual({
      model: 'm',
      temperature: 0.2,
      messages: [
        { role: 'user', content: 'before' },
        { role: 'system', content: 'S' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'a' },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c', content: 'r' },
      ],
      tools: [{ type: 'function', function: { name: 'f' } }, tool],
    });
    expect(JSON.stringify(out)).not.toContain('cache_control');
    expect(out.messages[0]).toBe(untouched);
    expect(out.tools![1]).toBe(tool);
    expect(body).toEqual(copy); // the caller's request is left as it was
  });

  it("drops extended thinking (the request's and the signed blocks sent back), keeping reasoning_content", () => {
    const plain = { role: 'user' as const, content: 'go on' };
    const body: ChatCompletionRequest = {
      model: 'm',
      thinking: { type: 'enabled', budget_tokens: 2048 },
      messages: [
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: 'hello',
          reasoning_content: 'I think',
          thinking_blocks: [{ type: 'thinking', thinking: 'I think', signature: 'c2ln' }],
          cache_control: { type: 'ephemeral' },
        },
        plain,
      ],
    };
    const out = withoutAnthropicConventions(body);
    expect(out).toEqual({
      model: 'm',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello', reasoning_content: 'I think' },
        { role: 'user', content: 'go on' },
      ],
    });
    expect(out.messages[2]).toBe(plain);
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(body.messages[1]!.thinking_blocks).toHaveLength(1);
  });
});
