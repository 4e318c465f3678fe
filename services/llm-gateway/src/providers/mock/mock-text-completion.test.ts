import { createProviderAdapter } from '..';
import type { ProviderCall, TextCompletionChunk } from '../types';

const mock = createProviderAdapter(
  { name: 'mock', type: 'mock' },
  { clock: { now: () => new Date('2026-01-02T03:04:05Z') } },
);
const call: ProviderCall = {
  model: 'mock-chat',
  headers: {},
  timeoutMs: 1000,
  signal: new AbortController().signal,
};

async function collect(stream: AsyncIterable<TextCompletionChunk>) {
  const chunks: TextCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe('the mock provider’s text completions (decision 0115)', () => {
  it('answers deterministically from the prompt’s last words, with usage that adds up', async () => {
    const body = { model: 'mock/chat', prompt: 'const total = items.reduce(', suffix: ');' };
    const a = await mock.completions!(body, call);
    expect(await mock.completions!(body, call)).toEqual(a);
    expect(a.body).toMatchObject({
      object: 'text_completion',
      model: 'mock-chat',
      created: Date.parse('2026-01-02T03:04:05Z') / 1000,
      choices: [
        {
          text: 'Mock completion of: const total = items.reduce(',
          index: 0,
          logprobs: null,
          finish_reason: 'stop',
        },
      ],
    });
    // the prompt 7 tokens and the suffix's 2; the answer 4 and the prompt's 7
    expect(a.usage).toEqual({ prompt_tokens: 9, completion_tokens: 11, total_tokens: 20 });
  });

  it('takes max_tokens, stop, echo, n, several prompts and token ids', async () => {
    const cut = await mock.completions!({ model: 'm', prompt: 'one two three', max_tokens: 3 }, call);
    expect(cut.body.choices[0]).toMatchObject({ text: 'Mock completion of', finish_reason: 'length' });
    const stopped = await mock.completions!({ model: 'm', prompt: 'x', stop: [' of'] }, call);
    expect(stopped.body.choices[0]!.text).toBe('Mock completion');
    const echoed = await mock.completions!({ model: 'm', prompt: 'hi ', echo: true }, call);
    expect(echoed.body.choices[0]!.text).toBe('hi Mock completion of: hi');
    expect(echoed.usage!.completion_tokens).toBe(5);
    const batch = await mock.completions!({ model: 'm', prompt: ['a', 'b c'], n: 2 }, call);
    expect(batch.body.choices.map((c) => [c.index, c.text])).toEqual([
      [0, 'Mock completion of: a'],
      [1, 'Mock completion of: a'],
      [2, 'Mock completion of: b c'],
      [3, 'Mock completion of: b c'],
    ]);
    expect(batch.usage!.prompt_tokens).toBe(1 + 2);
    const ids = await mock.completions!({ model: 'm', prompt: [[1, 2, 3], [4]] }, call);
    expect(ids.body.choices.map((c) => c.text)).toEqual([
      'Mock completion of: 3 tokens',
      'Mock completion of: 1 tokens',
    ]);
    expect(ids.usage!.prompt_tokens).toBe(4);
    const one = await mock.completions!({ model: 'm', prompt: [5, 6] }, call);
    expect([one.body.choices.length, one.usage!.prompt_tokens]).toEqual([1, 2]);
  });

  it('streams the same text, each choice ending with its finish, then a usage chunk', async () => {
    const body = { model: 'm', prompt: 'def main():\n    ', echo: true, n: 2 };
    const plain = await mock.completions!(body, call);
    const chunks = await collect(mock.completionsStream!(body, call));
    for (const index of [0, 1]) {
      const mine = chunks.filter((c) => c.choices[0]?.index === index);
      expect(mine.map((c) => c.choices[0]!.text).join('')).toBe(plain.body.choices[index]!.text);
      expect(mine.at(-1)!.choices[0]!.finish_reason).toBe('stop');
    }
    expect(chunks.at(-1)).toMatchObject({ object: 'text_completion', choices: [], usage: plain.usage });
  });
});
