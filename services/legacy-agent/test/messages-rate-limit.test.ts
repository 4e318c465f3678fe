import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { tempDir } from '@platform/testkit';
import supertest from 'supertest';
import { accountWithBot, type Bot, client } from './support/fixtures';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';

/**
 * The rate limits of /v1/Messages beyond what the end-to-end test shows through the edge
 * (test/e2e/legacy-messages-rate-limit.test.ts): the user budget, connectors' addresses, IPv6 networks,
 * and counters that fail.
 */
const LIMITS = {
  LEGACY_MESSAGES_PER_ADDRESS: '4',
  LEGACY_MESSAGES_PER_USER: '3',
  LEGACY_MESSAGES_UNLIMITED_ADDRESSES: '198.51.100.7',
};

/**
 * The service's embedded store; with `asMongo`, presented as MongoDB, so that the rate windows live in the store's
 * documents as in production (on the embedded engine they are maps of the process), and those can be made to fail
 * as a MongoDB outage would.
 */
function storeForCounters(dataDir: string, clock: ManualClock, asMongo: boolean) {
  const real = createEmbeddedStore({ dataDir, now: () => clock.now().getTime() });
  const state = { down: false };
  if (!asMongo) return { store: real, state };
  const store = new Proxy(real, {
    get(target, prop) {
      if (prop === 'engine') return 'mongodb';
      const value = Reflect.get(target, prop, target);
      if (prop !== 'collection') return typeof value === 'function' ? value.bind(target) : value;
      return (name: string, indexes?: unknown) => {
        const collection = target.collection(name, indexes as never);
        if (name !== 'rate_windows') return collection;
        return new Proxy(collection, {
          get(c, method) {
            const fn = Reflect.get(c, method, c);
            if (typeof fn !== 'function') return fn;
            return (...args: unknown[]) =>
              state.down ? Promise.reject(new Error('connection refused')) : fn.apply(c, args);
          },
        });
      };
    },
  }) as Store;
  return { store, state };
}

describe.each([
  ['maps of the process owning the embedded store', false],
  ['store documents, as on MongoDB', true],
])('Messages rate limits (decision 0112), counted in %s', (_where, asMongo) => {
  const clock = new ManualClock('2026-11-23T10:00:00Z');
  const folder = tempDir('legacy-limits-');
  const { store, state } = storeForCounters(folder.dir, clock, asMongo);
  let app: LegacyTestApp;
  let bot: Bot;

  beforeAll(async () => {
    app = await startLegacyApp({ clock, store, env: LIMITS });
    ({ bot } = await accountWithBot(app.http));
  });
  afterAll(async () => {
    await app.stop();
    await store.close();
    folder.remove();
  });
  afterEach(() => {
    state.down = false;
    clock.advance(60_000); // each test in a window of its own
  });

  const send = (from: string, userId: string) =>
    app.http
      .post('/v1/Messages')
      .set(client(bot))
      .set('x-forwarded-for', from)
      .send({ userId, platform: 'web', event: 'WELCOME' });
  const statuses = async (requests: Array<() => Promise<{ status: number }>>) => {
    const out: number[] = [];
    for (const request of requests) out.push((await request()).status);
    return out;
  };

  it("refuses a user's fourth message in a window, whatever address it comes from", async () => {
    const from = ['203.0.113.1', '203.0.113.2', '203.0.113.3', '203.0.113.4'];
    const user = 'user-ada-lovelace';
    expect(await statuses(from.map((address) => () => send(address, user)))).toEqual([200, 200, 200, 429]);
    const refused = await send('203.0.113.5', user);
    expect(refused.body.status).toMatchObject({
      code: 429,
      errorType: 'rate_limited',
      details: { scope: 'user', limit: 3, windowSeconds: 60 },
    });
    // another user from the same addresses is not affected
    expect((await send('203.0.113.1', 'grace')).status).toBe(200);
    if (asMongo) {
      // the counters keep no user id (a long one: a short one may turn up by chance in the bot's random id)
      const counters = await store.collection('rate_windows').find({});
      expect(counters.length).toBeGreaterThan(0);
      expect(JSON.stringify(counters)).not.toContain(user);
    }
  });

  it('counts an IPv6 network (/64) as one address', async () => {
    const hosts = [
      '2001:db8:7:1::1',
      '2001:db8:7:1::2',
      '2001:db8:7:1:ffff::9',
      '2001:db8:7:1::a',
      '2001:db8:7:1::b',
    ];
    expect(await statuses(hosts.map((address, i) => () => send(address, `v6-${i}`)))).toEqual([
      200, 200, 200, 200, 429,
    ]);
    expect((await send('2001:db8:7:2::1', 'v6-other')).status).toBe(200);
  });

  it("limits a connector's listed address by user only", async () => {
    const users = Array.from({ length: 10 }, (_, i) => () => send('198.51.100.7', `customer-${i}`));
    expect(await statuses(users)).toEqual(Array(10).fill(200));
    expect(await statuses(Array.from({ length: 4 }, () => () => send('198.51.100.7', 'customer-0')))).toEqual(
      [200, 200, 429, 429],
    );
  });

  // the maps of a process cannot fail; MongoDB can
  if (asMongo)
    it('lets messages through when the counters fail, and counts them in the metrics', async () => {
      state.down = true;
      const many = Array.from({ length: 8 }, () => () => send('203.0.113.9', 'same-user'));
      expect(await statuses(many)).toEqual(Array(8).fill(200));
      const metrics = await supertest(app.service.admin).get('/metrics').expect(200);
      expect(metrics.text).toMatch(/legacy_agent_message_limits_total\{outcome="store_failed"[^}]*\} 16\b/);
      // back up: counted again
      state.down = false;
      expect(await statuses(many.slice(0, 4))).toEqual([200, 200, 200, 429]);
    });
});
