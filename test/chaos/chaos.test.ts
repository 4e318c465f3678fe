import { describeWithNats } from '@platform/testkit';
import { fuzz, killDuringWrites, natsRestartDuringUsage, rotationsUnderLoad } from './scenarios';

/**
 * The short form of `pnpm chaos`, run by `pnpm test`: the same scenarios, small. Figures are logged
 * only when a target is missed.
 */
const quiet = () => undefined;

describe('chaos, short form', () => {
  it('kill -9 during concurrent writes loses no acknowledged write (1 round)', async () => {
    const f = await killDuringWrites(1, quiet);
    expect(f.acknowledged).toBeGreaterThan(0);
    expect(f.lost).toBe(0);
  }, 120_000);

  it('a forced key rotation under session-JWT load answers only 200', async () => {
    const f = await rotationsUnderLoad(1, 200, 2, quiet);
    expect(f.statuses).toEqual({ 200: f.requests });
  }, 120_000);

  it('1,000 fuzzed requests across all roots get an answer each, none 5xx', async () => {
    const f = await fuzz(1_000, quiet);
    expect(f.unanswered).toEqual([]);
    expect(f.fiveXxSamples).toEqual([]);
  }, 120_000);
});

describeWithNats('chaos with NATS, short form', () => {
  it('nats-server restarted while usage flows: nothing lost or counted twice (200 events)', async () => {
    const f = await natsRestartDuringUsage(200, quiet);
    expect(f).toMatchObject({ counted: 200, lost: 0, countedTwice: 0 });
  }, 180_000);
});
