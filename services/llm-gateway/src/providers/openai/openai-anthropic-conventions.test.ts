import type { ChatCompletionRequest } from '../types';
import { withoutCacheControl } from './openai-cache-control';

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
    expect(withoutCacheControl(body)).toBe(body);
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
    const out = withoutCacheControl(body);
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
});
