import type { z } from 'zod';
import { InvalidInput } from '../errors';

/** Parses input against a schema; failures become InvalidInput listing each offending field. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where = 'body'): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => ({
    field: issue.path.length ? issue.path.join('.') : where,
    message: issue.message,
  }));
  throw new InvalidInput(`Invalid ${where}: ${issues.map((i) => `${i.field}: ${i.message}`).join('; ')}`, {
    code: 'INVALID_BODY',
    details: { issues },
  });
}
