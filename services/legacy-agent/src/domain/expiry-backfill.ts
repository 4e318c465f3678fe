import type { LegacyContext } from './context';

/**
 * Records written before their collection's TTL index (decision 0088) carry no `expiresAt`, so the store never
 * removes them: a conversation nobody writes to again, or the failed logins of a username never tried again,
 * would stay for good. At start each such record gets the lifetime it would get if written now (a conversation's
 * idle time, a failure window), counted from the start: it goes once that time has passed.
 */
export async function giveExpiryToOlderRecords(ctx: LegacyContext): Promise<void> {
  const { cols, clock, config, logger } = ctx;
  const now = clock.now().getTime();
  const missing = { expiresAt: { $exists: false } };
  try {
    const conversations = await cols.conversations.updateMany(missing, {
      $set: { expiresAt: new Date(now + config.LEGACY_CONVERSATION_IDLE_SECONDS * 1000) },
    });
    const failures = await cols.loginFailures.updateMany(missing, {
      $set: { expiresAt: new Date(now + config.LEGACY_LOGIN_FAILURE_WINDOW_SECONDS * 1000) },
    });
    if (conversations.modified + failures.modified > 0)
      logger.info(
        { conversations: conversations.modified, loginFailures: failures.modified },
        'records stored without an expiry time were given one',
      );
  } catch (err) {
    // the store is away: the next start tries again, and nothing is lost meanwhile
    logger.warn({ err }, 'could not give older records an expiry time');
  }
}
