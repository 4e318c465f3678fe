import {
  backgroundSentences,
  type CalibrationExample,
  Calibrator,
  calibrationRounds,
  PRIOR_WEIGHTS,
} from './calibration';
import { wordVectorsFor } from './language-resources';

const features = (similarity: number, coverage = similarity) => ({
  top: 0.9,
  second: 0.05,
  similarity,
  energy: 3,
  coverage,
});

describe('Calibrator', () => {
  it('learns that answers close to the training sentences are right and far ones wrong', () => {
    const examples: CalibrationExample[] = [];
    for (let i = 0; i < 200; i++) {
      examples.push({ features: features(0.8 + (i % 5) * 0.1), correct: i % 10 !== 0 }); // 90 % right
      examples.push({ features: features(0.05 + (i % 5) * 0.02), correct: false });
    }
    const c = Calibrator.fit(examples);
    expect(c.confidence(features(1))).toBeGreaterThan(0.8);
    expect(c.confidence(features(1))).toBeLessThan(0.97); // calibrated: about 90 %, not 100 %
    expect(c.confidence(features(0.06))).toBeLessThan(0.1);
  });

  it('keeps the prior without evidence, and survives one-sided or degenerate data', () => {
    expect(Calibrator.fit([]).toJSON()).toEqual(PRIOR_WEIGHTS.map((w) => Math.fround(w)));
    const same = Array.from({ length: 50 }, () => ({ features: features(0.5), correct: true }));
    const c = Calibrator.fit(same);
    expect(c.toJSON().every(Number.isFinite)).toBe(true);
    expect(c.confidence(features(0.5))).toBeGreaterThan(0.5);
    expect(Calibrator.fromJSON(c.toJSON())?.toJSON()).toEqual(c.toJSON());
    expect(Calibrator.fromJSON([1, 2])).toBeNull();
    expect(Calibrator.fromJSON('nope')).toBeNull();
  });
});

describe('calibration rounds', () => {
  it('leave out whole intents (when three or more) and some sentences of the others, never all of one', () => {
    const labels = Array.from({ length: 60 }, (_, i) => i % 6);
    const rounds = calibrationRounds(labels, 6, 1);
    expect(rounds).toHaveLength(5);
    const leftOut = new Set<number>();
    for (const r of rounds) {
      const all = [...r.train, ...r.inScope, ...r.outOfScope].sort((a, b) => a - b);
      expect(all).toEqual(labels.map((_, i) => i));
      const trained = new Set(r.train.map((i) => labels[i]));
      for (const i of r.inScope) expect(trained.has(labels[i])).toBe(true);
      for (const i of r.outOfScope) {
        expect(trained.has(labels[i])).toBe(false);
        leftOut.add(labels[i]!);
      }
    }
    expect(leftOut.size).toBeGreaterThanOrEqual(5);
    // two intents: nothing is left out whole
    for (const r of calibrationRounds([0, 0, 1, 1, 1], 2, 1)) expect(r.outOfScope).toEqual([]);
  });

  it('draws seeded background sentences from the word list of languages that have one', () => {
    const en = wordVectorsFor('en');
    const a = backgroundSentences(en, 20, 5);
    expect(a).toHaveLength(20);
    expect(a).toEqual(backgroundSentences(en, 20, 5));
    for (const words of a) expect(words.length).toBeGreaterThanOrEqual(4);
    expect(backgroundSentences(null, 20, 5)).toEqual([]);
  });
});
