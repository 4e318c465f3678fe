import type { ModelDoc } from '../persistence/collections';
import type { LegacyContext } from './context';

/** A blob written this recently may be one whose model record is still being written (by any instance). */
export const ORPHAN_BLOB_GRACE_MS = 10 * 60_000;

/**
 * A model's blob is written before its record names it, and the blob it replaced is deleted after (decision 0089):
 * a process stopped in between (kill -9, the store away for the record's write) leaves a blob that no record names,
 * which nothing would ever read or delete. At start, blobs named by no model record and written more than
 * `ORPHAN_BLOB_GRACE_MS` ago are deleted; the grace leaves alone a blob another instance has just written and is
 * about to name. `models`: every model record, as the start read them.
 */
export async function removeOrphanModelBlobs(ctx: LegacyContext, models: readonly ModelDoc[]): Promise<void> {
  const { cols, clock, logger } = ctx;
  try {
    const named = new Set(models.flatMap((m) => (m.blob ? [m.blob] : [])));
    const before = clock.now().getTime() - ORPHAN_BLOB_GRACE_MS;
    const orphans = (await cols.modelBlobs.list()).filter(
      (blob) => !named.has(blob.id) && blob.writtenAt.getTime() < before,
    );
    for (const blob of orphans) await cols.modelBlobs.delete(blob.id);
    if (orphans.length > 0)
      logger.info({ blobs: orphans.length }, 'model blobs no record names were removed');
  } catch (err) {
    // the store is away: the next start tries again; an orphan costs disk space, nothing else
    logger.warn({ err }, 'could not look for model blobs no record names');
  }
}
