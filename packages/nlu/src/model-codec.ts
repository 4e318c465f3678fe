/**
 * The binary form of a trained model (docs/decisions/0081): what the training worker transfers to the thread that
 * adopts the model, and what the service stores. Small values are one JSON header; every large part (weights,
 * vocabulary, utterances as token ids, word vectors, optionally the nearest-neighbour indexes) is a typed array laid
 * out as it is in memory, so that:
 * - the worker hands the whole model over as one transferred ArrayBuffer (no copy, no JSON to parse), and the
 *   decoded model's arrays are views into that buffer;
 * - storing reads the arrays as they are (no serialisation pass), in pieces (`encodeModel` returns views);
 * - loading a stored model parses a small header, not megabytes of JSON.
 *
 * Layout (host byte order, recorded in the header; a model stored on a host of the other order is refused and then
 * retrained):
 *   "PNLUMOD2"                   8 bytes, magic
 *   u32 headerLength             bytes of the header JSON
 *   header JSON                  {endian, lang, classes, calibrator?, entities, classifier?, sections}, padded to 8
 *   sections                     each aligned to 8 bytes; `sections` gives [name, type, offset, length] with offsets
 *                                from the start of the form and lengths in elements
 * Strings (features, tokens, words) are one section of UTF-16 code units (exact for any JS string) and one of
 * lengths.
 */
import { endianness } from 'node:os';
import { promisify } from 'node:util';
import { gunzip, gzip, gzipSync } from 'node:zlib';
import { decodeFloat32Array } from './float-codec';
import type { DocTable, IntentClassifierParts, NearestNeighbourParts } from './intent-classifier';
import { runSteps, runStepsInSlices, type Steps } from './steps';
import { StringIndex } from './string-index';
import { type ModelParts, modelFromPartsSteps, modelParts } from './train';
import type { NluModel } from './types';

const MAGIC = 'PNLUMOD2';
const HOST_ENDIAN = endianness();

const ARRAY_TYPES = {
  f32: Float32Array,
  f64: Float64Array,
  i32: Int32Array,
  u32: Uint32Array,
  u16: Uint16Array,
  u8: Uint8Array,
} as const;
type ArrayType = keyof typeof ARRAY_TYPES;
type AnyArray =
  | Float32Array<ArrayBufferLike>
  | Float64Array<ArrayBufferLike>
  | Int32Array<ArrayBufferLike>
  | Uint32Array<ArrayBufferLike>
  | Uint16Array<ArrayBufferLike>
  | Uint8Array<ArrayBufferLike>;

interface Header {
  endian: 'LE' | 'BE';
  lang: string;
  classes: ModelParts['classes'];
  calibrator?: number[];
  entities: ModelParts['entities'];
  classifier: null | {
    options: IntentClassifierParts['options'];
    numClasses: number;
    domainReference: number;
    wordVectors?: { source: string; dim: number };
    indexes: boolean;
  };
  sections: Array<[name: string, type: ArrayType, offset: number, length: number]>;
}

const typeOf = (a: AnyArray): ArrayType => {
  for (const [name, ctor] of Object.entries(ARRAY_TYPES)) if (a instanceof ctor) return name as ArrayType;
  throw new Error('model codec: unsupported array');
};

const bytesOf = (a: AnyArray) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** The model's binary form as a list of byte views (header, padding, sections): nothing large is copied. */
export function encodeModel(model: NluModel, options: { indexes?: boolean } = {}): Uint8Array[] {
  const parts = modelParts(model, options.indexes ?? false);
  if (!parts) throw new Error('encodeModel: not a model of this engine');
  const arrays: Array<[string, AnyArray]> = [];
  const strings = (name: string, list: readonly string[]) => {
    const lengths = new Uint32Array(list.length);
    list.forEach((s, i) => {
      lengths[i] = s.length;
    });
    const text = Buffer.from(list.join(''), 'utf16le');
    arrays.push(
      [`${name}.lengths`, lengths],
      [`${name}.text`, new Uint16Array(text.buffer, text.byteOffset, text.length / 2)],
    );
  };
  // the CRF's weights (most of the entity extractor) as an array; the rest of the extractor stays in the header
  const crfWeights = parts.entities.crf.weights;
  // and its feature list as arrays too (models stored before keep theirs in the header, which still loads)
  const crfFeatures = StringIndex.from(parts.entities.features);
  const entities = {
    ...parts.entities,
    features: [],
    crf: { ...parts.entities.crf, weights: '' },
  };
  arrays.push(['crf.weights', typeof crfWeights === 'string' ? decodeFloat32Array(crfWeights) : crfWeights]);
  arrays.push(['crf.features.lengths', crfFeatures.lengths], ['crf.features.text', crfFeatures.units]);
  const c = parts.classifier;
  if (c) {
    arrays.push(['features.lengths', c.features.lengths], ['features.text', c.features.units]);
    arrays.push(['idf', c.idf], ['block', c.block], ['weights', c.weights], ['bias', c.bias]);
    strings('docs.tokens', c.docs.tokens);
    arrays.push(['docs.ids', c.docs.ids], ['docs.starts', c.docs.starts], ['labels', c.labels]);
    if (c.wordVectors) {
      strings('wv.words', c.wordVectors.words);
      arrays.push(['wv.ranks', c.wordVectors.ranks], ['wv.data', c.wordVectors.data]);
    }
    if (c.indexes) for (const [name, a] of concatIndexes(c.indexes)) arrays.push([`nn.${name}`, a]);
  }
  const header: Header = {
    endian: HOST_ENDIAN,
    lang: parts.lang,
    classes: parts.classes,
    ...(parts.calibrator ? { calibrator: parts.calibrator } : {}),
    entities,
    classifier: c
      ? {
          options: c.options,
          numClasses: c.numClasses,
          domainReference: c.domainReference,
          ...(c.wordVectors ? { wordVectors: { source: c.wordVectors.source, dim: c.wordVectors.dim } } : {}),
          indexes: !!c.indexes,
        }
      : null,
    sections: [],
  };
  // offsets depend on the header's length, which depends on the offsets' digits: settle in a few rounds
  let headerBytes = Buffer.alloc(0);
  for (let round = 0; ; round++) {
    if (round === 8) throw new Error('encodeModel: header does not settle');
    let offset = align8(12 + headerBytes.length);
    header.sections = arrays.map(([name, a]) => {
      const at = offset;
      offset = align8(offset + a.byteLength);
      return [name, typeOf(a), at, a.length];
    });
    const next = Buffer.from(JSON.stringify(header), 'utf8');
    const settled = next.length === headerBytes.length;
    headerBytes = next;
    if (settled) break;
  }
  const views: Uint8Array[] = [];
  const start = Buffer.alloc(12);
  start.write(MAGIC, 0, 'latin1');
  start.writeUInt32LE(headerBytes.length, 8);
  views.push(start, headerBytes);
  let at = 12 + headerBytes.length;
  for (const [i, [, a]] of arrays.entries()) {
    const offset = header.sections[i]![2];
    if (offset > at) views.push(new Uint8Array(offset - at));
    views.push(bytesOf(a));
    at = offset + a.byteLength;
  }
  return views;
}

/** The binary form in one new ArrayBuffer of its own (to be transferred to another thread). */
export function encodeModelBuffer(model: NluModel, options: { indexes?: boolean } = {}): Uint8Array {
  const views = encodeModel(model, options);
  const out = new Uint8Array(views.reduce((n, v) => n + v.length, 0));
  let at = 0;
  for (const v of views) {
    out.set(v, at);
    at += v.length;
  }
  return out;
}

/** Whether `bytes` start like a model's binary form. */
export function isEncodedModel(bytes: Uint8Array): boolean {
  return bytes.length >= 12 && Buffer.from(bytes.buffer, bytes.byteOffset, 8).toString('latin1') === MAGIC;
}

/** Rebuild a model from its binary form; its arrays are views into `bytes` (do not reuse them). */
export function decodeModel(bytes: Uint8Array): NluModel {
  return runSteps(decodeModelSteps(bytes));
}

/** `decodeModel` in slices of about `sliceMs` with a turn of the event loop between them (see loadModelAsync). */
export function decodeModelAsync(bytes: Uint8Array, options: { sliceMs?: number } = {}): Promise<NluModel> {
  return runStepsInSlices(decodeModelSteps(bytes), options.sliceMs);
}

function* decodeModelSteps(input: Uint8Array): Steps<NluModel> {
  if (!isEncodedModel(input)) throw new Error('loadModel: not an encoded NLU model');
  // typed-array views need their element alignment: sections are aligned to 8 from the start of the form
  const bytes = input.byteOffset % 8 === 0 ? input : Uint8Array.from(input);
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const headerLength = view.readUInt32LE(8);
  if (12 + headerLength > bytes.length) throw new Error('loadModel: encoded model cut short');
  const header = JSON.parse(view.toString('utf8', 12, 12 + headerLength)) as Header;
  if (header.endian !== HOST_ENDIAN)
    throw new Error(`loadModel: model encoded on a ${header.endian} host, this one is ${HOST_ENDIAN}`);
  yield;
  const sections = new Map<string, AnyArray>();
  for (const [name, type, offset, length] of header.sections) {
    const ctor = ARRAY_TYPES[type];
    if (!ctor || offset % 8 !== 0 || offset + length * ctor.BYTES_PER_ELEMENT > bytes.length)
      throw new Error('loadModel: encoded model cut short or damaged');
    sections.set(name, new ctor(bytes.buffer as ArrayBuffer, bytes.byteOffset + offset, length));
  }
  const section = <T extends AnyArray>(name: string, ctor: abstract new (...args: never[]) => T): T => {
    const a = sections.get(name);
    if (!(a instanceof ctor)) throw new Error(`loadModel: encoded model without ${name}`);
    return a;
  };
  // a few thousand strings per step
  function* strings(name: string): Steps<string[]> {
    const lengths = section(`${name}.lengths`, Uint32Array);
    const units = section(`${name}.text`, Uint16Array);
    const text = Buffer.from(units.buffer, units.byteOffset, units.byteLength).toString('utf16le');
    const out = new Array<string>(lengths.length);
    let at = 0;
    for (let i = 0; i < lengths.length; i++) {
      out[i] = text.slice(at, at + lengths[i]!);
      at += lengths[i]!;
      if ((i & 4095) === 4095) yield;
    }
    if (at !== text.length) throw new Error(`loadModel: damaged strings ${name}`);
    return out;
  }
  let classifier: IntentClassifierParts | null = null;
  const c = header.classifier;
  if (c) {
    const features = yield* StringIndex.build(
      section('features.text', Uint16Array),
      section('features.lengths', Uint32Array),
    );
    const docs: DocTable = {
      tokens: yield* strings('docs.tokens'),
      ids: section('docs.ids', Int32Array),
      starts: section('docs.starts', Int32Array),
    };
    const words = c.wordVectors ? yield* strings('wv.words') : null;
    classifier = {
      options: c.options,
      numClasses: c.numClasses,
      domainReference: c.domainReference,
      features,
      idf: section('idf', Float64Array),
      block: section('block', Uint8Array),
      weights: section('weights', Float32Array),
      bias: section('bias', Float64Array),
      docs,
      labels: section('labels', Int32Array),
      ...(c.wordVectors && words
        ? {
            wordVectors: {
              ...c.wordVectors,
              words,
              ranks: section('wv.ranks', Int32Array),
              data: section('wv.data', Float32Array),
            },
          }
        : {}),
      ...(c.indexes ? { indexes: splitIndexes(sections, c.numClasses) } : {}),
    };
    yield;
  }
  const entities = {
    ...header.entities,
    features: sections.has('crf.features.text')
      ? yield* StringIndex.build(
          section('crf.features.text', Uint16Array),
          section('crf.features.lengths', Uint32Array),
        )
      : header.entities.features,
    crf: { ...header.entities.crf, weights: section('crf.weights', Float32Array) },
  };
  return yield* modelFromPartsSteps({
    lang: header.lang,
    classes: header.classes,
    classifier,
    ...(header.calibrator ? { calibrator: header.calibrator } : {}),
    entities,
  });
}

const align8 = (n: number) => Math.ceil(n / 8) * 8;

/** The per-class indexes as a few concatenated arrays with offsets (see splitIndexes). */
function concatIndexes(indexes: readonly NearestNeighbourParts[]): Array<[string, AnyArray]> {
  const C = indexes.length;
  const offsets = {
    features: new Int32Array(C + 1),
    postings: new Int32Array(C + 1),
    docs: new Int32Array(C + 1),
  };
  indexes.forEach((x, c) => {
    offsets.features[c + 1] = offsets.features[c]! + x.features.length;
    offsets.postings[c + 1] = offsets.postings[c]! + x.vals.length;
    offsets.docs[c + 1] = offsets.docs[c]! + x.norms.length;
  });
  const wide = indexes.some((x) => x.docs instanceof Int32Array);
  const features = new Int32Array(offsets.features[C]!);
  const starts = new Int32Array(offsets.features[C]! + C);
  const docs = wide ? new Int32Array(offsets.postings[C]!) : new Uint16Array(offsets.postings[C]!);
  const vals = new Float32Array(offsets.postings[C]!);
  const norms = new Float64Array(offsets.docs[C]!);
  indexes.forEach((x, c) => {
    features.set(x.features, offsets.features[c]!);
    starts.set(x.starts, offsets.features[c]! + c);
    docs.set(x.docs, offsets.postings[c]!);
    vals.set(x.vals, offsets.postings[c]!);
    norms.set(x.norms, offsets.docs[c]!);
  });
  return [
    ['featureOffsets', offsets.features],
    ['postingOffsets', offsets.postings],
    ['docOffsets', offsets.docs],
    ['features', features],
    ['starts', starts],
    ['docs', docs],
    ['vals', vals],
    ['norms', norms],
  ];
}

function splitIndexes(sections: Map<string, AnyArray>, numClasses: number): NearestNeighbourParts[] {
  const get = (name: string) => {
    const a = sections.get(`nn.${name}`);
    if (!a) throw new Error(`loadModel: encoded model without nn.${name}`);
    return a;
  };
  const [featureOffsets, postingOffsets, docOffsets] = ['featureOffsets', 'postingOffsets', 'docOffsets'].map(
    (n) => get(n) as Int32Array,
  ) as [Int32Array, Int32Array, Int32Array];
  const features = get('features') as Int32Array;
  const starts = get('starts') as Int32Array;
  const docs = get('docs') as Uint16Array | Int32Array;
  const vals = get('vals') as Float32Array;
  const norms = get('norms') as Float64Array;
  if ([featureOffsets, postingOffsets, docOffsets].some((o) => o.length !== numClasses + 1))
    throw new Error('loadModel: damaged nearest-neighbour indexes');
  return Array.from({ length: numClasses }, (_, c) => ({
    features: features.subarray(featureOffsets[c]!, featureOffsets[c + 1]!),
    starts: starts.subarray(featureOffsets[c]! + c, featureOffsets[c + 1]! + c + 1),
    docs: docs.subarray(postingOffsets[c]!, postingOffsets[c + 1]!),
    vals: vals.subarray(postingOffsets[c]!, postingOffsets[c + 1]!),
    norms: norms.subarray(docOffsets[c]!, docOffsets[c + 1]!),
  }));
}

// ---- the stored form -----------------------------------------------------------------------------------------

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);
/** fast: the weights (most of the bytes) hardly compress; the vocabulary, utterances and entities do, to ~60 % */
const STORED_GZIP = { level: 1 } as const;

/** stored forms made by the training worker, handed over once to whoever stores the model */
const madeInWorker = new WeakMap<NluModel, Uint8Array>();

/** The stored form of `model`, gzipped in this thread (the training worker calls this). */
export function storedFormSync(model: NluModel): Uint8Array {
  return gzipSync(encodeModelBuffer(model, { indexes: false }), STORED_GZIP);
}

/** Records the stored form the training worker made for `model` (see storedModelForm). */
export function rememberStoredForm(model: NluModel, stored: Uint8Array): void {
  madeInWorker.set(model, stored);
}

/**
 * What to store for a model: its binary form without the nearest-neighbour indexes (rebuilt when loaded), gzipped.
 * For a model from `trainModelInWorker` these are the bytes the worker made (handed over once, then forgotten, so the
 * model does not keep them); otherwise they are made here, the compression off this thread.
 */
export async function storedModelForm(model: NluModel): Promise<Uint8Array> {
  const made = madeInWorker.get(model);
  if (made) {
    madeInWorker.delete(model);
    return made;
  }
  return gzipAsync(encodeModelBuffer(model, { indexes: false }), STORED_GZIP);
}

/** A model from `storedModelForm`'s bytes (or ungzipped binary form): decompressed off this thread, then decoded in slices. */
export async function loadStoredModel(
  stored: Uint8Array,
  options: { sliceMs?: number } = {},
): Promise<NluModel> {
  const bytes = stored[0] === 0x1f && stored[1] === 0x8b ? await gunzipAsync(stored) : stored;
  return decodeModelAsync(bytes, options);
}
