import { commonConfig, env } from '@platform/kernel';
import { z } from 'zod';
import { BUILT_IN_GATEWAY_FILE, type GatewayFile, readGatewayFile } from './gateway-file';
import { parseCidr } from './providers/http/destinations';

/** llm-gateway's configuration; every key is an environment variable, documented in the README. */
export const llmGatewayConfigSchema = z.object({
  ...commonConfig,
  /** YAML or JSON file listing `providers` and `models`; unset: the built-in `mock/*` models (chat, embeddings, images, transcriptions, speech) */
  LLM_GATEWAY_CONFIG: z
    .string()
    .transform((file, ctx): GatewayFile => {
      try {
        return readGatewayFile(file);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    })
    .optional(),
  /** secret the provider keys are encrypted with at rest (default: derived from PLATFORM_INTERNAL_SECRET) */
  LLM_GATEWAY_ENCRYPTION_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
  /** llm-quota's base URL: the gateway reads organizations' settings and budgets there */
  LLM_QUOTA_URL: z.url(),
  /** largest JSON request body (bytes) */
  LLM_GATEWAY_BODY_LIMIT_BYTES: env.int(10 * 1024 * 1024, 1024),
  /** how often an instance checks the store for catalogue changes it missed on the bus (ms; 0: never) */
  LLM_GATEWAY_CATALOGUE_POLL_MS: env.int(10_000, 0),
  /** largest audio upload to /v1/audio/transcriptions and /v1/audio/translations (bytes; the edge's UPLOAD_BODY_LIMIT_BYTES must allow it) */
  LLM_GATEWAY_AUDIO_MAX_BYTES: env.int(25 * 1024 * 1024, 1024),
  /** provider timeout of a model that names none (ms) */
  LLM_GATEWAY_DEFAULT_TIMEOUT_MS: env.int(60_000, 100),
  /** attempts on one model for a provider 429/5xx before failing over or answering the error */
  LLM_GATEWAY_MAX_ATTEMPTS: env.int(3, 1),
  /** first retry delay (ms); doubles each attempt, with jitter, capped by the provider's Retry-After */
  LLM_GATEWAY_RETRY_BASE_MS: env.int(200, 0),
  /** a provider's Retry-After longer than this is not waited for: failover (or the error) comes first (ms) */
  LLM_GATEWAY_RETRY_MAX_WAIT_MS: env.int(5_000, 0),
  /** how long a deployment of a model served by several sits out after a 429, 5xx, timeout or lost connection, on this instance, when the provider names no Retry-After (ms) */
  LLM_GATEWAY_DEPLOYMENT_COOLDOWN_MS: env.int(10_000, 0),
  /** the longest a provider's Retry-After keeps such a deployment out (ms) */
  LLM_GATEWAY_DEPLOYMENT_COOLDOWN_MAX_MS: env.int(60_000, 0),
  /** how long an organization's quota settings are fresh in one instance (ms); for one more such time they answer while a refresh runs */
  LLM_GATEWAY_SETTINGS_TTL_MS: env.int(5_000, 0),
  /** organizations whose settings one instance keeps (the least recently used leave first; one that left is read again) */
  LLM_GATEWAY_SETTINGS_CACHE_MAX_ENTRIES: env.int(10_000, 1),
  /** how often the outbox retries publishing events the bus refused (ms) */
  LLM_GATEWAY_OUTBOX_INTERVAL_MS: env.int(1_000, 50),
  /** under load, the outbox writes its events in at most one group per this many ms (an event alone is written at once); 0: no wait */
  LLM_GATEWAY_OUTBOX_LINGER_MS: env.int(10, 0),
  /** a usage event the bus has not acknowledged within this stays in the outbox for a later try (ms) */
  LLM_GATEWAY_PUBLISH_TIMEOUT_MS: env.int(2_000, 10),
  /**
   * networks (CIDRs or addresses, comma-separated) that providers defined by platform administrators may reach
   * besides public addresses, e.g. `10.20.0.0/16` for a vLLM cluster; loopback, private, link-local (cloud
   * metadata) and other non-public addresses are refused otherwise. The gateway file's and the operator's
   * providers are not restricted
   */
  LLM_GATEWAY_PROVIDER_PRIVATE_NETWORKS: z
    .string()
    .default('')
    .transform((value, ctx) => {
      const networks = value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      for (const network of networks)
        if (!parseCidr(network))
          ctx.addIssue({ code: 'custom', message: `not an address or CIDR: ${network}` });
      return networks;
    }),
  /** how long a stored response (`store`, the default) is kept after the last response of its chain was made (days; decision 0108) */
  LLM_GATEWAY_RESPONSES_RETENTION_DAYS: env.int(30, 1),
  /** the most responses one `previous_response_id` chain may hold; a request that would make it longer is 400 `RESPONSE_CHAIN_TOO_LONG` */
  LLM_GATEWAY_RESPONSES_MAX_CHAIN: env.int(1_000, 1),
  /** the most bytes (JSON) of input and output items one chain may hold, the new request's input included; more is 400 `RESPONSE_CHAIN_TOO_LONG` */
  LLM_GATEWAY_RESPONSES_MAX_CHAIN_BYTES: env.int(16 * 1024 * 1024, 1024),
  /** how long a conversation (`/v1/conversations`) and its items are kept after its last change: items added, a response made in it, its metadata updated (days; decision 0110) */
  LLM_GATEWAY_CONVERSATIONS_RETENTION_DAYS: env.int(30, 1),
  /** the most items one conversation may hold; adding more is 400 `CONVERSATION_TOO_LONG` (a response's output is added whatever this says, once its input passed) */
  LLM_GATEWAY_CONVERSATIONS_MAX_ITEMS: env.int(2_000, 1),
  /** the most bytes (JSON) of items one conversation may hold; adding more is 400 `CONVERSATION_TOO_LONG` */
  LLM_GATEWAY_CONVERSATIONS_MAX_BYTES: env.int(16 * 1024 * 1024, 1024),
  /** grid emission factor for the carbon estimate (kgCO2eq per kWh; default: world average) */
  LLM_GATEWAY_GRID_KGCO2_PER_KWH: z.coerce.number().positive().default(0.59),
  /** data-centre power usage effectiveness for the carbon estimate */
  LLM_GATEWAY_PUE: z.coerce.number().min(1).default(1.2),
});
export type LlmGatewayConfig = z.infer<typeof llmGatewayConfigSchema>;

/** The gateway file in force: the configured one, else the built-in mock models. */
export const gatewayFileOf = (config: LlmGatewayConfig): GatewayFile =>
  config.LLM_GATEWAY_CONFIG ?? BUILT_IN_GATEWAY_FILE;
