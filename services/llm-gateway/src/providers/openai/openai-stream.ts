import type { ProviderHttp, ProviderRequest } from '../http/provider-http';
import { invalidAnswer, sendForEvents } from '../http/provider-http';
import { type ChatCompletionChunk, type ProviderCall, ProviderError, type Usage } from '../types';
import { toUsage } from '../usage';
import { readOpenAiError } from './openai-errors';

type RawChunk = Partial<ChatCompletionChunk> & { error?: unknown; x_groq?: { usage?: unknown } };

/**
 * The provider's usage as it came (OpenAI's `prompt_tokens_details` and `completion_tokens_details`
 * included, as a plain answer keeps them), with its figures normalised; null without figures.
 */
function withFigures(raw: unknown): Usage | null {
  const figures = toUsage(raw);
  return figures && { ...(raw as object), ...figures };
}

/**
 * OpenAI-protocol SSE to chunks. Usage, wherever the provider puts it (the `include_usage` chunk, on
 * the last content chunk as Mistral does, or Groq's `x_groq.usage`), is yielded once, as a final
 * chunk with empty `choices`. Chunks with neither choices nor usage (Azure's prompt filter
 * preamble) are dropped. A stream that ends without `[DONE]` or a finish reason was cut.
 */
export async function* openAiChunks(
  http: ProviderHttp,
  call: ProviderCall,
  request: ProviderRequest,
): AsyncGenerator<ChatCompletionChunk> {
  let usage: Usage | null = null;
  let last: ChatCompletionChunk | undefined;
  let finished = false;
  let done = false;
  let yielded = false;
  for await (const event of sendForEvents(http, call, request, (e) => e.data === '[DONE]')) {
    if (event.data === '[DONE]') {
      done = true;
      break;
    }
    let raw: RawChunk;
    try {
      raw = JSON.parse(event.data) as RawChunk;
    } catch {
      throw invalidAnswer(http, call, 'a stream event that is not JSON');
    }
    if (raw.error !== undefined) {
      const { type, message } = readOpenAiError(raw);
      throw new ProviderError({
        provider: http.provider,
        model: call.model,
        upstreamStatus: null,
        providerErrorType: type ?? 'stream_error',
        retryable: !yielded,
        message: message ?? 'the provider reported an error in the stream',
      });
    }
    usage = withFigures(raw.usage) ?? withFigures(raw.x_groq?.usage) ?? usage;
    if (!Array.isArray(raw.choices) || raw.choices.length === 0) continue;
    const { usage: _usage, x_groq: _groq, ...chunk } = raw;
    last = chunk as ChatCompletionChunk;
    if (last.choices.some((c) => c.finish_reason)) finished = true;
    yielded = true;
    yield last;
  }
  if (!done && !finished) {
    throw new ProviderError({
      provider: http.provider,
      model: call.model,
      upstreamStatus: null,
      providerErrorType: 'incomplete_stream',
      retryable: !yielded,
      message: 'the stream ended before its last chunk',
    });
  }
  if (usage) {
    yield {
      id: last?.id ?? '',
      object: 'chat.completion.chunk',
      created: last?.created ?? 0,
      model: last?.model ?? call.model,
      choices: [],
      usage,
    };
  }
}
