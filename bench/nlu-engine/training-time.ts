/**
 * Training time of the large assistant of issue 12 item 3, in process: 150 intents, 15,000 sentences with entities
 * (bench/nlu-engine/synthetic.ts), by CPU time (process.cpuUsage, which a shared machine's load does not inflate) and
 * wall time, per part of `trainModel`: the intent classifier, the calibration rounds, the entity extractor.
 *
 *   npx tsx bench/nlu-engine/training-time.ts [runs=1]
 *
 * The service's figure (worker start to model stored, through the platform) is bench/nlu/memory.ts.
 */
import { performance } from 'node:perf_hooks';
import { trainModel } from '../../packages/nlu/src';
import { EntityExtractor } from '../../packages/nlu/src/entity-extractor';
import { IntentClassifier } from '../../packages/nlu/src/intent-classifier';
import { wordVectorsFor } from '../../packages/nlu/src/language-resources';
import { tokenize } from '../../packages/nlu/src/tokenize';
import { DEFAULT_ENGINE_OPTIONS } from '../../packages/nlu/src/train';
import { syntheticAssistant } from './synthetic';

function measure<T>(f: () => T): { value: T; cpuMs: number; wallMs: number } {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = f();
  const cpu = process.cpuUsage(c0);
  return { value, cpuMs: (cpu.user + cpu.system) / 1000, wallMs: performance.now() - t0 };
}

const ms = (x: number) => `${(x / 1000).toFixed(2)} s`;

function main(): void {
  const runs = Number(process.argv[2] ?? 1) || 1;
  const { set, tests } = syntheticAssistant(150, 15_000, 1000);
  const table = wordVectorsFor('en'); // read once, outside the timings (a process reads it once)
  const docs: string[][] = [];
  const labels: number[] = [];
  set.intents.forEach((intent, c) => {
    for (const u of intent.utterances) {
      const words = tokenize(u.map((p) => p.text ?? '').join('')).map((t) => t.norm);
      for (const p of u) if (p.entity) words.push(`@${p.entity}`);
      docs.push(words);
      labels.push(c);
    }
  });
  for (let run = 0; run < runs; run++) {
    const total = measure(() => trainModel(set));
    const intents = measure(() =>
      IntentClassifier.train(docs, labels, set.intents.length, DEFAULT_ENGINE_OPTIONS.intents, table),
    );
    const entities = measure(() =>
      EntityExtractor.train(
        set.entities,
        set.intents.flatMap((i) => i.utterances),
        DEFAULT_ENGINE_OPTIONS.entities,
      ),
    );
    const model = total.value;
    const correct = tests.filter((t) => model.parse(t.text).intents[0]?.id === t.intent).length;
    console.log(
      `run ${run + 1}: trainModel ${ms(total.cpuMs)} CPU (${ms(total.wallMs)} wall); ` +
        `of it: intent classifier ${ms(intents.cpuMs)} CPU, entity extractor ${ms(entities.cpuMs)} CPU, ` +
        `calibration (the rest) ~${ms(total.cpuMs - intents.cpuMs - entities.cpuMs)} CPU; ` +
        `held-out accuracy ${(correct / tests.length).toFixed(3)}`,
    );
  }
}

main();
