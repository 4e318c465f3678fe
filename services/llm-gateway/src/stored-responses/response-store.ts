import type { Principal } from '@platform/contracts';
import { type Clock, InvalidInput, NotFound } from '@platform/kernel';
import type { Collection, Store } from '@platform/store';

/**
 * The Responses API's stored responses (decision 0108): each record holds its own input items and its answer,
 * and the ids of the earlier responses of its chain, so that a chain of any length is read in two queries (the
 * response named, then its ancestors by id). A response belongs to its organization and to who made it.
 */

type Json = Record<string, unknown>;

export interface StoredResponseDoc {
  _id: string;
  orgSlug: string;
  /** `ownerOf`: the user, whatever their credential, or the organization API key */
  owner: string;
  /** the Response object as answered, JSON (JSON Schemas and metadata may hold keys with `$` or `.`) */
  response: string;
  /** this request's input items (`inputItems`), JSON */
  input: string;
  /** the earlier responses of the chain, oldest first */
  ancestors: string[];
  /** the bytes of the chain's items, this response's included */
  chainBytes: number;
  createdAt: Date;
  /** removal time: the store's TTL index (`expireAfterSeconds: 0`, decision 0088) */
  expiresAt: Date;
}

/** Whose a stored response is: the organization, and the user (any credential of theirs) or the API key. */
export interface Ownership {
  orgSlug: string;
  owner: string;
}

/** The owner of every response a user makes, whichever of their credentials they use. */
export const userOwner = (userId: string): string => `user:${userId}`;
/** The owner of the responses an organization API key makes (the same form for any other userless credential). */
export const credentialOwner = (kind: string, id: string): string => `${kind}:${id}`;

export const ownerOf = (principal: Principal): string =>
  principal.user.id !== null
    ? userOwner(principal.user.id)
    : credentialOwner(principal.credential.kind, principal.credential.id);

/** Where a new response joins a chain: the responses before it and their bytes. */
export interface ChainLink {
  previousId: string;
  ancestors: string[];
  chainBytes: number;
}

export interface ResponseStoreLimits {
  retentionDays: number;
  /** most responses in one chain */
  maxChain: number;
  /** most bytes of items in one chain */
  maxChainBytes: number;
}

export const responseNotFound = (id: string, message = `No stored response ${id}`) =>
  new NotFound(message, {
    error: 'RESPONSE_NOT_FOUND',
    code: 'RESPONSE_NOT_FOUND',
  });

const chainTooLong = (id: string, message: string, details: Json) =>
  new InvalidInput(message, {
    error: 'RESPONSE_CHAIN_TOO_LONG',
    code: 'RESPONSE_CHAIN_TOO_LONG',
    details: { previous_response_id: id, ...details },
  });

export const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

const DAY_MS = 86_400_000;

export class ResponseStore {
  private readonly records: Collection<StoredResponseDoc>;

  constructor(
    store: Store,
    private readonly clock: Clock,
    readonly limits: ResponseStoreLimits,
  ) {
    this.records = store.collection<StoredResponseDoc>('llm_responses', [
      { fields: { expiresAt: 1 }, expireAfterSeconds: 0 },
      { fields: { orgSlug: 1 } },
      { fields: { owner: 1 } },
    ]);
  }

  private retentionMs(): number {
    return this.limits.retentionDays * DAY_MS;
  }

  /** An owner's live record: expired ones are gone for readers before the TTL sweep removes them. */
  private async live(who: Ownership, id: string): Promise<StoredResponseDoc> {
    const doc = await this.records.findOne({
      _id: id,
      orgSlug: who.orgSlug,
      owner: who.owner,
      expiresAt: { $gt: this.clock.now() },
    });
    if (!doc) throw responseNotFound(id);
    return doc;
  }

  /**
   * The items a response continuing `id` comes after (every input and output item of the chain, oldest first) and
   * its place in the chain. 404 when `id` or any response before it is not the caller's live record; 400 when the
   * chain would pass its bounds, checked on the named record alone before the rest is read.
   */
  async chain(who: Ownership, id: string, addedBytes: number): Promise<{ items: Json[]; link: ChainLink }> {
    const previous = await this.live(who, id);
    const length = previous.ancestors.length + 2;
    if (length > this.limits.maxChain)
      throw chainTooLong(
        id,
        `A chain holds at most ${this.limits.maxChain} responses: send the conversation afresh (without previous_response_id)`,
        { limit: this.limits.maxChain, responses: length },
      );
    const bytes = previous.chainBytes + addedBytes;
    if (bytes > this.limits.maxChainBytes)
      throw chainTooLong(
        id,
        `A chain holds at most ${this.limits.maxChainBytes} bytes of items: send the conversation afresh (without previous_response_id)`,
        { limit_bytes: this.limits.maxChainBytes, bytes },
      );
    const earlier =
      previous.ancestors.length === 0
        ? []
        : await this.records.find({
            _id: { $in: previous.ancestors },
            orgSlug: who.orgSlug,
            owner: who.owner,
            expiresAt: { $gt: this.clock.now() },
          });
    if (earlier.length !== previous.ancestors.length)
      throw responseNotFound(id, `A response before ${id} in its chain was deleted or has expired`);
    const byId = new Map(earlier.map((doc) => [doc._id, doc]));
    const items: Json[] = [];
    for (const doc of [...previous.ancestors.map((a) => byId.get(a)!), previous]) {
      items.push(...(JSON.parse(doc.input) as Json[]));
      items.push(...((JSON.parse(doc.response) as { output: Json[] }).output ?? []));
    }
    return {
      items,
      link: { previousId: id, ancestors: [...previous.ancestors, id], chainBytes: previous.chainBytes },
    };
  }

  /**
   * Keeps a finished response. The chain's earlier responses outlive its last one: each that would go before it is
   * given half a retention more than it (so each is rewritten at most once per half retention).
   */
  async save(
    who: Ownership,
    response: Json & { id: string },
    input: Json[],
    link: ChainLink | null,
  ): Promise<void> {
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + this.retentionMs());
    const inputJson = JSON.stringify(input);
    const ownBytes = Buffer.byteLength(inputJson) + jsonBytes(response.output ?? []);
    const ancestors = link?.ancestors ?? [];
    await Promise.all([
      this.records.insertOne({
        _id: response.id,
        orgSlug: who.orgSlug,
        owner: who.owner,
        response: JSON.stringify(response),
        input: inputJson,
        ancestors,
        chainBytes: (link?.chainBytes ?? 0) + ownBytes,
        createdAt: now,
        expiresAt,
      }),
      ancestors.length === 0
        ? null
        : this.records.updateMany(
            { _id: { $in: ancestors }, orgSlug: who.orgSlug, expiresAt: { $lt: expiresAt } },
            { $set: { expiresAt: new Date(expiresAt.getTime() + this.retentionMs() / 2) } },
          ),
    ]);
  }

  /** The stored Response object, as it was answered. */
  async response(who: Ownership, id: string): Promise<Json> {
    return JSON.parse((await this.live(who, id)).response) as Json;
  }

  /** The input items of the request that made the response, in the order sent. */
  async inputItems(who: Ownership, id: string): Promise<Json[]> {
    return JSON.parse((await this.live(who, id)).input) as Json[];
  }

  /** Deletes the caller's response; 404 when there is none (another's, expired, deleted). */
  async delete(who: Ownership, id: string): Promise<void> {
    const deleted = await this.records.deleteOne({
      _id: id,
      orgSlug: who.orgSlug,
      owner: who.owner,
      expiresAt: { $gt: this.clock.now() },
    });
    if (deleted === 0) throw responseNotFound(id);
  }

  /** An organization was deleted: every response made in it goes. */
  forgetOrganization(orgSlug: string): Promise<number> {
    return this.records.deleteMany({ orgSlug });
  }

  /** A user (or an organization API key) is gone: every response they made goes, in every organization. */
  forgetOwner(owner: string): Promise<number> {
    return this.records.deleteMany({ owner });
  }
}
