/**
 * Misspelling tolerance for words of extensible entities: optimal-string-alignment (restricted Damerau-Levenshtein)
 * distance, bounded, and a deletion-neighbourhood index (SymSpell style) to find the close words of a vocabulary
 * without comparing against every word.
 */
import type { Steps } from './steps';

/** Edits tolerated between two words: none under 4 characters, 1 for 4-7, 2 from 8 on (the shorter word decides). */
export function allowedEdits(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  if (n < 4) return 0;
  return n <= 7 ? 1 : 2;
}

/**
 * Only purely alphabetic words are matched approximately (never numbers, codes or versions), and only up to 32
 * characters (the deletion neighbourhood of a word grows with the square of its length).
 */
export function isFuzzyCandidate(word: string): boolean {
  return word.length >= 4 && word.length <= 32 && /^\p{L}+$/u.test(word);
}

/**
 * Optimal string alignment distance (adjacent transposition counts as one edit), or `max + 1` as soon as the
 * distance is known to exceed `max`.
 */
export function osaDistance(a: string, b: string, max: number): number {
  const la = a.length;
  const lb = b.length;
  if (Math.abs(la - lb) > max) return max + 1;
  if (a === b) return 0;
  let prev2 = new Array<number>(lb + 1).fill(0);
  let prev = new Array<number>(lb + 1);
  let cur = new Array<number>(lb + 1);
  for (let j = 0; j <= lb; j++) prev[j] = j;
  for (let i = 1; i <= la; i++) {
    cur[0] = i;
    let rowMin = cur[0];
    const ca = a.charCodeAt(i - 1);
    for (let j = 1; j <= lb; j++) {
      const cb = b.charCodeAt(j - 1);
      const cost = ca === cb ? 0 : 1;
      let d = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && ca === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === cb)
        d = Math.min(d, prev2[j - 2]! + 1);
      cur[j] = d;
      if (d < rowMin) rowMin = d;
    }
    if (rowMin > max) return max + 1;
    const tmp = prev2;
    prev2 = prev;
    prev = cur;
    cur = tmp;
  }
  return prev[lb]!;
}

function deletions(word: string, depth: number, out: Set<string>): void {
  if (depth === 0) return;
  for (let i = 0; i < word.length; i++) {
    const d = word.slice(0, i) + word.slice(i + 1);
    if (!out.has(d)) {
      out.add(d);
      deletions(d, depth - 1, out);
    }
  }
}

function maxEditsFor(word: string): number {
  if (word.length < 4) return 0;
  return word.length <= 7 ? 1 : 2;
}

/** Finds the vocabulary words within the allowed edit distance of a query word. */
export class FuzzyIndex {
  private readonly byDeletion = new Map<string, number[]>();
  private readonly words: string[] = [];

  constructor(vocabulary: Iterable<string> = []) {
    for (const w of new Set(vocabulary)) this.add(w);
  }

  /** The index of `vocabulary`, in steps of a few dozen words (a model being adopted: see steps.ts). */
  static *build(vocabulary: Iterable<string>): Steps<FuzzyIndex> {
    const index = new FuzzyIndex();
    let n = 0;
    for (const w of new Set(vocabulary)) {
      index.add(w);
      if ((++n & 31) === 0) yield;
    }
    return index;
  }

  /** Adds a word not added before. */
  private add(w: string): void {
    if (!isFuzzyCandidate(w)) return;
    const id = this.words.length;
    this.words.push(w);
    const keys = new Set<string>([w]);
    // a word of length n can be within 2 edits of a query of length >= n - 2 >= 8 only when n >= 8;
    // words of 4-7 chars: 1 edit, but a 8-char query against a 7-char word is allowed 1 (shorter decides)
    deletions(w, maxEditsFor(w), keys);
    for (const k of keys) {
      const list = this.byDeletion.get(k);
      if (list) list.push(id);
      else this.byDeletion.set(k, [id]);
    }
  }

  /** Close vocabulary words (never the word itself) with their distance, closest first, ties in vocabulary order. */
  lookup(query: string): Array<{ word: string; distance: number }> {
    if (!isFuzzyCandidate(query)) return [];
    const keys = new Set<string>([query]);
    deletions(query, maxEditsFor(query), keys);
    const seen = new Set<number>();
    const out: Array<{ word: string; distance: number; id: number }> = [];
    for (const k of keys) {
      const ids = this.byDeletion.get(k);
      if (!ids) continue;
      for (const id of ids) {
        if (seen.has(id)) continue;
        seen.add(id);
        const w = this.words[id]!;
        if (w === query) continue;
        const max = allowedEdits(query, w);
        if (max === 0) continue;
        const d = osaDistance(query, w, max);
        if (d <= max) out.push({ word: w, distance: d, id });
      }
    }
    out.sort((x, y) => x.distance - y.distance || x.id - y.id);
    return out.map(({ word, distance }) => ({ word, distance }));
  }
}
