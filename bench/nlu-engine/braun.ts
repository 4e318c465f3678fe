/**
 * Braun et al. 2017 corpora (Chatbot, AskUbuntu, WebApplications): loading, conversion to the engine's training
 * set, and the literature's scoring. Shared by the in-process benchmark (run.ts) and benchmarks through the HTTP API.
 *
 * Data: CC BY-SA 3.0, sebischair/NLU-Evaluation-Corpora (see shared/data/nlu/README.md).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { NluEntityDef, NluIntentDef, NluTrainingSet } from '../../packages/nlu/src';

export interface BraunEntity {
  entity: string;
  start: number;
  stop: number;
  text: string;
}

export interface BraunSentence {
  text: string;
  intent: string;
  entities: BraunEntity[];
  training: boolean;
}

export interface BraunCorpus {
  name: string;
  lang: string;
  sentences: BraunSentence[];
}

export const BRAUN_CORPORA = ['ChatbotCorpus', 'AskUbuntuCorpus', 'WebApplicationsCorpus'] as const;
export type BraunCorpusName = (typeof BRAUN_CORPORA)[number];

/** Default location: <workspace>/../shared/data/nlu/braun2017 (override with NLU_BRAUN_DIR). */
export function defaultBraunDir(): string {
  if (process.env.NLU_BRAUN_DIR) return process.env.NLU_BRAUN_DIR;
  // beside the workspace, or beside its parent (a git worktree under <root>/wt/<name>)
  const near = path.resolve(__dirname, '../../../shared/data/nlu/braun2017');
  return fs.existsSync(near) ? near : path.resolve(__dirname, '../../../../shared/data/nlu/braun2017');
}

export function loadBraunCorpus(name: BraunCorpusName, dir: string = defaultBraunDir()): BraunCorpus {
  const raw = JSON.parse(fs.readFileSync(path.join(dir, `${name}.json`), 'utf8')) as BraunCorpus;
  return { name: raw.name ?? name, lang: raw.lang ?? 'en', sentences: raw.sentences };
}

const isWordChar = (c: string | undefined): boolean => c !== undefined && /[\p{L}\p{N}]/u.test(c);

/**
 * Locate the annotated entity texts in a sentence (case-insensitive; the token indices `start`/`stop` of the
 * corpus are not used). Longer texts claim their occurrence first; an occurrence on word boundaries is preferred;
 * a text annotated twice takes successive occurrences.
 */
export function locateEntities(sentence: BraunSentence): Array<BraunEntity & { from: number; to: number }> {
  const lower = sentence.text.toLowerCase();
  const claimed: Array<[number, number]> = [];
  const free = (a: number, b: number): boolean => claimed.every(([x, y]) => b <= x || a >= y);
  const order = sentence.entities
    .map((e, i) => ({ e, i }))
    .sort((a, b) => b.e.text.length - a.e.text.length || a.i - b.i);
  const found: Array<BraunEntity & { from: number; to: number; i: number }> = [];
  for (const { e, i } of order) {
    const needle = e.text.toLowerCase();
    if (!needle) continue;
    let best = -1;
    for (const requireBoundary of [true, false]) {
      for (let at = lower.indexOf(needle); at >= 0; at = lower.indexOf(needle, at + 1)) {
        const end = at + needle.length;
        if (!free(at, end)) continue;
        if (requireBoundary && (isWordChar(lower[at - 1]) || isWordChar(lower[end]))) continue;
        best = at;
        break;
      }
      if (best >= 0) break;
    }
    if (best < 0) continue; // not found verbatim: left out of the training parts
    claimed.push([best, best + needle.length]);
    found.push({ ...e, from: best, to: best + needle.length, i });
  }
  return found.sort((a, b) => a.from - b.from).map(({ i: _i, ...rest }) => rest);
}

/** Split a sentence into utterance parts at its annotated entities. */
export function sentenceToParts(sentence: BraunSentence): Array<{ text: string; entity?: string }> {
  const parts: Array<{ text: string; entity?: string }> = [];
  let pos = 0;
  for (const e of locateEntities(sentence)) {
    if (e.from > pos) parts.push({ text: sentence.text.slice(pos, e.from) });
    parts.push({ text: sentence.text.slice(e.from, e.to), entity: e.entity });
    pos = e.to;
  }
  if (pos < sentence.text.length) parts.push({ text: sentence.text.slice(pos) });
  return parts;
}

/**
 * Training set of a corpus: one intent per intent name (id = name), one utterance per training sentence split at its
 * annotated entities, one entity per annotated type whose values are the annotated texts of the training sentences
 * (automaticallyExtensible: true, useSynonyms: false).
 */
export function corpusToTrainingSet(corpus: BraunCorpus): NluTrainingSet {
  const intents = new Map<string, NluIntentDef>();
  const values = new Map<string, Map<string, string>>();
  for (const s of corpus.sentences) {
    if (!s.training) continue;
    let intent = intents.get(s.intent);
    if (!intent) {
      intent = { id: s.intent, name: s.intent, utterances: [] };
      intents.set(s.intent, intent);
    }
    intent.utterances.push(sentenceToParts(s));
    for (const e of s.entities) {
      let m = values.get(e.entity);
      if (!m) {
        m = new Map();
        values.set(e.entity, m);
      }
      const key = e.text.toLowerCase();
      if (!m.has(key)) m.set(key, e.text);
    }
  }
  const entities: NluEntityDef[] = [...values].map(([name, m]) => ({
    name,
    automaticallyExtensible: true,
    useSynonyms: false,
    values: [...m.values()].map((value) => ({ value, synonyms: [] })),
  }));
  return { lang: corpus.lang, intents: [...intents.values()], entities };
}

export function testSentences(corpus: BraunCorpus): BraunSentence[] {
  return corpus.sentences.filter((s) => !s.training);
}

export interface Counts {
  tp: number;
  fp: number;
  fn: number;
}

export const addCounts = (a: Counts, b: Counts): Counts => ({
  tp: a.tp + b.tp,
  fp: a.fp + b.fp,
  fn: a.fn + b.fn,
});

export function f1(c: Counts): number {
  const d = 2 * c.tp + c.fp + c.fn;
  return d === 0 ? 1 : (2 * c.tp) / d;
}

/** Top intent only: a right answer is a TP, a wrong one an FP (of the predicted) and an FN (of the gold). */
export function scoreIntent(gold: string, predicted: string | undefined): Counts {
  return predicted === gold ? { tp: 1, fp: 0, fn: 0 } : { tp: 0, fp: predicted === undefined ? 0 : 1, fn: 1 };
}

/**
 * Entities: a predicted entity is a TP when its text (lower-cased, trimmed) equals a gold entity's text
 * (lower-cased, trimmed) and the type matches; each gold entity can be matched once.
 */
export function scoreEntities(
  gold: ReadonlyArray<{ entity: string; text: string }>,
  predicted: ReadonlyArray<{ entity: string; text: string }>,
): Counts {
  const key = (e: { entity: string; text: string }): string =>
    `${e.entity}\u0000${e.text.toLowerCase().trim()}`;
  const pool = new Map<string, number>();
  for (const g of gold) pool.set(key(g), (pool.get(key(g)) ?? 0) + 1);
  let tp = 0;
  for (const p of predicted) {
    const k = key(p);
    const n = pool.get(k) ?? 0;
    if (n > 0) {
      tp++;
      pool.set(k, n - 1);
    }
  }
  return { tp, fp: predicted.length - tp, fn: gold.length - tp };
}

export interface CorpusScore {
  corpus: string;
  sentences: number;
  intent: Counts;
  entity: Counts;
  /** intents and entities together (the literature's combined micro-F1) */
  combined: Counts;
  errors: Array<{ text: string; gold: string; predicted: string | undefined }>;
}

/** Score predictions for the test sentences of a corpus. `predict` may be sync or async (e.g. an HTTP client). */
export async function scoreCorpus(
  corpus: BraunCorpus,
  predict: (text: string) => Promise<BraunPrediction> | BraunPrediction,
): Promise<CorpusScore> {
  let intent: Counts = { tp: 0, fp: 0, fn: 0 };
  let entity: Counts = { tp: 0, fp: 0, fn: 0 };
  const errors: CorpusScore['errors'] = [];
  const tests = testSentences(corpus);
  for (const s of tests) {
    const p = await predict(s.text);
    const ic = scoreIntent(s.intent, p.intent);
    if (ic.tp === 0) errors.push({ text: s.text, gold: s.intent, predicted: p.intent });
    intent = addCounts(intent, ic);
    entity = addCounts(entity, scoreEntities(s.entities, p.entities));
  }
  return {
    corpus: corpus.name,
    sentences: tests.length,
    intent,
    entity,
    combined: addCounts(intent, entity),
    errors,
  };
}

export interface BraunPrediction {
  /** top intent name (undefined when none) */
  intent: string | undefined;
  entities: Array<{ entity: string; text: string }>;
}
