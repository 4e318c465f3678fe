import { waitFor } from '@platform/testkit';
import { startTestPlatform, type TestPlatform } from '../harness';

/**
 * A bilingual assistant built through the edge as a developer would, then talked to as its users would:
 * the dialogue rules of decision 0022 end to end, and the defects an audit of them found (a condition on a
 * variable named `toString` answered 500; a slot named `constructor` was never filled; another method than
 * POST on Messages was refused in the platform envelope instead of the Messages shape).
 */

interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies are checked field by field
  body: any;
}

const text = (...alternatives: string[]) => ({ type: 'text', text: alternatives });

describe('legacy dialogue through the edge: a bilingual assistant', () => {
  let platform: TestPlatform;
  let dev: string;
  let client: string;

  const call = async (method: string, path: string, token: string, body?: unknown): Promise<Answer> => {
    const res = await fetch(`${platform.legacyUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const raw = await res.text();
    return { status: res.status, headers: res.headers, body: raw ? JSON.parse(raw) : undefined };
  };
  const manage = async (path: string, body: unknown) => {
    const res = await call('POST', path, dev, body);
    expect(res.status).toBe(200);
    return res.body;
  };
  const say = async (userId: string, body: Record<string, unknown>) => {
    const res = await call('POST', '/v1/Messages', client, { userId, platform: 'web', ...body });
    expect(res.status).toBe(200);
    return res.body;
  };
  const items = (reply: Answer['body']) => reply.fulfillment[0].items;

  beforeAll(async () => {
    // The edge retires legacy v1 on 2025-12-31 by default; an operator keeps it open during a migration.
    platform = await startTestPlatform({ env: { LEGACY_V1_RETIREMENT_DATE: '2099-01-01' } });
    const signup = await fetch(`${platform.legacyUrl}/v2/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'builder', password: 'analytical engine' }),
    });
    const { sessionToken } = (await signup.json()) as { sessionToken: string };
    const bot = await fetch(`${platform.legacyUrl}/v2/bots`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-legacy-session-token': sessionToken },
      body: JSON.stringify({ name: 'Trips', lang: 'en', languages: ['en', 'fr'] }),
    });
    ({ developerToken: dev, clientToken: client } = (await bot.json()) as {
      developerToken: string;
      clientToken: string;
    });

    await manage('/v1/entities', {
      name: 'City',
      automaticallyExtensible: { en: true, fr: false },
      useSynonyms: { en: true, fr: false },
      data: {
        en: [
          { value: 'Paris', synonyms: ['City of Light'] },
          { value: 'London', synonyms: ['the big smoke'] },
        ],
        fr: [{ value: 'Paris' }, { value: 'Lyon' }],
      },
    });
    await manage('/v1/intents', {
      name: 'Welcome',
      isWelcome: true,
      conditionalResponses: {
        en: {
          default: { default: [text('Welcome!'), { type: 'button', text: 'Book', value: 'book a trip' }] },
        },
        fr: { default: { default: [text('Bienvenue !')] } },
      },
      settings: { en: { placeholder: 'Where to?' } },
    });
    await manage('/v1/intents', {
      name: 'Book',
      utterances: {
        en: [
          { data: [{ text: 'book a trip to ' }, { text: 'Paris', entity: 'City', slot_name: 'dest' }] },
          { data: [{ text: 'I want to go to ' }, { text: 'London', entity: 'City', slot_name: 'dest' }] },
          { data: [{ text: 'book a trip' }] },
          { data: [{ text: 'I would like to travel' }] },
        ],
        fr: [
          { data: [{ text: 'je veux aller à ' }, { text: 'Lyon', entity: 'City', slot_name: 'dest' }] },
          { data: [{ text: 'un billet pour ' }, { text: 'Paris', entity: 'City', slot_name: 'dest' }] },
        ],
      },
      outputContexts: { en: [{ name: 'booking', lifespan: 2 }], fr: [{ name: 'booking', lifespan: 2 }] },
      conditionalResponses: {
        en: {
          default: {
            default: [text('Booked.')],
            speaker: [{ type: 'speaker', speaker: '<speak>Booked</speak>' }],
          },
          if: [
            { conditions: [['dest', 'notExists', '']], fulfillment: { default: [text('Where to?')] } },
            {
              conditions: [['dest', '==', 'paris']],
              fulfillment: {
                default: [
                  text('Paris it is.'),
                  { type: 'link', text: 'Guide', value: 'https://example.com/paris', openInPanel: true },
                ],
              },
            },
          ],
        },
        fr: { default: { default: [text('Réservé.')] } },
      },
    });
    await manage('/v1/intents', {
      name: 'Confirm',
      inputContexts: ['booking'],
      utterances: { en: [{ data: [{ text: 'yes' }] }, { data: [{ text: 'yes please' }] }] },
      conditionalResponses: {
        en: {
          default: {
            default: [
              text('Confirmed.'),
              {
                type: 'cards',
                cards: [{ title: 'Ticket', buttons: [{ text: 'Again', value: 'book a trip' }] }],
              },
            ],
          },
        },
      },
    });
    await manage('/v1/intents', {
      name: 'Bye',
      endConversation: true,
      events: ['LEAVE'],
      utterances: { en: [{ data: [{ text: 'goodbye' }] }, { data: [{ text: 'bye bye' }] }] },
      conditionalResponses: {
        en: {
          default: {
            default: [text('Bye.'), { type: 'events', events: [{ text: 'Again', event: 'WELCOME' }] }],
          },
        },
      },
      settings: { en: { disableInput: true } },
    });
    await manage('/v1/intents', {
      name: 'Fallback',
      isFallback: true,
      conditionalResponses: { en: { default: { default: [text('Say again?')] } } },
    });
    await waitFor(async () => (await call('GET', '/v1/bots', dev)).body.training.upToDate === true, {
      timeoutMs: 30_000,
      what: 'the assistant to be trained',
    });
  });
  afterAll(() => platform.stop());

  it('greets in the language asked, answers the fallback to an unknown event, and renders every item kind', async () => {
    const hello = await say('ann', { event: 'WELCOME' });
    expect(items(hello)).toEqual([{ text: 'Welcome!' }, { button: { text: 'Book', value: 'book a trip' } }]);
    expect(hello.intents[0]).toMatchObject({
      name: 'Welcome',
      confidence: 1,
      settings: { placeholder: 'Where to?', disableInput: false },
    });
    expect(items(await say('ann', { event: 'welcome', lang: 'fr' }))).toEqual([{ text: 'Bienvenue !' }]);
    const unknown = await say('ann', { event: 'NO_SUCH_EVENT' });
    expect(unknown.intents[0]).toMatchObject({ name: 'Fallback', isFallback: true, confidence: 1 });
  });

  it('fills slots from synonyms, keeps them for conditions, and answers per channel', async () => {
    expect(items(await say('bob', { text: 'book a trip' }))).toEqual([{ text: 'Where to?' }]);
    const smoke = await say('bob', { text: 'I want to go to the big smoke' });
    expect(smoke.intents[0].slots).toEqual({ dest: 'London' });
    expect(items(smoke)).toEqual([{ text: 'Booked.' }]);
    // remembered: the next "book a trip" no longer asks where to
    expect(items(await say('bob', { text: 'book a trip' }))).toEqual([{ text: 'Booked.' }]);
    expect(items(await say('bob', { text: 'book a trip to the city of light' }))).toEqual([
      { text: 'Paris it is.' },
      { links: { text: 'Guide', value: 'https://example.com/paris', openInPanel: true } },
    ]);
    const spoken = await say('bob', { text: 'book a trip to Berlin', platform: 'Speaker' });
    expect(spoken.intents[0].slots).toEqual({ dest: 'Berlin' }); // automatically extensible
    expect(items(spoken)).toEqual([{ speaker: '<speak>Booked</speak>' }]);
    const fr = await say('bob', { text: 'je veux aller à Lyon', lang: 'fr' });
    expect(fr.intents[0]).toMatchObject({ name: 'Book', slots: { dest: 'Lyon' } });
    expect(items(fr)).toEqual([{ text: 'Réservé.' }]);
  });

  it('matches an intent needing a context only while the context lives, and ends conversations', async () => {
    expect((await say('cat', { text: 'yes' })).intents[0].name).toBe('Fallback');
    const booked = await say('cat', { text: 'book a trip to Paris' });
    await say('cat', { text: 'qqq zzz xxyy' }); // the booking context has one turn left
    const yes = await say('cat', { text: 'yes' });
    expect(yes.intents[0].name).toBe('Confirm');
    expect(items(yes)[1]).toEqual({
      cards: [{ title: 'Ticket', buttons: [{ text: 'Again', value: 'book a trip' }] }],
    });
    expect((await say('cat', { text: 'yes' })).intents[0].name).toBe('Fallback'); // expired

    const bye = await say('cat', { text: 'bye bye' });
    expect(bye.intents[0]).toMatchObject({
      name: 'Bye',
      endConversation: true,
      settings: { disableInput: true },
    });
    expect(items(bye)[1]).toEqual({ events: [{ text: 'Again', event: 'WELCOME' }] });
    expect(bye.conversationId).toBe(booked.conversationId);
    const next = await say('cat', { event: 'WELCOME' });
    expect(next.conversationId).not.toBe(booked.conversationId);
    expect(next.sessionId).toBe(booked.sessionId);
  });

  it('answers conditions on variables named like toString, and fills a slot named constructor', async () => {
    await manage('/v1/entities', {
      name: 'Person',
      automaticallyExtensible: { en: false },
      useSynonyms: { en: false },
      data: { en: [{ value: 'Ada' }, { value: 'Alan' }] },
    });
    await manage('/v1/intents', {
      name: 'Builder',
      events: ['BUILDER'],
      utterances: {
        en: [
          {
            data: [{ text: 'the builder is ' }, { text: 'Ada', entity: 'Person', slot_name: 'constructor' }],
          },
          {
            data: [
              { text: 'it was built by ' },
              { text: 'Alan', entity: 'Person', slot_name: 'constructor' },
            ],
          },
        ],
      },
      conditionalResponses: {
        en: {
          default: { default: [text('Who built it?')] },
          if: [
            { conditions: [['toString', '==', 'x']], fulfillment: { default: [text('never')] } },
            {
              conditions: [['constructor', 'exists', '']],
              fulfillment: { default: [text('Built by someone.')] },
            },
          ],
        },
      },
    });
    await waitFor(async () => (await call('GET', '/v1/bots', dev)).body.training.upToDate === true, {
      timeoutMs: 30_000,
      what: 'the assistant to be retrained',
    });
    expect(items(await say('dan', { event: 'BUILDER' }))).toEqual([{ text: 'Who built it?' }]);
    const built = await say('dan', { text: 'the builder is Alan' });
    expect(built.intents[0]).toMatchObject({ name: 'Builder', slots: { constructor: 'Alan' } });
    expect(items(built)).toEqual([{ text: 'Built by someone.' }]);
  });

  it('fills and remembers a slot whose name holds a dot, and refuses a channel name with a dot (400, not 500)', async () => {
    await manage('/v1/entities', {
      name: 'trip.kind',
      automaticallyExtensible: { en: false },
      useSynonyms: { en: false },
      data: { en: [{ value: 'train' }, { value: 'plane' }] },
    });
    await manage('/v1/intents', {
      name: 'Mode',
      utterances: {
        en: [
          {
            data: [
              { text: 'I travel by ' },
              { text: 'train', entity: 'trip.kind', slot_name: 'mode.choice' },
            ],
          },
          {
            data: [
              { text: 'I travel by ' },
              { text: 'plane', entity: 'trip.kind', slot_name: 'mode.choice' },
            ],
          },
        ],
      },
      conditionalResponses: { en: { default: { default: [text('Noted.')] } } },
    });
    await manage('/v1/intents', {
      name: 'Which mode',
      events: ['MODE'],
      conditionalResponses: {
        en: {
          default: { default: [text('No mode yet.')] },
          if: [
            {
              conditions: [['slots.mode.choice', '==', 'plane']],
              fulfillment: { default: [text('By plane.')] },
            },
          ],
        },
      },
    });
    await waitFor(async () => (await call('GET', '/v1/bots', dev)).body.training.upToDate === true, {
      timeoutMs: 30_000,
      what: 'the assistant to be retrained',
    });
    const noted = await say('erin', { text: 'I travel by plane' });
    expect(noted.intents[0]).toMatchObject({ name: 'Mode', slots: { 'mode.choice': 'plane' } });
    // remembered in the stored conversation for the next turn's conditions
    expect(items(await say('erin', { event: 'MODE' }))).toEqual([{ text: 'By plane.' }]);

    const dotted = await call('POST', '/v1/intents', dev, {
      name: 'Dotted channel',
      conditionalResponses: { en: { default: { 'web.v2': [text('hi')] } } },
    });
    expect(dotted.status).toBe(400);
    expect(dotted.body.details.issues).toEqual([
      expect.objectContaining({ field: expect.stringContaining('conditionalResponses.en.default') }),
    ]);
  });

  it('takes names written with combining marks (Hindi, decomposed accents), each kept in one Unicode form', async () => {
    // Devanagari vowel signs and virama are combining marks; a decomposed é (e + U+0301) is what some keyboards send
    await manage('/v1/entities', {
      name: 'स्टेशन',
      automaticallyExtensible: { en: false },
      useSynonyms: { en: false },
      data: { en: [{ value: 'Dadar' }, { value: 'Thane' }] },
    });
    const ride = await manage('/v1/intents', {
      name: 'Ride',
      events: ['यात्रा'],
      utterances: {
        en: [
          { data: [{ text: 'a ride to ' }, { text: 'Dadar', entity: 'स्टेशन', slot_name: 'गंतव्य' }] },
          { data: [{ text: 'take me to ' }, { text: 'Thane', entity: 'स्टेशन', slot_name: 'गंतव्य' }] },
        ],
      },
      outputContexts: { en: ['Cafe\u0301'] },
      conditionalResponses: {
        en: {
          default: { default: [text('Where to?')] },
          if: [
            {
              conditions: [['slots.गंतव्य', '==', 'Thane']],
              fulfillment: { default: [text('To Thane.')] },
            },
          ],
        },
      },
    });
    expect(ride.outputContexts.en).toEqual([{ name: 'Café', lifespan: expect.any(Number) }]);
    await manage('/v1/intents', {
      name: 'Coffee',
      events: ['Café'],
      inputContexts: ['Café'],
      conditionalResponses: { en: { default: { default: [text('A coffee on the way.')] } } },
    });
    await waitFor(async () => (await call('GET', '/v1/bots', dev)).body.training.upToDate === true, {
      timeoutMs: 30_000,
      what: 'the assistant to be retrained',
    });
    expect(items(await say('farah', { event: 'यात्रा' }))).toEqual([{ text: 'Where to?' }]);
    const ridden = await say('farah', { text: 'take me to Thane' });
    expect(ridden.intents[0]).toMatchObject({ name: 'Ride', slots: { गंतव्य: 'Thane' } });
    expect(items(ridden)).toEqual([{ text: 'To Thane.' }]);
    // the context set under its decomposed name is the one the intent needs; the event is found in either form
    expect(items(await say('farah', { event: 'Cafe\u0301' }))).toEqual([{ text: 'A coffee on the way.' }]);
  });

  it("keeps the contexts each of a user's concurrent messages set (a connector's burst)", async () => {
    const steps = ['ticket', 'seat', 'meal', 'bag'];
    for (const step of steps)
      await manage('/v1/intents', {
        name: `Choose ${step}`,
        events: [`CHOOSE_${step}`],
        outputContexts: { en: [{ name: `chose-${step}`, lifespan: 10 }] },
      });
    await manage('/v1/intents', {
      name: 'Checkout',
      events: ['CHECKOUT'],
      inputContexts: steps.map((step) => `chose-${step}`),
      conditionalResponses: { en: { default: { default: [text('Everything chosen.')] } } },
    });
    await Promise.all(steps.map((step) => say('gus', { event: `CHOOSE_${step}` })));
    expect(items(await say('gus', { event: 'CHECKOUT' }))).toEqual([{ text: 'Everything chosen.' }]);
  });

  it('refuses another method than POST on Messages in the Messages shape', async () => {
    const res = await call('GET', '/v1/Messages', client);
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(res.body.status).toMatchObject({ code: 405, errorType: 'invalid_request' });
  });
});
