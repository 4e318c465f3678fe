import { createLogger, ManualClock, OUTAGE_REMINDER_MS } from '@platform/kernel';
import { logLines, startOutageServer } from '@platform/testkit';
import { OrgSettingsSource } from '../src/quota/org-settings';

/** llm-quota's gateway settings over real HTTP: 503 (its store away) while `state.failing` */
const quotaServer = () =>
  startOutageServer({
    orgSlug: 'acme',
    policy: 'hard_block',
    month: { start: '2026-03-01T00:00:00Z', tokens: 0, cost: 0 },
  });

describe('the gateway while llm-quota cannot give quota settings', () => {
  it('logs why once, then once a minute, and once when llm-quota answers again, however many requests come', async () => {
    const quota = await quotaServer();
    const { lines, destination } = logLines();
    const clock = new ManualClock('2026-03-01T10:00:00Z');
    const source = new OrgSettingsSource({
      quotaUrl: quota.url,
      secret: 'quota-settings-outage-logs',
      ttlMs: 5_000,
      clock,
      logger: createLogger({ name: 'test', destination }),
      fetch,
    });
    try {
      await source.get('acme');
      quota.state.failing = true;
      clock.advance(10_000); // past two TTLs: every request asks llm-quota
      // ten minutes of requests, five a second: acme's on its last known settings, newco's answered 503
      const minutes = 10;
      for (let elapsed = 0; elapsed < minutes * 60_000; elapsed += 200) {
        await expect(source.get('acme')).resolves.toMatchObject({ orgSlug: 'acme' });
        await expect(source.get('newco')).rejects.toMatchObject({ kind: 'unavailable' });
        clock.advance(200);
      }
      expect(lines[0]).toEqual(
        expect.objectContaining({
          level: 40,
          msg: expect.stringMatching(/^llm-quota unreachable/),
          err: expect.objectContaining({ message: 'llm-quota answered 503' }),
        }),
      );
      expect(lines.slice(1)).toEqual(
        Array.from({ length: (minutes * 60_000) / OUTAGE_REMINDER_MS - 1 }, (_, i) =>
          expect.objectContaining({
            level: 40,
            msg: 'llm-quota still unreachable',
            since: '2026-03-01T10:00:10.000Z',
            outageSeconds: ((i + 1) * OUTAGE_REMINDER_MS) / 1000,
          }),
        ),
      );

      quota.state.failing = false;
      await expect(source.get('newco')).resolves.toMatchObject({ orgSlug: 'acme' });
      expect(lines).toHaveLength(1 + (minutes * 60_000) / OUTAGE_REMINDER_MS);
      expect(lines.at(-1)).toEqual(
        expect.objectContaining({
          level: 30,
          msg: 'llm-quota answers again',
          since: '2026-03-01T10:00:10.000Z',
          outageSeconds: minutes * 60,
          refusals: 2 * ((minutes * 60_000) / 200),
        }),
      );
    } finally {
      await quota.close();
    }
  }, 120_000);
});
