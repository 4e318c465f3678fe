import type { LlmCompletionEvent } from '@platform/contracts';

/** A minimal usage event, the durable stream's payload, named by `id`. */
export const completion = (id: string): LlmCompletionEvent => ({
  id,
  version: 1,
  occurredAt: '2026-11-28T10:00:00Z',
  orgSlug: 'acme',
  model: 'm',
  provider: 'p',
  usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
  cost: 0.01,
});

/** Whether `promise` settles fulfilled (a durable publication the server accepted). */
export const succeeds = (promise: Promise<unknown>): Promise<boolean> =>
  promise.then(
    () => true,
    () => false,
  );
