import type { Clock } from '@platform/kernel';
import { mergeHeaders } from '../http/headers';
import { type ErrorTypeReader, invalidAnswer, type ProviderHttp, sendForJson } from '../http/provider-http';
import type { ProviderTransport } from '../http/transport';
import { shapeBody } from '../request-shape';
import {
  type ChatCompletionRequest,
  type ProviderAdapter,
  type ProviderCall,
  type ProviderSpec,
  ProviderUnsupportedError,
  RequestRefusedForProvider,
} from '../types';
import { anthropicChunks } from './anthropic-stream';
import { answersInJson, fromAnthropicResponse, toAnthropicRequest } from './anthropic-translate';
import type { AnthropicResponse } from './anthropic-wire';
import { UntranslatableRequest } from './untranslatable';

const ANTHROPIC_BASE_URL = 'https://api.anthropic.com';
const ANTHROPIC_VERSION = '2023-06-01';

const readAnthropicError: ErrorTypeReader = (body) => {
  const error = (body as { error?: { type?: unknown; message?: unknown } })?.error;
  return {
    type: typeof error?.type === 'string' ? error.type : null,
    message: typeof error?.message === 'string' ? error.message : null,
  };
};

/**
 * Why the translation refuses a chat request, or null: the same on every Anthropic deployment whose model reasons
 * alike (the deployment's model only names the translated body, not kept here).
 */
function chatRefusal(body: ChatCompletionRequest, call: Pick<ProviderCall, 'reasons'>): string | null {
  try {
    toAnthropicRequest(body, '', body.stream === true, call.reasons !== false);
    return null;
  } catch (err) {
    if (!(err instanceof UntranslatableRequest)) throw err;
    return err.message;
  }
}

/**
 * Anthropic's Messages API behind the OpenAI chat shape. The base URL is the Anthropic SDK's
 * (`https://api.anthropic.com`, the adapter adds `/v1/messages`); one that already ends in `/v1` is
 * taken as is. Extra headers (e.g. `anthropic-beta`) come from the provider entry.
 */
export function createAnthropicAdapter(
  spec: ProviderSpec,
  deps: { send: ProviderTransport; clock: Clock },
): ProviderAdapter {
  const base = (spec.baseUrl ?? ANTHROPIC_BASE_URL).replace(/\/+$/, '');
  const url = /\/v1$/.test(base) ? `${base}/messages` : `${base}/v1/messages`;
  const http: ProviderHttp = {
    provider: spec.name,
    send: deps.send,
    clock: deps.clock,
    readError: readAnthropicError,
  };
  const created = () => Math.floor(deps.clock.now().getTime() / 1000);
  // the version may be pinned per provider entry; the body's type and the key can never be replaced
  const headers = (call: ProviderCall, accept: string) =>
    mergeHeaders({ 'anthropic-version': ANTHROPIC_VERSION }, spec.headers, call.headers, {
      'content-type': 'application/json',
      accept,
      ...(spec.apiKey ? { 'x-api-key': spec.apiKey } : {}),
    });

  const translate = (body: ChatCompletionRequest, call: ProviderCall, stream: boolean) => {
    try {
      return JSON.stringify(
        shapeBody(call, toAnthropicRequest(body, call.model, stream, call.reasons !== false)),
      );
    } catch (err) {
      if (!(err instanceof UntranslatableRequest)) throw err;
      throw new RequestRefusedForProvider(spec.name, call.model, err.message);
    }
  };

  return {
    name: spec.name,

    async chat(body, call) {
      const answer = await sendForJson<AnthropicResponse>(http, call, {
        url,
        headers: headers(call, 'application/json'),
        body: translate(body, call, false),
      });
      if (answer?.type !== 'message' || !Array.isArray(answer.content))
        throw invalidAnswer(http, call, 'a Messages answer without content');
      const completion = fromAnthropicResponse(answer, created(), answersInJson(body));
      return { body: completion, usage: completion.usage ?? null };
    },

    chatStream(body, call) {
      const request = { url, headers: headers(call, 'text/event-stream'), body: translate(body, call, true) };
      return anthropicChunks(http, call, request, created(), answersInJson(body));
    },

    chatRefusal,

    async embeddings(_body, call) {
      throw new ProviderUnsupportedError(spec.name, call.model, 'embeddings');
    },
  };
}
