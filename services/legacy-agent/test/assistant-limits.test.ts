import { storedBytes } from '../src/domain/assistant-places';
import { accountWithBot, dev } from './support/fixtures';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';

const entity = (name: string) => ({ name, automaticallyExtensible: {}, useSynonyms: {}, data: {} });

describe('how many intents and entities an assistant holds', () => {
  let app: LegacyTestApp;
  beforeAll(async () => {
    app = await startLegacyApp({ env: { LEGACY_MAX_INTENTS: '3', LEGACY_MAX_ENTITIES: '2' } });
  });
  afterAll(() => app.close());

  it('refuses the creation past the limit, and frees a place on each deletion', async () => {
    const { bot } = await accountWithBot(app.http);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        (
          await app.http
            .post('/v1/intents')
            .set(dev(bot))
            .send({ name: `I${i}` })
            .expect(200)
        ).body.id,
      );
    const refused = await app.http.post('/v1/intents').set(dev(bot)).send({ name: 'I3' }).expect(409);
    expect(refused.body.error).toBe('LimitExceeded');
    await app.http.delete(`/v1/intents/${ids[0]}`).set(dev(bot)).expect(200);
    await app.http.post('/v1/intents').set(dev(bot)).send({ name: 'I3' }).expect(200);
    await app.http.post('/v1/intents').set(dev(bot)).send({ name: 'I4' }).expect(409);
  });

  it('gives the place of a refused creation back (a taken name, say)', async () => {
    const { bot } = await accountWithBot(app.http);
    await app.http.post('/v1/entities').set(dev(bot)).send(entity('city')).expect(200);
    for (let i = 0; i < 3; i++)
      await app.http.post('/v1/entities').set(dev(bot)).send(entity('City')).expect(409);
    await app.http.post('/v1/entities').set(dev(bot)).send(entity('station')).expect(200);
    const refused = await app.http.post('/v1/entities').set(dev(bot)).send(entity('line')).expect(409);
    expect(refused.body.error).toBe('LimitExceeded');
  });

  it('counts what an assistant made before the counters holds at its first creation', async () => {
    const { bot } = await accountWithBot(app.http);
    for (let i = 0; i < 2; i++)
      await app.http
        .post('/v1/intents')
        .set(dev(bot))
        .send({ name: `Old ${i}` })
        .expect(200);
    // as an assistant stored by an earlier version: no counter
    await app.store
      .collection('legacy_assistants')
      .updateOne({ _id: bot.id }, { $unset: { intentCount: true } });
    await app.http.post('/v1/intents').set(dev(bot)).send({ name: 'New' }).expect(200);
    await app.http.post('/v1/intents').set(dev(bot)).send({ name: 'One too many' }).expect(409);
  });

  it('lets exactly the limit through when creations race', async () => {
    const { bot } = await accountWithBot(app.http);
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        app.http
          .post('/v1/intents')
          .set(dev(bot))
          .send({ name: `R${i}` }),
      ),
    );
    expect(replies.filter((r) => r.status === 200)).toHaveLength(3);
    expect(replies.filter((r) => r.status === 409)).toHaveLength(17);
    expect((await app.http.get('/v1/intents').set(dev(bot)).expect(200)).body).toHaveLength(3);
  });
});

describe('how many bytes an assistant holds (LEGACY_MAX_ASSISTANT_BYTES)', () => {
  let app: LegacyTestApp;
  beforeAll(async () => {
    app = await startLegacyApp({ env: { LEGACY_MAX_ASSISTANT_BYTES: '30000' } });
  });
  afterAll(() => app.close());

  // an intent of about 10 KB stored: its utterances
  const intent = (name: string, utterances = 40) => ({
    name,
    utterances: {
      en: Array.from({ length: utterances }, (_, i) => ({
        data: [{ text: `sentence ${i} ${'word '.repeat(40)}` }],
      })),
    },
  });
  const create = (bot: Parameters<typeof dev>[0], body: unknown) =>
    app.http
      .post('/v1/intents')
      .set(dev(bot))
      .send(body as object);
  const stored = async (id: string) =>
    ((await app.store.collection('legacy_assistants').findOne({ _id: id })) as { dataBytes?: number } | null)
      ?.dataBytes;

  it('refuses a creation or a growth past the budget, and frees what a deletion or a shrink gives back', async () => {
    const { bot } = await accountWithBot(app.http);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await create(bot, intent(`I${i}`)).expect(200)).body.id);
    const refused = await create(bot, intent('I3')).expect(409);
    expect(refused.body).toMatchObject({
      error: 'LimitExceeded',
      message: expect.stringMatching(
        /^An assistant holds at most 30 KiB of intents and entities \(it holds 2\d KiB; this adds \d+ KiB\)$/,
      ),
      details: { limitBytes: 30_000, usedBytes: expect.any(Number), addingBytes: expect.any(Number) },
    });
    // a growth past it is refused, and nothing is stored; a shrink is counted
    const grow = await app.http
      .post(`/v1/intents/${ids[0]}`)
      .set(dev(bot))
      .send(intent('I0', 80))
      .expect(409);
    expect(grow.body.error).toBe('LimitExceeded');
    const before = await stored(bot.id);
    await app.http.post(`/v1/intents/${ids[0]}`).set(dev(bot)).send(intent('I0', 5)).expect(200);
    expect(await stored(bot.id)).toBeLessThan(before!);
    await create(bot, intent('I3', 5)).expect(200);
    await create(bot, intent('I4')).expect(409);
    await app.http.delete(`/v1/intents/${ids[1]}`).set(dev(bot)).expect(200);
    await create(bot, intent('I4')).expect(200);
    // what the counter says is what the assistant holds
    const held = await app.store.collection('legacy_intents').find({ assistantId: bot.id });
    expect(await stored(bot.id)).toBe(held.reduce((sum, doc) => sum + storedBytes(doc), 0));
  });

  it('counts what an assistant made before the budget holds, at its first change', async () => {
    const { bot } = await accountWithBot(app.http);
    for (let i = 0; i < 3; i++) await create(bot, intent(`Old ${i}`)).expect(200);
    await app.store
      .collection('legacy_assistants')
      .updateOne({ _id: bot.id }, { $unset: { dataBytes: true } });
    await create(bot, intent('One too many')).expect(409);
    expect(await stored(bot.id)).toBeGreaterThan(25_000);
  });
});
