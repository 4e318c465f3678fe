import { randomUUID } from 'node:crypto';
import { type Clock, InvalidInput, NotFound } from '@platform/kernel';
import type { Collection, Store } from '@platform/store';
import type { Ownership } from './response-store';

/**
 * OpenAI's conversations (decision 0110): a conversation record (its owner, metadata and counters) and its items
 * in batches, one document per group of items added together (a turn's input and output, an `items.create`).
 * A batch is written in one insert, so a reader sees a turn whole or not at all, and two turns on one
 * conversation never interleave: each takes its place (`position`) from the conversation's counter first.
 */

type Json = Record<string, unknown>;

export interface ConversationDoc {
  _id: string;
  orgSlug: string;
  /** `ownerOf`: the user, whatever their credential, or the organization API key */
  owner: string;
  /** JSON (metadata keys may hold `$` or `.`) */
  metadata: string;
  createdAt: Date;
  /** items held, and their bytes (JSON): the bounds are checked on these before the items are read */
  items: number;
  bytes: number;
  /** the next batch's position */
  batches: number;
  /** removal time: the store's TTL index (`expireAfterSeconds: 0`, decision 0088) */
  expiresAt: Date;
}

export interface ItemBatchDoc {
  /** `{conversation}/{position}` */
  _id: string;
  conversationId: string;
  orgSlug: string;
  owner: string;
  /** order of the batches in their conversation */
  position: number;
  /** the ids of its items, to find an item's batch by index */
  itemIds: string[];
  /** the items, JSON, in the order added */
  items: string;
  bytes: number;
  /** bumped by each change, so that two item deletions in one batch cannot undo each other */
  revision: number;
  /** never before its conversation's: half a retention after it, when written or extended (`extendItems`) */
  expiresAt: Date;
}

export interface ConversationLimits {
  retentionDays: number;
  /** most items in one conversation */
  maxItems: number;
  /** most bytes (JSON) of items in one conversation */
  maxBytes: number;
}

export interface ItemPage {
  data: Json[];
  has_more: boolean;
}

export const conversationNotFound = (id: string) =>
  new NotFound(`No conversation ${id}`, { error: 'CONVERSATION_NOT_FOUND', code: 'CONVERSATION_NOT_FOUND' });

const itemNotFound = (id: string, itemId: string) =>
  new NotFound(`No item ${itemId} in the conversation ${id}`, {
    error: 'CONVERSATION_ITEM_NOT_FOUND',
    code: 'CONVERSATION_ITEM_NOT_FOUND',
  });

const tooLong = (id: string, message: string, details: Json) =>
  new InvalidInput(message, {
    error: 'CONVERSATION_TOO_LONG',
    code: 'CONVERSATION_TOO_LONG',
    details: { conversation: id, ...details },
  });

const duplicateItems = (field: string, ids: string[]) =>
  new InvalidInput(`Duplicate item ids: ${ids.join(', ')}: remove them from ${field} and try again`, {
    error: 'INVALID_BODY',
    code: 'INVALID_BODY',
    details: {
      issues: ids.map((id) => ({
        field,
        message: `${id} is already an item of the conversation, or comes twice`,
      })),
    },
  });

const afterNotFound = (after: string) =>
  new InvalidInput(`No item ${after} in this conversation`, {
    code: 'INVALID_BODY',
    details: { issues: [{ field: 'after', message: 'is not an item of this conversation' }] },
  });

const itemBytes = (items: readonly Json[]): number =>
  items.reduce((sum, item) => sum + Buffer.byteLength(JSON.stringify(item)), 0);

const idsOf = (items: readonly Json[]): string[] => items.map((item) => String(item.id));

const DAY_MS = 86_400_000;
/** attempts at rewriting a batch another request changed meanwhile (two deletions in one batch at once) */
const REWRITE_ATTEMPTS = 5;

export const newConversationId = (): string => `conv_${randomUUID().replaceAll('-', '')}`;

export class ConversationStore {
  private readonly conversations: Collection<ConversationDoc>;
  private readonly batches: Collection<ItemBatchDoc>;

  constructor(
    store: Store,
    private readonly clock: Clock,
    readonly limits: ConversationLimits,
  ) {
    this.conversations = store.collection<ConversationDoc>('llm_conversations', [
      { fields: { expiresAt: 1 }, expireAfterSeconds: 0 },
      { fields: { orgSlug: 1 } },
      { fields: { owner: 1 } },
    ]);
    this.batches = store.collection<ItemBatchDoc>('llm_conversation_items', [
      { fields: { expiresAt: 1 }, expireAfterSeconds: 0 },
      { fields: { conversationId: 1, position: 1 } },
      { fields: { conversationId: 1, itemIds: 1 } },
      { fields: { orgSlug: 1 } },
      { fields: { owner: 1 } },
    ]);
  }

  private expiry(): Date {
    return new Date(this.clock.now().getTime() + this.limits.retentionDays * DAY_MS);
  }

  /**
   * The removal of a batch of a conversation removed at `expiresAt`: half a retention later, so that a batch is
   * rewritten at most once per half retention and never goes before its conversation (after it, nobody reads it).
   */
  private itemsExpiry(expiresAt: Date): Date {
    return new Date(expiresAt.getTime() + (this.limits.retentionDays * DAY_MS) / 2);
  }

  private ownFilter(who: Ownership, id: string) {
    return { _id: id, orgSlug: who.orgSlug, owner: who.owner, expiresAt: { $gt: this.clock.now() } };
  }

  /** The caller's live conversation: expired ones are gone for readers before the TTL sweep removes them. */
  private async live(who: Ownership, id: string): Promise<ConversationDoc> {
    const doc = await this.conversations.findOne(this.ownFilter(who, id));
    if (!doc) throw conversationNotFound(id);
    return doc;
  }

  /** 400 when `count` more items of `bytes` would pass the conversation's bounds. */
  private checkBounds(
    doc: Pick<ConversationDoc, '_id' | 'items' | 'bytes'>,
    count: number,
    bytes: number,
  ): void {
    const { maxItems, maxBytes } = this.limits;
    if (doc.items + count > maxItems)
      throw tooLong(
        doc._id,
        `A conversation holds at most ${maxItems} items: delete some, or start another`,
        {
          limit: maxItems,
          items: doc.items + count,
        },
      );
    if (doc.bytes + bytes > maxBytes)
      throw tooLong(
        doc._id,
        `A conversation holds at most ${maxBytes} bytes of items: delete some, or start another`,
        { limit_bytes: maxBytes, bytes: doc.bytes + bytes },
      );
  }

  /** The batch of `items` at `position`, as stored. */
  private batch(
    who: Ownership,
    id: string,
    position: number,
    items: readonly Json[],
    expiresAt: Date,
  ): ItemBatchDoc {
    return {
      _id: `${id}/${position}`,
      conversationId: id,
      orgSlug: who.orgSlug,
      owner: who.owner,
      position,
      itemIds: idsOf(items),
      items: JSON.stringify(items),
      bytes: itemBytes(items),
      revision: 0,
      expiresAt,
    };
  }

  /** A new conversation, with its first items (checked, with their ids) as one batch. */
  async create(who: Ownership, metadata: Record<string, string>, items: readonly Json[]): Promise<Json> {
    refuseRepeatedIds('items', [], items);
    const id = newConversationId();
    const now = this.clock.now();
    const expiresAt = this.expiry();
    const bytes = itemBytes(items);
    this.checkBounds({ _id: id, items: 0, bytes: 0 }, items.length, bytes);
    // the items first: until the conversation is written nobody can read them, and unclaimed they expire
    if (items.length > 0)
      await this.batches.insertOne(this.batch(who, id, 0, items, this.itemsExpiry(expiresAt)));
    const doc: ConversationDoc = {
      _id: id,
      orgSlug: who.orgSlug,
      owner: who.owner,
      metadata: JSON.stringify(metadata),
      createdAt: now,
      items: items.length,
      bytes,
      batches: items.length > 0 ? 1 : 0,
      expiresAt,
    };
    await this.conversations.insertOne(doc);
    return conversationObject(doc);
  }

  /** The conversation object: `{id, object, created_at, metadata}`. */
  async get(who: Ownership, id: string): Promise<Json> {
    return conversationObject(await this.live(who, id));
  }

  /** Replaces its metadata (OpenAI's update); a change is a use: the retention starts again. */
  async update(who: Ownership, id: string, metadata: Record<string, string>): Promise<Json> {
    const doc = await this.conversations.findOneAndUpdate(this.ownFilter(who, id), {
      $set: { metadata: JSON.stringify(metadata), expiresAt: this.expiry() },
    });
    if (!doc) throw conversationNotFound(id);
    await this.extendItems(id, doc.expiresAt);
    return conversationObject(doc);
  }

  /** Deletes the conversation and its items (the responses made in it stay, as their own records). */
  async delete(who: Ownership, id: string): Promise<void> {
    const deleted = await this.conversations.deleteOne(this.ownFilter(who, id));
    if (deleted === 0) throw conversationNotFound(id);
    await this.batches.deleteMany({ conversationId: id, orgSlug: who.orgSlug });
  }

  /**
   * Every item, oldest first, for a response in the conversation that adds `adding` (its input): 404 when it is
   * not the caller's; 400 when the input would pass its bounds, checked on the conversation record alone before
   * the items are read.
   */
  async history(who: Ownership, id: string, adding: { count: number; bytes: number }): Promise<Json[]> {
    const doc = await this.live(who, id);
    this.checkBounds(doc, adding.count, adding.bytes);
    const batches = await this.batches.find(
      { conversationId: id, orgSlug: who.orgSlug },
      { sort: { position: 1 } },
    );
    return batches.flatMap((b) => JSON.parse(b.items) as Json[]);
  }

  /**
   * `items.create`: the items (with their ids) added as one batch, within the bounds. An id already in the
   * conversation is refused (OpenAI's "Duplicate item found").
   */
  async add(who: Ownership, id: string, items: readonly Json[]): Promise<Json[]> {
    refuseRepeatedIds('items', [], items);
    const ids = idsOf(items);
    const taken = await this.batches.find({
      conversationId: id,
      orgSlug: who.orgSlug,
      itemIds: { $in: ids },
    });
    if (taken.length > 0) {
      await this.live(who, id); // another's conversation is a 404, not a list of its ids
      const known = new Set(taken.flatMap((b) => b.itemIds));
      throw duplicateItems(
        'items',
        ids.filter((i) => known.has(i)),
      );
    }
    const bytes = itemBytes(items);
    const { maxItems, maxBytes } = this.limits;
    // the bounds are part of the update's filter: two additions at once cannot both pass them
    const doc = await this.reserve(who, id, items.length, bytes, {
      items: { $lte: maxItems - items.length },
      bytes: { $lte: maxBytes - bytes },
    });
    if (!doc) {
      this.checkBounds(await this.live(who, id), items.length, bytes);
      throw conversationNotFound(id); // expired or deleted between the two reads
    }
    if (!(await this.write(who, id, doc, items, bytes))) throw conversationNotFound(id);
    return [...items];
  }

  /**
   * A finished response's turn (its input items, then its output items), appended as one batch. The bounds were
   * checked before the provider was called: a turn is never lost to them (the conversation may pass them by the
   * turn's output, or by two turns made at once). False when the conversation is gone.
   */
  async appendTurn(who: Ownership, id: string, items: readonly Json[]): Promise<boolean> {
    // a batch holds at least one item (the lists count on it); a turn always has its input
    if (items.length === 0) return (await this.conversations.findOne(this.ownFilter(who, id))) !== null;
    const bytes = itemBytes(items);
    const doc = await this.reserve(who, id, items.length, bytes, {});
    if (!doc) return false;
    return this.write(who, id, doc, items, bytes);
  }

  /** Takes the next position and counts the items in, atomically; null when no live conversation matches. */
  private reserve(who: Ownership, id: string, count: number, bytes: number, bounds: Json) {
    return this.conversations.findOneAndUpdate(
      { ...this.ownFilter(who, id), ...bounds },
      { $inc: { batches: 1, items: count, bytes }, $set: { expiresAt: this.expiry() } },
    );
  }

  /**
   * Writes the batch at the reserved position; a failed write gives the counted items back. False when the
   * conversation was deleted meanwhile: the batch goes too (the deletion removes the batches it finds first, so one
   * written after it would be left, unreadable, holding what was to be deleted).
   */
  private async write(
    who: Ownership,
    id: string,
    doc: ConversationDoc,
    items: readonly Json[],
    bytes: number,
  ): Promise<boolean> {
    const batch = this.batch(who, id, doc.batches - 1, items, this.itemsExpiry(doc.expiresAt));
    try {
      await this.batches.insertOne(batch);
    } catch (err) {
      await this.conversations
        .updateOne({ _id: id }, { $inc: { items: -items.length, bytes: -bytes } })
        .catch(() => undefined);
      throw err;
    }
    if (!(await this.conversations.findOne({ _id: id }))) {
      await this.batches.deleteOne({ _id: batch._id });
      return false;
    }
    await this.extendItems(id, doc.expiresAt);
    return true;
  }

  /**
   * The items live as long as their conversation (`expiresAt`, just extended): the batches it would outlive are
   * given half a retention more than it (one `updateMany` matching nothing most of the time; each batch is rewritten
   * at most once per half retention). Given only the conversation's removal when their own was less than half a
   * retention away, they would go first, by up to half a retention, were the conversation not changed again.
   */
  private async extendItems(id: string, expiresAt: Date): Promise<void> {
    await this.batches.updateMany(
      { conversationId: id, expiresAt: { $lt: expiresAt } },
      { $set: { expiresAt: this.itemsExpiry(expiresAt) } },
    );
  }

  /**
   * A page of OpenAI's cursor list: `limit` items after the item `after` (400 when it is not one), in `order`.
   * Reads at most `limit + 2` batches: each holds at least one item.
   */
  async list(
    who: Ownership,
    id: string,
    query: { limit: number; order: 'asc' | 'desc'; after?: string },
  ): Promise<ItemPage> {
    await this.live(who, id);
    const mine = { conversationId: id, orgSlug: who.orgSlug };
    const asc = query.order === 'asc';
    let from: ItemBatchDoc | null = null;
    if (query.after !== undefined) {
      from = await this.batches.findOne({ ...mine, itemIds: query.after });
      if (!from) throw afterNotFound(query.after);
    }
    const range = from ? { position: asc ? { $gte: from.position } : { $lte: from.position } } : {};
    const batches = await this.batches.find(
      { ...mine, ...range },
      { sort: { position: asc ? 1 : -1 }, limit: query.limit + 2 },
    );
    let items = batches.flatMap((b) => {
      const inBatch = JSON.parse(b.items) as Json[];
      return asc ? inBatch : inBatch.reverse();
    });
    if (query.after !== undefined)
      items = items.slice(items.findIndex((item) => item.id === query.after) + 1);
    return { data: items.slice(0, query.limit), has_more: items.length > query.limit };
  }

  /** One item, as stored. */
  async item(who: Ownership, id: string, itemId: string): Promise<Json> {
    await this.live(who, id);
    const batch = await this.batches.findOne({ conversationId: id, orgSlug: who.orgSlug, itemIds: itemId });
    const item = batch ? (JSON.parse(batch.items) as Json[]).find((i) => i.id === itemId) : undefined;
    if (!item) throw itemNotFound(id, itemId);
    return item;
  }

  /** Deletes one item; answers the conversation (OpenAI's answer). A batch left empty goes. */
  async deleteItem(who: Ownership, id: string, itemId: string): Promise<Json> {
    await this.live(who, id);
    for (let attempt = 0; attempt < REWRITE_ATTEMPTS; attempt++) {
      const batch = await this.batches.findOne({ conversationId: id, orgSlug: who.orgSlug, itemIds: itemId });
      if (!batch) throw itemNotFound(id, itemId);
      const items = JSON.parse(batch.items) as Json[];
      const kept = items.filter((i) => i.id !== itemId);
      const removedBytes = batch.bytes - itemBytes(kept);
      const rewritten =
        kept.length === 0
          ? await this.batches.deleteOne({ _id: batch._id, revision: batch.revision })
          : (
              await this.batches.updateOne(
                { _id: batch._id, revision: batch.revision },
                {
                  $set: {
                    items: JSON.stringify(kept),
                    itemIds: idsOf(kept),
                    bytes: batch.bytes - removedBytes,
                  },
                  $inc: { revision: 1 },
                },
              )
            ).modified;
      if (rewritten === 0) continue; // another change to this batch came first: read it again
      const doc = await this.conversations.findOneAndUpdate(
        { _id: id },
        {
          $inc: { items: -(items.length - kept.length), bytes: -removedBytes },
          $set: { expiresAt: this.expiry() },
        },
      );
      if (!doc) throw conversationNotFound(id);
      await this.extendItems(id, doc.expiresAt);
      return conversationObject(doc);
    }
    throw itemNotFound(id, itemId);
  }

  /**
   * An organization was deleted: its conversations go, then their items (in that order, as `delete`: a batch
   * written meanwhile either is found here or finds its conversation gone).
   */
  async forgetOrganization(orgSlug: string): Promise<number> {
    const conversations = await this.conversations.deleteMany({ orgSlug });
    await this.batches.deleteMany({ orgSlug });
    return conversations;
  }

  /** A user (or an organization API key) is gone: their conversations go, in every organization, then their items. */
  async forgetOwner(owner: string): Promise<number> {
    const conversations = await this.conversations.deleteMany({ owner });
    await this.batches.deleteMany({ owner });
    return conversations;
  }
}

function conversationObject(doc: ConversationDoc): Json {
  return {
    id: doc._id,
    object: 'conversation',
    created_at: Math.floor(doc.createdAt.getTime() / 1000),
    metadata: JSON.parse(doc.metadata) as Json,
  };
}

/**
 * 400 when an item of `items` has the id of one of `earlier` (the conversation's) or of another of `items`: an
 * item's id names one item of its conversation (`items.retrieve`, `.delete`).
 */
export function refuseRepeatedIds(field: string, earlier: readonly Json[], items: readonly Json[]): void {
  const seen = new Set(idsOf(earlier));
  const repeated = new Set<string>();
  for (const id of idsOf(items)) {
    if (seen.has(id)) repeated.add(id);
    seen.add(id);
  }
  if (repeated.size > 0) throw duplicateItems(field, [...repeated]);
}
