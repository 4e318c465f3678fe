import { createLogger, ManualClock, OUTAGE_REMINDER_MS } from '@platform/kernel';
import { logLines, startOutageServer } from '@platform/testkit';
import { PrincipalResolver } from '../src/auth/principal-resolver';

/** auth's introspection over real HTTP: 503 (its store away) while `state.failing`, else a principal */
const authServer = () =>
  startOutageServer({
    principal: {
      credential: { kind: 'access_token', id: 'id-alice' },
      session: { id: null, org: null },
      user: { id: 'user-alice' },
      run: {},
    },
    expiresAt: null,
    cacheTtlSeconds: 0,
  });

describe('the edge while auth cannot check credentials', () => {
  it('logs why once, then once a minute, and once when auth answers again, however many requests fail', async () => {
    const auth = await authServer();
    const { lines, destination } = logLines();
    const clock = new ManualClock('2026-03-01T10:00:00Z');
    const resolver = new PrincipalResolver({
      authUrl: auth.url,
      secret: 'principal-lookup-outage-logs-secret-0123456789',
      clock,
      logger: createLogger({ name: 'test', destination }),
      timeoutMs: 10_000,
      maxEntries: 100,
      maxTtlSeconds: 60,
      sessionSource: 'auth',
    });
    const alice = { kind: 'access_token' as const, token: 'alice' };
    try {
      auth.state.failing = true;
      // ten minutes of requests, five a second, each answered 503 AuthUnavailable
      const minutes = 10;
      for (let elapsed = 0; elapsed < minutes * 60_000; elapsed += 200) {
        await expect(resolver.resolve(alice, null)).rejects.toMatchObject({ error: 'AuthUnavailable' });
        clock.advance(200);
      }
      expect(lines[0]).toEqual(
        expect.objectContaining({
          level: 40,
          msg: expect.stringMatching(/^principal lookups fail/),
          status: 503,
          err: expect.objectContaining({ message: expect.stringContaining('503') }),
        }),
      );
      expect(lines.slice(1)).toEqual(
        Array.from({ length: (minutes * 60_000) / OUTAGE_REMINDER_MS - 1 }, (_, i) =>
          expect.objectContaining({
            level: 40,
            msg: 'principal lookups still fail',
            since: '2026-03-01T10:00:00.000Z',
            outageSeconds: ((i + 1) * OUTAGE_REMINDER_MS) / 1000,
            refusals: ((i + 1) * OUTAGE_REMINDER_MS) / 200 + 1,
          }),
        ),
      );

      auth.state.failing = false;
      await expect(resolver.resolve(alice, null)).resolves.toMatchObject({ userId: 'user-alice' });
      expect(lines).toHaveLength(1 + (minutes * 60_000) / OUTAGE_REMINDER_MS);
      expect(lines.at(-1)).toEqual(
        expect.objectContaining({
          level: 30,
          msg: 'principal lookups answer again',
          since: '2026-03-01T10:00:00.000Z',
          outageSeconds: minutes * 60,
          refusals: (minutes * 60_000) / 200,
        }),
      );
    } finally {
      await auth.close();
    }
  }, 120_000);
});
