/**
 * What adopting a retrained model costs the thread that answers Messages (issue 12 item 4), in process, for the
 * assistant of bench/nlu/latency.ts (100 intents, 2,000 sentences, 12 entities): decoding the binary form the
 * training worker transfers (what happens between its message and the model answering), making the stored pieces
 * (base64 of the worker's stored form, as services/legacy-agent stores them), loading a stored model (start-up,
 * another instance), and, for comparison, loading a model stored as JSON before decision 0081
 * (`loadModelAsync(JSON.parse(text))`, close to the adoption path before it). A decoded model stays alive meanwhile,
 * as the previous model does in the service, so each decode takes its entity dictionaries instead of building them: a
 * retraining that changed intents, not entities (packages/nlu/src/entity-extractor.ts, `adoptedLookups`; a model
 * trained in this process registers none, only decoded ones do).
 *
 *   npx tsx bench/nlu/adoption.ts [rounds=3]
 *
 * A 1 ms timer measures every turn of the event loop: the longest gap is the longest a request could wait behind
 * the adoption (wall clock, inflated on a busy host), and the CPU time of the process during that turn (the worker
 * has exited by then, so it is this thread's work plus V8's helper threads) is the figure load does not blur.
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import {
  decodeModelAsync,
  encodeModelBuffer,
  loadModelAsync,
  loadStoredModel,
  storedModelForm,
  trainModelInWorker,
} from '../../packages/nlu/src';
import { syntheticAssistant } from '../nlu-engine/synthetic';

const ROUNDS = Number(process.argv[2] ?? 3);

/** runs `task` while a 1 ms timer measures each turn: the longest one, in wall and CPU ms */
async function stalls<T>(
  task: () => Promise<T>,
): Promise<{ value: T; wallMs: number; maxGap: number; maxCpu: number }> {
  let last = performance.now();
  let lastCpu = process.cpuUsage();
  let maxGap = 0;
  let maxCpu = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    const cpu = process.cpuUsage(lastCpu);
    maxGap = Math.max(maxGap, now - last);
    maxCpu = Math.max(maxCpu, (cpu.user + cpu.system) / 1000);
    last = now;
    lastCpu = process.cpuUsage();
  }, 1);
  const started = performance.now();
  const value = await task();
  const wallMs = performance.now() - started;
  clearInterval(timer);
  return { value, wallMs, maxGap, maxCpu };
}

async function main() {
  const { set } = syntheticAssistant(100, 2000, 1000);
  console.log(
    `${set.intents.length} intents, ${set.intents.reduce((n, i) => n + i.utterances.length, 0)} sentences, ${set.entities.length} entities; ${ROUNDS} rounds`,
  );
  const model = await trainModelInWorker(set);
  const answering = await decodeModelAsync(encodeModelBuffer(model, { indexes: true }));
  for (let round = 0; round < ROUNDS; round++) {
    // what the worker transfers: the binary form with its indexes; adopting it is decoding it on this thread
    const transferred = encodeModelBuffer(model, { indexes: true });
    const adopt = await stalls(() => decodeModelAsync(transferred));
    const stored = await storedModelForm(model);
    const pieces = await stalls(async () => {
      const out: string[] = [];
      const bytes = Buffer.from(stored.buffer, stored.byteOffset, stored.length);
      for (let i = 0; i * 393_216 < bytes.length; i++) {
        out.push(bytes.subarray(i * 393_216, (i + 1) * 393_216).toString('base64'));
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      return out;
    });
    const load = await stalls(() => loadStoredModel(stored));
    const json = JSON.stringify(model.toJSON());
    const legacy = await stalls(() => loadModelAsync(JSON.parse(json)));
    const turn = (x: { maxGap: number; maxCpu: number }) =>
      `longest turn ${x.maxGap.toFixed(1)} ms wall, ${x.maxCpu.toFixed(1)} ms CPU`;
    console.log(
      `round ${round + 1}: adopting the transferred form (${(transferred.length / 1e6).toFixed(1)} MB) ${adopt.wallMs.toFixed(0)} ms (${turn(adopt)}); ` +
        `stored form ${(stored.length / 1e6).toFixed(2)} MB in ${pieces.value.length} base64 pieces (${turn(pieces)}); ` +
        `loading it ${load.wallMs.toFixed(0)} ms (${turn(load)}); ` +
        `a JSON model stored before 0081 (${(json.length / 1e6).toFixed(1)} MB) ${legacy.wallMs.toFixed(0)} ms (${turn(legacy)})`,
    );
  }
  // the previous model answers until the end, as in the service
  void answering;
  console.log(
    `load average ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')} (2 cores, shared)`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
