import { Unavailable } from '@platform/kernel';

/**
 * What an operation answers when the store cannot be reached (a broken file, a database away): 503
 * `StoreUnavailable`, to try again in a second. The cause goes to the log line only, never into the answer.
 */
export function storeUnavailable(collection: string, cause: unknown): Unavailable {
  const { code, name } = (cause ?? {}) as { code?: unknown; name?: unknown };
  const err = new Unavailable('The service cannot reach its data right now; try again shortly', {
    error: 'StoreUnavailable',
    retryAfter: 1,
  });
  return Object.assign(err, { cause: new Error(`${collection}: ${String(code ?? name ?? 'unknown')}`) });
}
