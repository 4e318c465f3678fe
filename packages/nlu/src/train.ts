/**
 * Training and loading of a language model of the NLU engine: intent classifier + entity extractor.
 */

import { performance } from 'node:perf_hooks';
import {
  DEFAULT_ENTITY_OPTIONS,
  EntityExtractor,
  EntityExtractorOptions,
  SerializedEntityExtractor,
} from './entity-extractor';
import {
  DEFAULT_INTENT_OPTIONS,
  IntentClassifier,
  IntentClassifierOptions,
  runSteps,
  SerializedIntentClassifier,
} from './intent-classifier';
import { wordVectorsFor } from './language-resources';
import { tokenize } from './tokenize';
import type { NluModel, NluResult, NluTrainingSet, SerializedModel } from './types';

export const MODEL_FORMAT = 'legacy-agent-nlu' as const;
export const MODEL_VERSION = 1;

export interface NluEngineOptions {
  intents: IntentClassifierOptions;
  entities: EntityExtractorOptions;
}

export const DEFAULT_ENGINE_OPTIONS: NluEngineOptions = {
  intents: DEFAULT_INTENT_OPTIONS,
  entities: DEFAULT_ENTITY_OPTIONS,
};

interface SerializedIntents {
  /** intents that can be predicted (those with at least one non-empty utterance), in class order */
  classes: Array<{ id: string; name: string }>;
  classifier: SerializedIntentClassifier | null;
}

class TrainedModel implements NluModel {
  constructor(
    readonly lang: string,
    private readonly classes: ReadonlyArray<{ id: string; name: string }>,
    private readonly classifier: IntentClassifier | null,
    private readonly extractor: EntityExtractor,
    /** JSON text of toJSON() when it is already known (made by the training worker) */
    private serialized?: string,
  ) {}

  parse(text: string): NluResult {
    const input = typeof text === 'string' ? text : '';
    const tokens = tokenize(input);
    const entities = this.extractor.extract(input, tokens);
    const intents: NluResult['intents'] = [];
    if (this.classifier) {
      const { probabilities, inDomain } = this.classifier.predict(
        intentTokens(
          tokens.map((t) => t.norm),
          entities,
        ),
      );
      this.classes.forEach((c, i) => {
        intents.push({ id: c.id, name: c.name, confidence: clamp01(probabilities[i]! * inDomain) });
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
    };
    return {
      format: MODEL_FORMAT,
      version: MODEL_VERSION,
      lang: this.lang,
      intents,
      entities: this.extractor.toJSON(),
    };
  }

  serialize(): string {
    // kept once made: a model never changes, and its text is what gets stored
    this.serialized ??= JSON.stringify(this.toJSON());
    return this.serialized;
  }
}

/** Words of an utterance for the intent classifier, plus one "@entity" marker per entity occurrence. */
function intentTokens(words: string[], entities: ReadonlyArray<{ entity: string }>): string[] {
  for (const e of entities) words.push(`@${e.entity}`);
  return words;
}

function clamp01(v: number): number {
  return v < 0 ? 0 : v > 1 ? 1 : Number.isFinite(v) ? v : 0;
}

/**
 * Train a model for one language. Synchronous and deterministic (same set, same options => same model).
 * `options` is for benchmarks and tests; the defaults are the tuned configuration.
 */
export function trainModel(
  set: NluTrainingSet,
  options: NluEngineOptions = DEFAULT_ENGINE_OPTIONS,
): NluModel {
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
  const classifier =
    classes.length > 0
      ? IntentClassifier.train(
          docs,
          labels,
          classes.length,
          options.intents,
          options.intents.vectorWeight > 0 ? wordVectorsFor(set.lang) : null,
        )
      : null;
  const extractor = EntityExtractor.train(
    set.entities,
    set.intents.flatMap((i) => i.utterances),
    options.entities,
  );
  return new TrainedModel(set.lang, classes, classifier, extractor);
}

/** Rebuild a model from `model.toJSON()` (gives the same answers as the trained model). */
export function loadModel(json: SerializedModel): NluModel {
  return runSteps(loadModelSteps(json));
}

export interface LoadModelAsyncOptions {
  /** longest stretch of work between two yields to the event loop (ms); default 3 */
  sliceMs?: number;
  /** JSON text of `json` when the caller has it (kept for `serialize()`, so storing it costs nothing more) */
  serialized?: string;
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
  const sliceMs = options.sliceMs ?? 3;
  const steps = loadModelSteps(json, options.serialized);
  let sliceStart = performance.now();
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
    if (performance.now() - sliceStart >= sliceMs) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
}

/** The loading as resumable steps (see IntentClassifier.fromJSONSteps). */
function* loadModelSteps(json: SerializedModel, serialized?: string): Generator<void, NluModel, void> {
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
  const extractor = EntityExtractor.fromJSON(json.entities as SerializedEntityExtractor);
  return new TrainedModel(json.lang, intents.classes, classifier, extractor, serialized);
}
