/**
 * Entity extraction = dictionary matching (values, synonyms, misspellings for extensible entities) + a linear-chain
 * CRF learnt from the tagged parts of the training utterances.
 *
 * The CRF labels each token O / B-entity / I-entity, for the entities that occur in tagged parts. Its features are
 * the word, the words around it (±2, with their position), the word's shape and suffix, how often the word was seen
 * outside / inside tagged parts of the *other* training utterances, and which entities' dictionaries hold the phrase
 * covering it (learnt leave-one-out, so that list membership is weighed against the context instead of trusted
 * blindly). Tokens of dictionary phrases are seen as "@", so the decision comes from the context, not the value.
 * So it learns, from the training data only, which context makes a span a given entity ("from X" vs "to X").
 * The slot of each occurrence then comes from a small per-entity classifier over the words around it.
 *
 * At parse time every dictionary match is forced to be an entity (one of its candidates, or an extensible entity
 * when the context says so), and is never extended; outside dictionary matches the CRF may only propose
 * automatically extensible entities, which is how values outside the list are picked up.
 */
import { createHash } from 'node:crypto';
import { decodeFloat32, decodeFloat32Array, encodeFloat32, roundToFloat32 } from './float-codec';
import {
  DictionaryMatch,
  Gazetteer,
  type GazetteerEntry,
  type GazetteerPhrase,
  type Spelling,
  valueAsTyped,
} from './gazetteer';
import { createRng, Rng, shuffleInPlace } from './random';
import {
  beginLabel,
  classOfLabel,
  DEFAULT_TAGGER_OPTIONS,
  insideLabel,
  LinearChainCrf,
  TaggedSequence,
  TaggerOptions,
} from './sequence-tagger';
import { SerializedSlotClassifier, SlotClassifier, SlotExample } from './slot-classifier';
import { runSteps, type Steps } from './steps';
import { StringIndex } from './string-index';
import { Token, tokenize } from './tokenize';
import type { NluEntityDef, NluEntityMatch, NluUtterancePart } from './types';

export interface EntityExtractorOptions {
  /** extra training sequences per tagged utterance, with the tagged values swapped for other values of the entity */
  augmentations: number;
  /** cap on the number of training sequences (originals + augmented) */
  maxSequences: number;
  /** in augmented copies, the share of entity words / other words shown as never seen */
  unseenEntityWordRate: number;
  unseenWordRate: number;
  /** values outside the dictionaries are returned only when the CRF is at least this sure of them */
  minNewValueConfidence: number;
  /** confidence lost per edit of an approximate dictionary match */
  editPenalty: number;
  tagger: TaggerOptions;
  seed: number;
}

export const DEFAULT_ENTITY_OPTIONS: EntityExtractorOptions = {
  augmentations: 2,
  maxSequences: 3000,
  unseenEntityWordRate: 0.5,
  unseenWordRate: 0.1,
  minNewValueConfidence: 0.5,
  editPenalty: 0.1,
  tagger: DEFAULT_TAGGER_OPTIONS,
  seed: 11,
};

interface EntityInfo {
  name: string;
  extensible: boolean;
}

interface Phrase {
  entity: number;
  value: string;
  /** the phrase as written in the definitions (value, synonym or tagged text) */
  text: string;
}

export interface SerializedEntityExtractor {
  entities: Array<[name: string, extensible: boolean]>;
  phrases: Array<[entity: number, value: string, text: string]>;
  /**
   * values and synonyms that fold to the phrase of an earlier one of another value of their entity (`paris` after
   * `Paris`), resolved as typed (valueAsTyped); absent when none (and in models trained before)
   */
  spellings?: Array<[entity: number, value: string, text: string]>;
  /** entity index of each CRF class */
  classes: number[];
  features: string[];
  wordStats: Array<[word: string, outside: number, inside: number]>;
  minNewValueConfidence: number;
  editPenalty: number;
  /** `weights`: base64 of float32 (JSON form), or the array itself (binary form, see model-codec.ts) */
  crf: { weights: string | Float32Array; transitions: string; start: string; end: string };
  slots: SerializedSlotClassifier;
}

/** The serialized form with the CRF's feature list as a StringIndex (the binary form: model-codec.ts) or as strings. */
export type EntityExtractorParts = Omit<SerializedEntityExtractor, 'features'> & {
  features: readonly string[] | StringIndex;
};

type WordStats = Map<string, { o: number; e: number }>;

const bucket = (n: number): string => (n >= 3 ? '3' : String(n));

function shapeOf(w: string): string {
  const hasDigit = /\p{N}/u.test(w);
  const hasLetter = /\p{L}/u.test(w);
  return hasDigit && hasLetter ? 'x' : hasDigit ? 'd' : 'a';
}

/** What the CRF sees of a token: its word, or "@" when a dictionary phrase covers it (with the phrase's entities). */
interface TokenView {
  word: string;
  raw: string;
  /** entity indices of the dictionary match covering the token (empty when none) */
  cands: readonly number[];
  /** training only: show the token as a word never seen before (no word or suffix feature, zero counts) */
  unseen?: boolean;
}

/**
 * Feature strings of token i. `count(w)` gives how often w was seen outside (o) / inside (e) tagged parts of the
 * training utterances — excluding the utterance itself while training.
 */
function tokenFeatures(
  views: readonly TokenView[],
  i: number,
  entityNames: readonly string[],
  count: (w: string) => { o: number; e: number },
): string[] {
  const v = views[i]!;
  const word = (k: number): string =>
    k < 0 ? '<s>' : k >= views.length ? '</s>' : views[k]!.unseen ? '<unseen>' : views[k]!.word;
  const p1 = word(i - 1);
  const p2 = word(i - 2);
  const n1 = word(i + 1);
  const n2 = word(i + 2);
  const zero = { o: 0, e: 0 };
  const c = v.unseen ? zero : count(v.raw);
  const f = [
    'b',
    `w:${v.unseen ? '<unseen>' : v.word}`,
    `p1:${p1}`,
    `p2:${p2}`,
    `n1:${n1}`,
    `n2:${n2}`,
    `p2p1:${p2} ${p1}`,
    `n1n2:${n1} ${n2}`,
    `sh:${shapeOf(v.raw)}`,
    `oc:${bucket(c.o)}`,
    `ec:${bucket(c.e)}`,
    `oc-1:${i >= 1 ? bucket((views[i - 1]!.unseen ? zero : count(views[i - 1]!.raw)).o) : 's'}`,
    `oc+1:${i + 1 < views.length ? bucket((views[i + 1]!.unseen ? zero : count(views[i + 1]!.raw)).o) : 's'}`,
  ];
  if (v.cands.length === 0 && v.raw.length >= 5 && !v.unseen) f.push(`suf:${v.raw.slice(-3)}`);
  for (const e of v.cands) f.push(`cand:${entityNames[e]!}`);
  return f;
}

/** Views of a token sequence given the dictionary matches to show. */
function viewsOf(
  tokens: readonly Token[],
  matches: ReadonlyArray<{ start: number; end: number; cands: readonly number[] }>,
): TokenView[] {
  const views: TokenView[] = tokens.map((t) => ({ word: t.norm, raw: t.norm, cands: [] }));
  for (const m of matches) {
    if (m.cands.length === 0) continue;
    for (let k = m.start; k < m.end; k++) views[k] = { word: '@', raw: tokens[k]!.norm, cands: m.cands };
  }
  return views;
}

/** Words for the slot classifier: entity occurrences other than the one classified become "@<entity>". */
function slotWords(
  tokens: readonly Token[],
  spans: ReadonlyArray<{ start: number; end: number; entity: string }>,
): string[] {
  const words = tokens.map((t) => t.norm);
  for (const s of spans) for (let k = s.start; k < s.end; k++) words[k] = `@${s.entity}`;
  return words;
}

interface TaggedPart {
  text: string;
  /** entity index, -1 for plain text */
  entity: number;
  slot: string;
}

interface LabelledUtterance {
  tokens: Token[];
  /** entity index per token, -1 outside tagged parts */
  entityOf: number[];
  /** tagged occurrences as token ranges */
  spans: Array<{ start: number; end: number; entity: number; slot: string }>;
}

/** Tokenise an utterance given as parts; tokens starting inside a tagged part belong to it. */
function labelUtterance(parts: readonly TaggedPart[]): LabelledUtterance {
  let text = '';
  const ranges: Array<{ start: number; end: number; part: TaggedPart }> = [];
  for (const p of parts) {
    ranges.push({ start: text.length, end: text.length + p.text.length, part: p });
    text += p.text;
  }
  const tokens = tokenize(text);
  const entityOf: number[] = [];
  const spans: LabelledUtterance['spans'] = [];
  let prevRange = -1;
  tokens.forEach((t, i) => {
    const r = ranges.findIndex((g) => t.start >= g.start && t.start < g.end);
    const part = r >= 0 ? ranges[r]!.part : null;
    const entity = part ? part.entity : -1;
    entityOf.push(entity);
    if (entity >= 0) {
      const last = spans[spans.length - 1];
      if (last && r === prevRange && last.end === i) last.end = i + 1;
      else spans.push({ start: i, end: i + 1, entity, slot: part!.slot });
    }
    prevRange = r;
  });
  return { tokens, entityOf, spans };
}

const phraseKey = (text: string): string =>
  tokenize(text)
    .map((t) => t.norm)
    .join(' ');

/**
 * The defined entities, then any entity named only in tagged parts: no list, and not extensible (nothing says it
 * may take values outside a list), so it is never extracted. The service leaves out of a language's set the
 * entities without values in that language; taking them as extensible made the CRF extract any word in their place.
 */
function collectEntities(
  entityDefs: readonly NluEntityDef[],
  utterances: ReadonlyArray<ReadonlyArray<NluUtterancePart>>,
): { entities: EntityInfo[]; entityIndex: Map<string, number> } {
  const entities: EntityInfo[] = entityDefs.map((e) => ({
    name: e.name,
    extensible: e.automaticallyExtensible,
  }));
  const entityIndex = new Map<string, number>();
  entities.forEach((e, i) => {
    if (!entityIndex.has(e.name)) entityIndex.set(e.name, i);
  });
  for (const u of utterances) {
    for (const p of u) {
      if (p.entity && !entityIndex.has(p.entity)) {
        entityIndex.set(p.entity, entities.length);
        entities.push({ name: p.entity, extensible: false });
      }
    }
  }
  return { entities, entityIndex };
}

/** The utterances' parts with entity indices and slots (the slot defaults to the entity name). */
function taggedParts(
  utterances: ReadonlyArray<ReadonlyArray<NluUtterancePart>>,
  entityIndex: ReadonlyMap<string, number>,
): TaggedPart[][] {
  return utterances.map((u) =>
    u.map((p) => ({
      text: p.text ?? '',
      entity: p.entity ? entityIndex.get(p.entity)! : -1,
      slot: p.slot_name && p.slot_name.length > 0 ? p.slot_name : (p.entity ?? ''),
    })),
  );
}

/** What an extractor looks up its dictionaries' phrases in. */
interface DictionaryLookups {
  gazetteer: Gazetteer;
  /** per entity: the keys (folded tokens joined by spaces) of its dictionary's phrases */
  phraseKeys: Array<Set<string>>;
}

/** What an extractor looks things up in while it extracts. */
interface Lookups extends DictionaryLookups {
  /** CRF feature -> column */
  featureIndex: StringIndex;
}

/**
 * The gazetteer and phrase keys of the dictionaries' phrases, in steps of a few phrases (see steps.ts); a phrase that
 * `spellings` fold to resolves by the spelling typed (valueAsTyped).
 */
function* dictionaryLookupsSteps(
  entities: readonly EntityInfo[],
  phrases: readonly Phrase[],
  spellings: readonly Phrase[],
): Steps<DictionaryLookups> {
  const phraseKeys = entities.map(() => new Set<string>());
  // a value or synonym as it would be typed: from its first word to its last (`N.Y.C.` is typed `N.Y.C`), NFC
  const spelling = (p: Phrase, tokens: readonly Token[]): Spelling => ({
    value: p.value,
    text: p.text.slice(tokens[0]!.start, tokens.at(-1)!.end).normalize('NFC'),
  });
  const others = new Map<string, Spelling[]>();
  for (const p of spellings) {
    const tokens = tokenize(p.text);
    if (tokens.length === 0) continue;
    const k = `${p.entity}\u0000${tokens.map((t) => t.norm).join(' ')}`;
    const group = others.get(k);
    if (group) group.push(spelling(p, tokens));
    else others.set(k, [spelling(p, tokens)]);
  }
  function* folded(): Generator<GazetteerPhrase> {
    for (const p of phrases) {
      const words = tokenize(p.text);
      const tokens = words.map((t) => t.norm);
      const key = tokens.join(' ');
      phraseKeys[p.entity]!.add(key);
      const alike = others.size > 0 ? others.get(`${p.entity}\u0000${key}`) : undefined;
      yield {
        entity: p.entity,
        value: p.value,
        tokens,
        ...(alike ? { spellings: [spelling(p, words), ...alike] } : {}),
      };
    }
  }
  const gazetteer = yield* Gazetteer.build(
    folded(),
    entities.map((e) => e.extensible),
  );
  return { gazetteer, phraseKeys };
}

/**
 * The dictionary lookups of the models adopted, by their dictionaries, while a model holds them (they never change once
 * built): a retrained model whose entities did not change, as after most changes of intents, takes those of the model
 * it replaces instead of building its own, which was half the work of adopting it and three quarters of the heap it
 * kept (docs/decisions/0021). The weak reference is to the gazetteer, which the models keep; the phrase keys, read
 * only while a model is made, stay beside it (a reference to an object holding both went at the next collection).
 */
const adoptedLookups = new Map<string, { gazetteer: WeakRef<Gazetteer>; phraseKeys: Array<Set<string>> }>();
const forgetLookups = new FinalizationRegistry<string>((key) => {
  // the key may hold the lookups of a model adopted since those collected
  if (adoptedLookups.get(key)?.gazetteer.deref() === undefined) adoptedLookups.delete(key);
});

/** What tells dictionaries apart (a digest of their entities and phrases), in steps of a thousand phrases. */
function* dictionaryKey(
  entities: readonly EntityInfo[],
  phrases: readonly Phrase[],
  spellings: readonly Phrase[],
): Steps<string> {
  const hash = createHash('sha256').update(JSON.stringify([entities, phrases.length, spellings.length]));
  for (const list of [phrases, spellings])
    for (let at = 0; at < list.length; at += 1024) {
      hash.update(JSON.stringify(list.slice(at, at + 1024)));
      yield;
    }
  return hash.digest('base64');
}

/** An extractor's lookups from its parts (a stored model being adopted), in steps. */
function* lookupsSteps(
  entities: readonly EntityInfo[],
  phrases: readonly Phrase[],
  spellings: readonly Phrase[],
  features: readonly string[] | StringIndex,
): Steps<Lookups> {
  const featureIndex = StringIndex.from(features);
  yield;
  const key = yield* dictionaryKey(entities, phrases, spellings);
  const adopted = adoptedLookups.get(key);
  const gazetteer = adopted?.gazetteer.deref();
  if (adopted && gazetteer) return { featureIndex, gazetteer, phraseKeys: adopted.phraseKeys };
  const dictionary = yield* dictionaryLookupsSteps(entities, phrases, spellings);
  adoptedLookups.set(key, {
    gazetteer: new WeakRef(dictionary.gazetteer),
    phraseKeys: dictionary.phraseKeys,
  });
  forgetLookups.register(dictionary.gazetteer, key);
  return { featureIndex, ...dictionary };
}

interface Dictionary extends DictionaryLookups {
  phrases: Phrase[];
  /** values and synonyms folding to the phrase of an earlier one of another value (see dictionaryLookupsSteps) */
  spellings: Phrase[];
  /** leave-one-out: is the phrase known as this entity without utterance u? */
  knownWithout(entity: number, key: string, u: number): boolean;
}

/** Dictionary phrases: values, synonyms (when `useSynonyms`); for extensible entities also the tagged texts. */
function buildDictionary(
  entityDefs: readonly NluEntityDef[],
  entities: readonly EntityInfo[],
  entityIndex: ReadonlyMap<string, number>,
  parts: readonly TaggedPart[][],
): Dictionary {
  const phrases: Phrase[] = [];
  const phraseKeys = new Set<string>();
  const resolve: Array<Map<string, string>> = entities.map(() => new Map());
  const defined = new Set<string>();
  const addPhrase = (entity: number, value: string, text: string): string | null => {
    const key = phraseKey(text);
    if (!key) return null;
    const k = `${entity}\u0000${key}`;
    if (!phraseKeys.has(k)) {
      phraseKeys.add(k);
      phrases.push({ entity, value, text });
      resolve[entity]!.set(key, value);
    }
    return k;
  };
  // every value and synonym, as listed, of each (entity, phrase)
  const listed = new Map<string, Phrase[]>();
  const define = (entity: number, value: string, text: string): void => {
    const k = addPhrase(entity, value, text);
    if (!k) return;
    defined.add(k);
    const group = listed.get(k);
    if (group) group.push({ entity, value, text });
    else listed.set(k, [{ entity, value, text }]);
  };
  entityDefs.forEach((def, i) => {
    if (entityIndex.get(def.name) !== i) return; // duplicate name: the first definition wins
    for (const v of def.values) {
      define(i, v.value, v.value);
      if (def.useSynonyms) for (const syn of v.synonyms ?? []) define(i, v.value, syn);
    }
  });
  // where values of an entity fold alike (`Paris`, `paris`), the spellings after the phrase's own, to tell them apart
  const spellings: Phrase[] = [];
  for (const [first, ...others] of listed.values())
    if (others.some((p) => p.value !== first!.value)) spellings.push(...others);
  // how many utterances tag each (entity, phrase); which ones each utterance tags
  const tagCount = new Map<string, number>();
  const taggedIn: Array<Set<string>> = parts.map((u) => {
    const own = new Set<string>();
    for (const p of u) {
      if (p.entity < 0) continue;
      const key = phraseKey(p.text);
      if (!key) continue;
      own.add(`${p.entity}\u0000${key}`);
      if (entities[p.entity]!.extensible)
        addPhrase(p.entity, resolve[p.entity]!.get(key) ?? p.text.trim(), p.text);
    }
    for (const k of own) tagCount.set(k, (tagCount.get(k) ?? 0) + 1);
    return own;
  });
  return {
    phrases,
    spellings,
    ...runSteps(dictionaryLookupsSteps(entities, phrases, spellings)),
    knownWithout(entity, key, u) {
      const k = `${entity}\u0000${key}`;
      const n = tagCount.get(k) ?? 0;
      if (n === 0) return defined.has(k);
      return n - (taggedIn[u]!.has(k) ? 1 : 0) > 0;
    },
  };
}

/** CRF classes: the entities that occur in tagged parts, in order of first occurrence. */
function crfClasses(labelled: readonly LabelledUtterance[]): number[] {
  const classes: number[] = [];
  for (const lu of labelled)
    for (const s of lu.spans) if (!classes.includes(s.entity)) classes.push(s.entity);
  return classes;
}

/** Slot examples per entity: the words around each tagged occurrence, and its slot. */
function slotExamples(
  labelled: readonly LabelledUtterance[],
  entities: readonly EntityInfo[],
): SlotExample[][] {
  const examples: SlotExample[][] = entities.map(() => []);
  for (const lu of labelled) {
    for (const s of lu.spans) {
      const others = lu.spans.filter((o) => o !== s).map((o) => ({ ...o, entity: entities[o.entity]!.name }));
      examples[s.entity]!.push({
        words: slotWords(lu.tokens, others),
        start: s.start,
        end: s.end,
        slot: s.slot,
      });
    }
  }
  return examples;
}

interface WordStatistics {
  /** document frequencies of words outside (o) / inside (e) tagged parts */
  stats: WordStats;
  /** per utterance, its own words outside / inside tagged parts (left out of its counts) */
  own: Array<{ o: Set<string>; e: Set<string> }>;
}

function wordStatistics(labelled: readonly LabelledUtterance[]): WordStatistics {
  const stats: WordStats = new Map();
  const own = labelled.map(({ tokens, entityOf }) => {
    const o = new Set<string>();
    const e = new Set<string>();
    tokens.forEach((t, i) => {
      (entityOf[i]! < 0 ? o : e).add(t.norm);
    });
    for (const w of o) {
      const st = stats.get(w) ?? { o: 0, e: 0 };
      st.o++;
      stats.set(w, st);
    }
    for (const w of e) {
      const st = stats.get(w) ?? { o: 0, e: 0 };
      st.e++;
      stats.set(w, st);
    }
    return { o, e };
  });
  return { stats, own };
}

/** Turns token views and BIO labels into the CRF's training sequences, numbering feature strings as it goes. */
class SequenceBuilder {
  readonly featureNames: string[] = [];
  readonly sequences: TaggedSequence[] = [];
  private readonly featureIndex = new Map<string, number>();
  private readonly classOf: Map<number, number>;
  private readonly entityNames: string[];

  constructor(
    entities: readonly EntityInfo[],
    classes: readonly number[],
    private readonly words: WordStatistics,
  ) {
    this.classOf = new Map(classes.map((e, k) => [e, k] as const));
    this.entityNames = entities.map((e) => e.name);
  }

  get length(): number {
    return this.sequences.length;
  }

  /** BIO labels of a labelled utterance */
  bio(lu: LabelledUtterance): number[] {
    const labels = lu.tokens.map(() => 0);
    for (const s of lu.spans) {
      const k = this.classOf.get(s.entity)!;
      labels[s.start] = beginLabel(k);
      for (let t = s.start + 1; t < s.end; t++) labels[t] = insideLabel(k);
    }
    return labels;
  }

  /** add the sequence of utterance `u` (whose own words are left out of the word counts) */
  add(views: TokenView[], labels: number[], u: number): void {
    const self = this.words.own[u]!;
    const stats = this.words.stats;
    const count = (w: string): { o: number; e: number } => {
      const st = stats.get(w);
      if (!st) return { o: 0, e: 0 };
      return { o: st.o - (self.o.has(w) ? 1 : 0), e: st.e - (self.e.has(w) ? 1 : 0) };
    };
    const features = views.map((_, i) =>
      Int32Array.from(tokenFeatures(views, i, this.entityNames, count).map((f) => this.featureId(f))),
    );
    this.sequences.push({ features, labels });
  }

  private featureId(f: string): number {
    let id = this.featureIndex.get(f);
    if (id === undefined) {
      id = this.featureNames.length;
      this.featureIndex.set(f, id);
      this.featureNames.push(f);
    }
    return id;
  }
}

/** The utterances as the parser will see them: dictionary matches known without the utterance itself. */
function addTrainingSequences(
  builder: SequenceBuilder,
  labelled: readonly LabelledUtterance[],
  dictionary: Dictionary,
): void {
  labelled.forEach((lu, u) => {
    const matches = dictionary.gazetteer.match(lu.tokens).map((m) => ({
      start: m.start,
      end: m.end,
      cands: m.candidates.filter((c) => dictionary.knownWithout(c.entity, c.key, u)).map((c) => c.entity),
    }));
    builder.add(viewsOf(lu.tokens, matches), builder.bio(lu), u);
  });
}

/**
 * Augmented copies of the tagged utterances with other values of the same entities, seen without dictionary and
 * with some words shown as never seen: up to `augmentations` per tagged utterance, fewer (a seeded subset) when
 * `maxSequences` is near.
 */
function addAugmentedSequences(
  builder: SequenceBuilder,
  parts: readonly TaggedPart[][],
  labelled: readonly LabelledUtterance[],
  phrases: readonly Phrase[],
  entityCount: number,
  options: EntityExtractorOptions,
): void {
  if (options.augmentations <= 0) return;
  const phrasesOf: Phrase[][] = Array.from({ length: entityCount }, () => []);
  for (const p of phrases) phrasesOf[p.entity]!.push(p);
  const tagged = labelled.map((_, i) => i).filter((i) => labelled[i]!.spans.length > 0);
  const rng: Rng = createRng(options.seed);
  const room = Math.max(
    0,
    Math.min(options.augmentations * tagged.length, options.maxSequences - builder.length),
  );
  const order = shuffleInPlace([...tagged], rng);
  for (let n = 0; n < room; n++) {
    const i = order[n % order.length]!;
    const swapped = parts[i]!.map((p) => {
      if (p.entity < 0) return p;
      const choices = phrasesOf[p.entity]!;
      if (choices.length === 0) return p;
      return { ...p, text: choices[Math.floor(rng() * choices.length)]!.text };
    });
    const lu = labelUtterance(swapped);
    // unknown-word dropout: some tokens are shown as never seen (entity tokens more often), so that the CRF
    // also learns to find values it has never seen from their context
    const views = viewsOf(lu.tokens, []).map((v, t) =>
      rng() < (lu.entityOf[t]! >= 0 ? options.unseenEntityWordRate : options.unseenWordRate)
        ? { ...v, unseen: true }
        : v,
    );
    builder.add(views, builder.bio(lu), i);
  }
}

export class EntityExtractor {
  private readonly gazetteer: Gazetteer;
  private readonly featureIndex: StringIndex;
  /** CRF class of each entity, -1 when the entity never occurs in tagged parts */
  private readonly classOfEntity: number[];
  private readonly extensibleClasses: number[];
  /** per entity: the CRF classes a phrase of its dictionary may be read as (its own and related extensible ones) */
  private readonly readableAs: number[][];
  private readonly entityNames: string[];

  private constructor(
    private readonly entities: readonly EntityInfo[],
    private readonly phrases: readonly Phrase[],
    private readonly spellings: readonly Phrase[],
    private readonly classes: readonly number[],
    lookups: Lookups,
    private readonly wordStats: WordStats,
    private readonly crf: LinearChainCrf,
    private readonly slots: SlotClassifier,
    private readonly minNewValueConfidence: number,
    private readonly editPenalty: number,
  ) {
    this.featureIndex = lookups.featureIndex;
    this.gazetteer = lookups.gazetteer;
    this.classOfEntity = entities.map(() => -1);
    classes.forEach((e, k) => {
      this.classOfEntity[e] = k;
    });
    this.extensibleClasses = classes.map((e, k) => (entities[e]!.extensible ? k : -1)).filter((k) => k >= 0);
    this.entityNames = entities.map((e) => e.name);
    // entities whose dictionaries share a phrase hold the same kind of values (e.g. departure and arrival
    // stations): a phrase listed for one may be read as the other when it is extensible and the context says so
    const keysOf = lookups.phraseKeys;
    this.readableAs = entities.map((_, e) => {
      const out: number[] = [];
      if (this.classOfEntity[e]! >= 0) out.push(this.classOfEntity[e]!);
      for (const k of this.extensibleClasses) {
        const other = classes[k]!;
        if (other === e || out.includes(k)) continue;
        for (const key of keysOf[e]!) {
          if (keysOf[other]!.has(key)) {
            out.push(k);
            break;
          }
        }
      }
      return out;
    });
  }

  /**
   * Learn an extractor from the entity definitions and the tagged training utterances, in named steps: the entity
   * list, the dictionaries, the slot classifiers, then (when some utterance tags an entity) the CRF's training
   * sequences and the CRF itself.
   */
  static train(
    entityDefs: readonly NluEntityDef[],
    utterances: ReadonlyArray<ReadonlyArray<NluUtterancePart>>,
    options: EntityExtractorOptions = DEFAULT_ENTITY_OPTIONS,
  ): EntityExtractor {
    const { entities, entityIndex } = collectEntities(entityDefs, utterances);
    const parts = taggedParts(utterances, entityIndex);
    const dictionary = buildDictionary(entityDefs, entities, entityIndex, parts);
    const labelled = parts.map(labelUtterance);
    const classes = crfClasses(labelled);
    const slots = SlotClassifier.train(slotExamples(labelled, entities), options.seed);
    const stats = wordStatistics(labelled);
    const make = (featureNames: string[], wordStats: WordStats, crf: LinearChainCrf): EntityExtractor =>
      new EntityExtractor(
        entities,
        dictionary.phrases,
        dictionary.spellings,
        classes,
        {
          featureIndex: StringIndex.of(featureNames),
          gazetteer: dictionary.gazetteer,
          phraseKeys: dictionary.phraseKeys,
        },
        wordStats,
        crf,
        slots,
        options.minNewValueConfidence,
        options.editPenalty,
      );
    if (classes.length === 0) return make([], new Map(), new LinearChainCrf(0, 0));
    const builder = new SequenceBuilder(entities, classes, stats);
    addTrainingSequences(builder, labelled, dictionary);
    addAugmentedSequences(builder, parts, labelled, dictionary.phrases, entities.length, options);
    const crf = LinearChainCrf.train(
      builder.sequences,
      builder.featureNames.length,
      classes.length,
      options.tagger,
    );
    roundToFloat32(crf.transitions);
    roundToFloat32(crf.startWeights);
    roundToFloat32(crf.endWeights);
    return make(builder.featureNames, stats.stats, crf);
  }

  /** Entities of an input, given its tokens (from `tokenize(text)`). */
  extract(text: string, tokens: readonly Token[]): NluEntityMatch[] {
    if (tokens.length === 0 || this.entities.length === 0) return [];
    const matches = this.gazetteer.match(tokens);
    const found: Array<{
      start: number;
      end: number;
      entity: number;
      value: string | null;
      confidence: number;
    }> = [];
    const editFactor = (edits: number): number => Math.max(0, 1 - this.editPenalty * edits);
    // the value of a dictionary match over tokens [start, end): as typed where values fold alike (valueAsTyped)
    const listedValue = (c: GazetteerEntry, start: number, end: number): string =>
      c.spellings === undefined
        ? c.value
        : valueAsTyped(c, text.slice(tokens[start]!.start, tokens[end - 1]!.end));

    // dictionary matches of entities that never occur in tagged parts are taken as they are
    const forCrf: DictionaryMatch[] = [];
    for (const m of matches) {
      if (m.candidates.some((c) => this.classOfEntity[c.entity]! >= 0)) {
        forCrf.push(m);
        continue;
      }
      const c = m.candidates[0]!;
      found.push({
        start: m.start,
        end: m.end,
        entity: c.entity,
        value: listedValue(c, m.start, m.end),
        confidence: editFactor(c.edits),
      });
    }

    const K = this.classes.length;
    if (K > 0) {
      const L = 1 + 2 * K;
      const inMatch = new Int32Array(tokens.length).fill(-1);
      matches.forEach((m, i) => {
        for (let k = m.start; k < m.end; k++) inMatch[k] = i;
      });
      const crfMatch = new Set(forCrf);
      // allowed labels: outside dictionary matches, O or an extensible entity; a dictionary match must be one of
      // its candidates (or an extensible entity related to one), and is never extended
      const masks: Uint8Array[] = tokens.map((_, t) => {
        const mask = new Uint8Array(L);
        mask[0] = 1;
        const mi = inMatch[t]!;
        if (mi >= 0 && !crfMatch.has(matches[mi]!)) return mask; // taken above; O for the CRF
        const afterMatch = t > 0 && inMatch[t - 1]! >= 0 && inMatch[t - 1] !== mi;
        for (const k of this.extensibleClasses) {
          mask[beginLabel(k)] = 1;
          if (!afterMatch) mask[insideLabel(k)] = 1;
        }
        return mask;
      });
      for (const m of forCrf) {
        const allowed = new Set<number>();
        for (const c of m.candidates) for (const k of this.readableAs[c.entity]!) allowed.add(k);
        for (let t = m.start; t < m.end; t++) {
          const mask = masks[t]!;
          mask.fill(0);
          for (const k of allowed) mask[t === m.start ? beginLabel(k) : insideLabel(k)] = 1;
        }
      }
      const views = viewsOf(
        tokens,
        matches.map((m) => ({ start: m.start, end: m.end, cands: m.candidates.map((c) => c.entity) })),
      );
      const features = this.featuresOf(views);
      const path = this.crf.viterbi(features, masks);
      // marginals (for the confidences) only when something was tagged
      const marg = path.some((y) => y !== 0) ? this.crf.marginals(features, masks) : [];
      const matchAt = new Map<number, DictionaryMatch>();
      for (const m of forCrf) matchAt.set(m.start, m);
      for (let a = 0; a < path.length; ) {
        const label = path[a]!;
        if (label === 0) {
          a++;
          continue;
        }
        const k = classOfLabel(label);
        let b = a + 1;
        while (b < path.length && path[b] === insideLabel(k)) b++;
        let conf = 0;
        for (let t = a; t < b; t++) conf += marg[t]![path[t]!]!;
        conf /= b - a;
        const entity = this.classes[k]!;
        const m = matchAt.get(a);
        if (m && m.end === b) {
          // a phrase listed for another entity, taken as a new value of this (extensible) one, keeps its text
          const own = m.candidates.find((c) => c.entity === entity);
          const edits = own ? own.edits : m.candidates[0]!.edits;
          found.push({
            start: a,
            end: b,
            entity,
            value: own ? listedValue(own, a, b) : null,
            confidence: conf * editFactor(edits),
          });
        } else if (conf >= this.minNewValueConfidence) {
          found.push({ start: a, end: b, entity, value: null, confidence: conf });
        }
        a = b;
      }
    }

    found.sort((x, y) => x.start - y.start || x.end - y.end);
    const named = found.map((f) => ({ ...f, entity: this.entityNames[f.entity]!, index: f.entity }));
    return named.map((f) => {
      const start = tokens[f.start]!.start;
      const end = tokens[f.end - 1]!.end;
      const surface = text.slice(start, end);
      const words = slotWords(
        tokens,
        named.filter((o) => o !== f),
      );
      const slot = this.slots.predict(f.index, words, f.start, f.end);
      return {
        entity: f.entity,
        slot: slot ? slot.slot : f.entity,
        // in NFC, whatever form it was listed or typed in (a value listed both ways reads as one)
        value: (f.value ?? surface).normalize('NFC'),
        text: surface,
        start,
        end,
        confidence: f.confidence,
      };
    });
  }

  private featuresOf(views: readonly TokenView[]): Int32Array[] {
    const count = (w: string): { o: number; e: number } => this.wordStats.get(w) ?? { o: 0, e: 0 };
    return views.map((_, i) => {
      const ids: number[] = [];
      for (const f of tokenFeatures(views, i, this.entityNames, count)) {
        const id = this.featureIndex.get(f);
        if (id !== undefined) ids.push(id);
      }
      return Int32Array.from(ids);
    });
  }

  toJSON(): SerializedEntityExtractor {
    return {
      entities: this.entities.map((e) => [e.name, e.extensible]),
      phrases: this.phrases.map((p) => [p.entity, p.value, p.text]),
      ...(this.spellings.length > 0
        ? { spellings: this.spellings.map((p): [number, string, string] => [p.entity, p.value, p.text]) }
        : {}),
      classes: [...this.classes],
      features: this.featureIndex.keys(),
      wordStats: [...this.wordStats].map(([w, st]) => [w, st.o, st.e]),
      minNewValueConfidence: this.minNewValueConfidence,
      editPenalty: this.editPenalty,
      crf: {
        weights: encodeFloat32(this.crf.weights),
        transitions: encodeFloat32(this.crf.transitions),
        start: encodeFloat32(this.crf.startWeights),
        end: encodeFloat32(this.crf.endWeights),
      },
      slots: this.slots.toJSON(),
    };
  }

  /** `toJSON()` with the CRF's features as they are held (model-codec.ts stores them as arrays). */
  toParts(): EntityExtractorParts {
    return { ...this.toJSON(), features: this.featureIndex };
  }

  static fromJSON(json: EntityExtractorParts): EntityExtractor {
    return runSteps(EntityExtractor.fromJSONSteps(json));
  }

  /** `fromJSON` as resumable steps of a few thousand features or a few phrases (see steps.ts). */
  static *fromJSONSteps(json: EntityExtractorParts): Steps<EntityExtractor> {
    const entities = json.entities.map(([name, extensible]) => ({ name, extensible }));
    const phrase = ([entity, value, text]: [number, string, string]): Phrase => ({ entity, value, text });
    const phrases = json.phrases.map(phrase);
    const spellings = (json.spellings ?? []).map(phrase);
    const lookups = yield* lookupsSteps(entities, phrases, spellings, json.features);
    const crf = new LinearChainCrf(
      lookups.featureIndex.size,
      json.classes.length,
      typeof json.crf.weights === 'string' ? decodeFloat32Array(json.crf.weights) : json.crf.weights,
      decodeFloat32(json.crf.transitions),
      decodeFloat32(json.crf.start),
      decodeFloat32(json.crf.end),
    );
    const wordStats: WordStats = new Map(json.wordStats.map(([w, o, e]) => [w, { o, e }]));
    yield;
    const slots = SlotClassifier.fromJSON(json.slots);
    yield;
    return new EntityExtractor(
      entities,
      phrases,
      spellings,
      json.classes,
      lookups,
      wordStats,
      crf,
      slots,
      json.minNewValueConfidence,
      json.editPenalty,
    );
  }
}
