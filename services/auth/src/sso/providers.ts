import type { Doc, Store } from '@platform/store';
import * as oidc from 'openid-client';

/** An external OpenID Connect identity provider people may sign in with. `_id` is its slug. */
export interface SsoProviderDoc extends Doc {
  name: string;
  issuer: string;
  clientId: string;
  clientSecret: string | null;
  /** a company's provider: its users become members of this organization (null: the platform's) */
  orgSlug: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Which local user an external identity is. `_id` is `<provider slug>:<sub>`. */
export interface SsoIdentityDoc extends Doc {
  provider: string;
  sub: string;
  userId: string;
  linkedAt: Date;
}

export const openSsoCollections = (store: Store) => ({
  providers: store.collection<SsoProviderDoc>('sso_providers'),
  identities: store.collection<SsoIdentityDoc>('sso_identities', [{ fields: { userId: 1 } }]),
});

export type SsoCollections = ReturnType<typeof openSsoCollections>;

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/** openid-client configurations by provider, discovered once (again when the provider changes). */
export class SsoClients {
  private readonly cache = new Map<string, { updatedAt: number; config: oidc.Configuration }>();

  constructor(readonly collections: SsoCollections) {}

  list(): Promise<SsoProviderDoc[]> {
    return this.collections.providers.find({}, { sort: { name: 1 } });
  }

  async get(slug: string): Promise<{ provider: SsoProviderDoc; config: oidc.Configuration } | null> {
    const provider = await this.collections.providers.findOne({ _id: slug });
    if (!provider) return null;
    const cached = this.cache.get(slug);
    if (cached && cached.updatedAt === provider.updatedAt.getTime())
      return { provider, config: cached.config };
    const issuer = new URL(provider.issuer);
    const config = await oidc.discovery(
      issuer,
      provider.clientId,
      undefined,
      provider.clientSecret ? oidc.ClientSecretPost(provider.clientSecret) : oidc.None(),
      // Plain http only for a provider on this machine (development and tests).
      LOOPBACK.test(issuer.hostname) ? { execute: [oidc.allowInsecureRequests] } : undefined,
    );
    this.cache.set(slug, { updatedAt: provider.updatedAt.getTime(), config });
    return { provider, config };
  }
}
