import { createEmbeddedStore, type Store } from '@platform/store';

const memoryCounters = new WeakMap<Store, Store>();

/**
 * Where the rate windows and month counters live. On MongoDB: the gateway's own database, shared by
 * every instance. On the embedded engine (one process, `pnpm start`): a memory-only store kept beside
 * it, shared by every gateway instance of the process that shares the embedded store. The windows last
 * a minute and the month counters only lead llm-quota's durable ones (taken as a floor), so nothing
 * durable is lost at a restart, and the hot path makes no file write (NeDB appends open, write and
 * close the collection file on every update: ten of them per request capped the gateway at ~100 req/s).
 */
export function counterStoreFor(store: Store): Store {
  if (store.engine !== 'embedded') return store;
  let counters = memoryCounters.get(store);
  if (!counters) {
    counters = createEmbeddedStore();
    memoryCounters.set(store, counters);
  }
  return counters;
}
