/**
 * Worker-thread entry of `trainModelInWorker`: trains the model from `workerData.set` and posts `model.toJSON()`.
 * Does nothing when loaded anywhere else (main thread, or a worker started for something else).
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { trainModel } from './train';
import type { NluTrainingSet } from './types';

export const TRAIN_WORKER_KIND = 'legacy-agent-nlu-train';

export interface TrainWorkerData {
  kind: typeof TRAIN_WORKER_KIND;
  set: NluTrainingSet;
}

export type TrainWorkerMessage = { ok: true; model: unknown } | { ok: false; error: string };

const data = workerData as Partial<TrainWorkerData> | null;
if (!isMainThread && parentPort && data?.kind === TRAIN_WORKER_KIND && data.set) {
  let message: TrainWorkerMessage;
  try {
    message = { ok: true, model: trainModel(data.set).toJSON() };
  } catch (err) {
    message = { ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) };
  }
  parentPort.postMessage(message);
}
