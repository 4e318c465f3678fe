import type { Collection, Doc, Store } from '@platform/store';

/** A registered relying party. `_id` is its client_id; `metadata` is what oidc-provider reads. */
export interface OidcClientDoc extends Doc {
  metadata: {
    client_id: string;
    client_name?: string;
    client_secret?: string;
    redirect_uris: string[];
    post_logout_redirect_uris?: string[];
    grant_types: string[];
    response_types: string[];
    token_endpoint_auth_method: 'none' | 'client_secret_post';
    scope?: string;
  };
  /** the platform's own pages: no consent screen */
  firstParty: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export const FIRST_PARTY_CLIENT_ID = 'platform-web';

export const openClients = (store: Store): Collection<OidcClientDoc> =>
  store.collection<OidcClientDoc>('oidc_clients');

export interface ClientRegistration {
  clientId: string;
  name?: string;
  redirectUris: string[];
  postLogoutRedirectUris?: string[];
  /** a hash is never enough here: oidc-provider compares the secret itself (client_secret_post) */
  clientSecret?: string;
  firstParty?: boolean;
}

/** Creates or replaces a client's metadata (a confidential client keeps the secret it has). */
export async function registerClient(
  clients: Collection<OidcClientDoc>,
  r: ClientRegistration,
  now: Date,
): Promise<OidcClientDoc> {
  const metadata: OidcClientDoc['metadata'] = {
    client_id: r.clientId,
    ...(r.name ? { client_name: r.name } : {}),
    redirect_uris: r.redirectUris,
    post_logout_redirect_uris: r.postLogoutRedirectUris ?? [],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: r.clientSecret ? 'client_secret_post' : 'none',
    ...(r.clientSecret ? { client_secret: r.clientSecret } : {}),
    scope: 'openid email profile offline_access',
  };
  return (await clients.findOneAndUpdate(
    { _id: r.clientId },
    {
      $set: { metadata, firstParty: r.firstParty ?? false, updatedAt: now },
      $setOnInsert: { createdAt: now },
    },
    { upsert: true },
  ))!;
}
