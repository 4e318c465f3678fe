import { Subjects } from '@platform/contracts';
import { waitFor } from '@platform/testkit';
import request from 'supertest';
import { adminHeaders, completion, edgeHeaders, principal, quotaServiceForEachTest } from './support';

describe('GET /v1/quotas/usage/breakdown (usage by user or organization API key)', () => {
  const world = quotaServiceForEachTest('2025-03-01T00:10:00.000Z');
  const admin = () => adminHeaders(world.clock);
  const breakdown = (query: string, headers = admin()) =>
    request(world.quota.service.handler).get(`/v1/quotas/usage/breakdown${query}`).set(headers);
  const publish = (...events: ReturnType<typeof completion>[]) =>
    Promise.all(events.map((e) => world.bus.publishDurable(Subjects.llmCompletion, e)));

  it("gives each user's and each key's month, its own organization's only, page by page", async () => {
    const march = '2025-03-01T00:05:00Z';
    await publish(
      completion({ occurredAt: march, userId: 'user-1', cost: 0.25 }),
      completion({ occurredAt: march, userId: 'user-1', cost: 0.25 }),
      // an id that needs encoding in a counter id
      completion({ occurredAt: march, userId: 'user|2', cost: 0.5 }),
      completion({ occurredAt: march, userId: undefined, apiKeyId: 'key-a', cost: 1 }),
      completion({ occurredAt: march, userId: undefined, apiKeyId: 'key-b', cost: 2 }),
      completion({ occurredAt: march, userId: undefined, apiKeyId: 'key-c', cost: 3 }),
      // another organization, and last month: in neither answer
      completion({ occurredAt: march, orgSlug: 'other', userId: 'user-9' }),
      completion({ occurredAt: '2025-02-28T23:00:00Z', userId: 'user-1' }),
    );
    const users = await waitFor(
      async () => {
        const res = await breakdown('?by=user');
        return res.body.items?.length === 2 && res.body.items[1].requests === 2 ? res : null;
      },
      { what: 'the users of March to be counted', timeoutMs: 20_000 },
    );
    expect(users.status).toBe(200);
    expect(users.headers['cache-control']).toBe('no-store');
    expect(users.body).toEqual({
      orgSlug: 'acme',
      month: '2025-03',
      by: 'user',
      currency: 'USD',
      // in the order of their stored (URI-encoded) ids
      items: [
        expect.objectContaining({ id: 'user|2', requests: 1, cost: 0.5 }),
        {
          id: 'user-1',
          requests: 2,
          tokens: 200,
          prompt_tokens: 140,
          completion_tokens: 60,
          cost: 0.5,
          last_request_at: '2025-03-01T00:05:00.000Z',
        },
      ],
      next_after: null,
    });

    // all three keys counted before paging: two of them alone would make a first page with no next
    await waitFor(
      async () => {
        const res = await breakdown('?by=api_key');
        return res.body.items?.length === 3 ? res : null;
      },
      { what: 'the keys to be counted', timeoutMs: 20_000 },
    );
    const first = await breakdown('?by=api_key&limit=2');
    expect(first.body.items.map((i: { id: string; cost: number }) => [i.id, i.cost])).toEqual([
      ['key-a', 1],
      ['key-b', 2],
    ]);
    expect(first.body.next_after).toBe('key-b');
    const second = await breakdown('?by=api_key&limit=2&after=key-b');
    expect(second.body.items.map((i: { id: string }) => i.id)).toEqual(['key-c']);
    expect(second.body.next_after).toBeNull();

    // counted in the month it happened in, when it arrived just after
    const february = await waitFor(
      async () => {
        const res = await breakdown('?by=user&month=2025-02');
        return res.body.items?.length ? res : null;
      },
      { what: "February's event to be counted", timeoutMs: 20_000 },
    );
    expect(february.body.items).toEqual([expect.objectContaining({ id: 'user-1', requests: 1 })]);
    expect((await breakdown('?by=user&month=2024-01')).body.items).toEqual([]);
  });

  it('needs quotas:manage, and names the field of a bad query', async () => {
    const member = edgeHeaders(principal({ permissions: ['models:read'] }), world.clock);
    expect((await breakdown('?by=user', member)).status).toBe(403);
    for (const query of [
      '',
      '?by=model',
      '?by=user&month=2025-13',
      '?by=user&limit=0',
      '?by=user&limit=5000',
      '?by=user&x=1',
    ]) {
      const res = await breakdown(query);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'INVALID_BODY', details: { issues: [expect.any(Object)] } });
    }
  });
});
