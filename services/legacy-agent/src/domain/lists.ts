import type { Collection, Filter } from '@platform/store';

/** How many documents an unpaged list reads at a time. */
const BATCH = 100;

interface Listed {
  _id: string;
  createdAt: Date;
}

/**
 * Every document of `filter` in creation order (`createdAt`, then id), read `BATCH` at a time after the last one
 * read: an unpaged list is written out as it is read, never held whole (2,000 intents of up to 32 MiB in all).
 * A document made or deleted while the list is read is in it or not; each one in it is one version, whole.
 */
export async function* inCreationOrder<T extends Listed>(
  collection: Collection<T>,
  filter: Filter,
): AsyncGenerator<T[]> {
  let last: T | undefined;
  for (;;) {
    const next = last
      ? {
          $or: [
            { createdAt: { $gt: last.createdAt } },
            { createdAt: last.createdAt, _id: { $gt: last._id } },
          ],
        }
      : {};
    const batch = await collection.find(
      { ...filter, ...next },
      { sort: { createdAt: 1, _id: 1 }, limit: BATCH },
    );
    if (batch.length > 0) yield batch;
    if (batch.length < BATCH) return;
    last = batch[batch.length - 1];
  }
}

/** One page of `filter` in id order: `limit` documents after the id `after`, and the `after` of the next page. */
export async function pageById<T extends Listed>(
  collection: Collection<T>,
  filter: Filter,
  limit: number,
  after: string | undefined,
): Promise<{ docs: T[]; nextAfter: string | null }> {
  const found = await collection.find(
    { ...filter, ...(after === undefined ? {} : { _id: { $gt: after } }) },
    { sort: { _id: 1 }, limit: limit + 1 },
  );
  const docs = found.slice(0, limit);
  return { docs, nextAfter: found.length > limit ? docs[docs.length - 1]!._id : null };
}
