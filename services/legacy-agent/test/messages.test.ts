import { ManualClock } from '@platform/kernel';
import { waitFor } from '@platform/testkit';
import type { ConversationDoc } from '../src/persistence/collections';
import { accountWithBot, type Bot, client, dev, say, trained, utterance } from './support/fixtures';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';
import { GIBBERISH, travelEntities, travelIntents } from './support/travel-assistant';

describe('legacy Messages (spec 4.4, 2.12) with the NLU engine', () => {
  let app: LegacyTestApp;
  let clock: ManualClock;
  let bot: Bot;
  let users = 0;

  beforeAll(async () => {
    clock = new ManualClock('2026-11-23T10:00:00Z');
    // Pinned randomness: the first text alternative is always chosen.
    app = await startLegacyApp({ clock, random: () => 0, env: { LEGACY_CONVERSATION_IDLE_SECONDS: '600' } });
    ({ bot } = await accountWithBot(app.http));
    for (const entity of travelEntities)
      await app.http.post('/v1/entities').set(dev(bot)).send(entity).expect(200);
    for (const intent of Object.values(travelIntents))
      await app.http.post('/v1/intents').set(dev(bot)).send(intent).expect(200);
    await trained(app.http, bot);
  });
  afterAll(() => app.close());

  const newUser = () => `user-${++users}`;
  const send = (body: Record<string, unknown>, token = bot) =>
    app.http
      .post('/v1/Messages')
      .set(client(token))
      .send({ platform: 'web', ...body });
  const ok = async (body: Record<string, unknown>) => {
    const res = await send(body);
    expect(res.status).toBe(200);
    return res.body;
  };
  const texts = (reply: { fulfillment: Array<{ items: Array<{ text?: string }> }> }) =>
    reply.fulfillment.flatMap((f) => f.items.map((i) => i.text).filter(Boolean));

  it('answers spec 2.12: ids, time, the query, ordered items and the matched intent with its slots', async () => {
    const reply = await ok({ userId: newUser(), text: 'from Marienplatz to main station' });
    expect(reply).toEqual({
      id: expect.any(String),
      timestamp: clock.now().toISOString(),
      sessionId: expect.any(String),
      conversationId: expect.any(String),
      lang: 'en',
      query: 'from Marienplatz to main station',
      fulfillment: [
        { source: 'Travel helper', items: [{ text: 'Here is a connection to the main station.' }] },
      ],
      intents: [
        {
          source: 'Travel helper',
          name: 'FindConnection',
          confidence: expect.any(Number),
          isFallback: false,
          endConversation: false,
          slots: { from: 'Marienplatz', to: 'Hauptbahnhof' },
          entities: [
            expect.objectContaining({
              entity: 'Station',
              slot: 'from',
              value: 'Marienplatz',
              text: 'Marienplatz',
            }),
            expect.objectContaining({
              entity: 'Station',
              slot: 'to',
              value: 'Hauptbahnhof',
              text: 'main station',
            }),
          ],
          settings: { placeholder: 'How can I help you?', disableInput: false },
        },
      ],
      status: { code: 200, errorType: 'success' },
    });
    expect(reply.intents[0].confidence).toBeGreaterThan(0.5);
    expect(reply.intents[0].confidence).toBeLessThanOrEqual(1);
  });

  it('fills slots from synonyms and small misspellings of extensible entities', async () => {
    const reply = await ok({ userId: newUser(), text: 'i need a train from marienplats to hbf' });
    expect(reply.intents[0]).toMatchObject({
      name: 'FindConnection',
      slots: { from: 'Marienplatz', to: 'Hauptbahnhof' },
    });
  });

  it('evaluates conditional responses: conditions first, then the channel’s default stream', async () => {
    const web = await ok({ userId: newUser(), text: 'how do i get to Odeonsplatz' });
    expect(web.fulfillment[0].items).toEqual([
      { text: 'Here is a connection.' },
      { links: { text: 'Timetable', value: 'https://example.com/timetable' } },
    ]);
    const speaker = await ok({ userId: newUser(), platform: 'speaker', text: 'how do i get to Odeonsplatz' });
    expect(speaker.fulfillment[0].items).toEqual([{ speaker: '<speak>Here is a connection.</speak>' }]);
  });

  it('answers the fallback intent below the confidence threshold', async () => {
    const reply = await ok({ userId: newUser(), text: GIBBERISH });
    expect(reply.intents[0]).toMatchObject({ name: 'Fallback', isFallback: true, slots: {} });
    expect(texts(reply)).toEqual(['Sorry, I did not get that.']);
  });

  it('triggers intents by event name, the welcome intent by WELCOME, and the fallback for an unknown event', async () => {
    const userId = newUser();
    const welcome = await ok({ userId, event: 'WELCOME' });
    expect(welcome.intents[0]).toMatchObject({ name: 'Welcome', confidence: 1, isFallback: false });
    expect(welcome.query).toBeUndefined();
    expect(texts(welcome)).toEqual(['Hello! Where do you want to go?']);
    const help = await ok({ userId, event: 'help' });
    expect(help.intents[0]).toMatchObject({ name: 'Help', confidence: 1 });
    expect(help.intents[0].settings).toEqual({ placeholder: 'Ask me anything', disableInput: true });
    const unknown = await ok({ userId, event: 'NO_SUCH_EVENT' });
    expect(unknown.intents[0]).toMatchObject({ name: 'Fallback', isFallback: true });
    // spec 4.4: the fallback answers an event that does not exist, whatever its name (none an intent may list)
    for (const event of ['start over', 'postback:menu', 'x'.repeat(200)]) {
      const other = await ok({ userId, event });
      expect(other.intents[0]).toMatchObject({ name: 'Fallback', isFallback: true });
    }
    // a name that long is no event: refused like a text past its limit
    expect((await send({ userId, event: 'x'.repeat(257) })).status).toBe(400);
  });

  it('makes an intent with input contexts eligible only while they are active, for their lifespan', async () => {
    const userId = newUser();
    const early = await ok({ userId, text: 'yes please' });
    expect(early.intents[0].name).not.toBe('Confirm');
    await ok({ userId, text: 'connection to Odeonsplatz please' }); // sets booking for 2 turns
    const help = await ok({ userId, text: 'what can you do' }); // turn 1 of 2: context condition holds
    expect(texts(help)).toEqual(['Say yes to book it.']);
    const another = await ok({ userId, text: 'i need help' }); // turn 2 of 2
    expect(texts(another)).toEqual(['Say yes to book it.']);
    const late = await ok({ userId, text: 'yes please' }); // booking has expired
    expect(late.intents[0].name).not.toBe('Confirm');
  });

  it('keeps what each of a user’s concurrent messages set: none overwrites the conversation another changed', async () => {
    const { bot: own } = await accountWithBot(app.http);
    const steps = ['a', 'b', 'c', 'd', 'e', 'f'];
    for (const step of steps)
      await app.http
        .post('/v1/intents')
        .set(dev(own))
        .send({
          name: `Step ${step}`,
          events: [`STEP_${step}`],
          outputContexts: { en: [{ name: `done-${step}`, lifespan: 20 }] },
        })
        .expect(200);
    await app.http
      .post('/v1/intents')
      .set(dev(own))
      .send({
        name: 'All done',
        events: ['ALL'],
        inputContexts: steps.map((step) => `done-${step}`),
        conditionalResponses: { en: { default: { default: [say('All steps done.')] } } },
      })
      .expect(200);
    const userId = newUser();
    const replies = await Promise.all(steps.map((step) => send({ userId, event: `STEP_${step}` }, own)));
    expect(replies.map((r) => r.status)).toEqual(steps.map(() => 200));
    expect(new Set(replies.map((r) => r.body.sessionId)).size).toBe(1);
    const all = await send({ userId, event: 'ALL' }, own).expect(200);
    expect(texts(all.body)).toEqual(['All steps done.']);
  });

  it('continues a user’s conversation until an intent ends it, then starts a new one', async () => {
    const userId = newUser();
    const first = await ok({ userId, text: 'connection to Odeonsplatz please' });
    const confirm = await ok({ userId, text: 'yes please' });
    expect(confirm.sessionId).toBe(first.sessionId);
    expect(confirm.conversationId).toBe(first.conversationId);
    expect(confirm.intents[0]).toMatchObject({ name: 'Confirm', endConversation: true, isFallback: false });
    expect(confirm.fulfillment[0].items).toEqual([
      { text: 'Booked!' },
      { button: { text: 'Book another', value: 'i need a train' } },
      {
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
      { events: [{ text: 'Start over', event: 'WELCOME' }] },
      { event: { text: 'Need help?', value: 'HELP' } },
    ]);
    const next = await ok({ userId, text: 'yes please' });
    expect(next.sessionId).toBe(first.sessionId);
    expect(next.conversationId).not.toBe(first.conversationId);
    expect(next.intents[0].name).not.toBe('Confirm'); // the booking context ended with the conversation
    const other = await ok({ userId: newUser(), text: 'help' });
    expect(other.sessionId).not.toBe(first.sessionId);
  });

  it('ends an idle conversation: after the idle time the next message starts a new session', async () => {
    const userId = newUser();
    const first = await ok({ userId, text: 'connection to Odeonsplatz please' });
    clock.advance(599_000);
    const still = await ok({ userId, text: 'help' });
    expect(still.conversationId).toBe(first.conversationId);
    clock.advance(601_000);
    const later = await ok({ userId, text: 'help' });
    expect(later.sessionId).not.toBe(first.sessionId);
    expect(later.conversationId).not.toBe(first.conversationId);
    expect(texts(later)).toEqual(['I find train connections.']); // no booking context any more
  });

  it('forgets an idle conversation: the store removes it once its idle time has passed', async () => {
    const userId = newUser();
    await ok({ userId, text: 'connection to Odeonsplatz please' });
    const conversations = app.store.collection<{ _id: string; lastActivityAt: Date; expiresAt?: Date }>(
      'legacy_conversations',
    );
    const [stored] = await conversations.find({ userId });
    expect(stored!.expiresAt!.getTime() - stored!.lastActivityAt.getTime()).toBe(600_000);
    clock.advance(601_000);
    await waitFor(async () => (await conversations.find({ userId })).length === 0, {
      what: 'the idle conversation removed',
    });
    // the user's next message starts afresh, as it would have anyway
    expect(texts(await ok({ userId, text: 'help' }))).toEqual(['I find train connections.']);
  });

  it('remembers slots within a conversation for conditions', async () => {
    const { bot: memo } = await accountWithBot(app.http);
    for (const entity of travelEntities)
      await app.http.post('/v1/entities').set(dev(memo)).send(entity).expect(200);
    await app.http
      .post('/v1/intents')
      .set(dev(memo))
      .send({
        name: 'Where',
        utterances: {
          en: [utterance('to [Marienplatz](Station:to)'), utterance('going to [Hauptbahnhof](Station:to)')],
        },
      })
      .expect(200);
    await app.http
      .post('/v1/intents')
      .set(dev(memo))
      .send({
        name: 'Price',
        utterances: { en: ['how much is it', 'what does it cost', 'price'].map(utterance) },
        conditionalResponses: {
          en: {
            default: { default: [say('Where to?')] },
            if: [
              {
                conditions: [['to', '==', 'Marienplatz']],
                fulfillment: { default: [say('3 euros to Marienplatz')] },
              },
            ],
          },
        },
      })
      .expect(200);
    await trained(app.http, memo);
    const userId = newUser();
    const m = (text: string) =>
      app.http.post('/v1/Messages').set(client(memo)).send({ userId, platform: 'web', text }).expect(200);
    expect(texts((await m('how much is it')).body)).toEqual(['Where to?']);
    await m('to Marienplatz');
    expect(texts((await m('what does it cost')).body)).toEqual(['3 euros to Marienplatz']);

    // slots named as before are stored as before: a conversation the previous version wrote goes on
    const earlier = newUser();
    const now = clock.now();
    await app.store.collection<ConversationDoc>('legacy_conversations').insertOne({
      _id: `${memo.id}:${earlier}`,
      assistantId: memo.id,
      userId: earlier,
      sessionId: 'earlier-session',
      conversationId: 'earlier-conversation',
      contexts: [],
      slots: { to: 'Marienplatz' },
      startedAt: now,
      lastActivityAt: now,
      expiresAt: new Date(now.getTime() + 600_000),
    });
    const resumed = await app.http
      .post('/v1/Messages')
      .set(client(memo))
      .send({ userId: earlier, platform: 'web', text: 'what does it cost' })
      .expect(200);
    expect(resumed.body.conversationId).toBe('earlier-conversation');
    expect(texts(resumed.body)).toEqual(['3 euros to Marienplatz']);
  });

  it('answers the built-in fallback when the assistant has no fallback intent, and waits for the first model', async () => {
    const { bot: fresh } = await accountWithBot(app.http);
    await app.http
      .post('/v1/intents')
      .set(dev(fresh))
      .send({ name: 'Greet', utterances: { en: ['hello', 'hi there', 'good day'].map(utterance) } })
      .expect(200);
    // Sent at once: the first training is still under way, and the message waits for it.
    const greet = await app.http
      .post('/v1/Messages')
      .set(client(fresh))
      .send({ userId: 'u', platform: 'web', text: 'hi there' })
      .expect(200);
    expect(greet.body.intents[0]).toMatchObject({ name: 'Greet', isFallback: false });
    const fallback = await app.http
      .post('/v1/Messages')
      .set(client(fresh))
      .send({ userId: 'u', platform: 'web', text: GIBBERISH })
      .expect(200);
    expect(fallback.body.intents[0]).toMatchObject({
      name: 'Default Fallback Intent',
      isFallback: true,
      confidence: 1,
      slots: {},
    });
    expect(texts(fallback.body)).toEqual(["Sorry, I didn't get that. Could you say it another way?"]);
  });

  it("says the built-in fallback in the conversation's language, or the operator's text in every language", async () => {
    const { bot: french } = await accountWithBot(app.http, { lang: 'fr', languages: ['fr', 'de', 'sv'] });
    await app.http
      .post('/v1/intents')
      .set(dev(french))
      .send({
        name: 'Saluer',
        utterances: { fr: ['bonjour', 'salut'].map(utterance), de: ['hallo'].map(utterance) },
      })
      .expect(200);
    await trained(app.http, french);
    const fallback = async (lang: string, http = app.http) =>
      texts(
        (
          await http
            .post('/v1/Messages')
            .set(client(french))
            .send({ userId: `u-${lang}`, platform: 'web', lang, event: 'NO_SUCH_EVENT' })
            .expect(200)
        ).body,
      );
    expect(await fallback('fr')).toEqual(["Désolé, je n'ai pas compris. Pouvez-vous le dire autrement ?"]);
    expect(await fallback('de')).toEqual([
      'Entschuldigung, das habe ich nicht verstanden. Können Sie es anders sagen?',
    ]);
    // a language without a text of its own: English
    expect(await fallback('sv')).toEqual(["Sorry, I didn't get that. Could you say it another way?"]);

    const custom = await startLegacyApp({ clock, env: { LEGACY_BUILTIN_FALLBACK_TEXT: 'Pardon?' } });
    try {
      const { bot } = await accountWithBot(custom.http, { lang: 'fr' });
      const res = await custom.http
        .post('/v1/Messages')
        .set(client(bot))
        .send({ userId: 'u', platform: 'web', event: 'NO_SUCH_EVENT' })
        .expect(200);
      expect(texts(res.body)).toEqual(['Pardon?']);
    } finally {
      await custom.close();
    }
  });

  it('extracts each of the values that differ only in letter case or accents as typed, else the first listed', async () => {
    const { bot: cities } = await accountWithBot(app.http);
    await app.http
      .post('/v1/entities')
      .set(dev(cities))
      .send({
        name: 'City',
        automaticallyExtensible: { en: false },
        useSynonyms: { en: true },
        data: {
          en: [
            { value: 'Paris', synonyms: [] },
            { value: 'paris', synonyms: [] },
            { value: 'Zürich', synonyms: [] },
            { value: 'Zurich', synonyms: [] },
          ],
        },
      })
      .expect(200);
    await app.http
      .post('/v1/intents')
      .set(dev(cities))
      .send({
        name: 'Go',
        utterances: {
          en: ['go to [Paris](City)', 'take me to [Zurich](City)', 'i want to go to [paris](City)'].map(
            utterance,
          ),
        },
      })
      .expect(200);
    await trained(app.http, cities);
    const city = async (text: string) => {
      const res = await app.http
        .post('/v1/Messages')
        .set(client(cities))
        .send({ userId: newUser(), platform: 'web', text })
        .expect(200);
      return res.body.intents[0].entities.map((e: { value: string; text: string }) => [e.value, e.text]);
    };
    expect(await city('go to paris')).toEqual([['paris', 'paris']]);
    expect(await city('go to Paris')).toEqual([['Paris', 'Paris']]);
    expect(await city('go to PARIS')).toEqual([['Paris', 'PARIS']]);
    expect(await city('take me to Zürich')).toEqual([['Zürich', 'Zürich']]);
    expect(await city('take me to zurich')).toEqual([['Zurich', 'zurich']]);
  });

  it("finds the assistant's language for a regional tag (BCP 47 lookup), and says which one answered", async () => {
    const { bot: polyglot } = await accountWithBot(app.http, {
      lang: 'pt-BR',
      languages: ['pt-BR', 'pt-PT', 'fr', 'zh-Hant', 'en-GB'],
    });
    const hello = (greeting: string) => ({ default: { default: [say(greeting)] } });
    await app.http
      .post('/v1/intents')
      .set(dev(polyglot))
      .send({
        name: 'Greet',
        events: ['HELLO'],
        conditionalResponses: {
          'pt-BR': hello('Oi'),
          'pt-PT': hello('Olá'),
          fr: hello('Bonjour'),
          'zh-Hant': hello('你好'),
          'en-GB': hello('Hello'),
        },
      })
      .expect(200);
    const answer = async (lang: string) => {
      const res = await app.http
        .post('/v1/Messages')
        .set(client(polyglot))
        .send({ userId: `u-${lang}`, platform: 'web', lang, event: 'HELLO' })
        .expect(200);
      return [res.body.lang, ...texts(res.body)];
    };
    // the tag, then shortened subtag by subtag (a singleton left last goes with it)
    expect(await answer('fr-FR')).toEqual(['fr', 'Bonjour']);
    expect(await answer('FR-ca')).toEqual(['fr', 'Bonjour']);
    expect(await answer('zh-Hant-TW')).toEqual(['zh-Hant', '你好']);
    expect(await answer('fr-CA-u-fw-mon')).toEqual(['fr', 'Bonjour']); // Android 14's regional preferences
    expect(await answer('pt-pt')).toEqual(['pt-PT', 'Olá']);
    // else a language with the same primary subtag: the default language first
    expect(await answer('pt')).toEqual(['pt-BR', 'Oi']);
    expect(await answer('pt-AO')).toEqual(['pt-BR', 'Oi']);
    expect(await answer('en-US')).toEqual(['en-GB', 'Hello']);
    expect(await answer('zh-TW')).toEqual(['zh-Hant', '你好']);
    // without lang, the default language
    const plain = await app.http
      .post('/v1/Messages')
      .set(client(polyglot))
      .send({ userId: 'u-default', platform: 'web', event: 'HELLO' })
      .expect(200);
    expect(plain.body.lang).toBe('pt-BR');

    const none = await app.http
      .post('/v1/Messages')
      .set(client(polyglot))
      .send({ userId: 'u-de', platform: 'web', lang: 'de-DE', event: 'HELLO' })
      .expect(400);
    expect(none.body.status).toMatchObject({
      code: 400,
      errorType: 'invalid_request',
      errorDetails: 'The assistant does not speak de-DE; it speaks pt-BR, pt-PT, fr, zh-Hant, en-GB',
      details: {
        issues: [{ field: 'lang', message: expect.stringContaining('pt-BR, pt-PT, fr, zh-Hant, en-GB') }],
      },
    });
  });

  it('takes the language forms connectors send: en_US as en-US, a blank or null lang as none', async () => {
    const { bot: polyglot } = await accountWithBot(app.http, {
      lang: 'pt-BR',
      languages: ['pt-BR', 'pt-PT', 'en-GB'],
    });
    const hello = (greeting: string) => ({ default: { default: [say(greeting)] } });
    await app.http
      .post('/v1/intents')
      .set(dev(polyglot))
      .send({
        name: 'Greet',
        events: ['HELLO'],
        conditionalResponses: { 'pt-BR': hello('Oi'), 'pt-PT': hello('Olá'), 'en-GB': hello('Hello') },
      })
      .expect(200);
    const answer = async (lang: unknown, userId = 'u-connector') => {
      const res = await app.http
        .post('/v1/Messages')
        .set(client(polyglot))
        .send({ userId, platform: 'facebook', lang, event: 'HELLO' });
      return res.status === 200 ? [res.body.lang, ...texts(res.body)] : res.body.status;
    };
    // Facebook Messenger's and Java's locales
    expect(await answer('en_US')).toEqual(['en-GB', 'Hello']);
    expect(await answer('pt_pt')).toEqual(['pt-PT', 'Olá']);
    // said nothing, as a blank text or event: the session's language, else the default
    for (const none of ['', '   ', null]) {
      expect(await answer(none)).toEqual(['pt-PT', 'Olá']);
      expect(await answer(none, newUser())).toEqual(['pt-BR', 'Oi']);
    }
    expect(await answer('de_DE')).toMatchObject({
      code: 400,
      errorDetails: 'The assistant does not speak de-DE; it speaks pt-BR, pt-PT, en-GB',
    });
    for (const bad of ['en_', '_en', 'en__US', 'en-_US', 42])
      expect(await answer(bad)).toMatchObject({ code: 400, details: { issues: [{ field: 'lang' }] } });
  });

  it('tells Traditional from Simplified Chinese by the region a browser sends (zh-TW is written in Hant)', async () => {
    const hello = (greeting: string) => ({ default: { default: [say(greeting)] } });
    const chinese = async (languages: string[]) => {
      const { bot: zh } = await accountWithBot(app.http, { lang: languages[0], languages });
      await app.http
        .post('/v1/intents')
        .set(dev(zh))
        .send({
          name: 'Greet',
          events: ['HELLO'],
          conditionalResponses: Object.fromEntries(languages.map((l) => [l, hello(`hello in ${l}`)])),
        })
        .expect(200);
      return async (lang: string) =>
        (
          await app.http
            .post('/v1/Messages')
            .set(client(zh))
            .send({ userId: `u-${lang}`, platform: 'web', lang, event: 'HELLO' })
            .expect(200)
        ).body.lang;
    };
    const byScript = await chinese(['zh-Hans', 'zh-Hant', 'en']);
    for (const traditional of ['zh-TW', 'zh-HK', 'zh-MO', 'zh-hk', 'zh-TW-u-ca-roc'])
      expect(await byScript(traditional)).toBe('zh-Hant');
    for (const simplified of ['zh-CN', 'zh-SG', 'zh', 'zh-min-nan'])
      expect(await byScript(simplified)).toBe('zh-Hans');
    // an assistant naming its Chinese by region
    const byRegion = await chinese(['zh-CN', 'zh-TW']);
    for (const traditional of ['zh-Hant', 'zh-HK', 'zh-Hant-HK'])
      expect(await byRegion(traditional)).toBe('zh-TW');
    expect(await byRegion('zh-Hans-SG')).toBe('zh-CN');
    // the script decides before a language without one: zh is written in Simplified characters by most
    const generic = await chinese(['zh', 'zh-Hant']);
    expect(await generic('zh-TW')).toBe('zh-Hant');
    expect(await generic('zh-CN')).toBe('zh');
  });

  describe('errors keep the Messages shape', () => {
    it('answers 400 invalid_request naming the missing fields', async () => {
      const res = await app.http.post('/v1/Messages').set(client(bot)).send({ text: 'hi' }).expect(400);
      expect(res.body).toEqual({
        id: expect.any(String),
        timestamp: expect.any(String),
        status: {
          code: 400,
          errorType: 'invalid_request',
          errorDetails: expect.any(String),
          details: {
            issues: expect.arrayContaining([
              expect.objectContaining({ field: 'userId' }),
              expect.objectContaining({ field: 'platform' }),
            ]),
          },
        },
        requestId: expect.any(String),
      });
      const neither = await send({ userId: 'u' }).expect(400);
      expect(neither.body.status.details.issues[0].field).toBe('text');
      const both = await send({ userId: 'u', text: 'hi', event: 'HELP' }).expect(400);
      expect(both.body.status.details.issues[0].field).toBe('event');
      const lang = await send({ userId: 'u', text: 'hi', lang: 'fr' }).expect(400);
      expect(lang.body.status).toMatchObject({ code: 400, errorType: 'invalid_request' });
    });

    it('answers 400 to a body that is not JSON', async () => {
      const res = await app.http
        .post('/v1/Messages')
        .set(client(bot))
        .set('Content-Type', 'application/json')
        .send('{"userId": ')
        .expect(400);
      expect(res.body.status).toMatchObject({ code: 400, errorType: 'invalid_request' });
    });

    it('answers 413 in its own shape to a body past LEGACY_MESSAGES_BODY_LIMIT_BYTES (64 KiB)', async () => {
      const res = await app.http
        .post('/v1/Messages')
        .set(client(bot))
        .send({ userId: 'u', text: 'hi', payload: { blob: 'x'.repeat(70 * 1024) } })
        .expect(413);
      expect(res.body.status).toMatchObject({ code: 413, errorType: 'payload_too_large' });
    });

    it('answers 401 unauthorized without a known client token, and to a developer token', async () => {
      const none = await app.http
        .post('/v1/Messages')
        .send({ userId: 'u', platform: 'web', text: 'hi' })
        .expect(401);
      expect(none.body.status).toMatchObject({ code: 401, errorType: 'unauthorized' });
      await app.http
        .post('/v1/Messages')
        .set(dev(bot))
        .send({ userId: 'u', platform: 'web', text: 'hi' })
        .expect(401);
      await app.http
        .post('/v1/Messages')
        .set('Authorization', `Bearer lct_${'a'.repeat(43)}`)
        .send({ userId: 'u', platform: 'web', text: 'hi' })
        .expect(401);
    });
  });
});
