/**
 * Leave-one-out cross-validation of intent-classifier options on the TRAINING sentences of the Braun 2017 corpora
 * (how the word-vector options were chosen; see docs/decisions/0005-nlu-engine.md). Test sentences are not used
 * unless `--test` asks to print their accuracy next to it, for reference.
 *
 *   npx tsx bench/nlu-engine/cross-validate.ts '[{"vectorWeight":0},{}]' [--test]
 *
 * Each argument object overrides DEFAULT_INTENT_OPTIONS. Each held-out sentence is parsed once by a full model
 * trained without it (so its entity markers are what the extractor finds); then, per configuration, the intent
 * classifier is retrained on the other sentences. Prints accuracy and the mean negative log-likelihood of the gold
 * intent (finer than accuracy on 183 sentences). About a minute, plus ~15 s per configuration on 2 cores.
 */
import {
  DEFAULT_INTENT_OPTIONS,
  IntentClassifier,
  type IntentClassifierOptions,
} from '../../packages/nlu/src/intent-classifier';
import { wordVectorsFor } from '../../packages/nlu/src/language-resources';
import { tokenize } from '../../packages/nlu/src/tokenize';
import { trainModel } from '../../packages/nlu/src/train';
import type { NluModel } from '../../packages/nlu/src/types';
import { BRAUN_CORPORA, corpusToTrainingSet, loadBraunCorpus, sentenceToParts, testSentences } from './braun';

interface Item {
  tokens: string[];
  label: string;
}

/** tokens of a training utterance as trainModel builds them: folded words, then one @entity per tagged part */
function trainingTokens(parts: Array<{ text: string; entity?: string }>): string[] {
  const words = tokenize(parts.map((p) => p.text).join('')).map((t) => t.norm);
  for (const p of parts) if (p.entity && tokenize(p.text).length > 0) words.push(`@${p.entity}`);
  return words;
}

/** tokens of an input as parse() builds them: folded words, then one @entity per extracted entity */
function parseTokens(model: NluModel, text: string): string[] {
  const words = tokenize(text).map((t) => t.norm);
  for (const e of model.parse(text).entities) words.push(`@${e.entity}`);
  return words;
}

function trainClassifier(items: Item[], options: IntentClassifierOptions) {
  const names = [...new Set(items.map((i) => i.label))];
  const classifier = IntentClassifier.train(
    items.map((i) => i.tokens),
    items.map((i) => names.indexOf(i.label)),
    names.length,
    options,
    wordVectorsFor('en'),
  );
  return (tokens: string[]): { top: string; probability: (label: string) => number } => {
    const p = classifier.predict(tokens).probabilities;
    let best = 0;
    for (let c = 1; c < p.length; c++) if (p[c]! > p[best]!) best = c;
    return {
      top: names[best]!,
      probability: (label) => (names.indexOf(label) < 0 ? 0 : p[names.indexOf(label)]!),
    };
  };
}

function main(): void {
  const configs = JSON.parse(process.argv.slice(2).find((a) => a.startsWith('[')) ?? '[{}]') as Array<
    Partial<IntentClassifierOptions>
  >;
  const showTest = process.argv.includes('--test');
  const data = BRAUN_CORPORA.map((name) => {
    const corpus = loadBraunCorpus(name);
    const training = corpus.sentences.filter((s) => s.training);
    const train = training.map((s) => ({ tokens: trainingTokens(sentenceToParts(s)), label: s.intent }));
    const heldOut = training.map((s, i) =>
      parseTokens(
        trainModel(corpusToTrainingSet({ ...corpus, sentences: training.filter((_, j) => j !== i) })),
        s.text,
      ),
    );
    const full = trainModel(corpusToTrainingSet(corpus));
    const test = testSentences(corpus).map((s) => ({ tokens: parseTokens(full, s.text), label: s.intent }));
    return { name, train, heldOut, test };
  });
  const n = data.reduce((a, d) => a + d.train.length, 0);
  for (const config of configs) {
    const options = { ...DEFAULT_INTENT_OPTIONS, ...config };
    const perCorpus: string[] = [];
    let correct = 0;
    let nll = 0;
    const tests: string[] = [];
    let testCorrect = 0;
    for (const d of data) {
      let ok = 0;
      d.train.forEach((item, i) => {
        const r = trainClassifier(
          d.train.filter((_, j) => j !== i),
          options,
        )(d.heldOut[i]!);
        if (r.top === item.label) ok++;
        nll -= Math.log(Math.max(1e-3, r.probability(item.label)));
      });
      perCorpus.push(`${ok}/${d.train.length}`);
      correct += ok;
      if (showTest) {
        const predict = trainClassifier(d.train, options);
        const t = d.test.filter((item) => predict(item.tokens).top === item.label).length;
        tests.push(`${t}/${d.test.length}`);
        testCorrect += t;
      }
    }
    console.log(
      `${JSON.stringify(config)}  LOO ${perCorpus.join(' ')} = ${correct}/${n}, NLL ${(nll / n).toFixed(4)}` +
        (showTest ? `  | test ${tests.join(' ')} = ${testCorrect}/274` : ''),
    );
  }
}

main();
