/**
 * In-process benchmark of the legacy agent's NLU engine.
 *
 *   npx tsx bench/nlu-engine/run.ts            Braun 2017 accuracy/F1, confidence separation, synthetic latency
 *   npx tsx bench/nlu-engine/run.ts --no-vectors    the same without the English word vectors (the engine before
 *                                              them; trainModelInWorker still uses them)
 *   npx tsx bench/nlu-engine/run.ts --nlpjs    the same figures for NLP.js (node-nlp must be resolvable, e.g.
 *                                              NODE_PATH=/some/dir/node_modules; it is not a workspace dependency)
 *
 * Bounded: about half a minute on 2 cores (three trainings of the synthetic assistant, 3,000 parses).
 */
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { loadModel, trainModel, trainModelInWorker } from '../../packages/nlu/src';
import { DEFAULT_INTENT_OPTIONS } from '../../packages/nlu/src/intent-classifier';
import { wordVectorsFor } from '../../packages/nlu/src/language-resources';
import { DEFAULT_ENGINE_OPTIONS, type NluEngineOptions } from '../../packages/nlu/src/train';
import {
  addCounts,
  BRAUN_CORPORA,
  type CorpusScore,
  corpusToTrainingSet,
  f1,
  loadBraunCorpus,
  scoreCorpus,
  testSentences,
} from './braun';
import { syntheticAssistant } from './synthetic';

const fmt = (x: number, d = 3): string => x.toFixed(d);
const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
};

function printScores(scores: CorpusScore[], trainMs: number[]): void {
  console.log('\n## Braun 2017 (train on training: true, test on training: false, top intent)');
  console.log('corpus                 train ms  intent acc        entity TP/FP/FN  F1     combined F1');
  scores.forEach((s, i) => {
    console.log(
      `${s.corpus.padEnd(22)} ${String(Math.round(trainMs[i]!)).padStart(8)}  ` +
        `${fmt(s.intent.tp / s.sentences)} (${s.intent.tp}/${s.sentences})`.padEnd(18) +
        `${s.entity.tp}/${s.entity.fp}/${s.entity.fn}`.padStart(15) +
        `  ${fmt(f1(s.entity))}  ${fmt(f1(s.combined))}`,
    );
  });
  const tp = scores.reduce((a, s) => a + s.intent.tp, 0);
  const n = scores.reduce((a, s) => a + s.sentences, 0);
  console.log(`overall intent accuracy: ${fmt(tp / n)} (${tp}/${n})`);
  const chatbot = scores.find((s) => s.corpus === 'ChatbotCorpus');
  if (chatbot) {
    const c = chatbot.combined;
    console.log(
      `Chatbot combined intent+entity micro-F1: ${fmt(f1(c))} (TP ${c.tp}, FP ${c.fp}, FN ${c.fn}); ` +
        `entities ${fmt(f1(chatbot.entity))} (TP ${chatbot.entity.tp}, FP ${chatbot.entity.fp}, FN ${chatbot.entity.fn})`,
    );
  }
  const all = scores.reduce((a, s) => addCounts(a, s.combined), { tp: 0, fp: 0, fn: 0 });
  console.log(`all corpora combined micro-F1: ${fmt(f1(all))}`);
  for (const s of scores) {
    for (const e of s.errors)
      console.log(`  intent error ${s.corpus}: "${e.text}" gold ${e.gold}, got ${e.predicted}`);
  }
}

/** Share of in-domain test sentences / of other corpora's sentences whose top confidence reaches each threshold. */
function confidenceSeparation(
  confidences: Array<{ corpus: string; inDomain: number[]; outOfDomain: number[] }>,
): void {
  console.log(
    '\n## Confidence of the top intent: in-domain test sentences vs the other corpora (out of domain)',
  );
  console.log('corpus                 threshold  in-domain >= t  out-of-domain >= t');
  for (const c of confidences) {
    for (const t of [0.3, 0.4, 0.5, 0.6]) {
      const share = (xs: number[]) => xs.filter((x) => x >= t).length / xs.length;
      console.log(
        `${c.corpus.padEnd(22)} ${fmt(t, 1).padStart(9)}  ${fmt(share(c.inDomain), 2).padStart(14)}  ${fmt(share(c.outOfDomain), 2).padStart(18)}`,
      );
    }
  }
}

/** Load the English word vectors once (what the first English model of a process pays) and report the cost. */
function wordVectorsLoad(): void {
  const rss0 = process.memoryUsage().rss;
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const table = wordVectorsFor('en');
  const cpu = process.cpuUsage(c0);
  const wall = performance.now() - t0;
  if (!table) {
    console.log('word vectors (en): not available');
    return;
  }
  console.log(
    `word vectors (en): ${table.size} words x ${table.dim} (${table.source}); loaded in ${Math.round(wall)} ms wall, ` +
      `${Math.round((cpu.user + cpu.system) / 1000)} ms CPU; RSS +${((process.memoryUsage().rss - rss0) / 2 ** 20).toFixed(0)} MiB`,
  );
}

async function benchEngine(): Promise<void> {
  const noVectors = process.argv.includes('--no-vectors');
  const options: NluEngineOptions = noVectors
    ? { ...DEFAULT_ENGINE_OPTIONS, intents: { ...DEFAULT_INTENT_OPTIONS, vectorWeight: 0 } }
    : DEFAULT_ENGINE_OPTIONS;
  console.log(`# NLU engine (services/legacy-agent/src/nlu)${noVectors ? ', without word vectors' : ''}`);
  if (!noVectors) wordVectorsLoad();
  const corpora = BRAUN_CORPORA.map((name) => loadBraunCorpus(name));
  const scores: CorpusScore[] = [];
  const trainMs: number[] = [];
  const confidences: Array<{ corpus: string; inDomain: number[]; outOfDomain: number[] }> = [];
  for (const corpus of corpora) {
    const t0 = performance.now();
    const model = trainModel(corpusToTrainingSet(corpus), options);
    trainMs.push(performance.now() - t0);
    scores.push(
      await scoreCorpus(corpus, (text) => {
        const r = model.parse(text);
        return { intent: r.intents[0]?.name, entities: r.entities };
      }),
    );
    const topConf = (text: string) => model.parse(text).intents[0]?.confidence ?? 0;
    confidences.push({
      corpus: corpus.name,
      inDomain: testSentences(corpus).map((s) => topConf(s.text)),
      outOfDomain: corpora
        .filter((c) => c !== corpus)
        .flatMap((c) => c.sentences.map((s) => topConf(s.text))),
    });
  }
  printScores(scores, trainMs);
  confidenceSeparation(confidences);

  console.log('\n## Synthetic assistant: 100 intents, 2,000 utterances, 12 entities');
  const { set, tests } = syntheticAssistant(100, 2000, 1000);
  const trainTimes: number[] = [];
  const trainCpu: number[] = [];
  let model = trainModel(set, options);
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    model = trainModel(set, options);
    trainTimes.push(performance.now() - t0);
    trainCpu.push(process.cpuUsage(c0).user / 1000);
  }
  const json = JSON.stringify(model.toJSON());
  const t1 = performance.now();
  const loaded = loadModel(JSON.parse(json));
  const loadMs = performance.now() - t1;
  const t2 = performance.now();
  await trainModelInWorker(set);
  const workerMs = performance.now() - t2;
  for (const t of tests.slice(0, 200)) loaded.parse(t.text); // warm-up
  const lat: number[] = [];
  const cpu: number[] = [];
  const own: number[] = [];
  let correct = 0;
  for (let rep = 0; rep < 3; rep++) {
    for (const t of tests) {
      const s = performance.now();
      const c = process.cpuUsage();
      const r = loaded.parse(t.text);
      const used = process.cpuUsage(c);
      const wallMs = performance.now() - s;
      const cpuMs = (used.user + used.system) / 1000;
      lat.push(wallMs);
      cpu.push(cpuMs);
      own.push(Math.min(wallMs, cpuMs));
      if (rep === 0 && r.intents[0]?.id === t.intent) correct++;
    }
  }
  console.log(
    `trainModel wall ms: ${trainTimes.map((x) => Math.round(x)).join(', ')} (median ${Math.round(pct(trainTimes, 0.5))}); ` +
      `CPU ms (all threads, GC included): ${trainCpu.map((x) => Math.round(x)).join(', ')}; ` +
      `trainModelInWorker wall ms: ${Math.round(workerMs)}`,
  );
  console.log(
    `model JSON: ${(json.length / 1024 / 1024).toFixed(1)} MiB; loadModel ms: ${Math.round(loadMs)}`,
  );
  console.log(
    `parse() ms over ${lat.length} calls: p50 ${fmt(pct(lat, 0.5))}, p90 ${fmt(pct(lat, 0.9))}, ` +
      `p99 ${fmt(pct(lat, 0.99))}, max ${fmt(Math.max(...lat))}`,
  );
  console.log(
    `parse() CPU ms: p50 ${fmt(pct(cpu, 0.5))}, p90 ${fmt(pct(cpu, 0.9))}, p99 ${fmt(pct(cpu, 0.99))} ` +
      `(time on a core, without the waits for one; load average at the end: ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')} on ${cpus().length} cores)`,
  );
  console.log(
    `parse() min(wall, CPU) ms per call: p50 ${fmt(pct(own, 0.5))}, p90 ${fmt(pct(own, 0.9))}, p99 ${fmt(pct(own, 0.99))} ` +
      '(process CPU time counts the GC and compiler threads too, wall time the waits for a core: a call costs at most the smaller)',
  );
  console.log(`held-out synthetic intent accuracy: ${fmt(correct / tests.length)}`);
}

async function main(): Promise<void> {
  if (process.argv.includes('--nlpjs')) {
    const { benchNlpjs } = await import('./nlpjs');
    await benchNlpjs();
    return;
  }
  await benchEngine();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
