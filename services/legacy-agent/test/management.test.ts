import { randomUUID } from 'node:crypto';
import { storedBytes } from '../src/domain/assistant-places';
import { newId } from '../src/domain/ids';
import type { IntentDoc } from '../src/persistence/collections';
import { accountWithBot, client, dev, say, trained, utterance } from './support/fixtures';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';

const fields = (res: { body: { details: { issues: Array<{ field: string }> } } }) =>
  res.body.details.issues.map((i) => i.field);

const station = {
  name: 'Station',
  automaticallyExtensible: { en: true, fr: false },
  useSynonyms: { en: true, fr: false },
  data: {
    en: [
      { value: 'Marienplatz', synonyms: ['marienplatz square'] },
      { value: 'Hauptbahnhof', synonyms: ['main station', 'hbf'] },
    ],
    fr: [{ value: 'Gare du Nord' }],
  },
};

const fullIntent = {
  name: 'Find connection',
  isWelcome: false,
  isFallback: false,
  events: ['FIND'],
  disambiguationSentence: { en: 'Find a connection', fr: 'Trouver une connexion' },
  inputContexts: ['travel'],
  outputContexts: { en: [{ name: 'booking', lifespan: 2 }, 'itinerary'] },
  utterances: {
    en: [
      utterance('from [Marienplatz](Station:from) to [Hauptbahnhof](Station:to)'),
      utterance('i need a train'),
    ],
  },
  parameters: { en: [{ name: 'from', entity: 'Station', required: true }] },
  conditionalResponses: {
    en: {
      default: {
        default: [
          say('Here is your connection', 'Found one'),
          { type: 'link', text: 'Timetable', value: 'https://mvg.de', openInPanel: true },
        ],
        speaker: [{ type: 'speaker', speaker: '<speak>Found one</speak>' }],
      },
      if: [
        {
          conditions: [['slots.to', '==', 'Hauptbahnhof']],
          fulfillment: { default: [say('To the main station')] },
        },
      ],
    },
  },
  settings: { en: { placeholder: 'Where to?' } },
};

describe('legacy intents and entities (spec 4.3)', () => {
  let app: LegacyTestApp;
  beforeAll(async () => {
    app = await startLegacyApp();
  });
  afterAll(() => app.close());

  async function botWithStation() {
    const { bot } = await accountWithBot(app.http, { languages: ['en', 'fr'] });
    await app.http.post('/v1/entities').set(dev(bot)).send(station).expect(200);
    return bot;
  }

  describe('intents', () => {
    it('creates, reads, lists, updates and deletes an intent with the full shape of spec 2.9', async () => {
      const bot = await botWithStation();
      const created = await app.http.post('/v1/intents').set(dev(bot)).send(fullIntent).expect(200);
      expect(created.body).toEqual({
        id: expect.any(String),
        ...fullIntent,
        endConversation: false,
        outputContexts: {
          en: [
            { name: 'booking', lifespan: 2 },
            { name: 'itinerary', lifespan: 5 },
          ],
        },
        conditionalResponses: {
          en: {
            ...fullIntent.conditionalResponses.en,
            default: {
              ...fullIntent.conditionalResponses.en.default,
              default: [
                { type: 'text', text: ['Here is your connection', 'Found one'] },
                { type: 'link', text: 'Timetable', value: 'https://mvg.de', openInPanel: true },
              ],
            },
          },
        },
        settings: {
          en: { placeholder: 'Where to?', disableInput: false },
          fr: { placeholder: 'How can I help you?', disableInput: false },
        },
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      const id = created.body.id;
      await app.http.get(`/v1/intents/${id}`).set(dev(bot)).expect(200, created.body);
      const list = await app.http.get('/v1/intents').set(dev(bot)).expect(200);
      expect(list.body).toEqual([created.body]);

      const updated = await app.http
        .post(`/v1/intents/${id}`)
        .set(dev(bot))
        .send({ name: 'Find a connection', endConversation: true })
        .expect(200);
      expect(updated.body).toMatchObject({
        id,
        name: 'Find a connection',
        endConversation: true,
        events: ['FIND'],
      });
      expect(updated.body.utterances).toEqual(created.body.utterances);

      await app.http.delete(`/v1/intents/${id}`).set(dev(bot)).expect(200, { id, deleted: true });
      await app.http.get(`/v1/intents/${id}`).set(dev(bot)).expect(404);
      await app.http.get('/v1/intents').set(dev(bot)).expect(200, []);
    });

    it('accepts an intent with no fields at all, with default settings', async () => {
      const { bot } = await accountWithBot(app.http);
      const res = await app.http.post('/v1/intents').set(dev(bot)).send({}).expect(200);
      expect(res.body).toMatchObject({
        name: expect.any(String),
        isWelcome: false,
        isFallback: false,
        events: [],
        utterances: {},
        settings: { en: { placeholder: 'How can I help you?', disableInput: false } },
      });
    });

    it('hides another assistant’s intent: 404 on read, update and delete', async () => {
      const { bot: mine } = await accountWithBot(app.http);
      const { bot: theirs } = await accountWithBot(app.http);
      const res = await app.http.post('/v1/intents').set(dev(theirs)).send({ name: 'secret' }).expect(200);
      await app.http.get(`/v1/intents/${res.body.id}`).set(dev(mine)).expect(404);
      await app.http.post(`/v1/intents/${res.body.id}`).set(dev(mine)).send({ name: 'mine now' }).expect(404);
      await app.http.delete(`/v1/intents/${res.body.id}`).set(dev(mine)).expect(404);
      await app.http.get(`/v1/intents/${res.body.id}`).set(dev(theirs)).expect(200);
    });

    it('answers 400 naming every offending field, and stores nothing', async () => {
      const bot = await botWithStation();
      const res = await app.http
        .post('/v1/intents')
        .set(dev(bot))
        .send({
          name: 42,
          events: ['has space'],
          utterances: { en: [{ data: [{ text: 'x', slot_name: 'orphan' }] }] },
          conditionalResponses: {
            en: {
              default: { web: [{ type: 'video', url: 'x' }] },
              if: [{ conditions: [['slots.a', 'like', 'b']], fulfillment: {} }],
            },
          },
          settings: { en: { disableInput: 'yes' } },
          // keys the store cannot hold (they answered 500)
          parameters: { en: [{ $where: '1' }, { ok: { 'a.b': 2 } }] },
        })
        .expect(400);
      expect(fields(res)).toEqual(
        expect.arrayContaining([
          'name',
          'parameters.en.0.$where',
          'parameters.en.1.ok.a.b',
          'events.0',
          'utterances.en.0.data.0.slot_name',
          'conditionalResponses.en.default.web.0.type',
          'conditionalResponses.en.if.0.conditions.0.1',
          'settings.en.disableInput',
        ]),
      );
      await app.http.get('/v1/intents').set(dev(bot)).expect(200, []);
    });

    it('refuses a misspelled field instead of storing an intent without it, and takes back what GET answered', async () => {
      const bot = await botWithStation();
      const typo = await app.http
        .post('/v1/intents')
        .set(dev(bot))
        .send({ name: 'Typo', utterance: { en: [{ data: [{ text: 'hello' }] }] } })
        .expect(400);
      expect(typo.body.details.issues).toEqual([
        { field: 'body', message: expect.stringContaining('"utterance"') },
      ]);
      await app.http.get('/v1/intents').set(dev(bot)).expect(200, []);

      const created = await app.http
        .post('/v1/intents')
        .set(dev(bot))
        .send({ name: 'Greet', utterances: { en: [{ data: [{ text: 'hello' }] }] } })
        .expect(200);
      const edited = { ...created.body, name: 'Greeting' }; // id, createdAt and updatedAt included
      const updated = await app.http
        .post(`/v1/intents/${created.body.id}`)
        .set(dev(bot))
        .send(edited)
        .expect(200);
      expect(updated.body).toMatchObject({
        id: created.body.id,
        name: 'Greeting',
        createdAt: created.body.createdAt,
      });
    });

    it('refuses languages the assistant does not speak and entities it does not have', async () => {
      const bot = await botWithStation();
      const res = await app.http
        .post('/v1/intents')
        .set(dev(bot))
        .send({
          utterances: { de: [utterance('hallo')], en: [utterance('to [Paris](City)')] },
          settings: { it: { placeholder: 'ciao' } },
        })
        .expect(400);
      expect(fields(res).sort()).toEqual(['settings.it', 'utterances.de', 'utterances.en.0.data.1.entity']);
    });

    it('refuses a second intent with the same name (409)', async () => {
      const { bot } = await accountWithBot(app.http);
      await app.http.post('/v1/intents').set(dev(bot)).send({ name: 'Greeting' }).expect(200);
      const res = await app.http.post('/v1/intents').set(dev(bot)).send({ name: 'greeting' }).expect(409);
      expect(res.body.error).toBe('IntentNameTaken');
    });

    it('answers 400, not 500, to a body that is not JSON', async () => {
      const { bot } = await accountWithBot(app.http);
      const res = await app.http
        .post('/v1/intents')
        .set(dev(bot))
        .set('Content-Type', 'application/json')
        .send('{"name": ')
        .expect(400);
      expect(res.body).toMatchObject({ status: 400, error: 'InvalidInput' });
    });
  });

  describe('entities', () => {
    it('creates, reads, lists, updates and deletes an entity of spec 2.10', async () => {
      const { bot } = await accountWithBot(app.http, { languages: ['en', 'fr'] });
      const created = await app.http.post('/v1/entities').set(dev(bot)).send(station).expect(200);
      expect(created.body).toEqual({
        id: expect.any(String),
        ...station,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      await app.http.get(`/v1/entities/${created.body.id}`).set(dev(bot)).expect(200, created.body);
      await app.http.get('/v1/entities').set(dev(bot)).expect(200, [created.body]);
      const updated = await app.http
        .post(`/v1/entities/${created.body.id}`)
        .set(dev(bot))
        .send({ data: { en: [{ value: 'Odeonsplatz', synonyms: [] }] } })
        .expect(200);
      expect(updated.body).toMatchObject({
        name: 'Station',
        data: { en: [{ value: 'Odeonsplatz', synonyms: [] }] },
      });
      await app.http.delete(`/v1/entities/${created.body.id}`).set(dev(bot)).expect(200);
      await app.http.get(`/v1/entities/${created.body.id}`).set(dev(bot)).expect(404);
    });

    it('refuses a misspelled field, and takes back what GET answered', async () => {
      const { bot } = await accountWithBot(app.http, { languages: ['en', 'fr'] });
      const typo = await app.http
        .post('/v1/entities')
        .set(dev(bot))
        .send({ ...station, name: 'city', synonym: true })
        .expect(400);
      expect(typo.body.details.issues).toEqual([
        { field: 'body', message: expect.stringContaining('"synonym"') },
      ]);
      const created = await app.http.post('/v1/entities').set(dev(bot)).send(station).expect(200);
      const updated = await app.http
        .post(`/v1/entities/${created.body.id}`)
        .set(dev(bot))
        .send({ ...created.body, name: 'stop' })
        .expect(200);
      expect(updated.body).toMatchObject({ id: created.body.id, name: 'stop' });
      await app.http.post(`/v1/entities/${created.body.id}`).set(dev(bot)).send({ nme: 'x' }).expect(400);
    });

    it('requires synonyms where useSynonyms is true, and both flags for every language', async () => {
      const { bot } = await accountWithBot(app.http, { languages: ['en', 'fr'] });
      const res = await app.http
        .post('/v1/entities')
        .set(dev(bot))
        .send({
          name: 'Fruit',
          automaticallyExtensible: { en: false },
          useSynonyms: { en: true },
          data: {
            en: [{ value: 'apple' }, { value: 'pear', synonyms: ['poire'] }],
            fr: [{ value: 'pomme' }],
          },
        })
        .expect(400);
      expect(fields(res).sort()).toEqual([
        'automaticallyExtensible.fr',
        'data.en.0.synonyms',
        'useSynonyms.fr',
      ]);
      const missing = await app.http.post('/v1/entities').set(dev(bot)).send({ name: 'Fruit' }).expect(400);
      expect(fields(missing).sort()).toEqual(['automaticallyExtensible', 'data', 'useSynonyms']);
    });

    it('accepts values and synonyms that differ only in letter case, accents or punctuation; refuses a value twice', async () => {
      const { bot } = await accountWithBot(app.http, { languages: ['en'] });
      // as Braun et al.'s ChatbotCorpus and other tools' exports have them: matching tells them apart as typed
      const city = {
        name: 'City',
        automaticallyExtensible: { en: false },
        useSynonyms: { en: true },
        data: {
          en: [
            { value: 'Paris', synonyms: ['paris', 'City of Light'] },
            { value: 'paris', synonyms: [] },
            { value: 'Lyon', synonyms: ['city of light', 'LYON'] },
            { value: 'Zürich', synonyms: [] },
            { value: 'Zurich', synonyms: [] },
            { value: 'garching,forschungszentrum', synonyms: ['straßäcker'] },
            { value: 'Garching Forschungszentrum', synonyms: ['strassäcker'] },
          ],
        },
      };
      const created = await app.http.post('/v1/entities').set(dev(bot)).send(city).expect(200);
      expect(created.body.data).toEqual(city.data);
      await app.http
        .post(`/v1/entities/${created.body.id}`)
        .set(dev(bot))
        .send({ data: { en: [...city.data.en, { value: 'LYON', synonyms: [] }] } })
        .expect(200);
      // the same value twice is one value written twice
      const twice = await app.http
        .post(`/v1/entities/${created.body.id}`)
        .set(dev(bot))
        .send({ data: { en: [...city.data.en, { value: 'Zurich', synonyms: [] }] } })
        .expect(400);
      expect(twice.body.details.issues).toEqual([
        { field: 'data.en.7.value', message: 'duplicate value "Zurich"' },
      ]);
      expect(
        (await app.http.get(`/v1/entities/${created.body.id}`).set(dev(bot)).expect(200)).body.data.en,
      ).toHaveLength(8);
    });

    it('keeps values and synonyms in NFC: a value sent in two Unicode forms is one value written twice', async () => {
      const { bot } = await accountWithBot(app.http, { languages: ['en'] });
      const nfd = (text: string) => text.normalize('NFD');
      const dish = {
        name: 'Dish',
        automaticallyExtensible: { en: false },
        useSynonyms: { en: true },
        data: {
          en: [
            { value: nfd('Café'), synonyms: [nfd('crème brûlée')] },
            { value: 'tea', synonyms: [] },
          ],
        },
      };
      const created = await app.http.post('/v1/entities').set(dev(bot)).send(dish).expect(200);
      const stored = [
        { value: 'Café', synonyms: ['crème brûlée'] },
        { value: 'tea', synonyms: [] },
      ];
      expect(created.body.data.en).toEqual(stored);
      for (const write of [
        app.http.post('/v1/entities').send({ ...dish, name: 'Drink' }),
        app.http.post(`/v1/entities/${created.body.id}`),
      ]) {
        const twice = await write
          .set(dev(bot))
          .send({ data: { en: [...stored, { value: nfd('Café'), synonyms: [] }] } })
          .expect(400);
        expect(twice.body.details.issues).toEqual([
          { field: 'data.en.2.value', message: 'duplicate value "Café"' },
        ]);
      }
      expect(
        (await app.http.get(`/v1/entities/${created.body.id}`).set(dev(bot)).expect(200)).body.data.en,
      ).toEqual(stored);
      // typed in either form, the value is the one stored
      await app.http
        .post('/v1/intents')
        .set(dev(bot))
        .send({
          name: 'Order',
          utterances: { en: ['i want a [tea](Dish)', 'one [tea](Dish) please'].map(utterance) },
        })
        .expect(200);
      await trained(app.http, bot);
      for (const text of ['i want a Café', nfd('i want a café'), nfd('i want a crème brûlée')]) {
        const reply = await app.http
          .post('/v1/Messages')
          .set(client(bot))
          .send({ userId: 'u', platform: 'web', text })
          .expect(200);
        expect([text, reply.body.intents[0].slots]).toEqual([text, { Dish: 'Café' }]);
      }
    });

    it('names the stored entity with the fields sent when an update is refused for what it did not send, until one resolves it', async () => {
      const bot = await botWithStation();
      const [entity] = (await app.http.get('/v1/entities').set(dev(bot)).expect(200)).body;
      // stored before values were checked
      await app.store
        .collection('legacy_entities')
        .updateOne(
          { _id: entity.id },
          { $set: { 'data.en': [...station.data.en, { value: 'Marienplatz', synonyms: [] }] } },
        );
      const rename = await app.http
        .post(`/v1/entities/${entity.id}`)
        .set(dev(bot))
        .send({ name: 'Stop' })
        .expect(400);
      // the body sent was fine: the message says the entity as it would be stored is not
      expect(rename.body.message).toBe(
        'Invalid entity (the stored one with the fields sent): data.en.2.value: duplicate value "Marienplatz"',
      );
      await app.http
        .post(`/v1/entities/${entity.id}`)
        .set(dev(bot))
        .send({ name: 'Stop', data: station.data })
        .expect(200);
    });

    it('refuses deleting or renaming an entity intents use, and a duplicate name', async () => {
      const bot = await botWithStation();
      const [entity] = (await app.http.get('/v1/entities').set(dev(bot)).expect(200)).body;
      const intent = await app.http
        .post('/v1/intents')
        .set(dev(bot))
        .send({ name: 'go', utterances: { en: [utterance('to [Marienplatz](Station)')] } })
        .expect(200);
      const del = await app.http.delete(`/v1/entities/${entity.id}`).set(dev(bot)).expect(409);
      expect(del.body).toMatchObject({
        error: 'EntityInUse',
        details: { intents: [{ id: intent.body.id, name: 'go' }] },
      });
      await app.http.post(`/v1/entities/${entity.id}`).set(dev(bot)).send({ name: 'Stop' }).expect(409);
      await app.http.post('/v1/entities').set(dev(bot)).send(station).expect(409);
      await app.http.delete(`/v1/intents/${intent.body.id}`).set(dev(bot)).expect(200);
      await app.http.delete(`/v1/entities/${entity.id}`).set(dev(bot)).expect(200);
    });

    it('takes entity and slot names holding combining marks, in NFC: a tag in another Unicode form names the same entity', async () => {
      const { bot } = await accountWithBot(app.http, { languages: ['en', 'hi'] });
      const entity = (name: string) => ({
        name,
        automaticallyExtensible: { en: false },
        useSynonyms: { en: false },
        data: { en: [{ value: 'Marienplatz' }] },
      });
      const cafe = await app.http.post('/v1/entities').set(dev(bot)).send(entity('Café')).expect(200);
      // Devanagari vowel signs and virama are combining marks
      await app.http.post('/v1/entities').set(dev(bot)).send(entity('स्टेशन')).expect(200);
      const intent = await app.http
        .post('/v1/intents')
        .set(dev(bot))
        .send({
          name: 'go',
          utterances: {
            en: [utterance('to [Marienplatz](Cafe\u0301:from)')],
            hi: [utterance('[Marienplatz](स्टेशन:गंतव्य) जाना है')],
          },
        })
        .expect(200);
      expect(intent.body.utterances.en[0].data[1]).toEqual({
        text: 'Marienplatz',
        entity: 'Café',
        slot_name: 'from',
      });
      const del = await app.http.delete(`/v1/entities/${cafe.body.id}`).set(dev(bot)).expect(409);
      expect(del.body.details.intents).toEqual([{ id: intent.body.id, name: 'go' }]);
      const again = await app.http.post('/v1/entities').set(dev(bot)).send(entity('Cafe\u0301')).expect(409);
      expect(again.body.error).toBe('EntityNameTaken');
    });

    it('finds an entity tagged in another Unicode form of its name than the one it was created with', async () => {
      const { bot } = await accountWithBot(app.http);
      const entity = (name: string) => ({
        name,
        automaticallyExtensible: { en: false },
        useSynonyms: { en: false },
        data: { en: [{ value: 'Marienplatz' }] },
      });
      // forms NFC changes without a combining mark: kept as sent, taken by the other form (one name), tagged by either
      const forms = [
        { stored: '\u212B', tagged: 'A\u030A' }, // the Ångström sign, and A with a combining ring
        { stored: '\u1100\u1161', tagged: '\uAC00' }, // Hangul in conjoining jamo, and the syllable
        { stored: '\u095B\u0939\u0930', tagged: '\u091C\u093C\u0939\u0930' }, // Devanagari ज़ in one letter, and with a nukta
      ];
      for (const { stored, tagged } of forms) {
        await app.http.post('/v1/entities').set(dev(bot)).send(entity(stored)).expect(200);
        const taken = await app.http.post('/v1/entities').set(dev(bot)).send(entity(tagged)).expect(409);
        expect(taken.body.error).toBe('EntityNameTaken');
        const intent = await app.http
          .post('/v1/intents')
          .set(dev(bot))
          .send({ utterances: { en: [utterance(`to [Marienplatz](${tagged}:to)`)] } })
          .expect(200);
        expect(intent.body.utterances.en[0].data[1]).toEqual({
          text: 'Marienplatz',
          entity: stored,
          slot_name: 'to',
        });
      }
    });

    /** A bot with Station, and intents: `go` and `stop` tag Station, `hi` tags nothing. */
    async function botWithStationUsers() {
      const bot = await botWithStation();
      const [entity] = (await app.http.get('/v1/entities').set(dev(bot)).expect(200)).body;
      const ids: string[] = [];
      for (const [name, text] of [
        ['go', 'to [Marienplatz](Station)'],
        ['hi', 'hello'],
        ['stop', 'at [Hauptbahnhof](Station:at)'],
      ] as const) {
        const made = await app.http
          .post('/v1/intents')
          .set(dev(bot))
          .send({ name, utterances: { en: [utterance(text)] } })
          .expect(200);
        ids.push(made.body.id);
      }
      return {
        bot,
        entity,
        users: [
          { id: ids[0], name: 'go' },
          { id: ids[2], name: 'stop' },
        ],
      };
    }

    it('reads only the intents that tag an entity to refuse its deletion or rename', async () => {
      const { bot, entity, users } = await botWithStationUsers();
      await trained(app.http, bot); // no training reads the intents meanwhile
      const intents = app.store.collection<IntentDoc>('legacy_intents');
      const find = intents.find.bind(intents);
      const read: string[] = [];
      const spy = jest.spyOn(intents, 'find').mockImplementation(async (filter, options) => {
        const found = await find(filter, options);
        read.push(...found.map((d) => d.name));
        return found;
      });
      try {
        const del = await app.http.delete(`/v1/entities/${entity.id}`).set(dev(bot)).expect(409);
        expect(del.body).toMatchObject({ error: 'EntityInUse', details: { intents: users } });
        await app.http.post(`/v1/entities/${entity.id}`).set(dev(bot)).send({ name: 'Stop' }).expect(409);
      } finally {
        spy.mockRestore();
      }
      expect(read).toEqual(['go', 'stop', 'go', 'stop']);
    });

    it('finds the users among intents stored before they kept the entities they tag, and gives them those at start', async () => {
      const { bot, entity, users } = await botWithStationUsers();
      // as stored before decision 0122 §4, the assistant counting their bytes
      const intents = app.store.collection<IntentDoc>('legacy_intents');
      const entities = app.store.collection('legacy_entities');
      const assistants = app.store.collection<{ _id: string; dataBytes: number }>('legacy_assistants');
      const bytes = async () =>
        [
          ...(await intents.find({ assistantId: bot.id })),
          ...(await entities.find({ assistantId: bot.id })),
        ].reduce((sum, d) => sum + storedBytes(d), 0);
      await intents.updateMany({ assistantId: bot.id }, { $unset: { entityNames: 1 } });
      await assistants.updateOne({ _id: bot.id }, { $set: { dataBytes: await bytes() } });
      const held = await bytes();
      const del = await app.http.delete(`/v1/entities/${entity.id}`).set(dev(bot)).expect(409);
      expect(del.body.details.intents).toEqual(users);

      // another instance starting over the store gives them the field, and counts its bytes
      const other = await startLegacyApp({ store: app.store });
      await other.close();
      const stored = await intents.find({ assistantId: bot.id });
      expect(Object.fromEntries(stored.map((d) => [d.name, d.entityNames]))).toEqual({
        go: ['Station'],
        hi: [],
        stop: ['Station'],
      });
      // the names are read from its utterances, which the budget counts: a full assistant is not pushed past it
      expect((await assistants.findOne({ _id: bot.id }))!.dataBytes).toBe(held);
      expect(await bytes()).toBe(held);
      const again = await app.http.delete(`/v1/entities/${entity.id}`).set(dev(bot)).expect(409);
      expect(again.body.details.intents).toEqual(users);
    });

    /** Runs `meanwhile` once, right after an intent's check read the entities it tags (before its write). */
    function afterEntityCheck(meanwhile: () => Promise<void>) {
      const entities = app.store.collection('legacy_entities');
      const find = entities.find.bind(entities);
      let done = false;
      return jest.spyOn(entities, 'find').mockImplementation(async (filter, options) => {
        const found = await find(filter, options);
        // the intent's check reads without options; training reads sorted
        if (!options && !done) {
          done = true;
          await meanwhile();
        }
        return found;
      });
    }

    it('never lets an intent keep tagging an entity deleted while it was created or updated', async () => {
      const bot = await botWithStation();
      const [entity] = (await app.http.get('/v1/entities').set(dev(bot)).expect(200)).body;
      const tagged = { en: [utterance('to [Marienplatz](Station)')] };
      // created: the entity is deleted between the intent's check and its write
      let spy = afterEntityCheck(async () => {
        await app.http.delete(`/v1/entities/${entity.id}`).set(dev(bot)).expect(200);
      });
      try {
        const refused = await app.http
          .post('/v1/intents')
          .set(dev(bot))
          .send({ name: 'go', utterances: tagged })
          .expect(400);
        expect(fields(refused)).toEqual(['utterances.en.0.data.1.entity']);
      } finally {
        spy.mockRestore();
      }
      await app.http.get('/v1/intents').set(dev(bot)).expect(200, []);

      // updated: the same, for an intent that did not tag it before
      const again = await app.http.post('/v1/entities').set(dev(bot)).send(station).expect(200);
      const intent = await app.http.post('/v1/intents').set(dev(bot)).send({ name: 'go' }).expect(200);
      spy = afterEntityCheck(async () => {
        await app.http.delete(`/v1/entities/${again.body.id}`).set(dev(bot)).expect(200);
      });
      try {
        await app.http
          .post(`/v1/intents/${intent.body.id}`)
          .set(dev(bot))
          .send({ name: 'go on', utterances: tagged })
          .expect(400);
      } finally {
        spy.mockRestore();
      }
      const kept = await app.http.get(`/v1/intents/${intent.body.id}`).set(dev(bot)).expect(200);
      expect(kept.body).toMatchObject({ name: 'go', utterances: {} });
    });

    it('keeps refusing to delete an entity an intent tags after its update, refused for an entity deleted meanwhile, is undone', async () => {
      const bot = await botWithStation();
      const [entity] = (await app.http.get('/v1/entities').set(dev(bot)).expect(200)).body;
      const intent = await app.http
        .post('/v1/intents')
        .set(dev(bot))
        .send({ name: 'go', utterances: { en: [utterance('to [Marienplatz](Station)')] } })
        .expect(200);
      // stored before decision 0122 §4: the intent does not say which entities it tags
      await app.store
        .collection<IntentDoc>('legacy_intents')
        .updateOne({ _id: intent.body.id }, { $unset: { entityNames: 1 } });
      const stop = await app.http
        .post('/v1/entities')
        .set(dev(bot))
        .send({ ...station, name: 'Stop' })
        .expect(200);
      const spy = afterEntityCheck(async () => {
        await app.http.delete(`/v1/entities/${stop.body.id}`).set(dev(bot)).expect(200);
      });
      try {
        await app.http
          .post(`/v1/intents/${intent.body.id}`)
          .set(dev(bot))
          .send({ utterances: { en: [utterance('to [Marienplatz](Stop)')] } })
          .expect(400);
      } finally {
        spy.mockRestore();
      }
      const del = await app.http.delete(`/v1/entities/${entity.id}`).set(dev(bot)).expect(409);
      expect(del.body.details.intents).toEqual([{ id: intent.body.id, name: 'go' }]);
    });

    it('refuses deleting an entity an intent tags once the intent is written, even if it read it before', async () => {
      const bot = await botWithStation();
      const [entity] = (await app.http.get('/v1/entities').set(dev(bot)).expect(200)).body;
      const intents = app.store.collection('legacy_intents');
      const insertOne = intents.insertOne.bind(intents);
      // the deletion reads the entity and finds no user, then the intent is written before the deletion's write
      const entities = app.store.collection('legacy_entities');
      const deleteOne = entities.deleteOne.bind(entities);
      let created: Promise<{ status: number }> | undefined;
      const spy = jest.spyOn(entities, 'deleteOne').mockImplementationOnce(async (filter) => {
        let written!: () => void;
        const inserted = new Promise<void>((resolve) => {
          written = resolve;
        });
        const insertSpy = jest.spyOn(intents, 'insertOne').mockImplementationOnce(async (doc) => {
          const result = await insertOne(doc);
          written();
          return result;
        });
        created = app.http
          .post('/v1/intents')
          .set(dev(bot))
          .send({ name: 'go', utterances: { en: [utterance('to [Marienplatz](Station)')] } })
          .then((res) => res);
        await inserted;
        insertSpy.mockRestore();
        return deleteOne(filter);
      });
      let deletion: { status: number; body: { error?: string } };
      try {
        deletion = await app.http.delete(`/v1/entities/${entity.id}`).set(dev(bot));
      } finally {
        spy.mockRestore();
      }
      const creation = await created!;
      // one of them gives way: never an intent tagging an entity that is gone
      const intentsLeft = (await app.http.get('/v1/intents').set(dev(bot)).expect(200)).body;
      const entitiesLeft = (await app.http.get('/v1/entities').set(dev(bot)).expect(200)).body;
      expect({ deletion: deletion.status, creation: creation.status }).toEqual(
        entitiesLeft.length === 1 ? { deletion: 409, creation: 200 } : { deletion: 200, creation: 400 },
      );
      if (entitiesLeft.length === 0) expect(intentsLeft).toEqual([]);
    });

    it('creates an intent tagging an entity other writers keep changing, never leaving it half-made', async () => {
      const bot = await botWithStation();
      const entities = app.store.collection('legacy_entities');
      const [entity] = await entities.find({ assistantId: bot.id });
      // another writer changes the entity right after every read of it
      const findOne = entities.findOne.bind(entities);
      const spy = jest.spyOn(entities, 'findOne').mockImplementation(async (filter) => {
        const found = await findOne(filter);
        await entities.updateOne({ _id: entity!._id }, { $set: { revision: randomUUID() } });
        return found;
      });
      let creation: { status: number; body: { error?: string } };
      try {
        creation = await app.http
          .post('/v1/intents')
          .set(dev(bot))
          .send({ name: 'go', utterances: { en: [utterance('to [Marienplatz](Station)')] } });
      } finally {
        spy.mockRestore();
      }
      expect({ status: creation.status, error: creation.body.error }).toEqual({
        status: 200,
        error: undefined,
      });
      const intents = (await app.http.get('/v1/intents').set(dev(bot)).expect(200)).body;
      expect(intents.map((i: { name: string }) => i.name)).toEqual(['go']);
      await app.http.delete(`/v1/entities/${entity!._id}`).set(dev(bot)).expect(409);
    });

    it('gives back the place of an intent refused for an entity deleted meanwhile only when it deletes it', async () => {
      const bot = await botWithStation();
      await app.http.post('/v1/intents').set(dev(bot)).send({ name: 'other' }).expect(200);
      const [entity] = (await app.http.get('/v1/entities').set(dev(bot)).expect(200)).body;
      const intents = app.store.collection('legacy_intents');
      const insertOne = intents.insertOne.bind(intents);
      // the entity is deleted after the intent's check; the intent (by its id, a list shows it) after its write
      const checkSpy = afterEntityCheck(async () => {
        await app.http.delete(`/v1/entities/${entity.id}`).set(dev(bot)).expect(200);
      });
      const insertSpy = jest.spyOn(intents, 'insertOne').mockImplementationOnce(async (doc) => {
        const result = await insertOne(doc);
        await app.http.delete(`/v1/intents/${doc._id}`).set(dev(bot)).expect(200);
        return result;
      });
      try {
        await app.http
          .post('/v1/intents')
          .set(dev(bot))
          .send({ name: 'go', utterances: { en: [utterance('to [Marienplatz](Station)')] } })
          .expect(400);
      } finally {
        checkSpy.mockRestore();
        insertSpy.mockRestore();
      }
      const held = await intents.find({ assistantId: bot.id });
      const assistant = await app.store
        .collection<{ _id: string; intentCount: number; dataBytes: number }>('legacy_assistants')
        .findOne({ _id: bot.id });
      expect({ intents: assistant!.intentCount, bytes: assistant!.dataBytes }).toEqual({
        intents: 1,
        bytes: storedBytes(held[0]!),
      });
    });
  });

  describe('lists: whole as before, or a page at a time (an addition)', () => {
    type Stored = { _id: string; name: string; nameKey: string; createdAt: Date };

    /** `count` intents as stored, copies of one made through the API; made at three instants, not in id order */
    async function botWithIntents(count: number) {
      const { bot } = await accountWithBot(app.http);
      const made = await app.http.post('/v1/intents').set(dev(bot)).send({ name: 'I0' }).expect(200);
      const intents = app.store.collection<Stored>('legacy_intents');
      const first = (await intents.findOne({ _id: made.body.id }))!;
      for (let i = 1; i < count; i++)
        await intents.insertOne({
          ...first,
          _id: newId(),
          name: `I${i}`,
          nameKey: `i${i}`,
          createdAt: new Date(first.createdAt.getTime() - (i % 3) * 1000),
        });
      const stored = await intents.find({ assistantId: bot.id });
      const byCreation = [...stored].sort(
        (a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a._id < b._id ? -1 : 1),
      );
      const byId = [...stored].sort((a, b) => (a._id < b._id ? -1 : 1));
      return { bot, byCreation: byCreation.map((d) => d._id), byId: byId.map((d) => d._id) };
    }

    it('answers the whole list in creation order without paging parameters, never reading it whole at once', async () => {
      const { bot, byCreation, byId } = await botWithIntents(250);
      expect(byCreation).not.toEqual(byId);
      const intents = app.store.collection('legacy_intents');
      const find = jest.spyOn(intents, 'find');
      let list: { body: Array<{ id: string; name: string }>; headers: Record<string, string> };
      try {
        list = await app.http.get('/v1/intents?unrelated=1').set(dev(bot)).expect(200);
        expect(find.mock.calls.length).toBeGreaterThan(1);
        for (const [, options] of find.mock.calls) expect(options?.limit).toBeLessThanOrEqual(100);
      } finally {
        find.mockRestore();
      }
      expect(list.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(list.headers['x-next-after']).toBeUndefined();
      expect(list.body.map((i) => i.id)).toEqual(byCreation);
      expect(list.body[0]).toMatchObject({ name: expect.any(String), settings: { en: expect.any(Object) } });
    });

    it('answers a page in id order with limit and after, the next page named in X-Next-After', async () => {
      const { bot, byId } = await botWithIntents(250);
      const seen: string[] = [];
      let after: string | undefined;
      for (let pages = 1; ; pages++) {
        const page = await app.http
          .get('/v1/intents')
          .query({ limit: 100, ...(after ? { after } : {}) })
          .set(dev(bot))
          .expect(200);
        seen.push(...page.body.map((i: { id: string }) => i.id));
        after = page.headers['x-next-after'];
        if (!after) {
          expect(pages).toBe(3);
          break;
        }
        expect(after).toBe(seen[seen.length - 1]);
      }
      expect(seen).toEqual(byId);
      // `after` alone pages too; entities page the same way
      const rest = await app.http.get('/v1/intents').query({ after: byId[199] }).set(dev(bot)).expect(200);
      expect(rest.body.map((i: { id: string }) => i.id)).toEqual(byId.slice(200));
      const withEntities = await botWithStation();
      await app.http
        .post('/v1/entities')
        .set(dev(withEntities))
        .send({ ...station, name: 'Stop' })
        .expect(200);
      const entities = (await app.http.get('/v1/entities').set(dev(withEntities)).expect(200)).body;
      const first = await app.http.get('/v1/entities?limit=1').set(dev(withEntities)).expect(200);
      expect(first.body).toEqual([entities[0]]);
      const second = await app.http
        .get(`/v1/entities?limit=1&after=${first.headers['x-next-after']}`)
        .set(dev(withEntities))
        .expect(200);
      expect(second.body).toEqual([entities[1]]);
      expect(second.headers['x-next-after']).toBeUndefined();
    });

    it('refuses bad paging values with 400 naming them', async () => {
      const { bot } = await accountWithBot(app.http);
      for (const [query, field] of [
        ['limit=0', 'limit'],
        ['limit=201', 'limit'],
        ['limit=ten', 'limit'],
        ['limit=1.5', 'limit'],
        ['limit=1&limit=2', 'limit'],
        ['after=', 'after'],
        [`after=${'x'.repeat(201)}`, 'after'],
      ]) {
        for (const path of ['/v1/intents', '/v1/entities']) {
          const res = await app.http.get(`${path}?${query}`).set(dev(bot)).expect(400);
          expect({ query, error: res.body.error, fields: fields(res) }).toEqual({
            query,
            error: 'InvalidInput',
            fields: [field],
          });
        }
      }
    });
  });

  describe('language tags, case-insensitive (BCP 47): kept as pt-BR', () => {
    const greet = (text: string) => ({ en: [{ data: [{ text }] }] }).en;

    it('keeps each language once, in canonical case, wherever a tag enters', async () => {
      const { bot } = await accountWithBot(app.http, {
        lang: 'PT-br',
        languages: ['pt-BR', 'pt-br', 'zh-hant-tw', 'EN'],
      });
      expect({ lang: bot.lang, languages: bot.languages }).toEqual({
        lang: 'pt-BR',
        languages: ['pt-BR', 'zh-Hant-TW', 'en'],
      });
      const intent = await app.http
        .post('/v1/intents')
        .set(dev(bot))
        .send({
          utterances: { 'pt-br': greet('olá'), 'ZH-HANT-TW': greet('你好') },
          // the same content under two cases of one language is one language
          settings: { 'pt-br': { placeholder: 'Oi' }, 'pt-BR': { placeholder: 'Oi' } },
        })
        .expect(200);
      expect(Object.keys(intent.body.utterances)).toEqual(['pt-BR', 'zh-Hant-TW']);
      expect(intent.body.settings['pt-BR']).toEqual({ placeholder: 'Oi', disableInput: false });
      const stored = await app.store.collection<IntentDoc>('legacy_intents').findOne({ _id: intent.body.id });
      expect(Object.keys(stored!.utterances)).toEqual(['pt-BR', 'zh-Hant-TW']);
      expect(Object.keys(stored!.settings)).toEqual(['pt-BR']);
      const entity = await app.http
        .post('/v1/entities')
        .set(dev(bot))
        .send({
          name: 'Cidade',
          automaticallyExtensible: { 'PT-BR': false },
          useSynonyms: { 'pt-br': false },
          data: { 'pt-Br': [{ value: 'Lisboa' }] },
        })
        .expect(200);
      expect(entity.body).toMatchObject({
        automaticallyExtensible: { 'pt-BR': false },
        useSynonyms: { 'pt-BR': false },
        data: { 'pt-BR': [{ value: 'Lisboa' }] },
      });
      // Messages in any case of a language the assistant speaks
      await trained(app.http, bot);
      const reply = await app.http
        .post('/v1/Messages')
        .set(client(bot))
        .send({ userId: 'u', platform: 'web', text: 'olá', lang: 'pt-br' })
        .expect(200);
      expect(reply.body.status).toEqual({ code: 200, errorType: 'success' });
    });

    it('refuses two cases of one language with different content, naming both, and stores nothing', async () => {
      const { bot } = await accountWithBot(app.http, { lang: 'pt-BR' });
      const refused = await app.http
        .post('/v1/intents')
        .set(dev(bot))
        .send({ name: 'Oi', utterances: { 'pt-BR': greet('olá'), 'pt-br': greet('oi') } })
        .expect(400);
      expect(refused.body.details.issues).toEqual([
        {
          field: 'utterances.pt-br',
          message: '"pt-BR" and "pt-br" are the same language with different content: send one of them',
        },
      ]);
      await app.http.get('/v1/intents').set(dev(bot)).expect(200, []);
      const entity = await app.http
        .post('/v1/entities')
        .set(dev(bot))
        .send({
          name: 'Cidade',
          automaticallyExtensible: { 'pt-BR': false, 'pt-br': true },
          useSynonyms: { 'pt-BR': false },
          data: { 'pt-BR': [{ value: 'Lisboa' }] },
        })
        .expect(400);
      expect(fields(entity)).toEqual(['automaticallyExtensible.pt-br']);
    });

    it('reads what was stored in other cases as canonical, and loses none of it', async () => {
      const { bot } = await accountWithBot(app.http, { lang: 'pt-BR', languages: ['pt-BR', 'en'] });
      const made = await app.http
        .post('/v1/intents')
        .set(dev(bot))
        .send({ name: 'Oi', utterances: { 'pt-BR': greet('olá') } })
        .expect(200);
      // as stored before tags were kept canonical: an assistant speaking pt-br twice, an intent with both cases
      await app.store
        .collection('legacy_assistants')
        .updateOne({ _id: bot.id }, { $set: { lang: 'pt-br', languages: ['pt-br', 'pt-BR', 'en'] } });
      const intents = app.store.collection<IntentDoc>('legacy_intents');
      await intents.updateOne(
        { _id: made.body.id },
        { $set: { utterances: { 'pt-br': greet('oi'), 'pt-BR': greet('olá') }, settings: { 'pt-br': {} } } },
      );
      const read = await app.http.get('/v1/bots').set(dev(bot)).expect(200);
      expect({ lang: read.body.lang, languages: read.body.languages }).toEqual({
        lang: 'pt-BR',
        languages: ['pt-BR', 'en'],
      });
      const intent = await app.http.get(`/v1/intents/${made.body.id}`).set(dev(bot)).expect(200);
      expect(intent.body.utterances).toEqual({ 'pt-BR': greet('olá'), 'pt-br': greet('oi') });
      expect(intent.body.settings).toEqual({
        'pt-BR': { placeholder: 'How can I help you?', disableInput: false },
        en: { placeholder: 'How can I help you?', disableInput: false },
      });
      // an update keeping both is refused, naming both; one sending the field keeps what it sends
      const refused = await app.http
        .post(`/v1/intents/${made.body.id}`)
        .set(dev(bot))
        .send({ name: 'Olá' })
        .expect(400);
      expect(refused.body.details.issues).toEqual([
        {
          field: 'utterances.pt-br',
          message:
            '"pt-BR" and "pt-br" are the same language with different content: send utterances with one of them',
        },
      ]);
      expect((await intents.findOne({ _id: made.body.id }))!.utterances['pt-br']).toEqual(greet('oi'));
      await app.http
        .post(`/v1/intents/${made.body.id}`)
        .set(dev(bot))
        .send({ name: 'Olá', utterances: { 'pt-br': [...greet('olá'), ...greet('oi')] } })
        .expect(200);
      const stored = (await intents.findOne({ _id: made.body.id }))!;
      expect(stored.utterances).toEqual({ 'pt-BR': [...greet('olá'), ...greet('oi')] });
      expect(stored.settings).toEqual({ 'pt-BR': {} });
    });
  });
});
