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

  /** what the assistant's intents and entities take, as stored */
  const held = async (assistantId: string) => {
    const docs = [
      ...(await app.store.collection('legacy_intents').find({ assistantId })),
      ...(await app.store.collection('legacy_entities').find({ assistantId })),
    ];
    return docs.reduce((sum, doc) => sum + storedBytes(doc), 0);
  };
  const update = (bot: Parameters<typeof dev>[0], id: string, body: unknown) =>
    app.http
      .post(`/v1/intents/${id}`)
      .set(dev(bot))
      .send(body as object);

  it('a deletion overtaken by an update gives back the bytes it deleted, not those it read', async () => {
    const { bot } = await accountWithBot(app.http);
    await create(bot, intent('Kept', 5)).expect(200);
    const id = (await create(bot, intent('Shrunk then deleted'))).body.id;
    const intents = app.store.collection('legacy_intents');
    const deleteOne = intents.deleteOne.bind(intents);
    // the update lands between the deletion's read and its delete
    const spy = jest.spyOn(intents, 'deleteOne').mockImplementationOnce(async (filter) => {
      await update(bot, id, intent('Shrunk then deleted', 1)).expect(200);
      return deleteOne(filter);
    });
    try {
      await app.http.delete(`/v1/intents/${id}`).set(dev(bot)).expect(200);
    } finally {
      spy.mockRestore();
    }
    expect(await intents.findOne({ _id: id })).toBeNull();
    expect(await stored(bot.id)).toBe(await held(bot.id));
  });

  it('an update overtaken by a deletion after its write counts nothing of an intent gone', async () => {
    const { bot } = await accountWithBot(app.http);
    await create(bot, intent('Kept', 5)).expect(200);
    const id = (await create(bot, intent('Deleted after its update'))).body.id;
    await update(bot, id, intent('Deleted after its update', 30)).expect(200);
    const intents = app.store.collection('legacy_intents');
    const findOneAndUpdate = intents.findOneAndUpdate.bind(intents);
    // the deletion lands between the update's write and whatever follows it
    const spy = jest
      .spyOn(intents, 'findOneAndUpdate')
      .mockImplementationOnce(async (filter, change, options) => {
        const written = await findOneAndUpdate(filter, change, options);
        await app.http.delete(`/v1/intents/${id}`).set(dev(bot)).expect(200);
        return written;
      });
    try {
      await update(bot, id, intent('Deleted after its update', 2)).expect(200);
    } finally {
      spy.mockRestore();
    }
    expect(await intents.findOne({ _id: id })).toBeNull();
    expect(await stored(bot.id)).toBe(await held(bot.id));
  });

  it('updates racing near the budget never pass it together', async () => {
    const { bot } = await accountWithBot(app.http);
    const a = (await create(bot, intent('A', 5)).expect(200)).body.id;
    const b = (await create(bot, intent('B', 5)).expect(200)).body.id;
    await update(bot, a, intent('A', 5)).expect(200);
    const intents = app.store.collection('legacy_intents');
    const findOneAndUpdate = intents.findOneAndUpdate.bind(intents);
    // A's growth is checked, then B grows the whole way before A's write: each fits the budget alone, not both
    let b2: number | undefined;
    const spy = jest
      .spyOn(intents, 'findOneAndUpdate')
      .mockImplementationOnce(async (filter, change, options) => {
        b2 = (await update(bot, b, intent('B', 70))).status;
        return findOneAndUpdate(filter, change, options);
      });
    let a2: number;
    try {
      a2 = (await update(bot, a, intent('A', 70))).status;
    } finally {
      spy.mockRestore();
    }
    expect([a2, b2].sort()).toEqual([200, 409]);
    expect(await held(bot.id)).toBeLessThanOrEqual(30_000);
    expect(await stored(bot.id)).toBe(await held(bot.id));
  });

  it('an intent or entity created while its assistant is deleted is not left behind, outside every budget', async () => {
    for (const [collection, path, body] of [
      ['legacy_intents', '/v1/intents', intent('Orphan', 5)],
      ['legacy_entities', '/v1/entities', entity('Orphan')],
    ] as const) {
      const { account, bot } = await accountWithBot(app.http);
      const docs = app.store.collection(collection);
      const insertOne = docs.insertOne.bind(docs);
      // the assistant's deletion runs whole between the creation's place taken and its write
      const spy = jest.spyOn(docs, 'insertOne').mockImplementationOnce(async (doc) => {
        await app.http
          .delete(`/v2/bots/${bot.id}`)
          .set('X-Legacy-Session-Token', account.sessionToken)
          .expect(200);
        return insertOne(doc);
      });
      try {
        expect((await app.http.post(path).set(dev(bot)).send(body)).status).toBe(404);
      } finally {
        spy.mockRestore();
      }
      expect(await docs.find({ assistantId: bot.id })).toEqual([]);
    }
  });

  it('a creation whose assistant is deleted before its place is taken is a 404, not LimitExceeded', async () => {
    const { account, bot } = await accountWithBot(app.http);
    const assistants = app.store.collection('legacy_assistants');
    const findOneAndUpdate = assistants.findOneAndUpdate.bind(assistants);
    const spy = jest
      .spyOn(assistants, 'findOneAndUpdate')
      .mockImplementationOnce(async (filter, change, options) => {
        await app.http
          .delete(`/v2/bots/${bot.id}`)
          .set('X-Legacy-Session-Token', account.sessionToken)
          .expect(200);
        return findOneAndUpdate(filter, change, options);
      });
    try {
      const refused = await create(bot, intent('Late', 5));
      expect({ status: refused.status, error: refused.body.error }).toEqual({
        status: 404,
        error: 'AssistantNotFound',
      });
    } finally {
      spy.mockRestore();
    }
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

  it('is not pushed past by a start giving older intents the names of the entities they tag (decision 0122 §4)', async () => {
    const { bot } = await accountWithBot(app.http);
    const a = (await create(bot, intent('A', 5)).expect(200)).body.id;
    await create(bot, intent('B', 5)).expect(200);
    // stored before intents kept those names, the assistant 10 bytes below its budget
    await app.store
      .collection('legacy_intents')
      .updateMany({ assistantId: bot.id }, { $unset: { entityNames: 1 } });
    const bytes = await held(bot.id);
    await app.store
      .collection('legacy_assistants')
      .updateOne({ _id: bot.id }, { $set: { dataBytes: bytes } });
    const other = await startLegacyApp({
      store: app.store,
      env: { LEGACY_MAX_ASSISTANT_BYTES: String(bytes + 10) },
    });
    try {
      // a growth of 6 bytes (the name and its key) still fits
      await other.http.post(`/v1/intents/${a}`).set(dev(bot)).send(intent('A123', 5)).expect(200);
    } finally {
      await other.close();
    }
    expect(await stored(bot.id)).toBe(bytes + 6);
    expect(await held(bot.id)).toBe(bytes + 6);
  });

  it('counts an update overtaken by a start giving its intent those names once', async () => {
    const { bot } = await accountWithBot(app.http);
    const id = (await create(bot, intent('Named meanwhile', 5)).expect(200)).body.id;
    await update(bot, id, intent('Named meanwhile', 5)).expect(200);
    await app.store.collection('legacy_intents').updateOne({ _id: id }, { $unset: { entityNames: 1 } });
    await app.store
      .collection('legacy_assistants')
      .updateOne({ _id: bot.id }, { $set: { dataBytes: await held(bot.id) } });
    const intents = app.store.collection('legacy_intents');
    const findOneAndUpdate = intents.findOneAndUpdate.bind(intents);
    // another instance starts between the update's read and its write
    const spy = jest
      .spyOn(intents, 'findOneAndUpdate')
      .mockImplementationOnce(async (filter, change, options) => {
        await (await startLegacyApp({ store: app.store })).close();
        return findOneAndUpdate(filter, change, options);
      });
    try {
      await update(bot, id, intent('Named meanwhile', 6)).expect(200);
    } finally {
      spy.mockRestore();
    }
    expect(await stored(bot.id)).toBe(await held(bot.id));
  });
});
