import type { ChatCompletionRequest, ChatRequestMessage } from '../types';
import type { AnthropicBlock, AnthropicThinking } from './anthropic-wire';
import { UntranslatableRequest } from './untranslatable';

/**
 * Extended thinking on Anthropic models behind chat completions (decision 0114), in LiteLLM's conventions: the
 * request's `reasoning_effort` (OpenAI's) or `thinking` (Anthropic's own) turns it on; the answer's thinking is the
 * message's `reasoning_content` and, signed, its `thinking_blocks`, which a client sends back on the assistant
 * message so that the model can go on thinking through a tool loop.
 */

/** Anthropic's smallest thinking budget. */
const MIN_BUDGET = 1024;

/** `reasoning_effort` as a thinking budget (LiteLLM's figures; `xhigh` doubles `high`); `none` is no thinking. */
const BUDGET_BY_EFFORT: Record<string, number | null> = {
  none: null,
  minimal: MIN_BUDGET,
  low: MIN_BUDGET,
  medium: 2048,
  high: 4096,
  xhigh: 8192,
};

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What the request's thinking does to the Anthropic request: its `thinking` member, and the `max_tokens` to send. */
export interface ThinkingPlan {
  thinking?: AnthropicThinking;
  maxTokens: number;
}

/**
 * The last assistant message is a tool loop's (the conversation ends with its tools' results, the user's words after
 * them included: Anthropic's last user turn holds both) and carries no signed thinking: Anthropic refuses thinking
 * there, since the turn's thinking must come first and cannot be made up.
 */
function toolLoopWithoutThinking(messages: readonly ChatRequestMessage[]): boolean {
  let toolResults = false;
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role === 'tool') toolResults = true;
    if (message.role !== 'assistant') continue;
    return toolResults && (!Array.isArray(message.thinking_blocks) || message.thinking_blocks.length === 0);
  }
  return false;
}

/**
 * The thinking a chat request asks of an Anthropic model, and the `max_tokens` that leaves room for it.
 * - `thinking` (Anthropic's member, as LiteLLM takes it) is sent as it is, and wins over `reasoning_effort`.
 * - `reasoning_effort` is a budget: a token bound (`max_completion_tokens`, which in OpenAI's terms covers the
 *   reasoning too) above Anthropic's smallest budget holds the budget under it; none adds the budget to the default.
 *   In a tool loop whose turn carries no signed thinking (a client that dropped `thinking_blocks`, or a turn begun
 *   without thinking) the call is sent without it, as Anthropic requires, instead of failing.
 * - Thinking rules out what Anthropic refuses with it: a temperature other than 1, `top_p` below 0.95, a forced tool.
 */
export function thinkingPlan(
  body: ChatCompletionRequest,
  bound: number | undefined,
  defaultMaxTokens: number,
): ThinkingPlan {
  let thinking: AnthropicThinking | undefined;
  if (isObject(body.thinking)) thinking = body.thinking as AnthropicThinking;
  else if (body.thinking != null) throw new UntranslatableRequest('thinking must be an object');
  else if (body.reasoning_effort != null) {
    const effort = String(body.reasoning_effort);
    if (!Object.hasOwn(BUDGET_BY_EFFORT, effort))
      throw new UntranslatableRequest(
        `reasoning_effort must be one of ${Object.keys(BUDGET_BY_EFFORT).join(', ')}, not '${effort}'`,
      );
    const budget = BUDGET_BY_EFFORT[effort]!;
    if (budget === null || toolLoopWithoutThinking(body.messages))
      return { maxTokens: bound ?? defaultMaxTokens };
    if (bound !== undefined && bound <= MIN_BUDGET)
      throw new UntranslatableRequest(
        `reasoning on an Anthropic model needs a token bound above its smallest thinking budget (${MIN_BUDGET}): max_completion_tokens is ${bound}`,
      );
    thinking = { type: 'enabled', budget_tokens: bound === undefined ? budget : Math.min(budget, bound - 1) };
    return checked(body, thinking, bound ?? defaultMaxTokens + budget);
  }
  if (thinking === undefined || thinking.type !== 'enabled')
    return { thinking, maxTokens: bound ?? defaultMaxTokens };
  const budget = typeof thinking.budget_tokens === 'number' ? thinking.budget_tokens : 0;
  return checked(body, thinking, bound ?? defaultMaxTokens + budget);
}

function checked(body: ChatCompletionRequest, thinking: AnthropicThinking, maxTokens: number): ThinkingPlan {
  if (typeof body.temperature === 'number' && body.temperature !== 1)
    throw new UntranslatableRequest(
      `an Anthropic model thinks only at temperature 1: temperature cannot be ${body.temperature} with reasoning`,
    );
  if (typeof body.top_p === 'number' && body.top_p < 0.95)
    throw new UntranslatableRequest('an Anthropic model thinks only with top_p of 0.95 or more');
  const choice = body.tool_choice;
  if (choice === 'required' || (typeof choice === 'object' && choice !== null))
    throw new UntranslatableRequest('an Anthropic model cannot think when tool_choice forces a tool');
  return { thinking, maxTokens };
}

/** An assistant message's `thinking_blocks`, sent back as they came (their signatures are Anthropic's to check). */
export function thinkingBlocksOf(message: ChatRequestMessage): AnthropicBlock[] {
  const blocks = message.thinking_blocks;
  if (blocks == null) return [];
  if (!Array.isArray(blocks)) throw new UntranslatableRequest('thinking_blocks must be an array');
  return blocks.map((block, i) => {
    if (isObject(block) && block.type === 'thinking' && typeof block.thinking === 'string')
      return { type: 'thinking', thinking: block.thinking, signature: String(block.signature ?? '') };
    if (isObject(block) && block.type === 'redacted_thinking' && typeof block.data === 'string')
      return { type: 'redacted_thinking', data: block.data };
    throw new UntranslatableRequest(
      `thinking_blocks[${i}] must be {type: 'thinking', thinking, signature} or {type: 'redacted_thinking', data}`,
    );
  });
}

/** A chat message's share of an answer's thinking blocks: their text and the blocks themselves (none: nothing). */
export function chatThinkingOf(content: readonly AnthropicBlock[]): Json {
  const blocks = content.filter((b) => b.type === 'thinking' || b.type === 'redacted_thinking') as Json[];
  if (blocks.length === 0) return {};
  const text = blocks
    .filter((b) => b.type === 'thinking')
    .map((b) => String(b.thinking ?? ''))
    .join('\n\n');
  return {
    ...(text !== '' ? { reasoning_content: text } : {}),
    thinking_blocks: blocks.map((b) =>
      b.type === 'thinking'
        ? { type: 'thinking', thinking: String(b.thinking ?? ''), signature: String(b.signature ?? '') }
        : { type: 'redacted_thinking', data: String(b.data ?? '') },
    ),
  };
}
