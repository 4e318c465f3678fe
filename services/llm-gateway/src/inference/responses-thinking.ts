/**
 * Claude's signed thinking carried through the Responses API (decision 0114): a chat answer's `thinking_blocks`
 * become the `reasoning` item's `encrypted_content`, and that content sent back becomes the `thinking_blocks` of the
 * assistant message the next items form, as OpenAI carries its own reasoning. The content is not secret (Anthropic's
 * signature is what protects it), only opaque: a versioned prefix, then the blocks as base64url JSON.
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What marks the gateway's own `encrypted_content`: anything else (OpenAI's, another gateway's) is not read. */
export const THINKING_PREFIX = 'gwtb1:';

/** The `include` value that asks for the reasoning to be carried (Codex CLI and the Agents SDK send it). */
export const ENCRYPTED_REASONING = 'reasoning.encrypted_content';

/** A thinking block as chat carries it: signed thinking, or redacted. */
export type ThinkingBlock =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string };

/** The block's own members, or null when it is not a block of either kind. */
function blockOf(value: unknown): ThinkingBlock | null {
  if (!isObject(value)) return null;
  if (value.type === 'thinking' && typeof value.thinking === 'string' && typeof value.signature === 'string')
    return { type: 'thinking', thinking: value.thinking, signature: value.signature };
  if (value.type === 'redacted_thinking' && typeof value.data === 'string')
    return { type: 'redacted_thinking', data: value.data };
  return null;
}

/** The blocks of a chat message's or stream delta's `thinking_blocks` (none when it holds none). */
export const thinkingBlocksIn = (value: unknown): ThinkingBlock[] =>
  Array.isArray(value) ? value.map(blockOf).filter((b) => b !== null) : [];

/** The blocks as a reasoning item's `encrypted_content`. */
export const encodeThinking = (blocks: readonly ThinkingBlock[]): string =>
  THINKING_PREFIX + Buffer.from(JSON.stringify(blocks)).toString('base64url');

/**
 * The blocks an `encrypted_content` carries: null when it is not the gateway's (absent, OpenAI's own), and a string
 * saying what is wrong when it has the prefix but not the blocks after it.
 */
export function decodeThinking(content: unknown): ThinkingBlock[] | null | { malformed: string } {
  if (typeof content !== 'string' || !content.startsWith(THINKING_PREFIX)) return null;
  const payload = content.slice(THINKING_PREFIX.length);
  let parsed: unknown;
  try {
    if (!/^[A-Za-z0-9_-]*$/.test(payload)) throw new Error('not base64url');
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return { malformed: `is not the gateway's thinking: '${THINKING_PREFIX}' and base64url JSON after it` };
  }
  if (!Array.isArray(parsed) || parsed.length === 0)
    return { malformed: `does not hold the gateway's thinking blocks: an array of at least one` };
  const blocks = parsed.map(blockOf);
  if (blocks.some((b) => b === null))
    return {
      malformed:
        "holds a block that is not {type: 'thinking', thinking, signature} or {type: 'redacted_thinking', data}",
    };
  return blocks as ThinkingBlock[];
}

/** Whether a request's `include` asks for the reasoning's `encrypted_content`. */
export const includesEncryptedReasoning = (include: unknown): boolean =>
  Array.isArray(include) && include.includes(ENCRYPTED_REASONING);
