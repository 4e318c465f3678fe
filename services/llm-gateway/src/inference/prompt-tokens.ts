import { countTokens, setMergeCacheSize } from 'gpt-tokenizer';

// The library's merge cache (100,000 pieces) evicts with `Map.keys().next()` after deletions, which slows
// down as it evicts: text of novel words (random letters) counted 4 to 8 times slower with it, and it kept
// up to 100,000 of a caller's pieces alive. Common words are found without it, so it bought nothing here.
setMergeCacheSize(0);

/** "<|endoftext|>" in a caller's text is text to count, not an error (the library throws by default). */
const AS_PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * Byte-pair encoding is quadratic in the length of one pre-tokenized piece, and a run of letters without
 * a space (or of spaces, punctuation, CJK) is one piece: 200 KiB of "a" took 14 s of CPU. Runs longer than
 * this are counted in slices of this length (at most one token more per slice than one piece would give).
 */
export const MAX_RUN = 64;
const LONG_RUN = `\\S{${MAX_RUN + 1},}|\\s{${MAX_RUN + 1},}`;
const HAS_LONG_RUN = new RegExp(LONG_RUN);
const LONG_RUNS = new RegExp(LONG_RUN, 'g');

/**
 * Characters of one request counted exactly: at most about 100 ms of CPU (CJK, novel words), 2 ms for
 * English. Past them the count is an estimate at the rate measured on the exact part, at least
 * `MIN_TOKENS_PER_CHAR` (English's rate); homogeneous text comes out within 0.1 %. A 9 MiB body of
 * novel words cost 38 s of CPU before, one of 200 KiB without a space 14 s.
 */
export const EXACT_COUNT_CHARS = 128 * 1024;
const MIN_TOKENS_PER_CHAR = 0.25;

function countExactly(text: string): number {
  if (!HAS_LONG_RUN.test(text)) return countTokens(text, AS_PLAIN_TEXT);
  let total = 0;
  let from = 0;
  for (const run of text.matchAll(LONG_RUNS)) {
    if (run.index > from) total += countTokens(text.slice(from, run.index), AS_PLAIN_TEXT);
    for (let at = 0; at < run[0].length; at += MAX_RUN)
      total += countTokens(run[0].slice(at, at + MAX_RUN), AS_PLAIN_TEXT);
    from = run.index + run[0].length;
  }
  if (from < text.length) total += countTokens(text.slice(from), AS_PLAIN_TEXT);
  return total;
}

/** Counts the texts of one request: exactly up to `EXACT_COUNT_CHARS`, estimated past them. */
export class TokenCounter {
  private left: number;
  private exactChars = 0;
  private exactTokens = 0;

  constructor(exactChars = EXACT_COUNT_CHARS) {
    this.left = exactChars;
  }

  count(text: string): number {
    if (text.length === 0) return 0;
    const head = text.length <= this.left ? text : text.slice(0, this.left);
    const exact = head.length > 0 ? countExactly(head) : 0;
    this.left -= head.length;
    this.exactChars += head.length;
    this.exactTokens += exact;
    const rest = text.length - head.length;
    if (rest === 0) return exact;
    const rate = Math.max(MIN_TOKENS_PER_CHAR, this.exactChars > 0 ? this.exactTokens / this.exactChars : 0);
    return exact + Math.ceil(rest * rate);
  }
}

/** Every text a chat request carries: message contents (string or text parts), tool calls and tools. */
function textsOf(value: unknown, out: string[]): void {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) textsOf(v, out);
  else if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    // image/audio parts are priced by providers differently; their URLs/data are not text tokens
    if (o.type === 'image_url' || o.type === 'input_audio') return;
    // a thinking block's signature and a redacted one's data are opaque base64 (decision 0114): only its text is read
    if (o.type === 'redacted_thinking') return;
    if (o.type === 'thinking') textsOf(o.thinking, out);
    else for (const v of Object.values(o)) textsOf(v, out);
  }
}

/**
 * Prompt tokens counted before the provider is called (o200k_base via gpt-tokenizer, plus the
 * 3-token per-message overhead of OpenAI's chat format). An estimate for reservations: the provider's
 * reported usage replaces it once the answer is in.
 */
export function countChatPromptTokens(body: { messages: unknown[]; tools?: unknown }): number {
  const counter = new TokenCounter();
  let total = 3;
  for (const message of body.messages) {
    const texts: string[] = [];
    textsOf(message, texts);
    total += 3 + counter.count(texts.join('\n'));
  }
  if (body.tools !== undefined) total += counter.count(JSON.stringify(body.tools));
  return total;
}

export const countText = (text: string): number => (text.length === 0 ? 0 : new TokenCounter().count(text));

export function countInputTokens(input: unknown): number {
  const texts: string[] = [];
  textsOf(input, texts);
  const counter = new TokenCounter();
  return texts.reduce((n, t) => n + counter.count(t), 0);
}
