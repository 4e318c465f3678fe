import { Conflict, NotFound } from '@platform/kernel';
import type { LegacyContext } from './context';

/**
 * The limits on what one assistant holds are kept by counters on its document:
 * - how many intents and entities: a creation takes a place with one conditional increment (`$lt` the limit), so
 *   creations racing on several instances never pass the limit, and a deletion (or a creation that failed) gives its
 *   place back. A process that dies between the two keeps a place taken: the count errs on the side of the limit;
 * - how many bytes they take (`dataBytes`, their stored JSON; `LEGACY_MAX_ASSISTANT_BYTES`): every intent is
 *   bounded by the body limit, but 2,000 of 2 MB would hold 4 GB in the service (the embedded store keeps its data
 *   in memory) and answer a list no process can build. A creation takes its bytes with its place, atomically; an
 *   update takes its growth the same way (or gives back its shrink) before its write, and gives it back when
 *   nothing was written, so updates racing near the budget never pass it together; a deletion gives back the bytes
 *   of the version it deleted (the store's `deleteAsRead`), never those of a version an update replaced meanwhile.
 * Assistants made before a counter get it counted once, at their first creation.
 */
const COUNTERS = { intents: 'intentCount', entities: 'entityCount' } as const;
type Held = keyof typeof COUNTERS;

/**
 * The bytes an intent or entity takes as the budget counts them: its stored JSON, but its write revision and an
 * intent's `entityNames` (read from its utterances, which are counted: decision 0122 §4), so that giving older intents
 * those names at start neither changes what an assistant holds nor pushes a full one past its budget.
 */
export const storedBytes = (doc: object): number => {
  const {
    revision: _revision,
    entityNames: _entityNames,
    ...content
  } = doc as {
    revision?: string;
    entityNames?: string[];
  };
  return Buffer.byteLength(JSON.stringify(content));
};

const sized = (bytes: number) =>
  bytes < 1024 * 1024
    ? `${Math.ceil(bytes / 1024)} KiB`
    : `${Math.round((bytes / 1024 / 1024) * 10) / 10} MiB`;

function overBudget(ctx: LegacyContext, used: number, adding: number): Conflict {
  const limit = ctx.config.LEGACY_MAX_ASSISTANT_BYTES;
  return new Conflict(
    `An assistant holds at most ${sized(limit)} of intents and entities (it holds ${sized(used)}; this adds ${sized(adding)})`,
    { error: 'LimitExceeded', details: { limitBytes: limit, usedBytes: used, addingBytes: adding } },
  );
}

/** Counts, once, what an assistant made before a counter holds; false when the assistant is gone. */
async function countOnce(ctx: LegacyContext, assistantId: string, held: Held): Promise<boolean> {
  const { cols } = ctx;
  const assistant = await cols.assistants.findOne({ _id: assistantId });
  if (!assistant) return false;
  const counter = COUNTERS[held];
  if (assistant[counter] === undefined) {
    const count = await cols[held].count({ assistantId });
    await cols.assistants.updateOne(
      { _id: assistantId, [counter]: { $exists: false } },
      { $set: { [counter]: count } },
    );
  }
  if (assistant.dataBytes === undefined) {
    const docs = [
      ...(await cols.intents.find({ assistantId })),
      ...(await cols.entities.find({ assistantId })),
    ];
    const bytes = docs.reduce((sum, doc) => sum + storedBytes(doc), 0);
    await cols.assistants.updateOne(
      { _id: assistantId, dataBytes: { $exists: false } },
      { $set: { dataBytes: bytes } },
    );
  }
  return true;
}

/** Takes a place and `bytes` for a new intent or entity; 409 `LimitExceeded` past either limit. */
async function takePlace(
  ctx: LegacyContext,
  assistantId: string,
  held: Held,
  max: number,
  bytes: number,
): Promise<void> {
  const { cols } = ctx;
  const counter = COUNTERS[held];
  const maxBytes = ctx.config.LEGACY_MAX_ASSISTANT_BYTES;
  for (let attempt = 0; attempt < 2; attempt++) {
    const taken = await cols.assistants.findOneAndUpdate(
      { _id: assistantId, [counter]: { $lt: max }, dataBytes: { $lte: maxBytes - bytes } },
      { $inc: { [counter]: 1, dataBytes: bytes } },
    );
    if (taken) return;
    const assistant = await cols.assistants.findOne({ _id: assistantId });
    if (!assistant) throw assistantGone();
    if (assistant[counter] !== undefined && assistant.dataBytes !== undefined) {
      if (assistant[counter] < max) throw overBudget(ctx, assistant.dataBytes, bytes);
      break;
    }
    // an assistant made before the counters: counted once (while one is absent, no place is taken)
    if (!(await countOnce(ctx, assistantId, held))) throw assistantGone();
  }
  throw new Conflict(`An assistant holds at most ${max} ${held}`, { error: 'LimitExceeded' });
}

/** the assistant was deleted while one of its intents or entities was being made */
const assistantGone = () =>
  new NotFound('No such assistant for this account', { error: 'AssistantNotFound' });

/**
 * Makes the intent or entity `id` of `bytes` (`insert`) in a place taken first, given back when it was not stored.
 * One made while its assistant was being deleted (after the deletion's sweep of its intents and entities) is removed
 * again, whether its insert answered or not: nothing would ever count or delete it.
 */
export async function insertInPlace(
  ctx: LegacyContext,
  assistantId: string,
  held: Held,
  max: number,
  bytes: number,
  id: string,
  insert: () => Promise<unknown>,
): Promise<void> {
  await takePlace(ctx, assistantId, held, max, bytes);
  try {
    await insert();
  } catch (err) {
    if (!(await storedAfterFailure(ctx, held, id))) await releasePlace(ctx, assistantId, held, bytes);
    // stored though its reply was lost, perhaps after the sweep of an assistant deleted meanwhile
    else
      await removedWithAssistant(ctx, assistantId, held, id).catch((cleanup) =>
        ctx.logger.warn(
          { err: cleanup, id },
          `could not tell whether the assistant of a stored ${held} is gone`,
        ),
      );
    throw err;
  }
  if (await removedWithAssistant(ctx, assistantId, held, id)) throw assistantGone();
}

/** Whether the assistant is gone, the intent or entity `id` then removed: nothing would ever count or delete it. */
async function removedWithAssistant(
  ctx: LegacyContext,
  assistantId: string,
  held: Held,
  id: string,
): Promise<boolean> {
  // the assistant is deleted before its intents and entities: still there, its deletion's sweep comes after this
  if (await ctx.cols.assistants.findOne({ _id: assistantId })) return false;
  await ctx.cols[held].deleteOne({ _id: id });
  return true;
}

/**
 * Whether an insert that failed stored its document all the same: a write whose reply was lost (MongoDB's connection
 * cut after the server applied it) keeps its place, which its deletion gives back. When the store cannot say, the
 * place is kept too: the count errs on the side of the limit, as when a process dies after taking it.
 */
async function storedAfterFailure(ctx: LegacyContext, held: Held, id: string): Promise<boolean> {
  try {
    return (await ctx.cols[held].findOne({ _id: id })) !== null;
  } catch (err) {
    ctx.logger.warn(
      { err, id },
      `could not tell whether a failed insert of ${held} was stored; its place is kept`,
    );
    return true;
  }
}

/** Gives back the place and bytes of an intent or entity deleted (or never made). */
export async function releasePlace(
  ctx: LegacyContext,
  assistantId: string,
  held: Held,
  bytes: number,
): Promise<void> {
  const counter = COUNTERS[held];
  await ctx.cols.assistants.updateOne(
    { _id: assistantId, [counter]: { $gt: 0 } },
    { $inc: { [counter]: -1 } },
  );
  await resized(ctx, assistantId, -bytes);
}

/** Takes `bytes` more for an assistant's update; 409 `LimitExceeded` past the budget; false when it is gone. */
async function takeBytes(ctx: LegacyContext, assistantId: string, bytes: number): Promise<boolean> {
  const { cols } = ctx;
  const maxBytes = ctx.config.LEGACY_MAX_ASSISTANT_BYTES;
  for (let attempt = 0; attempt < 2; attempt++) {
    const taken = await cols.assistants.findOneAndUpdate(
      { _id: assistantId, dataBytes: { $lte: maxBytes - bytes } },
      { $inc: { dataBytes: bytes } },
    );
    if (taken) return true;
    const assistant = await cols.assistants.findOne({ _id: assistantId });
    if (!assistant) return false;
    if (assistant.dataBytes !== undefined) throw overBudget(ctx, assistant.dataBytes, bytes);
    // an assistant made before the budget: counted once, then taken from
    if (!(await countOnce(ctx, assistantId, 'intents'))) return false;
  }
  return false;
}

/**
 * The change of size of one update of an intent or entity, counted before its write: `count` runs in the
 * computation of the change (which `updateWithRevision` may run again, each replacing what the last counted), a
 * growth taken from the budget atomically (409 `LimitExceeded` past it); `undo` gives it back when nothing was
 * written. What is written is the version counted (the write is guarded by the revision it was computed from),
 * so a write keeps what was counted as it is.
 */
export class SizeChange {
  private counted = 0;

  constructor(
    private readonly ctx: LegacyContext,
    private readonly assistantId: string,
  ) {}

  async count(change: number): Promise<void> {
    await this.undo();
    if (change > 0) {
      if (await takeBytes(this.ctx, this.assistantId, change)) this.counted = change;
    } else if (change < 0 && (await resized(this.ctx, this.assistantId, change))) this.counted = change;
  }

  async undo(): Promise<void> {
    const counted = this.counted;
    this.counted = 0;
    await resized(this.ctx, this.assistantId, -counted);
  }

  /**
   * Runs an update whose change `count` takes as it computes it: what it wrote stays counted, and what it did not
   * write (a refusal, a document gone) is given back. Answers the update's result.
   */
  async around<T extends object>(
    update: () => Promise<{ before: T; after: T } | null>,
  ): Promise<{ before: T; after: T } | null> {
    let updated: { before: T; after: T } | null;
    try {
      updated = await update();
    } catch (err) {
      await this.undo();
      throw err;
    }
    if (!updated) await this.undo();
    else this.counted = 0;
    return updated;
  }
}

/** Counts a change of size (an assistant not counted yet is counted whole at its first change); false if not. */
export async function resized(ctx: LegacyContext, assistantId: string, change: number): Promise<boolean> {
  if (change === 0) return false;
  const { matched } = await ctx.cols.assistants.updateOne(
    { _id: assistantId, dataBytes: { $exists: true } },
    { $inc: { dataBytes: change } },
  );
  return matched > 0;
}
