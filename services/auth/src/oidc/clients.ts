import { randomUUID } from 'node:crypto';
import { Conflict } from '@platform/kernel';
import {
  type Collection,
  DuplicateKeyError,
  type Revised,
  type Store,
  updateWithRevision,
} from '@platform/store';
import { AtRestCipher, isSealed } from '../domain/at-rest-cipher';
import { pageOrigin } from './cors';

/**
 * A registered relying party. `_id` is its client_id; `metadata` is what oidc-provider reads; `revision` changes at
 * every write, so that a registration computed from what it read is written only over that (`OidcClients.save`).
 */
export interface OidcClientDoc extends Revised {
  metadata: {
    client_id: string;
    client_name?: string;
    /** sealed at rest (`enc:v1:...`, see OidcClients); plain text in documents an earlier version wrote */
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

export interface ClientRegistration {
  clientId: string;
  name?: string;
  redirectUris: string[];
  postLogoutRedirectUris?: string[];
  /**
   * a hash is never enough here: oidc-provider compares the secret itself (client_secret_post); so it is
   * sealed at rest instead, as private signing keys are
   */
  clientSecret?: string;
  firstParty?: boolean;
}

/**
 * A confidential client's secret sealed under another at-rest secret (a lost signing-keys.secret, a database restored
 * beside another secret): nothing opens it, and only registering the client again mends it. `client` is the client
 * without its secret.
 */
export class UnreadableClientSecret extends Error {
  constructor(readonly client: OidcClientDoc) {
    super(
      `the secret of OIDC client ${client._id} was sealed under another SIGNING_KEYS_ENCRYPTION_KEY: it cannot be opened (register it again: pnpm platform oidc-client add ${client._id} --confidential)`,
    );
    this.name = 'UnreadableClientSecret';
  }
}

/**
 * How long the origins a preflight is judged by are kept: a client registered through another instance of auth (or
 * written to the store by hand) is seen by this one within it; one registered through this instance at once.
 */
export const REGISTERED_ORIGINS_MS = 5_000;

/** the origins of the pages a client's redirect URIs lead to */
const pageOrigins = (doc: OidcClientDoc) =>
  doc.metadata.redirect_uris.flatMap((uri) => pageOrigin(uri) ?? []);

/**
 * The registered relying parties. A confidential client's secret is sealed (AES-256-GCM under auth's at-rest
 * secret, the one private signing keys are sealed with, for another purpose) on every write and opened on every
 * read, so a dump of the store hands out no client secret. Documents an earlier version wrote with the secret in
 * plain text are read as they are, and sealed at start (`sealPlainSecrets`).
 */
export class OidcClients {
  private readonly collection: Collection<OidcClientDoc>;
  private readonly cipher: AtRestCipher;
  /** the origins of every client's redirect URIs (`someRedirectTo`), as read at `readAt` (performance.now) */
  private origins: { readAt: number; read: Promise<Set<string>> } | null = null;

  /** `atRestSecret`: the secret private signing keys are sealed with (decision 0033) */
  constructor(store: Store, atRestSecret: string) {
    this.collection = store.collection<OidcClientDoc>('oidc_clients');
    this.cipher = new AtRestCipher(atRestSecret, 'platform-auth-oidc-client-secrets');
  }

  /** A client as oidc-provider and the operator routes read it: its secret in plain text. */
  async find(clientId: string): Promise<OidcClientDoc | null> {
    const doc = await this.collection.findOne({ _id: clientId });
    return doc && this.opened(doc);
  }

  /**
   * Whether some client registered a redirect URI on `origin`: what a cross-origin request that names no client yet
   * (a CORS preflight, a refused userinfo request) is judged by. Anyone may send those, as fast as they like: the
   * origins are read once per REGISTERED_ORIGINS_MS, not every client at every request.
   */
  async someRedirectTo(origin: string): Promise<boolean> {
    const now = performance.now();
    let kept = this.origins;
    if (!kept || now - kept.readAt >= REGISTERED_ORIGINS_MS) {
      const read = this.collection.find({}).then((docs) => new Set(docs.flatMap(pageOrigins)));
      const fresh = { readAt: now, read };
      kept = this.origins = fresh;
      // a failed read is not kept: the next request reads again
      read.catch(() => {
        if (this.origins === fresh) this.origins = null;
      });
    }
    return (await kept.read).has(origin);
  }

  /** Creates or replaces a client's metadata, whatever is stored; answers it as `find` does. */
  async register(r: ClientRegistration, now: Date): Promise<OidcClientDoc> {
    const saved = await this.collection.findOneAndUpdate(
      { _id: r.clientId },
      { $set: this.written(r, now), $setOnInsert: { createdAt: now } },
      { upsert: true },
    );
    this.origins = null;
    return this.opened(saved!);
  }

  /**
   * Registers client `clientId` from what is stored: `registration` gets the client opened (one whose secret no longer
   * opens, without it), or null for a new one, and may throw to refuse. Written only over the version it was given, else
   * it runs again on the client as it now is: two registrations at once never undo each other's changes, nor make two
   * clients. Answers the client it was given (null: created) and the one written, as `find` does.
   */
  async save(
    clientId: string,
    now: Date,
    registration: (existing: OidcClientDoc | null) => ClientRegistration,
  ): Promise<{ before: OidcClientDoc | null; after: OidcClientDoc }> {
    // a miss is a registration that went in meanwhile: the next attempt reads it
    for (let attempt = 0; attempt < 3; attempt++) {
      let before: OidcClientDoc | null = null;
      const updated = await updateWithRevision(this.collection, { _id: clientId }, (current) => {
        before = this.openedOrWithout(current);
        return { $set: this.written(registration(before), now) };
      });
      if (updated) {
        this.origins = null;
        return { before, after: this.opened(updated.after) };
      }
      const doc: OidcClientDoc = {
        _id: clientId,
        ...this.written(registration(null), now),
        createdAt: now,
        revision: randomUUID(),
      };
      try {
        await this.collection.insertOne(doc);
        this.origins = null;
        return { before: null, after: this.opened(doc) };
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
    }
    throw new Conflict(`OIDC client ${clientId} was changed by other requests meanwhile; try again`, {
      error: 'ConcurrentUpdate',
      retryable: true,
    });
  }

  private written(r: ClientRegistration, now: Date) {
    const metadata: OidcClientDoc['metadata'] = {
      client_id: r.clientId,
      ...(r.name ? { client_name: r.name } : {}),
      redirect_uris: r.redirectUris,
      post_logout_redirect_uris: r.postLogoutRedirectUris ?? [],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: r.clientSecret ? 'client_secret_post' : 'none',
      ...(r.clientSecret ? { client_secret: this.cipher.seal(r.clientSecret) } : {}),
      scope: 'openid email profile offline_access',
    };
    // a fresh revision: a registration computed from the client before this write no longer passes for current
    return { metadata, firstParty: r.firstParty ?? false, updatedAt: now, revision: randomUUID() };
  }

  /** Seals the secrets an earlier version stored in plain text (idempotent); answers how many. */
  async sealPlainSecrets(): Promise<number> {
    let sealed = 0;
    for (const doc of await this.collection.find({ 'metadata.client_secret': { $exists: true } })) {
      const secret = doc.metadata.client_secret!;
      if (isSealed(secret)) continue;
      // only if it is still that plain secret: a registration meanwhile wrote its own, sealed
      const done = await this.collection.updateOne(
        { _id: doc._id, 'metadata.client_secret': secret },
        { $set: { 'metadata.client_secret': this.cipher.seal(secret) } },
      );
      sealed += done.modified;
    }
    return sealed;
  }

  /** a secret sealed under a lost at-rest secret: the client without it (registering it again makes a new one) */
  private openedOrWithout(doc: OidcClientDoc): OidcClientDoc {
    try {
      return this.opened(doc);
    } catch (err) {
      if (err instanceof UnreadableClientSecret) return err.client;
      throw err;
    }
  }

  private opened(doc: OidcClientDoc): OidcClientDoc {
    const secret = doc.metadata.client_secret;
    if (!secret || !isSealed(secret)) return doc;
    let plain: string;
    try {
      plain = this.cipher.open(secret);
    } catch {
      const { client_secret: _, ...metadata } = doc.metadata;
      throw new UnreadableClientSecret({ ...doc, metadata });
    }
    return { ...doc, metadata: { ...doc.metadata, client_secret: plain } };
  }
}
