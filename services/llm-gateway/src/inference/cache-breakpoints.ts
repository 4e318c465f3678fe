import { z } from 'zod';

/**
 * Prompt-cache breakpoints (decision 0113): Anthropic caches a prompt's prefix only up to an explicit
 * `cache_control: {type: "ephemeral", ttl?}` marker, and takes at most four per request. Chat requests carry them as
 * LiteLLM's convention does (on content parts, messages and tools); the Messages API carries them as Anthropic's.
 */

/** Anthropic's limit; more is refused by the gateway with its own 400, before any quota or provider call. */
export const MAX_CACHE_BREAKPOINTS = 4;

/** `{type: "ephemeral", ttl?: "5m" | "1h"}`, Anthropic's only form; `null` is no breakpoint. */
export const CacheControlSchema = z
  .strictObject({
    type: z.literal('ephemeral', { error: "the only cache_control type is 'ephemeral'" }),
    ttl: z.enum(['5m', '1h'], { error: "a cache_control ttl is '5m' or '1h'" }).optional(),
  })
  .nullable()
  .optional()
  .meta({
    description:
      "a prompt-cache breakpoint `{type: 'ephemeral', ttl?: '5m' | '1h'}`: sent to Anthropic models on the matching block, never to OpenAI-protocol ones (at most 4 per request)",
  });

/** What is wrong with a `cache_control` value, or null when it is a breakpoint or none. */
export function cacheControlProblem(value: unknown): string | null {
  const parsed = CacheControlSchema.safeParse(value);
  return parsed.success ? null : parsed.error.issues.map((issue) => issue.message).join('; ');
}

type Json = Record<string, unknown>;
const hasBreakpoint = (item: unknown): boolean =>
  typeof item === 'object' && item !== null && (item as Json).cache_control != null;

export const tooManyBreakpoints = `at most ${MAX_CACHE_BREAKPOINTS} cache_control breakpoints in a request (Anthropic's limit): this is one more`;

type Issue = { path: Array<string | number>; message: string };

/**
 * What the chat schema cannot say by itself: the content parts' breakpoints (zod reports a failed union of a
 * string or parts with no path inside it) and a fifth breakpoint. Every `cache_control` given counts, on tools,
 * messages and parts, in the order Anthropic reads them (tools, then the messages); the fifth is named.
 */
export function chatBreakpointIssues(body: { messages: unknown[]; tools?: unknown }): Issue[] {
  const issues: Issue[] = [];
  let count = 0;
  const count1 = (path: Array<string | number>) => {
    if (++count === MAX_CACHE_BREAKPOINTS + 1) issues.push({ path, message: tooManyBreakpoints });
  };
  const tools = Array.isArray(body.tools) ? body.tools : [];
  for (let i = 0; i < tools.length; i++) if (hasBreakpoint(tools[i])) count1(['tools', i, 'cache_control']);
  for (let i = 0; i < body.messages.length; i++) {
    const message = body.messages[i] as Json;
    const content = message?.content;
    if (Array.isArray(content))
      for (let j = 0; j < content.length; j++) {
        if (!hasBreakpoint(content[j])) continue;
        const path = ['messages', i, 'content', j, 'cache_control'];
        const parsed = CacheControlSchema.safeParse((content[j] as Json).cache_control);
        if (!parsed.success)
          for (const issue of parsed.error.issues)
            issues.push({
              path: [...path, ...(issue.path as Array<string | number>)],
              message: issue.message,
            });
        count1(path);
      }
    if (hasBreakpoint(message)) count1(['messages', i, 'cache_control']);
  }
  return issues;
}
