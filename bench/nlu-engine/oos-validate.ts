/**
 * Out-of-scope rejection and calibration measured on BANKING77's TRAINING sentences only (for choosing calibration
 * settings without the benchmark's test sentences): the 10 intents of `outOfScopeIntents` are left out; the other
 * intents' training sentences are split 80/20 (seeded, per intent); a model trained on the 80 % scores the 20 %
 * (in-scope: accuracy, drop against threshold 0, ECE) and the left-out intents' training sentences (out-of-scope:
 * the share that gets a confidence below the threshold).
 *
 *   npx tsx bench/nlu-engine/oos-validate.ts ['{"epochs":5}']   intent-classifier options on top of the defaults
 *
 * About 10 s of CPU.
 */
import { trainModel } from '../../packages/nlu/src';
import { createRng, shuffleInPlace } from '../../packages/nlu/src/random';
import { DEFAULT_ENGINE_OPTIONS, type NluEngineOptions } from '../../packages/nlu/src/train';
import {
  expectedCalibrationError,
  type LabelledSentence,
  loadBanking77,
  outOfScopeIntents,
  toTrainingSet,
} from './banking77';

const THRESHOLDS = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6];
const fmt = (x: number) => x.toFixed(3);

function main(): void {
  const variant = process.argv.slice(2).find((a) => a.startsWith('{'));
  const options: NluEngineOptions = {
    ...DEFAULT_ENGINE_OPTIONS,
    intents: { ...DEFAULT_ENGINE_OPTIONS.intents, ...(variant ? JSON.parse(variant) : {}) },
  };
  const data = loadBanking77();
  const left = new Set(outOfScopeIntents(data));
  const rng = createRng(11);
  const train: LabelledSentence[] = [];
  const valid: LabelledSentence[] = [];
  for (const intent of data.intents) {
    if (left.has(intent)) continue;
    const items = shuffleInPlace(
      data.train.filter((s) => s.intent === intent),
      rng,
    );
    const held = Math.round(items.length / 5);
    valid.push(...items.slice(0, held));
    train.push(...items.slice(held));
  }
  const outOfScope = data.train.filter((s) => left.has(s.intent));
  const model = trainModel(toTrainingSet(train), options);
  const top = (text: string) => model.parse(text).intents[0];
  const inScope = valid.map((s) => {
    const t = top(s.text);
    return { confidence: t?.confidence ?? 0, correct: t?.name === s.intent };
  });
  const oos = outOfScope.map((s) => top(s.text)?.confidence ?? 0);
  const acc = (t: number) => inScope.filter((x) => x.correct && x.confidence >= t).length / inScope.length;
  console.log(
    `in-scope ${inScope.length} (validation), out-of-scope ${oos.length}; in-scope ECE ${fmt(expectedCalibrationError(inScope))}`,
  );
  console.log(`threshold              ${THRESHOLDS.map((t) => t.toFixed(2).padStart(6)).join('')}`);
  console.log(`in-scope accuracy      ${THRESHOLDS.map((t) => fmt(acc(t)).padStart(6)).join('')}`);
  console.log(`in-scope drop          ${THRESHOLDS.map((t) => fmt(acc(0) - acc(t)).padStart(6)).join('')}`);
  console.log(
    `out-of-scope recall    ${THRESHOLDS.map((t) => fmt(oos.filter((c) => c < t).length / oos.length).padStart(6)).join('')}`,
  );
}

main();
