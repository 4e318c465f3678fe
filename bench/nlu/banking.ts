/**
 * BANKING77 through the HTTP API (docs/decisions/0066): an assistant of the 77 intents trained on train.csv and
 * every test sentence sent to /v1/Messages; then an assistant without 10 of the intents, whose test sentences
 * must get the fallback (out-of-scope recall) while the others keep their accuracy.
 *
 *   npx tsx bench/nlu/banking.ts           service defaults (the fallback threshold LEGACY_NLU_THRESHOLD)
 *   npx tsx bench/nlu/banking.ts --also-0  the same at threshold 0 too, for the in-scope drop and the ECE
 *
 * ECE (10 bins) is computed from `intents[0].confidence` at threshold 0, where every answer names its intent.
 * Retraining is held back while the 77 intents are created (LEGACY_RETRAIN_MAX_DELAY_MS), so that the
 * benchmark trains once per assistant; it changes nothing of what a model answers. CPU-heavy: run it once.
 */
import {
  expectedCalibrationError,
  loadBanking77,
  outOfScopeIntents,
  toTrainingSet,
} from '../nlu-engine/banking77';
import { LegacyClient, MESSAGE_LIMITS_OFF, startBenchPlatform } from './api';

const fmt = (x: number) => x.toFixed(3);
const QUIET_LOADING = { LEGACY_RETRAIN_DEBOUNCE_MS: '3000', LEGACY_RETRAIN_MAX_DELAY_MS: '600000' };

interface Answer {
  gold: string | null;
  name: string;
  isFallback: boolean;
  confidence: number;
}

async function run(label: string, env: Record<string, string>) {
  const data = loadBanking77();
  const left = new Set(outOfScopeIntents(data));
  // every test sentence from one address, as fast as answered
  const platform = await startBenchPlatform({ ...QUIET_LOADING, ...MESSAGE_LIMITS_OFF, ...env });
  const api = new LegacyClient(platform.legacyUrl);
  const ask = async (
    clientToken: string,
    sentences: Array<{ text: string; intent: string }>,
    gold: boolean,
  ) => {
    const out: Answer[] = [];
    let n = 0;
    for (const s of sentences) {
      const reply = await api.message(clientToken, { userId: `u${n++}`, text: s.text, lang: 'en' });
      const top = reply.intents[0]!;
      out.push({
        gold: gold ? s.intent : null,
        name: top.name,
        isFallback: top.isFallback,
        confidence: top.confidence,
      });
    }
    return out;
  };
  const assistant = async (name: string, train: typeof data.train) => {
    const bot = await api.newAssistant(name, 'en');
    await api.load(bot.developerToken, toTrainingSet(train));
    const wall = await api.trained(bot.developerToken, 900_000);
    const ms = (await api.training(bot.developerToken)).languages.en?.trainingMs;
    console.log(`${label}: ${name} trained in ${ms} ms (wall until answered ${Math.round(wall)} ms)`);
    return bot;
  };
  try {
    const full = await assistant('banking77', data.train);
    const all = await ask(full.clientToken, data.test, true);
    const partial = await assistant(
      'banking67',
      data.train.filter((s) => !left.has(s.intent)),
    );
    const inScope = await ask(
      partial.clientToken,
      data.test.filter((s) => !left.has(s.intent)),
      true,
    );
    const outOfScope = await ask(
      partial.clientToken,
      data.test.filter((s) => left.has(s.intent)),
      false,
    );
    return { label, all, inScope, outOfScope };
  } finally {
    await platform.stop();
  }
}

const accuracy = (xs: Answer[]) => xs.filter((x) => !x.isFallback && x.name === x.gold).length / xs.length;
const fallbacks = (xs: Answer[]) => xs.filter((x) => x.isFallback).length / xs.length;

async function main() {
  const runs = [await run('service defaults', {})];
  if (process.argv.includes('--also-0'))
    runs.push(await run('LEGACY_NLU_THRESHOLD=0', { LEGACY_NLU_THRESHOLD: '0' }));
  console.log(
    `\n## BANKING77 through POST {legacy_url}/v1/Messages (a fallback answer counts as wrong in scope)`,
  );
  for (const r of runs) {
    console.log(`\n${r.label}`);
    console.log(
      `  accuracy (77 intents, 3,080 sentences): ${fmt(accuracy(r.all))}; fallback answers ${fmt(fallbacks(r.all))}`,
    );
    console.log(
      `  10 intents left out: in-scope accuracy ${fmt(accuracy(r.inScope))}; out-of-scope recall ${fmt(fallbacks(r.outOfScope))}`,
    );
    const zero = runs.find((x) => x.label.includes('=0'));
    if (zero && zero !== r)
      console.log(
        `  in-scope accuracy drop against threshold 0: ${fmt(accuracy(zero.inScope) - accuracy(r.inScope))}`,
      );
    if (r.label.includes('=0')) {
      const ece = expectedCalibrationError(
        r.all.map((x) => ({ confidence: x.confidence, correct: x.name === x.gold })),
      );
      console.log(`  expected calibration error of intents[0].confidence: ${fmt(ece)}`);
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
