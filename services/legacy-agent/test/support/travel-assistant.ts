import { say, utterance } from './fixtures';

/**
 * One assistant exercising every Messages rule: a welcome and a fallback intent, entity slots with
 * synonyms and misspellings, input/output contexts, events, conditional responses per channel, every
 * item type, and an intent that ends the conversation. Shared by the integration and e2e tests.
 */
export const travelEntities = [
  {
    name: 'Station',
    automaticallyExtensible: { en: true },
    useSynonyms: { en: true },
    data: {
      en: [
        { value: 'Marienplatz', synonyms: [] },
        { value: 'Hauptbahnhof', synonyms: ['main station', 'hbf'] },
        { value: 'Odeonsplatz', synonyms: [] },
      ],
    },
  },
];

export const travelIntents = {
  welcome: {
    name: 'Welcome',
    isWelcome: true,
    conditionalResponses: { en: { default: { default: [say('Hello! Where do you want to go?')] } } },
  },
  fallback: {
    name: 'Fallback',
    isFallback: true,
    conditionalResponses: { en: { default: { default: [say('Sorry, I did not get that.')] } } },
  },
  find: {
    name: 'FindConnection',
    utterances: {
      en: [
        utterance('from [Marienplatz](Station:from) to [Hauptbahnhof](Station:to)'),
        utterance('i need a train from [Odeonsplatz](Station:from) to [Marienplatz](Station:to)'),
        utterance('how do i get to [Hauptbahnhof](Station:to)'),
        utterance('connection to [Odeonsplatz](Station:to) please'),
        utterance('when is the next train to [Marienplatz](Station:to)'),
      ],
    },
    outputContexts: { en: [{ name: 'booking', lifespan: 2 }] },
    conditionalResponses: {
      en: {
        default: {
          default: [
            say('Here is a connection.'),
            { type: 'link', text: 'Timetable', value: 'https://example.com/timetable' },
          ],
          speaker: [{ type: 'speaker', speaker: '<speak>Here is a connection.</speak>' }],
        },
        if: [
          {
            conditions: [
              ['slots.from', 'exists', ''],
              ['slots.to', '==', 'hauptbahnhof'],
            ],
            fulfillment: { default: [say('Here is a connection to the main station.')] },
          },
        ],
      },
    },
  },
  confirm: {
    name: 'Confirm',
    inputContexts: ['booking'],
    endConversation: true,
    utterances: { en: ['yes', 'yes please', 'sure', 'ok book it', 'that is right'].map(utterance) },
    conditionalResponses: {
      en: {
        default: {
          default: [
            say('Booked!'),
            { type: 'button', text: 'Book another', value: 'i need a train' },
            {
              type: 'cards',
              cards: [
                {
                  title: 'Your ticket',
                  text: 'Valid today',
                  image: 'https://example.com/ticket.png',
                  links: [{ text: 'Print', value: 'https://example.com/print' }],
                  buttons: [{ text: 'Cancel', value: 'cancel my ticket' }],
                  event: { text: 'Help', value: 'HELP' },
                },
              ],
            },
            { type: 'events', events: [{ text: 'Start over', event: 'WELCOME' }] },
            { type: 'event', text: 'Need help?', value: 'HELP' },
          ],
        },
      },
    },
  },
  help: {
    name: 'Help',
    events: ['HELP'],
    utterances: { en: ['help', 'what can you do', 'i need help', 'how does this work'].map(utterance) },
    conditionalResponses: {
      en: {
        default: { default: [say('I find train connections.')] },
        if: [
          {
            conditions: [['context.booking', 'exists', '']],
            fulfillment: { default: [say('Say yes to book it.')] },
          },
        ],
      },
    },
    settings: { en: { placeholder: 'Ask me anything', disableInput: true } },
  },
};

/** Words the assistant never learnt: the classifier gives every intent a confidence near 0. */
export const GIBBERISH = 'banana bread recipe';
