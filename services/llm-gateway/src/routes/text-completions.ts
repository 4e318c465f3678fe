import { jsonBody, parseInput } from '@platform/kernel';
import type { Router } from 'express';
import type { CatalogueModel } from '../catalogue/catalogue';
import { textChunksOf } from '../inference/answer-chunks';
import { refusedForProvider } from '../inference/errors';
import type { GatewayContext } from '../inference/gateway-context';
import type { RequestTraits } from '../inference/governance';
import type { DeploymentCheck } from '../inference/provider-calls';
import type {
  ProviderCall,
  TextCompletion,
  TextCompletionChunk,
  TextCompletionRequest,
  Usage,
} from '../inference/provider-port';
import { countTextPromptTokens, textAnswerText, textChunkText } from '../inference/text-completion';
import { ENDPOINT_NAMES } from '../providers/endpoints';
import { type CompletionApi, serveCompletion } from './completion-flow';
import { noMediaEndpoint } from './images';
import { OpenAiWire } from './openai-wire';
import { TextCompletionRequestSchema } from './schemas';

type TextBody = TextCompletionRequest & { stream_options?: { include_usage?: boolean } | null };

/** a deployment whose provider has no text completions (Anthropic) is never drawn; a model with none is refused */
function hasCompletions(model: CatalogueModel): void {
  if (!model.adapter.completions || !model.adapter.completionsStream)
    throw noMediaEndpoint(model, ENDPOINT_NAMES.completions);
}

/**
 * OpenAI's legacy text completions on the chat path's flow (decision 0115): the prompt (and suffix) counted by the
 * gateway's tokenizer, the deployments whose provider has the endpoint, `completions` on the provider.
 */
class TextCompletionsApi implements CompletionApi<TextBody, TextCompletionChunk> {
  readonly endpoint = 'completions';
  readonly chunkObject = 'text_completion';
  readonly idPrefix = 'cmpl-';
  readonly check = hasCompletions;

  /** a deployment whose adapter will not answer this request (the mock's most choices) is never drawn */
  bodyCheck(body: TextBody): DeploymentCheck {
    return (model) => {
      const refusal = model.adapter.completionsRefusal?.(body, { model: model.provider_config.model });
      if (refusal) throw refusedForProvider(model.providerName, model.model_id, refusal);
    };
  }

  promptTokens(body: TextBody): number {
    return countTextPromptTokens(body);
  }

  /** `n` per prompt: a list of texts or of token lists is several prompts */
  choices(body: TextBody): number {
    const prompts = Array.isArray(body.prompt) && typeof body.prompt[0] !== 'number' ? body.prompt.length : 1;
    return prompts * (typeof body.n === 'number' ? body.n : 1);
  }

  /** a prompt is one message, and needs no capability routing reads */
  traits(_body: TextBody, promptTokens: number): RequestTraits {
    return { messages: 1, promptTokens, needs: [] };
  }

  // `check` left out every deployment without these
  answer(
    model: CatalogueModel,
    body: TextBody,
    call: ProviderCall,
  ): Promise<{ body: TextCompletion; usage: Usage | null }> {
    return model.adapter.completions!(body, call);
  }

  stream(model: CatalogueModel, body: TextBody, call: ProviderCall): AsyncIterable<TextCompletionChunk> {
    return model.adapter.completionsStream!(body, call);
  }

  chunksOf(answer: TextCompletion): TextCompletionChunk[] {
    return textChunksOf(answer);
  }

  answerText(answer: Record<string, unknown>): string {
    return textAnswerText(answer);
  }

  chunkText(chunk: TextCompletionChunk): string {
    return textChunkText(chunk);
  }
}

const TEXT_COMPLETIONS = new TextCompletionsApi();

/**
 * `POST /v1/completions`: OpenAI's legacy text completions (code completion, fill-in-the-middle with `suffix`),
 * plain or streamed, with chat's governance, quotas, failover, budget cut and accounting (endpoint `completions`).
 */
export function mountTextCompletions(router: Router, ctx: GatewayContext): void {
  router.post('/v1/completions', (req, res) => {
    const body = parseInput(TextCompletionRequestSchema, jsonBody(req) ?? {}) as TextBody;
    return serveCompletion(
      TEXT_COMPLETIONS,
      ctx,
      req,
      res,
      body,
      new OpenAiWire(ctx, TEXT_COMPLETIONS, body.stream_options?.include_usage === true),
    );
  });
}
