/**
 * Choosing intent-classifier options without the benchmark's test sentences: BANKING77's TRAINING sentences split
 * 80/20 (seeded, stratified by intent); the classifier of each configuration is trained on the 80 % and scored on
 * the 20 % (top-1 accuracy and the mean negative log-likelihood of the gold intent), with its training CPU time.
 *
 *   npx tsx bench/nlu-engine/select.ts '[{},{"epochs":5}]'
 *
 * Each object overrides DEFAULT_INTENT_OPTIONS. Braun's small corpora: bench/nlu-engine/cross-validate.ts.
 */
import {
  DEFAULT_INTENT_OPTIONS,
  IntentClassifier,
  type IntentClassifierOptions,
} from '../../packages/nlu/src/intent-classifier';
import { wordVectorsFor } from '../../packages/nlu/src/language-resources';
import { createRng, shuffleInPlace } from '../../packages/nlu/src/random';
import { tokenize } from '../../packages/nlu/src/tokenize';
import { loadBanking77 } from './banking77';

function main(): void {
  const configs = JSON.parse(process.argv.slice(2).find((a) => a.startsWith('[')) ?? '[{}]') as Array<
    Partial<IntentClassifierOptions>
  >;
  const data = loadBanking77();
  const names = data.intents;
  const rng = createRng(7);
  const train: Array<{ tokens: string[]; label: number }> = [];
  const valid: Array<{ tokens: string[]; label: number }> = [];
  for (const [label, intent] of names.entries()) {
    const items = shuffleInPlace(
      data.train.filter((s) => s.intent === intent),
      rng,
    ).map((s) => ({ tokens: tokenize(s.text).map((t) => t.norm), label }));
    const held = Math.round(items.length / 5);
    valid.push(...items.slice(0, held));
    train.push(...items.slice(held));
  }
  const table = wordVectorsFor('en');
  for (const config of configs) {
    const options = { ...DEFAULT_INTENT_OPTIONS, ...config };
    const c0 = process.cpuUsage();
    const classifier = IntentClassifier.train(
      train.map((t) => t.tokens),
      train.map((t) => t.label),
      names.length,
      options,
      table,
    );
    const cpu = process.cpuUsage(c0);
    let correct = 0;
    let nll = 0;
    for (const item of valid) {
      const p = classifier.predict(item.tokens).probabilities;
      let best = 0;
      for (let c = 1; c < p.length; c++) if (p[c]! > p[best]!) best = c;
      if (best === item.label) correct++;
      nll -= Math.log(Math.max(1e-4, p[item.label]!));
    }
    console.log(
      `${JSON.stringify(config)}  valid ${correct}/${valid.length} = ${(correct / valid.length).toFixed(4)}, ` +
        `NLL ${(nll / valid.length).toFixed(4)}, training ${((cpu.user + cpu.system) / 1e6).toFixed(2)} s CPU`,
    );
  }
}

main();
