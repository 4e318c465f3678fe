/**
 * How long a catalogue change made on one gateway instance takes to be served by a second one (issue 10:
 * "within 1 s"), over a real nats-server and one shared embedded store, with the store polling off so the
 * bus alone carries it.
 *
 *   npx tsx bench/llm-gateway/catalogue-propagation.ts [cycles]
 *
 * Each cycle adds a model on instance A, disables it, removes it; after each answer from A, instance B is
 * asked back to back until it serves the new state. The figure is from A's answer to B's first answer
 * showing the change (so it includes one of B's answers, ~0.3 ms).
 */
import { createNatsBus } from '@platform/bus';
import { createEmbeddedStore } from '@platform/store';
import { startNatsServer } from '@platform/testkit';
import {
  catalogueEntry,
  type GatewayInstance,
  startInstance,
} from '../../services/llm-gateway/test/gateway-instance';
import { delaySummary } from '../delays';

const CYCLES = Number(process.argv[2] ?? 100);
const GIVE_UP_MS = 10_000;

async function until(b: GatewayInstance, id: string, served: (status: number, enabled: unknown) => boolean) {
  const started = performance.now();
  for (;;) {
    const r = await b.call('GET', `/v1/models/${id}`);
    if (served(r.status, r.body?.enabled)) return performance.now() - started;
    if (performance.now() - started > GIVE_UP_MS) throw new Error(`instance B never served ${id}`);
  }
}

async function main() {
  const nats = await startNatsServer();
  const store = createEmbeddedStore();
  const buses = await Promise.all(
    ['a', 'b'].map((n) => createNatsBus({ url: nats.url, name: `gateway-${n}` })),
  );
  const off = { LLM_GATEWAY_CATALOGUE_POLL_MS: '0' };
  const a = await startInstance(store, buses[0]!, off);
  const b = await startInstance(store, buses[1]!, off);
  const times: Record<'add' | 'disable' | 'remove', number[]> = { add: [], disable: [], remove: [] };
  try {
    for (let i = 0; i < CYCLES; i++) {
      const id = `bench/propagation-${i}`;
      if ((await a.call('POST', '/v1/models', catalogueEntry(id))).status !== 201)
        throw new Error('add refused');
      times.add.push(await until(b, id, (s, enabled) => s === 200 && enabled === true));
      await a.call('PATCH', `/v1/models/${id}`, { enabled: false });
      times.disable.push(await until(b, id, (s, enabled) => s === 200 && enabled === false));
      await a.call('DELETE', `/v1/models/${id}`);
      times.remove.push(await until(b, id, (s) => s === 404));
    }
  } finally {
    await a.stop();
    await b.stop();
    await Promise.all(buses.map((bus) => bus.close()));
    await nats.dispose();
  }
  const all = Object.values(times).flat();
  for (const [what, ms] of [...Object.entries(times), ['all', all] as const]) {
    console.log(`${what.padEnd(8)} ${delaySummary(ms)}`);
  }
  const late = all.filter((ms) => ms > 1_000).length;
  console.log(`changes served by the second instance later than 1 s: ${late} of ${all.length}`);
}

void main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
