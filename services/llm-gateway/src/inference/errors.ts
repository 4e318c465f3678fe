import { AppError, Forbidden, InvalidInput, NotFound } from '@platform/kernel';

/** The gateway's own refusals (spec 7.1 codes); the kernel's middleware turns them into the envelope. */
export const modelNotFound = (model: string) =>
  new NotFound(`No model named ${model} in the catalogue`, {
    error: 'MODEL_NOT_FOUND',
    code: 'MODEL_NOT_FOUND',
    extra: { model },
  });

export const modelNotAllowed = (model: string) =>
  new Forbidden(`The organization does not allow the model ${model}`, {
    error: 'MODEL_NOT_ALLOWED',
    code: 'MODEL_NOT_ALLOWED',
    extra: { model },
  });

export const invalidBody = (message: string, issues?: Array<{ field: string; message: string }>) =>
  new InvalidInput(message, {
    error: 'INVALID_BODY',
    code: 'INVALID_BODY',
    details: issues ? { issues } : undefined,
  });

/** A provider answered an error: 502 with who and what (spec 2.3 `provider`, `model`, `provider_error_type`). */
export class ProviderErrorAnswer extends AppError {
  constructor(
    provider: string,
    model: string,
    providerErrorType: string,
    upstreamStatus: number | null,
    /** the gateway's own reason, when it refused the request for this provider before calling it */
    refusal?: string,
  ) {
    super(
      'bad_gateway',
      'PROVIDER_ERROR',
      refusal
        ? `The provider ${provider} cannot take this request for ${model}: ${refusal}`
        : `The provider ${provider} answered an error for ${model}`,
      {
        code: 'PROVIDER_ERROR',
        details: { upstream_status: upstreamStatus },
        extra: { provider, model, provider_error_type: providerErrorType },
      },
    );
  }
}

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
