import { z } from 'zod';

/**
 * An item as the gateway keeps it, with its id and status: a response's input items (decision 0108) and a
 * conversation's items (0110) are the same shapes, a conversation's items also answered (so possibly incomplete).
 */
export function storedItemSchema(kept: {
  /** the status an item may have */
  status: z.ZodType;
  /** what a message's `content` holds */
  parts: string;
  /** what any other item is */
  other: string;
}) {
  return z.union([
    z.object({
      id: z.string().meta({ description: "the client's, else `msg_...`" }),
      type: z.literal('message'),
      role: z.enum(['user', 'system', 'developer', 'assistant']),
      content: z.array(z.record(z.string(), z.unknown())).meta({ description: kept.parts }),
      status: kept.status,
    }),
    z.object({
      id: z.string().meta({ description: "the client's, else `fc_...`" }),
      type: z.literal('function_call'),
      status: kept.status,
      call_id: z.string(),
      name: z.string(),
      arguments: z.string(),
    }),
    z.object({
      id: z.string().meta({ description: "the client's, else `fco_...`" }),
      type: z.literal('function_call_output'),
      status: z.literal('completed'),
      call_id: z.string(),
      output: z.union([z.string(), z.array(z.record(z.string(), z.unknown()))]),
    }),
    z.record(z.string(), z.unknown()).meta({ description: kept.other }),
  ]);
}

/** OpenAI's cursor list of stored items: one page, with the cursors for the next (the same for both kinds). */
export const storedItemListSchema = (item: z.ZodType) =>
  z.object({
    object: z.literal('list'),
    data: z.array(item),
    first_id: z.string().nullable().meta({ description: "the first listed item's id; null when none is" }),
    last_id: z
      .string()
      .nullable()
      .meta({ description: "the last listed item's id (the next page's `after`)" }),
    has_more: z.boolean(),
  });
