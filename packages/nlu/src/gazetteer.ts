/**
 * Dictionary matching of entity values and synonyms over folded tokens: whole words and phrases, longest match wins,
 * approximate (misspelt) words accepted only for automatically extensible entities.
 */
import { FuzzyIndex, osaDistance } from './fuzzy';
import type { Steps } from './steps';
import type { Token } from './tokenize';

export interface GazetteerEntry {
  /** index of the entity in the model's entity list */
  entity: number;
  /** canonical value */
  value: string;
  /** the phrase's folded tokens joined by spaces */
  key: string;
  /** only when values of the entity fold alike to this phrase: its values and synonyms as listed (see valueAsTyped) */
  spellings?: readonly Spelling[];
}

/** A value or synonym as typed (from its first word to its last, in NFC), and its value. */
export interface Spelling {
  value: string;
  text: string;
}

/** A dictionary phrase: its entity (index in the model's entity list), canonical value and folded tokens. */
export interface GazetteerPhrase {
  entity: number;
  value: string;
  tokens: readonly string[];
  /** when values of the entity fold alike to the phrase: its values and synonyms that do, as listed */
  spellings?: readonly Spelling[];
}

export interface DictionaryMatch {
  /** token range [start, end) */
  start: number;
  end: number;
  /** candidates for this span: every entity that has this phrase, best (exact, fewest edits) first */
  candidates: Array<GazetteerEntry & { edits: number }>;
}

interface TrieNode {
  next: Map<string, TrieNode>;
  entries: GazetteerEntry[];
}

const newNode = (): TrieNode => ({ next: new Map(), entries: [] });

export class Gazetteer {
  private readonly root: TrieNode = newNode();
  private fuzzy: FuzzyIndex;
  private readonly words = new Set<string>();

  /**
   * @param phrases (entity, value, folded tokens of the phrase) triples
   * @param extensible per entity index: whether misspellings are tolerated
   */
  constructor(
    phrases: Iterable<GazetteerPhrase>,
    private readonly extensible: readonly boolean[],
  ) {
    const fuzzyVocab: string[] = [];
    for (const p of phrases) this.add(p, fuzzyVocab);
    this.fuzzy = new FuzzyIndex(fuzzyVocab);
  }

  /** The same gazetteer in steps of a few phrases (a model being adopted: see steps.ts). */
  static *build(phrases: Iterable<GazetteerPhrase>, extensible: readonly boolean[]): Steps<Gazetteer> {
    const gazetteer = new Gazetteer([], extensible);
    const fuzzyVocab: string[] = [];
    let n = 0;
    for (const p of phrases) {
      gazetteer.add(p, fuzzyVocab);
      if ((++n & 15) === 0) yield;
    }
    gazetteer.fuzzy = yield* FuzzyIndex.build(fuzzyVocab);
    return gazetteer;
  }

  /** Adds a phrase to the trie; the words that misspellings of it may hit go to `fuzzyVocab`. */
  private add(p: GazetteerPhrase, fuzzyVocab: string[]): void {
    if (p.tokens.length === 0) return;
    let node = this.root;
    for (const t of p.tokens) {
      this.words.add(t);
      let child = node.next.get(t);
      if (!child) {
        child = newNode();
        node.next.set(t, child);
      }
      node = child;
    }
    if (!node.entries.some((e) => e.entity === p.entity))
      node.entries.push({
        entity: p.entity,
        value: p.value,
        key: p.tokens.join(' '),
        ...(p.spellings ? { spellings: p.spellings } : {}),
      });
    if (this.extensible[p.entity]) fuzzyVocab.push(...p.tokens);
  }

  /** All non-overlapping dictionary matches of a token sequence, longest first. */
  match(tokens: readonly Token[]): DictionaryMatch[] {
    const n = tokens.length;
    // per position: the word itself plus its close vocabulary words (for extensible entities only)
    const alternatives: Array<Array<{ word: string; edits: number }>> = tokens.map((t) => {
      const alts = [{ word: t.norm, edits: 0 }];
      // a word that is itself in the dictionaries is taken as typed
      if (!this.words.has(t.norm))
        for (const f of this.fuzzy.lookup(t.norm)) alts.push({ word: f.word, edits: f.distance });
      return alts;
    });
    const found: DictionaryMatch[] = [];
    for (let i = 0; i < n; i++) {
      // depth-first walk of the trie; keep, per end position, the best candidates
      const byEnd = new Map<number, Map<number, GazetteerEntry & { edits: number }>>();
      const walk = (node: TrieNode, pos: number, edits: number): void => {
        if (pos > i) {
          for (const e of node.entries) {
            if (edits > 0 && !this.extensible[e.entity]) continue;
            let m = byEnd.get(pos);
            if (!m) {
              m = new Map();
              byEnd.set(pos, m);
            }
            const prev = m.get(e.entity);
            if (!prev || edits < prev.edits) m.set(e.entity, { ...e, edits });
          }
        }
        if (pos >= n) return;
        for (const alt of alternatives[pos]!) {
          const child = node.next.get(alt.word);
          if (child) walk(child, pos + 1, edits + alt.edits);
        }
      };
      walk(this.root, i, 0);
      for (const [end, m] of byEnd) {
        const candidates = [...m.values()];
        // an exact reading of the span beats approximate readings of it
        const bestEdits = Math.min(...candidates.map((c) => c.edits));
        found.push({
          start: i,
          end,
          candidates: candidates.filter((c) => c.edits === bestEdits).sort((a, b) => a.entity - b.entity),
        });
      }
    }
    // longest first, then fewest edits, then leftmost; keep non-overlapping
    found.sort(
      (a, b) =>
        b.end - b.start - (a.end - a.start) ||
        (a.candidates[0]?.edits ?? 0) - (b.candidates[0]?.edits ?? 0) ||
        a.start - b.start,
    );
    const taken = new Uint8Array(n);
    const kept: DictionaryMatch[] = [];
    for (const m of found) {
      let free = true;
      for (let k = m.start; k < m.end; k++) if (taken[k]) free = false;
      if (!free) continue;
      for (let k = m.start; k < m.end; k++) taken[k] = 1;
      kept.push(m);
    }
    return kept.sort((a, b) => a.start - b.start);
  }
}

/** A spelling with each run of white space as one space (two spaces or a line break between words are one). */
const spaced = (text: string) => text.replace(/\s+/gu, ' ');

/**
 * The value a match of `entry` reads as, given the text it covers as typed. Where values of the entity fold alike to
 * the phrase (`Paris` and `paris`, `Zürich` and `Zurich`), the one spelt exactly as typed (any run of white space
 * being one space), else the one spelt so but for letter case, else (a misspelling, another accent) the one fewest
 * edits away ignoring case, the first listed of equally close ones; otherwise the entry's value.
 */
export function valueAsTyped(entry: GazetteerEntry, surface: string): string {
  const spellings = entry.spellings;
  if (spellings === undefined) return entry.value;
  const typed = spaced(surface.normalize('NFC'));
  const exact = spellings.find((s) => spaced(s.text) === typed);
  if (exact) return exact.value;
  const lower = typed.toLowerCase();
  const texts = spellings.map((s) => spaced(s.text).toLowerCase());
  const caseless = texts.indexOf(lower);
  if (caseless >= 0) return spellings[caseless]!.value;
  let closest = entry.value;
  let fewest = Number.POSITIVE_INFINITY;
  texts.forEach((text, i) => {
    const edits = osaDistance(text, lower, fewest - 1);
    if (edits < fewest) {
      fewest = edits;
      closest = spellings[i]!.value;
    }
  });
  return closest;
}
