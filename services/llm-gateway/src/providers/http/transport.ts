import { type Dispatcher, request } from 'undici';
import { abortSignalOf, type CancelSignal } from '../cancellation';
import type { ProviderDestinations } from './destinations';

/** What the provider layer reads of an answer: the status, headers, and the body whole or as it arrives. */
export interface ProviderResponse {
  status: number;
  ok: boolean;
  header(name: string): string | null;
  text(): Promise<string>;
  /** the body's bytes as they arrive (read once, instead of `text`) */
  chunks(): AsyncIterator<Uint8Array>;
  /** drops the rest of the body (and its connection) */
  cancel(): Promise<void>;
}

export interface ProviderSendInit {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string | FormData;
  /** undici's `request` takes it as it is; `fetch` gets an AbortSignal following it */
  signal: CancelSignal;
  /** the connection pool to use (a restricted provider's: `ProviderDestinations.agent`) */
  dispatcher?: Dispatcher;
}

/** One HTTP exchange with a provider. */
export type ProviderTransport = (url: string, init: ProviderSendInit) => Promise<ProviderResponse>;

/**
 * The default transport: undici's `request` on its global pool of keep-alive connections. It skips
 * what `fetch` builds for every call (a WHATWG Request, Response, Headers and web streams), which
 * was a third of the gateway's own CPU per request (decision 0079).
 */
export const undiciTransport: ProviderTransport = async (url, init) => {
  // multipart uploads (audio, rare) go through fetch, which encodes Node's own FormData
  if (typeof init.body !== 'string' && init.body !== undefined) return globalFetch(url, init);
  const res = await request(url, {
    method: init.method,
    headers: init.headers,
    body: init.body,
    signal: init.signal,
    ...(init.dispatcher ? { dispatcher: init.dispatcher } : {}),
  });
  const body = res.body;
  return {
    status: res.statusCode,
    ok: res.statusCode >= 200 && res.statusCode < 300,
    header(name) {
      const value = res.headers[name.toLowerCase()];
      if (value === undefined) return null;
      return Array.isArray(value) ? value.join(', ') : value;
    },
    text: () => body.text(),
    chunks: () => body[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>,
    async cancel() {
      body.destroy();
    },
  };
};

/** A transport over a `fetch` function (tests inject one to script answers). */
export function fetchTransport(doFetch: typeof fetch): ProviderTransport {
  return async (url, init) => {
    // a provider's redirect is answered as its error, never followed: it could lead anywhere
    const res = await doFetch(url, {
      ...init,
      signal: abortSignalOf(init.signal),
      redirect: 'manual',
    } as RequestInit);
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    return {
      status: res.status,
      ok: res.ok,
      header: (name) => res.headers.get(name),
      text: () => res.text(),
      chunks() {
        if (!res.body) return (async function* () {})();
        reader = res.body.getReader();
        const r = reader;
        return {
          next: async () => {
            const { done, value } = await r.read();
            return done ? { done: true, value: undefined } : { done: false, value };
          },
        };
      },
      async cancel() {
        await (reader ? reader.cancel() : res.body?.cancel())?.catch(() => undefined);
      },
    };
  };
}

const globalFetch = fetchTransport((...args) => fetch(...args));

/**
 * A restricted provider's transport (one a platform administrator defined): the URL is checked before
 * anything is sent, and the connection only reaches addresses `destinations` allows (undici's pool with a
 * checking lookup; an injected fetch has the host name resolved and checked first).
 */
export function restrictedTransport(
  send: ProviderTransport,
  destinations: ProviderDestinations,
  options: { injected: boolean },
): ProviderTransport {
  return async (url, init) => {
    if (options.injected) await destinations.assertResolved(url);
    else destinations.assertUrl(url);
    return send(url, { ...init, dispatcher: destinations.agent });
  };
}
