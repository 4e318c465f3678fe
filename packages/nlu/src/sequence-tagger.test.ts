import { beginLabel, insideLabel, LinearChainCrf } from './sequence-tagger';

describe('LinearChainCrf', () => {
  // features: 0 = word "from", 1 = word "to", 2 = a name, 3 = previous word is "from", 4 = previous word is "to";
  // two classes: 0 = departure, 1 = arrival
  const seqs = [
    { features: [[0], [2, 3], [1], [2, 4]], labels: [0, beginLabel(0), 0, beginLabel(1)] },
    { features: [[1], [2, 4], [0], [2, 3]], labels: [0, beginLabel(1), 0, beginLabel(0)] },
    {
      features: [[0], [2, 3], [2], [1], [2, 4]],
      labels: [0, beginLabel(0), insideLabel(0), 0, beginLabel(1)],
    },
  ];
  const crf = LinearChainCrf.train(seqs, 5, 2, { epochs: 50, lambda: 1e-4, learningRate: 0.2, seed: 1 });

  it('learns labels from the context, and multi-token spans from the transitions', () => {
    expect(crf.viterbi([[1], [2, 4], [0], [2, 3]])).toEqual([0, beginLabel(1), 0, beginLabel(0)]);
    expect(crf.viterbi([[0], [2, 3], [2]])).toEqual([0, beginLabel(0), insideLabel(0)]);
  });

  it('gives marginals that sum to one per token', () => {
    for (const m of crf.marginals([[0], [2], [2]])) expect(m.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 9);
  });

  it('respects label masks and never produces I after O', () => {
    const mask = (...allowed: number[]) => {
      const m = new Uint8Array(5);
      for (const a of allowed) m[a] = 1;
      return m;
    };
    const path = crf.viterbi([[0], [2, 3], [1]], [null, mask(beginLabel(1)), null]);
    expect(path[1]).toBe(beginLabel(1));
    const free = crf.viterbi([[2], [2], [2], [0]]);
    free.forEach((y, t) => {
      if (y === insideLabel(0)) expect([beginLabel(0), insideLabel(0)]).toContain(free[t - 1]);
      if (y === insideLabel(1)) expect([beginLabel(1), insideLabel(1)]).toContain(free[t - 1]);
    });
  });
});
