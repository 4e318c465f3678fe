/**
 * Intent classifier: TF-IDF over word unigrams + bigrams and character n-grams, plus (for languages with word
 * vectors) the SIF-weighted mean of the utterance's word vectors, multinomial logistic regression trained by seeded
 * SGD, plus an "in-domain" factor from the nearest training utterance so that confidences of unrelated text stay low
 * even when there are few intents.
 */
import { decodeFloat32, decodeFloat32Array, encodeFloat32, roundToFloat32 } from './float-codec';
import { createRng, shuffleInPlace } from './random';
import { runSteps, type Steps } from './steps';
import { StringIndex } from './string-index';
import {
  ModelWordVectorParts,
  ModelWordVectors,
  SerializedWordVectors,
  WordVectorTable,
} from './word-vectors';

export interface IntentClassifierOptions {
  /** word unigram block */
  words: boolean;
  /** word bigram block (with sentence-boundary markers) */
  bigrams: boolean;
  /** character n-grams of each word padded with spaces, min..max length (0 disables) */
  charMin: number;
  charMax: number;
  /** relative weights of the word and character blocks (each block is L2-normalised first) */
  wordWeight: number;
  charWeight: number;
  useIdf: boolean;
  sublinearTf: boolean;
  /** L2 regularisation strength */
  lambda: number;
  /** exponent of the inverse class-frequency sample weights (0 = unweighted, 1 = fully balanced) */
  classBalance: number;
  /** passes over the data; 0 = chosen from the data size (see epochsFor) */
  epochs: number;
  learningRate: number;
  /** learning rate decayed linearly to ~0 over the training (converges in fewer passes) */
  annealing?: boolean;
  seed: number;
  /**
   * Length of the word-vector block (the L2-normalised weighted mean of the word vectors), next to the word and
   * character blocks; 0 disables it. Used only when the model's language has word vectors.
   */
  vectorWeight: number;
  /** SIF weight of a word, a / (a + p(word)), p from the word's frequency rank (Zipf): frequent words count less */
  vectorSifA: number;
}

export const DEFAULT_INTENT_OPTIONS: IntentClassifierOptions = {
  words: true,
  bigrams: true,
  charMin: 3,
  charMax: 5,
  wordWeight: 2,
  charWeight: 2,
  useIdf: true,
  sublinearTf: true,
  lambda: 1e-4,
  classBalance: 0,
  epochs: 0,
  learningRate: 0.5,
  annealing: true,
  seed: 42,
  vectorWeight: 2,
  vectorSifA: 3e-5,
};

/** Options of models serialised before the word-vector block existed (they have none). */
const LEGACY_OPTION_DEFAULTS: Pick<IntentClassifierOptions, 'vectorWeight' | 'vectorSifA'> = {
  vectorWeight: 0,
  vectorSifA: DEFAULT_INTENT_OPTIONS.vectorSifA,
};

/** Zipf estimate of a word's probability from its frequency rank (0 = most frequent). */
const zipfProbability = (rank: number): number => 0.1 / (1 + rank);

export interface SparseVector {
  idx: Int32Array;
  val: Float64Array;
}

/** Feature strings of a tokenised utterance, split in the word block and the character block. */
export function featureStrings(
  tokens: readonly string[],
  o: IntentClassifierOptions,
): { word: string[]; char: string[] } {
  const word: string[] = [];
  const char: string[] = [];
  if (o.words) for (const t of tokens) word.push(`w ${t}`);
  if (o.bigrams) {
    const padded = ['<s>', ...tokens, '</s>'];
    for (let i = 0; i + 1 < padded.length; i++) word.push(`b ${padded[i]} ${padded[i + 1]}`);
  }
  if (o.charMin > 0) {
    for (const t of tokens) {
      if (t.startsWith('@')) continue; // entity markers ("@city") are word features only
      const s = ` ${t} `;
      for (let n = o.charMin; n <= o.charMax; n++) {
        if (n > s.length) break;
        for (let i = 0; i + n <= s.length; i++) char.push(`c${s.slice(i, i + n)}`);
      }
    }
  }
  return { word, char };
}

/** Vocabulary with IDF weights; turns feature strings into L2-normalised sparse vectors per block. */
export class Vectorizer {
  /** feature -> column (a model's vocabulary, in typed arrays: string-index.ts) */
  index = StringIndex.of([]);
  /** per feature: its IDF weight, and its block (0 = word block, 1 = char block); a decoded model's own arrays */
  idf: Float64Array = new Float64Array(0);
  block: Uint8Array = new Uint8Array(0);
  private readonly tokenCache = new Map<string, Int32Array>();

  /** pooled word vector (scratch) */
  private readonly pooled: Float64Array;

  constructor(
    readonly options: IntentClassifierOptions,
    vocab?: { features: readonly string[] | StringIndex; idf: ArrayLike<number>; block: ArrayLike<number> },
    /** word vectors of the model's language (null: no word-vector block) */
    readonly vectors: ModelWordVectors | null = null,
  ) {
    if (vocab) {
      this.index = StringIndex.from(vocab.features);
      // typed arrays (a decoded model's sections) are used as they are: adopting a model copies nothing here
      this.idf = vocab.idf instanceof Float64Array ? vocab.idf : Float64Array.from(vocab.idf);
      this.block = vocab.block instanceof Uint8Array ? vocab.block : Uint8Array.from(vocab.block);
    }
    const dim = vectors && options.vectorWeight > 0 ? vectors.dim : 0;
    this.pooled = new Float64Array(dim);
  }

  fit(docs: ReadonlyArray<readonly string[]>): void {
    const df = new Map<string, number>();
    const blockOf = new Map<string, number>();
    for (const doc of docs) {
      const { word, char } = featureStrings(doc, this.options);
      for (const f of new Set(word)) {
        df.set(f, (df.get(f) ?? 0) + 1);
        blockOf.set(f, 0);
      }
      for (const f of new Set(char)) {
        df.set(f, (df.get(f) ?? 0) + 1);
        blockOf.set(f, 1);
      }
    }
    const n = docs.length;
    this.idf = new Float64Array(df.size);
    this.block = new Uint8Array(df.size);
    let i = 0;
    for (const [f, d] of df) {
      this.idf[i] = this.options.useIdf ? Math.log((1 + n) / (1 + d)) + 1 : 1;
      this.block[i] = blockOf.get(f) ?? 0;
      i++;
    }
    this.index = StringIndex.of([...df.keys()]);
  }

  /** number of TF-IDF features; the word-vector block (if any) follows them */
  get sparseSize(): number {
    return this.idf.length;
  }

  get size(): number {
    return this.idf.length + this.pooled.length;
  }

  /** known feature ids of one word (its unigram and character n-grams), cached */
  private wordFeatures(token: string): Int32Array {
    let ids = this.tokenCache.get(token);
    if (ids) return ids;
    const { word, char } = featureStrings([token], { ...this.options, bigrams: false });
    const found: number[] = [];
    for (const f of word) {
      const i = this.index.get(f);
      if (i !== undefined) found.push(i);
    }
    for (const f of char) {
      const i = this.index.get(f);
      if (i !== undefined) found.push(i);
    }
    ids = Int32Array.from(found);
    if (this.tokenCache.size >= 20_000) this.tokenCache.clear();
    this.tokenCache.set(token, ids);
    return ids;
  }

  transform(tokens: readonly string[]): SparseVector {
    const counts = new Map<number, number>();
    for (const t of tokens) for (const i of this.wordFeatures(t)) counts.set(i, (counts.get(i) ?? 0) + 1);
    if (this.options.bigrams) {
      const padded = ['<s>', ...tokens, '</s>'];
      for (let k = 0; k + 1 < padded.length; k++) {
        const i = this.index.get(`b ${padded[k]} ${padded[k + 1]}`);
        if (i !== undefined) counts.set(i, (counts.get(i) ?? 0) + 1);
      }
    }
    const idx = Int32Array.from(counts.keys()).sort();
    const val = new Float64Array(idx.length);
    const norm2 = [0, 0];
    for (let k = 0; k < idx.length; k++) {
      const i = idx[k]!;
      const c = counts.get(i)!;
      const v = (this.options.sublinearTf ? 1 + Math.log(c) : c) * this.idf[i]!;
      val[k] = v;
      norm2[this.block[i]!]! += v * v;
    }
    const scale = [
      norm2[0]! > 0 ? this.options.wordWeight / Math.sqrt(norm2[0]!) : 0,
      norm2[1]! > 0 ? this.options.charWeight / Math.sqrt(norm2[1]!) : 0,
    ];
    for (let k = 0; k < idx.length; k++) val[k]! *= scale[this.block[idx[k]!]!]!;
    if (this.pooled.length === 0 || !this.poolVectors(tokens)) return { idx, val };
    const dim = this.pooled.length;
    const allIdx = new Int32Array(idx.length + dim);
    const allVal = new Float64Array(idx.length + dim);
    allIdx.set(idx);
    allVal.set(val);
    for (let d = 0; d < dim; d++) allIdx[idx.length + d] = this.idf.length + d;
    allVal.set(this.pooled, idx.length);
    return { idx: allIdx, val: allVal };
  }

  /**
   * SIF-weighted mean of the vectors of the words (entity markers aside) into `pooled`, scaled to `vectorWeight`;
   * false when no word has a vector.
   */
  private poolVectors(tokens: readonly string[]): boolean {
    const vectors = this.vectors!;
    const out = this.pooled;
    const dim = out.length;
    const a = this.options.vectorSifA;
    out.fill(0);
    let found = false;
    for (const t of tokens) {
      if (t.startsWith('@')) continue;
      const wv = vectors.find(t);
      if (!wv) continue;
      const w = a / (a + zipfProbability(wv.rank));
      const v = wv.vector;
      for (let d = 0; d < dim; d++) out[d]! += w * v[d]!;
      found = true;
    }
    if (!found) return false;
    let n2 = 0;
    for (let d = 0; d < dim; d++) n2 += out[d]! * out[d]!;
    if (!(n2 > 0)) return false;
    const scale = this.options.vectorWeight / Math.sqrt(n2);
    for (let d = 0; d < dim; d++) out[d]! *= scale;
    return true;
  }

  /**
   * IDF-weighted share of the words (entity markers aside) that are features of the vocabulary; an unknown word
   * weighs as much as the rarest known one. 1 when there are no words.
   */
  coverage(tokens: readonly string[]): number {
    if (this.maxIdf === undefined) {
      let max = 1;
      for (const v of this.idf) if (v > max) max = v;
      this.maxIdf = max;
    }
    let known = 0;
    let all = 0;
    for (const t of tokens) {
      if (t.startsWith('@')) continue;
      const i = this.index.get(`w ${t}`);
      const w = i === undefined ? this.maxIdf : this.idf[i]!;
      all += w;
      if (i !== undefined) known += w;
    }
    return all > 0 ? known / all : 1;
  }

  private maxIdf?: number;

  toJSON(): { features: string[]; idf: number[]; block: number[] } {
    return { features: this.index.keys(), idf: Array.from(this.idf), block: Array.from(this.block) };
  }
}

/**
 * Gradient entries (per class, for one sentence) below this are not applied: with many intents, most classes of a
 * sentence have a probability of 1e-6..1e-3 for much of the training, and skipping their updates makes a pass ~40 %
 * cheaper at no measured cost (BANKING77 validation split 1772 vs 1773 of 1998 right with 1e-6 vs 1e-3; the 150-intent
 * synthetic assistant 5.3 s vs 3.2 s CPU for two passes).
 */
const ACTIVE_GRADIENT = 1e-3;

/** out[c] += s * w[base + c] for c < n (unrolled by four: ~1.6× faster in V8 than the plain loop) */
function addScaledRow(out: Float64Array, s: number, w: Float32Array, base: number, n: number): void {
  let c = 0;
  for (; c + 3 < n; c += 4) {
    out[c]! += s * w[base + c]!;
    out[c + 1]! += s * w[base + c + 1]!;
    out[c + 2]! += s * w[base + c + 2]!;
    out[c + 3]! += s * w[base + c + 3]!;
  }
  for (; c < n; c++) out[c]! += s * w[base + c]!;
}

/** w[base + c] += s * g[c] for c < n (unrolled by four) */
function addScaledRowTo(w: Float32Array, base: number, s: number, g: Float64Array, n: number): void {
  let c = 0;
  for (; c + 3 < n; c += 4) {
    w[base + c]! += s * g[c]!;
    w[base + c + 1]! += s * g[c + 1]!;
    w[base + c + 2]! += s * g[c + 2]!;
    w[base + c + 3]! += s * g[c + 3]!;
  }
  for (; c < n; c++) w[base + c]! += s * g[c]!;
}

/**
 * Multinomial logistic regression over sparse inputs. Weights (float32, which halves the memory traffic of
 * training and the model size) laid out feature-major: w[f * C + c].
 */
export class SoftmaxRegression {
  constructor(
    readonly numFeatures: number,
    readonly numClasses: number,
    readonly weights: Float32Array = new Float32Array(numFeatures * numClasses),
    readonly bias: Float64Array = new Float64Array(numClasses),
  ) {}

  logits(x: SparseVector, out: Float64Array = new Float64Array(this.numClasses)): Float64Array {
    const C = this.numClasses;
    out.set(this.bias);
    const w = this.weights;
    for (let k = 0; k < x.idx.length; k++) addScaledRow(out, x.val[k]!, w, x.idx[k]! * C, C);
    return out;
  }

  static softmaxInPlace(z: Float64Array): Float64Array {
    let max = -Infinity;
    for (let c = 0; c < z.length; c++) if (z[c]! > max) max = z[c]!;
    let sum = 0;
    for (let c = 0; c < z.length; c++) {
      const e = Math.exp(z[c]! - max);
      z[c] = e;
      sum += e;
    }
    for (let c = 0; c < z.length; c++) z[c]! /= sum;
    return z;
  }

  /**
   * SGD on the L2-regularised log loss; the weight matrix is kept as scale * V so that decay costs O(1). The inputs
   * are packed into flat typed arrays first (one offset table; the loops read no vector objects: ~6 % faster).
   */
  static train(
    xs: readonly SparseVector[],
    ys: readonly number[],
    numFeatures: number,
    numClasses: number,
    o: Pick<
      IntentClassifierOptions,
      'lambda' | 'epochs' | 'learningRate' | 'seed' | 'classBalance' | 'annealing'
    >,
  ): SoftmaxRegression {
    const C = numClasses;
    const n = xs.length;
    const start = new Int32Array(n + 1);
    for (let i = 0; i < n; i++) start[i + 1] = start[i]! + xs[i]!.idx.length;
    const idx = new Int32Array(start[n]!);
    const val = new Float64Array(start[n]!);
    for (let i = 0; i < n; i++) {
      idx.set(xs[i]!.idx, start[i]!);
      val.set(xs[i]!.val, start[i]!);
    }
    const labels = Int32Array.from(ys);
    const v = new Float32Array(numFeatures * C);
    const bias = new Float64Array(C);
    let scale = 1;
    const rng = createRng(o.seed);
    const order = xs.map((_, i) => i);
    const z = new Float64Array(C);
    const activeClasses = new Int32Array(C);
    let t = 0;
    const counts = new Float64Array(C);
    for (let i = 0; i < n; i++) counts[labels[i]!]! += 1;
    const sampleWeight = new Float64Array(C);
    for (let c = 0; c < C; c++)
      sampleWeight[c] = counts[c]! > 0 ? (n / (C * counts[c]!)) ** o.classBalance : 0;
    const epochs = o.epochs > 0 ? o.epochs : epochsFor(n, C);
    const totalSteps = epochs * n;
    for (let epoch = 0; epoch < epochs; epoch++) {
      shuffleInPlace(order, rng);
      for (let r = 0; r < n; r++) {
        const i = order[r]!;
        const from = start[i]!;
        const to = start[i + 1]!;
        const y = labels[i]!;
        const eta =
          (o.learningRate / (1 + o.learningRate * o.lambda * t)) *
          (o.annealing ? Math.max(0.01, 1 - t / totalSteps) : 1);
        t++;
        // logits with the current scale
        z.set(bias);
        for (let k = from; k < to; k++) addScaledRow(z, val[k]! * scale, v, idx[k]! * C, C);
        SoftmaxRegression.softmaxInPlace(z);
        z[y]! -= 1; // gradient of the log loss w.r.t. the logits
        const sw = sampleWeight[y]!;
        if (sw !== 1) for (let c = 0; c < C; c++) z[c]! *= sw;
        // weight decay first (w <- (1 - eta*lambda) w), then the gradient step on V = w / scale
        scale *= 1 - eta * o.lambda;
        const step = eta / scale;
        // classes whose gradient is negligible are skipped (most of them once the model fits)
        let active = 0;
        for (let c = 0; c < C; c++) {
          if (z[c]! > ACTIVE_GRADIENT || z[c]! < -ACTIVE_GRADIENT) activeClasses[active++] = c;
          else z[c] = 0;
        }
        if (active * 4 > C) {
          // many classes: one dense row update (the skipped classes have a zero gradient) is cheaper than indexing
          for (let k = from; k < to; k++) addScaledRowTo(v, idx[k]! * C, -val[k]! * step, z, C);
        } else {
          for (let k = from; k < to; k++) {
            const base = idx[k]! * C;
            const g = val[k]! * step;
            for (let a = 0; a < active; a++) {
              const c = activeClasses[a]!;
              v[base + c]! -= g * z[c]!;
            }
          }
        }
        for (let a = 0; a < active; a++) bias[activeClasses[a]!]! -= eta * z[activeClasses[a]!]!;
        if (scale < 1e-6) {
          for (let j = 0; j < v.length; j++) v[j]! *= scale;
          scale = 1;
        }
      }
    }
    for (let j = 0; j < v.length; j++) v[j]! *= scale;
    return new SoftmaxRegression(numFeatures, C, v, bias);
  }
}

/** The arrays of a NearestNeighbourIndex (what a model transfers or stores instead of rebuilding the index). */
export interface NearestNeighbourParts {
  /** feature ids that occur in the documents, ascending */
  features: Int32Array;
  /** postings of features[i] are at starts[i] .. starts[i + 1] - 1 */
  starts: Int32Array;
  /** document of each posting, in document order within a feature (16-bit while there are at most 65,536) */
  docs: Uint16Array | Int32Array;
  /** value of each posting (float32: cosines within 1e-6) */
  vals: Float32Array;
  /** L2 norm of each document */
  norms: Float64Array;
}

/**
 * Inverted index of the training vectors: highest cosine similarity of an input to any training utterance. Laid out
 * as flat typed arrays (sorted feature ids, posting offsets, postings): no per-feature objects, and the arrays can be
 * moved between threads or stored as they are.
 */
export class NearestNeighbourIndex {
  private readonly acc: Float64Array;

  private constructor(private readonly parts: NearestNeighbourParts) {
    this.acc = new Float64Array(parts.norms.length);
  }

  static build(docs: readonly SparseVector[]): NearestNeighbourIndex {
    const norms = new Float64Array(docs.length);
    let total = 0;
    const counts = new Map<number, number>();
    docs.forEach((d, doc) => {
      let n2 = 0;
      for (let k = 0; k < d.idx.length; k++) {
        const v = d.val[k]!;
        n2 += v * v;
        counts.set(d.idx[k]!, (counts.get(d.idx[k]!) ?? 0) + 1);
        total++;
      }
      norms[doc] = Math.sqrt(n2);
    });
    const features = Int32Array.from(counts.keys()).sort();
    const starts = new Int32Array(features.length + 1);
    const slot = new Map<number, number>();
    features.forEach((f, i) => {
      starts[i + 1] = starts[i]! + counts.get(f)!;
      slot.set(f, starts[i]!);
    });
    const postingDocs = docs.length <= 65_536 ? new Uint16Array(total) : new Int32Array(total);
    const vals = new Float32Array(total);
    docs.forEach((d, doc) => {
      for (let k = 0; k < d.idx.length; k++) {
        const at = slot.get(d.idx[k]!)!;
        slot.set(d.idx[k]!, at + 1);
        postingDocs[at] = doc;
        vals[at] = d.val[k]!;
      }
    });
    return new NearestNeighbourIndex({ features, starts, docs: postingDocs, vals, norms });
  }

  /** an index from the arrays of `toParts()` (kept as they are, not copied) */
  static fromParts(parts: NearestNeighbourParts): NearestNeighbourIndex {
    const { features, starts, docs, vals } = parts;
    if (starts.length !== features.length + 1 || docs.length !== vals.length || starts.at(-1) !== docs.length)
      throw new Error('nearest-neighbour index: inconsistent arrays');
    return new NearestNeighbourIndex(parts);
  }

  toParts(): NearestNeighbourParts {
    return this.parts;
  }

  /** position of feature f in `features`, or -1 */
  private find(f: number): number {
    const features = this.parts.features;
    let lo = 0;
    let hi = features.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const g = features[mid]!;
      if (g === f) return mid;
      if (g < f) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** max cosine similarity and the document reaching it (`exclude`: a document to leave out) */
  nearest(x: SparseVector, exclude = -1): { sim: number; doc: number } {
    const acc = this.acc;
    acc.fill(0);
    let n2 = 0;
    const { starts, docs, vals, norms } = this.parts;
    for (let k = 0; k < x.idx.length; k++) {
      const v = x.val[k]!;
      n2 += v * v;
      const i = this.find(x.idx[k]!);
      if (i < 0) continue;
      const end = starts[i + 1]!;
      for (let p = starts[i]!; p < end; p++) acc[docs[p]!]! += v * vals[p]!;
    }
    const nx = Math.sqrt(n2);
    if (nx === 0) return { sim: 0, doc: -1 };
    let best = 0;
    let arg = -1;
    for (let d = 0; d < acc.length; d++) {
      if (d === exclude || acc[d] === 0) continue;
      const s = acc[d]! / (nx * norms[d]!);
      if (s > best) {
        best = s;
        arg = d;
      }
    }
    return { sim: Math.min(1, best), doc: arg };
  }
}

/**
 * In-domain factor = min(1, sim / ref) ^ DOMAIN_EXPONENT, where sim is the cosine similarity of the input to the
 * nearest training utterance of the predicted intent and ref = max(DOMAIN_REFERENCE_FLOOR, median similarity of
 * training utterances to their nearest sibling). Chosen on the Braun corpora against the other corpora's sentences
 * and unrelated text (see docs/decisions/0005-nlu-engine.md).
 */
const DOMAIN_REFERENCE_FLOOR = 0.5;
const DOMAIN_EXPONENT = 1.5;

export interface SerializedIntentClassifier {
  options: IntentClassifierOptions;
  numClasses: number;
  vocab: { features: string[]; idf: number[]; block: number[] };
  weights: string;
  bias: string;
  /** the training utterances as folded tokens (for the nearest-neighbour index) */
  docs: string[][];
  labels: number[];
  domainReference: number;
  /** vectors of the training vocabulary, when the language has word vectors (absent in older models) */
  wordVectors?: SerializedWordVectors;
}

export interface IntentPrediction {
  /** softmax probabilities per class */
  probabilities: Float64Array;
  /** 0..1: how close the input is to the training utterances (1 = as close as a typical training utterance) */
  inDomain: number;
  /** the same ratio uncapped: similarity to the nearest training utterance of the top class / reference */
  similarity: number;
  /** log-sum-exp of the logits: inputs like the training utterances reach higher values */
  energy: number;
  /** share of the input's words (IDF-weighted) seen in training: unrelated text is mostly new words */
  coverage: number;
}

/**
 * Passes over the data for n utterances and C intents: many over small sets (to converge), few over large ones
 * (the cost of a pass grows with n * C); bounded between 3 and 200, and 2 for the largest sets (over 1.5 million
 * utterance × intent pairs, e.g. 150 intents of 100 sentences), where the annealed learning rate converges in two.
 */
export function epochsFor(n: number, numClasses: number): number {
  const work = Math.max(1, n * numClasses);
  return Math.max(work > 1_500_000 ? 2 : 3, Math.min(200, Math.floor(600_000 / work)));
}

/** The TF-IDF features of a vector (a view without the word-vector block, which comes last). */
function sparsePart(x: SparseVector, sparseSize: number): SparseVector {
  let n = x.idx.length;
  while (n > 0 && x.idx[n - 1]! >= sparseSize) n--;
  return n === x.idx.length ? x : { idx: x.idx.subarray(0, n), val: x.val.subarray(0, n) };
}

/**
 * The training utterances as token ids into one token list (a few bytes per token instead of an array and strings
 * per utterance): kept for serialisation only.
 */
export interface DocTable {
  tokens: string[];
  /** token ids of every utterance, one after the other */
  ids: Int32Array;
  /** utterance i is ids[starts[i] .. starts[i + 1] - 1] */
  starts: Int32Array;
}

export function docTable(docs: ReadonlyArray<readonly string[]>): DocTable {
  const ids = new Map<string, number>();
  const starts = new Int32Array(docs.length + 1);
  let total = 0;
  docs.forEach((d, i) => {
    total += d.length;
    starts[i + 1] = total;
  });
  const flat = new Int32Array(total);
  let at = 0;
  for (const d of docs)
    for (const t of d) {
      let id = ids.get(t);
      if (id === undefined) {
        id = ids.size;
        ids.set(t, id);
      }
      flat[at++] = id;
    }
  return { tokens: [...ids.keys()], ids: flat, starts };
}

function docAt(table: DocTable, i: number): string[] {
  const out: string[] = [];
  for (let k = table.starts[i]!; k < table.starts[i + 1]!; k++) out.push(table.tokens[table.ids[k]!]!);
  return out;
}

/**
 * A classifier as typed arrays and a few small values (model-codec.ts moves them between threads and stores them):
 * what `toJSON()` holds, with the nearest-neighbour indexes optionally (rebuilt from the utterances when absent).
 */
export interface IntentClassifierParts {
  options: IntentClassifierOptions;
  numClasses: number;
  domainReference: number;
  features: StringIndex;
  idf: Float64Array;
  block: Uint8Array;
  weights: Float32Array;
  bias: Float64Array;
  docs: DocTable;
  labels: Int32Array;
  wordVectors?: ModelWordVectorParts;
  indexes?: NearestNeighbourParts[];
}

export class IntentClassifier {
  private constructor(
    private readonly vectorizer: Vectorizer,
    private readonly model: SoftmaxRegression,
    private readonly docs: DocTable,
    private readonly labels: Int32Array,
    private readonly domainReference: number,
    /** one nearest-neighbour index per class, over that class's training utterances */
    private readonly indexes: readonly NearestNeighbourIndex[],
  ) {}

  private static classIndexes(
    xs: readonly SparseVector[],
    labels: readonly number[],
    numClasses: number,
  ): NearestNeighbourIndex[] {
    const byClass: SparseVector[][] = Array.from({ length: numClasses }, () => []);
    xs.forEach((x, i) => {
      byClass[labels[i]!]!.push(x);
    });
    return byClass.map((list) => NearestNeighbourIndex.build(list));
  }

  static train(
    docs: readonly string[][],
    labels: readonly number[],
    numClasses: number,
    options: IntentClassifierOptions = DEFAULT_INTENT_OPTIONS,
    /** word vectors of the model's language, or null */
    table: WordVectorTable | null = null,
  ): IntentClassifier {
    const vectors =
      table && options.vectorWeight > 0
        ? ModelWordVectors.fromTable(
            table,
            docs.flatMap((d) => d.filter((t) => !t.startsWith('@'))),
          )
        : null;
    const vectorizer = new Vectorizer(options, undefined, vectors);
    vectorizer.fit(docs);
    const xs = docs.map((d) => vectorizer.transform(d));
    const model = SoftmaxRegression.train(xs, labels, vectorizer.size, numClasses, options);
    roundToFloat32(model.bias);
    // reference similarity: median similarity of a training utterance to the nearest other utterance of its intent
    // (on a seeded sample of at most 256 utterances: the median is stable and this stays cheap on large sets)
    const byClass: number[][] = Array.from({ length: numClasses }, () => []);
    labels.forEach((y, i) => {
      byClass[y]!.push(i);
    });
    // the in-domain factor compares TF-IDF features only: the pooled vectors of any two sentences are rather alike
    const sparse = xs.map((x) => sparsePart(x, vectorizer.sparseSize));
    const indexes = IntentClassifier.classIndexes(sparse, labels, numClasses);
    const sample = xs.map((_, i) => i).filter((i) => byClass[labels[i]!]!.length > 1);
    if (sample.length > 256) shuffleInPlace(sample, createRng(options.seed)).length = 256;
    const loo = sample
      .map((i) => indexes[labels[i]!]!.nearest(sparse[i]!, byClass[labels[i]!]!.indexOf(i)).sim)
      .sort((a, b) => a - b);
    const median = loo.length > 0 ? loo[Math.floor((loo.length - 1) / 2)]! : DOMAIN_REFERENCE_FLOOR;
    const domainReference = Math.fround(Math.min(0.9, Math.max(DOMAIN_REFERENCE_FLOOR, median)));
    return new IntentClassifier(
      vectorizer,
      model,
      docTable(docs),
      Int32Array.from(labels),
      domainReference,
      indexes,
    );
  }

  /**
   * Class probabilities, and how close the input is to the training utterances of the most probable class
   * (relative to how close those utterances are to each other): unrelated text gets a low `inDomain`.
   */
  predict(tokens: readonly string[]): IntentPrediction {
    const x = this.vectorizer.transform(tokens);
    const logits = this.model.logits(x);
    let max = -Infinity;
    for (let c = 0; c < logits.length; c++) if (logits[c]! > max) max = logits[c]!;
    let sum = 0;
    for (let c = 0; c < logits.length; c++) sum += Math.exp(logits[c]! - max);
    const energy = max + Math.log(sum);
    const probabilities = SoftmaxRegression.softmaxInPlace(logits);
    let top = 0;
    for (let c = 1; c < probabilities.length; c++) if (probabilities[c]! > probabilities[top]!) top = c;
    const { sim } = this.indexes[top]!.nearest(sparsePart(x, this.vectorizer.sparseSize));
    const similarity = sim / this.domainReference;
    return {
      probabilities,
      inDomain: Math.min(1, similarity) ** DOMAIN_EXPONENT,
      similarity,
      energy,
      coverage: this.vectorizer.coverage(tokens),
    };
  }

  toJSON(): SerializedIntentClassifier {
    return {
      options: this.vectorizer.options,
      numClasses: this.model.numClasses,
      vocab: this.vectorizer.toJSON(),
      weights: encodeFloat32(this.model.weights),
      bias: encodeFloat32(this.model.bias),
      docs: Array.from({ length: this.labels.length }, (_, i) => docAt(this.docs, i)),
      labels: Array.from(this.labels),
      domainReference: this.domainReference,
      ...(this.vectorizer.vectors ? { wordVectors: this.vectorizer.vectors.toJSON() } : {}),
    };
  }

  /** `table`: the process-wide word vectors of the model's language, for words outside the training vocabulary */
  static fromJSON(json: SerializedIntentClassifier, table: WordVectorTable | null = null): IntentClassifier {
    return runSteps(IntentClassifier.fromJSONSteps(json, table));
  }

  /**
   * `fromJSON` as resumable steps: the generator yields between small units of work (one utterance vectorised, one
   * class index built) so that a caller can spread the loading over several event-loop turns (see loadModelAsync).
   */
  static *fromJSONSteps(
    json: SerializedIntentClassifier,
    table: WordVectorTable | null = null,
  ): Steps<IntentClassifier> {
    const options = { ...LEGACY_OPTION_DEFAULTS, ...json.options };
    const vectors = json.wordVectors ? ModelWordVectors.fromJSON(json.wordVectors, table) : null;
    const vectorizer = new Vectorizer(options, json.vocab, vectors);
    yield;
    const model = new SoftmaxRegression(
      vectorizer.size,
      json.numClasses,
      decodeFloat32Array(json.weights),
      decodeFloat32(json.bias),
    );
    yield;
    // the training utterances of each class, vectorised (TF-IDF part only), then one index per class
    const byClass: SparseVector[][] = Array.from({ length: json.numClasses }, () => []);
    for (let i = 0; i < json.docs.length; i++) {
      byClass[json.labels[i]!]!.push(sparsePart(vectorizer.transform(json.docs[i]!), vectorizer.sparseSize));
      yield;
    }
    const indexes: NearestNeighbourIndex[] = [];
    for (const list of byClass) {
      indexes.push(NearestNeighbourIndex.build(list));
      yield;
    }
    return new IntentClassifier(
      vectorizer,
      model,
      docTable(json.docs),
      Int32Array.from(json.labels),
      json.domainReference,
      indexes,
    );
  }

  /** The classifier's arrays (views, not copies), with its nearest-neighbour indexes when `indexes`. */
  toParts(indexes: boolean): IntentClassifierParts {
    return {
      options: this.vectorizer.options,
      numClasses: this.model.numClasses,
      domainReference: this.domainReference,
      features: this.vectorizer.index,
      idf: this.vectorizer.idf,
      block: this.vectorizer.block,
      weights: this.model.weights,
      bias: this.model.bias,
      docs: this.docs,
      labels: this.labels,
      ...(this.vectorizer.vectors ? { wordVectors: this.vectorizer.vectors.toParts() } : {}),
      ...(indexes ? { indexes: this.indexes.map((x) => x.toParts()) } : {}),
    };
  }

  /**
   * A classifier from `toParts()`, as resumable steps (see fromJSONSteps); the arrays are used as they are. Without
   * indexes, they are rebuilt from the utterances as `fromJSON` does.
   */
  static *fromPartsSteps(
    parts: IntentClassifierParts,
    table: WordVectorTable | null = null,
  ): Steps<IntentClassifier> {
    const options = { ...LEGACY_OPTION_DEFAULTS, ...parts.options };
    const vectors = parts.wordVectors ? ModelWordVectors.fromParts(parts.wordVectors, table) : null;
    const vectorizer = new Vectorizer(
      options,
      { features: parts.features, idf: parts.idf, block: parts.block },
      vectors,
    );
    if (parts.idf.length !== parts.features.size)
      throw new Error('intent classifier: inconsistent vocabulary');
    if (parts.weights.length !== vectorizer.size * parts.numClasses || parts.bias.length !== parts.numClasses)
      throw new Error('intent classifier: weights do not match the vocabulary');
    const model = new SoftmaxRegression(vectorizer.size, parts.numClasses, parts.weights, parts.bias);
    yield;
    let indexes: NearestNeighbourIndex[];
    if (parts.indexes) {
      if (parts.indexes.length !== parts.numClasses) throw new Error('intent classifier: missing indexes');
      indexes = parts.indexes.map((x) => NearestNeighbourIndex.fromParts(x));
    } else {
      const byClass: SparseVector[][] = Array.from({ length: parts.numClasses }, () => []);
      for (let i = 0; i < parts.labels.length; i++) {
        byClass[parts.labels[i]!]!.push(
          sparsePart(vectorizer.transform(docAt(parts.docs, i)), vectorizer.sparseSize),
        );
        yield;
      }
      indexes = [];
      for (const list of byClass) {
        indexes.push(NearestNeighbourIndex.build(list));
        yield;
      }
    }
    return new IntentClassifier(vectorizer, model, parts.docs, parts.labels, parts.domainReference, indexes);
  }
}
