import { openaiErrorBody, type SimulatedAnswer, SimulatedProviderError, sseData } from './answers';
import { argumentPieces, decideTurn } from './chat-script';
import {
  countSimulatorTokens,
  embeddingToBase64,
  lexicalRelevance,
  SIMULATOR_IMAGE_TOKENS,
  SIMULATOR_MESSAGE_OVERHEAD,
  simulatedEmbedding,
  streamPieces,
} from './content';
import type { SimulatedPromptCache } from './prompt-cache';
import type { SimulatorRule } from './script';

export interface ExchangeContext {
  rule: SimulatorRule;
  /** unix seconds */
  created: number;
  /** a per-simulator request number, for ids */
  seq: number;
  defaultEmbeddingDimensions: number;
  /** Anthropic's prompt cache, per simulator (absent: no request reads or writes one) */
  promptCache?: SimulatedPromptCache;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function bad(message: string): never {
  throw new SimulatedProviderError(400, 'invalid_request_error', message);
}

function messageText(content: unknown): { text: string; images: number } {
  if (typeof content === 'string') return { text: content, images: 0 };
  if (!Array.isArray(content)) return { text: '', images: 0 };
  let text = '';
  let images = 0;
  for (const part of content) {
    if (!isObject(part)) continue;
    if (part.type === 'text' && typeof part.text === 'string') text += (text ? ' ' : '') + part.text;
    if (part.type === 'image_url') images += 1;
  }
  return { text, images };
}

/** The simulator's prompt-token count of an OpenAI chat request (see `countSimulatorTokens`). */
export function openaiPromptTokens(body: { messages: unknown[]; tools?: unknown[] }): number {
  let total = SIMULATOR_MESSAGE_OVERHEAD;
  for (const message of body.messages) {
    if (!isObject(message)) continue;
    const { text, images } = messageText(message.content);
    total += SIMULATOR_MESSAGE_OVERHEAD + countSimulatorTokens(text) + images * SIMULATOR_IMAGE_TOKENS;
    for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
      const fn = isObject(call) && isObject(call.function) ? call.function : {};
      total += countSimulatorTokens(`${fn.name ?? ''} ${fn.arguments ?? ''}`);
    }
  }
  if (Array.isArray(body.tools) && body.tools.length > 0)
    total += countSimulatorTokens(JSON.stringify(body.tools));
  return total;
}

/** OpenAI refuses members it does not know, such as Anthropic's prompt-cache breakpoints. */
function refuseCacheControl(body: Json): void {
  const unknown = (where: string) => bad(`Unknown parameter: '${where}.cache_control'.`);
  (body.messages as unknown[]).forEach((m, i) => {
    if (!isObject(m)) return;
    if (m.cache_control !== undefined) unknown(`messages[${i}]`);
    if (Array.isArray(m.content))
      m.content.forEach((part, j) => {
        if (isObject(part) && part.cache_control !== undefined) unknown(`messages[${i}].content[${j}]`);
      });
  });
  (Array.isArray(body.tools) ? body.tools : []).forEach((tool, i) => {
    if (isObject(tool) && tool.cache_control !== undefined) unknown(`tools[${i}]`);
  });
}

export function openaiChat(body: Json, ctx: ExchangeContext): SimulatedAnswer {
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) bad("'messages' must be a non-empty array");
  if (typeof body.model !== 'string' || !body.model) bad("'model' is required");
  for (const m of messages) {
    if (!isObject(m) || !['system', 'developer', 'user', 'assistant', 'tool'].includes(String(m.role)))
      bad('each message needs a valid role');
  }
  refuseCacheControl(body);
  const tools = (Array.isArray(body.tools) ? body.tools : [])
    .filter(isObject)
    .map((t) => (isObject(t.function) ? t.function : {}))
    .map((fn) => ({ name: String(fn.name ?? ''), parameters: fn.parameters }));
  const choice = body.tool_choice;
  const toolChoice =
    typeof choice === 'string'
      ? choice
      : isObject(choice) && isObject(choice.function)
        ? String(choice.function.name)
        : 'auto';
  const last = messages[messages.length - 1] as Json;
  const lastUser = [...messages].reverse().find((m) => (m as Json).role === 'user') as Json | undefined;
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  const turn = decideTurn(
    {
      lastUserText: messageText(lastUser?.content).text,
      userSpokeLast: last.role === 'user',
      tools,
      toolChoice,
      maxTokens: typeof maxTokens === 'number' ? maxTokens : undefined,
      stop: typeof body.stop === 'string' ? [body.stop] : Array.isArray(body.stop) ? body.stop : undefined,
    },
    ctx.rule,
  );
  const promptTokens = ctx.rule.reply?.usage?.prompt_tokens ?? openaiPromptTokens(body as never);
  const scripted = ctx.rule.reply?.usage ?? {};
  const { completion_tokens_details } = scripted;
  const prompt_tokens_details =
    scripted.cached_tokens !== undefined || scripted.cache_write_tokens !== undefined
      ? {
          ...scripted.prompt_tokens_details,
          cached_tokens: scripted.cached_tokens ?? 0,
          ...(scripted.cache_write_tokens !== undefined
            ? { cache_write_tokens: scripted.cache_write_tokens }
            : {}),
          ...(scripted.cache_write_1h_tokens !== undefined
            ? {
                cache_creation_token_details: {
                  ephemeral_5m_input_tokens:
                    (scripted.cache_write_tokens ?? 0) - scripted.cache_write_1h_tokens,
                  ephemeral_1h_input_tokens: scripted.cache_write_1h_tokens,
                },
              }
            : {}),
        }
      : scripted.prompt_tokens_details;
  // Mistral's reasoning models: content as an array of parts, the thinking first (billed as completion tokens)
  const parts = ctx.rule.reply?.contentParts;
  const thinking = parts?.thinking ?? '';
  const reasoning = ctx.rule.reply?.reasoningContent ?? '';
  const completionTokens =
    turn.completionTokens +
    (scripted.completion_tokens === undefined
      ? countSimulatorTokens(thinking) + countSimulatorTokens(reasoning)
      : 0);
  const usage = {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    ...(prompt_tokens_details ? { prompt_tokens_details } : {}),
    ...(completion_tokens_details ? { completion_tokens_details } : {}),
  };
  const id = `chatcmpl-sim${ctx.seq}`;
  const toolCalls = turn.toolCalls.map((call, i) => ({
    id: `call_sim${ctx.seq}_${i}`,
    type: 'function',
    function: { name: call.name, arguments: call.arguments },
  }));
  const head = { id, created: ctx.created, model: body.model, system_fingerprint: 'fp_simulator' };
  const thought = (text: string) => ({ type: 'thinking', thinking: [{ type: 'text', text }] });
  const textPart = (text: string) => ({ type: 'text', text });
  const contentParts = [
    ...(thinking ? [thought(thinking)] : []),
    ...(turn.text ? [textPart(turn.text)] : []),
  ];

  if (body.stream !== true) {
    return {
      kind: 'json',
      body: {
        ...head,
        object: 'chat.completion',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content:
                parts && contentParts.length > 0
                  ? contentParts
                  : turn.text || (toolCalls.length > 0 ? null : ''),
              refusal: null,
              ...(reasoning ? { reasoning_content: reasoning } : {}),
              ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
            },
            logprobs: null,
            finish_reason: turn.finish,
          },
        ],
        ...(ctx.rule.reply?.omitUsage ? {} : { usage }),
      },
    };
  }

  const usageOnLastChunk = ctx.rule.reply?.usageOnLastChunk === true;
  const includeUsage =
    isObject(body.stream_options) &&
    body.stream_options.include_usage === true &&
    !ctx.rule.reply?.omitStreamUsage &&
    !usageOnLastChunk;
  const asyncFilter = ctx.rule.reply?.asyncContentFilter === true;
  const chunk = (delta: Json, finish: string | null, reported: Json | null = null) =>
    sseData({
      ...head,
      object: 'chat.completion.chunk',
      choices: [
        {
          index: 0,
          delta,
          logprobs: null,
          finish_reason: finish,
          ...(asyncFilter ? { content_filter_results: {} } : {}),
        },
      ],
      ...(includeUsage || reported ? { usage: reported } : {}),
    });
  const frames = [chunk({ role: 'assistant', content: '', refusal: null }, null)];
  for (const piece of streamPieces(reasoning)) frames.push(chunk({ reasoning_content: piece }, null));
  if (parts) {
    for (const piece of streamPieces(thinking)) frames.push(chunk({ content: [thought(piece)] }, null));
    for (const piece of streamPieces(turn.text)) frames.push(chunk({ content: [textPart(piece)] }, null));
  } else for (const piece of streamPieces(turn.text)) frames.push(chunk({ content: piece }, null));
  toolCalls.forEach((call, index) => {
    frames.push(
      chunk(
        {
          tool_calls: [
            { index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } },
          ],
        },
        null,
      ),
    );
    for (const piece of argumentPieces(call.function.arguments))
      frames.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }, null));
  });
  frames.push(chunk({}, turn.finish, usageOnLastChunk ? usage : null));
  if (includeUsage) frames.push(sseData({ ...head, object: 'chat.completion.chunk', choices: [], usage }));
  if (ctx.rule.reply?.contentFilterAfterUsage) frames[frames.length - 1] += lastFilterAnnotation(turn.text);
  if (asyncFilter) frames.push(lastFilterAnnotation(turn.text));
  const after = ctx.rule.reply?.contentAfterUsage;
  if (after) frames[frames.length - 1] += chunk({ content: after }, null);
  frames.push('data: [DONE]\n\n');
  return {
    kind: 'sse',
    frames,
    errorFrame: (type, message) => sseData(openaiErrorBody(type, message, null)),
  };
}

/** Azure's asynchronous content filter's verdict on the end of a text: nothing filtered, the text checked through. */
function lastFilterAnnotation(text: string): string {
  const safe = { filtered: false, severity: 'safe' };
  return sseData({
    choices: [
      {
        content_filter_offsets: { check_offset: text.length, start_offset: 0, end_offset: text.length },
        content_filter_results: { hate: safe, self_harm: safe, sexual: safe, violence: safe },
        finish_reason: null,
        index: 0,
      },
    ],
    created: 0,
    id: '',
    model: '',
    object: '',
  });
}

/** A text completion's prompts: a string, strings, token ids or token-id arrays (undefined when none of these). */
function textPrompts(prompt: unknown): Array<string | number[]> | undefined {
  if (typeof prompt === 'string') return [prompt];
  return embeddingInputs(prompt);
}

/**
 * The simulator's prompt-token count of an OpenAI text completion request: each prompt's tokens (a token-id prompt
 * one per id) and the `suffix`'s once per prompt.
 */
export function openaiTextPromptTokens(body: { prompt?: unknown; suffix?: unknown }): number {
  const suffix = typeof body.suffix === 'string' ? countSimulatorTokens(body.suffix) : 0;
  return (textPrompts(body.prompt) ?? []).reduce<number>(
    (sum, p) => sum + (typeof p === 'string' ? countSimulatorTokens(p) : p.length) + suffix,
    0,
  );
}

/**
 * OpenAI's legacy text completions (`/v1/completions`): per prompt and per `n` a choice answering the prompt's text
 * (the scripted reply when given), cut at `stop` and `max_tokens`, the prompt first under `echo`; streamed, one
 * `text_completion` chunk per token, the finish, then the usage chunk when `stream_options.include_usage`.
 */
export function openaiCompletions(body: Json, ctx: ExchangeContext): SimulatedAnswer {
  const prompts = textPrompts(body.prompt);
  if (!prompts)
    bad(
      "'prompt' must be a string, an array of strings, an array of token ids or an array of token-id arrays",
    );
  if (typeof body.model !== 'string' || !body.model) bad("'model' is required");
  if (body.suffix !== undefined && body.suffix !== null && typeof body.suffix !== 'string')
    bad("'suffix' must be a string");
  const n = typeof body.n === 'number' ? body.n : 1;
  const stop = typeof body.stop === 'string' ? [body.stop] : Array.isArray(body.stop) ? body.stop : undefined;
  const choices = prompts.flatMap((prompt) => {
    const said = typeof prompt === 'string' ? prompt : `${prompt.length} tokens`;
    const turn = decideTurn(
      {
        lastUserText: said,
        userSpokeLast: true,
        tools: [],
        toolChoice: 'none',
        maxTokens: typeof body.max_tokens === 'number' ? body.max_tokens : undefined,
        stop,
      },
      ctx.rule,
    );
    const text = (body.echo === true && typeof prompt === 'string' ? prompt : '') + turn.text;
    return Array.from({ length: n }, () => ({ text, finish: turn.finish, tokens: turn.completionTokens }));
  });
  const promptTokens = ctx.rule.reply?.usage?.prompt_tokens ?? openaiTextPromptTokens(body);
  const completionTokens = choices.reduce((sum, c) => sum + c.tokens, 0);
  const usage = {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
  };
  const head = {
    id: `cmpl-sim${ctx.seq}`,
    object: 'text_completion',
    created: ctx.created,
    model: body.model,
  };

  if (body.stream !== true) {
    return {
      kind: 'json',
      body: {
        ...head,
        choices: choices.map((c, index) => ({
          text: c.text,
          index,
          logprobs: null,
          finish_reason: c.finish,
        })),
        ...(ctx.rule.reply?.omitUsage ? {} : { usage }),
      },
    };
  }
  const includeUsage =
    isObject(body.stream_options) &&
    body.stream_options.include_usage === true &&
    !ctx.rule.reply?.omitStreamUsage;
  const continuous = ctx.rule.reply?.continuousUsage === true;
  const chunk = (index: number, text: string, finish: string | null, tokens: number) =>
    sseData({
      ...head,
      choices: [{ text, index, logprobs: null, finish_reason: finish }],
      ...(continuous
        ? {
            usage: {
              prompt_tokens: promptTokens,
              completion_tokens: tokens,
              total_tokens: promptTokens + tokens,
            },
          }
        : includeUsage
          ? { usage: null }
          : {}),
    });
  const frames: string[] = [];
  choices.forEach((c, index) => {
    let sent = '';
    const pieces = streamPieces(c.text);
    // vLLM's last token comes with the finish: a choice of one token is one chunk
    const last = continuous ? (pieces.pop() ?? '') : '';
    for (const piece of pieces) {
      sent += piece;
      frames.push(chunk(index, piece, null, countSimulatorTokens(sent)));
    }
    frames.push(chunk(index, last, c.finish, c.tokens));
  });
  const cached = continuous ? ctx.rule.reply?.continuousUsageCachedTokens : undefined;
  const reported =
    cached === undefined ? usage : { ...usage, prompt_tokens_details: { cached_tokens: cached } };
  if (includeUsage) frames.push(sseData({ ...head, choices: [], usage: reported }));
  frames.push('data: [DONE]\n\n');
  return {
    kind: 'sse',
    frames,
    errorFrame: (type, message) => sseData(openaiErrorBody(type, message, null)),
  };
}

const isTokenArray = (v: unknown): v is number[] =>
  Array.isArray(v) && v.length > 0 && v.every((t) => Number.isInteger(t) && (t as number) >= 0);

/**
 * OpenAI's embedding inputs: a string, an array of strings, an array of token ids, or an array of such arrays
 * (a token array counts one token per id and is embedded from its ids).
 */
function embeddingInputs(input: unknown): Array<string | number[]> | undefined {
  if (typeof input === 'string') return [input];
  if (isTokenArray(input)) return [input];
  if (!Array.isArray(input) || input.length === 0) return undefined;
  if (input.every((t) => typeof t === 'string')) return input as string[];
  if (input.every(isTokenArray)) return input as number[][];
  return undefined;
}

export function openaiEmbeddings(body: Json, ctx: ExchangeContext): SimulatedAnswer {
  const texts = embeddingInputs(body.input);
  if (!texts)
    bad(
      "'input' must be a string, a non-empty array of strings, an array of token ids or an array of token-id arrays",
    );
  if (
    body.dimensions !== undefined &&
    (!Number.isInteger(body.dimensions) || (body.dimensions as number) < 1)
  )
    bad("'dimensions' must be a positive integer");
  const dimensions =
    (body.dimensions as number | undefined) ?? ctx.rule.embeddingDimensions ?? ctx.defaultEmbeddingDimensions;
  const base64 = body.encoding_format === 'base64';
  const promptTokens = texts.reduce(
    (sum, t) => sum + (typeof t === 'string' ? countSimulatorTokens(t) : t.length),
    0,
  );
  return {
    kind: 'json',
    body: {
      object: 'list',
      model: body.model,
      data: texts.map((text, index) => {
        const vector = simulatedEmbedding(typeof text === 'string' ? text : JSON.stringify(text), dimensions);
        return { object: 'embedding', index, embedding: base64 ? embeddingToBase64(vector) : vector };
      }),
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    },
  };
}

/** Cohere / Jina / vLLM `/rerank` shape. */
export function openaiRerank(body: Json, ctx: ExchangeContext): SimulatedAnswer {
  const { query, documents } = body;
  if (typeof query !== 'string') bad("'query' must be a string");
  if (!Array.isArray(documents) || !documents.every((d) => typeof d === 'string'))
    bad("'documents' must be an array of strings");
  const docs = documents as string[];
  const scored = docs
    .map((text, index) => ({
      index,
      relevance_score: lexicalRelevance(query as string, text),
      document: { text },
    }))
    .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index);
  const topN = typeof body.top_n === 'number' ? body.top_n : scored.length;
  const tokens =
    countSimulatorTokens(query as string) * docs.length +
    docs.reduce((s, d) => s + countSimulatorTokens(d), 0);
  return {
    kind: 'json',
    body: {
      id: `rerank-sim${ctx.seq}`,
      model: body.model,
      results: scored.slice(0, topN),
      usage: { total_tokens: tokens },
    },
  };
}

export function openaiModels(models: string[]): SimulatedAnswer {
  return {
    kind: 'json',
    body: {
      object: 'list',
      data: models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'simulator' })),
    },
  };
}
