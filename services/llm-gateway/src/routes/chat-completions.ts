import { jsonBody, parseInput } from '@platform/kernel';
import type { Router } from 'express';
import type { GatewayContext } from '../inference/gateway-context';
import type { ChatRequest } from '../inference/provider-port';
import { CHAT_COMPLETIONS, runCompletion } from './completion-flow';
import { OpenAiWire } from './openai-wire';
import { ChatRequestSchema } from './schemas';

type ChatBody = ChatRequest & { stream_options?: { include_usage?: boolean } | null };

/** `POST /v1/chat/completions`: OpenAI's chat completions, plain or streamed, on the catalogue's providers. */
export function mountChatCompletions(router: Router, ctx: GatewayContext): void {
  router.post('/v1/chat/completions', (req, res) => {
    const body = parseInput(ChatRequestSchema, jsonBody(req) ?? {}) as ChatBody;
    return runCompletion(
      ctx,
      req,
      res,
      body,
      new OpenAiWire(ctx, CHAT_COMPLETIONS, body.stream_options?.include_usage === true),
    );
  });
}
