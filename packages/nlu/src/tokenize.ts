/**
 * Unicode-aware tokenisation with character offsets.
 *
 * A token is a maximal run of letters, digits and combining marks (`\p{L}\p{N}\p{M}`), except that
 * - numbers keep their inner separators ("14.04", "12:30", "1,5" are one token), and
 * - scripts written without spaces (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar) give one token per character,
 *   so that whole-word matching still works there.
 * Everything else (spaces, punctuation, symbols) separates tokens and is kept only through the offsets.
 *
 * `norm` is the matching form: lower-cased, accents folded (NFKD then combining marks removed) and a few letters
 * that have no decomposition mapped to their usual ASCII spelling (ß -> ss, æ -> ae, ø -> o, ...).
 */

export interface Token {
  /** surface text as typed */
  readonly text: string;
  /** lower-cased, accent-folded form used for matching and features */
  readonly norm: string;
  /** offset of the first character in the input */
  readonly start: number;
  /** offset just past the last character in the input */
  readonly end: number;
}

const NO_SPACE_SCRIPTS =
  '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Thai}\\p{Script=Lao}\\p{Script=Khmer}\\p{Script=Myanmar}';

const TOKEN_RE = new RegExp(
  [
    // numbers with inner separators: 14.04, 12:30, 1,000
    '\\p{N}+(?:[.,:]\\p{N}+)+',
    // one character of a script written without spaces (plus its combining marks)
    `[${NO_SPACE_SCRIPTS}]\\p{M}*`,
    // a run of letters/digits/marks of any other script
    `(?:(?![${NO_SPACE_SCRIPTS}])[\\p{L}\\p{N}\\p{M}])+`,
  ].join('|'),
  'gu',
);

const MARKS_RE = /\p{M}+/gu;

/** Letters that NFKD does not decompose but that users commonly type in an ASCII spelling. */
const SPECIAL_FOLDS: Readonly<Record<string, string>> = {
  ß: 'ss',
  æ: 'ae',
  œ: 'oe',
  ø: 'o',
  đ: 'd',
  ð: 'd',
  þ: 'th',
  ł: 'l',
  ı: 'i',
  ħ: 'h',
};
const SPECIAL_FOLDS_RE = /[ßæœøđðþłıħ]/g;

const foldCache = new Map<string, string>();
const FOLD_CACHE_MAX = 50_000;

/** Lower-case and fold accents of one string (any length). Pure; results of short strings are cached. */
export function foldText(text: string): string {
  const cached = foldCache.get(text);
  if (cached !== undefined) return cached;
  let out = text.toLowerCase();
  // fast path: plain ASCII needs nothing else
  if (!/^[ -~]*$/.test(out)) {
    out = out
      .normalize('NFKD')
      .replace(MARKS_RE, '')
      .replace(SPECIAL_FOLDS_RE, (c) => SPECIAL_FOLDS[c] ?? c);
    // NFKD may have produced upper-case compatibility forms (e.g. from ligatures); lower again, cheaply
    out = out.toLowerCase();
  }
  if (text.length <= 64) {
    if (foldCache.size >= FOLD_CACHE_MAX) foldCache.clear();
    foldCache.set(text, out);
  }
  return out;
}

/** Split a text into tokens with offsets and their folded matching form. */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  TOKEN_RE.lastIndex = 0;
  for (let m = TOKEN_RE.exec(text); m !== null; m = TOKEN_RE.exec(text)) {
    const surface = m[0];
    const norm = foldText(surface);
    if (norm.length === 0) continue; // a run of marks only
    tokens.push({ text: surface, norm, start: m.index, end: m.index + surface.length });
  }
  return tokens;
}

/** Folded token forms of a text (convenience for dictionary values). */
export function normTokens(text: string): string[] {
  return tokenize(text).map((t) => t.norm);
}
