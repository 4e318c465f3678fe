import { request } from 'undici';
import { abortSignalOf, type CancelSignal } from '../cancellation';

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
    const res = await doFetch(url, { ...init, signal: abortSignalOf(init.signal) });
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
