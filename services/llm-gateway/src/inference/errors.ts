import { AppError, Forbidden, InvalidInput, NotFound } from '@platform/kernel';
import type { ProviderFailure } from './provider-port';

/** The gateway's own refusals (spec 7.1 codes); the kernel's middleware turns them into the envelope. */
export const modelNotFound = (model: string, message = `No model named ${model} in the catalogue`) =>
  new NotFound(message, {
    error: 'MODEL_NOT_FOUND',
    code: 'MODEL_NOT_FOUND',
    extra: { model },
  });

/** 403 MODEL_NOT_ALLOWED: outside the organization's `allowed` (scope `org`), or the calling API key's list (`api_key`) */
export const modelNotAllowed = (model: string, scope: 'org' | 'api_key' = 'org') =>
  new Forbidden(
    scope === 'org'
      ? `The organization does not allow the model ${model}`
      : `This API key may not use the model ${model}: its models are set in models.by_api_key of the organization's quota settings`,
    { error: 'MODEL_NOT_ALLOWED', code: 'MODEL_NOT_ALLOWED', details: { scope }, extra: { model } },
  );

export const invalidBody = (message: string, issues?: Array<{ field: string; message: string }>) =>
  new InvalidInput(message, {
    error: 'INVALID_BODY',
    code: 'INVALID_BODY',
    details: issues ? { issues } : undefined,
  });

/**
 * A provider answered an error: 502 with who and what (spec 2.3 `provider`, `model`, `provider_error_type`).
 * `x-should-retry` tells the SDKs, which retry every 5xx by default, whether sending it again can help;
 * a provider's 429 passes its Retry-After on.
 */
export class ProviderErrorAnswer extends AppError {
  constructor(
    provider: string,
    model: string,
    failure: Pick<
      ProviderFailure,
      'providerErrorType' | 'upstreamStatus' | 'retryable' | 'retryAfterSeconds'
    >,
  ) {
    super('bad_gateway', 'PROVIDER_ERROR', `The provider ${provider} answered an error for ${model}`, {
      code: 'PROVIDER_ERROR',
      details: { upstream_status: failure.upstreamStatus },
      // the provider's own word for it, which no provider needs more than a short line for
      extra: { provider, model, provider_error_type: failure.providerErrorType.slice(0, 100) },
      retryable: failure.retryable,
      // whole seconds, at least 1: a provider's `retry-after: 0` (or a date past) is no wait a client can honour
      retryAfter:
        failure.upstreamStatus === 429 && failure.retryAfterSeconds !== null
          ? Math.max(1, failure.retryAfterSeconds)
          : undefined,
    });
  }
}

/**
 * The gateway refused the request for this provider before calling it (Anthropic and `n: 2`, an
 * untranslatable part, embeddings on a provider without them): no retry can help, so a 400 naming why.
 */
export const refusedForProvider = (provider: string, model: string, reason: string) =>
  new InvalidInput(`The provider ${provider} cannot take this request for ${model}: ${reason}`, {
    error: 'INVALID_BODY',
    code: 'INVALID_BODY',
    extra: { provider, model },
  });

/** No answer within the model's timeout: 504 PROVIDER_NO_RESPONSE. */
export class ProviderNoResponse extends AppError {
  constructor(provider: string, model: string, timeoutMs: number) {
    super(
      'timeout',
      'PROVIDER_NO_RESPONSE',
      `The provider ${provider} did not answer within ${timeoutMs} ms`,
      {
        code: 'PROVIDER_NO_RESPONSE',
        details: { timeout_ms: timeoutMs },
        extra: { provider, model, provider_error_type: 'timeout' },
      },
    );
  }
}
