import type { RequestListener } from 'node:http';
import type { ObserveListenAnswer } from './metrics';
import type { ServerMessages } from './server-messages';

/** What the server `listen` makes for a request listener takes from it, noted by whoever made the listener. */
export interface ListenOptions {
  /** the classes the server builds requests and responses with (server-messages.ts) */
  messages?: ServerMessages;
  /** how the answers the server writes itself are counted, as the listener counts its own (metrics.ts) */
  observe?: ObserveListenAnswer;
}

const optionsOf = new WeakMap<RequestListener, ListenOptions>();

/** Notes `options` for `listener` (read by `listen`), keeping what was noted for it before. */
export function noteListenOptions(listener: RequestListener, options: ListenOptions): void {
  optionsOf.set(listener, { ...optionsOf.get(listener), ...options });
}

/** What was noted for `listener`; nothing if nothing was. */
export const listenOptionsOf = (listener: RequestListener): ListenOptions => optionsOf.get(listener) ?? {};
