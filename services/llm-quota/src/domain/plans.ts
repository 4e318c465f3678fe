import { z } from 'zod';

/** The four limits the LLM gateway enforces per organization (spec 2.2 `key`, section 8). */
export const LIMIT_KEYS = ['llm.rpm', 'llm.tpm', 'llm.monthly_tokens', 'llm.monthly_cost'] as const;
export type LimitKey = (typeof LIMIT_KEYS)[number];

const count = z.number().int().nonnegative();

/** A plan: a named definition of enforced limits, contractual counters and per-user defaults. */
export const PlanSchema = z
  .object({
    description: z.string().max(500).optional(),
    /** the unit of `llm.monthly_cost` and of the events' `cost` (an ISO 4217 code by convention) */
    currency: z.string().min(1).max(10).default('USD'),
    /** enforced limits; a key left out (or null) is not enforced and has no gauge */
    limits: z
      .object({
        'llm.rpm': count
          .nullable()
          .optional()
          .meta({ description: 'requests per minute for the organization' }),
        'llm.tpm': count
          .nullable()
          .optional()
          .meta({ description: 'tokens per minute for the organization' }),
        'llm.monthly_tokens': count
          .nullable()
          .optional()
          .meta({ description: 'tokens per calendar month (UTC) for the organization' }),
        'llm.monthly_cost': z
          .number()
          .nonnegative()
          .nullable()
          .optional()
          .meta({ description: 'cost per calendar month (UTC), in the plan currency' }),
      })
      .strict(),
    /** contractual counters, reported as configured and without usage (spec 2.1 `included`) */
    included: z
      .object({
        members: count.optional(),
        agents: count.optional(),
        interactions: count.optional(),
        /** in GB */
        storage: z.number().nonnegative().optional(),
      })
      .catchall(z.unknown())
      .default({}),
    /** default per-user limits (spec 2.1 `per_user_defaults`); absent means no per-user limit */
    per_user_defaults: z
      .object({ rpm: count.optional(), tpm: count.optional() })
      .catchall(z.unknown())
      .default({}),
  })
  .strict();
export type Plan = z.infer<typeof PlanSchema>;

const PLAN_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const PlanNameSchema = z
  .string()
  .regex(PLAN_NAME, 'plan names are 1-63 lowercase letters, digits, _ or -, starting with a letter or digit');

export const PlanCatalogSchema = z
  .record(PlanNameSchema, PlanSchema)
  .refine((catalog) => Object.keys(catalog).length > 0, 'at least one plan is needed');
export type PlanCatalog = z.infer<typeof PlanCatalogSchema>;

/** The plans shipped by default; a deployment replaces them with LLM_QUOTA_PLANS or LLM_QUOTA_PLANS_FILE. */
export const BUILT_IN_PLANS: PlanCatalog = PlanCatalogSchema.parse({
  free: {
    description: 'Evaluation: small limits',
    currency: 'USD',
    limits: { 'llm.rpm': 60, 'llm.tpm': 40_000, 'llm.monthly_tokens': 1_000_000, 'llm.monthly_cost': 10 },
    included: { members: 5, agents: 2, interactions: 1_000, storage: 1 },
    per_user_defaults: { rpm: 20, tpm: 10_000 },
  },
  team: {
    description: 'Teams in production',
    currency: 'USD',
    limits: { 'llm.rpm': 600, 'llm.tpm': 400_000, 'llm.monthly_tokens': 50_000_000, 'llm.monthly_cost': 500 },
    included: { members: 50, agents: 20, interactions: 100_000, storage: 50 },
    per_user_defaults: { rpm: 60, tpm: 60_000 },
  },
  enterprise: {
    description: 'Large organizations',
    currency: 'USD',
    limits: {
      'llm.rpm': 6_000,
      'llm.tpm': 4_000_000,
      'llm.monthly_tokens': 1_000_000_000,
      'llm.monthly_cost': 10_000,
    },
    included: { members: 1_000, agents: 500, interactions: 5_000_000, storage: 1_000 },
    per_user_defaults: { rpm: 300, tpm: 300_000 },
  },
});
