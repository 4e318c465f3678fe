/**
 * Out-of-scope rejection and calibration measured on BANKING77's TRAINING sentences only (for choosing calibration
 * settings without the benchmark's test sentences): the 10 intents of `outOfScopeIntents` are left out; the other
 * intents' training sentences are split 80/20 (seeded, per intent); a model trained on the 80 % scores the 20 %
 * (in-scope: accuracy, drop against threshold 0, ECE) and the left-out intents' training sentences (out-of-scope:
 * the share that gets a confidence below the threshold).
 *
 *   npx tsx bench/nlu-engine/oos-validate.ts ['{"epochs":5}']   intent-classifier options on top of the defaults
 *   ... --ceiling   also the best AUC a calibrator of today's features can reach on this split (see `ceiling`)
 *
 * About 5–10 s of CPU (--ceiling: half as much again).
 */
import { trainModel } from '../../packages/nlu/src';
import { type CalibrationExample, Calibrator, FEATURE_COUNT } from '../../packages/nlu/src/calibration';
import { IntentClassifier } from '../../packages/nlu/src/intent-classifier';
import { wordVectorsFor } from '../../packages/nlu/src/language-resources';
import { createRng, shuffleInPlace } from '../../packages/nlu/src/random';
import { tokenize } from '../../packages/nlu/src/tokenize';
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

/** the chance that a right in-scope answer scores above an out-of-scope sentence (ties count half) */
function auc(right: readonly number[], outOfScope: readonly number[]): number {
  let wins = 0;
  for (const r of right) for (const o of outOfScope) wins += r > o ? 1 : r === o ? 0.5 : 0;
  return wins / Math.max(1, right.length * outOfScope.length);
}

/**
 * The ranking limit of the calibrator's features on this split: a logistic regression over them fitted on the
 * split's own right in-scope answers against its own out-of-scope sentences (2-fold, each side weighing the same),
 * i.e. as if the calibration examples were the real out-of-scope text. No choice of calibration examples makes the
 * engine's calibrator rank better than this.
 */
function ceiling(
  train: readonly LabelledSentence[],
  valid: readonly LabelledSentence[],
  outOfScope: readonly LabelledSentence[],
  options: NluEngineOptions,
): number {
  // the same classifier as the model's: the training set's intent order and tokens (no entities here)
  const set = toTrainingSet(train);
  const words = (text: string) => tokenize(text).map((t) => t.norm);
  const docs = set.intents.flatMap((i) => i.utterances.map((u) => words(u[0]!.text!)));
  const labels = set.intents.flatMap((i, c) => i.utterances.map(() => c));
  const classifier = IntentClassifier.train(
    docs,
    labels,
    set.intents.length,
    options.intents,
    wordVectorsFor('en'),
  );
  const example = (s: LabelledSentence): CalibrationExample => {
    const { probabilities: p, similarity, energy, coverage } = classifier.predict(words(s.text));
    let arg = 0;
    for (let c = 1; c < p.length; c++) if (p[c]! > p[arg]!) arg = c;
    let second = 0;
    for (let c = 0; c < p.length; c++) if (c !== arg && p[c]! > second) second = p[c]!;
    return {
      features: { top: p[arg]!, second, similarity, energy, coverage },
      correct: set.intents[arg]!.name === s.intent,
    };
  };
  const right = valid.map(example).filter((e) => e.correct);
  const wrong = outOfScope.map(example).map((e) => ({ ...e, correct: false }));
  let sum = 0;
  for (const fold of [0, 1]) {
    const half = (xs: CalibrationExample[], k: number) => xs.filter((_, i) => i % 2 === k);
    const [r, w] = [half(right, fold), half(wrong, fold)];
    const n = r.length + w.length;
    const fitted = Calibrator.fit(
      [
        ...r.map((e) => ({ ...e, weight: n / (2 * r.length) })),
        ...w.map((e) => ({ ...e, weight: n / (2 * w.length) })),
      ],
      new Array<number>(FEATURE_COUNT).fill(0),
      1,
    );
    const score = (xs: CalibrationExample[]) => xs.map((e) => fitted.confidence(e.features));
    sum += auc(score(half(right, 1 - fold)), score(half(wrong, 1 - fold)));
  }
  return sum / 2;
}

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
  // the ranking, whatever the threshold
  const right = inScope.filter((x) => x.correct).map((x) => x.confidence);
  console.log(`AUC of the confidence, right in-scope answers vs out-of-scope: ${fmt(auc(right, oos))}`);
  if (process.argv.includes('--ceiling'))
    console.log(
      `  best a calibrator of these features reaches (2-fold): ${fmt(ceiling(train, valid, outOfScope, options))}`,
    );
  console.log(`threshold              ${THRESHOLDS.map((t) => t.toFixed(2).padStart(6)).join('')}`);
  console.log(`in-scope accuracy      ${THRESHOLDS.map((t) => fmt(acc(t)).padStart(6)).join('')}`);
  console.log(`in-scope drop          ${THRESHOLDS.map((t) => fmt(acc(0) - acc(t)).padStart(6)).join('')}`);
  console.log(
    `out-of-scope recall    ${THRESHOLDS.map((t) => fmt(oos.filter((c) => c < t).length / oos.length).padStart(6)).join('')}`,
  );
}

main();
