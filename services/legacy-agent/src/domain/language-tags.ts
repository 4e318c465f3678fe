import { isDeepStrictEqual } from 'node:util';

/**
 * A language tag in the case BCP 47 recommends (RFC 5646 2.1.1; tags are case-insensitive): the language
 * lower-case, a two-letter subtag (a region) upper-case, a four-letter one (a script) title-case, the rest
 * lower-case, and everything after a one-letter singleton (an extension, `x-` private use) lower-case:
 * `PT-br` is `pt-BR`, `zh-hant-tw` is `zh-Hant-TW`.
 */
export function canonicalLanguage(tag: string): string {
  let afterSingleton = false;
  return tag
    .split('-')
    .map((subtag, i) => {
      const lower = subtag.toLowerCase();
      if (subtag.length === 1) afterSingleton = true;
      if (i === 0 || afterSingleton) return lower;
      if (subtag.length === 2) return subtag.toUpperCase();
      if (subtag.length === 4) return lower[0]!.toUpperCase() + lower.slice(1);
      return lower;
    })
    .join('-');
}

/** Two keys of one language-keyed map that name one language with different content. */
interface LanguageClash {
  kept: string;
  other: string;
}

/**
 * A language-keyed map with its keys in canonical case. Keys naming one language with equal content become one;
 * with different content, the first keeps it under the canonical key and the others stay as they are, answered
 * in `clashes` (nothing is dropped: the caller refuses, or shows what is stored). The map itself when no key
 * changes.
 */
export function byCanonicalLanguage<V>(map: Record<string, V>): {
  map: Record<string, V>;
  clashes: LanguageClash[];
} {
  const keys = Object.keys(map);
  if (keys.every((key) => canonicalLanguage(key) === key)) return { map, clashes: [] };
  const result: Record<string, V> = {};
  const clashes: LanguageClash[] = [];
  // the key already in canonical case first: it keeps the canonical key when contents differ
  const ordered = [...keys].sort(
    (a, b) => Number(canonicalLanguage(b) === b) - Number(canonicalLanguage(a) === a),
  );
  const firstOf = new Map<string, string>();
  for (const key of ordered) {
    const canonical = canonicalLanguage(key);
    const first = firstOf.get(canonical);
    if (first === undefined) {
      firstOf.set(canonical, key);
      result[canonical] = map[key]!;
    } else if (!isDeepStrictEqual(map[first], map[key])) {
      clashes.push({ kept: first, other: key });
      result[key] = map[key]!;
    }
  }
  return { map: result, clashes };
}

/** The language-keyed maps of an intent and of an entity. */
export const INTENT_LANGUAGE_KEYED = [
  'disambiguationSentence',
  'outputContexts',
  'utterances',
  'parameters',
  'conditionalResponses',
  'settings',
] as const;
export const ENTITY_LANGUAGE_KEYED = ['automaticallyExtensible', 'useSynonyms', 'data'] as const;

/**
 * A stored document as read: its language-keyed `fields` keyed in canonical case (`byCanonicalLanguage`), so data
 * stored before tags were kept canonical reads as data stored since. The document itself when nothing changes.
 */
export function withCanonicalLanguages<T extends object>(doc: T, fields: readonly (keyof T)[]): T {
  let read: T | undefined;
  for (const field of fields) {
    const map = doc[field] as Record<string, unknown> | undefined;
    if (!map) continue;
    const canonical = byCanonicalLanguage(map).map;
    if (canonical !== map) read = { ...(read ?? doc), [field]: canonical };
  }
  return read ?? doc;
}

/** An assistant as read: its `lang` and `languages` in canonical case, a language named twice once. */
export function assistantWithCanonicalLanguages<T extends { lang: string; languages: string[] }>(doc: T): T {
  const lang = canonicalLanguage(doc.lang);
  const languages = [...new Set(doc.languages.map(canonicalLanguage))];
  if (
    lang === doc.lang &&
    languages.length === doc.languages.length &&
    languages.every((l, i) => l === doc.languages[i])
  )
    return doc;
  return { ...doc, lang, languages };
}

/**
 * Browsers and phones name Chinese by region (`zh-TW`, `zh-CN`), which says its script (CLDR's likely subtags):
 * Traditional characters in Taiwan, Hong Kong and Macao, Simplified in mainland China, Singapore and Malaysia.
 */
const CHINESE_SCRIPT_BY_REGION = new Map([
  ['tw', 'hant'],
  ['hk', 'hant'],
  ['mo', 'hant'],
  ['cn', 'hans'],
  ['sg', 'hans'],
  ['my', 'hans'],
]);

/** A tag's script, lower-case: its own (`zh-Hant-TW`, `sr-Latn`), else the one a Chinese tag's region says. */
function scriptOf(tag: string): string | undefined {
  const [primary, ...rest] = tag.toLowerCase().split('-');
  // what follows a singleton (extensions, private use) says nothing of it
  const singleton = rest.findIndex((subtag) => subtag.length === 1);
  const subtags = singleton < 0 ? rest : rest.slice(0, singleton);
  const script = subtags.find((subtag) => /^[a-z]{4}$/.test(subtag));
  if (script !== undefined || primary !== 'zh') return script;
  const region = subtags.find((subtag) => /^[a-z]{2}$/.test(subtag));
  return region === undefined ? undefined : CHINESE_SCRIPT_BY_REGION.get(region);
}

/**
 * The assistant's language that answers a request in `requested` (BCP 47 lookup, RFC 4647 3.4), in any letter
 * case: the tag itself, then the tag without its last subtag (and without a singleton left last), again, while more
 * than the language is left (`fr-CA-u-fw-mon` finds `fr-CA`, `zh-Hant-TW` finds `zh-Hant`); else one of the same
 * language and script, the script a Chinese tag's region says too (`zh-TW` finds `zh-Hant`, `zh-Hant` finds `zh-TW`);
 * else the language alone (`fr-FR` finds `fr`); else one of the same language, `lang` (the default) first (`pt` or
 * `pt-AO` finds `pt-BR`). Undefined when the assistant speaks none of it.
 */
export function lookupLanguage(
  requested: string,
  { lang, languages }: { lang: string; languages: readonly string[] },
): string | undefined {
  const byKey = new Map(languages.map((l) => [l.toLowerCase(), l]));
  const subtags = requested.toLowerCase().split('-');
  while (subtags.length > 1) {
    const found = byKey.get(subtags.join('-'));
    if (found !== undefined) return found;
    subtags.pop();
    if (subtags.at(-1)?.length === 1) subtags.pop();
  }
  const primary = subtags[0]!;
  const sameLanguage = [lang, ...languages].filter((l) => l.toLowerCase().split('-')[0] === primary);
  const script = scriptOf(requested);
  return (
    (script === undefined ? undefined : sameLanguage.find((l) => scriptOf(l) === script)) ??
    byKey.get(primary) ??
    sameLanguage[0]
  );
}
