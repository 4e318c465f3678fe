import { createHmac, randomBytes } from 'node:crypto';
import { SimulatedProviderError, sseEvent } from './answers';
import { countSimulatorTokens, streamPieces } from './content';

/**
 * Anthropic's extended thinking, simulated: the request's `thinking` member checked as the real API checks it, thinking
 * blocks sent back verified against the signatures this process made, and the answer's thinking block. A gateway that
 * drops, mangles or forges a signature, or leaves the thinking out of a tool loop, gets the 400 Anthropic would send.
 */

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function bad(message: string): never {
  throw new SimulatedProviderError(400, 'invalid_request_error', message);
}

// per process: a signature from another run (or another provider) is as foreign as a forged one
const SECRET = randomBytes(32);
const mac = (purpose: string, text: string) =>
  createHmac('sha256', SECRET).update(`${purpose}\n${text}`).digest('base64');

/** A thinking block's `signature`: base64 of HMAC-SHA256 over `thinking\n<text>` under the process's secret. */
export const thinkingSignature = (text: string) => mac('thinking', text);

/** A redacted block's `data`: base64 of the JSON `{text, mac}`, the mac over `redacted_thinking\n<text>`. */
export const redactedThinkingData = (text: string) =>
  Buffer.from(JSON.stringify({ text, mac: mac('redacted_thinking', text) })).toString('base64');

/** The hidden text of a redacted block this process made, or null for any other data. */
function redactedText(data: string): string | null {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(data, 'base64').toString('utf8'));
    if (!isObject(parsed) || typeof parsed.text !== 'string') return null;
    return parsed.mac === mac('redacted_thinking', parsed.text) ? parsed.text : null;
  } catch {
    return null;
  }
}

/** Whether the request turns thinking on; refuses a `thinking` member, or sampling settings, Anthropic refuses. */
export function thinkingEnabled(body: Json): boolean {
  const thinking = body.thinking;
  if (thinking === undefined) return false;
  if (!isObject(thinking) || (thinking.type !== 'enabled' && thinking.type !== 'disabled'))
    bad(
      `thinking: Input tag '${String(isObject(thinking) ? thinking.type : thinking)}' found using 'type' does not match any of the expected tags: 'disabled', 'enabled'`,
    );
  if (thinking.type === 'disabled') return false;
  const budget = thinking.budget_tokens;
  if (!Number.isInteger(budget) || (budget as number) < 1024)
    bad('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
  if ((body.max_tokens as number) <= (budget as number))
    bad('`max_tokens` must be greater than `thinking.budget_tokens`');
  if (body.temperature != null && body.temperature !== 1)
    bad('`temperature` may only be set to 1 when thinking is enabled');
  if (body.top_p != null && (body.top_p as number) < 0.95)
    bad('`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled');
  if (body.top_k != null) bad('`top_k` must be unset when thinking is enabled');
  const choice = body.tool_choice;
  if (isObject(choice) && (choice.type === 'any' || choice.type === 'tool'))
    bad('Thinking may not be enabled when tool_choice forces tool use.');
  return true;
}

/** Checks a thinking or redacted_thinking block of a message: an assistant turn's, signed by this process. */
export function checkThinkingBlock(block: Json, role: unknown, where: string): void {
  if (role !== 'assistant')
    bad(`${where}: \`${String(block.type)}\` blocks may only appear in assistant turns`);
  if (block.type === 'thinking') {
    if (typeof block.thinking !== 'string') bad(`${where}.thinking: Field required`);
    if (typeof block.signature !== 'string') bad(`${where}.signature: Field required`);
    if (block.signature !== thinkingSignature(block.thinking))
      bad(`${where}: Invalid \`signature\` in \`thinking\` block`);
    return;
  }
  if (typeof block.data !== 'string') bad(`${where}.data: Field required`);
  if (redactedText(block.data) === null) bad(`${where}: Invalid \`data\` in \`redacted_thinking\` block`);
}

/**
 * With thinking on, a tool loop (the last turn the user's tool results, the one before it the assistant's tool uses)
 * must carry the assistant's thinking back: its turn starts with a thinking block. Earlier turns need none.
 */
export function checkToolLoopThinking(messages: Json[]): void {
  const last = messages[messages.length - 1];
  const before = messages[messages.length - 2];
  const blocksOf = (m: Json | undefined): Json[] =>
    typeof m?.content === 'string'
      ? [{ type: 'text' }]
      : Array.isArray(m?.content)
        ? m.content.filter(isObject)
        : [];
  if (last?.role !== 'user' || !blocksOf(last).some((b) => b.type === 'tool_result')) return;
  if (before?.role !== 'assistant' || !blocksOf(before).some((b) => b.type === 'tool_use')) return;
  const first = String(blocksOf(before)[0]?.type);
  if (first === 'thinking' || first === 'redacted_thinking') return;
  bad(
    `messages.${messages.length - 2}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${first}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block.`,
  );
}

/** The answer's thinking: the block, the output tokens it bills, and its stream frames from `index`. */
export interface SimulatedThinking {
  block: Json;
  tokens: number;
  frames(index: number): string[];
}

/** What the simulated model thinks before answering: recognisable from the prompt, signed (or redacted). */
export function simulatedThinking(lastUserText: string, redacted: boolean): SimulatedThinking {
  const about = lastUserText.trim().slice(0, 60);
  const text = about ? `Let me think about "${about}".` : 'Let me think about the tool results.';
  const tokens = countSimulatorTokens(text);
  const start = (index: number, content_block: Json) =>
    sseEvent('content_block_start', { type: 'content_block_start', index, content_block });
  const delta = (index: number, d: Json) =>
    sseEvent('content_block_delta', { type: 'content_block_delta', index, delta: d });
  const stop = (index: number) => sseEvent('content_block_stop', { type: 'content_block_stop', index });
  if (redacted) {
    const block = { type: 'redacted_thinking', data: redactedThinkingData(text) };
    return { block, tokens, frames: (index) => [start(index, block), stop(index)] };
  }
  const signature = thinkingSignature(text);
  return {
    block: { type: 'thinking', thinking: text, signature },
    tokens,
    frames: (index) => [
      start(index, { type: 'thinking', thinking: '', signature: '' }),
      ...streamPieces(text).map((piece) => delta(index, { type: 'thinking_delta', thinking: piece })),
      delta(index, { type: 'signature_delta', signature }),
      stop(index),
    ],
  };
}
