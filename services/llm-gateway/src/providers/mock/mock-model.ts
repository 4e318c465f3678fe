import { createHash } from 'node:crypto';
import {
  type ChatCompletionRequest,
  type ChatContentPart,
  type ChatMessage,
  type FinishReason,
  isFunction,
  type TextCompletionRequest,
} from '../types';

/**
 * What the built-in mock model "thinks": deterministic functions of the request, so users' CI and
 * load tests get stable answers and usage figures. A token is a run of word characters or one other
 * non-space character, close enough to real tokenizers for realistic figures.
 */
export function mockTokens(text: string): number {
  return text.match(/\w+|[^\w\s]/g)?.length ?? 0;
}

/** One token each, with the spaces before it: the stream's pieces. */
export function tokenPieces(text: string): string[] {
  return text.match(/\s*(?:\w+|[^\w\s])/g) ?? [];
}

export const hashOf = (value: unknown) =>
  createHash('sha256')
    .update(typeof value === 'string' ? value : JSON.stringify(value))
    .digest();

export function contentText(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter(
      (p): p is Extract<ChatContentPart, { type: 'text' }> => p.type === 'text' && typeof p.text === 'string',
    )
    .map((p) => p.text)
    .join(' ');
}

const IMAGE_TOKENS = 85;
const MESSAGE_OVERHEAD = 3;

export function mockPromptTokens(body: ChatCompletionRequest): number {
  let total = MESSAGE_OVERHEAD;
  for (const m of body.messages) {
    const images = Array.isArray(m.content) ? m.content.filter((p) => p.type === 'image_url').length : 0;
    const calls = (m.tool_calls ?? [])
      .map((c) => (isFunction(c) ? `${c.function.name} ${c.function.arguments}` : JSON.stringify(c)))
      .join(' ');
    total +=
      MESSAGE_OVERHEAD + mockTokens(contentText(m.content)) + images * IMAGE_TOKENS + mockTokens(calls);
  }
  if (body.tools?.length) total += mockTokens(JSON.stringify(body.tools));
  return total;
}

/** how much of the last user message, and how many tools, the mock reads to find a tool named in it */
const MENTION_SEARCH_CHARS = 64 * 1024;
const MENTION_SEARCH_TOOLS = 128;

export interface MockTurn {
  text: string | null;
  toolCall: { name: string; arguments: string } | null;
  finish: FinishReason;
  completionTokens: number;
}

function argumentsFor(schema: unknown): Record<string, unknown> {
  const props =
    (schema as { properties?: Record<string, { type?: string; enum?: unknown[] }> })?.properties ?? {};
  const out: Record<string, unknown> = {};
  for (const [name, p] of Object.entries(props)) {
    if (Array.isArray(p?.enum) && p.enum.length > 0) out[name] = p.enum[0];
    else if (p?.type === 'number' || p?.type === 'integer') out[name] = 1;
    else if (p?.type === 'boolean') out[name] = true;
    else if (p?.type === 'array') out[name] = [];
    else if (p?.type === 'object') out[name] = {};
    else out[name] = `example ${name}`;
  }
  return out;
}

/**
 * The answer in the format the request asks for, so that code parsing JSON answers runs against the mock:
 * `json_object` wraps the sentence (`{"answer": ...}`); `json_schema` gives one plausible value per property of
 * the schema, as tool arguments do.
 */
function inResponseFormat(sentence: string, format: ChatCompletionRequest['response_format']): string {
  if (format?.type === 'json_object') return JSON.stringify({ answer: sentence });
  if (format?.type === 'json_schema') {
    const schema = (format.json_schema as { schema?: unknown } | undefined)?.schema;
    return JSON.stringify(argumentsFor(schema));
  }
  return sentence;
}

/**
 * What the mock thinks before it answers, when the request asks it to reason (`reasoning_effort` other than `none`,
 * or Anthropic's `thinking` enabled), as a reasoning model behind an OpenAI-compatible server says it
 * (`reasoning_content`, no signature): null otherwise. Deterministic, like the answer.
 */
export function mockReasoning(body: ChatCompletionRequest): string | null {
  const effort = body.reasoning_effort;
  const thinking = body.thinking as { type?: unknown } | null | undefined;
  const asked = (typeof effort === 'string' && effort !== 'none') || thinking?.type === 'enabled';
  if (!asked) return null;
  const last = body.messages[body.messages.length - 1];
  if (last?.role === 'tool') return 'Mock reasoning: the tool has answered; say what it found.';
  const lastUser = [...body.messages].reverse().find((m) => m.role === 'user');
  const words = contentText(lastUser?.content).trim().split(/\s+/).filter(Boolean).slice(0, 12).join(' ');
  return `Mock reasoning about: ${words}`;
}

/**
 * The mock calls a tool when tools are offered, the user spoke last, and either `tool_choice` demands
 * one or the user's words name a tool (or say "tool"); otherwise it answers from the prompt.
 */
export function mockTurn(body: ChatCompletionRequest): MockTurn {
  const last = body.messages[body.messages.length - 1];
  const lastUser = [...body.messages].reverse().find((m) => m.role === 'user');
  const userText = contentText(lastUser?.content);
  const tools = (body.tools ?? []).filter(isFunction);
  const choice = body.tool_choice;
  if (tools.length > 0 && choice !== 'none' && last?.role === 'user') {
    const chosen = typeof choice === 'object' && isFunction(choice) ? choice.function.name : undefined;
    const named = chosen === undefined ? undefined : tools.find((t) => t.function.name === chosen);
    // a substring search of the user's words per tool: bounded like OpenAI's own limits (128 tools), so
    // 150,000 tools and a long message cannot keep the gateway's process busy for minutes
    const said = userText.slice(0, MENTION_SEARCH_CHARS).toLowerCase();
    const mentioned = tools
      .slice(0, MENTION_SEARCH_TOOLS)
      .find((t) => said.includes(t.function.name.toLowerCase()));
    const tool =
      named ?? mentioned ?? (choice === 'required' || /\btools?\b/i.test(said) ? tools[0] : undefined);
    if (tool) {
      const args = JSON.stringify(argumentsFor(tool.function.parameters));
      return {
        text: null,
        toolCall: { name: tool.function.name, arguments: args },
        finish: 'tool_calls',
        completionTokens: mockTokens(`${tool.function.name} ${args}`),
      };
    }
  }
  const words = userText.trim().split(/\s+/).filter(Boolean).slice(0, 24).join(' ');
  const sentence =
    last?.role === 'tool'
      ? `Mock answer from the tool result: ${contentText(last.content)}`
      : `Mock answer to: ${words}`;
  const full = inResponseFormat(sentence, body.response_format);
  const limit = body.max_completion_tokens ?? body.max_tokens ?? undefined;
  const pieces = tokenPieces(full);
  const kept =
    typeof limit === 'number' && limit >= 0 && pieces.length > limit ? pieces.slice(0, limit) : pieces;
  return {
    text: kept.join(''),
    toolCall: null,
    finish: kept.length < pieces.length ? 'length' : 'stop',
    completionTokens: kept.length,
  };
}

/** One choice of a mock text completion: the text (the prompt first under `echo`) and what it cost. */
export interface MockTextChoice {
  text: string;
  finish: FinishReason;
  completionTokens: number;
}

/** The text before the first of the stop sequences it holds (the whole text when none). */
function beforeStop(text: string, stop: TextCompletionRequest['stop']): string {
  let end = text.length;
  for (const sequence of typeof stop === 'string' ? [stop] : (stop ?? [])) {
    const at = sequence === '' ? -1 : text.indexOf(sequence);
    if (at !== -1 && at < end) end = at;
  }
  return text.slice(0, end);
}

/**
 * A legacy text completion (decision 0115): per prompt (a string, or token ids the mock reads as their count) and
 * per `n`, "Mock completion of: " and the prompt's last words, cut at `stop` and `max_tokens`; the prompt first
 * under `echo`. The prompt tokens are each prompt's and the `suffix`'s, once per prompt.
 */
export function mockTextCompletion(body: TextCompletionRequest): {
  promptTokens: number;
  choices: MockTextChoice[];
} {
  const raw = body.prompt;
  const prompts: Array<string | number[]> =
    typeof raw === 'string' || typeof raw[0] === 'number' ? [raw as string | number[]] : (raw as string[]);
  const suffix = typeof body.suffix === 'string' ? mockTokens(body.suffix) : 0;
  const n = body.n ?? 1;
  const limit = body.max_tokens ?? undefined;
  let promptTokens = 0;
  const choices: MockTextChoice[] = [];
  for (const prompt of prompts) {
    promptTokens += (typeof prompt === 'string' ? mockTokens(prompt) : prompt.length) + suffix;
    const words =
      typeof prompt === 'string'
        ? prompt.trim().split(/\s+/).filter(Boolean).slice(-12).join(' ')
        : `${prompt.length} tokens`;
    const pieces = tokenPieces(beforeStop(`Mock completion of: ${words}`, body.stop));
    const kept = typeof limit === 'number' && pieces.length > limit ? pieces.slice(0, limit) : pieces;
    const text = (body.echo && typeof prompt === 'string' ? prompt : '') + kept.join('');
    for (let i = 0; i < n; i++)
      choices.push({
        text,
        finish: kept.length < pieces.length ? 'length' : 'stop',
        completionTokens: kept.length,
      });
  }
  return { promptTokens, choices };
}

/**
 * A unit vector derived from the input alone: 4 bytes a value of one extendable-output hash (SHAKE256) of it. One
 * pass over the input: hashing all of it again for each 8 values held the gateway's event loop for seconds with
 * long inputs at 3072 dimensions.
 */
export function mockEmbedding(input: unknown, dimensions: number): number[] {
  const bytes = createHash('shake256', { outputLength: dimensions * 4 })
    .update(typeof input === 'string' ? input : JSON.stringify(input))
    .digest();
  const values = Array.from({ length: dimensions }, (_, i) => bytes.readUInt32BE(i * 4) / 0xffffffff - 0.5);
  const norm = Math.sqrt(values.reduce((s, v) => s + v * v, 0)) || 1;
  return values.map((v) => v / norm);
}

const wordsOf = (text: string) => new Set(text.toLowerCase().match(/\w+/g) ?? []);

/** Share of the query's distinct words present in the document. */
export function lexicalScore(query: string, document: string): number {
  const wanted = wordsOf(query);
  if (wanted.size === 0) return 0;
  const present = wordsOf(document);
  let hits = 0;
  for (const w of wanted) if (present.has(w)) hits += 1;
  return hits / wanted.size;
}
