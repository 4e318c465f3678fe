import { z } from 'zod';

export class ConfigError extends Error {
  constructor(readonly issues: Array<{ key: string; message: string }>) {
    super(`Invalid configuration: ${issues.map((i) => `${i.key}: ${i.message}`).join('; ')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Parses a service's configuration once from the environment against its zod schema and freezes it.
 * Schema keys are the environment variable names. A bad value throws a ConfigError naming the key;
 * main.ts turns that into a message and exit code 1.
 */
export function loadConfig<S extends z.ZodObject>(
  schema: S,
  env: Record<string, string | undefined> = process.env,
): Readonly<z.infer<S>> {
  const input: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const result = schema.safeParse(input);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((issue) => ({
        key: String(issue.path[0] ?? '(config)'),
        message: issue.message,
      })),
    );
  }
  return Object.freeze(result.data);
}

/** Reusable environment-value parsers. */
export const env = {
  port: (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback),
  int: (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback),
  bool: (fallback: boolean) =>
    z
      .enum(['true', 'false', '1', '0'])
      .default(fallback ? 'true' : 'false')
      .transform((v) => v === 'true' || v === '1'),
  url: () => z.url(),
  logLevel: () => z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** a date-time or a plain date (taken as midnight UTC) */
  instant: (fallback: string) =>
    z
      .string()
      .default(fallback)
      .transform((v, ctx) => {
        const d = new Date(/^\d{4}-\d{2}-\d{2}$/.test(v) ? `${v}T00:00:00Z` : v);
        if (Number.isNaN(d.getTime())) {
          ctx.addIssue({ code: 'custom', message: 'must be an ISO 8601 date or date-time' });
          return z.NEVER;
        }
        return d;
      }),
};
