/**
 * NLU engine of the legacy virtual agent: intent classification and entity extraction, one model per language.
 * See docs/decisions/0005-nlu-engine.md.
 */

export {
  decodeModel,
  decodeModelAsync,
  encodeModel,
  encodeModelBuffer,
  isEncodedModel,
  loadStoredModel,
  storedModelForm,
} from './model-codec';
/** the engine's matching form of a phrase (its tokens, lower-cased and accent-folded), e.g. to tell values apart */
export { normTokens } from './tokenize';
export type { LoadModelAsyncOptions } from './train';
export { loadModel, loadModelAsync, TRAINING_REVISION, trainModel } from './train';
export type {
  NluEntityDef,
  NluEntityMatch,
  NluIntentDef,
  NluIntentScore,
  NluModel,
  NluResult,
  NluTrainingSet,
  NluUtterancePart,
  SerializedModel,
} from './types';
export { trainModelInWorker } from './worker-training';
