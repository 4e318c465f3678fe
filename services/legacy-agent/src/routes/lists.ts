import { parseInput, writeWithBackpressure } from '@platform/kernel';
import type { Request, Response } from 'express';
import { z } from 'zod';

/** the most items one page of a list holds */
const PAGE_LIMIT_MAX = 200;
const PAGE_LIMIT_DEFAULT = 100;

/** The header naming the `after` of a list's next page; absent on the last page (and on an unpaged list). */
export const NEXT_AFTER_HEADER = 'X-Next-After';

/**
 * Paging of the `/v1` lists (an addition, opt-in): without `limit` or `after` the list is answered whole, as
 * before; other query parameters are ignored, as they were.
 */
export const listQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(PAGE_LIMIT_MAX)
    .optional()
    .meta({
      description: `addition: answer one page of this many items (1-${PAGE_LIMIT_MAX}; ${PAGE_LIMIT_DEFAULT} when only \`after\` is given), in id order`,
    }),
  after: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .meta({ description: `addition: the page after this id: the previous page's \`${NEXT_AFTER_HEADER}\`` }),
});

/** A list the routes answer: whole, a batch at a time, or one page. */
interface PagedList<T> {
  all(): AsyncIterable<T[]>;
  page(limit: number, after?: string): Promise<{ docs: T[]; nextAfter: string | null }>;
}

/**
 * Answers a list: one page (`limit`, `after`), its next page's `after` in `X-Next-After`; or, without them, the
 * whole list as a JSON array written batch by batch as it is read (the first batch read before anything is
 * written, so a failure to read answers in the envelope). Bad paging values are 400.
 */
export async function answerList<T>(
  req: Request,
  res: Response,
  list: PagedList<T>,
  view: (doc: T) => unknown,
): Promise<void> {
  const q = parseInput(listQuery, req.query, 'query');
  if (q.limit !== undefined || q.after !== undefined) {
    const { docs, nextAfter } = await list.page(q.limit ?? PAGE_LIMIT_DEFAULT, q.after);
    if (nextAfter !== null) res.setHeader(NEXT_AFTER_HEADER, nextAfter);
    res.json(docs.map(view));
    return;
  }
  const batches = list.all()[Symbol.asyncIterator]();
  let next = await batches.next();
  res.type('json');
  let separator = '[';
  while (!next.done) {
    const text = separator + next.value.map((doc) => JSON.stringify(view(doc))).join(',');
    separator = ',';
    if (!(await writeWithBackpressure(res, text))) {
      await batches.return?.(undefined);
      return;
    }
    next = await batches.next();
  }
  res.end(separator === '[' ? '[]' : ']');
}
