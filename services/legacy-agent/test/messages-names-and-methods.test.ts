import { accountWithBot, type Bot, client, dev, say, trained, utterance } from './support/fixtures';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';

/**
 * Found by building assistants through the API as a developer would (see docs/spec-decisions.md, legacy
 * "Messages"): names that are also an object's machinery, blank text, and methods other than POST.
 */
describe('legacy Messages: names, blank text and methods', () => {
  let app: LegacyTestApp;
  let bot: Bot;

  beforeAll(async () => {
    app = await startLegacyApp({ random: () => 0 });
    ({ bot } = await accountWithBot(app.http));
    await app.http
      .post('/v1/entities')
      .set(dev(bot))
      .send({
        name: 'Animal',
        automaticallyExtensible: { en: false },
        useSynonyms: { en: false },
        data: { en: [{ value: 'cat' }, { value: 'dog' }, { value: 'horse' }] },
      })
      .expect(200);
    await app.http
      .post('/v1/intents')
      .set(dev(bot))
      .send({
        name: 'Pet',
        utterances: {
          en: ['I have a [cat](Animal:constructor)', 'my pet is a [dog](Animal:constructor)'].map(utterance),
        },
        conditionalResponses: {
          en: {
            default: { default: [say('Which pet?')] },
            if: [
              { conditions: [['constructor', 'exists', '']], fulfillment: { default: [say('Nice pet')] } },
            ],
          },
        },
      })
      .expect(200);
    await app.http
      .post('/v1/intents')
      .set(dev(bot))
      .send({
        name: 'Check',
        events: ['CHECK'],
        conditionalResponses: {
          en: {
            default: { default: [say('plain')] },
            if: [
              { conditions: [['toString', '==', 'x']], fulfillment: { default: [say('toString')] } },
              { conditions: [['hasOwnProperty', 'contains', 'x']], fulfillment: { default: [say('own')] } },
              { conditions: [['slots.valueOf', 'exists', '']], fulfillment: { default: [say('valueOf')] } },
            ],
          },
        },
      })
      .expect(200);
    await trained(app.http, bot);
  });
  afterAll(() => app.close());

  const send = (body: Record<string, unknown>) =>
    app.http
      .post('/v1/Messages')
      .set(client(bot))
      .send({ userId: 'visitor', platform: 'web', ...body });

  it('evaluates conditions on variables named toString, hasOwnProperty or valueOf as missing ones, not a 500', async () => {
    const res = await send({ event: 'CHECK' });
    expect(res.status).toBe(200);
    expect(res.body.fulfillment[0].items).toEqual([{ text: 'plain' }]);
    // no intent can list it: an unknown event, which the fallback answers
    const unknown = await send({ event: '__proto__' }).expect(200);
    expect(unknown.body.intents[0]).toMatchObject({ isFallback: true });
  });

  it('fills a slot named constructor, and its conditions see it', async () => {
    const res = await send({ userId: 'pet-owner', text: 'I have a cat' }).expect(200);
    expect(res.body.intents[0]).toMatchObject({ name: 'Pet', slots: { constructor: 'cat' } });
    expect(res.body.fulfillment[0].items).toEqual([{ text: 'Nice pet' }]);
  });

  it('refuses __proto__ as the name of a slot, an entity, a context or an event (400 naming the field)', async () => {
    const intent = await app.http
      .post('/v1/intents')
      .set(dev(bot))
      .send({
        utterances: { en: [utterance('ride a [horse](Animal:__proto__)')] },
        inputContexts: ['__proto__'],
        events: ['__proto__'],
      })
      .expect(400);
    expect(intent.body.details.issues.map((i: { field: string }) => i.field).sort()).toEqual([
      'events.0',
      'inputContexts.0',
      'utterances.en.0.data.1.slot_name',
    ]);
    const entity = await app.http
      .post('/v1/entities')
      .set(dev(bot))
      .send({ name: '__proto__', automaticallyExtensible: {}, useSynonyms: {}, data: {} })
      .expect(400);
    expect(entity.body.details.issues[0]).toMatchObject({
      field: 'name',
      message: expect.stringContaining('reserved'),
    });
  });

  it('takes blank text as no text: an event beside it answers, alone it is told text or event is required', async () => {
    const alone = await send({ text: '   ' }).expect(400);
    expect(alone.body.status.details.issues).toEqual([
      { field: 'text', message: 'text or event is required' },
    ]);
    const withEvent = await send({ text: ' \n ', event: 'CHECK' }).expect(200);
    expect(withEvent.body.intents[0].name).toBe('Check');
    expect(withEvent.body).not.toHaveProperty('query');
  });

  it('refuses a body holding a key named __proto__ in the Messages shape, naming where', async () => {
    const res = await app.http
      .post('/v1/Messages')
      .set(client(bot))
      .set('content-type', 'application/json')
      .send('{"userId":"visitor","platform":"web","text":"hi","__proto__":{"admin":true}}')
      .expect(400);
    expect(res.body.status).toMatchObject({
      code: 400,
      errorType: 'invalid_request',
      errorDetails: expect.stringContaining('__proto__'),
    });
  });

  it('refuses another method than POST in the Messages shape, with Allow', async () => {
    const res = await app.http.get('/v1/Messages').set(client(bot)).expect(405);
    expect(res.headers.allow).toBe('POST');
    expect(res.body).toEqual({
      id: expect.any(String),
      timestamp: expect.any(String),
      status: {
        code: 405,
        errorType: 'invalid_request',
        errorDetails: 'GET is not allowed here; use POST',
        details: { allowed: ['POST'] },
      },
      requestId: expect.any(String),
    });
    await app.http.delete('/v1/messages').set(client(bot)).expect(405);
  });
});
