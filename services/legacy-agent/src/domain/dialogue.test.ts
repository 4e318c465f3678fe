import type { IntentDoc } from '../persistence/collections';
import { advanceContexts } from './conversations';
import { fallbackIntent, matchEvent, slotsOf } from './dialogue';

const intent = (over: Partial<IntentDoc>): IntentDoc => ({
  _id: over.name ?? 'id',
  assistantId: 'a',
  name: 'x',
  nameKey: 'x',
  isWelcome: false,
  isFallback: false,
  endConversation: false,
  events: [],
  disambiguationSentence: {},
  inputContexts: [],
  outputContexts: {},
  utterances: {},
  parameters: {},
  conditionalResponses: {},
  settings: {},
  createdAt: new Date(0),
  updatedAt: new Date(0),
  ...over,
});

const match = (entity: string, slot: string, value: string, start: number) => ({
  entity,
  slot,
  value,
  text: value,
  start,
  end: start + value.length,
  confidence: 1,
});

describe('events', () => {
  const intents = [
    intent({ name: 'welcome', isWelcome: true }),
    intent({ name: 'help', events: ['HELP'] }),
    intent({ name: 'help in booking', events: ['help'], inputContexts: ['booking'] }),
  ];

  it('triggers intents listing the event in any letter case, the most specific eligible one first', () => {
    expect(matchEvent(intents, 'Help', new Set()).intent?.name).toBe('help');
    expect(matchEvent(intents, 'HELP', new Set(['booking'])).intent?.name).toBe('help in booking');
    expect(matchEvent(intents, 'welcome', new Set()).intent?.name).toBe('welcome');
    expect(matchEvent(intents, 'UNKNOWN', new Set()).intent).toBeNull();
  });

  it('picks the fallback intent for the active contexts', () => {
    const fallbacks = [
      intent({ name: 'f', isFallback: true }),
      intent({ name: 'f2', isFallback: true, inputContexts: ['b'] }),
    ];
    expect(fallbackIntent(fallbacks, new Set())?.name).toBe('f');
    expect(fallbackIntent(fallbacks, new Set(['b']))?.name).toBe('f2');
    expect(fallbackIntent([], new Set())).toBeNull();
  });
});

describe('slots', () => {
  const trip = intent({
    utterances: {
      en: [
        {
          data: [
            { text: 'from ' },
            { text: 'A', entity: 'Station', slot_name: 'from' },
            { text: ' to ' },
            { text: 'B', entity: 'Station', slot_name: 'to' },
          ],
        },
      ],
    },
    parameters: { en: [{ name: 'when', entity: 'Time' }] },
  });

  it('keeps the slot the model chose when the intent has it, else the next free slot of that entity', () => {
    const slots = slotsOf(trip, 'en', [
      match('Station', 'to', 'Odeon', 10),
      match('Station', 'Station', 'Marien', 0),
    ]);
    expect(slots.values).toEqual({ from: 'Marien', to: 'Odeon' });
    expect(slots.details.map((d) => d.slot)).toEqual(['from', 'to']);
  });

  it('names slots from parameters, and by entity name when the intent has none for it', () => {
    const slots = slotsOf(trip, 'en', [match('Time', 'Time', '9am', 0), match('Color', 'Color', 'red', 5)]);
    expect(slots.values).toEqual({ when: '9am', Color: 'red' });
  });

  it('fills slots named like an object’s machinery (constructor, toString)', () => {
    const builder = intent({
      utterances: { en: [{ data: [{ text: 'Bob', entity: 'Person', slot_name: 'constructor' }] }] },
    });
    const slots = slotsOf(builder, 'en', [
      match('Person', 'constructor', 'Bob', 0),
      match('Word', 'toString', 'hi', 4),
    ]);
    expect(slots.values).toEqual({ constructor: 'Bob', Word: 'hi' });
    expect(Object.hasOwn(slots.values, 'constructor')).toBe(true);
  });

  it('keeps the first value of a slot', () => {
    const slots = slotsOf(null, 'en', [
      match('Color', 'Color', 'blue', 8),
      match('Color', 'Color', 'red', 0),
    ]);
    expect(slots.values).toEqual({ Color: 'red' });
    expect(slots.details).toHaveLength(2);
  });
});

describe('contexts', () => {
  it('ages active contexts by one turn, then sets the output contexts (lifespan 0 clears one)', () => {
    const next = advanceContexts(
      [
        { name: 'a', lifespan: 1 },
        { name: 'b', lifespan: 3 },
        { name: 'c', lifespan: 2 },
      ],
      [
        { name: 'd', lifespan: 2 },
        { name: 'c', lifespan: 0 },
      ],
    );
    expect(next).toEqual([
      { name: 'b', lifespan: 2 },
      { name: 'd', lifespan: 2 },
    ]);
  });
});
