import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { BlobBucket, Doc, Store } from './port';

const BLOB_ID = /^[A-Za-z0-9_:-]{1,200}$/;

function checkId(id: string): void {
  if (!BLOB_ID.test(id)) throw new Error(`Invalid blob id: ${id}`);
}

export const checkBucketName = (name: string): void => {
  if (!/^[A-Za-z0-9_-]+$/.test(name)) throw new Error(`Invalid blob bucket name: ${name}`);
};

const PARTIAL = '.partial';

/**
 * A file per blob in `folder`. A blob is written to a file of its own and renamed over the old one, so a
 * reader (or a restart after kill -9) sees the old bytes or the new ones, never a mix; the partial files of writes
 * cut short are removed by the first write after a start.
 */
export function fileBlobs(folder: string): BlobBucket {
  let made = false;
  const fileOf = (id: string) => {
    checkId(id);
    return path.join(folder, id);
  };
  return {
    async put(id, bytes) {
      const file = fileOf(id);
      if (!made) {
        mkdirSync(folder, { recursive: true, mode: 0o700 });
        // what writes cut short (kill -9) left: the folder is this process's, so none of them is still being written
        for (const name of readdirSync(folder))
          if (name.endsWith(PARTIAL)) rmSync(path.join(folder, name), { force: true });
        made = true;
      }
      const partial = path.join(folder, `.${randomUUID()}${PARTIAL}`);
      try {
        await writeFile(partial, bytes, { mode: 0o600 });
        await rename(partial, file);
      } catch (err) {
        await rm(partial, { force: true });
        throw err;
      }
    },
    async get(id) {
      try {
        return await readFile(fileOf(id));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw err;
      }
    },
    async delete(id) {
      await rm(fileOf(id), { force: true });
    },
    async list() {
      let names: string[];
      try {
        names = await readdir(folder);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw err;
      }
      const listed = await Promise.all(
        // partial files (".<uuid>.partial") are writes in progress or cut short, not blobs
        names
          .filter((name) => BLOB_ID.test(name))
          .map(async (id) => {
            try {
              return { id, writtenAt: (await stat(path.join(folder, id))).mtime };
            } catch (err) {
              // deleted since the folder was read
              if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
              throw err;
            }
          }),
      );
      return listed.filter((blob) => blob !== null);
    },
  };
}

/** Blobs in this process's memory (a store without a data folder: tests). */
export function memoryBlobs(): BlobBucket {
  const blobs = new Map<string, { bytes: Buffer; writtenAt: Date }>();
  return {
    async put(id, bytes) {
      checkId(id);
      blobs.set(id, { bytes: Buffer.from(bytes), writtenAt: new Date() });
    },
    async get(id) {
      checkId(id);
      const blob = blobs.get(id);
      return blob ? Buffer.from(blob.bytes) : null;
    },
    async delete(id) {
      checkId(id);
      blobs.delete(id);
    },
    async list() {
      return [...blobs].map(([id, { writtenAt }]) => ({ id, writtenAt }));
    },
  };
}

/** One document of a blob in pieces: the head (`_id` = the blob's id) or a piece of one version of it. */
interface BlobPieceDoc extends Doc {
  blob: string;
  /** which write of the blob the document belongs to */
  version: string;
  /** the head: how many pieces and bytes that version has, and when it was written */
  pieces?: number;
  bytes?: number;
  writtenAt?: Date;
  /** a piece: its place and its bytes, base64 */
  index?: number;
  data?: string;
  /** a write's mark: when it started (removed once its head is written) */
  writingSince?: Date;
}

/** a piece's bytes: a multiple of 3, so that each piece is base64 of its own; far below MongoDB's 16 MB */
const PIECE_BYTES = 3 * 128 * 1024;

/** a write still marked after this long was cut short: writing a blob of tens of MB takes seconds */
export const CUT_WRITE_AGE_MS = 60 * 60_000;
/** how often a bucket handle looks for writes cut short (at its next write or listing) */
const SWEEP_EVERY_MS = 15 * 60_000;

/**
 * Blobs as documents of a collection (MongoDB): a new version's pieces are written first, then the head is
 * pointed at them, then the older version's pieces are removed, so a reader sees one whole version or the
 * other (it reads the head again once if a replacement removed the pieces it was reading).
 */
export function pieceBlobs(store: Pick<Store, 'collection'>, bucket: string): BlobBucket {
  checkBucketName(bucket);
  const collection = store.collection<BlobPieceDoc>(`${bucket}.blobs`, [
    { fields: { blob: 1, version: 1, index: 1 } },
    // the heads alone (list)
    { fields: { pieces: 1 } },
    // the writes' markers alone (sweepCutWrites)
    { fields: { writingSince: 1 } },
  ]);
  const read = async (id: string, attempt: number): Promise<Buffer | null> => {
    const head = await collection.findOne({ _id: id });
    if (!head) return null;
    const pieces = await collection.find(
      { blob: id, version: head.version, index: { $gte: 0 } },
      { sort: { index: 1 } },
    );
    const bytes = Buffer.concat(pieces.map((p) => Buffer.from(p.data ?? '', 'base64')));
    if (pieces.length === head.pieces && bytes.length === head.bytes) return bytes;
    if (attempt === 1) return read(id, 2);
    throw new Error(`blob ${id} is incomplete`);
  };
  /**
   * A write marks itself before its first piece and removes its mark last, after its head and the removal of the
   * version it replaced. A mark older than CUT_WRITE_AGE_MS is a write cut short (a process stopped mid-write):
   * the sweep removes every piece of that blob that neither its head nor a younger mark (a write in progress,
   * maybe another instance's) names, then the mark. It runs before a bucket handle's first write or listing,
   * and again when the last sweep is older than SWEEP_EVERY_MS.
   */
  let swept: { at: number; done: Promise<void> } | undefined;
  const sweepCutWrites = (): Promise<void> => {
    if (swept && Date.now() - swept.at < SWEEP_EVERY_MS) return swept.done;
    const done = (async () => {
      const cutoff = new Date(Date.now() - CUT_WRITE_AGE_MS);
      for (const mark of await collection.find({ writingSince: { $lt: cutoff } })) {
        const head = await collection.findOne({ _id: mark.blob });
        const writing = await collection.find({ blob: mark.blob, writingSince: { $gte: cutoff } });
        const named = [head?.version, ...writing.map((m) => m.version)].filter((v) => v !== undefined);
        await collection.deleteMany({ blob: mark.blob, index: { $gte: 0 }, version: { $nin: named } });
        await collection.deleteOne({ _id: mark._id });
      }
    })();
    swept = { at: Date.now(), done };
    done.catch(() => {
      if (swept?.done === done) swept = undefined;
    });
    return done;
  };
  return {
    async put(id, bytes) {
      checkId(id);
      await sweepCutWrites();
      const version = randomUUID();
      const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
      const pieces = Math.ceil(buffer.length / PIECE_BYTES);
      const mark = `${id}#${version}#writing`;
      await collection.insertOne({ _id: mark, blob: id, version, writingSince: new Date() });
      try {
        for (let index = 0; index < pieces; index++) {
          const data = buffer.subarray(index * PIECE_BYTES, (index + 1) * PIECE_BYTES).toString('base64');
          await collection.insertOne({ _id: `${id}#${version}#${index}`, blob: id, version, index, data });
        }
        const previous = await collection.findOne({ _id: id });
        await collection.updateOne(
          { _id: id },
          { $set: { blob: id, version, pieces, bytes: buffer.length, writtenAt: new Date() } },
          { upsert: true },
        );
        // only the version this write replaced: a concurrent write's pieces may be the ones the head names now
        if (previous && previous.version !== version)
          await collection.deleteMany({ blob: id, version: previous.version, index: { $gte: 0 } });
      } catch (err) {
        // what this write left, unless its head was written after all (an answer lost on the way): else the sweep
        try {
          if ((await collection.findOne({ _id: id }))?.version !== version) {
            await collection.deleteMany({ blob: id, version, index: { $gte: 0 } });
            await collection.deleteOne({ _id: mark });
          }
        } catch {
          // the store is away: the mark stays, and a later sweep removes what it names
        }
        throw err;
      }
      await collection.deleteOne({ _id: mark });
    },
    async get(id) {
      checkId(id);
      return read(id, 1);
    },
    async delete(id) {
      checkId(id);
      await collection.deleteOne({ _id: id });
      // the pieces, not the marks: a write of this id in progress keeps its own (it removes it, or the sweep does)
      await collection.deleteMany({ blob: id, index: { $gte: 0 } });
    },
    async list() {
      await sweepCutWrites();
      const heads = await collection.find({ pieces: { $gte: 0 } });
      return heads.map((head) => ({ id: head._id, writtenAt: head.writtenAt ?? new Date(0) }));
    },
  };
}
