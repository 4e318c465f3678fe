import { type Clock, type Logger, systemClock } from '@platform/kernel';
import { LRUCache } from 'lru-cache';
import type { Collection, MongoClient } from 'mongodb';
import type { RateLimitRule } from '../routing/route-table';

export type LimitDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export interface RateLimits {
  /** counts one request of `consumer` on `route` */
  consume(route: string, rule: RateLimitRule, consumer: string): Promise<LimitDecision>;
}

const ALLOWED: LimitDecision = { allowed: true };

/** A refusal until the oldest admitted request leaves the window, `waitMs` from now: whole seconds, at least 1. */
const refused = (waitMs: number): LimitDecision => ({
  allowed: false,
  retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
});

/** How often a MongoDB client that could not connect is connected again (requests count in memory meanwhile). */
export const RECONNECT_MS = 5_000;

/** The most consumers a route's in-memory log follows at once (the least recently seen leaves first; decision 0091). */
export const MAX_TRACKED_CONSUMERS = 50_000;

/** One consumer's admitted requests (ms since the epoch): up to `points` of them, a ring once full. */
interface ConsumerLog {
  times: number[];
  /** once full, the slot of the oldest (the next one overwritten) */
  next: number;
  newest: number;
}

/**
 * The clock stepped back (NTP, a migrated VM): requests logged later than `now` are taken as made now, so a consumer
 * waits at most one window from here instead of the step as well. The ring stays in order.
 */
function stepBack(log: ConsumerLog, now: number): void {
  for (let i = 0; i < log.times.length; i++) if (log.times[i]! > now) log.times[i] = now;
  log.newest = now;
}

/**
 * A sliding log in this process's memory: a request is admitted when its consumer has fewer than `points` admitted
 * requests in the last `durationSeconds`, and recorded then (a refused one is not). At most `maxConsumers` are
 * followed, the least recently seen leaving first (a consumer being refused is seen); those idle for a whole window
 * are swept once per window, on the injected clock, as the principal cache is (decision 0091).
 */
export class MemorySlidingLog {
  private readonly logs: LRUCache<string, ConsumerLog>;
  private readonly windowMs: number;
  private nextSweep = 0;

  constructor(
    private readonly rule: RateLimitRule,
    private readonly clock: Clock,
    maxConsumers = MAX_TRACKED_CONSUMERS,
  ) {
    this.windowMs = rule.durationSeconds * 1000;
    this.logs = new LRUCache({ max: maxConsumers });
  }

  /** the consumers followed now */
  get size(): number {
    return this.logs.size;
  }

  consume(consumer: string): LimitDecision {
    const now = this.clock.now().getTime();
    const windowStart = now - this.windowMs;
    if (now >= this.nextSweep) this.sweep(now);
    const log = this.logs.get(consumer);
    if (log && log.newest > now) stepBack(log, now);
    if (!log || log.newest <= windowStart) {
      this.logs.set(consumer, { times: [now], next: 0, newest: now });
      return ALLOWED;
    }
    const { points } = this.rule;
    if (log.times.length < points) {
      log.times.push(now);
    } else {
      const oldest = log.times[log.next];
      if (oldest > windowStart) return refused(oldest - windowStart);
      log.times[log.next] = now;
      log.next = (log.next + 1) % points;
    }
    log.newest = now;
    return ALLOWED;
  }

  /** forgets the consumers with no request in force (at most once per window) */
  private sweep(now: number): void {
    this.nextSweep = now + this.windowMs;
    for (const [consumer, log] of this.logs.entries())
      if (log.newest <= now - this.windowMs) this.logs.delete(consumer);
  }
}

/** One consumer's admitted requests on one route (collection `rate_logs`), oldest first. */
export interface RateLogDoc {
  /** `<route>:<consumer>` */
  _id: string;
  /** the admitted requests' times (ms since the epoch), at most `points` of them */
  ts: number[];
  /** a window after the newest: the document then holds nothing in force, and MongoDB removes it (TTL index) */
  expireAt: Date;
}

/**
 * The one atomic update admitting a request at `now` into `key`'s log: the filter matches when the log holds fewer
 * than `points` requests or its oldest is outside the window; the update appends `now` and keeps the last `points`.
 * With `upsert`, the first request makes the document.
 */
export function admission(key: string, rule: RateLimitRule, now: number) {
  const windowMs = rule.durationSeconds * 1000;
  return {
    filter: {
      _id: key,
      $or: [{ [`ts.${rule.points - 1}`]: { $exists: false } }, { 'ts.0': { $lte: now - windowMs } }],
    },
    update: {
      $push: { ts: { $each: [now], $slice: -rule.points } },
      $set: { expireAt: new Date(now + windowMs) },
    },
  };
}

const isDuplicateKey = (err: unknown) => (err as { code?: unknown } | null)?.code === 11000;

/**
 * Admits a request at `now` into `key`'s log in MongoDB, shared by every edge instance. The update matches nothing
 * when the log is full within the window; with `upsert` MongoDB then tries to insert `key` and fails on its `_id`
 * (duplicate key), as it does when a concurrent first request made the document just now: the log, read, tells
 * which. A race is tried once more.
 */
export async function admitInMongo(
  logs: Collection<RateLogDoc>,
  key: string,
  rule: RateLimitRule,
  now: number,
): Promise<LimitDecision> {
  const { filter, update } = admission(key, rule, now);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await logs.updateOne(filter, update, { upsert: true });
      return ALLOWED;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
    const log = await logs.findOne({ _id: key });
    const oldest = log && log.ts.length >= rule.points ? log.ts[0] : undefined;
    const windowStart = now - rule.durationSeconds * 1000;
    if (oldest !== undefined && oldest > windowStart) return refused(oldest - windowStart);
  }
  throw new Error(`rate log ${key} kept changing under concurrent requests`);
}

/**
 * Per-route sliding logs, made on first use: in MongoDB (database `dbName`, collection `rate_logs`, shared by every
 * edge instance) when a client is given, with an in-memory log answering while MongoDB fails; in memory otherwise
 * (standalone mode, one process). Time is `clock` (the edge's injected clock).
 */
export function createRateLimits(options: {
  mongo?: MongoClient;
  dbName: string;
  logger: Logger;
  clock?: Clock;
}): RateLimits {
  const clock = options.clock ?? systemClock;
  const memory = new Map<string, MemorySlidingLog>();
  const memoryFor = (route: string, rule: RateLimitRule) => {
    let log = memory.get(route);
    if (!log) {
      log = new MemorySlidingLog(rule, clock);
      memory.set(route, log);
    }
    return log;
  };
  if (!options.mongo) {
    return { consume: async (route, rule, consumer) => memoryFor(route, rule).consume(consumer) };
  }

  const mongo = options.mongo;
  const logs = mongo.db(options.dbName).collection<RateLogDoc>('rate_logs');
  // the TTL index removing idle logs, made once connected (again with a later request if that fails)
  let indexed = false;
  const ensureIndex = () => {
    if (indexed) return;
    indexed = true;
    logs.createIndex({ expireAt: 1 }, { expireAfterSeconds: 0 }).catch((err: unknown) => {
      indexed = false;
      options.logger.warn({ err }, 'rate_logs TTL index could not be created');
    });
  };
  let failing = false;
  const failed = (err: unknown, route?: string) => {
    // logged once per outage
    if (!failing)
      options.logger.error({ err, route }, 'rate logs failed; limits counted in memory meanwhile');
    failing = true;
  };
  // The driver connects with the first operation, and a client whose connection failed then stays closed: every
  // later operation fails at once (MongoTopologyClosedError), however long MongoDB has been back. So the client is
  // connected here, again every RECONNECT_MS while that fails, and requests count in memory until it is.
  // after a failed operation MongoDB is left alone for RECONNECT_MS: each request would wait out server selection
  let nextTry = 0;
  let connection: 'down' | 'connecting' | 'up' = 'down';
  let nextConnect = 0;
  const connect = () => {
    if (connection !== 'down' || clock.now().getTime() < nextConnect) return;
    connection = 'connecting';
    mongo.connect().then(
      () => {
        connection = 'up';
        nextTry = 0;
        ensureIndex();
      },
      (err: unknown) => {
        connection = 'down';
        nextConnect = clock.now().getTime() + RECONNECT_MS;
        failed(err);
      },
    );
  };
  return {
    async consume(route, rule, consumer) {
      if (connection !== 'up') {
        connect();
        return memoryFor(route, rule).consume(consumer);
      }
      if (clock.now().getTime() < nextTry) return memoryFor(route, rule).consume(consumer);
      ensureIndex();
      try {
        const decision = await admitInMongo(logs, `${route}:${consumer}`, rule, clock.now().getTime());
        if (failing) options.logger.info({ route }, 'rate logs answer again');
        failing = false;
        return decision;
      } catch (err) {
        // MongoDB failed: this instance's memory answers meanwhile
        if ((err as Error | null)?.name === 'MongoTopologyClosedError') connection = 'down';
        nextTry = clock.now().getTime() + RECONNECT_MS;
        failed(err, route);
        return memoryFor(route, rule).consume(consumer);
      }
    },
  };
}
