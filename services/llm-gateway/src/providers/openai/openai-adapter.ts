import type { Clock } from '@platform/kernel';
import { mergeHeaders } from '../http/headers';
import {
  invalidAnswer,
  type ProviderHttp,
  sendForAnswer,
  sendForBytes,
  sendForJson,
} from '../http/provider-http';
import type { ProviderTransport } from '../http/transport';
import { shapeBody } from '../request-shape';
import type {
  ChatCompletion,
  EmbeddingsResponse,
  ImagesResponse,
  ProviderAdapter,
  ProviderCall,
  ProviderSpec,
  TextCompletion,
  TextCompletionChunk,
  TranscriptionResult,
  TranscriptionUpload,
} from '../types';
import { toUsage } from '../usage';
import { withoutAnthropicConventions } from './openai-anthropic-conventions';
import { readOpenAiError } from './openai-errors';
import { openAiChunks } from './openai-stream';

const OPENAI_BASE_URL = 'https://api.openai.com/v1';

/**
 * The OpenAI protocol: OpenAI itself, Azure OpenAI (deployment URLs, `api-key`, `api-version`) and the
 * compatible servers (Mistral, Groq, vLLM, Ollama, llama.cpp server, LM Studio), which differ only by
 * base URL, key and extra headers.
 */
export function createOpenAiAdapter(
  spec: ProviderSpec,
  deps: { send: ProviderTransport; clock: Clock },
): ProviderAdapter {
  const base = (spec.baseUrl ?? OPENAI_BASE_URL).replace(/\/+$/, '');
  const http: ProviderHttp = {
    provider: spec.name,
    send: deps.send,
    clock: deps.clock,
    readError: readOpenAiError,
  };
  const azure = spec.azure;

  const url = (model: string, path: string) =>
    azure
      ? `${base}/openai/deployments/${encodeURIComponent(model)}/${path}?api-version=${encodeURIComponent(azure.apiVersion)}`
      : `${base}/${path}`;
  const auth: Record<string, string> = spec.apiKey
    ? azure
      ? { 'api-key': spec.apiKey }
      : { authorization: `Bearer ${spec.apiKey}` }
    : {};
  // the body's type and the provider's key come last: a forwarded header can never replace them
  const headers = (call: ProviderCall, accept: string, json = true) =>
    mergeHeaders(spec.headers, call.headers, {
      ...(json ? { 'content-type': 'application/json' } : {}),
      accept,
      ...auth,
    });

  /** a plain (not streamed) chat or text completion, as the client sent it with the provider's model name */
  const answerOf = async <A extends { choices: unknown[]; usage?: unknown }>(
    call: ProviderCall,
    path: string,
    body: Record<string, unknown>,
    kind: 'chat' | 'text',
  ) => {
    const { stream_options: _options, ...rest } = body;
    const answer = await sendForJson<A>(http, call, {
      url: url(call.model, path),
      headers: headers(call, 'application/json'),
      body: JSON.stringify(shapeBody(call, { ...rest, model: call.model, stream: false })),
    });
    if (!Array.isArray(answer?.choices))
      throw invalidAnswer(http, call, `a ${kind} completion without choices`);
    return { body: answer, usage: toUsage(answer.usage) };
  };

  /** a streamed chat or text completion: the client's body with the provider's model name, usage always asked */
  const streamRequest = (
    call: ProviderCall,
    path: string,
    body: { stream_options?: object | null } & Record<string, unknown>,
  ) => ({
    url: url(call.model, path),
    headers: headers(call, 'text/event-stream'),
    body: JSON.stringify(
      shapeBody(call, {
        ...body,
        model: call.model,
        stream: true,
        stream_options: { ...body.stream_options, include_usage: true },
      }),
    ),
  });

  const adapter: ProviderAdapter = {
    name: spec.name,

    chat(body, call) {
      return answerOf<ChatCompletion>(call, 'chat/completions', withoutAnthropicConventions(body), 'chat');
    },

    chatStream(chat, call) {
      return openAiChunks(
        http,
        call,
        streamRequest(call, 'chat/completions', withoutAnthropicConventions(chat)),
      );
    },

    // legacy text completions (decision 0115): passed through as chat is, with the provider's model name
    completions(body, call) {
      return answerOf<TextCompletion>(call, 'completions', body, 'text');
    },

    completionsStream(body, call) {
      return openAiChunks<TextCompletionChunk>(
        http,
        call,
        streamRequest(call, 'completions', body),
        'text_completion',
      );
    },

    async embeddings(body, call) {
      const answer = await sendForJson<EmbeddingsResponse>(http, call, {
        url: url(call.model, 'embeddings'),
        headers: headers(call, 'application/json'),
        body: JSON.stringify(shapeBody(call, { ...body, model: call.model })),
      });
      if (!Array.isArray(answer?.data)) throw invalidAnswer(http, call, 'embeddings without data');
      return { body: answer, usage: toUsage(answer.usage) };
    },

    async images(body, call) {
      const answer = await sendForJson<ImagesResponse>(http, call, {
        url: url(call.model, 'images/generations'),
        headers: headers(call, 'application/json'),
        body: JSON.stringify(shapeBody(call, { ...body, model: call.model })),
      });
      if (!Array.isArray(answer?.data)) throw invalidAnswer(http, call, 'an image answer without data');
      return { body: answer };
    },

    transcriptions: (upload, call) => transcribe(upload, call, 'audio/transcriptions'),
    translations: (upload, call) => transcribe(upload, call, 'audio/translations'),

    async speech(body, call) {
      const answer = await sendForBytes(http, call, {
        url: url(call.model, 'audio/speech'),
        headers: headers(call, '*/*'),
        body: JSON.stringify(shapeBody(call, { ...body, model: call.model })),
      });
      return { contentType: answer.contentType, audio: answer.body };
    },
  };

  /** `audio/transcriptions` and `audio/translations` take the same upload and answer alike */
  async function transcribe(
    upload: TranscriptionUpload,
    call: ProviderCall,
    path: 'audio/transcriptions' | 'audio/translations',
  ): Promise<TranscriptionResult> {
    const form = new FormData();
    for (const [name, value] of upload.entries ?? Object.entries(upload.fields))
      if (name !== 'model') form.append(name, value);
    form.append('model', call.model);
    form.append('file', new Blob([upload.file], { type: upload.mimeType }), upload.filename);
    const { res, text } = await sendForAnswer(http, call, {
      url: url(call.model, path),
      headers: headers(call, '*/*', false),
      body: form,
    });
    const contentType = res.header('content-type') ?? 'text/plain';
    let body: unknown = text;
    if (contentType.includes('json')) {
      try {
        body = JSON.parse(text);
      } catch {
        throw invalidAnswer(http, call, `an ${path} answer that is not JSON`, res.status);
      }
    }
    const reported = body as { duration?: unknown; usage?: { type?: unknown; seconds?: unknown } };
    const duration =
      typeof reported?.duration === 'number'
        ? reported.duration
        : reported?.usage?.type === 'duration' && typeof reported.usage.seconds === 'number'
          ? reported.usage.seconds
          : null;
    return { body, contentType, durationSeconds: duration };
  }

  // Azure OpenAI has no rerank; the other OpenAI-protocol servers may (vLLM, Jina, Cohere-compatible)
  if (!azure) {
    adapter.rerank = async (body, call) => {
      const answer = await sendForJson<{
        results?: Array<{ index?: unknown; relevance_score?: unknown }>;
        usage?: unknown;
        meta?: { billed_units?: { input_tokens?: unknown } };
      }>(http, call, {
        url: `${base}/rerank`,
        headers: headers(call, 'application/json'),
        body: JSON.stringify(
          shapeBody(call, {
            model: call.model,
            query: body.query,
            documents: body.documents,
            top_n: body.top_n,
          }),
        ),
      });
      if (!Array.isArray(answer?.results)) throw invalidAnswer(http, call, 'a rerank answer without results');
      const results = answer.results
        .filter((r) => typeof r.index === 'number' && typeof r.relevance_score === 'number')
        .map((r) => ({ index: r.index as number, relevance_score: r.relevance_score as number }))
        .sort((a, b) => b.relevance_score - a.relevance_score);
      const raw = answer.usage as { total_tokens?: unknown } | undefined;
      const tokens =
        typeof raw?.total_tokens === 'number' ? raw.total_tokens : answer.meta?.billed_units?.input_tokens;
      const usage =
        typeof tokens === 'number'
          ? { prompt_tokens: tokens, completion_tokens: 0, total_tokens: tokens }
          : null;
      return { results, usage };
    };
  }
  return adapter;
}
