import { DEFAULT_INTENT_OPTIONS } from './intent-classifier';
import { primaryLanguage, wordVectorSource, wordVectorsFor } from './language-resources';
import { DEFAULT_ENGINE_OPTIONS, trainModel } from './train';
import type { NluModel, NluTrainingSet } from './types';

const utterances = (...texts: string[]) => texts.map((text) => [{ text }]);

/** Two intents; the test sentences share no word (and hardly a character n-gram) with their training sentences. */
function weatherOrMusic(lang: string): NluTrainingSet {
  return {
    lang,
    entities: [],
    intents: [
      {
        id: 'weather',
        name: 'weather',
        utterances: utterances(
          'will it rain tomorrow',
          'is it sunny today',
          'how cold is it outside',
          'weather forecast please',
        ),
      },
      {
        id: 'music',
        name: 'music',
        utterances: utterances(
          'play some jazz',
          'put on a song',
          'play my playlist',
          'i want to hear the radio',
        ),
      },
    ],
  };
}

const unseen: Array<[string, string]> = [
  ['any thunderstorms expected', 'weather'],
  ['hot and humid', 'weather'],
  ['listen to a mozart concerto', 'music'],
  ['i love guitar and piano', 'music'],
];

/** how much more confident the model is in `intent` than in the other one */
const margin = (model: NluModel, text: string, intent: string): number => {
  const r = model.parse(text).intents;
  const mine = r.find((i) => i.id === intent)!.confidence;
  return mine - Math.max(...r.filter((i) => i.id !== intent).map((i) => i.confidence));
};

const classifierJson = (model: NluModel) =>
  (model.toJSON().intents as { classifier: { wordVectors?: { source: string; words: string[] } } })
    .classifier;

describe('language resources: word vectors', () => {
  it('exist for English, whatever the region, and for no other language', () => {
    expect(primaryLanguage('en-US')).toBe('en');
    expect(primaryLanguage('EN_gb')).toBe('en');
    expect(wordVectorSource('en')).toMatch(/^glove-6b-100d/);
    expect(wordVectorSource('en-GB')).toBe(wordVectorSource('en'));
    for (const lang of ['fr', 'de', 'es', 'zh', 'xx', '']) {
      expect(wordVectorSource(lang)).toBeNull();
      expect(wordVectorsFor(lang)).toBeNull();
    }
    const en = wordVectorsFor('en')!;
    expect(en.dim).toBe(100);
    expect(en.size).toBeGreaterThan(10_000);
    expect(en.rowOf('the')).toBe(0);
    expect(wordVectorsFor('en-US')).toBe(en); // loaded once, shared
  });

  it('are used by English models: words never seen in training still point to the right intent', () => {
    const en = trainModel(weatherOrMusic('en'));
    const stored = classifierJson(en).wordVectors!;
    expect(stored.source).toBe(wordVectorSource('en'));
    expect(stored.words).toEqual(expect.arrayContaining(['rain', 'jazz', 'radio']));
    expect(stored.words).not.toContain('thunderstorms'); // only the training vocabulary is stored
    const without = trainModel(weatherOrMusic('en'), {
      ...DEFAULT_ENGINE_OPTIONS,
      intents: { ...DEFAULT_INTENT_OPTIONS, vectorWeight: 0 },
    });
    for (const [text, intent] of unseen) {
      expect([text, en.parse(text).intents[0]!.id]).toEqual([text, intent]);
      expect(margin(en, text, intent)).toBeGreaterThan(margin(without, text, intent));
    }
  });

  it('are not used for other languages, which answer exactly as a model without them', () => {
    const fr = trainModel(weatherOrMusic('fr'));
    expect(classifierJson(fr).wordVectors).toBeUndefined();
    const enWithout = trainModel(weatherOrMusic('en'), {
      ...DEFAULT_ENGINE_OPTIONS,
      intents: { ...DEFAULT_INTENT_OPTIONS, vectorWeight: 0 },
    });
    expect(classifierJson(enWithout).wordVectors).toBeUndefined();
    for (const [text] of [...unseen, ['will it rain', ''], ['play jazz', '']])
      expect(fr.parse(text)).toEqual(enWithout.parse(text));
  });
});
