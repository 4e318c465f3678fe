import { commonConfig, env } from '@platform/kernel';
import { z } from 'zod';
import { compileAddressList } from './domain/address-keys';

/** legacy-agent's configuration; every key is an environment variable, documented in the README. */
export const legacyAgentConfigSchema = z.object({
  ...commonConfig,
  /** scrypt cost N of new password hashes (a power of two); existing hashes keep their own */
  LEGACY_PASSWORD_SCRYPT_COST: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1_048_576)
    .refine((n) => (n & (n - 1)) === 0, 'must be a power of two')
    .default(32_768),
  /** lifetime of a legacy session token made by signup or login */
  LEGACY_SESSION_TTL_SECONDS: env.int(30 * 24 * 3600, 60),
  /** longest lifetime a legacy access token may be given (its `expiresAt`) */
  LEGACY_ACCESS_TOKEN_MAX_TTL_SECONDS: env.int(2 * 365 * 24 * 3600, 60),
  /** failed logins of one username within LEGACY_LOGIN_FAILURE_WINDOW_SECONDS before login answers 429 */
  LEGACY_LOGIN_MAX_FAILURES: env.int(10, 1),
  /** the window (seconds) in which LEGACY_LOGIN_MAX_FAILURES failed logins are counted */
  LEGACY_LOGIN_FAILURE_WINDOW_SECONDS: env.int(15 * 60, 1),
  /**
   * 32 bytes, base64 or base64url: AES-256-GCM key that encrypts developer tokens at rest so the owning
   * account can read them again. Unset: derived from PLATFORM_INTERNAL_SECRET with HKDF.
   */
  LEGACY_TOKEN_ENCRYPTION_KEY: z
    .string()
    .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be 32 bytes in base64')
    .optional(),
  /** intent confidence (0..1) below which the fallback intent answers */
  LEGACY_NLU_THRESHOLD: z.coerce.number().min(0).max(1).default(0.3),
  /** quiet time after the last intent or entity change before a model is retrained */
  LEGACY_RETRAIN_DEBOUNCE_MS: env.int(500, 0),
  /** a burst of changes never delays retraining by more than this after its first change */
  LEGACY_RETRAIN_MAX_DELAY_MS: env.int(5_000, 0),
  /** how long a Messages call waits for an assistant's first model before answering with the fallback */
  LEGACY_FIRST_MODEL_WAIT_MS: env.int(10_000, 0),
  /** trained models kept in memory (one per assistant and language); others load from the store on use */
  LEGACY_MODEL_CACHE_SIZE: env.int(500, 1),
  /** train in a worker process (true) or on the main thread (false; only for debugging) */
  LEGACY_TRAIN_IN_WORKER: env.bool(true),
  /** how much lower (nice, 0-19) the training worker process runs than the process answering Messages */
  LEGACY_TRAINING_NICE: z.coerce.number().int().min(0).max(19).default(10),
  /** most training sentences (every intent's, in one language) a model is trained on: beyond, training is refused */
  LEGACY_MAX_TRAINING_SENTENCES: env.int(50_000, 1),
  /** a training still running after this long is stopped (one training at a time serves every assistant) */
  LEGACY_TRAINING_TIMEOUT_SECONDS: env.int(600, 1),
  /** a conversation idle for longer than this ends; the user's next message starts a new session */
  LEGACY_CONVERSATION_IDLE_SECONDS: env.int(30 * 60, 1),
  /** turns an output context stays active when its intent does not say */
  LEGACY_DEFAULT_CONTEXT_LIFESPAN: env.int(5, 1),
  /**
   * what the built-in fallback says, in every language, when the assistant has no fallback intent of its own; unset:
   * "Sorry, I didn't get that. Could you say it another way?" in the conversation's language (en, fr, de, es, it,
   * pt, nl; English otherwise)
   */
  LEGACY_BUILTIN_FALLBACK_TEXT: z.string().min(1).optional(),
  /** largest JSON request body */
  LEGACY_BODY_LIMIT_BYTES: env.int(2 * 1024 * 1024, 1024),
  /** largest body of the public POST /v1/Messages (a text is at most 4,000 characters) */
  LEGACY_MESSAGES_BODY_LIMIT_BYTES: env.int(64 * 1024, 1024),
  /**
   * messages one client address may send to one assistant per LEGACY_MESSAGES_RATE_WINDOW_SECONDS (an IPv6
   * address counts by its /64); 0: no limit by address
   */
  LEGACY_MESSAGES_PER_ADDRESS: env.int(120, 0),
  /** messages one `userId` (one conversation's user) may send to one assistant per window; 0: no limit by user */
  LEGACY_MESSAGES_PER_USER: env.int(30, 0),
  /** the window (seconds, aligned on the clock) in which the two limits above are counted */
  LEGACY_MESSAGES_RATE_WINDOW_SECONDS: env.int(60, 1),
  /**
   * client addresses (addresses or CIDRs, comma-separated) limited only by user, not by address: server-side
   * connectors that send many users' messages from one address
   */
  LEGACY_MESSAGES_UNLIMITED_ADDRESSES: z
    .string()
    .default('')
    .superRefine((value, ctx) => {
      try {
        compileAddressList(value);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: `must be addresses or CIDRs (${(err as Error).message})` });
      }
    }),
  /** most intents one assistant may hold */
  LEGACY_MAX_INTENTS: env.int(2_000, 1),
  /** most entities one assistant may hold */
  LEGACY_MAX_ENTITIES: env.int(1_000, 1),
  /** most bytes one assistant's intents and entities may take (their stored JSON): the service holds them in memory */
  LEGACY_MAX_ASSISTANT_BYTES: env.int(32 * 1024 * 1024, 1024),
  /** the name answered in the assistant's `nlu` field */
  LEGACY_NLU_NAME: z.string().min(1).default('platform-nlu'),
});
export type LegacyAgentConfig = z.infer<typeof legacyAgentConfigSchema>;
