import type { ConditionalResponse } from './model-types';
import { chooseStream, holds, renderItems, streamFor, type TurnVariables } from './responses';

const vars = (over: Partial<TurnVariables> = {}): TurnVariables => ({
  slots: { city: 'Paris', count: '3' },
  contexts: ['booking'],
  platform: 'web',
  query: 'two tickets to Paris',
  ...over,
});

describe('conditions', () => {
  it.each([
    [['city', '==', 'paris'], true],
    [['slots.city', '==', 'Paris'], true],
    [['slots.city', '!=', 'Rome'], true],
    [['slots.missing', '!=', 'Rome'], true],
    [['slots.missing', '==', ''], false],
    [['slots.city', 'exists', ''], true],
    [['slots.missing', 'exists', ''], false],
    [['slots.missing', 'notExists', ''], true],
    [['slots.count', '>', '2'], true],
    [['slots.count', '>=', '3'], true],
    [['slots.count', '<', '3'], false],
    [['slots.count', '<=', '3.0'], true],
    [['slots.count', '==', '3.0'], true],
    [['slots.city', '>', '2'], false],
    [['slots.missing', '<', '2'], false],
    [['query', 'contains', 'TICKETS'], true],
    [['query', 'notContains', 'train'], true],
    [['contexts', 'contains', 'booking'], true],
    [['contexts', '==', 'payment'], false],
    [['context.booking', 'exists', ''], true],
    [['context.payment', 'exists', ''], false],
    [['platform', '==', 'WEB'], true],
  ] as const)('%j holds: %s', (condition, expected) => {
    expect(holds([...condition] as never, vars())).toBe(expected);
  });

  it("compares texts in any Unicode form: a visitor's text decomposed (NFD), a condition composed (NFC)", () => {
    const nfd = (text: string) => text.normalize('NFD');
    const typed = vars({ slots: { dish: nfd('Crème brûlée') }, query: nfd('une crème brûlée') });
    expect(holds(['query', 'contains', 'crème'], typed)).toBe(true);
    expect(holds(['query', 'notContains', 'crème'], typed)).toBe(false);
    expect(holds(['slots.dish', '==', 'crème brûlée'], typed)).toBe(true);
    expect(holds(['query', 'contains', nfd('crème')], vars({ query: 'une crème' }))).toBe(true);
    expect(holds(['slots.dish', '==', nfd('Crème')], vars({ slots: { dish: 'crème' } }))).toBe(true);
  });
});

describe('choosing a stream', () => {
  const response: ConditionalResponse = {
    default: {
      default: [{ type: 'text', text: ['default'] }],
      Speaker: [{ type: 'speaker', speaker: 'spoken' }],
    },
    if: [
      { conditions: [['city', '==', 'Rome']], fulfillment: { default: [{ type: 'text', text: ['rome'] }] } },
      {
        conditions: [
          ['city', '==', 'Paris'],
          ['context.booking', 'exists', ''],
        ],
        fulfillment: { telephony: [{ type: 'telephony', telephony: 'paris by phone' }] },
      },
    ],
  };

  it('takes the first entry whose conditions all hold and that has a stream for the channel', () => {
    expect(chooseStream(response, vars({ platform: 'telephony' }))).toEqual([
      { type: 'telephony', telephony: 'paris by phone' },
    ]);
    // the Paris entry has no web stream: the default fulfillment answers
    expect(chooseStream(response, vars())).toEqual([{ type: 'text', text: ['default'] }]);
    expect(chooseStream(response, vars({ slots: { city: 'Rome' } }))).toEqual([
      { type: 'text', text: ['rome'] },
    ]);
  });

  it('matches the channel in any letter case, else the default channel, else nothing', () => {
    expect(streamFor(response.default, 'speaker')).toEqual([{ type: 'speaker', speaker: 'spoken' }]);
    expect(streamFor(response.default, 'web')).toEqual([{ type: 'text', text: ['default'] }]);
    expect(streamFor({ web: [] }, 'speaker')).toBeUndefined();
    expect(chooseStream(undefined, vars())).toEqual([]);
    // a channel named like an object's machinery is a channel like any other (it answered 500)
    for (const platform of ['constructor', '__proto__', 'toString', 'hasOwnProperty'])
      expect(streamFor(response.default, platform)).toEqual([{ type: 'text', text: ['default'] }]);
    expect(streamFor({ web: [] }, 'constructor')).toBeUndefined();
  });
});

describe('rendering items', () => {
  it('maps every element type to its reply item, in order, choosing one text alternative', () => {
    const items = renderItems(
      [
        { type: 'text', text: ['a', 'b', 'c'] },
        { type: 'link', text: 'Docs', value: 'https://x.test', openInPanel: false },
        { type: 'button', text: 'Yes', value: 'yes' },
        { type: 'event', text: 'Help', value: 'HELP' },
        { type: 'cards', cards: [{ title: 'T' }] },
        { type: 'events', events: [{ text: 'Again', event: 'WELCOME' }] },
        { type: 'web', web: '<b>hi</b>' },
        { type: 'speaker', speaker: '<speak>hi</speak>' },
        { type: 'telephony', telephony: 'hi' },
      ],
      () => 0.5,
    );
    expect(items).toEqual([
      { text: 'b' },
      { links: { text: 'Docs', value: 'https://x.test', openInPanel: false } },
      { button: { text: 'Yes', value: 'yes' } },
      { event: { text: 'Help', value: 'HELP' } },
      { cards: [{ title: 'T' }] },
      { events: [{ text: 'Again', event: 'WELCOME' }] },
      { web: '<b>hi</b>' },
      { speaker: '<speak>hi</speak>' },
      { telephony: 'hi' },
    ]);
    expect(renderItems([{ type: 'text', text: ['a', 'b'] }], () => 0.9999)).toEqual([{ text: 'b' }]);
  });
});

describe('variables named like an object’s machinery', () => {
  it.each([
    [['toString', '==', 'x'], false],
    [['slots.constructor', 'exists', ''], false],
    [['hasOwnProperty', 'contains', 'x'], false],
    [['valueOf', 'notExists', ''], true],
    [['slots.__proto__', '!=', 'x'], true],
  ] as const)('%j holds: %s, without throwing', (condition, expected) => {
    expect(holds([...condition] as never, vars())).toBe(expected);
  });

  it('finds a slot that really has such a name', () => {
    expect(holds(['slots.constructor', '==', 'Bob'], vars({ slots: { constructor: 'Bob' } }))).toBe(true);
  });
});
