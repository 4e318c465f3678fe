import type { ChatCompletionRequest, ChatRequestMessage } from '../types';
import type { AnthropicBlock, AnthropicMessage, AnthropicThinking } from './anthropic-wire';
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
 * The conversation, as Anthropic will read it, is in a tool loop (its last user turn holds tool results, the user's
 * words after them included) whose assistant turn does not start with thinking: Anthropic refuses thinking there,
 * since the turn's thinking must come first and cannot be made up. Read on the translated turns, so that assistant
 * messages merged into one turn, and unsigned blocks left out, count as Anthropic counts them.
 */
function toolLoopWithoutThinking(turns: readonly AnthropicMessage[]): boolean {
  const last = turns[turns.length - 1];
  if (last?.role !== 'user' || !last.content.some((block) => block.type === 'tool_result')) return false;
  const first = turns[turns.length - 2]?.content[0]?.type;
  return first !== 'thinking' && first !== 'redacted_thinking';
}

/**
 * What the request asks that an Anthropic model cannot do while it thinks, or null: a temperature other than 1,
 * `top_p` below 0.95, a forced tool, or a `response_format` (0054 answers it through a forced tool).
 */
function conflictWithThinking(body: ChatCompletionRequest, json: boolean): string | null {
  if (typeof body.temperature === 'number' && body.temperature !== 1)
    return `an Anthropic model thinks only at temperature 1, not ${body.temperature}`;
  if (typeof body.top_p === 'number' && body.top_p < 0.95)
    return 'an Anthropic model thinks only with top_p of 0.95 or more';
  const choice = body.tool_choice;
  if (choice === 'required' || (typeof choice === 'object' && choice !== null))
    return 'an Anthropic model cannot think when tool_choice forces a tool';
  if (json) return 'an Anthropic model cannot think while answering in a response_format';
  return null;
}

/**
 * The thinking a chat request asks of an Anthropic model, and the `max_tokens` that leaves room for it.
 * - `thinking` (Anthropic's member, as LiteLLM takes it) is a demand: sent as it is, it wins over
 *   `reasoning_effort`, and what Anthropic refuses with it is refused by name.
 * - `reasoning_effort` is a preference, a budget: a token bound (`max_completion_tokens`, which in OpenAI's terms
 *   covers the reasoning too) holds the budget under it; none adds the budget to the default. Where the model cannot
 *   think as asked, the call is sent without thinking, as every call was before decision 0114: a bound of at most
 *   Anthropic's smallest budget, something Anthropic refuses with thinking (`conflictWithThinking`), or a tool loop
 *   whose turn carries no signed thinking (a client that dropped `thinking_blocks`, or a turn begun without it).
 * - A model the catalogue says does not reason (`capabilities.reasoning: false`) is sent neither.
 */
export function thinkingPlan(
  body: ChatCompletionRequest,
  bound: number | undefined,
  defaultMaxTokens: number,
  /**
   * `reasons`: the catalogue does not say the model cannot; `json`: the answer is asked in a response_format;
   * `turns`: the conversation as translated for Anthropic
   */
  model: { reasons: boolean; json: boolean; turns: readonly AnthropicMessage[] },
): ThinkingPlan {
  const none = { maxTokens: bound ?? defaultMaxTokens };
  if (isObject(body.thinking)) {
    const thinking = body.thinking as AnthropicThinking;
    if (!model.reasons) return none;
    if (thinking.type !== 'enabled') return { thinking, maxTokens: none.maxTokens };
    const conflict = conflictWithThinking(body, model.json);
    if (conflict) throw new UntranslatableRequest(`${conflict}: thinking cannot be enabled`);
    const budget = typeof thinking.budget_tokens === 'number' ? thinking.budget_tokens : 0;
    return { thinking, maxTokens: bound ?? defaultMaxTokens + budget };
  }
  if (body.thinking != null) throw new UntranslatableRequest('thinking must be an object');
  if (body.reasoning_effort == null) return none;
  const effort = String(body.reasoning_effort);
  if (!Object.hasOwn(BUDGET_BY_EFFORT, effort))
    throw new UntranslatableRequest(
      `reasoning_effort must be one of ${Object.keys(BUDGET_BY_EFFORT).join(', ')}, not '${effort}'`,
    );
  const budget = BUDGET_BY_EFFORT[effort]!;
  if (
    budget === null ||
    !model.reasons ||
    (bound !== undefined && bound <= MIN_BUDGET) ||
    conflictWithThinking(body, model.json) !== null ||
    toolLoopWithoutThinking(model.turns)
  )
    return none;
  return {
    thinking: { type: 'enabled', budget_tokens: bound === undefined ? budget : Math.min(budget, bound - 1) },
    maxTokens: bound ?? defaultMaxTokens + budget,
  };
}

/**
 * An assistant message's `thinking_blocks`, sent back as they came (their signatures are Anthropic's to check). An
 * unsigned thinking block is dropped: another model's thinking, which no Anthropic model could check (as
 * `/v1/messages` drops the gateway's own).
 */
export function thinkingBlocksOf(message: ChatRequestMessage): AnthropicBlock[] {
  const blocks = message.thinking_blocks;
  if (blocks == null) return [];
  if (!Array.isArray(blocks)) throw new UntranslatableRequest('thinking_blocks must be an array');
  return blocks.flatMap((block, i): AnthropicBlock[] => {
    if (isObject(block) && block.type === 'thinking' && typeof block.thinking === 'string')
      return typeof block.signature === 'string' && block.signature !== ''
        ? [{ type: 'thinking', thinking: block.thinking, signature: block.signature }]
        : [];
    if (isObject(block) && block.type === 'redacted_thinking' && typeof block.data === 'string')
      return [{ type: 'redacted_thinking', data: block.data }];
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
