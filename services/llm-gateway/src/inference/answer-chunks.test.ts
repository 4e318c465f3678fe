import { chatChunksOf, textChunksOf } from './answer-chunks';

describe('a whole answer told as its stream (a deployment called without streaming)', () => {
  const head = { id: 'chatcmpl-1', created: 1, model: 'm', system_fingerprint: 'fp' };

  it('gives each choice its message (tool calls indexed), then its finish, then the usage', () => {
    const chunks = chatChunksOf({
      ...head,
      object: 'chat.completion',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' },
        {
          index: 1,
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: {
        prompt_tokens: 3,
        completion_tokens: 2,
        total_tokens: 5,
        prompt_tokens_details: { cached_tokens: 1 },
      },
    });
    expect(chunks.map((c) => c.choices)).toEqual([
      [{ index: 0, delta: { role: 'assistant', content: 'Hi' }, logprobs: null, finish_reason: null }],
      [
        {
          index: 1,
          delta: {
            role: 'assistant',
            content: null,
            tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
          logprobs: null,
          finish_reason: null,
        },
      ],
      [{ index: 0, delta: {}, finish_reason: 'stop' }],
      [{ index: 1, delta: {}, finish_reason: 'tool_calls' }],
      [],
    ]);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.system_fingerprint === 'fp')).toBe(
      true,
    );
    expect(chunks.at(-1)!.usage).toEqual({
      prompt_tokens: 3,
      completion_tokens: 2,
      total_tokens: 5,
      prompt_tokens_details: { cached_tokens: 1 },
    });
  });

  it('ends without a usage chunk when the provider reported none (the tokenizer counts then)', () => {
    const chunks = chatChunksOf({
      ...head,
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: null }],
    });
    expect(chunks).toHaveLength(2);
    expect(chunks.at(-1)!.choices).toEqual([{ index: 0, delta: {}, finish_reason: 'stop' }]);
    expect(chunks.some((c) => 'usage' in c)).toBe(false);
  });

  it('tells a text completion as its chunks, text and finish together', () => {
    const chunks = textChunksOf({
      ...head,
      object: 'text_completion',
      choices: [{ index: 0, text: 'return a + b', logprobs: null, finish_reason: 'length' }],
      usage: { prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 },
    });
    expect(chunks).toEqual([
      {
        id: 'chatcmpl-1',
        object: 'text_completion',
        created: 1,
        model: 'm',
        system_fingerprint: 'fp',
        choices: [{ index: 0, text: 'return a + b', logprobs: null, finish_reason: 'length' }],
      },
      {
        id: 'chatcmpl-1',
        object: 'text_completion',
        created: 1,
        model: 'm',
        system_fingerprint: 'fp',
        choices: [],
        usage: { prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 },
      },
    ]);
  });
});
