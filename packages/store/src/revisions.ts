import { randomUUID } from 'node:crypto';
import { Conflict } from '@platform/kernel';
import type { Collection, Doc, Filter, Update } from './port';

/**
 * A document read-modify-written through `updateWithRevision`: `revision` is replaced by a fresh random value
 * at every such write (random rather than counted, so that a document deleted and made again never matches a
 * revision read before).
 */
export interface Revised extends Doc {
  revision?: string;
}

/** how many times a change is computed again before the caller is told to try later */
const DEFAULT_ATTEMPTS = 50;

/** Another writer kept changing the document: 409, to try again. */
const concurrentUpdate = (): Conflict =>
  new Conflict('The resource was changed by other requests meanwhile; try again', {
    error: 'ConcurrentUpdate',
    retryable: true,
  });

/**
 * Read-modify-write of one document that no concurrent writer can undo (optimistic concurrency, on both
 * engines): `change` gets the document as it stands and answers the update to make from it (null: nothing to
 * write); the update is written only if the document's `revision` is still the one read, else the document
 * is read again and `change` runs again (each miss means another writer's change went in, so every racer
 * gets through in turn). Errors `change` throws (invalid input, say) come out as they are.
 *
 * Only writes that go through here (or set a fresh `revision` themselves) are noticed: every writer of the
 * fields concerned must. Answers null when no document matches `filter` (deleted meanwhile, say), else the
 * document before and after; throws 409 `ConcurrentUpdate` after `attempts` misses in a row.
 */
export async function updateWithRevision<T extends Revised>(
  collection: Collection<T>,
  filter: Filter,
  change: (current: T) => Update | null | Promise<Update | null>,
  options: { attempts?: number } = {},
): Promise<{ before: T; after: T } | null> {
  const attempts = options.attempts ?? DEFAULT_ATTEMPTS;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const read = await collection.findOne(filter);
    if (!read) return null;
    // A document without a revision gets one first, so the change is computed from a version that no later
    // one can pass for (one deleted and inserted again, say).
    const current =
      read.revision === undefined
        ? await collection.findOneAndUpdate(
            { ...filter, _id: read._id, revision: { $exists: false } },
            { $set: { revision: randomUUID() } },
          )
        : read;
    if (!current) continue;
    const update = await change(current);
    if (!update) return { before: current, after: current };
    const { revision: _ignored, ...unset } = update.$unset ?? {};
    const guarded: Update = {
      ...update,
      $set: { ...update.$set, revision: randomUUID() },
      ...(update.$unset ? { $unset: unset } : {}),
    };
    const after = await collection.findOneAndUpdate(
      { ...filter, _id: current._id, revision: current.revision },
      guarded,
    );
    if (after) return { before: current, after };
  }
  throw concurrentUpdate();
}

/**
 * Deletes one document as it stands: only the version read (`current`, then as read again), so a caller giving
 * back what the document held (its bytes, say) gives back what was deleted, never what a version written meanwhile
 * holds. `check` runs on each version read again (and may throw to refuse the deletion). Answers the document
 * deleted, or null when none matches `filter` any more; throws 409 `ConcurrentUpdate` after `attempts` misses.
 */
export async function deleteAsRead<T extends Revised>(
  collection: Collection<T>,
  filter: Filter,
  current: T,
  check: (doc: T) => Promise<void> = async () => undefined,
  options: { attempts?: number } = {},
): Promise<T | null> {
  const attempts = options.attempts ?? DEFAULT_ATTEMPTS;
  let doc: T | null = current;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const revision = doc.revision ?? { $exists: false };
    if (await collection.deleteOne({ ...filter, revision })) return doc;
    doc = await collection.findOne(filter);
    if (!doc) return null;
    await check(doc);
  }
  throw concurrentUpdate();
}
