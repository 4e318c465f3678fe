import { z } from 'zod';

/** Every subject the platform publishes or consumes, in one place (DESIGN.md "Events"). */
export const Subjects = {
  gatewayJwksUpdated: 'gateway.jwks.updated',
  runtimeJwksUpdated: 'runtime.jwks.updated',
  llmCompletion: 'analytics.llm.completion',
  llmCompletionDeadLetter: 'analytics.llm.completion.dead',
  credentialRevoked: 'auth.credential.revoked',
  membershipChanged: 'auth.membership.changed',
  orgDeleted: 'auth.org.deleted',
  llmCatalogueUpdated: 'llm.catalogue.updated',
  llmQuotaSettingsChanged: 'llm.quota.settings.changed',
} as const;

export type Subject = (typeof Subjects)[keyof typeof Subjects];

/** `gateway.jwks.updated` / `runtime.jwks.updated`, version 1. */
export const JwksUpdatedEvent = z.object({
  version: z.literal(1),
  /** kids published (or starting to sign): refetch the JWKS */
  created: z.array(z.string()),
  /**
   * kids that verify nothing any more: removed after their tokens expired, or revoked (a leaked key, decision 0102).
   * Drop them, and every token they verified, at once and for good: a kid is never reused.
   */
  deleted: z.array(z.string()),
  at: z.string(),
});
export type JwksUpdatedEvent = z.infer<typeof JwksUpdatedEvent>;

/**
 * `auth.credential.revoked`, version 1: edges drop the cached introspection for this hash. Kind `user` (`id` = the
 * user id) is every credential of a person at once: their account was deleted. Each of their sessions and access
 * tokens is also announced on its own, so an edge that does not know the kind yet still drops them.
 */
export const CredentialRevokedEvent = z.object({
  version: z.literal(1),
  kind: z.enum(['access_token', 'workspace_api_key', 'org_api_key', 'session', 'user']),
  id: z.string(),
  /** sha256 (hex) of the credential as sent by clients; what edge caches are keyed by */
  credentialHash: z.string().optional(),
  at: z.string(),
});
export type CredentialRevokedEvent = z.infer<typeof CredentialRevokedEvent>;

/** `auth.membership.changed`, version 1: a user's memberships or an org's roles changed. */
export const MembershipChangedEvent = z.object({
  version: z.literal(1),
  orgSlug: z.string(),
  userId: z.string().optional(),
  at: z.string(),
});
export type MembershipChangedEvent = z.infer<typeof MembershipChangedEvent>;

/**
 * `auth.org.deleted`, version 1: an organization was deleted. Its slug is never given to another organization (auth
 * keeps it reserved), so what other services keep under the slug (llm-quota's settings and usage) belongs to no one
 * else, ever; they stop serving it.
 */
export const OrgDeletedEvent = z.object({
  version: z.literal(1),
  orgId: z.string(),
  orgSlug: z.string(),
  at: z.string(),
});
export type OrgDeletedEvent = z.infer<typeof OrgDeletedEvent>;

/**
 * `analytics.llm.completion`, version 1: the contract for any LLM gateway feeding llm-quota.
 * Published to the JetStream stream `ANALYTICS` (subjects `analytics.>`).
 */
export const LlmCompletionEvent = z.object({
  id: z.string().min(1).max(200),
  version: z.literal(1),
  occurredAt: z.iso.datetime({ offset: true }),
  orgSlug: z.string().min(1).max(100),
  userId: z.string().min(1).max(200).optional(),
  /**
   * the organization API key that made the request, whose own limits llm-quota reports (optional, added with them:
   * an older consumer ignores it and counts the event for the organization alone)
   */
  apiKeyId: z.string().min(1).max(200).optional(),
  model: z.string().min(1).max(200),
  provider: z.string().min(1).max(100),
  usage: z.object({
    /** every input token, those read from or written to the provider's prompt cache included */
    prompt_tokens: z.number().int().nonnegative(),
    completion_tokens: z.number().int().nonnegative(),
    total_tokens: z.number().int().nonnegative(),
    // Optional (decision 0107): the part of prompt_tokens priced at the cache rates; absent means none.
    /** prompt tokens the provider read from its prompt cache */
    cached_tokens: z.number().int().nonnegative().optional(),
    /** prompt tokens the provider wrote to its prompt cache */
    cache_write_tokens: z.number().int().nonnegative().optional(),
  }),
  cost: z.number().nonnegative(),
  // Optional fields added by the LLM gateway (issue 9), describing the call. Counting reads none of them: a
  // version 1 consumer ignores the members it does not know, and a value it does not know (an endpoint added since)
  // in the members it does (`CountedLlmCompletion`), so an event is never refused for what only describes it.
  /** request id of the inference call (the `x-request-id` the caller saw) */
  requestId: z.string().max(200).optional(),
  /** the gateway API the caller used (`responses`: OpenAI's Responses API; `messages`: Anthropic's Messages API) */
  endpoint: z
    .enum([
      'chat.completions',
      'completions',
      'responses',
      'messages',
      'embeddings',
      'rerank',
      'images',
      'audio',
    ])
    .optional(),
  /** how the request ended: a full answer, a provider error, a stream cut at the budget, a client gone */
  outcome: z.enum(['success', 'provider_error', 'budget_cut', 'client_cancelled']).optional(),
  stream: z.boolean().optional(),
  /** the model the caller asked for when governance downgraded it */
  requestedModel: z.string().max(200).optional(),
  /** where the token counts come from: the provider's report or the gateway's tokenizer */
  usageSource: z.enum(['provider', 'tokenizer']).optional(),
  /** wall time of the request in the gateway (ms) */
  durationMs: z.number().nonnegative().optional(),
  currency: z.string().max(10).optional(),
  /** EcoLogits-method estimate of the request's footprint (decision record 0047) */
  carbon: z
    .object({ energy_kwh: z.number().nonnegative(), gwp_kgco2eq: z.number().nonnegative() })
    .optional(),
});
export type LlmCompletionEvent = z.infer<typeof LlmCompletionEvent>;

/**
 * What counting an `analytics.llm.completion` reads, validated as strictly as the whole event; its descriptive
 * members are left unread, so a consumer older than its producer still counts every event.
 */
export const CountedLlmCompletion = LlmCompletionEvent.pick({
  id: true,
  version: true,
  occurredAt: true,
  orgSlug: true,
  userId: true,
  apiKeyId: true,
  model: true,
  provider: true,
  usage: true,
  cost: true,
});

/** `llm.catalogue.updated`, version 1: gateway instances reload their in-memory model catalogue. */
export const LlmCatalogueUpdatedEvent = z.object({ version: z.literal(1), at: z.string() });
export type LlmCatalogueUpdatedEvent = z.infer<typeof LlmCatalogueUpdatedEvent>;

/**
 * `llm.quota.settings.changed`, version 1: an organization's quota settings (policy, limits, per-user quotas,
 * model governance) or plan changed in llm-quota; gateway instances drop their cached copy.
 */
export const LlmQuotaSettingsChangedEvent = z.object({
  version: z.literal(1),
  orgSlug: z.string(),
  at: z.string(),
});
export type LlmQuotaSettingsChangedEvent = z.infer<typeof LlmQuotaSettingsChangedEvent>;

export interface EventPayloads {
  'gateway.jwks.updated': JwksUpdatedEvent;
  'runtime.jwks.updated': JwksUpdatedEvent;
  'analytics.llm.completion': LlmCompletionEvent;
  'analytics.llm.completion.dead': { reason: string; raw: string; at: string };
  'auth.credential.revoked': CredentialRevokedEvent;
  'auth.membership.changed': MembershipChangedEvent;
  'auth.org.deleted': OrgDeletedEvent;
  'llm.catalogue.updated': LlmCatalogueUpdatedEvent;
  'llm.quota.settings.changed': LlmQuotaSettingsChangedEvent;
}
