/** What a test can make the simulator do; see `ProviderSimulator.script`. */

export type SimulatorApi = 'openai' | 'anthropic';
export type SimulatorEndpoint =
  | 'chat'
  /** OpenAI's legacy text completions (`/v1/completions`) */
  | 'completions'
  | 'messages'
  | 'embeddings'
  | 'rerank'
  | 'images'
  | 'transcriptions'
  | 'translations'
  | 'speech'
  | 'models';

export interface SimulatorToolCall {
  name: string;
  /** an object (serialised as JSON) or the raw arguments text */
  arguments: string | Record<string, unknown>;
}

export interface SimulatorRule {
  /** which requests the rule applies to: every given field must match (absent = any) */
  match?: { api?: SimulatorApi; endpoint?: SimulatorEndpoint; model?: string; stream?: boolean };
  /** how many matching requests the rule serves before it is spent (absent = all of them) */
  times?: number;
  /** wait before answering (before the status line) */
  latencyMs?: number;
  /** wait between two stream frames */
  chunkDelayMs?: number;
  /** answer this error instead, in the provider's own error shape */
  error?: {
    status: number;
    /** the provider's error type (OpenAI `error.type`, Anthropic `error.type`); a default per status */
    type?: string;
    /** OpenAI `error.code` (default per status, e.g. `rate_limit_exceeded` for 429) */
    code?: string | null;
    message?: string;
    /** sets `retry-after` (seconds) */
    retryAfterSeconds?: number;
    /** more response headers (e.g. `x-should-retry`) */
    headers?: Record<string, string>;
    /** a raw body to send instead of the provider's shape (e.g. HTML from a proxy) */
    rawBody?: string;
  };
  /** accept the request and never answer (until the client gives up or the simulator closes) */
  hang?: boolean;
  /** streams (and speech, whose audio is written in chunks): after `afterChunks` frames, fail in one of three ways */
  streamFailure?: {
    /** a negative number counts from the end: -1 fails before the last frame (OpenAI's `[DONE]`, Anthropic's
     *  `message_stop`), once the usage report is sent */
    afterChunks: number;
    /** `error-event`: the provider's in-stream error frame, then the end (audio has none: a disconnect);
     *  `disconnect`: the socket is destroyed; `hang`: nothing more is sent and the connection stays open;
     *  `end-frame`: the stream's own last frame (OpenAI's `[DONE]`, Anthropic's `message_stop`) and the end, as a
     *  proxy ends a stream its upstream cut (audio has none: a disconnect) */
    mode: 'error-event' | 'disconnect' | 'hang' | 'end-frame';
    type?: string;
    message?: string;
  };
  /** streams: wait this long between the last frame and the end of the body */
  endDelayMs?: number;
  /** streams: write the bytes in pieces of this many bytes, so frames straddle TCP reads */
  splitFramesBytes?: number;
  /** streams: send SSE comment lines (`: keep-alive`) between frames */
  sseComments?: boolean;
  /** what the model answers instead of the default derived from the prompt */
  reply?: {
    content?: string;
    toolCalls?: SimulatorToolCall[];
    /** force usage figures instead of the counted ones; OpenAI answers carry the `*_details` given */
    usage?: {
      /** every input token (the cached ones included); Anthropic's `input_tokens` is what is left of it */
      prompt_tokens?: number;
      completion_tokens?: number;
      prompt_tokens_details?: Record<string, number>;
      completion_tokens_details?: Record<string, number>;
      /**
       * prompt tokens read from the provider's prompt cache: OpenAI's `prompt_tokens_details.cached_tokens`,
       * Anthropic's `cache_read_input_tokens` (taken out of `input_tokens`), plain and streamed
       */
      cached_tokens?: number;
      /**
       * prompt tokens written to the cache: OpenAI's `prompt_tokens_details.cache_write_tokens`, Anthropic's
       * `cache_creation_input_tokens` (taken out of `input_tokens`)
       */
      cache_write_tokens?: number;
      /**
       * of `cache_write_tokens`, those written to the 1-hour cache: Anthropic's `cache_creation.
       * ephemeral_1h_input_tokens` (the rest its `ephemeral_5m_input_tokens`), OpenAI's face
       * `prompt_tokens_details.cache_creation_token_details` (LiteLLM's name for it)
       */
      cache_write_1h_tokens?: number;
    };
    /** OpenAI streams: never send the usage chunk, even when asked (Anthropic always reports usage) */
    omitStreamUsage?: boolean;
    /**
     * OpenAI text completion streams: every choice's chunk carries the usage of that choice so far, as vLLM's
     * `continuous_usage_stats` reports it, before the usage chunk that counts every choice; a choice's last token
     * comes with its finish, as vLLM sends it
     */
    continuousUsage?: boolean;
    /**
     * OpenAI text completion streams under `continuousUsage`: the prompt tokens served from the prefix cache, which
     * the usage chunk alone reports (`prompt_tokens_details.cached_tokens`), as vLLM's `--enable-prompt-tokens-details`
     * does; the reports riding on every chunk have no details
     */
    continuousUsageCachedTokens?: number;
    /**
     * OpenAI chat streams: the usage rides on the finish_reason chunk, as Mistral and several OpenAI-compatible
     * servers send it, and no usage-only chunk follows (asked for or not)
     */
    usageOnLastChunk?: boolean;
    /**
     * OpenAI chat streams: Azure's asynchronous content filter, whose last annotation (empty id, object and model; a
     * choice with `content_filter_results` and `content_filter_offsets`, no delta) follows the usage chunk (the finish
     * chunk when usage was not asked for), written with it at once
     */
    contentFilterAfterUsage?: boolean;
    /**
     * OpenAI chat streams: Azure's asynchronous content filter as it streams: every chunk's choice carries an empty
     * `content_filter_results`, and the filter's last annotation (the one `contentFilterAfterUsage` writes) comes in a
     * frame of its own after the usage chunk (the finish chunk when usage was not asked for), so that `chunkDelayMs`
     * holds it back as the filter's own delay does
     */
    asyncContentFilter?: boolean;
    /**
     * OpenAI chat streams: more text in one more chunk after the usage chunk (the finish chunk when usage was not
     * asked for), written with it at once, as a buggy server sends it once its answer and report are out
     */
    contentAfterUsage?: string;
    /** OpenAI plain answers: no `usage` member (a provider that reports none) */
    omitUsage?: boolean;
    /**
     * OpenAI face: the content as an array of parts, as Mistral's reasoning models answer it: a `thinking` part
     * (`{type: 'thinking', thinking: [{type: 'text', text}]}`) when `thinking` is given, then `{type: 'text', text}`;
     * streamed, every delta's content is such an array, the thinking's pieces first. Thinking counts in the usage.
     */
    contentParts?: { thinking?: string };
    /**
     * OpenAI face: reasoning beside the content, as vLLM and DeepSeek send it (`message.reasoning_content`;
     * streamed, `delta.reasoning_content` pieces before the content's). It counts in the usage.
     */
    reasoningContent?: string;
    /**
     * Anthropic face, when the request enables `thinking`: answer the thinking as a `redacted_thinking` block
     * (`{type: 'redacted_thinking', data}`, opaque data the simulator can verify when it is sent back) instead of
     * the signed `thinking` block; streamed, one `content_block_start` carrying the whole block. It counts in the usage.
     */
    redactedThinking?: boolean;
  };
  /** embeddings: the dimensions when the request names none (default: the simulator's) */
  embeddingDimensions?: number;
  /** transcriptions and translations: the text heard */
  transcript?: string;
  /** transcriptions in a text format: the content type answered instead of the usual one (a misbehaving provider) */
  transcriptContentType?: string;
}

export interface MatchKey {
  api: SimulatorApi;
  endpoint: SimulatorEndpoint;
  model: string | undefined;
  stream: boolean;
}

interface LiveRule {
  rule: SimulatorRule;
  left: number;
}

/** Rules in order; the first that matches serves the request and uses one of its `times`. */
export class RuleBook {
  private rules: LiveRule[] = [];

  replace(rules: SimulatorRule[]): void {
    this.rules = rules.map((rule) => ({ rule, left: rule.times ?? Number.POSITIVE_INFINITY }));
  }

  take(key: MatchKey): SimulatorRule {
    for (const live of this.rules) {
      if (live.left <= 0 || !matches(live.rule, key)) continue;
      live.left -= 1;
      return live.rule;
    }
    return {};
  }
}

function matches(rule: SimulatorRule, key: MatchKey): boolean {
  const m = rule.match;
  if (!m) return true;
  return (
    (m.api === undefined || m.api === key.api) &&
    (m.endpoint === undefined || m.endpoint === key.endpoint) &&
    (m.model === undefined || m.model === key.model) &&
    (m.stream === undefined || m.stream === key.stream)
  );
}
