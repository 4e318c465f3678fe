/**
 * Deterministic synthetic assistant for the latency and training-time figures: N intents, M utterances, a dozen
 * entities (lists, synonyms, multi-word values, extensible or not) used in "<preposition> <value>" slots.
 */
import type { NluEntityDef, NluIntentDef, NluTrainingSet } from '../../packages/nlu/src';

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const VERBS = (
  'book cancel change check order find show send open close create delete update track pay transfer schedule reschedule ' +
  'buy sell rent return reset renew report block unblock activate deactivate upgrade download upload share print scan ' +
  'play pause stop start record call text email remind set turn dim increase decrease add remove list compare explain ' +
  'estimate calculate convert translate locate reserve confirm refund register subscribe unsubscribe rate review'
).split(' ');
const NOUNS = (
  'flight hotel table ticket order package invoice bill account password card loan mortgage payment balance statement ' +
  'appointment meeting reminder alarm timer playlist song podcast movie light thermostat door camera printer laptop ' +
  'phone plan subscription delivery parcel refund receipt policy claim insurance car bike taxi train bus route weather ' +
  'forecast recipe restaurant pizza coffee grocery list note document file photo contact address profile settings ' +
  'language currency exchange rate stock portfolio budget expense salary tax holiday vacation doctor prescription pharmacy'
).split(' ');
const PREFIXES = [
  '',
  'i want to',
  'i would like to',
  'can you',
  'could you please',
  'please',
  'help me',
  'i need to',
  'how do i',
  'how can i',
  'is it possible to',
  'let me',
  'hey, can you',
];
const SUFFIXES = ['', '', '', 'please', 'now', 'today', 'for me', 'right away', 'asap', 'thanks', 'again'];
const DETS = ['the', 'my', 'a', 'this', 'our', ''];
const PREPS = ['from', 'to', 'in', 'at', 'for', 'on', 'with', 'near', 'via', 'before', 'after', 'by'];
const SYLLABLES =
  'ka lo mi ra ven tor sul ber gan dri fel mon pas qui zel nor tha ber lin ost wes nik sar ul bre'.split(' ');

function name(r: () => number, syllables = 2 + Math.floor(r() * 2)): string {
  let s = '';
  for (let i = 0; i < syllables; i++) s += SYLLABLES[Math.floor(r() * SYLLABLES.length)];
  return s;
}

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

export interface SyntheticAssistant {
  set: NluTrainingSet;
  /** held-out sentences of the same distribution with their intent id */
  tests: Array<{ text: string; intent: string }>;
}

export function syntheticAssistant(
  numIntents = 100,
  numUtterances = 2000,
  numTests = 1000,
  seed = 2024,
): SyntheticAssistant {
  const r = rng(seed);
  const entities: NluEntityDef[] = [];
  for (let e = 0; e < 12; e++) {
    const useSynonyms = e % 3 === 0;
    const values = new Map<string, string[]>();
    while (values.size < 30) {
      const words = r() < 0.3 ? `${name(r)} ${name(r, 2)}` : name(r);
      if (!values.has(words)) values.set(words, useSynonyms ? [name(r), name(r)] : []);
    }
    entities.push({
      name: `entity${e}`,
      automaticallyExtensible: e % 2 === 0,
      useSynonyms,
      values: [...values].map(([value, synonyms]) => ({ value, synonyms })),
    });
  }
  const intents: Array<
    NluIntentDef & {
      verbs: string[];
      nouns: string[];
      slots: Array<{ entity: number; prep: string; slot: string }>;
    }
  > = [];
  for (let i = 0; i < numIntents; i++) {
    const slots: Array<{ entity: number; prep: string; slot: string }> = [];
    const nSlots = Math.floor(r() * 3);
    for (let k = 0; k < nSlots; k++) {
      const entity = Math.floor(r() * entities.length);
      const prep = pick(r, PREPS);
      slots.push({ entity, prep, slot: `${entities[entity]!.name}_${prep}` });
    }
    intents.push({
      id: `intent-${i}`,
      name: `intent ${i}`,
      utterances: [],
      verbs: [pick(r, VERBS), pick(r, VERBS)],
      nouns: [pick(r, NOUNS), pick(r, NOUNS), pick(r, NOUNS)],
      slots,
    });
  }
  const sentence = (
    intent: (typeof intents)[number],
  ): Array<{ text: string; entity?: string; slot_name?: string }> => {
    const parts: Array<{ text: string; entity?: string; slot_name?: string }> = [];
    const words = [pick(r, PREFIXES), pick(r, intent.verbs), pick(r, DETS), pick(r, intent.nouns)].filter(
      (w) => w,
    );
    let text = words.join(' ');
    for (const s of intent.slots) {
      if (r() < 0.3) continue;
      const def = entities[s.entity]!;
      const v = pick(r, def.values);
      const surface = def.useSynonyms && v.synonyms.length > 0 && r() < 0.5 ? pick(r, v.synonyms) : v.value;
      parts.push({ text: `${text} ${s.prep} ` });
      parts.push({ text: surface, entity: def.name, slot_name: s.slot });
      text = '';
    }
    const suffix = pick(r, SUFFIXES);
    text += suffix ? ` ${suffix}` : '';
    if (text) parts.push({ text });
    return parts;
  };
  for (let u = 0; u < numUtterances; u++) {
    const intent = intents[u % numIntents]!;
    intent.utterances.push(sentence(intent));
  }
  const tests: SyntheticAssistant['tests'] = [];
  for (let u = 0; u < numTests; u++) {
    const intent = intents[Math.floor(r() * numIntents)]!;
    tests.push({
      text: sentence(intent)
        .map((p) => p.text)
        .join(''),
      intent: intent.id,
    });
  }
  return {
    set: {
      lang: 'en',
      intents: intents.map(({ id, name: n, utterances }) => ({ id, name: n, utterances })),
      entities,
    },
    tests,
  };
}
