import { ManualClock } from '@platform/kernel';
import { waitFor } from '@platform/testkit';
import {
  GIBBERISH,
  travelEntities,
  travelIntents,
} from '../../services/legacy-agent/test/support/travel-assistant';
import { startTestPlatform, type TestPlatform } from '../harness';

/**
 * The legacy virtual agent as a developer and their users reach it, through the edge: an account, an
 * assistant, intents and entities managed through the API, then conversations through /v1/Messages.
 */

interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies are checked field by field
  body: any;
}

function client(base: string) {
  return async (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Answer> => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('legacy virtual agent end to end, through the edge', () => {
  let platform: TestPlatform;
  let call: ReturnType<typeof client>;
  const clock = new ManualClock(new Date());
  let sessionToken: string;
  let bot: { id: string; clientToken: string; developerToken: string; name: string };

  beforeAll(async () => {
    // The edge retires legacy v1 on 2025-12-31 by default; an operator keeps it open during a migration.
    platform = await startTestPlatform({
      clock,
      env: {
        LEGACY_V1_RETIREMENT_DATE: '2099-01-01',
        LEGACY_CONVERSATION_IDLE_SECONDS: '900',
        // the whole conversation runs in one instant of the clock, and polls Messages while models train;
        // Messages' rate limits (decision 0112) have their own test
        LEGACY_MESSAGES_PER_ADDRESS: '0',
        LEGACY_MESSAGES_PER_USER: '0',
      },
    });
    call = client(platform.legacyUrl);
  });
  afterAll(() => platform.stop());

  const message = (body: Record<string, unknown>, token = bot.clientToken) =>
    call('POST', '/v1/Messages', { platform: 'web', ...body }, bearer(token));
  const texts = (answer: Answer): string[] =>
    answer.body.fulfillment.flatMap((f: { items: Array<{ text?: string }> }) =>
      f.items.map((i) => i.text).filter(Boolean),
    );

  it('signs up, logs in, and creates an assistant with an access token', async () => {
    const signup = await call('POST', '/v2/auth/signup', { username: 'ada', password: 'analytical engine' });
    expect(signup.status).toBe(200);
    const taken = await call('POST', '/v2/auth/signup', { username: 'Ada', password: 'analytical engine' });
    expect(taken.status).toBe(409);
    const wrong = await call('POST', '/v2/auth/login', { username: 'ada', password: 'difference engine' });
    expect(wrong.status).toBe(401);
    const login = await call('POST', '/v2/auth/login', { username: 'ada', password: 'analytical engine' });
    expect(login.body).toEqual({ userId: signup.body.userId, sessionToken: expect.any(String) });
    sessionToken = login.body.sessionToken;

    const token = await call(
      'POST',
      '/v2/auth/accessToken',
      { expiresAt: new Date(clock.now().getTime() + 86_400_000).toISOString() },
      { 'x-legacy-session-token': sessionToken },
    );
    expect(token.status).toBe(200);
    expect(token.body).toMatchObject({
      _p_user: signup.body.userId,
      restricted: false,
      _session_token: expect.any(String),
    });
    // The /v2/auth routes are not part of the deprecated v1.
    expect(token.headers.get('x-platform-api-deprecation')).toBeNull();

    const created = await call(
      'POST',
      '/v2/bots',
      { name: 'Travel helper', lang: 'en', languages: ['en'], description: 'finds trains' },
      bearer(token.body._session_token),
    );
    expect(created.status).toBe(200);
    bot = created.body;
    expect(bot).toMatchObject({ developer: 'ada', lang: 'en', nlu: expect.any(String) });

    const read = await call('GET', '/v1/bots', undefined, bearer(bot.developerToken));
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ ...bot });
    expect(read.headers.get('x-platform-api-deprecation')).toContain('v2');

    // Revoked through the edge: refused on the very next request.
    const revoked = await call('DELETE', `/v2/auth/accessToken/${token.body._session_token}`, undefined, {
      'x-legacy-session-token': sessionToken,
    });
    expect(revoked.status).toBe(200);
    const after = await call('GET', '/v2/auth/accessToken', undefined, bearer(token.body._session_token));
    expect(after.status).toBe(401);
  });

  it('manages entities and intents, and refuses bad input, unknown tokens and other assistants’ intents', async () => {
    for (const entity of travelEntities) {
      const res = await call('POST', '/v1/entities', entity, bearer(bot.developerToken));
      expect(res.status).toBe(200);
    }
    for (const intent of Object.values(travelIntents)) {
      const res = await call('POST', '/v1/intents', intent, bearer(bot.developerToken));
      expect(res.status).toBe(200);
    }
    const list = await call('GET', '/v1/intents', undefined, bearer(bot.developerToken));
    expect(list.body.map((i: { name: string }) => i.name)).toEqual([
      'Welcome',
      'Fallback',
      'FindConnection',
      'Confirm',
      'Help',
    ]);
    expect(list.body[0].settings).toEqual({
      en: { placeholder: 'How can I help you?', disableInput: false },
    });

    // paging (an addition): a page at a time in id order, the next page's `after` in X-Next-After
    const paged: string[] = [];
    let after = '';
    for (;;) {
      const page = await call('GET', `/v1/intents?limit=2${after}`, undefined, bearer(bot.developerToken));
      expect(page.status).toBe(200);
      expect(page.headers.get('x-platform-api-deprecation')).toContain('v2');
      paged.push(...page.body.map((i: { id: string }) => i.id));
      const next = page.headers.get('x-next-after');
      if (!next) break;
      after = `&after=${next}`;
    }
    expect(paged).toEqual(list.body.map((i: { id: string }) => i.id).sort());
    const badLimit = await call('GET', '/v1/intents?limit=0', undefined, bearer(bot.developerToken));
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.details.issues).toEqual([{ field: 'limit', message: expect.any(String) }]);

    const invalid = await call(
      'POST',
      '/v1/intents',
      { utterances: { en: [{ data: [{ text: 'x', entity: 'Nope' }] }] } },
      bearer(bot.developerToken),
    );
    expect(invalid.status).toBe(400);
    expect(invalid.body.details.issues).toEqual([
      { field: 'utterances.en.0.data.0.entity', message: expect.any(String) },
    ]);
    const synonyms = await call(
      'POST',
      '/v1/entities',
      {
        name: 'Fruit',
        automaticallyExtensible: { en: false },
        useSynonyms: { en: true },
        data: { en: [{ value: 'apple' }] },
      },
      bearer(bot.developerToken),
    );
    expect(synonyms.status).toBe(400);
    expect((await call('GET', '/v1/intents', undefined, bearer('ldt_unknown'))).status).toBe(401);

    const other = await call(
      'POST',
      '/v2/bots',
      { name: 'Other', lang: 'en' },
      { 'x-legacy-session-token': sessionToken },
    );
    const foreign = await call(
      'GET',
      `/v1/intents/${list.body[0].id}`,
      undefined,
      bearer(other.body.developerToken),
    );
    expect(foreign.status).toBe(404);

    await waitFor(
      async () =>
        (await call('GET', '/v1/bots', undefined, bearer(bot.developerToken))).body.training.upToDate,
      { timeoutMs: 30_000, what: 'the travel assistant to be trained' },
    );
  });

  it('understands intents and fills slots from values, synonyms and misspellings', async () => {
    const reply = await message({ userId: 'u1', text: 'i need a train from marienplats to main station' });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      id: expect.any(String),
      timestamp: clock.now().toISOString(),
      sessionId: expect.any(String),
      conversationId: expect.any(String),
      query: 'i need a train from marienplats to main station',
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
        },
      ],
      status: { code: 200, errorType: 'success' },
    });
    expect(reply.body.intents[0].confidence).toBeGreaterThan(0.5);
    expect(reply.headers.get('x-platform-api-deprecation')).toContain('v2');
  });

  it('takes a language tag in any letter case (BCP 47)', async () => {
    const reply = await message({ userId: 'u-lang', event: 'HELP', lang: 'EN' });
    expect(reply.status).toBe(200);
    expect(texts(reply)).toEqual(['I find train connections.']);
  });

  it("answers a visitor's regional language tag in the assistant's language (BCP 47 lookup)", async () => {
    const regional = await message({
      userId: 'u-region',
      text: 'i need a train from marienplatz',
      lang: 'en-US',
    });
    expect(regional.status).toBe(200);
    expect(regional.body).toMatchObject({ lang: 'en', intents: [{ name: 'FindConnection' }] });
    // a connector's locale (Facebook Messenger's, Java's), and one that says nothing
    for (const lang of ['en_US', '', null]) {
      const connector = await message({ userId: 'u-region', event: 'HELP', lang });
      expect(connector.status).toBe(200);
      expect(connector.body.lang).toBe('en');
    }
    const other = await message({ userId: 'u-region', event: 'HELP', lang: 'fr-FR' });
    expect(other.status).toBe(400);
    expect(other.body.status).toMatchObject({
      code: 400,
      errorType: 'invalid_request',
      errorDetails: 'The assistant does not speak fr-FR; it speaks en',
    });
  });

  it('answers a message that does not say its language in the language of its session, else the default', async () => {
    const bilingual = await call(
      'POST',
      '/v2/bots',
      { name: 'Bilingue', lang: 'en', languages: ['en', 'fr'] },
      { 'x-legacy-session-token': sessionToken },
    );
    const said = (text: string) => ({ default: { default: [{ type: 'text', text: [text] }] } });
    const help = await call(
      'POST',
      '/v1/intents',
      {
        name: 'Help',
        events: ['HELP'],
        conditionalResponses: { en: said('I can help.'), fr: said('Je peux vous aider.') },
      },
      bearer(bilingual.body.developerToken),
    );
    expect(help.status).toBe(200);
    const bye = await call(
      'POST',
      '/v1/intents',
      {
        name: 'Bye',
        events: ['BYE'],
        endConversation: true,
        conditionalResponses: { en: said('Goodbye.'), fr: said('Au revoir.') },
      },
      bearer(bilingual.body.developerToken),
    );
    expect(bye.status).toBe(200);
    const ask = async (userId: string, lang?: string, event = 'HELP') => {
      const reply = await message(
        { userId, event, ...(lang === undefined ? {} : { lang }) },
        bilingual.body.clientToken,
      );
      expect(reply.status).toBe(200);
      return [reply.body.lang, ...texts(reply)];
    };
    expect(await ask('visiteur', 'fr-FR')).toEqual(['fr', 'Je peux vous aider.']);
    expect(await ask('visiteur')).toEqual(['fr', 'Je peux vous aider.']);
    // a message that says its language changes the conversation's
    expect(await ask('visiteur', 'en-GB')).toEqual(['en', 'I can help.']);
    expect(await ask('visiteur')).toEqual(['en', 'I can help.']);
    expect(await ask('visiteur', 'fr')).toEqual(['fr', 'Je peux vous aider.']);
    // the session's language, kept when a conversation ends
    expect(await ask('visiteur', undefined, 'BYE')).toEqual(['fr', 'Au revoir.']);
    expect(await ask('visiteur')).toEqual(['fr', 'Je peux vous aider.']);
    // another visitor, and this one once the session has ended, get the assistant's default
    expect(await ask('visitor')).toEqual(['en', 'I can help.']);
    clock.advance(901_000);
    expect(await ask('visiteur')).toEqual(['en', 'I can help.']);
  });

  it('answers per channel, with the fallback below the threshold, and by event', async () => {
    const web = await message({ userId: 'u2', text: 'how do i get to Odeonsplatz' });
    expect(web.body.fulfillment[0].items).toEqual([
      { text: 'Here is a connection.' },
      { links: { text: 'Timetable', value: 'https://example.com/timetable' } },
    ]);
    const speaker = await message({ userId: 'u3', platform: 'speaker', text: 'how do i get to Odeonsplatz' });
    expect(speaker.body.fulfillment[0].items).toEqual([{ speaker: '<speak>Here is a connection.</speak>' }]);

    const fallback = await message({ userId: 'u4', text: GIBBERISH });
    expect(fallback.body.intents[0]).toMatchObject({ name: 'Fallback', isFallback: true });

    const welcome = await message({ userId: 'u4', event: 'WELCOME' });
    expect(welcome.body.intents[0]).toMatchObject({ name: 'Welcome', confidence: 1 });
    expect(welcome.body.query).toBeUndefined();
    const help = await message({ userId: 'u4', event: 'HELP' });
    expect(texts(help)).toEqual(['I find train connections.']);
    const unknown = await message({ userId: 'u4', event: 'NOT_AN_EVENT' });
    expect(unknown.body.intents[0]).toMatchObject({ name: 'Fallback', isFallback: true });
  });

  it('keeps contexts per conversation and ends the conversation when the ending intent answers', async () => {
    const early = await message({ userId: 'u5', text: 'yes please' });
    expect(early.body.intents[0].name).not.toBe('Confirm');
    const find = await message({ userId: 'u5', text: 'connection to Odeonsplatz please' });
    const help = await message({ userId: 'u5', text: 'what can you do' });
    expect(texts(help)).toEqual(['Say yes to book it.']);
    const confirm = await message({ userId: 'u5', text: 'yes please' });
    expect(confirm.body.conversationId).toBe(find.body.conversationId);
    expect(confirm.body.intents[0]).toMatchObject({ name: 'Confirm', endConversation: true });
    expect(confirm.body.fulfillment[0].items.map((i: object) => Object.keys(i)[0])).toEqual([
      'text',
      'button',
      'cards',
      'events',
      'event',
    ]);
    const next = await message({ userId: 'u5', text: 'yes please' });
    expect(next.body.sessionId).toBe(find.body.sessionId);
    expect(next.body.conversationId).not.toBe(find.body.conversationId);
    expect(next.body.intents[0].name).not.toBe('Confirm');
  });

  it('starts a new session after the idle time', async () => {
    const first = await message({ userId: 'u6', text: 'connection to Odeonsplatz please' });
    clock.advance(901_000);
    const later = await message({ userId: 'u6', text: 'what can you do' });
    expect(later.body.sessionId).not.toBe(first.body.sessionId);
    expect(texts(later)).toEqual(['I find train connections.']);
  });

  it('retrains after a change while the previous model keeps answering', async () => {
    const before = await message({ userId: 'u7', text: 'what is the price of a ticket' });
    expect(before.body.intents[0].name).not.toBe('Price');
    const created = await call(
      'POST',
      '/v1/intents',
      {
        name: 'Price',
        utterances: {
          en: ['what is the price of a ticket', 'how much does a ticket cost', 'ticket price'].map((t) => ({
            data: [{ text: t }],
          })),
        },
        conditionalResponses: { en: { default: { default: [{ type: 'text', text: ['3 euros.'] }] } } },
      },
      bearer(bot.developerToken),
    );
    expect(created.status).toBe(200);
    // Messages never wait for retraining: every reply is the previous or the new model's.
    await waitFor(
      async () =>
        (await message({ userId: 'u7', text: 'how much does a ticket cost' })).body.intents[0].name ===
        'Price',
      {
        timeoutMs: 30_000,
        what: 'the new intent to be understood',
      },
    );
  });

  it('answers invalid Messages in the legacy shape', async () => {
    const missing = await call('POST', '/v1/Messages', { text: 'hi' }, bearer(bot.clientToken));
    expect(missing.status).toBe(400);
    expect(missing.body.status).toMatchObject({ code: 400, errorType: 'invalid_request' });
    const unauthorized = await call(
      'POST',
      '/v1/Messages',
      { userId: 'u', platform: 'web', text: 'hi' },
      bearer(bot.developerToken),
    );
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.body.status).toMatchObject({ code: 401, errorType: 'unauthorized' });
  });
});

describe('legacy v1 retirement, with the default lifecycle', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform();
  });
  afterAll(() => platform.stop());

  it('answers 410 on v1 after 2025-12-31 while the /v2 legacy routes keep working', async () => {
    const call = client(platform.legacyUrl);
    const signup = await call('POST', '/v2/auth/signup', { username: 'grace', password: 'compilers rule' });
    expect(signup.status).toBe(200);
    const bot = await call(
      'POST',
      '/v2/bots',
      { name: 'Retired', lang: 'en' },
      { 'x-legacy-session-token': signup.body.sessionToken },
    );
    expect(bot.status).toBe(200);
    const v1 = await call('GET', '/v1/bots', undefined, bearer(bot.body.developerToken));
    expect(v1.status).toBe(410);
    const messages = await call(
      'POST',
      '/v1/Messages',
      { userId: 'u', platform: 'web', text: 'hi' },
      bearer(bot.body.clientToken),
    );
    expect(messages.status).toBe(410);
    const tokens = await call('GET', '/v2/auth/accessToken', undefined, {
      'x-legacy-session-token': signup.body.sessionToken,
    });
    expect(tokens.status).toBe(200);
  });
});
