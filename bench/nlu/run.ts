/**
 * Braun et al. 2017 through the HTTP API: for each corpus an account and an assistant are created through
 * the edge (signup → bot → entities → intents), trained on the `training: true` sentences (entities from
 * the annotated spans), and every test sentence is sent to /v1/Messages. Scored as
 * /work/shared/data/nlu/README.md describes (bench/nlu-engine/braun.ts), with the service's default
 * configuration for every corpus.
 *
 *   flock /tmp/bench.lock npx tsx bench/nlu/run.ts
 *
 * LEGACY_URL=http://host/legacy targets a running platform instead of starting one.
 */
import {
  addCounts,
  BRAUN_CORPORA,
  type CorpusScore,
  corpusToTrainingSet,
  f1,
  loadBraunCorpus,
  scoreCorpus,
} from '../nlu-engine/braun';
import { LegacyClient, MESSAGE_LIMITS_OFF, startBenchPlatform } from './api';

const fmt = (x: number) => x.toFixed(3);

interface RunResult {
  label: string;
  scores: CorpusScore[];
  fallbacks: number;
}

async function runOnce(label: string, env: Record<string, string>): Promise<RunResult> {
  console.log(`\n# ${label}`);
  // every test sentence from one address, as fast as answered
  const platform = await startBenchPlatform({ ...MESSAGE_LIMITS_OFF, ...env });
  const api = new LegacyClient(platform.legacyUrl);
  const scores: CorpusScore[] = [];
  let fallbacks = 0;
  try {
    for (const name of BRAUN_CORPORA) {
      const corpus = loadBraunCorpus(name);
      const set = corpusToTrainingSet(corpus);
      const bot = await api.newAssistant(name, corpus.lang);
      await api.load(bot.developerToken, set);
      const wallMs = await api.trained(bot.developerToken);
      const status = await api.training(bot.developerToken);
      let n = 0;
      const score = await scoreCorpus(corpus, async (text) => {
        const reply = await api.message(bot.clientToken, {
          userId: `tester-${n++}`,
          text,
          lang: corpus.lang,
        });
        const top = reply.intents[0]!;
        // A fallback answer names no intent of the corpus: scored as "no intent predicted".
        if (top.isFallback) fallbacks++;
        return {
          intent: top.isFallback ? undefined : top.name,
          entities: top.entities.map((e) => ({ entity: e.entity, text: e.text })),
        };
      });
      scores.push(score);
      console.log(
        `${name.padEnd(22)} intents ${set.intents.length}, train sentences ${set.intents.reduce((a, i) => a + i.utterances.length, 0)}, ` +
          `training ${status.languages[corpus.lang]?.trainingMs} ms (wall ${Math.round(wallMs)} ms)`,
      );
    }
  } finally {
    await platform.stop();
  }
  return { label, scores, fallbacks };
}

function report({ label, scores, fallbacks }: RunResult) {
  console.log(
    `\n## Braun 2017 through POST {legacy_url}/v1/Messages, ${label} (top intent; a fallback answer = no intent)`,
  );
  console.log('corpus                 intent acc        entity TP/FP/FN  entity F1  combined F1');
  for (const s of scores)
    console.log(
      `${s.corpus.padEnd(22)} ${`${fmt(s.intent.tp / s.sentences)} (${s.intent.tp}/${s.sentences})`.padEnd(18)}` +
        `${`${s.entity.tp}/${s.entity.fp}/${s.entity.fn}`.padStart(15)}  ${fmt(f1(s.entity)).padStart(9)}  ${fmt(f1(s.combined)).padStart(11)}`,
    );
  const tp = scores.reduce((a, s) => a + s.intent.tp, 0);
  const n = scores.reduce((a, s) => a + s.sentences, 0);
  const all = scores.reduce((a, s) => addCounts(a, s.combined), { tp: 0, fp: 0, fn: 0 });
  const chatbot = scores.find((s) => s.corpus === 'ChatbotCorpus')!;
  console.log(`overall intent accuracy: ${fmt(tp / n)} (${tp}/${n}); fallback answers: ${fallbacks}`);
  console.log(
    `Chatbot combined intent+entity micro-F1: ${fmt(f1(chatbot.combined))} (TP ${chatbot.combined.tp}, FP ${chatbot.combined.fp}, FN ${chatbot.combined.fn})`,
  );
  console.log(
    `all corpora combined intent+entity micro-F1: ${fmt(f1(all))} (TP ${all.tp}, FP ${all.fp}, FN ${all.fn})`,
  );
  for (const s of scores)
    for (const e of s.errors)
      console.log(
        `  intent error ${s.corpus}: "${e.text}" gold ${e.gold}, got ${e.predicted ?? '(fallback)'}`,
      );
}

async function main() {
  // The literature scores the top intent, with no rejection: the threshold set to 0. Then the
  // service's defaults, whose fallback threshold turns low-confidence answers into "no intent".
  const runs = [
    await runOnce('LEGACY_NLU_THRESHOLD=0 (classification only, as the literature scores)', {
      LEGACY_NLU_THRESHOLD: '0',
    }),
    await runOnce('service defaults (fallback below LEGACY_NLU_THRESHOLD=0.3)', {}),
  ];
  for (const run of runs) report(run);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
