/**
 * The same measurements for NLP.js (`node-nlp`, defaults, forceNER), for the comparison in
 * docs/decisions/0005-nlu-engine.md. node-nlp is not a workspace dependency: make it resolvable first, e.g.
 *   mkdir -p /tmp/nlpjs && npm install --prefix /tmp/nlpjs node-nlp@4.27.0
 *   NODE_PATH=/tmp/nlpjs/node_modules npx tsx bench/nlu-engine/run.ts --nlpjs
 */
import { performance } from 'node:perf_hooks';
import {
  BRAUN_CORPORA,
  type BraunCorpus,
  type CorpusScore,
  corpusToTrainingSet,
  f1,
  loadBraunCorpus,
  scoreCorpus,
} from './braun';
import { syntheticAssistant } from './synthetic';

interface NlpResult {
  intent: string;
  score: number;
  entities: Array<{ entity: string; utteranceText?: string; sourceText?: string }>;
}
interface NlpManager {
  addDocument(lang: string, text: string, intent: string): void;
  addNamedEntityText(entity: string, option: string, langs: string[], texts: string[]): void;
  train(): Promise<void>;
  process(lang: string, text: string): Promise<NlpResult>;
}
type NlpManagerCtor = new (settings: Record<string, unknown>) => NlpManager;

function loadNodeNlp(): NlpManagerCtor {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (require('node-nlp') as { NlpManager: NlpManagerCtor }).NlpManager;
  } catch {
    throw new Error('node-nlp is not resolvable: see the header of bench/nlu-engine/nlpjs.ts');
  }
}

const newManager = (Ctor: NlpManagerCtor, lang: string): NlpManager =>
  new Ctor({ languages: [lang], forceNER: true, autoSave: false, nlu: { log: false } });

/** NLP.js trained from the same training set; entity values registered as enum entities when `withEntities`. */
async function trainNlpjs(
  Ctor: NlpManagerCtor,
  corpus: BraunCorpus,
  withEntities: boolean,
): Promise<NlpManager> {
  const set = corpusToTrainingSet(corpus);
  const m = newManager(Ctor, set.lang);
  for (const intent of set.intents) {
    for (const u of intent.utterances) m.addDocument(set.lang, u.map((p) => p.text).join(''), intent.name);
  }
  if (withEntities) {
    for (const e of set.entities) {
      for (const v of e.values) m.addNamedEntityText(e.name, v.value, [set.lang], [v.value]);
    }
  }
  await m.train();
  return m;
}

export async function benchNlpjs(): Promise<void> {
  const Ctor = loadNodeNlp();
  console.log('# NLP.js (node-nlp, defaults, forceNER)');
  for (const withEntities of [false, true]) {
    const scores: CorpusScore[] = [];
    for (const name of BRAUN_CORPORA) {
      const corpus = loadBraunCorpus(name);
      const m = await trainNlpjs(Ctor, corpus, withEntities);
      scores.push(
        await scoreCorpus(corpus, async (text) => {
          const r = await m.process(corpus.lang, text);
          const types = new Set(corpusToTrainingSet(corpus).entities.map((e) => e.name));
          return {
            intent: r.intent,
            entities: r.entities
              .filter((e) => types.has(e.entity))
              .map((e) => ({ entity: e.entity, text: e.utteranceText ?? e.sourceText ?? '' })),
          };
        }),
      );
    }
    const tp = scores.reduce((a, s) => a + s.intent.tp, 0);
    const n = scores.reduce((a, s) => a + s.sentences, 0);
    console.log(
      `\n${withEntities ? 'with enum entities' : 'intents only'}: ` +
        scores.map((s) => `${s.corpus} ${(s.intent.tp / s.sentences).toFixed(3)}`).join(', ') +
        `; overall ${(tp / n).toFixed(3)} (${tp}/${n})`,
    );
    const chatbot = scores[0]!;
    if (withEntities) {
      console.log(
        `Chatbot entities F1 ${f1(chatbot.entity).toFixed(3)} (TP ${chatbot.entity.tp}, FP ${chatbot.entity.fp}, ` +
          `FN ${chatbot.entity.fn}); combined F1 ${f1(chatbot.combined).toFixed(3)}`,
      );
    }
  }

  const { set, tests } = syntheticAssistant(100, 2000, 1000);
  const m = newManager(Ctor, set.lang);
  for (const intent of set.intents) {
    for (const u of intent.utterances) m.addDocument(set.lang, u.map((p) => p.text).join(''), intent.id);
  }
  for (const e of set.entities) {
    for (const v of e.values) m.addNamedEntityText(e.name, v.value, [set.lang], [v.value, ...v.synonyms]);
  }
  const t0 = performance.now();
  await m.train();
  const trainMs = performance.now() - t0;
  for (const t of tests.slice(0, 100)) await m.process(set.lang, t.text);
  const lat: number[] = [];
  let correct = 0;
  for (const t of tests) {
    const s = performance.now();
    const r = await m.process(set.lang, t.text);
    lat.push(performance.now() - s);
    if (r.intent === t.intent) correct++;
  }
  lat.sort((a, b) => a - b);
  const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))]!.toFixed(3);
  console.log(
    `\nsynthetic (100 intents, 2,000 utterances): train ms ${Math.round(trainMs)}; process() ms p50 ${q(0.5)}, ` +
      `p90 ${q(0.9)}, p99 ${q(0.99)}; held-out intent accuracy ${(correct / tests.length).toFixed(3)}`,
  );
}
