import type { Collection, Doc, Store } from '@platform/store';
import type { OrgUserQuotas } from '../domain/user-limits';
import type { WindowKind } from '../domain/windows';

export type QuotaPolicy = 'hard_block' | 'soft_downgrade';

/**
 * Model governance as stored: the downgrade map as pairs, because model ids (`gpt-4.1`, `mock/chat`)
 * may hold dots, which field names in the store cannot.
 */
export interface StoredModelGovernance {
  allowed: string[] | null;
  defaults: { completions?: string; embeddings?: string };
  downgrade: Array<{ from: string; to: string }>;
  /**
   * the models an organization API key may use, by key id (within `allowed`; decision 0118); absent on documents
   * written before it existed (= no key restricted)
   */
  by_api_key?: Record<string, string[]>;
  /** how `model: "auto"` chooses (decision 0120); absent: `auto` is the organization's default */
  routing?: ModelRouting;
}

/** `model: "auto"`: the first matching rule's model, or the cheapest model that can serve the request. */
export interface ModelRouting {
  strategy: 'rules' | 'cost_optimized';
  rules?: RoutingRule[];
}

export interface RoutingRule {
  condition: 'messages_count' | 'prompt_tokens';
  operator: '<' | '<=' | '>' | '>=' | '=';
  threshold: number;
  model: string;
}

/** One organization's quota settings; `_id` is the org slug. */
export interface OrgSettingsDoc extends Doc {
  plan: string;
  policy: QuotaPolicy;
  org_user_quotas: OrgUserQuotas;
  /** model governance; absent on documents written before it existed (= no restriction) */
  models?: StoredModelGovernance;
  createdAt: Date;
  updatedAt: Date;
  /** who changed the settings last: `user:<id>`, `<credential kind>:<credential id>` or `operator` */
  updatedBy: string | null;
  /** replaced at every PATCH, which writes only over the version it read (the store's `updateWithRevision`) */
  revision?: string;
  /**
   * when auth deleted the organization (`auth.org.deleted`): its settings are no longer served, and its usage is
   * kept as it stands; the slug is never given to another organization
   */
  deletedAt?: Date;
}

/** A usage counter for one window: of an organization, or of one user or API key in it. */
export interface CounterDoc extends Doc {
  orgSlug: string;
  userId: string | null;
  /** the organization API key counted here (absent from counters written before keys were counted) */
  apiKeyId?: string | null;
  window: WindowKind;
  start: Date;
  requests: number;
  tokens: number;
  prompt_tokens: number;
  completion_tokens: number;
  /** millionths of the plan currency */
  cost_micros: number;
  /** the latest time of a request counted here */
  lastRequestAt: Date;
  /** when a batch last changed this counter (the "refresh" of a monthly aggregate) */
  refreshedAt: Date;
  /** ids of the batches applied here and not yet cleaned up: what makes re-applying a batch a no-op */
  applied?: Record<string, true>;
  /**
   * real time (ms): an update whose writer's lease ended at or before it changes nothing (a late write of a writer
   * that lost its batch to a recovery, whose marker is gone); raised when such a batch's markers are removed
   */
  fence?: number;
}

/**
 * The claim of an event id; `_id` is the event id, so an event is claimed at most once. Kept
 * LLM_QUOTA_EVENT_ID_RETENTION_HOURS past the later of its `receivedAt` and `occurredAt`: an event dated ahead is
 * accepted again (not too old by its own date) until its `occurredAt` plus the maximum age. Only what the claim
 * and its retention read (decision 0124): on the embedded engine every claim of the last 8 days is in memory. Claims
 * written before it also hold the event's content (organization, user, key, model, tokens, cost), read by nothing.
 */
export interface LedgerDoc extends Doc {
  /**
   * the batch that claimed it: whether the event counts is that batch's state; `counted` (the writer's `COUNTED`)
   * once a batch of this event alone was finished by the writer that made it, which then leaves no tombstone
   */
  batch: string;
  receivedAt: Date;
  /** only when later than `receivedAt` (an event dated ahead); claims written before decision 0124 always hold it */
  occurredAt?: Date;
}

export type BatchState = 'claiming' | 'applying' | 'aborted';

/** One counter increment of a batch, already summed over the batch's events. */
export interface CounterIncrement {
  counterId: string;
  orgSlug: string;
  userId: string | null;
  apiKeyId: string | null;
  window: WindowKind;
  start: Date;
  requests: number;
  tokens: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost_micros: number;
  lastRequestAt: Date;
}

/** A batch being counted (or undone); finished batches leave a FinishedBatchDoc instead. */
export interface BatchDoc extends Doc {
  state: BatchState;
  owner: string;
  /** real time (ms) after which another instance may take the batch over */
  leaseUntil: number;
  /** the lease its writer let go early, after a failure: counter updates of it may still land until then */
  releasedLease?: number;
  /** real time (ms) its writer wrote it (absent on batches written before it was kept) */
  openedAt?: number;
  /** the business time of the batch (the counters' refreshedAt) */
  countedAt: Date;
  events: number;
  /** the increments it applies, once `applying` */
  increments: CounterIncrement[];
  /** the latest `occurredAt` of the events it claimed, once `applying` (absent on batches written before it) */
  latestOccurredAt?: Date;
}

/** The tombstone of a finished batch: its claims are counted. Kept as long as its claims are (and an hour more). */
export interface FinishedBatchDoc extends Doc {
  countedAt: Date;
  /** how many events it counted (only on tombstones written before decision 0124: nothing reads it) */
  events?: number;
  /**
   * the latest `occurredAt` of its events, only when later than `countedAt` (an event dated ahead; absent on
   * tombstones written before it was kept)
   */
  latestOccurredAt?: Date;
}

export interface QuotaCollections {
  settings: Collection<OrgSettingsDoc>;
  counters: Collection<CounterDoc>;
  ledger: Collection<LedgerDoc>;
  batches: Collection<BatchDoc>;
  finishedBatches: Collection<FinishedBatchDoc>;
}

/** The service's collections and their indexes. */
export function quotaCollections(store: Store): QuotaCollections {
  return {
    settings: store.collection<OrgSettingsDoc>('org_quota_settings'),
    // Counter ids start with their window and its start, so retention deletes by _id range: no
    // secondary index (on the embedded engine, a low-cardinality index makes every update slower).
    counters: store.collection<CounterDoc>('usage_counters'),
    ledger: store.collection<LedgerDoc>('usage_ledger', [{ fields: { receivedAt: 1 } }]),
    // Only open batches (a handful at any time): read by scanning, no index to keep up.
    batches: store.collection<BatchDoc>('usage_batches'),
    finishedBatches: store.collection<FinishedBatchDoc>('usage_batches_finished', [
      { fields: { countedAt: 1 } },
    ]),
  };
}
