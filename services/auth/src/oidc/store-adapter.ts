import type { Clock, Logger } from '@platform/kernel';
import type { Collection, Doc, Store } from '@platform/store';
import { errors } from 'oidc-provider';
import { type OidcClients, UnreadableClientSecret } from './clients';

/** One oidc-provider model instance (a code, token, session, grant, interaction...) in the store. */
export interface OidcModelDoc extends Doc {
  /** `<Model>:<id>` is the `_id`; these fields are its secondary indexes */
  model: string;
  grantId: string | null;
  uid: string | null;
  userCode: string | null;
  accountId?: string | null;
  /**
   * the model as JSON: its keys are URLs and client ids (`resources`, `authorizations`), which
   * neither engine takes as field names (a dot); earlier versions stored the object itself
   */
  payload: string | Record<string, unknown>;
  /** epoch seconds when a code or refresh token was spent (earlier versions: `payload.consumed`) */
  consumed?: number | null;
  /** null: no expiry (earlier versions: epoch ms, which no TTL index removes) */
  expiresAt: Date | number | null;
}

type Payload = Record<string, unknown> & {
  grantId?: string;
  uid?: string;
  userCode?: string;
  accountId?: string;
  consumed?: number;
};

/**
 * oidc-provider's storage adapter on the store port (embedded or MongoDB), so codes, refresh tokens,
 * sessions and grants survive restarts and are shared by every auth instance. Never the provider's
 * in-memory development adapter. Expired documents are never returned, and the store's TTL sweep
 * removes them (an abandoned interaction, a spent code).
 */
export const openOidcModels = (store: Store): Collection<OidcModelDoc> =>
  store.collection<OidcModelDoc>('oidc_models', [
    { fields: { grantId: 1 } },
    { fields: { uid: 1 } },
    { fields: { userCode: 1 } },
    { fields: { accountId: 1 } },
    { fields: { expiresAt: 1 }, expireAfterSeconds: 0 },
  ]);

/** Deletes a grant and every code and token issued under it. */
export async function deleteGrant(store: Store, grantId: string): Promise<void> {
  const docs = openOidcModels(store);
  await docs.deleteMany({ grantId });
  await docs.deleteOne({ _id: `Grant:${grantId}` });
}

/** Deletes every provider session, grant, code and token of a person (a new password ends them all). */
export async function deleteOidcStateOf(store: Store, accountId: string): Promise<void> {
  await openOidcModels(store).deleteMany({ $or: [{ accountId }, { 'payload.accountId': accountId }] });
}

/** Removes the records of earlier versions whose epoch-ms expiry has passed (no TTL index sees them). */
export async function pruneLegacyExpired(store: Store, clock: Clock): Promise<void> {
  await openOidcModels(store).deleteMany({ expiresAt: { $lt: clock.now().getTime() } });
}

export function storeAdapterFactory(store: Store, clock: Clock, clients: OidcClients, logger: Logger) {
  const docs = openOidcModels(store);
  // A client whose secret opens no more is unknown to the provider (invalid_client), and the operator is told.
  const clientOf = async (id: string) => {
    try {
      return await clients.find(id);
    } catch (err) {
      if (!(err instanceof UnreadableClientSecret)) throw err;
      logger.error({ clientId: id }, err.message);
      return null;
    }
  };
  const live = (doc: OidcModelDoc | null): Payload | undefined => {
    if (!doc) return undefined;
    const expiresAt = doc.expiresAt instanceof Date ? doc.expiresAt.getTime() : doc.expiresAt;
    if (expiresAt !== null && expiresAt <= clock.now().getTime()) return undefined;
    const payload = typeof doc.payload === 'string' ? JSON.parse(doc.payload) : doc.payload;
    return doc.consumed ? { ...payload, consumed: doc.consumed } : payload;
  };

  return class StoreAdapter {
    constructor(private readonly model: string) {}

    private key(id: string) {
      return `${this.model}:${id}`;
    }

    async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
      const expiresAt =
        typeof expiresIn === 'number' ? new Date(clock.now().getTime() + expiresIn * 1000) : null;
      await docs.updateOne(
        { _id: this.key(id) },
        {
          $set: {
            model: this.model,
            grantId: payload.grantId ?? null,
            uid: payload.uid ?? null,
            userCode: payload.userCode ?? null,
            accountId: payload.accountId ?? null,
            payload: JSON.stringify(payload),
            consumed: payload.consumed ?? null,
            expiresAt,
          },
        },
        { upsert: true },
      );
    }

    async find(id: string): Promise<Payload | undefined> {
      // Clients are registered by the operator CLI into their own collection (their secret sealed there).
      if (this.model === 'Client') return (await clientOf(id))?.metadata;
      return live(await docs.findOne({ _id: this.key(id) }));
    }

    async findByUid(uid: string): Promise<Payload | undefined> {
      return live(await docs.findOne({ model: this.model, uid }));
    }

    async findByUserCode(userCode: string): Promise<Payload | undefined> {
      return live(await docs.findOne({ model: this.model, userCode }));
    }

    /**
     * Spends a code or refresh token once: of two requests racing with the same one, the second finds
     * it spent here (the provider's own check reads before it writes) and fails as a reuse would.
     */
    async consume(id: string): Promise<void> {
      const { modified } = await docs.updateOne(
        {
          _id: this.key(id),
          $or: [{ consumed: null }, { consumed: { $exists: false } }],
          'payload.consumed': { $exists: false },
        },
        { $set: { consumed: Math.floor(clock.now().getTime() / 1000) } },
      );
      if (modified === 0) throw new errors.InvalidGrant('grant already used or revoked');
    }

    async destroy(id: string): Promise<void> {
      await docs.deleteOne({ _id: this.key(id) });
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await docs.deleteMany({ grantId });
    }
  };
}
