import { createLogger } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { openStoreWhenReachable } from './infrastructure';

const logger = createLogger({ name: 'test', level: 'silent' });

describe('openStoreWhenReachable', () => {
  it('tries again while the database cannot be reached, saying why, and returns the store once it answers', async () => {
    const store = createEmbeddedStore();
    const reasons: string[] = [];
    let attempts = 0;
    const opened = await openStoreWhenReachable(
      async (): Promise<Store> => {
        attempts++;
        if (attempts < 3) throw new Error(`connect ECONNREFUSED (attempt ${attempts})`);
        return store;
      },
      { logger, isTransient: () => true, retryMs: 1, onUnreachable: (r) => reasons.push(r) },
    );
    expect(opened).toBe(store);
    expect(attempts).toBe(3);
    expect(reasons).toEqual(['connect ECONNREFUSED (attempt 1)', 'connect ECONNREFUSED (attempt 2)']);
    await store.close();
  });

  it('gives up at once on a failure that time does not mend', async () => {
    let attempts = 0;
    await expect(
      openStoreWhenReachable(
        async () => {
          attempts++;
          throw new Error('data folder not writable');
        },
        { logger, isTransient: () => false, retryMs: 1 },
      ),
    ).rejects.toThrow('data folder not writable');
    expect(attempts).toBe(1);
  });
});
