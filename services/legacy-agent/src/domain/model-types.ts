/** The legacy resources as the domain sees them (spec 2.9, 2.10); language-keyed maps are by language code. */

export interface SentencePart {
  text: string;
  entity?: string;
  slot_name?: string;
}

export interface Utterance {
  data: SentencePart[];
}

/** An output context: set active for `lifespan` user turns when the intent answers (0 clears it). */
export interface OutputContext {
  name: string;
  lifespan: number;
}

export interface LinkValue {
  text: string;
  value: string;
  openInPanel?: boolean;
}

export interface ButtonValue {
  text: string;
  value: string;
}

export interface EventValue {
  text: string;
  value: string;
}

export interface Card {
  title?: string;
  text?: string;
  image?: string;
  links?: LinkValue[];
  buttons?: ButtonValue[];
  event?: EventValue;
}

/** One element of a response stream, as stored (spec 2.9 "ConditionalResponse"). */
export type ResponseElement =
  | { type: 'text'; text: string[] }
  | { type: 'link'; text: string; value: string; openInPanel?: boolean }
  | { type: 'button'; text: string; value: string }
  | { type: 'event'; text: string; value: string }
  | { type: 'cards'; cards: Card[] }
  | { type: 'events'; events: Array<{ text: string; event: string }> }
  | { type: 'web'; web: string }
  | { type: 'speaker'; speaker: string }
  | { type: 'telephony'; telephony: string };

/** channel name -> ordered stream of response elements */
export type Fulfillment = Record<string, ResponseElement[]>;

export type ConditionOperator =
  | '=='
  | '!='
  | 'exists'
  | 'notExists'
  | 'contains'
  | 'notContains'
  | '>'
  | '>='
  | '<'
  | '<=';

export type Condition = [variable: string, operator: ConditionOperator, value: string];

export interface ConditionalResponse {
  default?: Fulfillment;
  if?: Array<{ conditions: Condition[]; fulfillment: Fulfillment }>;
}

export interface IntentSettings {
  placeholder: string;
  disableInput: boolean;
}

export const DEFAULT_SETTINGS: IntentSettings = { placeholder: 'How can I help you?', disableInput: false };

export interface EntityOccurrence {
  value: string;
  synonyms?: string[];
}

/** One output item of a Messages reply (spec 2.12 "Item"). */
export interface ReplyItem {
  text?: string;
  web?: string;
  speaker?: string;
  telephony?: string;
  links?: LinkValue;
  button?: ButtonValue;
  event?: EventValue;
  cards?: Card[];
  events?: Array<{ text: string; event: string }>;
}
