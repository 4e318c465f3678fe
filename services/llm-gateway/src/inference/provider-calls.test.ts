import { AppError, envelopeOf } from '@platform/kernel';
import type { CatalogueModel } from '../catalogue/catalogue';
import { ProviderError, ProviderUnsupportedError } from '../providers';
import { toAnswer } from './provider-calls';

const claude = { model_id: 'acme/claude', providerName: 'claude' } as CatalogueModel;

describe('provider errors as answers', () => {
  it('an operation the provider type has not (embeddings on Anthropic) is a 400 naming the provider', () => {
    const answer = toAnswer(new ProviderUnsupportedError('claude', 'claude-x', 'embeddings'), claude, 1_000);
    expect(envelopeOf(answer)).toMatchObject({
      status: 400,
      error: 'INVALID_BODY',
      code: 'INVALID_BODY',
      provider: 'claude',
      model: 'acme/claude',
      message:
        'The provider claude cannot take this request for acme/claude: provider claude has no embeddings endpoint',
    });
  });

  it("a provider's error stays a 502 that says whether a retry can help", () => {
    const failure = (upstreamStatus: number, retryable: boolean) =>
      toAnswer(
        new ProviderError({
          provider: 'claude',
          model: 'claude-x',
          upstreamStatus,
          providerErrorType: 'x',
          retryable,
          retryAfterSeconds: 9,
          message: 'upstream words never shown',
        }),
        claude,
        1_000,
      ) as AppError;
    expect(failure(401, false)).toMatchObject({
      kind: 'bad_gateway',
      retryable: false,
      retryAfter: undefined,
    });
    expect(failure(529, true)).toMatchObject({ retryable: true, retryAfter: undefined });
    expect(failure(429, true)).toMatchObject({ retryable: true, retryAfter: 9 });
    expect(envelopeOf(failure(429, true))).toMatchObject({
      status: 502,
      code: 'PROVIDER_ERROR',
      retryAfter: 9,
    });
    expect(envelopeOf(failure(401, false)).message).not.toContain('upstream words');
  });
});
