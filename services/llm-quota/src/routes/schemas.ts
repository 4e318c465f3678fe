import { z } from 'zod';
import { costToMicros, microsToCost } from '../domain/gauges';
import { LIMIT_KEYS, PlanNameSchema } from '../domain/plans';

/** Spec 2.2, plus the optional `resets_at`. */
export const QuotaGaugeSchema = z
  .object({
    key: z.enum(LIMIT_KEYS),
    source: z
      .enum(['plan', 'override', 'role'])
      .meta({ description: 'where the limit comes from: always `plan` for organization gauges' }),
    scope: z.enum(['user', 'org', 'api_key']),
    window: z.enum(['minute', 'month']),
    limit: z.number().meta({ description: 'requests, tokens or cost (plan currency) depending on `key`' }),
    used: z
      .number()
      .meta({ description: 'usage in the current window; 0 until a first request is recorded' }),
    percent: z
      .number()
      .int()
      .meta({ description: 'used / limit, rounded; 100 only once the limit is reached' }),
    as_of: z.iso
      .datetime()
      .optional()
      .meta({ description: 'rate gauges: time of the last recorded request this month' }),
    resets_at: z.iso
      .datetime()
      .optional()
      .meta({ description: 'extension: when the current window ends (UTC minute or month boundary)' }),
  })
  .meta({ id: 'QuotaGauge' });
export type QuotaGauge = z.infer<typeof QuotaGaugeSchema>;

const UserQuotaSchema = z.object({
  rpm: z.number().int().nonnegative().optional(),
  tpm: z.number().int().nonnegative().optional(),
});
const ApiKeyQuotaSchema = UserQuotaSchema.extend({
  monthly_tokens: z.number().int().nonnegative().optional(),
  monthly_cost: z.number().nonnegative().optional(),
});

export const OrgUserQuotasSchema = z.object({
  overrides: z.record(z.string(), UserQuotaSchema).meta({ description: 'per-user limits by user id' }),
  by_role: z
    .record(z.string(), UserQuotaSchema)
    .meta({ description: 'per-user limits by organization role' }),
  by_api_key: z
    .record(z.string(), ApiKeyQuotaSchema)
    .meta({ description: 'limits of an organization API key, by key id' }),
});

/** Spec 2.1, plus the optional `plan` and `user` extensions. */
export const UsageResponseSchema = z
  .object({
    orgSlug: z.string(),
    computed_at: z.iso.datetime(),
    usage_refreshed_at: z.iso.datetime().nullable(),
    policy: z.enum(['hard_block', 'soft_downgrade']),
    enforced: z.array(QuotaGaugeSchema),
    included: z.record(z.string(), z.unknown()),
    per_user_defaults: z.record(z.string(), z.unknown()),
    org_user_quotas: OrgUserQuotasSchema,
    plan: z
      .object({ name: z.string(), currency: z.string() })
      .optional()
      .meta({ description: 'extension: the plan in force and the currency of cost gauges' }),
    user: z
      .object({
        userId: z.string(),
        role: z.string().nullable(),
        enforced: z.array(QuotaGaugeSchema),
      })
      .optional()
      .meta({
        description:
          "extension: the caller's own per-user rate gauges (scope `user`), for credentials that carry a user",
      }),
    api_key: z
      .object({ id: z.string(), enforced: z.array(QuotaGaugeSchema) })
      .optional()
      .meta({
        description:
          "extension: the calling organization API key's rate and month gauges (scope `api_key`), when it has limits",
      }),
  })
  .meta({ id: 'OrgQuotaUsage' });
export type UsageResponse = z.infer<typeof UsageResponseSchema>;

/** Keys of `overrides`, `by_role` and `by_api_key` become field names in the store: no `.` nor `$`. */
const QUOTA_KEY = /^[A-Za-z0-9_:@+-]{1,200}$/;
export const QuotaKeySchema = z.string().regex(QUOTA_KEY, 'use 1-200 letters, digits or _ : @ + -');
const UserIdKeySchema = z
  .string()
  .regex(
    QUOTA_KEY,
    'not a user id (`userId` as GET /v2/orgs/{slug}/members answers it): 1-200 letters, digits or _ : @ + -',
  );

/** A map by `key`, whose malformed key is refused with what `key` says (not zod's "Invalid key in record"). */
const keyedBy = <V extends z.ZodType>(key: z.ZodType<string>, value: V) =>
  z.record(key, value, {
    error: (issue) => (issue.code === 'invalid_key' ? issue.issues[0]?.message : undefined),
  });

/**
 * A merge patch's map whose entries set must be keyed `key`'s way; an entry set to null is removed by the key it was
 * stored under, whatever its shape (one stored before keys were checked).
 */
const keysSetAre =
  (key: z.ZodType<string>) =>
  (map: Record<string, unknown>, ctx: z.RefinementCtx<Record<string, unknown>>) => {
    for (const [name, value] of Object.entries(map)) {
      const checked = value === null ? null : key.safeParse(name);
      if (checked && !checked.success)
        ctx.addIssue({ code: 'custom', path: [name], message: checked.error.issues[0]!.message });
    }
  };

/** A role slug as auth gives them (its ROLE_SLUG_PATTERN): an entry under another name applies to nobody. */
const RoleSlugSchema = z
  .string()
  .regex(
    /^[a-z][a-z0-9-]{1,39}$/,
    'not a role slug: lowercase, 2-40 letters, digits or -, starting with a letter',
  );

const rateLimitPatches = {
  rpm: z.number().int().nonnegative().max(1e12).nullable().optional(),
  tpm: z.number().int().nonnegative().max(1e15).nullable().optional(),
};
const UserQuotaPatchSchema = z.object(rateLimitPatches).strict().nullable();
const ApiKeyQuotaPatchSchema = z
  .object({
    ...rateLimitPatches,
    monthly_tokens: z.number().int().nonnegative().max(1e15).nullable().optional(),
    // as llm-quota counts cost: in millionths of the currency, exactly (Number.MAX_SAFE_INTEGER / 1e6); a finer
    // limit is one no count reaches exactly (5e-324 made the gauge's percent Infinity, `null` in JSON)
    monthly_cost: z
      .number()
      .nonnegative()
      .max(1e9)
      .refine(
        (cost) => microsToCost(costToMicros(cost)) === cost,
        'at most 6 decimals: costs are counted in millionths of the plan currency',
      )
      .nullable()
      .optional(),
  })
  .strict()
  .nullable();

/** A model id as stored before ids were checked: what a patch may still remove (a `downgrade` entry set to null). */
const StoredModelIdSchema = z
  .string()
  .min(1, 'not a model id: empty')
  .max(200, 'not a model id: at most 200 characters');
/**
 * A model id of the shape the gateway's catalogue gives its models (its `ModelIdSchema`): an id of another shape (a
 * space pasted with it, a control character, `auto` or `default`, which requests use to name the routing and the
 * default) names no model, and would leave the organization without the one meant. Whether the catalogue holds the
 * model is the gateway's to say: it is not llm-quota's, and a model may be allowed before it is added.
 */
const ModelIdSchema = StoredModelIdSchema.regex(
  /^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$/,
  'not a model id: letters, digits and . _ : / @ + - (no space)',
)
  .refine((id) => !id.includes('//') && !id.endsWith('/'), 'not a model id: no empty path segment')
  .refine((id) => id !== 'auto' && id !== 'default', 'auto and default are names requests give, not models');

/** `model: "auto"` (decision 0120): rules on the request, first match wins, or the cheapest model that can serve it. */
const ModelRoutingSchema = z
  .object({
    strategy: z.enum(['rules', 'cost_optimized']).meta({
      description:
        "`rules`: the first matching rule's model, else the default; `cost_optimized`: the cheapest allowed model that can serve the request",
    }),
    rules: z
      .array(
        z
          .object({
            condition: z.enum(['messages_count', 'prompt_tokens']),
            operator: z.enum(['<', '<=', '>', '>=', '=']),
            threshold: z.number().int().nonnegative().max(1e9),
            model: ModelIdSchema,
          })
          .strict(),
      )
      .max(50)
      .optional(),
  })
  .strict()
  .meta({ id: 'ModelRouting' });

/** The organization's model governance as stored and returned (issue 9 item 3). */
export const ModelGovernanceSchema = z
  .object({
    allowed: z
      .array(ModelIdSchema)
      .nullable()
      .meta({ description: 'model ids the organization may use; null: every enabled model' }),
    defaults: z
      .object({ completions: ModelIdSchema.optional(), embeddings: ModelIdSchema.optional() })
      .meta({ description: 'the model used when a request omits `model` or sends `"default"`' }),
    downgrade: z
      .record(ModelIdSchema, ModelIdSchema)
      .meta({ description: '`soft_downgrade`: the model a refused or over-budget model is replaced with' }),
    by_api_key: z.record(z.string(), z.array(ModelIdSchema)).meta({
      description:
        'the models an organization API key may use, by key id, within `allowed`; a key without an entry may use every allowed model',
    }),
    routing: ModelRoutingSchema.nullable().meta({
      description: 'how `model: "auto"` chooses; null: `auto` is the organization\'s default',
    }),
  })
  .meta({ id: 'ModelGovernance' });
export type ModelGovernance = z.infer<typeof ModelGovernanceSchema>;

const ModelGovernancePatchSchema = z
  .object({
    allowed: z.array(ModelIdSchema).max(10_000).nullable().optional(),
    defaults: z
      .object({
        completions: ModelIdSchema.nullable().optional(),
        embeddings: ModelIdSchema.nullable().optional(),
      })
      .strict()
      .nullable()
      .optional(),
    downgrade: keyedBy(StoredModelIdSchema, ModelIdSchema.nullable())
      .superRefine(keysSetAre(ModelIdSchema))
      .nullable()
      .optional(),
    by_api_key: keyedBy(QuotaKeySchema, z.array(ModelIdSchema).max(10_000).nullable()).nullable().optional(),
    routing: ModelRoutingSchema.nullable().optional(),
  })
  .strict()
  .nullable();

/** `PATCH /v1/quotas/settings`: a JSON merge patch (RFC 7396); `null` removes an entry or a limit. */
export const SettingsPatchSchema = z
  .object({
    policy: z
      .enum(['hard_block', 'soft_downgrade'])
      .nullable()
      .optional()
      .meta({ description: '`null`: back to the default, `hard_block`' }),
    models: ModelGovernancePatchSchema.optional().meta({
      description:
        'model governance: `allowed` (null = every enabled model), `defaults` per type, `downgrade` map, `by_api_key` (the models each organization API key may use, by key id), `routing` (how `model: "auto"` chooses); `null` resets a member',
    }),
    org_user_quotas: z
      .object({
        overrides: keyedBy(UserIdKeySchema, UserQuotaPatchSchema).nullable().optional(),
        by_role: keyedBy(QuotaKeySchema, UserQuotaPatchSchema)
          .superRefine(keysSetAre(RoleSlugSchema))
          .nullable()
          .optional(),
        by_api_key: keyedBy(QuotaKeySchema, ApiKeyQuotaPatchSchema).nullable().optional().meta({
          description:
            "an organization API key's own rpm / tpm and month's budget (monthly_tokens, monthly_cost in the plan currency), by key id (no plan default applies)",
        }),
      })
      .strict()
      .nullable()
      .optional()
      .meta({
        description:
          '`null` removes every entry, `overrides: null` (or `by_role`, `by_api_key`) those of one map',
      }),
  })
  .strict()
  .meta({ id: 'OrgQuotaSettingsPatch' });

export const SettingsResponseSchema = z
  .object({
    orgSlug: z.string(),
    plan: z.string(),
    policy: z.enum(['hard_block', 'soft_downgrade']),
    org_user_quotas: OrgUserQuotasSchema,
    models: ModelGovernanceSchema,
    updated_at: z.iso.datetime(),
    updated_by: z.string().nullable(),
  })
  .meta({ id: 'OrgQuotaSettings' });
export type SettingsResponse = z.infer<typeof SettingsResponseSchema>;

/** `PUT /internal/orgs/:orgSlug/plan` */
export const AssignPlanSchema = z.object({ plan: PlanNameSchema }).strict();

// ---- as published in the OpenAPI document ----------------------------------------------------------
// The schemas above type what the code builds. The published ones below state the contract: spec 2.1 and
// 2.2's required fields exactly, every object open to fields added later (spec 9.3).

const gauge = QuotaGaugeSchema.shape;
const POLICY = z
  .enum(['hard_block', 'soft_downgrade'])
  .meta({ description: 'quota policy; `hard_block` is the default' });
const PublishedUserQuotaSchema = z.looseObject({
  rpm: z.number().int().nonnegative().optional(),
  tpm: z.number().int().nonnegative().optional(),
});
const PublishedApiKeyQuotaSchema = PublishedUserQuotaSchema.extend({
  monthly_tokens: z.number().int().nonnegative().optional(),
  monthly_cost: z.number().nonnegative().optional().meta({ description: 'in the plan currency' }),
});
const PublishedOrgUserQuotasSchema = z
  .looseObject({
    overrides: z
      .record(z.string(), PublishedUserQuotaSchema)
      .meta({ description: 'per-user limits by user id' }),
    by_role: z
      .record(z.string(), PublishedUserQuotaSchema)
      .meta({ description: 'per-user limits by organization role' }),
    by_api_key: z
      .record(z.string(), PublishedApiKeyQuotaSchema)
      .optional()
      .meta({ description: 'addition: limits of an organization API key, by key id' }),
  })
  .meta({ id: 'OrgUserQuotas', description: "the organization's per-user quota settings" });

/** Spec 2.2. */
export const PublishedQuotaGaugeSchema = z
  .looseObject({
    key: gauge.key,
    scope: z.enum(['user', 'org']),
    window: gauge.window.meta({ description: '`minute` for rate keys, `month` for monthly keys' }),
    limit: gauge.limit,
    used: gauge.used,
    percent: gauge.percent,
    as_of: gauge.as_of,
    source: gauge.source.optional(),
    resets_at: gauge.resets_at,
  })
  .meta({ id: 'QuotaGauge', description: 'A limit and its usage in the current window (spec 2.2)' });

/** An item of spec 2.1's `enforced`: a plan limit of the organization. */
export const PublishedOrgQuotaGaugeSchema = PublishedQuotaGaugeSchema.extend({
  source: z.literal('plan'),
  scope: z.literal('org'),
}).meta({ id: 'OrgQuotaGauge', description: 'A plan limit the gateway enforces for the organization' });

/** `GET /v1/quotas/usage` (spec 2.1). */
export const PublishedUsageResponseSchema = z
  .looseObject({
    orgSlug: z.string().meta({ description: 'organization identifier' }),
    computed_at: z.iso.datetime().meta({ description: 'time the response was computed' }),
    usage_refreshed_at: z.iso.datetime().nullable().optional().meta({
      description: 'last refresh of the monthly usage aggregate; null when none this month',
    }),
    policy: POLICY,
    enforced: z
      .array(PublishedOrgQuotaGaugeSchema)
      .meta({ description: 'plan limits enforced by the gateway, with usage' }),
    included: z
      .looseObject({
        members: z.number().optional(),
        agents: z.number().optional(),
        interactions: z.number().optional(),
        storage: z.number().optional().meta({ description: 'GB' }),
      })
      .optional()
      .meta({ description: 'contractual limits of the plan, as configured, without usage (free-form)' }),
    per_user_defaults: z
      .looseObject({ rpm: z.number().optional(), tpm: z.number().optional() })
      .optional()
      .meta({ description: 'plan default per-user limits (free-form)' }),
    org_user_quotas: PublishedOrgUserQuotasSchema.optional(),
    plan: z
      .looseObject({ name: z.string(), currency: z.string() })
      .optional()
      .meta({ description: 'addition: the plan in force and the currency of cost gauges' }),
    user: z
      .looseObject({
        userId: z.string(),
        role: z.string().nullable(),
        enforced: z.array(PublishedQuotaGaugeSchema),
      })
      .optional()
      .meta({
        description:
          "addition: the caller's own per-user rate gauges (scope `user`), for credentials that carry a user",
      }),
    api_key: z
      .looseObject({
        id: z.string(),
        enforced: z.array(PublishedQuotaGaugeSchema.extend({ scope: z.literal('api_key') })),
      })
      .optional()
      .meta({
        description:
          "addition: the calling organization API key's rate and month gauges (scope `api_key`), when its organization set limits for it",
      }),
  })
  .meta({ id: 'OrgQuotaUsage', description: 'Organization quota usage (spec 2.1)' });

/** `GET` and `PATCH /v1/quotas/settings`. */
export const PublishedSettingsResponseSchema = z
  .looseObject({
    orgSlug: z.string(),
    plan: z.string(),
    policy: POLICY,
    org_user_quotas: PublishedOrgUserQuotasSchema,
    models: z
      .looseObject({
        allowed: z.array(z.string()).nullable(),
        defaults: z.looseObject({ completions: z.string().optional(), embeddings: z.string().optional() }),
        downgrade: z.record(z.string(), z.string()),
        by_api_key: z
          .record(z.string(), z.array(z.string()))
          .optional()
          .meta({ description: 'the models an organization API key may use (within `allowed`), by key id' }),
        routing: z
          .looseObject({ strategy: z.string(), rules: z.array(z.looseObject({})).optional() })
          .nullable()
          .optional()
          .meta({
            description: 'how `model: "auto"` chooses (`rules` or `cost_optimized`); null: the default',
          }),
      })
      .optional()
      .meta({
        id: 'ModelGovernance',
        description: "the organization's model governance (allowed, defaults, downgrade, by_api_key)",
      }),
    updated_at: z.iso.datetime(),
    updated_by: z.string().nullable().meta({ description: '`user:<id>` or `<credential kind>:<id>`' }),
  })
  .meta({ id: 'OrgQuotaSettings' });
