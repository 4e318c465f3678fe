import { type Bus, createInProcessBus } from '@platform/bus';
import { Subjects } from '@platform/contracts';
import { ManualClock } from '@platform/kernel';
import { waitFor } from '@platform/testkit';
import request from 'supertest';
import { adminHeaders, completion, type QuotaServiceHandle, startQuotaService } from './support';

describe('usage events whose user or key id could name no counter', () => {
  let bus: Bus;
  let clock: ManualClock;
  let quota: QuotaServiceHandle;

  beforeEach(async () => {
    bus = createInProcessBus();
    clock = new ManualClock('2025-03-15T12:00:30Z');
    quota = await startQuotaService({ bus, clock });
  });
  afterEach(async () => {
    await quota.stop();
    await bus.close();
  });

  it('go to the dead letters, and the events delivered with them are counted', async () => {
    const dead: Array<{ reason: string }> = [];
    bus.subscribe(Subjects.llmCompletionDeadLetter, (payload) => {
      dead.push(payload as { reason: string });
    });
    // a lone surrogate: valid JSON and a valid string, but no URI encoding (hence no counter id) exists for it
    await Promise.all([
      bus.publishDurable(Subjects.llmCompletion, completion({ userId: undefined, apiKeyId: 'key-\ud800' })),
      bus.publishDurable(Subjects.llmCompletion, completion({ userId: 'user-\udc00' })),
      bus.publishDurable(Subjects.llmCompletion, completion({ userId: 'user-ok' })),
    ]);
    const counted = await waitFor(
      async () => {
        const res = await request(quota.service.handler)
          .get('/v1/quotas/usage/breakdown?by=user')
          .set(adminHeaders(clock));
        return res.body.items?.length ? res.body.items : null;
      },
      { what: 'the valid event to be counted', timeoutMs: 5_000 },
    );
    expect(counted).toEqual([expect.objectContaining({ id: 'user-ok', requests: 1 })]);
    await waitFor(() => dead.length === 2, { what: 'two dead letters' });
    expect(dead.map((d) => d.reason.split(':')[0])).toEqual(['invalid_event', 'invalid_event']);
  });
});
