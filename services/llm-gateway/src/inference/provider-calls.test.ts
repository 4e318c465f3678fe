import { AppError, envelopeOf } from '@platform/kernel';
import type { Catalogue, CatalogueModel } from '../catalogue/catalogue';
import { ProviderError, ProviderUnsupportedError } from '../providers';
import type { OrgGatewaySettings } from '../quota/org-settings';
import { failoverChain, toAnswer } from './provider-calls';

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

describe('the failover chain', () => {
  const model = (model_id: string, failover?: string, org_slugs?: string[]) => {
    const m = { model_id, type: 'completion', failover, org_slugs } as CatalogueModel;
    return Object.assign(m, { pool: [m] });
  };
  const catalogueOf = (...models: CatalogueModel[]) =>
    ({ get: (id: string) => models.find((m) => m.model_id === id) }) as unknown as Catalogue;
  const settingsFor = (orgSlug: string, allowed: string[] | null) =>
    ({ orgSlug, models: { allowed, defaults: {}, downgrade: {} } }) as unknown as OrgGatewaySettings;
  const ids = (chain: ReadonlyArray<readonly CatalogueModel[]>) => chain.map((pool) => pool[0]!.model_id);

  it('ends at a cycle through models the organization may not use', () => {
    const first = model('first', 'x');
    // x and y fail over to each other; neither is allowed, so neither is ever in the chain
    const catalogue = catalogueOf(first, model('x', 'y'), model('y', 'x'));
    expect(ids(failoverChain(first, first.pool, settingsFor('acme', ['first']), catalogue, null))).toEqual([
      'first',
    ]);
    const toSelf = model('to-self', 'self');
    const self = model('self', 'self');
    expect(
      ids(
        failoverChain(toSelf, toSelf.pool, settingsFor('acme', ['to-self']), catalogueOf(toSelf, self), null),
      ),
    ).toEqual(['to-self']);
  });

  it("passes over a model restricted to other organizations, as governance's own resolution does", () => {
    const first = model('first', 'theirs');
    const catalogue = catalogueOf(first, model('theirs', 'shared', ['globex']), model('shared'));
    expect(ids(failoverChain(first, first.pool, settingsFor('acme', null), catalogue, null))).toEqual([
      'first',
      'shared',
    ]);
    expect(ids(failoverChain(first, first.pool, settingsFor('globex', null), catalogue, null))).toEqual([
      'first',
      'theirs',
      'shared',
    ]);
  });
});
