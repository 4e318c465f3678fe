import { readFileSync } from 'node:fs';
import { commonConfig, env } from '@platform/kernel';
import { z } from 'zod';
import { BUILT_IN_PLANS, type PlanCatalog, PlanCatalogSchema, PlanNameSchema } from './domain/plans';

const describeIssues = (error: z.ZodError) =>
  error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('; ');

/** Parses a plan catalogue from JSON text, reporting the offending plan fields. */
function catalogFrom(text: string, ctx: z.RefinementCtx, where: string): PlanCatalog {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: `${where} is not valid JSON (${(err as Error).message})` });
    return z.NEVER;
  }
  const parsed = PlanCatalogSchema.safeParse(json);
  if (!parsed.success) {
    ctx.addIssue({ code: 'custom', message: `invalid plan catalogue: ${describeIssues(parsed.error)}` });
    return z.NEVER;
  }
  return parsed.data;
}

/** llm-quota's configuration; every key is an environment variable, documented in the README. */
export const llmQuotaConfigSchema = z
  .object({
    ...commonConfig,
    /** the plan catalogue as JSON text: `{ "<plan>": { limits, included, per_user_defaults, currency } }` */
    LLM_QUOTA_PLANS: z
      .string()
      .transform((text, ctx) => catalogFrom(text, ctx, 'LLM_QUOTA_PLANS'))
      .optional(),
    /** a file holding the plan catalogue as JSON (instead of LLM_QUOTA_PLANS) */
    LLM_QUOTA_PLANS_FILE: z
      .string()
      .transform((file, ctx) => {
        let text: string;
        try {
          text = readFileSync(file, 'utf8');
        } catch (err) {
          ctx.addIssue({ code: 'custom', message: `cannot read ${file} (${(err as Error).message})` });
          return z.NEVER;
        }
        return catalogFrom(text, ctx, file);
      })
      .optional(),
    /** the plan of every organization llm-quota has not seen before */
    LLM_QUOTA_DEFAULT_PLAN: PlanNameSchema.default('free'),
    /** JetStream stream holding `analytics.>` (created if missing) */
    LLM_QUOTA_STREAM: z
      .string()
      .regex(/^[A-Za-z0-9_-]+$/)
      .default('ANALYTICS'),
    /** durable consumer name shared by every llm-quota instance */
    LLM_QUOTA_DURABLE: z
      .string()
      .regex(/^[A-Za-z0-9_-]+$/)
      .default('llm-quota'),
    /** how long the stream keeps messages when llm-quota creates it (hours; 0 = no age limit) */
    LLM_QUOTA_STREAM_MAX_AGE_HOURS: env.int(7 * 24),
    /** events being handled at once by one instance (they are counted in batches) */
    LLM_QUOTA_CONSUMER_CONCURRENCY: env.int(2_048, 1),
    /** most events counted in one batch */
    LLM_QUOTA_BATCH_MAX: env.int(1_024, 1),
    /** a batch starts at most once per this many ms under load (an event alone is counted at once); 0: no wait */
    LLM_QUOTA_BATCH_LINGER_MS: env.int(25, 0),
    /** delay before a message that could not be counted is delivered again (ms) */
    LLM_QUOTA_RETRY_DELAY_MS: env.int(1_000, 0),
    /** an event whose occurredAt is older than this when it arrives is not counted: it goes to the dead letters */
    LLM_QUOTA_MAX_EVENT_AGE_HOURS: env.int(7 * 24, 1),
    /** how long event ids are remembered to refuse duplicates; at least LLM_QUOTA_MAX_EVENT_AGE_HOURS */
    LLM_QUOTA_EVENT_ID_RETENTION_HOURS: env.int(8 * 24, 1),
    /** how long per-minute counters are kept (month counters are kept for good) */
    LLM_QUOTA_MINUTE_BUCKET_RETENTION_HOURS: env.int(48, 1),
    /** a batch whose writer has not finished within this is finished or undone by another instance (ms) */
    LLM_QUOTA_BATCH_LEASE_MS: env.int(60_000, 1_000),
    /** how often unfinished batches are recovered and old counters and ids are removed (ms) */
    LLM_QUOTA_SWEEP_INTERVAL_MS: env.int(5_000, 100),
    /** largest JSON request body (settings updates) */
    LLM_QUOTA_BODY_LIMIT_BYTES: env.int(256 * 1024, 1024),
    /** most entries one organization may hold in each map: per-user overrides, roles, API keys */
    LLM_QUOTA_MAX_USER_OVERRIDES: env.int(10_000, 1),
  })
  .superRefine((config, ctx) => {
    if (config.LLM_QUOTA_PLANS && config.LLM_QUOTA_PLANS_FILE) {
      ctx.addIssue({
        code: 'custom',
        path: ['LLM_QUOTA_PLANS_FILE'],
        message: 'set LLM_QUOTA_PLANS or LLM_QUOTA_PLANS_FILE, not both',
      });
    }
    const catalog = config.LLM_QUOTA_PLANS ?? config.LLM_QUOTA_PLANS_FILE ?? BUILT_IN_PLANS;
    if (!Object.hasOwn(catalog, config.LLM_QUOTA_DEFAULT_PLAN)) {
      ctx.addIssue({
        code: 'custom',
        path: ['LLM_QUOTA_DEFAULT_PLAN'],
        message: `no plan named "${config.LLM_QUOTA_DEFAULT_PLAN}" (plans: ${Object.keys(catalog).join(', ')})`,
      });
    }
    if (config.LLM_QUOTA_EVENT_ID_RETENTION_HOURS < config.LLM_QUOTA_MAX_EVENT_AGE_HOURS) {
      ctx.addIssue({
        code: 'custom',
        path: ['LLM_QUOTA_EVENT_ID_RETENTION_HOURS'],
        message: 'must be at least LLM_QUOTA_MAX_EVENT_AGE_HOURS, or a late duplicate could be counted twice',
      });
    }
  });
export type LlmQuotaConfig = z.infer<typeof llmQuotaConfigSchema>;

/** The plan catalogue in force: the configured one, else the built-in plans. */
export const planCatalogOf = (config: LlmQuotaConfig): PlanCatalog =>
  config.LLM_QUOTA_PLANS ?? config.LLM_QUOTA_PLANS_FILE ?? BUILT_IN_PLANS;
