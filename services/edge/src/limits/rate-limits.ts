import type { Logger } from '@platform/kernel';
import type { MongoClient } from 'mongodb';
import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterMongo,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import type { RateLimitRule } from '../routing/route-table';

export type LimitDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export interface RateLimits {
  /** counts one request of `consumer` on `route` */
  consume(route: string, rule: RateLimitRule, consumer: string): Promise<LimitDecision>;
}

/**
 * Per-route limiters from rate-limiter-flexible, created on first use: in MongoDB (shared by every edge
 * instance) when a client is given, with an in-memory insurance limiter answering while MongoDB is
 * unreachable; in memory otherwise (standalone mode, one process).
 */
export function createRateLimits(options: {
  mongo?: MongoClient;
  dbName: string;
  logger: Logger;
}): RateLimits {
  const limiters = new Map<string, RateLimiterAbstract>();
  const limiterFor = (route: string, rule: RateLimitRule): RateLimiterAbstract => {
    let limiter = limiters.get(route);
    if (limiter) return limiter;
    const common = {
      points: rule.points,
      duration: rule.durationSeconds,
      keyPrefix: `edge:${route}`,
    };
    limiter = options.mongo
      ? new RateLimiterMongo({
          ...common,
          storeClient: options.mongo,
          dbName: options.dbName,
          tableName: 'rate_limits',
          insuranceLimiter: new RateLimiterMemory(common),
        })
      : new RateLimiterMemory(common);
    limiters.set(route, limiter);
    return limiter;
  };

  return {
    async consume(route, rule, consumer) {
      try {
        await limiterFor(route, rule).consume(consumer, 1);
        return { allowed: true };
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) {
          return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)) };
        }
        // The store failed and no insurance answered: let the request through rather than fail it.
        options.logger.error({ err: rejection, route }, 'rate limiter failed; request allowed');
        return { allowed: true };
      }
    },
  };
}
