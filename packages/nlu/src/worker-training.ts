/**
 * `trainModelInWorker`: trains in a worker process of its own, so that neither the caller's event loop nor its memory
 * carries the training (docs/decisions/0086).
 *
 * The worker is `train-worker` next to this file, run by the same `node`: `train-worker.js` in the service bundle, or
 * `train-worker.ts` under tsx's CommonJS hook when this file is TypeScript (tsx in development, @swc/jest in tests).
 * It gets the training set as one line of JSON on stdin and writes the model's binary form (model-codec.ts,
 * nearest-neighbour indexes included) and its stored form back on a pipe; this thread copies them as they arrive
 * into two buffers of the announced sizes, then builds the small objects around those arrays in slices of ~3 ms.
 * Everything training allocated goes back to the system when the worker exits, and all its threads (V8's garbage
 * collection helpers included) run `nice` steps below the caller's.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import { wordVectorsFor } from './language-resources';
import { decodeModelAsync, rememberStoredForm } from './model-codec';
import { TRAINING_NICE_ENV, TRAINING_WORKER_ENV, type TrainWorkerHeader } from './train-worker';
import type { NluModel, NluTrainingSet } from './types';

export interface WorkerTrainingOptions {
  /** how many steps below this process's priority the worker runs (0: the same) */
  nice?: number;
  /** the worker is stopped, and the training fails, when it has not answered within this (none: no limit) */
  timeoutMs?: number;
}

/** what the worker keeps of its stderr for an error message */
const STDERR_TAIL = 4096;

function workerArguments(): string[] {
  const isTypeScript = /\.[cm]?tsx?$/.test(__filename);
  const entry = path.join(__dirname, isTypeScript ? 'train-worker.ts' : 'train-worker.js');
  if (!isTypeScript) return [entry];
  let loader: string;
  try {
    loader = require.resolve('tsx/cjs');
  } catch {
    throw new Error(
      'trainModelInWorker: running from TypeScript sources needs the "tsx" package (tsx/cjs) to load the worker',
    );
  }
  return ['--require', loader, entry];
}

/** Reads the worker's answer: `u32 header length | header JSON | model | stored`, copied into buffers as it arrives. */
function readAnswer(
  stream: Readable,
): Promise<{ header: TrainWorkerHeader; model: Uint8Array; stored: Uint8Array }> {
  return new Promise((resolve, reject) => {
    let pending: Buffer = Buffer.alloc(0);
    let header: TrainWorkerHeader | null = null;
    let body: Uint8Array | null = null;
    let filled = 0;
    const onData = (chunk: Buffer) => {
      if (!header) {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
        if (pending.length < 4) return;
        const length = pending.readUInt32LE(0);
        if (pending.length < 4 + length) return;
        try {
          header = JSON.parse(pending.toString('utf8', 4, 4 + length)) as TrainWorkerHeader;
        } catch {
          fail(new Error('trainModelInWorker: unreadable answer from the worker'));
          return;
        }
        // one allocation for both parts: the model's arrays are views into it, aligned as the codec needs
        body = new Uint8Array(header.ok ? (header.model ?? 0) + (header.stored ?? 0) : 0);
        chunk = pending.subarray(4 + length);
      }
      const room = body!.length - filled;
      body!.set(chunk.length > room ? chunk.subarray(0, room) : chunk, filled);
      filled += Math.min(room, chunk.length);
    };
    const fail = (err: Error) => {
      stream.off('data', onData);
      reject(err);
    };
    stream.on('data', onData);
    stream.once('error', fail);
    stream.once('end', () => {
      if (!header || !body || filled < body.length) {
        fail(new Error('trainModelInWorker: the worker ended before its answer was complete'));
        return;
      }
      const split = header.model ?? 0;
      resolve({ header, model: body.subarray(0, split), stored: body.subarray(split) });
    });
  });
}

export function trainModelInWorker(
  set: NluTrainingSet,
  options: WorkerTrainingOptions = {},
): Promise<NluModel> {
  return new Promise<NluModel>((resolve, reject) => {
    let child: ChildProcess;
    let input: string;
    try {
      input = `${JSON.stringify(set)}\n`;
      // the model needs its language's word vectors here too: loaded now (once per process), not while adopting it
      if (typeof set?.lang === 'string') wordVectorsFor(set.lang);
      child = spawn(process.execPath, workerArguments(), {
        env: { ...process.env, [TRAINING_WORKER_ENV]: '1', [TRAINING_NICE_ENV]: String(options.nice ?? 0) },
        stdio: ['pipe', 'ignore', 'pipe', 'pipe'],
      });
    } catch (err) {
      reject(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    // a service that exits takes its training with it
    const killChild = () => child.kill('SIGKILL');
    process.once('exit', killChild);
    let timedOut = false;
    const deadline =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            killChild();
          }, options.timeoutMs);
    // what the worker prints (a warning, a crash) goes to this process's stderr, as a worker thread's did
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (text: string) => {
      process.stderr.write(text);
      stderr = (stderr + text).slice(-STDERR_TAIL);
    });
    child.stdin!.on('error', () => undefined); // a worker that died is reported by its exit
    child.stdin!.write(input); // kept open: the worker exits when it closes
    const results = child.stdio[3] as Readable;
    const exited = new Promise<string>((done) => {
      child.once('error', (err) => {
        results.destroy(err); // no answer will come
        done(err.message);
      });
      child.once('exit', (code, signal) => done(signal ? `signal ${signal}` : `code ${code}`));
    });
    // an answer cut short says how the worker ended, and what it printed last
    const answer = readAnswer(results).catch(async () => {
      const how = await exited;
      if (timedOut)
        throw new Error(`trainModelInWorker: the training took longer than ${options.timeoutMs} ms`);
      throw new Error(
        `trainModelInWorker: the worker stopped (${how}) before answering${stderr ? `: ${stderr.trim()}` : ''}`,
      );
    });
    Promise.all([answer, exited])
      .then(async ([{ header, model, stored }]) => {
        if (!header.ok) throw new Error(`trainModelInWorker: training failed in the worker: ${header.error}`);
        const trained = await decodeModelAsync(model);
        rememberStoredForm(trained, stored);
        return trained;
      })
      .then(resolve, reject)
      .finally(() => {
        clearTimeout(deadline);
        process.off('exit', killChild);
        child.stdin!.end();
      });
  });
}
