/**
 * Small made-up assistants (English and French) used by the unit tests and as examples of `NluTrainingSet`.
 */
import type { NluTrainingSet, NluUtterancePart } from './types';

/** "from {city:from_city} to {city:to_city}" style utterances written as `[text](entity:slot)` markup. */
export function parts(markup: string): NluUtterancePart[] {
  const out: NluUtterancePart[] = [];
  const re = /\[([^\]]+)\]\(([^):]+)(?::([^)]+))?\)/g;
  let last = 0;
  for (let m = re.exec(markup); m !== null; m = re.exec(markup)) {
    if (m.index > last) out.push({ text: markup.slice(last, m.index) });
    const part: NluUtterancePart = { text: m[1]!, entity: m[2]! };
    if (m[3]) part.slot_name = m[3];
    out.push(part);
    last = m.index + m[0].length;
  }
  if (last < markup.length) out.push({ text: markup.slice(last) });
  return out;
}

const utterances = (...lines: string[]): NluUtterancePart[][] => lines.map(parts);

/** Travel and food assistant: trains between cities (same entity, two slots), weather, food orders, greetings. */
export function travelAssistant(): NluTrainingSet {
  return {
    lang: 'en',
    entities: [
      {
        name: 'city',
        automaticallyExtensible: true,
        useSynonyms: true,
        values: [
          { value: 'Paris', synonyms: ['paname'] },
          { value: 'Lyon', synonyms: [] },
          { value: 'Marseille', synonyms: [] },
          { value: 'Bordeaux', synonyms: [] },
          { value: 'Lille', synonyms: [] },
          { value: 'Nice', synonyms: [] },
          { value: 'Strasbourg', synonyms: [] },
        ],
      },
      {
        name: 'food',
        automaticallyExtensible: false,
        useSynonyms: true,
        values: [
          { value: 'pizza', synonyms: ['pizzas', 'margherita'] },
          { value: 'burger', synonyms: ['hamburger', 'burgers', 'cheeseburger'] },
          { value: 'coffee', synonyms: ['espresso', 'cappuccino'] },
          { value: 'sushi', synonyms: ['maki'] },
          { value: 'ice cream', synonyms: ['gelato'] },
        ],
      },
    ],
    intents: [
      {
        id: 'book-train',
        name: 'book_train',
        utterances: utterances(
          'book a train from [Paris](city:from_city) to [Lyon](city:to_city)',
          'i need a train ticket from [Lille](city:from_city) to [Nice](city:to_city)',
          'get me a train to [Bordeaux](city:to_city) from [Marseille](city:from_city)',
          'train from [Lyon](city:from_city) to [Paris](city:to_city) tomorrow morning',
          'a ticket to [Strasbourg](city:to_city) please',
          'i want to travel from [Nice](city:from_city) to [Lille](city:to_city)',
          'reserve a seat on the train from [Bordeaux](city:from_city) to [Strasbourg](city:to_city)',
          'how do i get from [Marseille](city:from_city) to [Lyon](city:to_city) by train',
          'one ticket from [Paris](city:from_city) to [Marseille](city:to_city)',
          'book me a train to [Lille](city:to_city)',
        ),
      },
      {
        id: 'weather',
        name: 'weather',
        utterances: utterances(
          "what's the weather in [Paris](city)",
          'will it rain tomorrow',
          'weather forecast for [Lyon](city)',
          'is it sunny today',
          'how hot is it outside',
          'do i need an umbrella today',
          'what is the temperature in [Nice](city) right now',
          'is it going to snow this weekend',
        ),
      },
      {
        id: 'order-food',
        name: 'order_food',
        utterances: utterances(
          'i want to order a [pizza](food)',
          'order two [burgers](food)',
          'can i get a large [coffee](food)',
          "i'd like to order [sushi](food) for dinner",
          'get me a [margherita](food) with extra cheese',
          'deliver an [espresso](food) to my desk',
          "i'm hungry, order some [maki](food)",
          'two scoops of [ice cream](food) please',
        ),
      },
      {
        id: 'greeting',
        name: 'greeting',
        utterances: utterances(
          'hello',
          'hi there',
          'good morning',
          'hey',
          'good evening',
          'hello, how are you',
        ),
      },
      {
        id: 'cancel',
        name: 'cancel',
        utterances: utterances(
          'cancel my booking',
          'i want to cancel the reservation',
          'please cancel my order',
          'cancel it',
          'forget it, cancel everything',
          'i changed my mind, cancel the ticket',
        ),
      },
    ],
  };
}

/**
 * Metro assistant where the same station names are values of two entities, `departure` and `arrival`
 * (the Braun Chatbot corpus situation): only the words around a name tell which one it is.
 */
export function metroAssistant(): NluTrainingSet {
  const stations = ['central', 'airport', 'harbour', 'university', 'old town', 'stadium'];
  const entity = (name: string) => ({
    name,
    automaticallyExtensible: true,
    useSynonyms: false,
    values: stations.map((value) => ({ value, synonyms: [] })),
  });
  return {
    lang: 'en',
    entities: [entity('departure'), entity('arrival')],
    intents: [
      {
        id: 'route',
        name: 'route',
        utterances: utterances(
          'from [central](departure) to [airport](arrival)',
          'how do i get from [harbour](departure) to [university](arrival)',
          'route from [old town](departure) to [stadium](arrival)',
          'i want to go to [central](arrival) from [stadium](departure)',
          'take me from [airport](departure) to [old town](arrival)',
          'how can i get to [harbour](arrival) from [university](departure)',
          'from [stadium](departure) to [harbour](arrival) please',
          'connection from [university](departure) to [central](arrival)',
        ),
      },
      {
        id: 'next-departure',
        name: 'next_departure',
        utterances: utterances(
          'when is the next train from [central](departure)',
          'next departure from [airport](departure)',
          'when does the next metro leave [harbour](departure)',
          'next train leaving [university](departure)',
          'when is the next one from [old town](departure)',
        ),
      },
    ],
  };
}

/** Assistant in French: accents, elisions, and a multi-word value with a hyphen. */
export function frenchAssistant(): NluTrainingSet {
  return {
    lang: 'fr',
    entities: [
      {
        name: 'ville',
        automaticallyExtensible: true,
        useSynonyms: false,
        values: ['Paris', 'Lyon', 'Orléans', 'Saint-Étienne', 'Besançon', 'Nîmes'].map((value) => ({
          value,
          synonyms: [],
        })),
      },
    ],
    intents: [
      {
        id: 'reserver-train',
        name: 'réserver_train',
        utterances: utterances(
          'je voudrais un billet de train pour [Lyon](ville:arrivee)',
          'réserve-moi un train de [Paris](ville:depart) à [Orléans](ville:arrivee)',
          "un aller simple de [Nîmes](ville:depart) jusqu'à [Besançon](ville:arrivee)",
          'je veux aller à [Saint-Étienne](ville:arrivee) en train',
          'billet de [Lyon](ville:depart) à [Paris](ville:arrivee) demain matin',
          'il me faut un train pour [Nîmes](ville:arrivee)',
        ),
      },
      {
        id: 'meteo',
        name: 'météo',
        utterances: utterances(
          'quel temps fait-il à [Paris](ville)',
          'est-ce qu’il va pleuvoir demain',
          'météo de [Lyon](ville) pour ce week-end',
          'fait-il beau aujourd’hui',
          'quelle est la température à [Besançon](ville)',
          'dois-je prendre un parapluie',
        ),
      },
      {
        id: 'salutation',
        name: 'salutation',
        utterances: utterances('bonjour', 'salut', 'bonsoir', 'coucou, ça va ?', 'bonjour à vous'),
      },
    ],
  };
}
