import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { travelAssistant } from './example-assistants';
import { loopTurnsDuring } from './loop-turns.test-support';
import { loadStoredModel, storedModelForm } from './model-codec';
import { loadModel, loadModelAsync, trainModel } from './train';
import type { NluTrainingSet, NluUtterancePart } from './types';
import { trainModelInWorker } from './worker-training';

describe('trainModelInWorker', () => {
  it('trains in a worker process and returns a model equivalent to trainModel', async () => {
    const set = travelAssistant();
    let ticks = 0;
    const timer = setInterval(() => {
      ticks++;
    }, 5);
    try {
      const model = await trainModelInWorker(set);
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

  it('runs every thread of the worker `nice` steps below this process', async () => {
    // a whole training at nice 7 (5 s on a quiet machine) may take past jest's 30 s beside other busy processes
    const niceOf = (pid: number, tid: number) =>
      Number(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]);
    const own = os.getPriority();
    let done = false;
    const training = trainModelInWorker(largerAssistant(), { nice: 7 }).finally(() => {
      done = true;
    });
    // the nice values of the worker's threads, sampled while it trains; the last sample is well into training
    let last: number[] = [];
    while (!done) {
      const sample: number[] = [];
      for (const pid of workerPids())
        for (const tid of readdirSync(`/proc/${pid}/task`).map(Number)) {
          try {
            sample.push(niceOf(pid, tid));
          } catch {
            // the thread ended meanwhile
          }
        }
      if (sample.length > 0) last = sample;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await training;
    expect(last.length).toBeGreaterThan(1);
    expect(new Set(last)).toEqual(new Set([Math.min(19, own + 7)]));
  }, 120_000);

  it('rejects when training fails in the worker', async () => {
    await expect(trainModelInWorker({ lang: 'en', intents: null, entities: [] } as never)).rejects.toThrow(
      /training failed in the worker/,
    );
  });

  it('stops the worker, and rejects, when it has not answered within timeoutMs', async () => {
    await expect(trainModelInWorker(largerAssistant(), { timeoutMs: 200 })).rejects.toThrow(
      /the training took longer than 200 ms/,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(workerPids()).toEqual([]);
  });

  it('rejects, naming how it ended, when the worker dies before answering', async () => {
    const training = trainModelInWorker(largerAssistant());
    const deadline = Date.now() + 20_000;
    let pids: number[] = [];
    while (pids.length === 0 && Date.now() < deadline) {
      pids = workerPids();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    await expect(training).rejects.toThrow(/the worker stopped \(signal SIGKILL\) before answering/);
  });
});

/** pids of the training workers `parent` (this process) started (children whose environment marks them) */
function workerPids(parent = process.pid): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        if (Number(stat.split(') ')[1]!.split(' ')[1]) !== parent) return false;
        return readFileSync(`/proc/${pid}/environ`, 'latin1').includes('NLU_TRAINING_WORKER=1');
      } catch {
        return false;
      }
    });
}

/** A generated assistant big enough for loading to be real work: 40 intents of 25 sentences, one entity. */
function largerAssistant(): NluTrainingSet {
  const verbs =
    'book cancel change check order find show send open close track pay rent return reset renew'.split(' ');
  const nouns =
    'flight hotel ticket invoice card loan payment alarm timer song movie light printer parcel'.split(' ');
  const prefixes = ['', 'i want to', 'can you', 'please', 'help me', 'i need to', 'how do i'];
  const cities = ['paris', 'lyon', 'berlin', 'madrid', 'rome', 'new york'];
  const intents: NluTrainingSet['intents'] = [];
  for (let i = 0; i < 40; i++) {
    const verb = verbs[i % verbs.length]!;
    const noun = nouns[(i * 7) % nouns.length]!;
    const utterances: NluUtterancePart[][] = [];
    for (let k = 0; k < 25; k++) {
      const prefix = prefixes[k % prefixes.length]!;
      const text =
        `${prefix} ${verb} the ${noun} ${['now', 'today', 'for me', 'quickly', 'again'][k % 5]} `.trimStart();
      utterances.push(
        k % 3 === 0
          ? [{ text: `${text}in ` }, { text: cities[k % cities.length]!, entity: 'city' }]
          : [{ text }],
      );
    }
    intents.push({ id: `i${i}`, name: `${verb}_${noun}_${i}`, utterances });
  }
  const entities = [
    {
      name: 'city',
      automaticallyExtensible: true,
      useSynonyms: true,
      values: cities.map((value) => ({ value, synonyms: [] })),
    },
  ];
  return { lang: 'en', intents, entities };
}

describe('adopting a model trained in a worker', () => {
  it('loads it in slices: other callbacks run meanwhile, and the model answers as trainModel', async () => {
    // two whole trainings (6 s on a quiet machine) may take past jest's 30 s on a loaded one
    const set = largerAssistant();
    // the longest time the event loop was held, from a timer loop (reported, not asserted: the host is shared)
    const lag = monitorEventLoopDelay({ resolution: 1 });
    lag.enable();
    const model = await trainModelInWorker(set);
    lag.disable();
    const direct = trainModel(set);
    expect(model.toJSON()).toEqual(direct.toJSON());
    // its stored form was made in the worker, and is handed over once (the model does not keep it)
    const stored = await storedModelForm(model);
    expect(await storedModelForm(model)).not.toBe(stored);
    const reloaded = await loadStoredModel(stored);
    for (const t of ['i want to book the flight in paris', 'pay the loan please', 'what is the weather']) {
      expect(model.parse(t)).toEqual(direct.parse(t));
      expect(reloaded.parse(t)).toEqual(direct.parse(t));
    }
    process.stdout.write(
      `  adopting a ${set.intents.length}-intent model: longest event-loop stall ${(lag.max / 1e6).toFixed(1)} ms\n`,
    );
  }, 120_000);

  it('loadModelAsync yields to the event loop between slices and equals loadModel', async () => {
    const json = trainModel(largerAssistant()).toJSON();
    const { value: model, turns } = await loopTurnsDuring(() => loadModelAsync(json, { sliceMs: 0 }));
    // with slices of 0 ms, every unit of work (one sentence, one class index) is followed by a turn of the loop
    expect(turns).toBeGreaterThan(100);
    const sync = loadModel(json);
    expect(model.toJSON()).toEqual(sync.toJSON());
    for (const t of ['cancel the hotel in lyon', 'reset the alarm', 'hello there']) {
      expect(model.parse(t)).toEqual(sync.parse(t));
    }
  });

  it('loadModelAsync rejects what loadModel rejects', async () => {
    await expect(loadModelAsync({ format: 'other' } as never)).rejects.toThrow(/not a serialized NLU model/);
  });
});

describe('a training worker whose service dies', () => {
  it('ends with it instead of training on unseen', async () => {
    // a service (its own process) training a large assistant in a worker, then killed outright
    const service = spawn(
      process.execPath,
      [
        '--require',
        'tsx/cjs',
        '-e',
        `const { trainModelInWorker } = require(${JSON.stringify(path.join(__dirname, 'worker-training.ts'))});
         const { syntheticAssistant } = require(${JSON.stringify(path.join(__dirname, '../../../bench/nlu-engine/synthetic.ts'))});
         trainModelInWorker(syntheticAssistant(150, 20_000, 0).set).then(() => console.log('trained'));`,
      ],
      { stdio: 'ignore' },
    );
    const deadline = Date.now() + 30_000;
    let workers: number[] = [];
    while (workers.length === 0 && Date.now() < deadline) {
      workers = workerPids(service.pid);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(workers).toHaveLength(1);
    // training under way: a second of the worker's CPU time (reading the set takes a fraction of that)
    const cpuSeconds = () => {
      const fields = readFileSync(`/proc/${workers[0]}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return (Number(fields[11]) + Number(fields[12])) / 100;
    };
    while (cpuSeconds() < 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    service.kill('SIGKILL');
    // gone, or dead and waiting for its new parent to reap it (a zombie), well before training could end (tens of
    // seconds more); the 10 s its watchdog may take on a loaded machine are no timing the test asserts
    const ended = () => {
      try {
        return /^State:\s+Z/m.test(readFileSync(`/proc/${workers[0]}/status`, 'utf8'));
      } catch {
        return true;
      }
    };
    const until = Date.now() + 10_000;
    while (!ended() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(ended()).toBe(true);
  }, 40_000);
});
