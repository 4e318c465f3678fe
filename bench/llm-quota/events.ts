import type { LlmCompletionEvent } from '@platform/contracts';

export const ORGS = 20;
export const USERS_PER_ORG = 10;

/** The i-th event of a run: 20 organizations, 10 users each, varying token counts. */
export function benchEvent(run: string, i: number, occurredAt: string): LlmCompletionEvent {
  return {
    id: `${run}-${i}`,
    version: 1,
    occurredAt,
    orgSlug: `org-${i % ORGS}`,
    userId: `user-${i % (ORGS * USERS_PER_ORG)}`,
    model: 'gpt-4o-mini',
    provider: 'openai',
    usage: { prompt_tokens: 30 + (i % 7), completion_tokens: 20, total_tokens: 50 + (i % 7) },
    cost: 0.000125,
  };
}
