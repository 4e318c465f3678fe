import { serviceLookup } from '@platform/kernel';
import { Agent, fetch as undiciFetch } from 'undici';

/**
 * `fetch` for the gateway's calls to llm-quota (an organization's settings): names resolved by `serviceLookup`,
 * off libuv's thread pool, so that a name server leaving queries unanswered cannot hold every read of the
 * settings behind lookups that aborted requests left running (decision 0084).
 */
export function quotaFetch(): { fetch: typeof fetch; close(): Promise<void> } {
  const agent = new Agent({ connect: { lookup: serviceLookup() } });
  return {
    fetch: ((input: string | URL, init?: RequestInit) =>
      undiciFetch(input, { ...(init as object), dispatcher: agent })) as unknown as typeof fetch,
    close: () => agent.close(),
  };
}
