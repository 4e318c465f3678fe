import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { travelAssistant } from './example-assistants';
import { decodeModel, encodeModelBuffer } from './model-codec';
import { trainModel } from './train';
import type { NluModel, NluTrainingSet } from './types';

/** V8's collector, which jest does not expose (`--expose-gc` set at run time reaches a new context) */
const collect = (): void => {
  setFlagsFromString('--expose-gc');
  runInNewContext('gc')();
};

/** A turn of the event loop (what a WeakRef made or read in this one keeps alive goes with it), then a collection. */
const collectLater = async (): Promise<void> => {
  await new Promise((resolve) => setImmediate(resolve));
  collect();
};

// the gazetteer (with its misspelling index) is most of what adopting a model builds and keeps
const gazetteerOf = (m: NluModel): object =>
  (m as unknown as { extractor: { gazetteer: object } }).extractor.gazetteer;

const withThanks = (set: NluTrainingSet): NluTrainingSet => ({
  ...set,
  intents: [
    ...set.intents,
    { id: 'thanks', name: 'thanks', utterances: [[{ text: 'thank you' }], [{ text: 'thanks a lot' }]] },
  ],
});

describe('dictionaries shared between adopted models', () => {
  const set = travelAssistant();
  const answeringBytes = encodeModelBuffer(trainModel(set), { indexes: true });
  const retrained = trainModel(withThanks(set));
  const retrainedBytes = encodeModelBuffer(retrained, { indexes: true });

  it('a retraining adopted long after the answering model (collections in between) takes its dictionaries', async () => {
    const answering = decodeModel(answeringBytes);
    await collectLater();
    const adopted = decodeModel(retrainedBytes);
    expect(gazetteerOf(adopted)).toBe(gazetteerOf(answering));
    for (const t of ['i want a flight to berlin tomorrow', 'drive to lindenstrase 123', 'hello'])
      expect(adopted.parse(t)).toEqual(retrained.parse(t));
  });

  it('go with the last model that holds them', async () => {
    // dictionaries of its own (another city), which no other test's models hold
    const [city, ...others] = set.entities;
    const withOslo = {
      ...set,
      entities: [{ ...city!, values: [...city!.values, { value: 'Oslo', synonyms: [] }] }, ...others],
    };
    let answering: NluModel | undefined = decodeModel(
      encodeModelBuffer(trainModel(withOslo), { indexes: true }),
    );
    const dictionaries = new WeakRef(gazetteerOf(answering));
    answering = undefined;
    await collectLater();
    expect(dictionaries.deref()).toBeUndefined();
  });

  it('are not shared by an assistant whose entity takes values outside its list and one whose entity does not', async () => {
    // the same values, but misspellings are matched only for the extensible entity
    const closed = {
      ...set,
      entities: set.entities.map((e) => ({ ...e, automaticallyExtensible: false })),
    };
    const answering = decodeModel(answeringBytes);
    await collectLater();
    const adopted = decodeModel(encodeModelBuffer(trainModel(closed), { indexes: true }));
    expect(gazetteerOf(adopted)).not.toBe(gazetteerOf(answering));
  });
});
