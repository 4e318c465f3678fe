import v8 from 'node:v8';
import vm from 'node:vm';
import type { EntityDoc, IntentDoc } from '../persistence/collections';
import type { LegacyContext } from './context';
import { fingerprintOf, type NluEngine, toTrainingSet, Understanding } from './understanding';

const base = { assistantId: 'a', createdAt: new Date(0), updatedAt: new Date(0) };

describe('training sets', () => {
  const intents = [
    {
      ...base,
      _id: 'i1',
      name: 'Trip',
      utterances: {
        en: [{ data: [{ text: 'to ' }, { text: 'Paris', entity: 'City' }, { text: ' now' }] }],
        fr: [{ data: [{ text: 'à ' }, { text: 'Paris', entity: 'City', slot_name: 'dest' }] }],
      },
    },
    { ...base, _id: 'i2', name: 'Fallback', isFallback: true, utterances: {} },
  ] as unknown as IntentDoc[];
  const entities = [
    {
      ...base,
      _id: 'e1',
      name: 'City',
      automaticallyExtensible: { en: true, fr: false },
      useSynonyms: { en: true, fr: false },
      data: {
        en: [{ value: 'Paris', synonyms: ['city of light'] }, { value: 'Rome' }],
        fr: [{ value: 'Paris', synonyms: ['x'] }],
      },
    },
  ] as unknown as EntityDoc[];

  it('takes one language: intents with sentences in it, slot names defaulting to the entity, its entity values', () => {
    expect(toTrainingSet('en', intents, entities)).toEqual({
      lang: 'en',
      intents: [
        {
          id: 'i1',
          name: 'Trip',
          utterances: [
            [{ text: 'to ' }, { text: 'Paris', entity: 'City', slot_name: 'City' }, { text: ' now' }],
          ],
        },
      ],
      entities: [
        {
          name: 'City',
          automaticallyExtensible: true,
          useSynonyms: true,
          values: [
            { value: 'Paris', synonyms: ['city of light'] },
            { value: 'Rome', synonyms: [] },
          ],
        },
      ],
    });
  });

  it('ignores synonyms where useSynonyms is false, and changes its fingerprint only with the set', () => {
    const fr = toTrainingSet('fr', intents, entities);
    expect(fr.entities[0]!.values).toEqual([{ value: 'Paris', synonyms: [] }]);
    expect(fr.intents[0]!.utterances[0]![1]).toEqual({ text: 'Paris', entity: 'City', slot_name: 'dest' });
    expect(fingerprintOf(fr)).toBe(fingerprintOf(toTrainingSet('fr', intents, entities)));
    expect(fingerprintOf(fr)).not.toBe(fingerprintOf(toTrainingSet('en', intents, entities)));
    expect(toTrainingSet('de', intents, entities)).toEqual({ lang: 'de', intents: [], entities: [] });
  });
});

describe('waiting for a training', () => {
  it('forgets a waiter that gave up: messages waiting out a long training do not pile up', async () => {
    // a training scheduled far ahead, whose timer never fires here
    const timers = { now: () => 0, set: () => 'never', clear: () => undefined };
    const config = { LEGACY_RETRAIN_DEBOUNCE_MS: 1_000, LEGACY_RETRAIN_MAX_DELAY_MS: 1_000 };
    const understanding = new Understanding({ timers, config } as unknown as LegacyContext, {} as NluEngine);
    understanding.schedule('a');
    expect(understanding.isTraining('a')).toBe(true);
    await Promise.all(Array.from({ length: 50 }, () => understanding.trained('a', 1)));
    const held = (understanding as unknown as { training: Map<string, { waiters: unknown[] }> }).training;
    expect(held.get('a')?.waiters).toHaveLength(0);
  });
});

describe('the models trainings give', () => {
  it('are not kept by the wait for a stop: each retraining left its model in memory for the life of the process', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const ctx = {
      config: { LEGACY_TRAIN_IN_WORKER: true, LEGACY_TRAINING_NICE: 0 },
      metrics: { training: () => undefined },
    };
    const engine = { trainModelInWorker: async () => ({ weights: new Float64Array(1_000) }) };
    const understanding = new Understanding(ctx as unknown as LegacyContext, engine as unknown as NluEngine);
    const train = (
      understanding as unknown as { trainTimed: (set: unknown, s: number) => Promise<object> }
    ).trainTimed.bind(understanding);
    const models: Array<WeakRef<object>> = [];
    for (let i = 0; i < 3; i++) models.push(new WeakRef(await train({}, 60)));
    // a turn for the finished waits' reactions, then a collection
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(models.map((m) => m.deref() === undefined)).toEqual([true, true, true]);
  });
});
