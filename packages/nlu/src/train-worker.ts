/**
 * Worker-thread entry of `trainModelInWorker`: trains the model from `workerData.set` and posts `model.toJSON()` and
 * its JSON text (both cheap to receive: the parent then loads the model in slices, see `loadModelAsync`).
 * Does nothing when loaded anywhere else (main thread, or a worker started for something else).
 *
 * Word vectors travel as shared memory: the parent passes the ones it has loaded, and the worker posts back the ones
 * it had to load itself, so a process reads them from disk once.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { adoptWordVectors, loadedWordVectors } from './language-resources';
import { trainModel } from './train';
import type { NluTrainingSet } from './types';
import type { SharedWordVectorTable } from './word-vectors';

export const TRAIN_WORKER_KIND = 'legacy-agent-nlu-train';

export interface TrainWorkerData {
  kind: typeof TRAIN_WORKER_KIND;
  set: NluTrainingSet;
  /** word vectors of the set's language already loaded by the parent */
  vectors?: SharedWordVectorTable;
}

export type TrainWorkerMessage =
  | {
      ok: true;
      model: unknown;
      /** JSON.stringify(model), made here so that the parent's thread has nothing to serialize to store it */
      serialized: string;
      vectors?: SharedWordVectorTable;
    }
  | { ok: false; error: string };

const data = workerData as Partial<TrainWorkerData> | null;
if (!isMainThread && parentPort && data?.kind === TRAIN_WORKER_KIND && data.set) {
  let message: TrainWorkerMessage;
  try {
    if (data.vectors) adoptWordVectors(data.vectors);
    const model = trainModel(data.set).toJSON();
    const serialized = JSON.stringify(model);
    const vectors = data.vectors ? null : loadedWordVectors(data.set.lang);
    message = vectors ? { ok: true, model, serialized, vectors } : { ok: true, model, serialized };
  } catch (err) {
    message = { ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) };
  }
  parentPort.postMessage(message);
}
