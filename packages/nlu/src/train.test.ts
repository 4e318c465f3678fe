import { frenchAssistant, metroAssistant, parts, travelAssistant } from './example-assistants';
import { loadModel, trainModel } from './train';
import type { NluModel, NluResult, NluTrainingSet } from './types';

const top = (r: NluResult) => r.intents[0]!;
const slots = (r: NluResult) =>
  Object.fromEntries(r.entities.map((e) => [e.slot, { entity: e.entity, value: e.value, text: e.text }]));

describe('trainModel / parse', () => {
  let travel: NluModel;
  beforeAll(() => {
    travel = trainModel(travelAssistant());
  });

  it('classifies new phrasings of the trained intents', () => {
    const cases: Array<[string, string]> = [
      ['book a train from lyon to paris', 'book-train'],
      ['i need a ticket from marseille to bordeaux', 'book-train'],
      ['is it cold outside', 'weather'],
      ['will it snow in lille tomorrow', 'weather'],
      ['order a pizza for me', 'order-food'],
      ['hey there', 'greeting'],
      ['good morning to you', 'greeting'],
      ['cancel the order please', 'cancel'],
    ];
    for (const [text, id] of cases) expect([text, top(travel.parse(text)).id]).toEqual([text, id]);
  });

  it('returns every intent, best first, with confidences in 0..1', () => {
    const r = travel.parse('what is the weather in nice');
    expect(r.intents.map((i) => i.id).sort()).toEqual([
      'book-train',
      'cancel',
      'greeting',
      'order-food',
      'weather',
    ]);
    for (let i = 0; i < r.intents.length; i++) {
      expect(r.intents[i]!.confidence).toBeGreaterThanOrEqual(0);
      expect(r.intents[i]!.confidence).toBeLessThanOrEqual(1);
      if (i > 0) expect(r.intents[i]!.confidence).toBeLessThanOrEqual(r.intents[i - 1]!.confidence);
    }
    expect(top(r)).toMatchObject({ id: 'weather', name: 'weather' });
  });

  it('gives out-of-domain text clearly lower (calibrated) confidences than in-domain text', () => {
    const inDomain = [
      'book a train from lyon to paris',
      'is it cold outside',
      'order a pizza for me',
      'hey there',
    ];
    const unrelated = [
      'purple elephants dance quietly',
      'my cat likes fish',
      'the stock market crashed yesterday',
      'the quantum flux capacitor sings purple',
    ];
    const gibberish = ['asdf qwerty zxcv', 'blorp', 'xkcd zzzz qqq'];
    const conf = (t: string) => top(travel.parse(t)).confidence;
    const minIn = Math.min(...inDomain.map(conf));
    expect(minIn).toBeGreaterThan(0.8);
    // calibrated: unrelated text is very unlikely to be any of the intents ("yesterday" shares "day" with
    // "today" of the weather sentences, the closest call)
    for (const t of unrelated) expect([t, conf(t) < 0.35]).toEqual([t, true]);
    expect(unrelated.map(conf).reduce((a, b) => a + b) / unrelated.length).toBeLessThan(0.2);
    for (const t of gibberish) expect([t, conf(t) < 0.05]).toEqual([t, true]);
    expect(top(travel.parse('')).confidence).toBe(0);
  });

  it('extracts listed values and resolves synonyms to the canonical value, with offsets', () => {
    const text = 'Order a Hamburger and an espresso';
    const r = travel.parse(text);
    expect(r.entities.map((e) => [e.entity, e.slot, e.value, e.text])).toEqual([
      ['food', 'food', 'burger', 'Hamburger'],
      ['food', 'food', 'coffee', 'espresso'],
    ]);
    for (const e of r.entities) {
      expect(text.slice(e.start, e.end)).toBe(e.text);
      expect(e.confidence).toBeGreaterThan(0.5);
    }
    expect(slots(travel.parse('train from paname to nice')).from_city?.value).toBe('Paris');
  });

  it('takes the longest listed phrase', () => {
    expect(travel.parse('two scoops of ice cream').entities.map((e) => e.text)).toEqual(['ice cream']);
  });

  it('tolerates misspellings only for automatically extensible entities', () => {
    // city is extensible: "Pariss" is Paris
    expect(slots(travel.parse('a train from Pariss to lyon')).from_city).toEqual({
      entity: 'city',
      value: 'Paris',
      text: 'Pariss',
    });
    // food is not: "piza" / "hamburgr" are not food
    expect(travel.parse('order a piza').entities).toEqual([]);
    expect(travel.parse('order a hamburgr').entities).toEqual([]);
  });

  it('picks up values outside the list of an extensible entity from the learnt context', () => {
    expect(slots(travel.parse('train from grenoble to paris'))).toMatchObject({
      from_city: { entity: 'city', value: 'grenoble', text: 'grenoble' },
      to_city: { entity: 'city', value: 'Paris' },
    });
  });

  it('learns the slot of each occurrence from the words around it', () => {
    expect(slots(travel.parse('book a train from lyon to paris'))).toMatchObject({
      from_city: { value: 'Lyon' },
      to_city: { value: 'Paris' },
    });
    expect(slots(travel.parse('get me a train to paris from lille'))).toMatchObject({
      from_city: { value: 'Lille' },
      to_city: { value: 'Paris' },
    });
    // a part tagged without slot_name fills the slot named after its entity
    expect(travel.parse('weather in lyon').entities.map((e) => e.slot)).toEqual(['city']);
  });

  it('fills the slot of each occurrence from its own cue word, in either order, when training used one order', () => {
    // every two-city sentence says "from X to Y"; a few say only "to Y" (or only "from X")
    const cities = [
      'Paris',
      'Rome',
      'London',
      'Berlin',
      'Madrid',
      'Lisbon',
      'Vienna',
      'Prague',
      'Dublin',
      'Oslo',
    ];
    const flights = (extensible: boolean): NluTrainingSet => ({
      lang: 'en',
      entities: [
        {
          name: 'city',
          automaticallyExtensible: extensible,
          useSynonyms: false,
          values: cities.map((value) => ({ value, synonyms: [] })),
        },
      ],
      intents: [
        {
          id: 'flight',
          name: 'book_flight',
          utterances: [
            'book a flight from [Paris](city:from) to [Rome](city:to)',
            'i need a flight from [London](city:from) to [Madrid](city:to)',
            'fly from [Berlin](city:from) to [Lisbon](city:to)',
            'flights from [Vienna](city:from) to [Prague](city:to) tomorrow',
            'a plane ticket from [Dublin](city:from) to [Oslo](city:to) please',
            'book me a flight from [Rome](city:from) to [Berlin](city:to)',
            'can i fly from [Madrid](city:from) to [London](city:to)',
            'flight from [Oslo](city:from) to [Paris](city:to) on monday',
            'from [Prague](city:from) to [Vienna](city:to)',
            'a flight to [Rome](city:to)',
            'i want to fly to [Paris](city:to)',
            'book a flight to [Oslo](city:to) please',
            'i am leaving from [Madrid](city:from)',
          ].map(parts),
        },
        { id: 'hello', name: 'hello', utterances: ['hello', 'hi there', 'good morning'].map(parts) },
      ],
    });
    const slotsOf = (m: NluModel, t: string) => m.parse(t).entities.map((e) => `${e.slot}=${e.value}`);
    for (const extensible of [false, true]) {
      const m = trainModel(flights(extensible));
      expect(slotsOf(m, 'to London from Berlin')).toEqual(['to=London', 'from=Berlin']);
      expect(slotsOf(m, 'book a flight to Madrid from Oslo please')).toEqual(['to=Madrid', 'from=Oslo']);
      // words between a cue and its city; a city at the end of the sentence (where "to Y" always was)
      expect(slotsOf(m, 'to sunny Madrid from rainy Dublin')).toEqual(['to=Madrid', 'from=Dublin']);
      expect(slotsOf(m, 'from Berlin to London')).toEqual(['from=Berlin', 'to=London']);
      expect(slotsOf(m, 'from Dublin')).toEqual(['from=Dublin']);
    }
  });

  it('tells apart two entities that share their values from the context', () => {
    const metro = trainModel(metroAssistant());
    const ents = (t: string) => metro.parse(t).entities.map((e) => `${e.entity}=${e.text}`);
    expect(ents('from airport to central')).toEqual(['departure=airport', 'arrival=central']);
    expect(ents('from central to airport')).toEqual(['departure=central', 'arrival=airport']);
    expect(ents('how can i get to stadium from old town')).toEqual(['arrival=stadium', 'departure=old town']);
    expect(ents('next train from harbour')).toEqual(['departure=harbour']);
  });

  it('extracts nothing for a tagged entity the set does not define (no values in its language)', () => {
    // the service leaves out of a language's set the entities without values in that language
    const orders = [
      'je voudrais un [café](boisson)',
      'un [thé](boisson) pour moi',
      'donnez moi un [jus](boisson)',
    ];
    const set = (entities: NluTrainingSet['entities']): NluTrainingSet => ({
      lang: 'fr',
      entities,
      intents: [
        { id: 'commande', name: 'commande', utterances: orders.map(parts) },
        { id: 'salut', name: 'salut', utterances: ['bonjour', 'salut', 'bonsoir'].map(parts) },
      ],
    });
    const undefinedEntity = trainModel(set([]));
    for (const t of ['je voudrais un cidre', 'un café pour moi', 'donnez moi un jus'])
      expect([t, undefinedEntity.parse(t).entities]).toEqual([t, []]);
    // defined and not extensible: its own values only
    const listed = trainModel(
      set([
        {
          name: 'boisson',
          automaticallyExtensible: false,
          useSynonyms: false,
          values: [{ value: 'café', synonyms: [] }],
        },
      ]),
    );
    expect(listed.parse('je voudrais un cidre').entities).toEqual([]);
    expect(listed.parse('un café pour moi').entities.map((e) => e.value)).toEqual(['café']);
  });

  it('extracts each of the values that fold alike (case, accents, punctuation) as typed, else the first listed', () => {
    const city = (automaticallyExtensible: boolean) => ({
      name: 'city',
      automaticallyExtensible,
      useSynonyms: true,
      values: [
        { value: 'Paris', synonyms: ['city of light'] },
        { value: 'paris', synonyms: [] },
        { value: 'Zürich', synonyms: [] },
        { value: 'Zurich', synonyms: [] },
        { value: 'garching,forschungszentrum', synonyms: [] },
        { value: 'Garching Forschungszentrum', synonyms: ['straßäcker'] },
        { value: 'Strassäcker', synonyms: ['strassäcker', 'city of light'] },
        { value: 'N.Y.C.', synonyms: [] },
        { value: 'n.y.c', synonyms: ['Big Apple'] },
        { value: 'Zu\u0308rich', synonyms: [] },
      ],
    });
    const set = (tagged: boolean, automaticallyExtensible: boolean): NluTrainingSet => ({
      lang: 'en',
      entities: [city(automaticallyExtensible)],
      intents: [
        {
          id: 'go',
          name: 'go',
          utterances: [
            'go to [Lyon](city)',
            'take me to [Nice](city) please',
            'i want to go to [Rome](city)',
          ].map((u) => parts(tagged ? u : u.replace(/\[(\w+)\]\(city\)/, '$1'))),
        },
        { id: 'hi', name: 'hi', utterances: ['hello', 'good morning', 'hi there'].map(parts) },
      ],
    });
    const cases: Array<[string, string]> = [
      ['go to paris', 'paris'],
      ['go to Paris', 'Paris'],
      ['go to PARIS', 'Paris'],
      ['go to Zürich', 'Zürich'],
      ['go to zurich', 'Zurich'],
      ['go to ZURICH', 'Zurich'],
      ['go to ZÜRICH', 'Zürich'],
      // in any Unicode form, and from the first word to the last
      ['go to Zu\u0308rich', 'Zürich'],
      ['go to N.Y.C.', 'N.Y.C.'],
      ['go to n.y.c.', 'n.y.c'],
      ['go to big apple', 'n.y.c'],
      ['go to garching forschungszentrum', 'Garching Forschungszentrum'],
      ['go to garching,forschungszentrum', 'garching,forschungszentrum'],
      ['go to strassäcker', 'Strassäcker'],
      ['go to straßäcker', 'Garching Forschungszentrum'],
      // the same synonym on two values: the first listed
      ['go to city of light', 'Paris'],
    ];
    // taken as listed (an entity no utterance tags) or read by the CRF (a tagged one, extensible or not)
    for (const [tagged, extensible] of [
      [false, false],
      [true, true],
      [true, false],
    ]) {
      const model = trainModel(set(tagged!, extensible!));
      for (const [text, value] of cases)
        expect([text, model.parse(text).entities.map((e) => e.value)]).toEqual([text, [value]]);
      const loaded = loadModel(JSON.parse(JSON.stringify(model.toJSON())));
      for (const [text] of cases) expect(loaded.parse(text)).toEqual(model.parse(text));
    }
  });

  it('reads values that fold alike as typed across spaces and line breaks, and a misspelling as the closest', () => {
    const place = (automaticallyExtensible: boolean) => ({
      name: 'place',
      automaticallyExtensible,
      useSynonyms: false,
      values: ['garching,forschungszentrum', 'garching forschungszentrum', 'Zürich', 'Zurich'].map(
        (value) => ({
          value,
          synonyms: [],
        }),
      ),
    });
    const set = (automaticallyExtensible: boolean): NluTrainingSet => ({
      lang: 'en',
      entities: [place(automaticallyExtensible)],
      intents: [
        {
          id: 'go',
          name: 'go',
          utterances: ['go to [Lyon](place)', 'take me to [Nice](place) please'].map(parts),
        },
        { id: 'hi', name: 'hi', utterances: ['hello', 'good morning', 'hi there'].map(parts) },
      ],
    });
    for (const extensible of [false, true]) {
      const model = trainModel(set(extensible));
      const value = (text: string) => model.parse(text).entities.map((e) => e.value);
      // before: the first listed, 'garching,forschungszentrum'
      expect(value('go to garching  forschungszentrum')).toEqual(['garching forschungszentrum']);
      expect(value('go to Garching\nForschungszentrum')).toEqual(['garching forschungszentrum']);
    }
    // misspelt (an extensible entity reads it): the spelling fewest edits away, not the first listed ('Zürich')
    const extensible = trainModel(set(true));
    expect(extensible.parse('go to zurichh').entities.map((e) => e.value)).toEqual(['Zurich']);
    expect(extensible.parse('go to zürichh').entities.map((e) => e.value)).toEqual(['Zürich']);
  });

  it('answers every value in NFC, whatever Unicode form it was listed, tagged or typed in', () => {
    const nfd = (text: string) => text.normalize('NFD');
    const set = (automaticallyExtensible: boolean): NluTrainingSet => ({
      lang: 'en',
      entities: [
        {
          name: 'dish',
          automaticallyExtensible,
          useSynonyms: true,
          // listed before values were kept in NFC: `Café` in NFD, then in NFC
          values: [
            { value: nfd('Café'), synonyms: [nfd('crème brûlée')] },
            { value: 'Café', synonyms: [] },
            { value: 'tea', synonyms: [] },
          ],
        },
      ],
      intents: [
        {
          id: 'order',
          name: 'order',
          utterances: [
            'i want a [tea](dish)',
            'give me a [latte](dish)',
            `one [${nfd('crêpe')}](dish) please`,
          ].map(parts),
        },
        { id: 'hi', name: 'hi', utterances: ['hello', 'good morning', 'hi there'].map(parts) },
      ],
    });
    const cases: Array<[string, string]> = [
      ['i want a Café', 'Café'],
      [nfd('i want a Café'), 'Café'],
      ['i want a crème brûlée', 'Café'],
    ];
    for (const extensible of [false, true]) {
      const model = trainModel(set(extensible));
      // the texts tagged in utterances are values of an extensible entity
      for (const [text, value] of extensible ? [...cases, [nfd('one crêpe please'), 'crêpe']] : cases) {
        const [found] = model.parse(text).entities;
        expect([text, found?.value]).toEqual([text, value]);
        // the text stays as typed: it is the input between the offsets
        expect(found!.text).toBe(text.slice(found!.start, found!.end));
      }
    }
    // a value outside the list, typed in NFD
    const extensible = trainModel(set(true));
    const [typed] = extensible.parse(nfd('give me a pâté')).entities;
    expect(typed).toMatchObject({ value: 'pâté', text: nfd('pâté') });
  });

  it('works for other languages (French: accents folded, elisions)', () => {
    const fr = trainModel(frenchAssistant());
    expect(fr.lang).toBe('fr');
    const r = fr.parse('un train de saint etienne à paris');
    expect(top(r).id).toBe('reserver-train');
    expect(slots(r)).toMatchObject({
      depart: { entity: 'ville', value: 'Saint-Étienne', text: 'saint etienne' },
      arrivee: { entity: 'ville', value: 'Paris' },
    });
    expect(top(fr.parse('quel temps fait-il à nimes')).id).toBe('meteo');
    expect(fr.parse('quel temps fait-il à nimes').entities[0]).toMatchObject({
      value: 'Nîmes',
      text: 'nimes',
    });
    expect(top(fr.parse('bonjour !')).id).toBe('salutation');
  });

  it('handles sets without entities, without utterances, and empty input', () => {
    const m = trainModel({
      lang: 'en',
      entities: [],
      intents: [
        { id: 'a', name: 'yes', utterances: [[{ text: 'yes' }], [{ text: 'sure' }]] },
        { id: 'b', name: 'no', utterances: [[{ text: 'no' }], [{ text: 'nope' }]] },
        { id: 'c', name: 'empty', utterances: [] },
      ],
    });
    expect(top(m.parse('yes')).id).toBe('a');
    expect(m.parse('no').intents.map((i) => i.id)).toEqual(['b', 'a']);
    expect(m.parse('   ').intents.every((i) => i.confidence === 0)).toBe(true);
    const empty = trainModel({ lang: 'en', entities: [], intents: [] });
    expect(empty.parse('hello')).toEqual({ intents: [], entities: [] });
  });
});

describe('serialization', () => {
  it('loadModel(toJSON()) gives identical answers, through JSON text too', () => {
    for (const set of [travelAssistant(), metroAssistant(), frenchAssistant()]) {
      const model = trainModel(set);
      const loaded = loadModel(JSON.parse(JSON.stringify(model.toJSON())));
      expect(loaded.lang).toBe(model.lang);
      const texts = [
        'book a train from lyon to paris',
        'train from grenoble to pariss',
        'order a hamburger and an espresso',
        'from airport to central',
        'un train de saint etienne à paris',
        'asdf',
        '',
      ];
      for (const t of texts) expect(loaded.parse(t)).toEqual(model.parse(t));
      expect(loaded.toJSON()).toEqual(model.toJSON());
    }
  });

  it('training is deterministic', () => {
    expect(JSON.stringify(trainModel(travelAssistant()).toJSON())).toBe(
      JSON.stringify(trainModel(travelAssistant()).toJSON()),
    );
  });

  it('rejects what is not a serialized model', () => {
    expect(() => loadModel({} as never)).toThrow(/not a serialized NLU model/);
  });
});

describe('robustness', () => {
  // how fast is measured by bench/nlu (latency), not asserted here: a busy machine is not a bug
  it('parses long and odd inputs', () => {
    const model = trainModel(travelAssistant());
    const long = `${'book a train from lyon to paris '.repeat(300)}${'x'.repeat(5000)}`;
    const r = model.parse(long);
    expect(r.entities.length).toBeGreaterThan(100);
    expect(model.parse('🙂🙂 !!! ???').intents[0]!.confidence).toBe(0);
  });
});
