import { AsyncLocalStorage } from 'node:async_hooks';

/** Per-request context carried through async calls, so every log line names its request. */
export interface RequestContext {
  requestId: string;
}

export const requestContext = new AsyncLocalStorage<RequestContext>();

export const currentRequestId = (): string | undefined => requestContext.getStore()?.requestId;
