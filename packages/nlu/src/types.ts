/** Public types of the NLU engine. */

export interface NluEntityDef {
  name: string;
  /** true: misspellings of listed values and values outside the list (from the learnt context) are detected */
  automaticallyExtensible: boolean;
  /** true: synonyms are matched and resolved to their value */
  useSynonyms: boolean;
  values: Array<{ value: string; synonyms: string[] }>;
}

export interface NluUtterancePart {
  text: string;
  /** entity name when this part is an occurrence of an entity */
  entity?: string;
  /** slot filled by this occurrence; defaults to the entity name */
  slot_name?: string;
}

export interface NluIntentDef {
  id: string;
  name: string;
  /** each utterance is the ordered list of its parts; its text is the concatenation of the parts' text */
  utterances: Array<Array<NluUtterancePart>>;
}

export interface NluTrainingSet {
  lang: string;
  intents: NluIntentDef[];
  entities: NluEntityDef[];
}

export interface NluEntityMatch {
  entity: string;
  /** slot_name learnt from the utterances for that context, else the entity name */
  slot: string;
  /** canonical value (synonym or misspelling resolved), or the surface text for values outside the list */
  value: string;
  /** surface text as the user typed it (input.slice(start, end)) */
  text: string;
  /** character offsets in the input, end exclusive */
  start: number;
  end: number;
  /** 0..1 */
  confidence: number;
}

export interface NluIntentScore {
  id: string;
  name: string;
  /** 0..1; the service answers with its fallback intent below its threshold */
  confidence: number;
}

export interface NluResult {
  /** best first */
  intents: NluIntentScore[];
  entities: NluEntityMatch[];
}

/** JSON-safe form of a trained model (see `NluModel.toJSON` / `loadModel`). */
export interface SerializedModel {
  format: 'legacy-agent-nlu';
  version: number;
  lang: string;
  intents: unknown;
  entities: unknown;
}

export interface NluModel {
  readonly lang: string;
  parse(text: string): NluResult;
  toJSON(): SerializedModel;
}
