import { randomUUID } from 'node:crypto';
import { Conflict, InvalidInput } from '@platform/kernel';
import { type Doc, DuplicateKeyError, type Revised, type Store, updateWithRevision } from '@platform/store';
import * as oidc from 'openid-client';
import { AtRestCipher, isSealed } from '../domain/at-rest-cipher';

/**
 * An external OpenID Connect identity provider people may sign in with. `_id` is its slug; `revision` changes at every
 * `save`, which writes only over the version it read.
 */
export interface SsoProviderDoc extends Revised {
  name: string;
  issuer: string;
  clientId: string;
  /** sealed at rest (`enc:v1:...`, see SsoClients); plain text in documents an earlier version wrote */
  clientSecret: string | null;
  /** a company's provider: its users become members of this organization (null: the platform's) */
  orgSlug: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A provider as the pages and the sign-in see it: never its secret. */
export type SsoProvider = Omit<SsoProviderDoc, 'clientSecret'>;

/**
 * What an operator names a provider with (`pnpm platform sso add`); the secret in plain text, null for none; the
 * organization, null for the platform's. Either left out keeps the stored one (none for a new provider).
 */
export type SsoProviderSettings = Pick<SsoProviderDoc, 'name' | 'issuer' | 'clientId'> & {
  clientSecret?: string | null;
  orgSlug?: string | null;
};

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

const withoutSecret = ({ clientSecret: _, ...provider }: SsoProviderDoc): SsoProvider => provider;

/**
 * The external identity providers, with their openid-client configurations discovered once (again when the
 * provider changes). A provider's client secret is sealed (AES-256-GCM under auth's at-rest secret, the one
 * private signing keys and OIDC clients' secrets are sealed with, for another purpose) on every write and opened
 * only to discover its configuration, so a dump of the store hands out no secret and no page or answer holds one.
 * Documents an earlier version wrote with the secret in plain text are read as they are, and sealed at start
 * (`sealPlainSecrets`). Providers are written only here (`save`).
 */
export class SsoClients {
  private readonly cache = new Map<string, { updatedAt: number; config: oidc.Configuration }>();
  private readonly cipher: AtRestCipher;

  /** `atRestSecret`: the secret private signing keys are sealed with (decision 0033) */
  constructor(
    readonly collections: SsoCollections,
    atRestSecret: string,
  ) {
    this.cipher = new AtRestCipher(atRestSecret, 'platform-auth-sso-client-secrets');
  }

  async list(): Promise<SsoProvider[]> {
    return (await this.collections.providers.find({}, { sort: { name: 1 } })).map(withoutSecret);
  }

  async get(slug: string): Promise<{ provider: SsoProvider; config: oidc.Configuration } | null> {
    const doc = await this.collections.providers.findOne({ _id: slug });
    if (!doc) return null;
    const provider = withoutSecret(doc);
    const cached = this.cache.get(slug);
    if (cached && cached.updatedAt === doc.updatedAt.getTime()) return { provider, config: cached.config };
    const issuer = new URL(doc.issuer);
    const secret = this.opened(doc);
    const config = await oidc.discovery(
      issuer,
      doc.clientId,
      undefined,
      secret ? oidc.ClientSecretPost(secret) : oidc.None(),
      // Plain http only for a provider on this machine (development and tests).
      LOOPBACK.test(issuer.hostname) ? { execute: [oidc.allowInsecureRequests] } : undefined,
    );
    this.cache.set(slug, { updatedAt: doc.updatedAt.getTime(), config });
    return { provider, config };
  }

  /**
   * Names a provider or changes it, its secret sealed (without a secret or an organization in `settings`, the stored
   * one is kept); the same settings again write nothing (the stored secret compared opened: it is sealed afresh, with
   * a new IV, at every write). Answers too whether a secret is stored now, and the provider's organization. A stored
   * secret is kept only for the same issuer and client id, and only if it opens: else leaving it out is bad input.
   * Another issuer unlinks the provider's external identities.
   */
  async save(
    slug: string,
    settings: SsoProviderSettings,
    now: Date,
  ): Promise<{ result: 'created' | 'updated' | 'exists'; hasClientSecret: boolean; orgSlug: string | null }> {
    const { clientSecret, orgSlug, ...rest } = settings;
    const secret =
      clientSecret === undefined
        ? {}
        : { clientSecret: clientSecret === null ? null : this.cipher.seal(clientSecret) };
    // Written only over the provider as read (another operator's change meanwhile: read again and checked again), so a
    // secret kept for one issuer is never written beside another's, nor a secret given meanwhile dropped.
    for (let attempt = 0; attempt < 3; attempt++) {
      let same = false;
      const updated = await updateWithRevision(this.collections.providers, { _id: slug }, (existing) => {
        if (clientSecret === undefined && existing.clientSecret) this.assertKeepable(existing, rest);
        same = this.same(existing, settings);
        if (same) return null;
        return {
          $set: { ...rest, ...secret, ...(orgSlug === undefined ? {} : { orgSlug }), updatedAt: now },
        };
      });
      if (updated) {
        const { before, after } = updated;
        // a `sub` is unique at its issuer only (OpenID Connect Core 5.7): the old issuer's links would sign the new
        // one's people in as someone else; they are linked again by their verified email
        if (before.issuer !== after.issuer) await this.collections.identities.deleteMany({ provider: slug });
        const stored = { hasClientSecret: Boolean(after.clientSecret), orgSlug: after.orgSlug };
        return { result: same ? 'exists' : 'updated', ...stored };
      }
      const doc: SsoProviderDoc = {
        _id: slug,
        ...rest,
        clientSecret: null,
        orgSlug: orgSlug ?? null,
        ...secret,
        createdAt: now,
        updatedAt: now,
        revision: randomUUID(),
      };
      try {
        await this.collections.providers.insertOne(doc);
        return { result: 'created', hasClientSecret: doc.clientSecret !== null, orgSlug: doc.orgSlug };
      } catch (err) {
        // named by another operator meanwhile: the next attempt reads it
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
    }
    throw new Conflict(`SSO provider ${slug} was changed by other requests meanwhile; try again`, {
      error: 'ConcurrentUpdate',
      retryable: true,
    });
  }

  /** Seals the secrets an earlier version stored in plain text (idempotent); answers how many. */
  async sealPlainSecrets(): Promise<number> {
    let sealed = 0;
    for (const doc of await this.collections.providers.find({ clientSecret: { $ne: null } })) {
      const secret = doc.clientSecret!;
      if (isSealed(secret)) continue;
      // only if it is still that plain secret: an operator meanwhile wrote their own, sealed. `updatedAt` stays:
      // the secret is the same, so a configuration discovered with it stays right.
      const done = await this.collections.providers.updateOne(
        { _id: doc._id, clientSecret: secret },
        { $set: { clientSecret: this.cipher.seal(secret) } },
      );
      sealed += done.modified;
    }
    return sealed;
  }

  /** Refuses to keep a stored secret that would go to another issuer or client id, or that no longer opens. */
  private assertKeepable(doc: SsoProviderDoc, settings: Pick<SsoProviderDoc, 'issuer' | 'clientId'>): void {
    const giveIt = 'give it (--client-secret), or null for a public client (--no-client-secret)';
    // a secret is the client's at its issuer: kept for another, it would be sent to that one's token endpoint
    if (doc.issuer !== settings.issuer || doc.clientId !== settings.clientId)
      throw new InvalidInput(
        `The provider's issuer or client id changed, and its stored clientSecret is never sent to another: ${giveIt}`,
      );
    try {
      this.opened(doc);
    } catch {
      throw new InvalidInput(
        `The provider's stored clientSecret cannot be opened (sealed under another SIGNING_KEYS_ENCRYPTION_KEY): ${giveIt}`,
      );
    }
  }

  private same(doc: SsoProviderDoc, settings: SsoProviderSettings): boolean {
    const { clientSecret, ...rest } = settings;
    // an organization left out is the stored one
    if (!Object.entries(rest).every(([k, v]) => v === undefined || doc[k as keyof typeof rest] === v))
      return false;
    if (clientSecret === undefined) return true;
    if (doc.clientSecret === null || clientSecret === null) return doc.clientSecret === clientSecret;
    try {
      return this.opened(doc) === clientSecret;
    } catch {
      // sealed under another at-rest secret: naming the provider again is how it is mended
      return false;
    }
  }

  private opened(doc: SsoProviderDoc): string | null {
    const secret = doc.clientSecret;
    if (!secret || !isSealed(secret)) return secret;
    try {
      return this.cipher.open(secret);
    } catch {
      throw new Error(
        `the secret of SSO provider ${doc._id} was sealed under another SIGNING_KEYS_ENCRYPTION_KEY: it cannot be opened (name the provider again with its secret: pnpm platform sso add ... --client-secret-file FILE)`,
      );
    }
  }
}
