/**
 * Worker-thread entry of `trainModelInWorker`: trains the model from `workerData.set` and posts its binary form
 * (model-codec.ts, nearest-neighbour indexes included) as one transferred ArrayBuffer: the parent receives it without
 * a copy or any JSON to parse, and its model's arrays are views into that buffer.
 * Does nothing when loaded anywhere else (main thread, or a worker started for something else).
 *
 * Word vectors travel as shared memory: the parent passes the ones it has loaded, and the worker posts back the ones
 * it had to load itself, so a process reads them from disk once.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { adoptWordVectors, loadedWordVectors } from './language-resources';
import { encodeModelBuffer, storedFormSync } from './model-codec';
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
      /** the model's binary form with its indexes (encodeModelBuffer), transferred */
      model: Uint8Array;
      /** its stored form (storedFormSync: gzipped, without indexes), made here so the parent does not, transferred */
      stored: Uint8Array;
      vectors?: SharedWordVectorTable;
    }
  | { ok: false; error: string };

const data = workerData as Partial<TrainWorkerData> | null;
if (!isMainThread && parentPort && data?.kind === TRAIN_WORKER_KIND && data.set) {
  let message: TrainWorkerMessage;
  try {
    if (data.vectors) adoptWordVectors(data.vectors);
    const trained = trainModel(data.set);
    const model = encodeModelBuffer(trained, { indexes: true });
    const stored = storedFormSync(trained);
    const vectors = data.vectors ? null : loadedWordVectors(data.set.lang);
    message = vectors ? { ok: true, model, stored, vectors } : { ok: true, model, stored };
  } catch (err) {
    message = { ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) };
  }
  parentPort.postMessage(
    message,
    message.ok ? [message.model.buffer as ArrayBuffer, message.stored.buffer as ArrayBuffer] : [],
  );
}
