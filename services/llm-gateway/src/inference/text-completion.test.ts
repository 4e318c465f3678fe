import { countTokens } from 'gpt-tokenizer';
import { countText, EXACT_COUNT_CHARS } from './prompt-tokens';
import { countTextPromptTokens, textAnswerText, textChunkText } from './text-completion';

describe('text completion token counting (decision 0115)', () => {
  const prompt = 'def fibonacci(n):\n    ';
  const suffix = '\n\nprint(fibonacci(10))';

  it('counts a string prompt and its suffix with the tokenizer', () => {
    expect(countTextPromptTokens({ prompt })).toBe(countTokens(prompt));
    expect(countTextPromptTokens({ prompt, suffix })).toBe(countTokens(prompt) + countTokens(suffix));
    expect(countTextPromptTokens({ prompt, suffix: null })).toBe(countTokens(prompt));
    expect(countTextPromptTokens({ prompt: '' })).toBe(0);
  });

  it('counts token ids by their length, and each prompt of a batch with the suffix once', () => {
    expect(countTextPromptTokens({ prompt: [101, 2023, 3] })).toBe(3);
    expect(countTextPromptTokens({ prompt: [101, 2023, 3], suffix })).toBe(3 + countTokens(suffix));
    expect(
      countTextPromptTokens({
        prompt: [
          [1, 2, 3],
          [4, 5],
        ],
      }),
    ).toBe(5);
    expect(countTextPromptTokens({ prompt: ['first', 'second one'], suffix })).toBe(
      countTokens('first') + countTokens('second one') + 2 * countTokens(suffix),
    );
  });

  it('bounds the exact count of a huge prompt, as chat does', () => {
    const huge = 'word '.repeat(EXACT_COUNT_CHARS);
    const counted = countTextPromptTokens({ prompt: huge });
    expect(counted).toBe(countText(huge));
    expect(counted).toBeGreaterThan(EXACT_COUNT_CHARS / 2);
  });

  it('reads every choice’s text of an answer, and of a chunk (one choice without copying)', () => {
    expect(
      textAnswerText({
        choices: [{ text: 'a', index: 0 }, { text: 'b', index: 1 }, { index: 2 }],
      }),
    ).toBe('ab');
    expect(textAnswerText({})).toBe('');
    const one = 'return fib(n - 1)';
    expect(textChunkText({ choices: [{ text: one, finish_reason: null }] })).toBe(one);
    expect(
      textChunkText({
        choices: [
          { text: 'x', finish_reason: null },
          { text: 'y', finish_reason: null },
        ],
      }),
    ).toBe('xy');
    expect(
      textChunkText({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }),
    ).toBe('');
    expect(textChunkText({ choices: [{ text: null, finish_reason: 'stop' }] })).toBe('');
  });
});
