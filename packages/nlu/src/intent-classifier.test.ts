import { SoftmaxRegression, type SparseVector } from './intent-classifier';
import { createRng } from './random';

/** logits computed the plain way: bias + sum over the input's features of value × weight row */
function naiveLogits(model: SoftmaxRegression, x: SparseVector): number[] {
  const out = Array.from(model.bias);
  for (let k = 0; k < x.idx.length; k++)
    for (let c = 0; c < model.numClasses; c++)
      out[c]! += x.val[k]! * model.weights[x.idx[k]! * model.numClasses + c]!;
  return out;
}

function randomSparse(rng: () => number, numFeatures: number, nnz: number): SparseVector {
  const ids = new Set<number>();
  while (ids.size < nnz) ids.add(Math.floor(rng() * numFeatures));
  const idx = Int32Array.from(ids).sort();
  return { idx, val: Float64Array.from(idx, () => rng() * 2 - 1) };
}

describe('SoftmaxRegression', () => {
  it.each([1, 3, 4, 7, 150])('computes the same logits as the plain sum with %i classes', (numClasses) => {
    const rng = createRng(numClasses);
    const numFeatures = 40;
    const weights = Float32Array.from({ length: numFeatures * numClasses }, () => rng() - 0.5);
    const bias = Float64Array.from({ length: numClasses }, () => rng());
    const model = new SoftmaxRegression(numFeatures, numClasses, weights, bias);
    for (let i = 0; i < 5; i++) {
      const x = randomSparse(rng, numFeatures, 1 + i * 3);
      const got = Array.from(model.logits(x));
      naiveLogits(model, x).forEach((v, c) => {
        expect(got[c]).toBeCloseTo(v, 9);
      });
    }
  });

  it('learns classes whose count is not a multiple of four, each from its own features', () => {
    // 7 classes, 3 noisy examples each: class c has feature c plus two random shared features
    const rng = createRng(5);
    const numClasses = 7;
    const numFeatures = 30;
    const xs: SparseVector[] = [];
    const ys: number[] = [];
    for (let c = 0; c < numClasses; c++)
      for (let k = 0; k < 3; k++) {
        const shared = [10 + Math.floor(rng() * 20), 10 + Math.floor(rng() * 20)];
        const idx = Int32Array.from(new Set([c, ...shared])).sort();
        xs.push({ idx, val: Float64Array.from(idx, () => 1) });
        ys.push(c);
      }
    const model = SoftmaxRegression.train(xs, ys, numFeatures, numClasses, {
      lambda: 1e-4,
      epochs: 0,
      learningRate: 0.5,
      seed: 1,
      classBalance: 0,
      annealing: true,
    });
    for (let c = 0; c < numClasses; c++) {
      const p = SoftmaxRegression.softmaxInPlace(
        model.logits({ idx: Int32Array.of(c), val: Float64Array.of(1) }),
      );
      const best = p.indexOf(Math.max(...p));
      expect(best).toBe(c);
      expect(p[c]).toBeGreaterThan(0.5);
    }
  });
});
