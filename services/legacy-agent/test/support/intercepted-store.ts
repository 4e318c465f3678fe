import { Unavailable } from '@platform/kernel';
import type { Store } from '@platform/store';

/** What a test does around one call of a collection's method: `call` runs it on the real collection. */
export type Around = (collection: string, method: string, call: () => unknown, args: unknown[]) => unknown;

/**
 * `store` with every call of its collections' methods passed through `around`: a test's store that fails chosen
 * operations, holds them, or applies them and then fails (a reply lost), as MongoDB may.
 */
export function interceptedStore(store: Store, around: Around): Store {
  return new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop !== 'collection') return typeof value === 'function' ? value.bind(target) : value;
      return (name: string, indexes?: unknown) =>
        new Proxy(target.collection(name, indexes as never), {
          get(c, method) {
            const fn = Reflect.get(c, method, c);
            if (typeof fn !== 'function') return fn;
            return (...args: unknown[]) => around(name, String(method), () => fn.apply(c, args), args);
          },
        });
    },
  }) as Store;
}

/** The store's refusal while MongoDB cannot be reached (503 StoreUnavailable). */
export const storeUnavailable = () =>
  new Unavailable('The service cannot reach its data right now; try again shortly', {
    error: 'StoreUnavailable',
  });
