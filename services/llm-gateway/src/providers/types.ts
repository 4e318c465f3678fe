import type { CancelSignal } from './cancellation';
import type { RequestShape } from './request-shape';
/**
 * The provider layer's contract with the rest of the gateway: OpenAI-shaped bodies in and out, typed
 * errors with no HTTP in them. One adapter per provider entry; each call makes exactly one attempt
 * (retries, backoff and failover are the gateway's).
 */

// ---------- OpenAI wire format (the fields the gateway reads; everything else passes through) ----------

export type ChatRole = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

export type ChatContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: 'auto' | 'low' | 'high' } }
  | { type: string; [key: string]: unknown };

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

interface ChatMessageFields {
  role: ChatRole;
  content?: string | ChatContentPart[] | null;
  name?: string;
  tool_call_id?: string;
  [key: string]: unknown;
}

export interface ChatMessage extends ChatMessageFields {
  tool_calls?: ChatToolCall[];
}

export interface ChatTool {
  type: 'function';
  function: {
    name: string;
    description?: string;
    parameters?: Record<string, unknown>;
    strict?: boolean | null;
  };
}

/** another of OpenAI's tool types (or tool-choice forms), passed on as it came */
export interface OtherChatTool {
  type: string;
  [key: string]: unknown;
}

/**
 * A function tool, tool choice or tool call: the only kind the mock and the Anthropic translation know (the
 * other types, such as OpenAI's custom tools and their calls, pass through to OpenAI-protocol providers).
 */
export const isFunction = <F extends { type: 'function'; function: { name: string } }>(
  item: F | OtherChatTool,
): item is F => item.type === 'function' && typeof (item as F).function?.name === 'string';

export type ChatToolChoice =
  | 'none'
  | 'auto'
  | 'required'
  | { type: 'function'; function: { name: string } }
  | OtherChatTool;

/** a message of a request: earlier tool calls may be of other types than functions (passed on as they came) */
export interface ChatRequestMessage extends ChatMessageFields {
  tool_calls?: Array<ChatToolCall | OtherChatTool>;
}

export interface ChatCompletionRequest {
  model: string;
  messages: ChatRequestMessage[];
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean } | null;
  tools?: Array<ChatTool | OtherChatTool>;
  tool_choice?: ChatToolChoice;
  parallel_tool_calls?: boolean;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  stop?: string | string[] | null;
  response_format?: { type: string; [key: string]: unknown };
  user?: string;
  [key: string]: unknown;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call';

export interface Usage {
  /** every input token, those read from or written to the provider's prompt cache included */
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** OpenAI's breakdown of the prompt (`cached_tokens`, `cache_write_tokens`, `audio_tokens`…), as reported */
  prompt_tokens_details?: Record<string, unknown> & { cached_tokens?: number; cache_write_tokens?: number };
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: {
      role: 'assistant';
      content: string | null;
      tool_calls?: ChatToolCall[];
      refusal?: string | null;
      [key: string]: unknown;
    };
    finish_reason: FinishReason | null;
    logprobs?: unknown;
  }>;
  usage?: Usage;
  [key: string]: unknown;
}

export interface ChatToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    delta: {
      role?: 'assistant';
      content?: string | null;
      tool_calls?: ChatToolCallDelta[];
      refusal?: string | null;
      [key: string]: unknown;
    };
    finish_reason: FinishReason | null;
    logprobs?: unknown;
  }>;
  /** set on the final usage chunk only (its `choices` is empty) */
  usage?: Usage | null;
  [key: string]: unknown;
}

/**
 * OpenAI's legacy text completions (`/v1/completions`, decision 0115): `prompt` is a string, strings, token ids or
 * arrays of token ids; `suffix` is the text after the insertion point (fill-in-the-middle). The rest passes through.
 */
export interface TextCompletionRequest {
  model: string;
  prompt: string | string[] | number[] | number[][];
  suffix?: string | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean } | null;
  max_tokens?: number | null;
  n?: number | null;
  echo?: boolean | null;
  stop?: string | string[] | null;
  [key: string]: unknown;
}

export interface TextCompletionChoice {
  text: string;
  index: number;
  logprobs: unknown;
  finish_reason: FinishReason | null;
  [key: string]: unknown;
}

export interface TextCompletion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: TextCompletionChoice[];
  usage?: Usage;
  [key: string]: unknown;
}

/** a streamed piece: the same object, each choice with the text since the last one */
export interface TextCompletionChunk {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: TextCompletionChoice[];
  /** set on the final usage chunk only (its `choices` is empty) */
  usage?: Usage | null;
  [key: string]: unknown;
}

export interface EmbeddingsRequest {
  model: string;
  input: string | string[] | number[] | number[][];
  dimensions?: number;
  encoding_format?: 'float' | 'base64';
  user?: string;
  [key: string]: unknown;
}

export interface EmbeddingsResponse {
  object: 'list';
  data: Array<{ object: 'embedding'; index: number; embedding: number[] | string }>;
  model: string;
  usage?: { prompt_tokens: number; total_tokens: number };
  [key: string]: unknown;
}

export interface ImagesRequest {
  model?: string;
  prompt: string;
  n?: number | null;
  size?: string | null;
  response_format?: 'url' | 'b64_json' | null;
  [key: string]: unknown;
}

export interface ImagesResponse {
  created: number;
  data: Array<{ b64_json?: string; url?: string; revised_prompt?: string }>;
  [key: string]: unknown;
}

export interface RerankRequest {
  query: string;
  documents: string[];
  top_n?: number;
}

export interface RerankResult {
  results: Array<{ index: number; relevance_score: number }>;
  usage: Usage | null;
}

export interface TranscriptionUpload {
  file: Buffer;
  filename: string;
  mimeType: string;
  /** the other multipart fields (response_format, language, prompt, temperature, ...); `model` is replaced */
  fields: Record<string, string>;
  /** the same fields in order, a repeated one (`timestamp_granularities[]`, `include[]`) once per value */
  entries?: Array<[string, string]>;
}

export interface TranscriptionResult {
  /** parsed JSON for json/verbose_json, the text for text/srt/vtt */
  body: unknown;
  contentType: string;
  /** seconds of audio the provider reported; null when it reported none (the gateway measures the upload) */
  durationSeconds: number | null;
}

/** OpenAI's `audio/speech` body: `input` (at most 4096 characters), `voice`, and the options passed on as sent. */
export interface SpeechRequest {
  input: string;
  voice: string | { id: string };
  instructions?: string;
  response_format?: 'mp3' | 'opus' | 'aac' | 'flac' | 'wav' | 'pcm';
  speed?: number;
  stream_format?: 'audio' | 'sse';
  [key: string]: unknown;
}

export interface SpeechAnswer {
  /** the provider's content type (the gateway answers its own for the format asked, unless this is an audio one) */
  contentType: string;
  /** the audio (or, for `stream_format: sse`, the event stream) as it arrives; iterating it to the end or
   *  ending the iteration early releases the provider call */
  audio: AsyncIterable<Uint8Array>;
}

// ---------- adapters ----------

export interface ProviderSpec {
  name: string;
  type: 'openai' | 'anthropic' | 'mock';
  /** e.g. https://api.openai.com/v1, http://127.0.0.1:PORT/v1; Anthropic: https://api.anthropic.com */
  baseUrl?: string;
  /** already decrypted by the gateway */
  apiKey?: string;
  /** extra static headers */
  headers?: Record<string, string>;
  /** Azure OpenAI form: {baseUrl}/openai/deployments/{model}/...?api-version= */
  azure?: { apiVersion: string };
  /** defined by a platform administrator: it only reaches the addresses `ProviderDestinations` allows */
  restricted?: boolean;
}

export interface ProviderCall {
  /** the provider's own model name (provider_config.model) */
  model: string;
  /** per-request headers resolved by the gateway's header policy */
  headers: Record<string, string>;
  /** no answer (or no first chunk, or a stream silent this long) -> ProviderTimeoutError */
  timeoutMs: number;
  /** aborting it (client disconnect) cancels the provider call */
  signal: CancelSignal;
  /** false when the catalogue says the model does not reason (`capabilities.reasoning: false`): no thinking is asked */
  reasons?: boolean;
  /** the deployment's renamed and excluded request members (`shapeBody`), when it has any */
  shape?: RequestShape;
  /**
   * streams: how many choices the answer holds (`n`, per prompt), when the gateway knows; with one, a usage report
   * riding on every chunk (vLLM's `continuous_usage_stats`) counts the whole answer once that choice has its finish
   */
  choices?: number;
}

export interface ProviderAdapter {
  readonly name: string;
  /** the most embedding dimensions the adapter computes itself (the mock); a provider refuses on its own */
  readonly maxEmbeddingDimensions?: number;
  chat(
    body: ChatCompletionRequest,
    call: ProviderCall,
  ): Promise<{ body: ChatCompletion; usage: Usage | null }>;
  /** OpenAI-shaped chunks; asks the provider for usage and yields a final usage chunk (`choices: []`,
   *  `usage` set) when the provider reports one, whether or not the client asked for it. */
  chatStream(body: ChatCompletionRequest, call: ProviderCall): AsyncIterable<ChatCompletionChunk>;
  /**
   * why `chat` and `chatStream` would refuse this request without sending it (Anthropic's translation cannot carry
   * `n: 2`), or null: asked before admission, once a request for every deployment whose adapter shares this
   * function and whose model reasons alike; absent when the adapter sends every request
   */
  chatRefusal?(body: ChatCompletionRequest, call: Pick<ProviderCall, 'reasons'>): string | null;
  /** legacy text completions (OpenAI `completions`); absent when the provider type has none (Anthropic) */
  completions?(
    body: TextCompletionRequest,
    call: ProviderCall,
  ): Promise<{ body: TextCompletion; usage: Usage | null }>;
  /** text completion chunks; asks for usage and yields a final usage chunk as `chatStream` does */
  completionsStream?(body: TextCompletionRequest, call: ProviderCall): AsyncIterable<TextCompletionChunk>;
  /**
   * why `completions` and `completionsStream` would refuse this request without answering it (the mock's most
   * choices), or null: asked of each deployment before admission; absent when the adapter takes every request
   */
  completionsRefusal?(body: TextCompletionRequest, call: Pick<ProviderCall, 'model'>): string | null;
  embeddings(
    body: EmbeddingsRequest,
    call: ProviderCall,
  ): Promise<{ body: EmbeddingsResponse; usage: Usage | null }>;
  /** present only when the provider has a native rerank endpoint (Cohere/Jina/vLLM `/rerank` shape) */
  rerank?(body: RerankRequest, call: ProviderCall): Promise<RerankResult>;
  images?(body: ImagesRequest, call: ProviderCall): Promise<{ body: ImagesResponse }>;
  transcriptions?(upload: TranscriptionUpload, call: ProviderCall): Promise<TranscriptionResult>;
  /** audio translation into English (OpenAI `audio/translations`): the transcription's upload and answer */
  translations?(upload: TranscriptionUpload, call: ProviderCall): Promise<TranscriptionResult>;
  /** text to speech (OpenAI `audio/speech`): settles once the provider's first bytes are in */
  speech?(body: SpeechRequest, call: ProviderCall): Promise<SpeechAnswer>;
}

// ---------- errors (no HTTP in them; the gateway maps them to the envelope) ----------

export interface ProviderErrorFields {
  provider: string;
  model: string;
  /** the provider's HTTP status; null when there was none (connection failure, error inside a stream) */
  upstreamStatus: number | null;
  /** the provider's own error class/type, e.g. 'rate_limit_error', 'overloaded_error', 'server_error' */
  providerErrorType: string;
  /** 429, 5xx, and connection failures before any byte of the answer */
  retryable: boolean;
  retryAfterSeconds?: number | null;
  message: string;
  /**
   * Set when the gateway itself refused the request before any call (the provider type cannot take it):
   * `message` is then the gateway's own reason and is shown to the caller. A provider's own messages are
   * never passed on (they can quote fragments of the provider key).
   */
  refusedByGateway?: boolean;
  /**
   * What the provider reported the failed call consumed before it failed (a stream's input, reported as it began):
   * the request's usage event counts it, whether another attempt answers or not.
   */
  consumed?: Usage | null;
}

/** The provider answered an error (4xx/5xx, an error inside a stream, or a body that is not its API). */
export class ProviderError extends Error {
  readonly provider: string;
  readonly model: string;
  readonly upstreamStatus: number | null;
  readonly providerErrorType: string;
  readonly retryable: boolean;
  readonly retryAfterSeconds: number | null;
  readonly refusedByGateway: boolean;
  readonly consumed: Usage | null;

  constructor(fields: ProviderErrorFields) {
    super(fields.message);
    this.name = 'ProviderError';
    this.provider = fields.provider;
    this.model = fields.model;
    this.upstreamStatus = fields.upstreamStatus;
    this.providerErrorType = fields.providerErrorType;
    this.retryable = fields.retryable;
    this.retryAfterSeconds = fields.retryAfterSeconds ?? null;
    this.refusedByGateway = fields.refusedByGateway ?? false;
    this.consumed = fields.consumed ?? null;
  }
}

/**
 * A stream the gateway cancelled (its client left, the monthly budget cut it) after the provider reported what the call
 * consumed (Anthropic's message_start input and message_delta output, an OpenAI-protocol usage report): the
 * cancellation (`cause`), with that report for the usage event.
 */
export class StreamCancelled extends Error {
  readonly consumed: Usage;

  constructor(cause: unknown, consumed: Usage) {
    super('the stream was cancelled', { cause });
    this.name = 'StreamCancelled';
    this.consumed = consumed;
  }
}

/** an abort's reason (a DOMException, of no `Error` class under every runtime) */
const isCancellation = (err: unknown) => (err as { name?: unknown } | null)?.name === 'AbortError';

/**
 * A stream's failure (or silence, or cancellation) as its adapter throws it: with what the provider reported the call
 * consumed so far, and a connection lost before any chunk reached the caller retryable, as one lost before the first
 * byte is (the transport had read events, but none was passed on).
 */
export function streamFailure(err: unknown, consumed: Usage | null, passedOn: boolean): unknown {
  if (err instanceof ProviderTimeoutError) {
    err.consumed ??= consumed;
    return err;
  }
  if (consumed && isCancellation(err)) return new StreamCancelled(err, consumed);
  if (!(err instanceof ProviderError)) return err;
  const lostEarly = !passedOn && !err.retryable && err.providerErrorType === 'connection_error';
  if (!consumed && !lostEarly) return err;
  return new ProviderError({
    provider: err.provider,
    model: err.model,
    upstreamStatus: err.upstreamStatus,
    providerErrorType: err.providerErrorType,
    retryable: err.retryable || lostEarly,
    retryAfterSeconds: err.retryAfterSeconds,
    message: err.message,
    refusedByGateway: err.refusedByGateway,
    consumed: consumed ?? err.consumed,
  });
}

/** A stream that ended before its protocol said it was whole: retried only when nothing of it was passed on. */
export function incompleteStream(
  provider: string,
  model: string,
  passedOn: boolean,
  message: string,
): ProviderError {
  return new ProviderError({
    provider,
    model,
    upstreamStatus: null,
    providerErrorType: 'incomplete_stream',
    retryable: !passedOn,
    message,
  });
}

/** A request the gateway will not send to this provider as it stands (a 400 naming why); never retryable. */
export class RequestRefusedForProvider extends ProviderError {
  constructor(provider: string, model: string, message: string) {
    super({
      provider,
      model,
      upstreamStatus: null,
      providerErrorType: 'invalid_request_error',
      retryable: false,
      message,
      refusedByGateway: true,
    });
    this.name = 'RequestRefusedForProvider';
  }
}

/** The provider type cannot do this at all (Anthropic has no embeddings); never retryable. */
export class ProviderUnsupportedError extends ProviderError {
  constructor(
    provider: string,
    model: string,
    readonly operation: string,
  ) {
    super({
      provider,
      model,
      upstreamStatus: null,
      providerErrorType: 'unsupported_operation',
      retryable: false,
      message: `provider ${provider} has no ${operation} endpoint`,
      refusedByGateway: true,
    });
    this.name = 'ProviderUnsupportedError';
  }
}

/** No answer (or no first chunk, or a stream went silent) within the call's timeoutMs. */
export class ProviderTimeoutError extends Error {
  readonly provider: string;
  readonly model: string;
  /** whether some of a stream had already been yielded */
  readonly midStream: boolean;
  /** what the provider reported the call consumed before it went silent (a stream's input), as `ProviderError`'s */
  consumed: Usage | null = null;

  constructor(provider: string, model: string, timeoutMs: number, midStream = false) {
    super(
      midStream
        ? `provider ${provider} went silent for ${timeoutMs} ms in the middle of a stream`
        : `provider ${provider} did not answer within ${timeoutMs} ms`,
    );
    this.name = 'ProviderTimeoutError';
    this.provider = provider;
    this.model = model;
    this.midStream = midStream;
  }
}
