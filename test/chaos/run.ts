/**
 * The failure and fuzz harness, full form: `pnpm chaos` (loopback only; stops by itself in a few minutes).
 * Each scenario prints its figures; the process exits 1 when a target is missed. Scale with
 * CHAOS_ROUNDS (kill -9 rounds, 20), CHAOS_EVENTS (usage events, 5000), CHAOS_RATE (req/s, 2000),
 * CHAOS_FUZZ (fuzzed requests, 100000), CHAOS_SLOW (slow clients, 500); CHAOS_ONLY=kill,nats,... runs some.
 */
import { fuzz, killDuringWrites, natsRestartDuringUsage, rotationsUnderLoad, slowClients } from './scenarios';

const n = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const only = process.env.CHAOS_ONLY?.split(',');
const wanted = (name: string) => !only || only.includes(name);

async function main() {
  const misses: string[] = [];
  const report = (name: string, figures: object, ok: boolean) => {
    console.log(`${ok ? 'PASS' : 'MISS'} ${name}: ${JSON.stringify(figures)}`);
    if (!ok) misses.push(name);
  };
  if (wanted('kill')) {
    const f = await killDuringWrites(n('CHAOS_ROUNDS', 20));
    report('kill -9 during concurrent writes (lost acknowledged writes = 0)', f, f.lost === 0);
  }
  if (wanted('nats')) {
    const f = await natsRestartDuringUsage(n('CHAOS_EVENTS', 5_000));
    report(
      'nats-server restarted while usage flows (lost = 0, counted twice = 0)',
      f,
      f.lost === 0 && f.countedTwice === 0,
    );
  }
  if (wanted('rotate')) {
    const f = await rotationsUnderLoad(5, n('CHAOS_RATE', 2_000));
    report('5 forced key rotations under session-JWT load (non-200 = 0)', f, f.non200 === 0);
  }
  if (wanted('fuzz')) {
    const f = await fuzz(n('CHAOS_FUZZ', 100_000));
    report(
      'fuzzed requests across all roots (5xx = 0, unanswered = 0, edge RSS after a full GC: end within 20% of after warm-up)',
      f,
      f.fiveXx === 0 && f.unanswered.length === 0 && f.rssGrowthPercent <= 20,
    );
  }
  if (wanted('slow')) {
    const f = await slowClients(n('CHAOS_SLOW', 500), 15);
    report(
      'slow clients (bounded sockets, others served)',
      f,
      f.servedMeanwhile && f.stillOpen < f.slowClients,
    );
  }
  console.log(misses.length ? `\nmissed: ${misses.join('; ')}` : '\nevery target met');
  process.exit(misses.length ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(2);
});
