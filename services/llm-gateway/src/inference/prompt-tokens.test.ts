import { randomBytes } from 'node:crypto';
import { countTokens } from 'gpt-tokenizer';
import {
  countChatPromptTokens,
  countInputTokens,
  countText,
  EXACT_COUNT_CHARS,
  MAX_RUN,
} from './prompt-tokens';

// What the library is handed, to check how much work one request can ask of it.
const handed: string[] = [];
jest.mock('gpt-tokenizer', () => {
  const real = jest.requireActual('gpt-tokenizer');
  return {
    ...real,
    countTokens: (text: string, options?: unknown) => {
      handed.push(text);
      return real.countTokens(text, options);
    },
  };
});

const longestRun = (text: string) => Math.max(0, ...(text.match(/\S+|\s+/g) ?? []).map((run) => run.length));

describe('prompt token counting', () => {
  beforeEach(() => {
    handed.length = 0;
  });

  it('counts a special token written in a message as text instead of failing the request', () => {
    const body = { messages: [{ role: 'user', content: 'what does <|endoftext|> mean? <|im_start|>' }] };
    expect(countChatPromptTokens(body)).toBeGreaterThan(10);
    expect(countText('a provider wrote <|endoftext|>')).toBeGreaterThan(3);
  });

  it('never hands the tokenizer a run without a space longer than MAX_RUN (its cost is quadratic in one)', () => {
    const body = {
      messages: [
        { role: 'user', content: 'a'.repeat(200 * 1024) },
        { role: 'user', content: `${' '.repeat(5_000)}${'中'.repeat(5_000)}${'='.repeat(5_000)}` },
      ],
    };
    const tokens = countChatPromptTokens(body);
    expect(tokens).toBeGreaterThan(25_000);
    expect(Math.max(...handed.map(longestRun))).toBeLessThanOrEqual(MAX_RUN);
  });

  it('counts at most EXACT_COUNT_CHARS of one request exactly and estimates the rest at the measured rate', () => {
    const sentence = 'The quick brown fox, jumping over lazy dogs; see https://example.com/a?b=1 and 12345. ';
    const text = sentence.repeat(Math.ceil((4 * 1024 * 1024) / sentence.length));
    const exact = countTokens(text);
    handed.length = 0;
    const counted = countChatPromptTokens({
      messages: [
        { role: 'user', content: text },
        { role: 'user', content: text },
      ],
    });
    expect(handed.reduce((n, t) => n + t.length, 0)).toBeLessThanOrEqual(EXACT_COUNT_CHARS);
    expect(Math.abs(counted - 2 * exact) / (2 * exact)).toBeLessThan(0.01);
  });

  it("counts an earlier turn's thinking by its text, not its signature or a redacted block's data", () => {
    // a Claude model's signature (and a redacted block) is opaque base64, often longer than the thinking it signs
    const opaque = randomBytes(3_000).toString('base64');
    const turn = (blocks: unknown[]) => ({
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: 'Sunny.', thinking_blocks: blocks },
        { role: 'user', content: 'Thanks' },
      ],
    });
    const bare = countChatPromptTokens(turn([{ type: 'thinking', thinking: 'Look it up.', signature: '' }]));
    expect(
      countChatPromptTokens(
        turn([
          { type: 'thinking', thinking: 'Look it up.', signature: opaque },
          { type: 'redacted_thinking', data: opaque },
        ]),
      ),
    ).toBe(bare);
  });

  it('shares the exact budget between the inputs of one embeddings request', () => {
    const inputs = Array.from(
      { length: 100 },
      (_, i) => `${i} ${'lorem ipsum dolor sit amet '.repeat(2_000)}`,
    );
    expect(countInputTokens(inputs)).toBeGreaterThan(100 * 10_000);
    expect(handed.reduce((n, t) => n + t.length, 0)).toBeLessThanOrEqual(EXACT_COUNT_CHARS);
  });
});
