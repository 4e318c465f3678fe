/**
 * Training and loading of a language model of the NLU engine: intent classifier + entity extractor.
 */

import {
  backgroundSentences,
  type CalibrationExample,
  Calibrator,
  type ConfidenceFeatures,
  calibrationRounds,
} from './calibration';
import {
  DEFAULT_ENTITY_OPTIONS,
  EntityExtractor,
  EntityExtractorOptions,
  type EntityExtractorParts,
  SerializedEntityExtractor,
} from './entity-extractor';
import {
  DEFAULT_INTENT_OPTIONS,
  IntentClassifier,
  IntentClassifierOptions,
  IntentClassifierParts,
  type IntentPrediction,
  SerializedIntentClassifier,
} from './intent-classifier';
import { wordVectorsFor } from './language-resources';
import { runSteps, runStepsInSlices, type Steps } from './steps';
import { tokenize } from './tokenize';
import type { NluModel, NluResult, NluTrainingSet, SerializedModel } from './types';
import type { WordVectorTable } from './word-vectors';

export const MODEL_FORMAT = 'legacy-agent-nlu' as const;
export const MODEL_VERSION = 1;
/**
 * What training makes of a set, as a number: raised whenever a change to training changes what a model answers,
 * so that a service retrains the models it stored before (2: slots by their own context, closed entities;
 * decision 0092; 3: the spellings of values that fold alike, each extracted as typed). Models of an older revision
 * still load and answer as they did.
 */
export const TRAINING_REVISION = 3;

export interface NluEngineOptions {
  intents: IntentClassifierOptions;
  entities: EntityExtractorOptions;
  /** fit the confidence calibrator (calibration.ts); off: confidence = probability × in-domain factor */
  calibrate: boolean;
}

export const DEFAULT_ENGINE_OPTIONS: NluEngineOptions = {
  intents: DEFAULT_INTENT_OPTIONS,
  entities: DEFAULT_ENTITY_OPTIONS,
  calibrate: true,
};

interface SerializedIntents {
  /** intents that can be predicted (those with at least one non-empty utterance), in class order */
  classes: Array<{ id: string; name: string }>;
  classifier: SerializedIntentClassifier | null;
  /** weights of the confidence calibrator (absent in models made before it: they answer as they did) */
  calibrator?: number[];
}

/** A model as model-codec.ts moves and stores it: small values as JSON, the classifier as typed arrays. */
export interface ModelParts {
  lang: string;
  classes: Array<{ id: string; name: string }>;
  classifier: IntentClassifierParts | null;
  calibrator?: number[];
  entities: EntityExtractorParts;
}

class TrainedModel implements NluModel {
  constructor(
    readonly lang: string,
    private readonly classes: ReadonlyArray<{ id: string; name: string }>,
    private readonly classifier: IntentClassifier | null,
    private readonly extractor: EntityExtractor,
    private readonly calibrator: Calibrator | null,
  ) {}

  /** see model-codec.ts (`indexes`: include the nearest-neighbour indexes, else they are rebuilt when loaded) */
  toParts(indexes: boolean): ModelParts {
    return {
      lang: this.lang,
      classes: this.classes.map((c) => ({ ...c })),
      classifier: this.classifier?.toParts(indexes) ?? null,
      ...(this.calibrator ? { calibrator: this.calibrator.toJSON() } : {}),
      entities: this.extractor.toParts(),
    };
  }

  parse(text: string): NluResult {
    const input = typeof text === 'string' ? text : '';
    const tokens = tokenize(input);
    const entities = this.extractor.extract(input, tokens);
    const intents: NluResult['intents'] = [];
    if (this.classifier) {
      const prediction = this.classifier.predict(
        intentTokens(
          tokens.map((t) => t.norm),
          entities,
        ),
      );
      const { probabilities } = prediction;
      // calibrated: the top intent's confidence is the probability that it is right; the others keep their share
      // of the softmax relative to it. Models without a calibrator answer as they always did.
      let factor = prediction.inDomain;
      if (tokens.length === 0)
        factor = 0; // nothing was said: no intent is meant
      else if (this.calibrator) {
        const { top } = topTwo(probabilities);
        factor = top > 0 ? this.calibrator.confidence(confidenceFeatures(prediction)) / top : 0;
      }
      this.classes.forEach((c, i) => {
        intents.push({ id: c.id, name: c.name, confidence: clamp01(probabilities[i]! * factor) });
      });
      // stable: equal confidences keep the training order
      intents.sort((a, b) => b.confidence - a.confidence);
    }
    return { intents, entities };
  }

  toJSON(): SerializedModel {
    const intents: SerializedIntents = {
      classes: this.classes.map((c) => ({ ...c })),
      classifier: this.classifier?.toJSON() ?? null,
      ...(this.calibrator ? { calibrator: this.calibrator.toJSON() } : {}),
    };
    return {
      format: MODEL_FORMAT,
      version: MODEL_VERSION,
      lang: this.lang,
      intents,
      entities: this.extractor.toJSON(),
    };
  }
}

/** The parts of a model made by this module (null for any other NluModel). */
export function modelParts(model: NluModel, indexes: boolean): ModelParts | null {
  return model instanceof TrainedModel ? model.toParts(indexes) : null;
}

/** A model from its parts, as resumable steps (see loadModelAsync). */
export function* modelFromPartsSteps(parts: ModelParts): Steps<NluModel> {
  const classifier = parts.classifier
    ? yield* IntentClassifier.fromPartsSteps(
        parts.classifier,
        parts.classifier.wordVectors ? wordVectorsFor(parts.lang) : null,
      )
    : null;
  if (parts.classifier && parts.classes.length !== parts.classifier.numClasses)
    throw new Error('loadModel: classes do not match the classifier');
  yield;
  const extractor = yield* EntityExtractor.fromJSONSteps(parts.entities);
  const calibrator = parts.calibrator ? Calibrator.fromJSON(parts.calibrator) : null;
  return new TrainedModel(parts.lang, parts.classes, classifier, extractor, calibrator);
}

/** Words of an utterance for the intent classifier, plus one "@entity" marker per entity occurrence. */
function intentTokens(words: string[], entities: ReadonlyArray<{ entity: string }>): string[] {
  for (const e of entities) words.push(`@${e.entity}`);
  return words;
}

function topTwo(p: ArrayLike<number>): { top: number; second: number; arg: number } {
  let top = -1;
  let second = 0;
  let arg = -1;
  for (let c = 0; c < p.length; c++) {
    const v = p[c]!;
    if (v > top) {
      second = Math.max(second, top);
      top = v;
      arg = c;
    } else if (v > second) second = v;
  }
  return { top: Math.max(0, top), second, arg };
}

/** What the calibrator reads of a prediction. */
function confidenceFeatures(p: IntentPrediction): ConfidenceFeatures {
  const { top, second } = topTwo(p.probabilities);
  return {
    top,
    second,
    similarity: p.similarity,
    energy: p.energy,
    coverage: p.coverage,
    // a classifier of one intent has no second: its probabilities say nothing
    single: p.probabilities.length < 2,
  };
}

/**
 * The calibrator of a classifier trained on `docs`/`labels`: auxiliary classifiers trained on part of the data with
 * some intents left out (see calibration.ts) give right, wrong and out-of-scope examples of the features.
 */
function calibrationExamples(
  docs: readonly string[][],
  labels: readonly number[],
  numClasses: number,
  options: NluEngineOptions['intents'],
  table: WordVectorTable | null,
): CalibrationExample[] {
  const examples: CalibrationExample[] = [];
  const background = backgroundSentences(table, BACKGROUND_SENTENCES, options.seed);
  for (const round of calibrationRounds(labels, numClasses, options.seed)) {
    const compact = new Map<number, number>();
    for (const i of round.train) if (!compact.has(labels[i]!)) compact.set(labels[i]!, compact.size);
    const aux = IntentClassifier.train(
      round.train.map((i) => docs[i]!),
      round.train.map((i) => compact.get(labels[i]!)!),
      compact.size,
      options,
      table,
    );
    const original = [...compact.keys()];
    const inScope: CalibrationExample[] = [];
    const outOfScope: CalibrationExample[] = [];
    for (const [list, into] of [
      [round.inScope, inScope],
      [round.outOfScope, outOfScope],
    ] as const) {
      for (const i of list) {
        const p = aux.predict(docs[i]!);
        into.push({
          features: confidenceFeatures(p),
          correct: original[topTwo(p.probabilities).arg] === labels[i],
        });
      }
    }
    const unrelated: CalibrationExample[] = background.map((words) => ({
      features: confidenceFeatures(aux.predict(words)),
      correct: false,
    }));
    // out-of-scope examples weigh, all together, a share of the in-scope ones
    const n = Math.max(1, inScope.length);
    for (const e of outOfScope) e.weight = (OUT_OF_SCOPE_SHARE * n) / outOfScope.length;
    for (const e of unrelated) e.weight = (BACKGROUND_SHARE * n) / unrelated.length;
    examples.push(...inScope, ...outOfScope, ...unrelated);
  }
  return examples;
}

/** generic sentences (from the language's word list) scored as unrelated text in each calibration round */
const BACKGROUND_SENTENCES = 200;

/** total weight of the sentences of left-out intents, relative to the in-scope examples */
const OUT_OF_SCOPE_SHARE = 0.03;
/** total weight of the background sentences, relative to the in-scope examples */
const BACKGROUND_SHARE = 2;

function clamp01(v: number): number {
  return v < 0 ? 0 : v > 1 ? 1 : Number.isFinite(v) ? v : 0;
}

/** The training utterances of the intent classifier: tokens (with entity markers) and class of each. */
function intentDocuments(set: NluTrainingSet): {
  classes: Array<{ id: string; name: string }>;
  docs: string[][];
  labels: number[];
} {
  const classes: Array<{ id: string; name: string }> = [];
  const docs: string[][] = [];
  const labels: number[] = [];
  for (const intent of set.intents) {
    let cls = -1;
    for (const utterance of intent.utterances) {
      const words = tokenize(utterance.map((p) => p.text ?? '').join('')).map((t) => t.norm);
      if (words.length === 0) continue;
      const tokens = intentTokens(
        words,
        utterance
          .filter((p) => p.entity && tokenize(p.text ?? '').length > 0)
          .map((p) => ({ entity: p.entity! })),
      );
      if (cls < 0) {
        cls = classes.length;
        classes.push({ id: intent.id, name: intent.name });
      }
      docs.push(tokens);
      labels.push(cls);
    }
  }
  return { classes, docs, labels };
}

/**
 * The calibration examples a training would fit its calibrator on (benchmarks use them to fit the prior, see
 * bench/nlu-engine/calibration.ts --prior).
 */
export function calibrationExamplesOf(
  set: NluTrainingSet,
  options: NluEngineOptions = DEFAULT_ENGINE_OPTIONS,
): CalibrationExample[] {
  const { classes, docs, labels } = intentDocuments(set);
  if (classes.length === 0) return [];
  const table = options.intents.vectorWeight > 0 ? wordVectorsFor(set.lang) : null;
  return calibrationExamples(docs, labels, classes.length, options.intents, table);
}

/**
 * Train a model for one language. Synchronous and deterministic (same set, same options => same model).
 * `options` is for benchmarks and tests; the defaults are the tuned configuration.
 */
export function trainModel(
  set: NluTrainingSet,
  options: NluEngineOptions = DEFAULT_ENGINE_OPTIONS,
): NluModel {
  const { classes, docs, labels } = intentDocuments(set);
  const table = options.intents.vectorWeight > 0 ? wordVectorsFor(set.lang) : null;
  const classifier =
    classes.length > 0 ? IntentClassifier.train(docs, labels, classes.length, options.intents, table) : null;
  const calibrator =
    classifier && options.calibrate
      ? Calibrator.fit(calibrationExamples(docs, labels, classes.length, options.intents, table))
      : null;
  const extractor = EntityExtractor.train(
    set.entities,
    set.intents.flatMap((i) => i.utterances),
    options.entities,
  );
  return new TrainedModel(set.lang, classes, classifier, extractor, calibrator);
}

/** Rebuild a model from `model.toJSON()` (gives the same answers as the trained model). */
export function loadModel(json: SerializedModel): NluModel {
  return runSteps(loadModelSteps(json));
}

export interface LoadModelAsyncOptions {
  /** longest stretch of work between two yields to the event loop (ms); default 3 */
  sliceMs?: number;
}

/**
 * Same as `loadModel`, spread over event-loop turns: the work runs in slices of about `sliceMs` with a
 * `setImmediate` between them, so that requests served meanwhile (by the previous model) wait at most one slice.
 * A 100-intent, 2,000-utterance model takes ~100 ms of work, i.e. some 30–50 slices.
 */
export async function loadModelAsync(
  json: SerializedModel,
  options: LoadModelAsyncOptions = {},
): Promise<NluModel> {
  return runStepsInSlices(loadModelSteps(json), options.sliceMs);
}

/** The loading as resumable steps (see IntentClassifier.fromJSONSteps). */
function* loadModelSteps(json: SerializedModel): Steps<NluModel> {
  if (!json || json.format !== MODEL_FORMAT) throw new Error('loadModel: not a serialized NLU model');
  if (json.version !== MODEL_VERSION)
    throw new Error(`loadModel: unsupported model version ${String(json.version)}`);
  const intents = json.intents as SerializedIntents;
  const classifier = intents.classifier
    ? yield* IntentClassifier.fromJSONSteps(
        intents.classifier,
        intents.classifier.wordVectors ? wordVectorsFor(json.lang) : null,
      )
    : null;
  yield;
  const extractor = yield* EntityExtractor.fromJSONSteps(json.entities as SerializedEntityExtractor);
  const calibrator = intents.calibrator ? Calibrator.fromJSON(intents.calibrator) : null;
  return new TrainedModel(json.lang, intents.classes, classifier, extractor, calibrator);
}
