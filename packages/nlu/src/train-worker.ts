/**
 * Entry of the training worker process that `trainModelInWorker` starts (worker-training.ts): reads the training set
 * as one line of JSON on stdin, trains, and writes the model's binary form (model-codec.ts, nearest-neighbour indexes
 * included) and its stored form on file descriptor 3, framed as `u32 header length | header JSON | model | stored`.
 * The header is `{ ok: true, model: <bytes>, stored: <bytes> }` or `{ ok: false, error }`.
 *
 * Runs only in a process started with `NLU_TRAINING_WORKER=1` (the bundler also treats this file as an entry, and
 * nothing else must start training by importing it). Its threads first lower their own priority by `NLU_TRAINING_NICE`:
 * on Linux a thread's nice value is its own, and V8's helper threads (garbage collection, compilation) exist before
 * any JavaScript runs, so each one is reniced through /proc/self/task. When stdin closes (the service stopped or
 * died), the process exits; training itself holds the event loop, so a watchdog thread ends the process as soon as
 * its parent is gone (killed, say), rather than training on unseen for up to the service's training timeout.
 */
import { readdirSync } from 'node:fs';
import { Socket } from 'node:net';
import { getPriority, setPriority } from 'node:os';
import { Worker } from 'node:worker_threads';
import { encodeModelBuffer, storedFormSync } from './model-codec';
import { trainModel } from './train';
import type { NluTrainingSet } from './types';

/** the variable that makes this file train (set by worker-training.ts for the process it starts) */
export const TRAINING_WORKER_ENV = 'NLU_TRAINING_WORKER';
/** how many steps below normal the worker's threads run */
export const TRAINING_NICE_ENV = 'NLU_TRAINING_NICE';

export interface TrainWorkerHeader {
  ok: boolean;
  /** bytes of the model's binary form (encodeModelBuffer with indexes) that follow the header */
  model?: number;
  /** bytes of its stored form (storedFormSync) that follow the model */
  stored?: number;
  error?: string;
}

function lowerPriority(nice: number): void {
  if (!(nice > 0)) return;
  try {
    const threads = process.platform === 'linux' ? readdirSync('/proc/self/task').map(Number) : [0];
    for (const tid of threads) setPriority(tid, Math.min(19, getPriority(tid) + nice));
  } catch {
    // the priority cannot be changed here: training still runs
  }
}

/**
 * A thread that kills this process once its parent is gone (it then has another parent: init or a subreaper).
 * A thread, because training holds the main thread's event loop; `process.ppid` is read afresh each time.
 */
function exitWithParent(): void {
  const watchdog = `
    const { workerData: parent } = require('node:worker_threads');
    setInterval(() => { if (process.ppid !== parent) process.kill(process.pid, 'SIGKILL'); }, 250);`;
  new Worker(watchdog, { eval: true, workerData: process.ppid }).unref();
}

function readLine(stream: NodeJS.ReadableStream): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const onData = (chunk: Buffer) => {
      const end = chunk.indexOf(10);
      if (end < 0) {
        chunks.push(chunk);
        return;
      }
      chunks.push(chunk.subarray(0, end));
      stream.off('data', onData);
      stream.pause();
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    stream.on('data', onData);
    stream.once('end', () => reject(new Error('stdin closed before the training set')));
    stream.once('error', reject);
  });
}

function frame(header: TrainWorkerHeader, ...parts: Uint8Array[]): Uint8Array[] {
  const json = Buffer.from(JSON.stringify(header));
  const length = Buffer.alloc(4);
  length.writeUInt32LE(json.length);
  return [length, json, ...parts];
}

async function main(): Promise<void> {
  lowerPriority(Number(process.env[TRAINING_NICE_ENV] ?? 0));
  exitWithParent();
  const out = new Socket({ fd: 3, readable: false });
  // the service is gone (its end of the pipe closed): nobody to answer
  out.on('error', () => process.exit(1));
  let parts: Uint8Array[];
  try {
    const set = JSON.parse(await readLine(process.stdin)) as NluTrainingSet;
    // the service went away: nothing to answer
    process.stdin.once('end', () => process.exit(0)).resume();
    const trained = trainModel(set);
    const model = encodeModelBuffer(trained, { indexes: true });
    const stored = storedFormSync(trained);
    parts = frame({ ok: true, model: model.byteLength, stored: stored.byteLength }, model, stored);
  } catch (err) {
    parts = frame({ ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  }
  for (const part of parts) out.write(part);
  out.end(() => process.exit(0));
}

if (process.env[TRAINING_WORKER_ENV] === '1') void main();
