import type {
  ImagesResponse,
  ProviderCall,
  SpeechAnswer,
  TranscriptionResult,
  TranscriptionUpload,
} from '../providers/types';

/**
 * What the gateway needs from the provider layer (`src/providers`, contract in the provider-interface
 * brief). The bodies and usage are declared here structurally, as the gateway passes them through and
 * reads them, not as the adapters type them; the call, uploads and answers that cross unchanged are the
 * provider layer's own types.
 */
export interface Usage {
  /** every input token, those read from or written to the provider's prompt cache included (OpenAI's sense) */
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /**
   * the provider's breakdown of the prompt as it reported it (OpenAI's shape): `cached_tokens` read from its
   * prompt cache, `cache_write_tokens` written to it (Anthropic's, translated), each priced apart (decision 0107)
   */
  prompt_tokens_details?: PromptTokensDetails;
}

type PromptTokensDetails = Record<string, unknown> & {
  cached_tokens?: number;
  cache_write_tokens?: number;
  /**
   * the cache writes by TTL, LiteLLM's name for Anthropic's `cache_creation`: `ephemeral_1h_input_tokens` of
   * `cache_write_tokens` went to the 1-hour cache, priced apart; the rest to the 5-minute one (decision 0113)
   */
  cache_creation_token_details?: CacheCreationTokenDetails;
};

interface CacheCreationTokenDetails {
  ephemeral_5m_input_tokens?: number;
  ephemeral_1h_input_tokens?: number;
}

/**
 * The prompt's breakdown among what a provider reported beside its three figures: what a usage built from
 * those figures keeps, since the cost depends on it (decision 0107).
 */
export function promptDetailsOf(reported: Record<string, unknown>): Pick<Usage, 'prompt_tokens_details'> {
  const details = reported.prompt_tokens_details;
  return typeof details === 'object' && details !== null && !Array.isArray(details)
    ? { prompt_tokens_details: details as PromptTokensDetails }
    : {};
}

export type { ProviderCall };

// OpenAI wire objects are passed through as they are; the gateway reads a few members only.
export type ChatRequest = Record<string, unknown> & { model?: string; stream?: boolean; messages: unknown[] };
export type ChatCompletion = Record<string, unknown> & { usage?: Record<string, unknown> | null };
export type ChatChunk = Record<string, unknown> & {
  choices?: Array<{
    /** `content`: a string, or an array of parts from some providers (read through `answer-text.ts`) */
    delta?: {
      content?: string | unknown[] | null;
      tool_calls?: unknown;
      /** the reasoning some OpenAI-compatible servers stream beside the content (vLLM, DeepSeek; OpenRouter's `reasoning`) */
      reasoning_content?: unknown;
      reasoning?: unknown;
    };
    finish_reason?: string | null;
  }>;
  /** the figures, and whatever else the provider reported beside them (OpenAI's `*_details`) */
  usage?: (Usage & Record<string, unknown>) | null;
};
/** OpenAI's legacy text completions (decision 0115): passed through as chat is; the gateway reads `prompt` and `suffix`. */
export type TextCompletionRequest = Record<string, unknown> & {
  model?: string;
  stream?: boolean;
  prompt: string | string[] | number[] | number[][];
  suffix?: string | null;
};
export type TextCompletion = Record<string, unknown> & { usage?: Record<string, unknown> | null };
/** a text completion chunk: each choice's `text` since the last chunk */
export type TextCompletionChunk = Record<string, unknown> & {
  choices?: Array<{ text?: unknown; finish_reason?: string | null }>;
  usage?: (Usage & Record<string, unknown>) | null;
};
export type EmbeddingsRequest = Record<string, unknown> & { input: unknown; dimensions?: number };
type EmbeddingsResponse = Record<string, unknown> & { usage?: Record<string, unknown> | null };

export interface ProviderAdapterPort {
  readonly name: string;
  /** the most embedding dimensions the adapter computes itself (the mock); a provider refuses on its own */
  readonly maxEmbeddingDimensions?: number;
  chat(body: ChatRequest, call: ProviderCall): Promise<{ body: ChatCompletion; usage: Usage | null }>;
  chatStream(body: ChatRequest, call: ProviderCall): AsyncIterable<ChatChunk>;
  /**
   * why `chat` would refuse this request without sending it, or null, the same for every deployment whose adapter
   * shares this function and whose model reasons alike; absent when the adapter sends every request
   */
  chatRefusal?(body: ChatRequest, call: Pick<ProviderCall, 'reasons'>): string | null;
  /** legacy text completions (OpenAI `completions`); absent when the provider type has none (Anthropic) */
  completions?(
    body: TextCompletionRequest,
    call: ProviderCall,
  ): Promise<{ body: TextCompletion; usage: Usage | null }>;
  completionsStream?(body: TextCompletionRequest, call: ProviderCall): AsyncIterable<TextCompletionChunk>;
  /** why `completions` would refuse this request without answering it, or null; absent when it takes every request */
  completionsRefusal?(body: TextCompletionRequest, call: Pick<ProviderCall, 'model'>): string | null;
  embeddings(
    body: EmbeddingsRequest,
    call: ProviderCall,
  ): Promise<{ body: EmbeddingsResponse; usage: Usage | null }>;
  rerank?(
    body: { query: string; documents: string[]; top_n?: number },
    call: ProviderCall,
  ): Promise<{ results: Array<{ index: number; relevance_score: number }>; usage: Usage | null }>;
  /** image generation (OpenAI `images/generations`); absent when the provider type has none */
  images?(
    body: Record<string, unknown> & { prompt: string },
    call: ProviderCall,
  ): Promise<{ body: ImagesResponse }>;
  /** audio transcription (OpenAI `audio/transcriptions`, multipart); absent when the provider type has none */
  transcriptions?(upload: TranscriptionUpload, call: ProviderCall): Promise<TranscriptionResult>;
  /** audio translation into English (OpenAI `audio/translations`), as transcriptions */
  translations?(upload: TranscriptionUpload, call: ProviderCall): Promise<TranscriptionResult>;
  /** text to speech (OpenAI `audio/speech`): settles with the provider's first bytes, the rest as it arrives */
  speech?(
    body: Record<string, unknown> & { input: string; voice: string | { id: string } },
    call: ProviderCall,
  ): Promise<SpeechAnswer>;
}

/** A provider's error answer, as the adapters throw it (`ProviderError`). */
export interface ProviderFailure extends Error {
  provider: string;
  model: string;
  upstreamStatus: number | null;
  providerErrorType: string;
  retryable: boolean;
  retryAfterSeconds: number | null;
  /** the gateway refused the request for this provider itself; `message` is its reason, for the caller */
  refusedByGateway: boolean;
  /** what the provider reported the failed call consumed (a stream's input, reported as it began) */
  consumed?: Usage | null;
}

export const isProviderFailure = (err: unknown): err is ProviderFailure =>
  err instanceof Error && 'providerErrorType' in err && 'retryable' in err;

/** No answer (or no first chunk) within the model's timeout (`ProviderTimeoutError`). */
export const isProviderTimeout = (
  err: unknown,
): err is Error & { provider: string; model: string; consumed?: Usage | null } =>
  err instanceof Error && err.name === 'ProviderTimeoutError';

/** A stream the gateway cancelled after the provider reported what it consumed (`StreamCancelled`). */
const isStreamCancelled = (err: unknown): err is Error & { consumed: Usage } =>
  err instanceof Error && err.name === 'StreamCancelled';

/**
 * What the provider reported a failed, silent or cancelled call consumed before it ended: null when it reported
 * nothing.
 */
export const consumedBy = (err: unknown): Usage | null =>
  isProviderFailure(err) || isProviderTimeout(err) || isStreamCancelled(err) ? (err.consumed ?? null) : null;
