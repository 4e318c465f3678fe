import { ManualClock } from '@platform/kernel';
import { callJson, type JsonReply, startTestPlatform, type TestPlatform } from '../harness';

/**
 * ACCESS_TOKENS_PER_USER_LIMIT through the edge: however many creations race, a user never holds more live
 * access tokens than the limit, and places come back when a token is revoked or expires (decision 0090).
 */

const LIMIT = 5;

const all = <T>(n: number, make: (i: number) => Promise<T>) =>
  Promise.all(Array.from({ length: n }, (_, i) => make(i)));
const statuses = (replies: JsonReply[]) => [...new Set(replies.map((r) => r.status))].sort();

describe('the live access tokens of one user, under concurrent creations', () => {
  const clock = new ManualClock(new Date());
  let p: TestPlatform;

  beforeAll(async () => {
    p = await startTestPlatform({ clock, env: { ACCESS_TOKENS_PER_USER_LIMIT: String(LIMIT) } });
  });
  afterAll(() => p?.stop());

  const inDays = (days: number) => new Date(clock.now().getTime() + days * 86_400_000).toISOString();
  const create = (session: string, name: string, expiresAt: string) =>
    callJson(`${p.baseUrl}/v2/user/accessTokens`, 'POST', { bearer: session, body: { name, expiresAt } });
  const listed = async (session: string) =>
    (await callJson(`${p.baseUrl}/v2/user/accessTokens`, 'GET', { bearer: session })).body as Array<{
      _id: string;
    }>;

  it('accepts exactly the limit when 20 creations race, and refuses the others with 409', async () => {
    const session = (await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).body.token as string;
    const replies = await all(20, (i) => create(session, `racer ${i}`, inDays(5)));
    expect(statuses(replies)).toEqual([201, 409]);
    expect(replies.filter((r) => r.status === 201)).toHaveLength(LIMIT);
    for (const refused of replies.filter((r) => r.status === 409))
      expect(refused.body.error).toBe('TooManyAccessTokens');
    expect(await listed(session)).toHaveLength(LIMIT);
  });

  it('gives a place back when a token is revoked or expires, and never more than one per token', async () => {
    const session = (await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).body.token as string;
    const first = await all(LIMIT, (i) => create(session, `short ${i}`, inDays(i === 0 ? 1 : 10)));
    expect(statuses(first)).toEqual([201]);

    const revoked = await callJson(`${p.baseUrl}/v2/user/accessTokens/${first[1]!.body._id}`, 'DELETE', {
      bearer: session,
    });
    expect(revoked.status).toBe(204);
    const afterRevocation = await all(10, (i) => create(session, `after revocation ${i}`, inDays(10)));
    expect(afterRevocation.filter((r) => r.status === 201)).toHaveLength(1);

    // the first token expires without any write: its place is free again
    clock.advance(2 * 86_400_000);
    const afterExpiry = await all(10, (i) => create(session, `after expiry ${i}`, inDays(10)));
    expect(afterExpiry.filter((r) => r.status === 201)).toHaveLength(1);
    expect(statuses(afterExpiry)).toEqual([201, 409]);
  });
});
