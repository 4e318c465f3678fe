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
