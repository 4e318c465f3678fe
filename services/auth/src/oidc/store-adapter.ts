import type { Clock } from '@platform/kernel';
import type { Collection, Doc, Store } from '@platform/store';
import type { OidcClientDoc } from './clients';

/** One oidc-provider model instance (a code, token, session, grant, interaction...) in the store. */
export interface OidcModelDoc extends Doc {
  /** `<Model>:<id>` is the `_id`; these fields are its secondary indexes */
  model: string;
  grantId: string | null;
  uid: string | null;
  userCode: string | null;
  payload: Record<string, unknown>;
  /** epoch ms; null: no expiry */
  expiresAt: number | null;
}

type Payload = Record<string, unknown> & {
  grantId?: string;
  uid?: string;
  userCode?: string;
  consumed?: number;
};

/**
 * oidc-provider's storage adapter on the store port (embedded or MongoDB), so codes, refresh tokens,
 * sessions and grants survive restarts and are shared by every auth instance. Never the provider's
 * in-memory development adapter. Expired documents are ignored on read and removed as they are met.
 */
export const openOidcModels = (store: Store): Collection<OidcModelDoc> =>
  store.collection<OidcModelDoc>('oidc_models', [
    { fields: { grantId: 1 } },
    { fields: { uid: 1 } },
    { fields: { userCode: 1 } },
  ]);

/** Deletes a grant and every code and token issued under it. */
export async function deleteGrant(store: Store, grantId: string): Promise<void> {
  const docs = openOidcModels(store);
  await docs.deleteMany({ grantId });
  await docs.deleteOne({ _id: `Grant:${grantId}` });
}

export function storeAdapterFactory(store: Store, clock: Clock, clients: Collection<OidcClientDoc>) {
  const docs = openOidcModels(store);
  const live = (doc: OidcModelDoc | null) =>
    doc && (doc.expiresAt === null || doc.expiresAt > clock.now().getTime()) ? doc.payload : undefined;

  return class StoreAdapter {
    constructor(private readonly model: string) {}

    private key(id: string) {
      return `${this.model}:${id}`;
    }

    async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
      const expiresAt = typeof expiresIn === 'number' ? clock.now().getTime() + expiresIn * 1000 : null;
      await docs.updateOne(
        { _id: this.key(id) },
        {
          $set: {
            model: this.model,
            grantId: payload.grantId ?? null,
            uid: payload.uid ?? null,
            userCode: payload.userCode ?? null,
            payload,
            expiresAt,
          },
        },
        { upsert: true },
      );
    }

    async find(id: string): Promise<Payload | undefined> {
      // Clients are registered by the operator CLI into their own collection.
      if (this.model === 'Client') return (await clients.findOne({ _id: id }))?.metadata;
      return live(await docs.findOne({ _id: this.key(id) }));
    }

    async findByUid(uid: string): Promise<Payload | undefined> {
      return live(await docs.findOne({ model: this.model, uid }));
    }

    async findByUserCode(userCode: string): Promise<Payload | undefined> {
      return live(await docs.findOne({ model: this.model, userCode }));
    }

    async consume(id: string): Promise<void> {
      await docs.updateOne(
        { _id: this.key(id) },
        { $set: { 'payload.consumed': Math.floor(clock.now().getTime() / 1000) } },
      );
    }

    async destroy(id: string): Promise<void> {
      await docs.deleteOne({ _id: this.key(id) });
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await docs.deleteMany({ grantId });
    }
  };
}
