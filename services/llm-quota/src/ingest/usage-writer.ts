import { randomBytes, randomUUID } from 'node:crypto';
import type { Clock, Logger } from '@platform/kernel';
import { DuplicateKeyError } from '@platform/store';
import type { BatchDoc, CounterIncrement, LedgerDoc, QuotaCollections } from '../data/collections';
import { type CounterScope, counterId, type WindowKind, windowStart } from '../domain/windows';
import type { CountableEvent } from './intake';

/**
 * What became of an event handed to the writer:
 * - `counted`: this batch counts it (it is durably journaled; its counters are written or will be);
 * - `duplicate`: an earlier delivery of the same event id counts it;
 * - `retry`: it cannot be decided now (another batch holds it and has not finished); deliver it again later.
 */
export type Outcome = 'counted' | 'duplicate' | 'retry';

/**
 * What a recovery did with a stuck batch it took over: `finished` (applied), `undone` (its events come again),
 * `failed` (not finished now: tried again once this recovery's lease is past; a counter fenced by an instance whose
 * clock is ahead is one too), `lost_lease` (another instance took it over meanwhile).
 */
export type RecoveryOutcome = 'finished' | 'undone' | 'failed' | 'lost_lease';

export interface UsageWriterOptions {
  collections: QuotaCollections;
  /** business time: the counters' refresh time */
  clock: Clock;
  /** real time for leases between instances (never a manual clock: leases are about live processes) */
  leaseClock: Clock;
  leaseMs: number;
  logger: Logger;
  /** this instance, as the owner of its batches */
  instanceId?: string;
  /** each stuck batch a recovery took over, with what became of it */
  onRecovery?: (outcome: RecoveryOutcome) => void;
}

class LeaseLost extends Error {
  constructor(
    /** the fence of a counter that refused the update while this lease still held: another instance's clock is ahead */
    readonly fencedUntil?: number,
  ) {
    super();
  }
}

interface FinishedMarker {
  /** real time */
  finishedAt: number;
  /**
   * of a batch taken over by a recovery: the latest lease an earlier writer of it held (real time). A counter update
   * of that writer may still be in flight; the marker goes once this time is past, raising the counter's `fence` to
   * it, which turns that update into a no-op.
   */
  fence?: number;
}

/** `sweepMarkers` removes the markers that no update took along once this old. */
const MARKER_SWEEP_AGE_MS = 5_000;

/**
 * The `batch` of a claim whose batch held only it and was finished by the writer that made it: counted, without a
 * tombstone (decision 0124). Never a batch id (those hold a `-`).
 */
export const COUNTED = 'counted';

/**
 * The date of the tombstone named `COUNTED`, the latest a date can hold: no retention ever removes it. A writer of a
 * version before decision 0124's fourth (an instance not upgraded yet, or one rolled back to) reads a claim's batch
 * from the open batches and the tombstones alone: finding neither for `COUNTED`, it took the claim over and counted
 * the event again. This tombstone makes it a duplicate there too.
 */
const COUNTED_TOMBSTONE_DATE = new Date(8.64e15);

/**
 * Counts events exactly once, in batches, on a store whose only atomic unit is one document.
 *
 * 1. An open batch document is written (`claiming`, with a lease).
 * 2. The events are claimed by inserting their ledger documents, whose `_id` is the event id: a
 *    second delivery of an id fails the insert and is recognised as a duplicate.
 * 3. The increments of the claimed events, summed by counter, are stored in the batch as it moves
 *    to `applying`. From then on anyone can finish the batch, so its messages may be acknowledged.
 * 4. Each counter is incremented only if it does not carry the batch's marker yet, and the marker is
 *    set in the same atomic update: applying a batch twice (a retry, a crash, another instance
 *    recovering it) changes nothing the second time. The update also requires the counter's `fence` to be
 *    earlier than the writer's lease: an update that lands after its writer's lease ended and after the marker it
 *    would have found was removed changes nothing either.
 * 5. A tombstone records the batch as done (what later duplicates are checked against; a batch of one
 *    event its own writer finishes is recorded on the event's claim instead, as `COUNTED`), the open
 *    batch is deleted by the writer holding it (a writer that lost it to a recovery leaves it to the
 *    recovery), and the markers are removed later, with other updates of the same counters.
 *    A batch its own writer finished before anyone took it over was applied by no one else: no other
 *    write of it can arrive, so its markers go with the very next update (a counter updated by every
 *    batch carries one or two markers, not one per batch of the last seconds). A batch a recovery
 *    finished may still have updates of its earlier writers in flight: its markers go once their leases
 *    are past, and raise the counter's `fence` to the latest of them.
 * A batch whose lease ran out is taken over by the recovery sweep: `claiming` becomes `aborted` (its
 * messages, never acknowledged, come again and take its claims over), `applying` is finished.
 */
export class UsageWriter {
  readonly instanceId: string;
  private readonly c: QuotaCollections;
  /**
   * Markers of batches this instance finished, by counter, with the (real) time they finished and,
   * for a batch taken over, the fence its removal sets. They are removed by the next update of the same
   * counter (no extra write): at once if the batch never left its writer, else once its fence is past.
   * `sweepMarkers` removes those MARKER_SWEEP_AGE_MS old that no update took along. Lost on a crash: a
   * leftover marker costs a few bytes, never a wrong count.
   */
  private readonly staleMarkers = new Map<string, Map<string, FinishedMarker>>();
  /** the tombstone named `COUNTED`, written (or found) before this instance records a first claim `COUNTED` */
  private countedTombstone: Promise<void> | null = null;

  constructor(private readonly options: UsageWriterOptions) {
    this.c = options.collections;
    this.instanceId = options.instanceId ?? randomUUID();
  }

  /** Counts a batch of events with distinct ids. */
  async apply(events: CountableEvent[]): Promise<Map<string, Outcome>> {
    const outcomes = new Map<string, Outcome>();
    if (events.length === 0) return outcomes;
    // Unique without a coordinator (72 random bits within a millisecond), and short: it is in every
    // claim, tombstone and marker.
    const batchId = `${Date.now().toString(36)}-${randomBytes(9).toString('base64url')}`;
    const openedAt = this.now();
    const leaseUntil = openedAt + this.options.leaseMs;
    await this.c.batches.insertOne({
      _id: batchId,
      state: 'claiming',
      owner: this.instanceId,
      leaseUntil,
      openedAt,
      countedAt: this.options.clock.now(),
      events: events.length,
      increments: [],
    });

    let applying: BatchDoc | null = null;
    let claimed: CountableEvent[];
    try {
      claimed = await this.claimAll(events, batchId, outcomes);
      if (claimed.length === 0) {
        await this.c.batches.deleteOne({ _id: batchId, owner: this.instanceId, state: 'claiming' });
        return outcomes;
      }
      if (this.leaseHeld(leaseUntil)) {
        applying = await this.c.batches.findOneAndUpdate(
          { _id: batchId, state: 'claiming', owner: this.instanceId },
          {
            $set: {
              state: 'applying',
              increments: sumIncrements(claimed),
              events: claimed.length,
              latestOccurredAt: latestOccurredAt(claimed),
            },
          },
        );
      }
    } catch (err) {
      await this.releaseLease(batchId, leaseUntil);
      throw err;
    }
    if (!applying) {
      // Too slow, or undone by a recovery: nothing was counted; the messages will come again.
      for (const event of claimed) outcomes.set(event.id, 'retry');
      return outcomes;
    }
    for (const event of claimed) outcomes.set(event.id, 'counted');

    try {
      await this.finish(applying, leaseUntil, {
        onlyEvent: claimed.length === 1 ? claimed[0]!.id : undefined,
      });
    } catch (err) {
      // The batch holds its increments: the recovery sweep finishes it; the events are safe.
      if (!(err instanceof LeaseLost)) {
        this.options.logger.warn({ err, batchId }, 'batch not finished; the recovery sweep will finish it');
        await this.releaseLease(batchId, leaseUntil);
      }
    }
    return outcomes;
  }

  /**
   * Finishes or undoes the batches whose lease ran out (their writer died or stalled). Returns how
   * many it handled. Each batch on its own: one it cannot finish now keeps the lease this recovery took (an update
   * of it may still be in flight), so the next call leaves it alone until that lease is past; the others go on.
   */
  async recover(limit = 100): Promise<number> {
    const now = this.now();
    let handled = 0;
    // The longest waiting first: batches that fail again and again (each then holds a new lease) come after the
    // others, never ahead of them in every sweep.
    const stuck = await this.c.batches.find(
      { state: { $in: ['claiming', 'applying'] }, leaseUntil: { $lt: now } },
      { limit, sort: { leaseUntil: 1 } },
    );
    for (const batch of stuck) {
      try {
        const outcome = await this.recoverBatch(batch);
        if (outcome) {
          handled++;
          this.options.onRecovery?.(outcome);
        }
      } catch (err) {
        const lostLease = err instanceof LeaseLost && err.fencedUntil === undefined;
        this.options.onRecovery?.(lostLease ? 'lost_lease' : 'failed');
        if (err instanceof LeaseLost && err.fencedUntil !== undefined) {
          // no other instance may hold it: it waits until that time is past here, unless the instance ahead takes it
          this.options.logger.warn(
            { batchId: batch._id, fencedUntil: new Date(err.fencedUntil) },
            "a counter of a batch it recovers is fenced past this instance's lease: another instance's clock is ahead",
          );
        } else if (err instanceof LeaseLost) {
          this.options.logger.info(
            { batchId: batch._id },
            'lost the lease of a batch it recovers: left to another',
          );
        } else {
          this.options.logger.warn(
            { err, batchId: batch._id },
            'batch not recovered; tried again once its lease is past',
          );
        }
      }
    }
    return handled;
  }

  /**
   * Takes over one stuck batch, with a lease from now (the batches before it may have taken a while), and undoes or
   * finishes it; null when another writer took it first.
   */
  private async recoverBatch(batch: BatchDoc): Promise<'finished' | 'undone' | null> {
    const leaseUntil = this.now() + this.options.leaseMs;
    const taken = await this.c.batches.findOneAndUpdate(
      { _id: batch._id, state: batch.state, leaseUntil: batch.leaseUntil },
      { $set: { owner: this.instanceId, leaseUntil } },
    );
    if (!taken) return null;
    if (taken.state === 'claiming') {
      await this.c.batches.updateOne(
        { _id: taken._id, owner: this.instanceId, state: 'claiming' },
        { $set: { state: 'aborted' } },
      );
      this.options.logger.info({ batchId: taken._id }, 'undid an unfinished batch: its events come again');
      return 'undone';
    }
    // Updates of its earlier writers may still land: the one that let it go early, or the last holder.
    await this.finish(taken, leaseUntil, { fence: Math.max(batch.leaseUntil, batch.releasedLease ?? 0) });
    this.options.logger.info({ batchId: taken._id }, 'finished a batch left unfinished');
    return 'finished';
  }

  /**
   * How many batches are open longer than a lease: their writer died or failed, and no recovery finished or undid
   * them yet. More than a moment, their events were acknowledged as counted and are missing from the counters.
   */
  stuckBatches(): Promise<number> {
    return this.c.batches.count({
      state: { $in: ['claiming', 'applying'] },
      openedAt: { $lt: this.now() - this.options.leaseMs },
    });
  }

  /** Removes the markers of finished batches older than `olderThanMs` that no update took along. */
  async sweepMarkers(olderThanMs = MARKER_SWEEP_AGE_MS): Promise<number> {
    const cutoff = this.now() - olderThanMs;
    let removed = 0;
    for (const id of [...this.staleMarkers.keys()]) {
      const dropped = this.markersToDrop(id, cutoff);
      if (!dropped) continue;
      const { $unset, fence } = dropped;
      await this.c.counters.updateOne({ _id: id }, { $unset, ...(fence ? { $max: { fence } } : {}) });
      removed += this.forgetMarkers(id, $unset);
    }
    return removed;
  }

  /**
   * Step 2: claims the events, in one write when none was seen before (the usual case), else one by
   * one to tell the duplicates apart.
   */
  private async claimAll(
    events: CountableEvent[],
    batchId: string,
    outcomes: Map<string, Outcome>,
  ): Promise<CountableEvent[]> {
    if (this.c.ledger.insertMany && events.length > 1) {
      try {
        await this.c.ledger.insertMany(events.map((event) => ledgerDoc(event, batchId)));
        return events;
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
    }
    const results = await Promise.all(events.map((event) => this.claim(event, batchId)));
    const claimed: CountableEvent[] = [];
    events.forEach((event, i) => {
      const result = results[i]!;
      if (result === 'claimed') claimed.push(event);
      else outcomes.set(event.id, result);
    });
    return claimed;
  }

  /** Claims one event for the batch, or says why not. */
  private async claim(event: CountableEvent, batchId: string): Promise<'claimed' | 'duplicate' | 'retry'> {
    const doc = ledgerDoc(event, batchId);
    try {
      await this.c.ledger.insertOne(doc);
      return 'claimed';
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
    const existing = await this.c.ledger.findOne({ _id: event.id });
    if (!existing) return 'retry';
    // A multi-insert that failed half-way (MongoDB) may have stored this batch's own claim already.
    if (existing.batch === batchId) return 'claimed';
    if (existing.batch === COUNTED) return 'duplicate';
    const holder = await this.c.batches.findOne({ _id: existing.batch });
    if (holder?.state === 'applying') return 'duplicate';
    if (holder?.state === 'claiming') return 'retry';
    if (!holder && (await this.c.finishedBatches.findOne({ _id: existing.batch }))) return 'duplicate';
    // The batch that claimed it was undone (or is long gone): take the claim over.
    const { _id: _ignored, ...fields } = doc;
    const taken = await this.c.ledger.findOneAndUpdate(
      { _id: event.id, batch: existing.batch },
      { $set: fields },
    );
    return taken ? 'claimed' : 'retry';
  }

  /**
   * Steps 4 and 5. `fence`, for a batch taken over: the latest lease an earlier writer of it held. `onlyEvent`, for
   * a batch this writer made (in `apply`) that holds one event: its id.
   */
  private async finish(
    batch: BatchDoc,
    leaseUntil: number,
    { fence, onlyEvent }: { fence?: number; onlyEvent?: string },
  ): Promise<void> {
    await Promise.all(batch.increments.map((increment) => this.applyIncrement(batch, increment, leaseUntil)));
    if (onlyEvent) {
      // Recorded on its claim, which no one else changes while the batch is open: no tombstone, no batch id kept.
      await this.writeCountedTombstone();
      await this.c.ledger.updateOne({ _id: onlyEvent, batch: batch._id }, { $set: { batch: COUNTED } });
    } else {
      try {
        await this.c.finishedBatches.insertOne({
          _id: batch._id,
          countedAt: batch.countedAt,
          ...(batch.latestOccurredAt && batch.latestOccurredAt > batch.countedAt
            ? { latestOccurredAt: batch.latestOccurredAt }
            : {}),
        });
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err; // finished by a recovery at the same time
      }
    }
    // Only the writer holding the batch deletes it (the owner and lease it holds in the filter; a takeover sets
    // both). A writer that lost it leaves it to the one that took it over, whose counter updates may still be to
    // come: deleted here, the batch's markers would go a few seconds later and those updates count it again.
    // Deleted by the writer that made it, the batch was never taken over: no other writer ever applied it, so no
    // write of it can arrive later and its markers may go at once.
    const deleted = await this.c.batches.deleteOne({
      _id: batch._id,
      state: 'applying',
      owner: this.instanceId,
      leaseUntil: batch.leaseUntil,
    });
    if (deleted === 0) return;
    const marker: FinishedMarker = { finishedAt: this.now(), ...(fence === undefined ? {} : { fence }) };
    for (const inc of batch.increments) {
      let markers = this.staleMarkers.get(inc.counterId);
      if (!markers) {
        markers = new Map();
        this.staleMarkers.set(inc.counterId, markers);
      }
      markers.set(batch._id, marker);
    }
  }

  /** Once per process: the tombstone `COUNTED` (see `COUNTED_TOMBSTONE_DATE`); tried again after a failure. */
  private writeCountedTombstone(): Promise<void> {
    this.countedTombstone ??= this.c.finishedBatches
      .insertOne({ _id: COUNTED, countedAt: COUNTED_TOMBSTONE_DATE })
      .then(
        () => undefined,
        (err) => {
          if (err instanceof DuplicateKeyError) return;
          this.countedTombstone = null;
          throw err;
        },
      );
    return this.countedTombstone;
  }

  private async applyIncrement(batch: BatchDoc, inc: CounterIncrement, leaseUntil: number): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      if (!this.leaseHeld(leaseUntil)) throw new LeaseLost();
      const dropped = this.markersToDrop(inc.counterId);
      try {
        await this.c.counters.updateOne(
          {
            _id: inc.counterId,
            // A map, not an array: `{ $ne }` on arrays differs between the engines, `$exists` does not.
            [`applied.${batch._id}`]: { $exists: false },
            // Fenced: an update landing after its lease ended, once markers it might have found were removed, is a no-op.
            $or: [{ fence: { $exists: false } }, { fence: { $lt: leaseUntil } }],
          },
          {
            $inc: {
              requests: inc.requests,
              tokens: inc.tokens,
              prompt_tokens: inc.prompt_tokens,
              completion_tokens: inc.completion_tokens,
              cost_micros: inc.cost_micros,
            },
            $max: {
              lastRequestAt: new Date(inc.lastRequestAt),
              refreshedAt: new Date(batch.countedAt),
              ...(dropped?.fence ? { fence: dropped.fence } : {}),
            },
            $set: { [`applied.${batch._id}`]: true },
            ...(dropped ? { $unset: dropped.$unset } : {}),
            $setOnInsert: {
              orgSlug: inc.orgSlug,
              userId: inc.userId,
              apiKeyId: inc.apiKeyId,
              window: inc.window,
              start: new Date(inc.start),
            },
          },
          { upsert: true },
        );
        if (dropped) this.forgetMarkers(inc.counterId, dropped.$unset);
        return;
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
        // Either the counter already carries this batch (nothing to do), or it is fenced past this lease (the
        // batch is a recovery's now), or another upsert created it at the same moment (try again: it now exists).
        const current = await this.c.counters.findOne({ _id: inc.counterId });
        if (current?.applied?.[batch._id]) return;
        const fence = current?.fence ?? 0;
        if (fence >= leaseUntil) throw new LeaseLost(this.leaseHeld(leaseUntil) ? fence : undefined);
        if (attempt >= 3) throw err;
      }
    }
  }

  /**
   * The `$unset` of a counter's markers that may go now, those of batches finished at or before `finishedBy`, and
   * the fence their removal sets (the latest of theirs; none when no batch of them was taken over).
   */
  private markersToDrop(
    id: string,
    finishedBy = Number.POSITIVE_INFINITY,
  ): { $unset: Record<string, ''>; fence?: number } | undefined {
    const markers = this.staleMarkers.get(id);
    if (!markers) return undefined;
    const now = this.now();
    let dropped: { $unset: Record<string, ''>; fence?: number } | undefined;
    for (const [batchId, { finishedAt, fence }] of markers) {
      if (finishedAt > finishedBy || (fence !== undefined && fence >= now)) continue;
      dropped ??= { $unset: {} };
      dropped.$unset[`applied.${batchId}`] = '';
      if (fence !== undefined) dropped.fence = Math.max(dropped.fence ?? 0, fence);
    }
    return dropped;
  }

  private forgetMarkers(id: string, dropped: Record<string, ''>): number {
    const markers = this.staleMarkers.get(id);
    if (!markers) return 0;
    const names = Object.keys(dropped);
    for (const name of names) markers.delete(name.slice('applied.'.length));
    if (!markers.size) this.staleMarkers.delete(id);
    return names.length;
  }

  /**
   * Lets the recovery sweep take the batch at once (after a failure of its writer), keeping the lease it let go: an
   * update of this writer may still land until then. Only the lease it still holds: the owner alone would match the
   * lease of this instance's own recovery that took the batch over meanwhile, still applying it.
   */
  private async releaseLease(batchId: string, leaseUntil: number): Promise<void> {
    await this.c.batches
      .updateOne(
        { _id: batchId, owner: this.instanceId, leaseUntil },
        { $set: { leaseUntil: 0, releasedLease: leaseUntil } },
      )
      .catch(() => undefined);
  }

  private now(): number {
    return this.options.leaseClock.now().getTime();
  }

  /** Whether a lease ending at `leaseUntil` still has a safety margin left. */
  private leaseHeld(leaseUntil: number): boolean {
    const margin = Math.min(5_000, this.options.leaseMs / 10);
    return this.now() < leaseUntil - margin;
  }
}

/** The ledger document that claims an event for a batch. */
function ledgerDoc(event: CountableEvent, batchId: string): LedgerDoc {
  return {
    _id: event.id,
    batch: batchId,
    receivedAt: event.receivedAt,
    ...(event.occurredAt > event.receivedAt ? { occurredAt: event.occurredAt } : {}),
  };
}

/** The latest `occurredAt` of the events: their claims, and the batch's tombstone, are kept that long past it. */
function latestOccurredAt(events: CountableEvent[]): Date {
  let latest = events[0]!.occurredAt;
  for (const event of events) if (event.occurredAt > latest) latest = event.occurredAt;
  return latest;
}

/** The batch's increments, one per counter: the organization's, each user's and each API key's minute and month. */
export function sumIncrements(events: CountableEvent[]): CounterIncrement[] {
  const byId = new Map<string, CounterIncrement>();
  const add = (scope: CounterScope, window: WindowKind, event: CountableEvent) => {
    const start = windowStart(window, event.countedAt);
    const id = counterId(scope, window, start);
    let inc = byId.get(id);
    if (!inc) {
      inc = {
        counterId: id,
        orgSlug: scope.orgSlug,
        userId: scope.userId ?? null,
        apiKeyId: scope.apiKeyId ?? null,
        window,
        start,
        requests: 0,
        tokens: 0,
        prompt_tokens: 0,
        completion_tokens: 0,
        cost_micros: 0,
        lastRequestAt: event.countedAt,
      };
      byId.set(id, inc);
    }
    inc.requests += 1;
    inc.tokens += event.total_tokens;
    inc.prompt_tokens += event.prompt_tokens;
    inc.completion_tokens += event.completion_tokens;
    inc.cost_micros += event.cost_micros;
    if (event.countedAt > inc.lastRequestAt) inc.lastRequestAt = event.countedAt;
  };
  for (const event of events) {
    const org: CounterScope = { orgSlug: event.orgSlug };
    add(org, 'minute', event);
    add(org, 'month', event);
    if (event.userId !== null) {
      const user: CounterScope = { orgSlug: event.orgSlug, userId: event.userId };
      add(user, 'minute', event);
      add(user, 'month', event);
    }
    if (event.apiKeyId !== null) {
      const key: CounterScope = { orgSlug: event.orgSlug, apiKeyId: event.apiKeyId };
      add(key, 'minute', event);
      add(key, 'month', event);
    }
  }
  return [...byId.values()];
}
