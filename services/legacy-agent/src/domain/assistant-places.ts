import { Conflict } from '@platform/kernel';
import type { LegacyContext } from './context';

/**
 * The limits on what one assistant holds are kept by counters on its document: a creation takes a place with
 * one conditional increment (`$lt` the limit), so creations racing on several instances never pass the limit,
 * and a deletion (or a creation that failed) gives its place back. A process that dies between the two keeps a
 * place taken: the count errs on the side of the limit, never past it.
 */
const COUNTERS = { intents: 'intentCount', entities: 'entityCount' } as const;
type Held = keyof typeof COUNTERS;

/** Takes a place for a new intent or entity; 409 `LimitExceeded` when the assistant holds `max` already. */
async function takePlace(ctx: LegacyContext, assistantId: string, held: Held, max: number): Promise<void> {
  const { cols } = ctx;
  const counter = COUNTERS[held];
  for (let attempt = 0; attempt < 2; attempt++) {
    const taken = await cols.assistants.findOneAndUpdate(
      { _id: assistantId, [counter]: { $lt: max } },
      { $inc: { [counter]: 1 } },
    );
    if (taken) return;
    const assistant = await cols.assistants.findOne({ _id: assistantId });
    if (!assistant || assistant[counter] !== undefined) break;
    // An assistant made before the counters: counted once (while its counter is absent, no place is taken).
    const count = await cols[held].count({ assistantId });
    await cols.assistants.updateOne(
      { _id: assistantId, [counter]: { $exists: false } },
      { $set: { [counter]: count } },
    );
  }
  throw new Conflict(`An assistant holds at most ${max} ${held}`, { error: 'LimitExceeded' });
}

/** Makes an intent or entity in a place taken first, given back when `insert` fails. */
export async function insertInPlace(
  ctx: LegacyContext,
  assistantId: string,
  held: Held,
  max: number,
  insert: () => Promise<unknown>,
): Promise<void> {
  await takePlace(ctx, assistantId, held, max);
  try {
    await insert();
  } catch (err) {
    await releasePlace(ctx, assistantId, held);
    throw err;
  }
}

/** Gives back the place of an intent or entity deleted (or never made). */
export async function releasePlace(ctx: LegacyContext, assistantId: string, held: Held): Promise<void> {
  const counter = COUNTERS[held];
  await ctx.cols.assistants.updateOne(
    { _id: assistantId, [counter]: { $gt: 0 } },
    { $inc: { [counter]: -1 } },
  );
}
