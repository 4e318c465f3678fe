import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import { startLegacyApp } from './support/legacy-app';

type Expiring = { _id: string; expiresAt?: Date };

describe('records stored before their TTL index (decision 0088)', () => {
  it('get an expiry time at start, and the store removes them once it has passed', async () => {
    const folder = tempDir('legacy-expiry-');
    const earlier = new Date('2026-01-05T08:00:00Z');
    const kept = new Date('2026-11-23T12:00:00Z');
    // what an earlier version left in the data folder: no expiresAt on a conversation or a failed-login record
    const before = createEmbeddedStore({ dataDir: folder.dir });
    await before.collection<Expiring>('legacy_conversations').insertOne({
      _id: 'old-conversation',
      assistantId: 'a1',
      userId: 'visitor',
      lastActivityAt: earlier,
    } as Expiring);
    await before.collection<Expiring>('legacy_conversations').insertOne({
      _id: 'new-conversation',
      assistantId: 'a1',
      userId: 'other',
      lastActivityAt: earlier,
      expiresAt: kept,
    } as Expiring);
    await before
      .collection<Expiring>('legacy_login_failures')
      .insertOne({ _id: 'old-failure', count: 2, windowStart: earlier } as Expiring);
    await before.close();

    const clock = new ManualClock('2026-11-23T10:00:00Z');
    const app = await startLegacyApp({
      clock,
      dataDir: folder.dir,
      env: { LEGACY_CONVERSATION_IDLE_SECONDS: '600', LEGACY_LOGIN_FAILURE_WINDOW_SECONDS: '300' },
    });
    try {
      const conversations = app.store.collection<Expiring>('legacy_conversations');
      const failures = app.store.collection<Expiring>('legacy_login_failures');
      const expiry = async (col: typeof conversations, _id: string) =>
        (await col.findOne({ _id }))?.expiresAt?.toISOString();
      expect(await expiry(conversations, 'old-conversation')).toBe('2026-11-23T10:10:00.000Z');
      expect(await expiry(conversations, 'new-conversation')).toBe(kept.toISOString());
      expect(await expiry(failures, 'old-failure')).toBe('2026-11-23T10:05:00.000Z');

      clock.advance(601_000);
      await waitFor(
        async () =>
          (await conversations.findOne({ _id: 'old-conversation' })) === null &&
          (await failures.findOne({ _id: 'old-failure' })) === null,
        { what: 'the older records removed' },
      );
      expect(await conversations.findOne({ _id: 'new-conversation' })).not.toBeNull();
    } finally {
      await app.stop();
      folder.remove();
    }
  });
});
