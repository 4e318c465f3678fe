import { accountWithBot, dev, say, utterance } from './support/fixtures';
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
  });
});
