import { serviceLookup } from '@platform/kernel';
import { Agent, fetch as undiciFetch } from 'undici';

/**
 * `fetch` for the gateway's calls to llm-quota (an organization's settings): names resolved by `serviceLookup`,
 * off libuv's thread pool, so that a name server leaving queries unanswered cannot hold every read of the
 * settings behind lookups that aborted requests left running (decision 0084). `close` ends its connections; a
 * later call opens new ones.
 */
export function quotaFetch(): { fetch: typeof fetch; close(): Promise<void> } {
  const lookup = serviceLookup();
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
