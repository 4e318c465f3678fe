import { Subjects } from '@platform/contracts';
import { waitFor } from '@platform/testkit';
import request from 'supertest';
import { adminHeaders, completion, quotaServiceForEachTest } from './support';

describe('usage events whose user or key id could name no counter', () => {
  const world = quotaServiceForEachTest('2025-03-15T12:00:30Z');

  it('go to the dead letters, and the events delivered with them are counted', async () => {
    const dead: Array<{ reason: string }> = [];
    world.bus.subscribe(Subjects.llmCompletionDeadLetter, (payload) => {
      dead.push(payload as { reason: string });
    });
    // a lone surrogate: valid JSON and a valid string, but no URI encoding (hence no counter id) exists for it
    await Promise.all([
      world.bus.publishDurable(
        Subjects.llmCompletion,
        completion({ userId: undefined, apiKeyId: 'key-\ud800' }),
      ),
      world.bus.publishDurable(Subjects.llmCompletion, completion({ userId: 'user-\udc00' })),
      world.bus.publishDurable(Subjects.llmCompletion, completion({ userId: 'user-ok' })),
    ]);
    const counted = await waitFor(
      async () => {
        const res = await request(world.quota.service.handler)
          .get('/v1/quotas/usage/breakdown?by=user')
          .set(adminHeaders(world.clock));
        return res.body.items?.length ? res.body.items : null;
      },
      { what: 'the valid event to be counted' },
    );
    expect(counted).toEqual([expect.objectContaining({ id: 'user-ok', requests: 1 })]);
    await waitFor(() => dead.length === 2, { what: 'two dead letters' });
    expect(dead.map((d) => d.reason.split(':')[0])).toEqual(['invalid_event', 'invalid_event']);
  });
});
