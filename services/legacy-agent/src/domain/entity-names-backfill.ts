import type { LegacyContext } from './context';
import { entityNamesOf } from './intents';

/** How many intents are read at a time. */
const BATCH = 100;

/**
 * Since decision 0122 §4 an intent keeps the names of the entities its utterances tag (`entityNames`), so that an
 * entity's deletion or rename reads only the intents using it. At start, intents stored before get theirs, `BATCH` at
 * a time in id order; the budget does not count them (`storedBytes`), so `dataBytes` stays as it is. One written
 * meanwhile (its revision changed) is left as that write made it. Nothing depends on this having run: the check
 * also reads the intents without the field.
 */
export async function giveEntityNamesToOlderIntents(ctx: LegacyContext): Promise<void> {
  const { cols, logger } = ctx;
  let given = 0;
  try {
    for (let after = ''; ; ) {
      const batch = await cols.intents.find(
        { entityNames: { $exists: false }, _id: { $gt: after } },
        { sort: { _id: 1 }, limit: BATCH },
      );
      for (const doc of batch) {
        const entityNames = entityNamesOf(doc.utterances);
        const { matched } = await cols.intents.updateOne(
          { _id: doc._id, revision: doc.revision ?? { $exists: false } },
          { $set: { entityNames } },
        );
        if (matched > 0) given++;
      }
      if (batch.length < BATCH) break;
      after = batch[batch.length - 1]!._id;
    }
  } catch (err) {
    // the store is away: the next start goes on; meanwhile the check reads these intents as well
    logger.warn({ err }, 'could not give older intents the names of the entities they tag');
  }
  if (given > 0)
    logger.info({ intents: given }, 'older intents were given the names of the entities they tag');
}
