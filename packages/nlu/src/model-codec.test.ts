import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { SerializedEntityExtractor } from './entity-extractor';
import { metroAssistant, travelAssistant } from './example-assistants';
import { loopTurnsDuring } from './loop-turns.test-support';
import {
  decodeModel,
  decodeModelAsync,
  encodeModelBuffer,
  isEncodedModel,
  loadStoredModel,
  storedModelForm,
} from './model-codec';
import { loadModel, modelParts, trainModel } from './train';
import type { NluModel, NluTrainingSet } from './types';

const sentences = [
  'book a train from lyon to paris',
  'i want a flight to berlin tomorrow',
  'order a hamburger',
  'hello',
  'the quantum flux capacitor sings purple',
  '',
  'cancel it',
];

const answersAlike = (a: NluModel, b: NluModel) => {
  for (const t of sentences) expect(a.parse(t)).toEqual(b.parse(t));
};

describe('binary model form', () => {
  const model = trainModel(travelAssistant());

  it('gives back a model that answers as the trained one, with or without its nearest-neighbour indexes', () => {
    for (const indexes of [true, false]) {
      const bytes = encodeModelBuffer(model, { indexes });
      expect(isEncodedModel(bytes)).toBe(true);
      const decoded = decodeModel(bytes);
      expect(decoded.toJSON()).toEqual(model.toJSON());
      answersAlike(decoded, model);
    }
    // the indexes are what the loader would otherwise rebuild
    expect(encodeModelBuffer(model, { indexes: true }).length).toBeGreaterThan(
      encodeModelBuffer(model, { indexes: false }).length,
    );
  });

  it('uses the bytes it is given: the weights and indexes of the decoded model are views, not copies', () => {
    const bytes = encodeModelBuffer(model, { indexes: true });
    const parts = modelParts(decodeModel(bytes), true)!.classifier!;
    expect(parts.weights.buffer).toBe(bytes.buffer);
    expect(parts.indexes![0]!.vals.buffer).toBe(bytes.buffer);
    expect(parts.docs.ids.buffer).toBe(bytes.buffer);
  });

  it('keeps any text exactly (emoji, lone surrogates, accents) and models without intents', () => {
    const set: NluTrainingSet = {
      lang: 'en',
      intents: [
        { id: 'a', name: 'greet', utterances: [[{ text: 'héllo 👋 there' }], [{ text: 'hi \ud800 odd' }]] },
        { id: 'b', name: 'bye', utterances: [[{ text: 'bye now' }], [{ text: 'see you later' }]] },
      ],
      entities: [],
    };
    const small = trainModel(set);
    const decoded = decodeModel(encodeModelBuffer(small));
    expect(decoded.toJSON()).toEqual(small.toJSON());
    expect(decoded.parse('héllo 👋')).toEqual(small.parse('héllo 👋'));
    const empty = trainModel({ lang: 'xx', intents: [], entities: [] });
    expect(decodeModel(encodeModelBuffer(empty)).toJSON()).toEqual(empty.toJSON());
  });

  it('refuses bytes that are not a model, cut short, or damaged, with an error', () => {
    const bytes = encodeModelBuffer(model);
    expect(() => decodeModel(new TextEncoder().encode('{"format":"legacy-agent-nlu"}'))).toThrow(
      /not an encoded NLU model/,
    );
    expect(() => decodeModel(bytes.subarray(0, 1000))).toThrow(/cut short/);
    expect(() => decodeModel(bytes.slice(0, bytes.length - 64))).toThrow(/cut short or damaged/);
    const damaged = bytes.slice();
    damaged.fill(0x20, 12, 40); // the header's JSON
    expect(() => decodeModel(damaged)).toThrow();
  });

  it('decodes from any byte offset (copying only when the arrays would be misaligned)', () => {
    const bytes = encodeModelBuffer(model);
    const shifted = new Uint8Array(bytes.length + 3);
    shifted.set(bytes, 3);
    answersAlike(decodeModel(shifted.subarray(3)), model);
  });

  it('decodeModelAsync yields to the event loop and equals decodeModel', async () => {
    const bytes = encodeModelBuffer(trainModel(metroAssistant()), { indexes: false });
    const { value: decoded, turns } = await loopTurnsDuring(() => decodeModelAsync(bytes, { sliceMs: 0 }));
    expect(turns).toBeGreaterThan(10);
    answersAlike(decoded, decodeModel(bytes));
  });

  it('decodes a large dictionary in steps too: the entity extractor is built a few phrases at a time', async () => {
    const streets = Array.from({ length: 640 }, (_, i) => ({ value: `Lindenstrasse ${i}`, synonyms: [] }));
    const set: NluTrainingSet = {
      lang: 'en',
      intents: [
        {
          id: 'go',
          name: 'go',
          utterances: [
            [{ text: 'take me to ' }, { text: 'Lindenstrasse 4', entity: 'street' }],
            [{ text: 'drive to ' }, { text: 'Lindenstrasse 9', entity: 'street' }],
          ],
        },
        { id: 'hi', name: 'hi', utterances: [[{ text: 'hello' }], [{ text: 'good morning' }]] },
      ],
      entities: [{ name: 'street', automaticallyExtensible: true, useSynonyms: true, values: streets }],
    };
    const bytes = encodeModelBuffer(trainModel(set), { indexes: true });
    const { value: decoded, turns } = await loopTurnsDuring(() => decodeModelAsync(bytes, { sliceMs: 0 }));
    // the dictionary alone: one step per 16 phrases, then per 32 words of its misspelling index
    expect(turns).toBeGreaterThan(640 / 16);
    const direct = decodeModel(bytes);
    for (const t of ['take me to lindenstrasse 77', 'drive to lindenstrase 123', 'hello'])
      expect(decoded.parse(t)).toEqual(direct.parse(t));
  });

  it('gives a retrained model whose entities did not change the dictionaries of the model it replaces', () => {
    // the dictionaries (gazetteer, misspelling index) are most of what adopting a model builds and keeps
    const dictionariesOf = (m: NluModel) =>
      (m as unknown as { extractor: { gazetteer: object } }).extractor.gazetteer;
    const set = travelAssistant();
    const thanks = {
      id: 'thanks',
      name: 'thanks',
      utterances: [[{ text: 'thank you' }], [{ text: 'thanks a lot' }]],
    };
    const retrained = trainModel({ ...set, intents: [...set.intents, thanks] });
    const answering = decodeModel(encodeModelBuffer(model, { indexes: true }));
    const adopted = decodeModel(encodeModelBuffer(retrained, { indexes: true }));
    expect(dictionariesOf(adopted)).toBe(dictionariesOf(answering));
    answersAlike(adopted, retrained);
    // another value: dictionaries of its own, which know it
    const [city, ...others] = set.entities;
    const withOslo = {
      ...set,
      entities: [{ ...city!, values: [...city!.values, { value: 'Oslo', synonyms: [] }] }, ...others],
    };
    const changed = trainModel(withOslo);
    const adoptedChanged = decodeModel(encodeModelBuffer(changed, { indexes: true }));
    expect(dictionariesOf(adoptedChanged)).not.toBe(dictionariesOf(answering));
    answersAlike(adoptedChanged, changed);
    expect(adoptedChanged.parse('i want a flight to oslo').entities).toEqual(
      changed.parse('i want a flight to oslo').entities,
    );
  });
});

describe('stored form', () => {
  it('loads a model stored before the CRF features moved from the header to arrays, answering the same', async () => {
    // the travel assistant's stored form as the engine wrote it until then (features listed in the JSON header)
    const stored = readFileSync(
      path.join(__dirname, 'test-fixtures', 'travel-model-crf-features-in-header.bin.gz'),
    );
    const loaded = await loadStoredModel(stored);
    answersAlike(loaded, trainModel(travelAssistant()));
    // the same model but for the slot classifier: trained since with a window that stops at other occurrences
    // (decision 0092); the stored one keeps its window, and keeps it through the binary form
    const withoutSlots = (m: NluModel) => {
      const json = m.toJSON();
      const entities = json.entities as SerializedEntityExtractor;
      return { json: { ...json, entities: { ...entities, slots: null } }, slots: entities.slots };
    };
    const old = withoutSlots(loaded);
    const fresh = withoutSlots(trainModel(travelAssistant()));
    expect(old.json).toEqual(fresh.json);
    expect(old.slots.context).toBeUndefined();
    expect(fresh.slots.context).toBe('segment');
    expect(decodeModel(encodeModelBuffer(loaded)).toJSON()).toEqual(loaded.toJSON());
  });

  it('is the binary form without indexes, gzipped, and loads into a model that answers the same', async () => {
    const model = trainModel(travelAssistant());
    const stored = await storedModelForm(model);
    expect([stored[0], stored[1]]).toEqual([0x1f, 0x8b]);
    const raw = gunzipSync(stored);
    expect(isEncodedModel(raw)).toBe(true);
    expect(raw.length).toBe(encodeModelBuffer(model, { indexes: false }).length);
    const loaded = await loadStoredModel(stored);
    answersAlike(loaded, model);
    // and is smaller than the JSON text models were stored as before
    expect(stored.length).toBeLessThan(JSON.stringify(model.toJSON()).length);
  });

  it('keeps the spellings of values that fold alike; a model stored without them answers the first listed, as before', async () => {
    const set: NluTrainingSet = {
      lang: 'en',
      entities: [
        {
          name: 'city',
          automaticallyExtensible: false,
          useSynonyms: true,
          values: [
            { value: 'Paris', synonyms: [] },
            { value: 'paris', synonyms: [] },
          ],
        },
      ],
      intents: [
        { id: 'go', name: 'go', utterances: [[{ text: 'go to ' }, { text: 'Paris', entity: 'city' }]] },
      ],
    };
    const model = trainModel(set);
    const value = (m: NluModel, text: string) => m.parse(text).entities.map((e) => e.value);
    const decoded = await loadStoredModel(await storedModelForm(model));
    expect([value(decoded, 'go to paris'), value(decoded, 'go to Paris')]).toEqual([['paris'], ['Paris']]);
    // trained before values that fold alike were told apart
    const json = model.toJSON();
    const { spellings, ...entities } = json.entities as SerializedEntityExtractor;
    expect(spellings).toEqual([[0, 'paris', 'paris']]);
    const before = loadModel({ ...json, entities });
    expect([value(before, 'go to paris'), value(before, 'go to Paris')]).toEqual([['Paris'], ['Paris']]);
    expect(decodeModel(encodeModelBuffer(before)).toJSON()).toEqual(before.toJSON());
  });

  it('models stored as JSON before still load and answer the same', () => {
    const model = trainModel(travelAssistant());
    answersAlike(loadModel(JSON.parse(JSON.stringify(model.toJSON()))), model);
  });
});
