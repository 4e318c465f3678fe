/**
 * In-process figures of calibrated confidence and out-of-scope rejection (docs/decisions/0066):
 * Braun 2017 pooled, BANKING77 and BANKING77 with 10 intents left out of training, at several thresholds.
 *
 *   npx tsx bench/nlu-engine/calibration.ts                 the engine's defaults
 *   npx tsx bench/nlu-engine/calibration.ts '{"epochs":5}'  intent-classifier options on top of them
 *   ... --no-banking                                          Braun only (seconds instead of a minute)
 *   ... --no-synthetic       without the training time of the 150-intent, 15,000-sentence synthetic assistant
 *                            (issue 12 item 3; per part: bench/nlu-engine/training-time.ts)
 *   ... --prior       fits the calibrator's prior (PRIOR_WEIGHTS in packages/nlu/src/calibration.ts) on the
 *                     calibration examples of public and example assistants, each assistant weighing the same
 *
 * CPU-heavy (BANKING77 trains twice on 10,000 sentences): run it once, on a quiet machine if possible.
 */
import { performance } from 'node:perf_hooks';
import { type NluModel, type NluTrainingSet, trainModel } from '../../packages/nlu/src';
import { type CalibrationExample, Calibrator } from '../../packages/nlu/src/calibration';
import { metroAssistant, travelAssistant } from '../../packages/nlu/src/example-assistants';
import {
  calibrationExamplesOf,
  DEFAULT_ENGINE_OPTIONS,
  type NluEngineOptions,
} from '../../packages/nlu/src/train';
import {
  expectedCalibrationError,
  type LabelledSentence,
  loadBanking77,
  outOfScopeIntents,
  toTrainingSet,
} from './banking77';
import { BRAUN_CORPORA, corpusToTrainingSet, loadBraunCorpus, testSentences } from './braun';
import { syntheticAssistant } from './synthetic';

const THRESHOLDS = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6];
const fmt = (x: number) => x.toFixed(3);

interface Scored {
  gold: string | null;
  predicted: string;
  confidence: number;
}

function score(model: NluModel, sentences: readonly LabelledSentence[], gold = true): Scored[] {
  return sentences.map((s) => {
    const top = model.parse(s.text).intents[0];
    return { gold: gold ? s.intent : null, predicted: top?.name ?? '', confidence: top?.confidence ?? 0 };
  });
}

/** accuracy at a threshold: answers below it are the fallback, wrong for an in-scope sentence */
const accuracyAt = (xs: Scored[], t: number) =>
  xs.filter((x) => x.confidence >= t && x.predicted === x.gold).length / xs.length;
const rejectedAt = (xs: Scored[], t: number) => xs.filter((x) => x.confidence < t).length / xs.length;
const ece = (xs: Scored[]) =>
  expectedCalibrationError(xs.map((x) => ({ confidence: x.confidence, correct: x.predicted === x.gold })));

function timed<T>(f: () => T): [T, number] {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const r = f();
  const cpu = process.cpuUsage(c0);
  return [r, Math.max(performance.now() - t0, 0) && (cpu.user + cpu.system) / 1000];
}

/** Prior of the calibrator: one fit over the calibration examples of assistants of every size. */
function fitPrior(options: NluEngineOptions): void {
  const data = loadBanking77();
  const sets: Array<[string, NluTrainingSet]> = BRAUN_CORPORA.map((name) => [
    name,
    corpusToTrainingSet(loadBraunCorpus(name)),
  ]);
  const travel = travelAssistant();
  sets.push(['travel', travel], ['metro', metroAssistant()]);
  sets.push(['travel, 3 intents', { ...travel, intents: travel.intents.slice(0, 3) }]);
  sets.push(['travel, 1 intent', { ...travel, intents: travel.intents.slice(0, 1) }]);
  // BANKING77 samples: 20 intents of 30 sentences, and 77 of 20
  const take = (intents: string[], per: number) =>
    intents.flatMap((i) => data.train.filter((s) => s.intent === i).slice(0, per));
  sets.push(['banking 20x30', toTrainingSet(take(data.intents.slice(0, 20), 30))]);
  sets.push(['banking 77x20', toTrainingSet(take(data.intents, 20))]);
  const all: CalibrationExample[] = [];
  for (const [name, set] of sets) {
    const examples = calibrationExamplesOf(set, options);
    const total = examples.reduce((a, e) => a + (e.weight ?? 1), 0);
    for (const e of examples) all.push({ ...e, weight: ((e.weight ?? 1) * 100) / total });
    console.log(`${name}: ${examples.length} examples`);
  }
  console.log(`prior weights: ${JSON.stringify(Calibrator.fit(all, [0, 0, 0, 0, 0, 0], 1).toJSON())}`);
}

function main(): void {
  const args = process.argv.slice(2);
  const variant = args.find((a) => a.startsWith('{'));
  const options: NluEngineOptions = {
    ...DEFAULT_ENGINE_OPTIONS,
    intents: { ...DEFAULT_ENGINE_OPTIONS.intents, ...(variant ? JSON.parse(variant) : {}) },
  };
  console.log(`options: ${variant ?? 'defaults'}`);
  if (args.includes('--prior')) {
    fitPrior(options);
    return;
  }
  const braun: Scored[] = [];
  for (const name of BRAUN_CORPORA) {
    const corpus = loadBraunCorpus(name);
    const model = trainModel(corpusToTrainingSet(corpus), options);
    braun.push(...score(model, testSentences(corpus)));
  }
  const rows: Array<[string, (t: number) => string]> = [
    ['Braun pooled accuracy', (t) => fmt(accuracyAt(braun, t))],
  ];
  console.log(`Braun ECE ${fmt(ece(braun))}`);
  if (!args.includes('--no-banking')) {
    const data = loadBanking77();
    const [full, fullMs] = timed(() => trainModel(toTrainingSet(data.train), options));
    const banking = score(full, data.test);
    console.log(`BANKING77: training ${Math.round(fullMs)} ms CPU; ECE ${fmt(ece(banking))}`);
    const left = new Set(outOfScopeIntents(data));
    const [partial, partialMs] = timed(() =>
      trainModel(toTrainingSet(data.train.filter((s) => !left.has(s.intent))), options),
    );
    const inScope = score(
      partial,
      data.test.filter((s) => !left.has(s.intent)),
    );
    const outOfScope = score(
      partial,
      data.test.filter((s) => left.has(s.intent)),
      false,
    );
    console.log(
      `BANKING77-OOS (left out: ${[...left].join(', ')}): training ${Math.round(partialMs)} ms CPU; in-scope ECE ${fmt(ece(inScope))}`,
    );
    rows.push(
      ['BANKING77 accuracy', (t) => fmt(accuracyAt(banking, t))],
      ['BANKING77 rejected', (t) => fmt(rejectedAt(banking, t))],
      ['OOS split: in-scope accuracy', (t) => fmt(accuracyAt(inScope, t))],
      ['OOS split: in-scope drop vs t=0', (t) => fmt(accuracyAt(inScope, 0) - accuracyAt(inScope, t))],
      ['OOS split: out-of-scope recall', (t) => fmt(rejectedAt(outOfScope, t))],
    );
  }
  console.log(
    `\nthreshold                        ${THRESHOLDS.map((t) => t.toFixed(2).padStart(6)).join('')}`,
  );
  for (const [label, f] of rows)
    console.log(`${label.padEnd(33)}${THRESHOLDS.map((t) => f(t).padStart(6)).join('')}`);
  if (!args.includes('--no-synthetic')) {
    const { set } = syntheticAssistant(150, 15_000, 0);
    const t0 = performance.now();
    const [, cpuMs] = timed(() => trainModel(set, options));
    console.log(
      `\n150 intents, 15,000 sentences (synthetic): training ${(cpuMs / 1000).toFixed(2)} s CPU, ` +
        `${((performance.now() - t0) / 1000).toFixed(2)} s wall`,
    );
  }
}

main();
