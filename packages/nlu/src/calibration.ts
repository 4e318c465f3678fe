/**
 * Calibrated confidence: the probability that the top intent is the right answer, fitted for each model at training
 * time on the model's own sentences (docs/decisions/0066-calibrated-confidence.md).
 *
 * - Features of a prediction: the log of the top softmax probability, the log-ratio of the top two, and the log of
 *   the input's similarity to the nearest training sentence of the top intent relative to how close that intent's
 *   sentences are to each other (the old "in-domain" factor, uncapped).
 * - Calibration data: auxiliary classifiers trained on part of the sentences, with some intents left out entirely.
 *   Their predictions on the left-out sentences of kept intents are in-scope examples (right or wrong); their
 *   predictions on the sentences of left-out intents are out-of-scope examples (always wrong, as any answer but the
 *   fallback would be). Rotating the left-out parts over a few rounds covers every intent.
 * - The calibrator: a logistic regression over the features, fitted by Newton's method with an L2 pull towards a
 *   prior fitted on public corpora, so that assistants with a handful of sentences still get sane confidences.
 */
import { createRng, shuffleInPlace } from './random';
import type { WordVectorTable } from './word-vectors';

export interface ConfidenceFeatures {
  /** top softmax probability */
  top: number;
  /** second softmax probability (0 with a single intent) */
  second: number;
  /** similarity to the nearest training sentence of the top intent / the intent's reference similarity */
  similarity: number;
  /** log-sum-exp of the classifier's logits */
  energy: number;
  /** IDF-weighted share of the input's words seen in training */
  coverage: number;
  /** the classifier knows one intent only */
  single?: boolean;
}

export const FEATURE_COUNT = 6; // bias + 5
/** keeps the log-ratio of the top two probabilities bounded (about 7 at most) */
const MARGIN_EPSILON = 1e-3;

export function featureVector(f: ConfidenceFeatures): number[] {
  const top = Math.max(1e-6, Math.min(1, f.top));
  const second = Math.max(0, Math.min(1, f.second));
  return [
    1,
    f.single ? 0 : Math.log(top),
    // a classifier of one intent has no second: its probabilities say nothing (both features 0)
    f.single ? 0 : Math.log((top + MARGIN_EPSILON) / (second + MARGIN_EPSILON)),
    Math.log(Math.max(0.02, Math.min(2, f.similarity))),
    Math.max(-20, Math.min(20, f.energy)),
    Math.log(Math.max(0.05, Math.min(1, f.coverage))),
  ];
}

/**
 * Prior calibrator weights: bias, log top probability, log top/second ratio, log relative similarity. Fitted on the
 * calibration examples of the Braun corpora and BANKING77 (bench/nlu-engine/calibration.ts --prior).
 */
export const PRIOR_WEIGHTS: readonly number[] = [2.09, 1.62, 0.66, 1.02, 0.026, 2.18];

/** strength of the pull towards the prior, in examples' worth of evidence */
const PRIOR_STRENGTH = 20;

export interface CalibrationExample {
  features: ConfidenceFeatures;
  correct: boolean;
  /** sample weight (default 1) */
  weight?: number;
}

const sigmoid = (z: number): number => (z >= 0 ? 1 / (1 + Math.exp(-z)) : Math.exp(z) / (1 + Math.exp(z)));

export class Calibrator {
  constructor(readonly weights: readonly number[] = PRIOR_WEIGHTS) {}

  confidence(f: ConfidenceFeatures): number {
    const x = featureVector(f);
    let z = 0;
    for (let k = 0; k < FEATURE_COUNT; k++) z += this.weights[k]! * x[k]!;
    return sigmoid(z);
  }

  /** Weighted logistic regression with an L2 pull towards `prior` (Newton's method, a few iterations). */
  static fit(
    examples: readonly CalibrationExample[],
    prior: readonly number[] = PRIOR_WEIGHTS,
    strength = PRIOR_STRENGTH,
  ): Calibrator {
    const xs = examples.map((e) => featureVector(e.features));
    const w = [...prior];
    for (let iter = 0; iter < 50; iter++) {
      const g = new Array<number>(FEATURE_COUNT).fill(0);
      const h = Array.from({ length: FEATURE_COUNT }, () => new Array<number>(FEATURE_COUNT).fill(0));
      for (let k = 0; k < FEATURE_COUNT; k++) {
        g[k] = strength * (w[k]! - prior[k]!);
        h[k]![k] = strength;
      }
      examples.forEach((e, i) => {
        const x = xs[i]!;
        let z = 0;
        for (let k = 0; k < FEATURE_COUNT; k++) z += w[k]! * x[k]!;
        const p = sigmoid(z);
        const sw = e.weight ?? 1;
        const r = sw * (p - (e.correct ? 1 : 0));
        const c = sw * p * (1 - p);
        for (let a = 0; a < FEATURE_COUNT; a++) {
          g[a]! += r * x[a]!;
          for (let b = 0; b < FEATURE_COUNT; b++) h[a]![b]! += c * x[a]! * x[b]!;
        }
      });
      const step = solve(h, g);
      // damped: no coordinate moves more than 2 per iteration (Newton overshoots on nearly separable data)
      const longest = Math.max(...step.map(Math.abs));
      if (longest > 2) for (let k = 0; k < FEATURE_COUNT; k++) step[k]! *= 2 / longest;
      let size = 0;
      for (let k = 0; k < FEATURE_COUNT; k++) {
        w[k]! -= step[k]!;
        size = Math.max(size, Math.abs(step[k]!));
      }
      if (size < 1e-6) break;
    }
    return new Calibrator(w.map((v) => Math.fround(v)));
  }

  toJSON(): number[] {
    return [...this.weights];
  }

  static fromJSON(json: unknown): Calibrator | null {
    return Array.isArray(json) && json.length === FEATURE_COUNT && json.every((v) => Number.isFinite(v))
      ? new Calibrator(json as number[])
      : null;
  }
}

/** Solve a small symmetric positive-definite system by Gaussian elimination with partial pivoting. */
function solve(a: number[][], b: number[]): number[] {
  const n = b.length;
  const m = a.map((row, i) => [...row, b[i]!]);
  for (let c = 0; c < n; c++) {
    let pivot = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(m[r]![c]!) > Math.abs(m[pivot]![c]!)) pivot = r;
    [m[c], m[pivot]] = [m[pivot]!, m[c]!];
    const d = m[c]![c]!;
    if (Math.abs(d) < 1e-12) return new Array<number>(n).fill(0);
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = m[r]![c]! / d;
      for (let k = c; k <= n; k++) m[r]![k]! -= f * m[c]![k]!;
    }
  }
  return m.map((row, i) => row[n]! / row[i]!);
}

/** sentences an auxiliary classifier is trained on, at most (and half as many examples of each kind) */
const MAX_AUXILIARY_SENTENCES = 4000;

export interface CalibrationRound {
  /** sentence indices the auxiliary classifier is trained on */
  train: number[];
  /** left-out sentences of kept intents: in-scope examples */
  inScope: number[];
  /** sentences of left-out intents: out-of-scope examples */
  outOfScope: number[];
}

/**
 * The rounds of auxiliary training: each leaves out a group of intents (about a fifth, at least one when there are
 * three or more) and a fifth of the other intents' sentences (never an intent's last one). Small sets get more rounds,
 * so that every intent is left out once and there are enough examples; large sets one (it costs a training).
 */
export function calibrationRounds(
  labels: readonly number[],
  numClasses: number,
  seed: number,
): CalibrationRound[] {
  const n = labels.length;
  const rounds = n <= 400 ? 5 : n <= 3000 ? 2 : 1;
  const rng = createRng(seed);
  const classOrder = shuffleInPlace(
    Array.from({ length: numClasses }, (_, c) => c),
    rng,
  );
  // intents are left out only when at least two stay (a one-intent classifier says nothing by its probabilities)
  const groupSize = numClasses >= 3 ? Math.max(1, Math.round(numClasses / 5)) : 0;
  const byClass: number[][] = Array.from({ length: numClasses }, () => []);
  labels.forEach((y, i) => {
    byClass[y]!.push(i);
  });
  const out: CalibrationRound[] = [];
  for (let r = 0; r < rounds; r++) {
    const left = new Set<number>();
    for (let k = 0; k < groupSize && numClasses - left.size > 1; k++)
      left.add(classOrder[(r * groupSize + k) % numClasses]!);
    const round: CalibrationRound = { train: [], inScope: [], outOfScope: [] };
    for (let c = 0; c < numClasses; c++) {
      const idx = byClass[c]!;
      if (left.has(c)) {
        round.outOfScope.push(...idx);
        continue;
      }
      const shuffled = shuffleInPlace([...idx], rng);
      // a fifth held out (rotating with the round for small sets), at least one kept for training
      const held = Math.min(idx.length - 1, Math.max(idx.length >= 2 ? 1 : 0, Math.round(idx.length / 5)));
      const start = (r * held) % Math.max(1, idx.length);
      for (let k = 0; k < shuffled.length; k++) {
        const pos = (k - start + shuffled.length) % shuffled.length;
        (pos < held ? round.inScope : round.train).push(shuffled[k]!);
      }
    }
    // large sets: the auxiliary classifier learns from a seeded sample (its cost grows with the sentences)
    if (round.train.length > MAX_AUXILIARY_SENTENCES)
      shuffleInPlace(round.train, rng).length = MAX_AUXILIARY_SENTENCES;
    if (round.inScope.length > MAX_AUXILIARY_SENTENCES / 2)
      shuffleInPlace(round.inScope, rng).length = MAX_AUXILIARY_SENTENCES / 2;
    if (round.outOfScope.length > MAX_AUXILIARY_SENTENCES / 2)
      shuffleInPlace(round.outOfScope, rng).length = MAX_AUXILIARY_SENTENCES / 2;
    if (round.train.length > 0) out.push(round);
  }
  return out;
}

/**
 * Sentences that belong to no assistant: 4 to 8 words drawn from the language's word list (ranks 100 to 20,000,
 * words of 3 letters or more), half of them after a frequent word ("the quantum flux capacitor sings purple").
 * They are out-of-scope calibration examples that show what unrelated text scores against the assistant's intents.
 * Seeded: the same for every training. Empty without a word list (languages without word vectors).
 */
export function backgroundSentences(table: WordVectorTable | null, count: number, seed: number): string[][] {
  if (!table || table.size < 20_000) return [];
  const rng = createRng(seed);
  const pickWord = (from: number, to: number): string => {
    for (;;) {
      const w = table.wordAt(from + Math.floor(rng() * (to - from)));
      if (w.length >= 3 && /^\p{L}+$/u.test(w)) return w;
    }
  };
  const out: string[][] = [];
  for (let i = 0; i < count; i++) {
    const words: string[] = [];
    if (rng() < 0.5) words.push(table.wordAt(Math.floor(rng() * 30)));
    const n = 4 + Math.floor(rng() * 5);
    while (words.length < n) words.push(pickWord(100, 20_000));
    out.push(words);
  }
  return out;
}
