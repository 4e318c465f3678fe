import type { Condition, ConditionalResponse, Fulfillment, ReplyItem, ResponseElement } from './model-types';

/** What conditions can look at in one turn. */
export interface TurnVariables {
  /** slots of this message over those remembered from earlier turns of the conversation */
  slots: Record<string, string>;
  /** contexts active when the message arrived */
  contexts: string[];
  platform: string;
  query?: string;
  event?: string;
}

type Value = string | string[] | undefined;

/**
 * `slots.<name>` (or a bare `<name>`): a slot's value; `context.<name>`: "true" when that context is
 * active; `contexts`: the active context names; `platform`, `query`, `event`: the request's.
 */
export function resolveVariable(variable: string, vars: TurnVariables): Value {
  if (variable.startsWith('slots.')) return slotValue(vars.slots, variable.slice(6));
  if (variable.startsWith('context.')) return vars.contexts.includes(variable.slice(8)) ? 'true' : undefined;
  switch (variable) {
    case 'contexts':
      return vars.contexts;
    case 'platform':
      return vars.platform;
    case 'query':
      return vars.query;
    case 'event':
      return vars.event;
    default:
      return slotValue(vars.slots, variable);
  }
}

/**
 * The slot's own value only: a name such as `toString` or `constructor` must not find an object's machinery
 * (a function there made `==` throw, a 500 for every message the intent answered).
 */
const slotValue = (slots: Record<string, string>, name: string): string | undefined => {
  const value = Object.hasOwn(slots, name) ? slots[name] : undefined;
  return typeof value === 'string' ? value : undefined;
};

/** Letter case and Unicode form aside (no collator: this runs for every message). */
const sameText = (a: string, b: string) =>
  a === b || a.normalize('NFC').toLowerCase() === b.normalize('NFC').toLowerCase();
const asNumber = (v: string): number | null =>
  v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : null;

function equals(actual: string, expected: string): boolean {
  const a = asNumber(actual);
  const b = asNumber(expected);
  if (a !== null && b !== null) return a === b;
  return sameText(actual.trim(), expected.trim());
}

function compare(actual: Value, expected: string, test: (diff: number) => boolean): boolean {
  if (typeof actual !== 'string') return false;
  const a = asNumber(actual);
  const b = asNumber(expected);
  return a !== null && b !== null && test(a - b);
}

/** One `[variable, operator, value]` condition; a missing variable satisfies only `notExists`, `!=` and `notContains`. */
export function holds([variable, operator, expected]: Condition, vars: TurnVariables): boolean {
  const actual = resolveVariable(variable, vars);
  const present = Array.isArray(actual) ? actual.length > 0 : actual !== undefined && actual !== '';
  switch (operator) {
    case 'exists':
      return present;
    case 'notExists':
      return !present;
    case '==':
      return Array.isArray(actual)
        ? actual.some((a) => equals(a, expected))
        : actual !== undefined && equals(actual, expected);
    case '!=':
      return !holds([variable, '==', expected], vars);
    case 'contains':
      if (Array.isArray(actual)) return actual.some((a) => equals(a, expected));
      return (
        actual
          ?.normalize('NFC')
          .toLocaleLowerCase()
          .includes(expected.normalize('NFC').toLocaleLowerCase()) ?? false
      );
    case 'notContains':
      return !holds([variable, 'contains', expected], vars);
    case '>':
      return compare(actual, expected, (d) => d > 0);
    case '>=':
      return compare(actual, expected, (d) => d >= 0);
    case '<':
      return compare(actual, expected, (d) => d < 0);
    case '<=':
      return compare(actual, expected, (d) => d <= 0);
  }
}

/** The stream of a channel: the request's `platform` (any letter case), else the `default` channel. */
export function streamFor(
  fulfillment: Fulfillment | undefined,
  platform: string,
): ResponseElement[] | undefined {
  if (!fulfillment) return undefined;
  // own channels only: `platform` is the caller's, and `constructor` or `toString` name an object's machinery
  if (Object.hasOwn(fulfillment, platform)) return fulfillment[platform];
  const lower = platform.toLowerCase();
  for (const channel of Object.keys(fulfillment))
    if (channel.toLowerCase() === lower) return fulfillment[channel];
  return Object.hasOwn(fulfillment, 'default') ? fulfillment.default : undefined;
}

/**
 * The response of one intent in one turn: the first `if` entry whose conditions all hold and that has
 * a stream for the channel, else the `default` fulfillment's stream, else nothing.
 */
export function chooseStream(
  response: ConditionalResponse | undefined,
  vars: TurnVariables,
): ResponseElement[] {
  for (const entry of response?.if ?? []) {
    if (!entry.conditions.every((condition) => holds(condition, vars))) continue;
    const stream = streamFor(entry.fulfillment, vars.platform);
    if (stream) return stream;
  }
  return streamFor(response?.default, vars.platform) ?? [];
}

/** Stored elements to reply items (spec 2.12), in order; text alternatives become one chosen text. */
export function renderItems(stream: ResponseElement[], random: () => number): ReplyItem[] {
  return stream.map((element) => renderItem(element, random));
}

function renderItem(element: ResponseElement, random: () => number): ReplyItem {
  switch (element.type) {
    case 'text':
      return {
        text: element.text[Math.min(element.text.length - 1, Math.floor(random() * element.text.length))],
      };
    case 'link':
      return {
        links: {
          text: element.text,
          value: element.value,
          ...(element.openInPanel !== undefined ? { openInPanel: element.openInPanel } : {}),
        },
      };
    case 'button':
      return { button: { text: element.text, value: element.value } };
    case 'event':
      return { event: { text: element.text, value: element.value } };
    case 'cards':
      return { cards: element.cards };
    case 'events':
      return { events: element.events };
    case 'web':
      return { web: element.web };
    case 'speaker':
      return { speaker: element.speaker };
    case 'telephony':
      return { telephony: element.telephony };
  }
}
