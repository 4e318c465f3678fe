import { NotFound, Unauthenticated } from '@platform/kernel';
import type { AssistantDoc } from '../persistence/collections';
import type { AccountAuth } from './accounts';
import type { LegacyContext } from './context';
import { newId } from './ids';
import { hashToken, newToken, tokenKind } from './tokens';

export interface NewAssistant {
  name: string;
  lang: string;
  languages: string[];
  description: string;
  photo: { url: string } | null;
  satisfactionOption: boolean | null;
}

/** What a developer token may change of its assistant (`PATCH /v1/bots`); absent fields stay. */
export interface AssistantChanges {
  name?: string;
  description?: string;
  photo?: { url: string } | null;
  satisfactionOption?: boolean | null;
  allowedOrigins?: string[];
}

/** Spec 2.11, plus the assistant's `id`. */
export interface AssistantView {
  id: string;
  name: string;
  photo: { url: string } | null;
  developer: string;
  clientToken: string;
  developerToken: string;
  lang: string;
  languages: string[];
  description: string;
  nlu: string;
  satisfactionOption: boolean | null;
  /** addition: web origins allowed to call Messages from a browser (CORS); none by default */
  allowedOrigins: string[];
}

/** Called when an assistant is removed, so derived state (models, timers) can be dropped. */
export type AssistantRemovedListener = (assistantId: string) => void | Promise<void>;

export class Assistants {
  private readonly removedListeners: AssistantRemovedListener[] = [];

  constructor(private readonly ctx: LegacyContext) {}

  onRemoved(listener: AssistantRemovedListener): void {
    this.removedListeners.push(listener);
  }

  async create(auth: AccountAuth, input: NewAssistant): Promise<AssistantView> {
    const now = this.ctx.clock.now();
    const clientToken = newToken('clientToken');
    const developerToken = newToken('developerToken');
    const doc: AssistantDoc = {
      _id: newId(),
      ownerId: auth.account._id,
      developer: auth.account.username,
      ...input,
      allowedOrigins: [],
      clientToken,
      clientTokenHash: hashToken(clientToken),
      developerTokenHash: hashToken(developerToken),
      developerTokenSealed: this.ctx.sealer.seal(developerToken),
      dataRevision: 0,
      intentCount: 0,
      entityCount: 0,
      dataBytes: 0,
      createdAt: now,
      updatedAt: now,
    };
    await this.ctx.cols.assistants.insertOne(doc);
    return this.view(doc, developerToken);
  }

  async listOwned(auth: AccountAuth): Promise<AssistantView[]> {
    const docs = await this.ctx.cols.assistants.find(
      { ownerId: auth.account._id },
      { sort: { createdAt: 1, _id: 1 } },
    );
    return docs.map((doc) => this.view(doc));
  }

  async getOwned(auth: AccountAuth, id: string): Promise<AssistantDoc> {
    const doc = await this.ctx.cols.assistants.findOne({ _id: id, ownerId: auth.account._id });
    if (!doc) throw new NotFound('No such assistant for this account', { error: 'AssistantNotFound' });
    return doc;
  }

  /** Replaces the developer token or the client token; the old one stops working at once. */
  async rotate(
    auth: AccountAuth,
    id: string,
    which: 'developerToken' | 'clientToken',
  ): Promise<AssistantView> {
    const doc = await this.getOwned(auth, id);
    const now = this.ctx.clock.now();
    if (which === 'developerToken') {
      const token = newToken('developerToken');
      const set = {
        developerTokenHash: hashToken(token),
        developerTokenSealed: this.ctx.sealer.seal(token),
        updatedAt: now,
      };
      await this.ctx.cols.assistants.updateOne({ _id: doc._id }, { $set: set });
      return this.view({ ...doc, ...set }, token);
    }
    const token = newToken('clientToken');
    const set = { clientToken: token, clientTokenHash: hashToken(token), updatedAt: now };
    await this.ctx.cols.assistants.updateOne({ _id: doc._id }, { $set: set });
    return this.view({ ...doc, ...set });
  }

  /**
   * Applies a developer token's changes; answers the assistant as it now stands (with what a concurrent change set).
   * One deleted since its token was read is answered as its token now is: 401.
   */
  async update(doc: AssistantDoc, changes: AssistantChanges): Promise<AssistantDoc> {
    const updated = await this.ctx.cols.assistants.findOneAndUpdate(
      { _id: doc._id },
      { $set: { ...changes, updatedAt: this.ctx.clock.now() } },
    );
    if (!updated) throw new Unauthenticated('Unknown developer token');
    return updated;
  }

  /** Whether some assistant lets pages of `origin` call it (answers CORS preflights, which carry no token). */
  async originAllowedByAny(origin: string): Promise<boolean> {
    return (await this.ctx.cols.assistants.findOne({ allowedOrigins: origin })) !== null;
  }

  /** Deletes the assistant with its intents, entities, models and conversations. */
  async remove(auth: AccountAuth, id: string): Promise<{ id: string; deleted: true }> {
    const doc = await this.getOwned(auth, id);
    const { cols } = this.ctx;
    await cols.assistants.deleteOne({ _id: doc._id });
    const models = await cols.models.find({ assistantId: doc._id });
    await Promise.all([
      cols.intents.deleteMany({ assistantId: doc._id }),
      cols.entities.deleteMany({ assistantId: doc._id }),
      ...models.flatMap((m) => (m.blob ? [cols.modelBlobs.delete(m.blob)] : [])),
      cols.conversations.deleteMany({ assistantId: doc._id }),
    ]);
    await cols.models.deleteMany({ assistantId: doc._id });
    for (const listener of this.removedListeners) await listener(doc._id);
    return { id: doc._id, deleted: true };
  }

  /** The assistant a developer token manages; 401 when the token is unknown. */
  async byDeveloperToken(token: string | undefined): Promise<AssistantDoc> {
    if (!token || tokenKind(token) !== 'developerToken')
      throw new Unauthenticated('A developer token is required (Authorization: Bearer <DEVELOPER_TOKEN>)');
    const doc = await this.ctx.cols.assistants.findOne({ developerTokenHash: hashToken(token) });
    if (!doc) throw new Unauthenticated('Unknown developer token');
    return doc;
  }

  /** The assistant a client token calls; 401 when the token is unknown. */
  async byClientToken(token: string | undefined): Promise<AssistantDoc> {
    if (!token || tokenKind(token) !== 'clientToken')
      throw new Unauthenticated('A client token is required (Authorization: Bearer <CLIENT_TOKEN>)');
    const doc = await this.ctx.cols.assistants.findOne({ clientTokenHash: hashToken(token) });
    if (!doc) throw new Unauthenticated('Unknown client token');
    return doc;
  }

  async byId(id: string): Promise<AssistantDoc | null> {
    return this.ctx.cols.assistants.findOne({ _id: id });
  }

  /** Marks a change of intents or entities; the new revision is what models must catch up with. */
  async bumpRevision(id: string): Promise<number> {
    const doc = await this.ctx.cols.assistants.findOneAndUpdate(
      { _id: id },
      { $inc: { dataRevision: 1 }, $set: { updatedAt: this.ctx.clock.now() } },
    );
    return doc?.dataRevision ?? 0;
  }

  view(doc: AssistantDoc, developerToken?: string): AssistantView {
    return {
      id: doc._id,
      name: doc.name,
      photo: doc.photo,
      developer: doc.developer,
      clientToken: doc.clientToken,
      developerToken: developerToken ?? this.ctx.sealer.open(doc.developerTokenSealed) ?? '',
      lang: doc.lang,
      languages: doc.languages,
      description: doc.description,
      nlu: this.ctx.config.LEGACY_NLU_NAME,
      satisfactionOption: doc.satisfactionOption,
      allowedOrigins: doc.allowedOrigins ?? [],
    };
  }
}
