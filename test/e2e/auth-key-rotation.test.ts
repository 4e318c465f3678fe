import { type Bus, createNatsBus } from '@platform/bus';
import { type JwksUpdatedEvent, Subjects } from '@platform/contracts';
import { ManualClock } from '@platform/kernel';
import { describeWithNats, type NatsServerHandle, startNatsServer, waitFor } from '@platform/testkit';
import jwt from 'jsonwebtoken';
import { startTestPlatform, type TestPlatform } from '../harness';

const DAY = 86_400_000;

async function login(p: TestPlatform): Promise<string> {
  const res = await fetch(`${p.baseUrl}/v2/login/anonymous`, { method: 'POST' });
  expect(res.status).toBe(200);
  return ((await res.json()) as { token: string }).token;
}
const me = async (p: TestPlatform, token: string) =>
  (await fetch(`${p.baseUrl}/v2/me`, { headers: { authorization: `Bearer ${token}` } })).status;
const kids = async (p: TestPlatform): Promise<string[]> =>
  ((await (await fetch(`${p.baseUrl}/oidc/jwks`)).json()) as { keys: Array<{ kid: string }> }).keys.map(
    (k) => k.kid,
  );
const kidOf = (token: string) => jwt.decode(token, { complete: true })!.header.kid!;

describeWithNats('signing-key rotation through the edge, on NATS', () => {
  let nats: NatsServerHandle;
  let p: TestPlatform;
  let observer: Bus;
  const events: JwksUpdatedEvent[] = [];
  const clock = new ManualClock('2025-06-01T00:00:00Z');

  beforeAll(async () => {
    nats = await startNatsServer();
    observer = await createNatsBus({ url: nats.url, name: 'observer' });
    observer.subscribe(Subjects.gatewayJwksUpdated, (e) => {
      events.push(e as JwksUpdatedEvent);
    });
    await observer.ping();
    p = await startTestPlatform({
      natsUrl: nats.url,
      clock,
      env: {
        // tokens outlive one rotation here, so an old token is still valid after the clock moves 30 days
        ACCESS_TOKENS_MAX_AGE: String(45 * 86_400),
        JWKS_CHECK_INTERVAL_MS: '50',
        JWKS_PUBLISH_DELAY_SECONDS: '120',
      },
    });
  });
  afterAll(async () => {
    await p?.stop();
    await observer?.close();
    await nats?.dispose();
  });

  it('rotates on schedule: the edge accepts old and new tokens, new tokens carry the new kid', async () => {
    const [oldKid] = await kids(p);
    const oldToken = await login(p);
    expect(kidOf(oldToken)).toBe(oldKid);
    expect(await me(p, oldToken)).toBe(200);

    clock.advance(30 * DAY + 1000);
    await waitFor(async () => (await kids(p)).length === 2, { what: 'the new key in the JWKS' });
    const newKid = (await kids(p)).find((k) => k !== oldKid)!;
    await waitFor(() => events.some((e) => e.created.includes(newKid)), { what: 'gateway.jwks.updated' });
    // Still signing with the old key during the publish delay.
    expect(kidOf(await login(p))).toBe(oldKid);

    clock.advance(120_000);
    const newToken = await login(p);
    expect(kidOf(newToken)).toBe(newKid);
    // The edge learnt the new key from the event: it accepts the new token at once, and the old one still.
    expect(await me(p, newToken)).toBe(200);
    expect(await me(p, oldToken)).toBe(200);
  });
});
