import { Conflict } from '@platform/kernel';
import type { LegacyContext } from './context';

/**
 * The limits on what one assistant holds are kept by counters on its document:
 * - how many intents and entities: a creation takes a place with one conditional increment (`$lt` the limit), so
 *   creations racing on several instances never pass the limit, and a deletion (or a creation that failed) gives its
 *   place back. A process that dies between the two keeps a place taken: the count errs on the side of the limit;
 * - how many bytes they take (`dataBytes`, their stored JSON; `LEGACY_MAX_ASSISTANT_BYTES`): every intent is
 *   bounded by the body limit, but 2,000 of 2 MB would hold 4 GB in the service (the embedded store keeps its data
 *   in memory) and answer a list no process can build. A creation takes its bytes with its place, atomically; an
 *   update that grows checks the budget first and counts its change after its write, so updates racing near the
 *   budget may pass it by their own growth, never more.
 * Assistants made before a counter get it counted once, at their first creation.
 */
const COUNTERS = { intents: 'intentCount', entities: 'entityCount' } as const;
type Held = keyof typeof COUNTERS;

/** The bytes an intent or entity takes as the budget counts them: its stored JSON, but its write revision. */
export const storedBytes = (doc: object): number => {
  const { revision: _revision, ...content } = doc as { revision?: string };
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
    if (!assistant) break;
    if (assistant[counter] !== undefined && assistant.dataBytes !== undefined) {
      if (assistant[counter] < max) throw overBudget(ctx, assistant.dataBytes, bytes);
      break;
    }
    // an assistant made before the counters: counted once (while one is absent, no place is taken)
    if (!(await countOnce(ctx, assistantId, held))) break;
  }
  throw new Conflict(`An assistant holds at most ${max} ${held}`, { error: 'LimitExceeded' });
}

/** Makes an intent or entity of `bytes` in a place taken first, given back when `insert` fails. */
export async function insertInPlace(
  ctx: LegacyContext,
  assistantId: string,
  held: Held,
  max: number,
  bytes: number,
  insert: () => Promise<unknown>,
): Promise<void> {
  await takePlace(ctx, assistantId, held, max, bytes);
  try {
    await insert();
  } catch (err) {
    await releasePlace(ctx, assistantId, held, bytes);
    throw err;
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

/** Before an update that grows an intent or entity by `growth` bytes: 409 `LimitExceeded` past the budget. */
export async function checkGrowth(ctx: LegacyContext, assistantId: string, growth: number): Promise<void> {
  if (growth <= 0) return;
  let assistant = await ctx.cols.assistants.findOne({ _id: assistantId });
  if (assistant && assistant.dataBytes === undefined && (await countOnce(ctx, assistantId, 'intents')))
    assistant = await ctx.cols.assistants.findOne({ _id: assistantId });
  const used = assistant?.dataBytes ?? 0;
  if (used + growth > ctx.config.LEGACY_MAX_ASSISTANT_BYTES) throw overBudget(ctx, used, growth);
}

/** Counts an update's change of size (an assistant not counted yet is counted whole at its first creation). */
export async function resized(ctx: LegacyContext, assistantId: string, change: number): Promise<void> {
  if (change === 0) return;
  await ctx.cols.assistants.updateOne(
    { _id: assistantId, dataBytes: { $exists: true } },
    { $inc: { dataBytes: change } },
  );
}
