import { travelAssistant } from './example-assistants';
import { loadedWordVectors } from './language-resources';
import { trainModel } from './train';
import { trainModelInWorker } from './worker-training';

describe('trainModelInWorker', () => {
  it('trains in a worker thread and returns a model equivalent to trainModel', async () => {
    const set = travelAssistant();
    let ticks = 0;
    const timer = setInterval(() => {
      ticks++;
    }, 5);
    try {
      expect(loadedWordVectors('en')).toBeNull();
      const model = await trainModelInWorker(set);
      // the worker loaded the English word vectors and handed them over as shared memory
      expect(loadedWordVectors('en')?.data.buffer).toBeInstanceOf(SharedArrayBuffer);
      const direct = trainModel(set);
      expect(model.toJSON()).toEqual(direct.toJSON());
      for (const t of ['book a train from lyon to paris', 'order a hamburger', 'hello']) {
        expect(model.parse(t)).toEqual(direct.parse(t));
      }
      // the event loop kept running while the worker trained
      expect(ticks).toBeGreaterThan(0);
    } finally {
      clearInterval(timer);
    }
  });

  it('rejects when training fails in the worker', async () => {
    await expect(trainModelInWorker({ lang: 'en', intents: null, entities: [] } as never)).rejects.toThrow(
      /training failed in the worker/,
    );
  });
});
