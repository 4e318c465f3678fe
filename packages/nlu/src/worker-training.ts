/**
 * `trainModelInWorker`: trains in a worker_threads Worker so that the caller's event loop is never blocked.
 *
 * The worker is started with `eval: true` and a two-line CommonJS program that requires `train-worker` next to this
 * file. In compiled JavaScript that is `train-worker.js` and nothing else is needed. When this file is TypeScript
 * (tsx in development, @swc/jest in tests), the worker first requires `tsx/cjs`, which registers tsx's CommonJS
 * loader in that thread, so `train-worker.ts` and its imports load the same way.
 *
 * The worker transfers the model's binary form (model-codec.ts, nearest-neighbour indexes included) as one
 * ArrayBuffer: receiving it copies nothing, and this thread then only builds the small objects around those arrays
 * (the feature map, in slices of ~3 ms between which other callbacks run). The worker is terminated as soon as it
 * has answered, so its heap is given back.
 */
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { adoptWordVectors, loadedWordVectors } from './language-resources';
import { decodeModelAsync, rememberStoredForm } from './model-codec';
import { TRAIN_WORKER_KIND, TrainWorkerData, TrainWorkerMessage } from './train-worker';
import type { NluModel, NluTrainingSet } from './types';

function workerProgram(): string {
  const isTypeScript = /\.[cm]?tsx?$/.test(__filename);
  const entry = path.join(__dirname, isTypeScript ? 'train-worker.ts' : 'train-worker.js');
  const lines: string[] = [];
  if (isTypeScript) {
    let loader: string;
    try {
      loader = require.resolve('tsx/cjs');
    } catch {
      throw new Error(
        'trainModelInWorker: running from TypeScript sources needs the "tsx" package (tsx/cjs) to load the worker',
      );
    }
    lines.push(`require(${JSON.stringify(loader)});`);
  }
  lines.push(`require(${JSON.stringify(entry)});`);
  return lines.join('\n');
}

export function trainModelInWorker(set: NluTrainingSet): Promise<NluModel> {
  return new Promise<NluModel>((resolve, reject) => {
    let settled = false;
    const finish = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      fn();
    };
    let worker: Worker;
    try {
      const vectors = typeof set?.lang === 'string' ? loadedWordVectors(set.lang) : null;
      const workerData: TrainWorkerData = vectors
        ? { kind: TRAIN_WORKER_KIND, set, vectors }
        : { kind: TRAIN_WORKER_KIND, set };
      worker = new Worker(workerProgram(), {
        eval: true,
        workerData,
        execArgv: [],
        stdout: false,
        stderr: false,
      });
    } catch (err) {
      reject(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    worker.once('message', (msg: TrainWorkerMessage) => {
      finish(() => {
        if (msg.ok) {
          try {
            // the vectors the worker loaded serve this thread too (shared memory, not read again)
            if (msg.vectors) adoptWordVectors(msg.vectors);
          } catch (err) {
            reject(err instanceof Error ? err : new Error(String(err)));
            return;
          }
          // The little left to do (a map of the features) runs in slices of a few ms, so that the requests the
          // previous model answers meanwhile are not held up (docs/decisions/0021, 0081).
          decodeModelAsync(msg.model).then(
            (model) => {
              rememberStoredForm(model, msg.stored);
              resolve(model);
            },
            (err) => reject(err instanceof Error ? err : new Error(String(err))),
          );
        } else reject(new Error(`trainModelInWorker: training failed in the worker: ${msg.error}`));
      });
      void worker.terminate();
    });
    worker.once('error', (err) => finish(() => reject(err)));
    worker.once('exit', (code) =>
      finish(() => reject(new Error(`trainModelInWorker: worker exited with code ${code} before answering`))),
    );
  });
}
