import type { LookupFunction } from 'node:net';
import { Agent, fetch as undiciFetch } from 'undici';
import { serviceLookup } from './service-lookup';

/**
 * `fetch` for calls from one platform service to another (the gateway reading llm-quota, the edge asking auth
 * for a principal): names resolved by `serviceLookup`, off libuv's thread pool, so that a name server leaving
 * queries unanswered cannot hold every later call behind lookups that aborted calls left running (decision
 * 0084); a process passes one `lookup` to all its clients, so they share its answers. `close` ends its connections;
 * a later call opens new ones.
 */
export function serviceFetch(lookup: LookupFunction = serviceLookup()): {
  fetch: typeof fetch;
  close(): Promise<void>;
} {
  let agent: Agent | undefined;
  return {
    fetch: ((input: string | URL, init?: RequestInit) => {
      agent ??= new Agent({ connect: { lookup } });
      return undiciFetch(input, { ...(init as object), dispatcher: agent });
    }) as unknown as typeof fetch,
    close: async () => {
      const closing = agent;
      agent = undefined;
      await closing?.close();
    },
  };
}
