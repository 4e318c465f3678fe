import { waitFor } from '@platform/testkit';
import type { NluModel } from '../src/domain/understanding';
import { accountWithBot, dev, signup, trained, utterance } from './support/fixtures';
import { domainOver, type LegacyTestApp, startLegacyApp } from './support/legacy-app';
import { ScriptedNlu } from './support/scripted-nlu';

/** An engine whose storing of a trained model waits until released: a deletion can land while a model is stored. */
class HeldStoringNlu extends ScriptedNlu {
  storing = 0;
  private storeGate: Promise<void> | null = null;
  private openStoreGate: (() => void) | null = null;

  holdStoring(): void {
    this.storeGate = new Promise((resolve) => {
      this.openStoreGate = resolve;
    });
  }

  releaseStoring(): void {
    this.openStoreGate?.();
    this.storeGate = null;
  }

  override async storedModelForm(model: NluModel): Promise<Uint8Array> {
    this.storing++;
    if (this.storeGate) await this.storeGate;
    return super.storedModelForm(model);
  }
}

describe('legacy assistants', () => {
  let app: LegacyTestApp;
  beforeAll(async () => {
    app = await startLegacyApp();
  });
  afterAll(() => app.close());

  it('creates an assistant of spec 2.11 with a public client token and a private developer token', async () => {
    const { account, bot } = await accountWithBot(app.http, {
      languages: ['en', 'fr'],
      photo: { url: 'https://example.com/a.png' },
    });
    expect(bot).toEqual({
      id: expect.any(String),
      name: 'Travel helper',
      photo: { url: 'https://example.com/a.png' },
      developer: account.username,
      clientToken: expect.stringMatching(/^lct_[A-Za-z0-9_-]{43}$/),
      developerToken: expect.stringMatching(/^ldt_[A-Za-z0-9_-]{43}$/),
      lang: 'en',
      languages: ['en', 'fr'],
      description: 'helps travellers',
      nlu: 'platform-nlu',
      satisfactionOption: null,
      allowedOrigins: [],
    });
    const read = await app.http.get('/v1/bots').set(dev(bot)).expect(200);
    expect(read.body).toEqual({
      ...bot,
      training: {
        upToDate: true,
        error: null,
        revision: 0,
        languages: {
          en: { revision: 0, hasModel: false, trainedAt: null, trainingMs: null, error: null },
          fr: { revision: 0, hasModel: false, trainedAt: null, trainingMs: null, error: null },
        },
      },
    });
  });

  it('keeps the developer token only as a hash and a ciphertext, yet shows it to the owning account', async () => {
    const { account, bot } = await accountWithBot(app.http);
    const stored = await app.store.collection('legacy_assistants').findOne({ _id: bot.id });
    expect(JSON.stringify(stored)).not.toContain(bot.developerToken);
    const list = await app.http
      .get('/v2/bots')
      .set('X-Legacy-Session-Token', account.sessionToken)
      .expect(200);
    expect(list.body).toEqual([bot]);
    const other = await signup(app.http);
    await app.http.get(`/v2/bots/${bot.id}`).set('X-Legacy-Session-Token', other.sessionToken).expect(404);
    await app.http
      .get(`/v2/bots/${bot.id}`)
      .set('X-Legacy-Session-Token', account.sessionToken)
      .expect(200, bot);
  });

  it('needs an account credential, and a default language among the languages', async () => {
    await app.http.post('/v2/bots').send({ name: 'x', lang: 'en' }).expect(401);
    const account = await signup(app.http);
    const res = await app.http
      .post('/v2/bots')
      .set('X-Legacy-Session-Token', account.sessionToken)
      .send({ name: '', lang: 'english', languages: ['fr'] })
      .expect(400);
    const fields = res.body.details.issues.map((i: { field: string }) => i.field);
    expect(fields).toEqual(expect.arrayContaining(['name', 'lang']));
    const noLang = await app.http
      .post('/v2/bots')
      .set('X-Legacy-Session-Token', account.sessionToken)
      .send({ name: 'x', lang: 'en', languages: ['fr'] })
      .expect(400);
    expect(noLang.body.details.issues).toEqual([{ field: 'languages', message: expect.any(String) }]);
    // a well-formed tag too long to name a language (its models' ids would outgrow the store's)
    const long = `en${'-abcdefgh'.repeat(30)}`;
    await app.http
      .post('/v2/bots')
      .set('X-Legacy-Session-Token', account.sessionToken)
      .send({ name: 'x', lang: long, languages: [long] })
      .expect(400);
  });

  it('refuses unknown tokens and the client token on management routes', async () => {
    const { bot } = await accountWithBot(app.http);
    await app.http.get('/v1/bots').expect(401);
    await app.http.get('/v1/bots').set('Authorization', `Bearer ${bot.clientToken}`).expect(401);
    await app.http
      .get('/v1/bots')
      .set('Authorization', `Bearer ldt_${'x'.repeat(43)}`)
      .expect(401);
    const res = await app.http.get('/v1/intents').set('Authorization', 'Bearer nonsense').expect(401);
    expect(res.body).toMatchObject({ error: 'Unauthorized', status: 401, requestId: expect.any(String) });
  });

  it('rotates tokens: the old one stops working at once', async () => {
    const { account, bot } = await accountWithBot(app.http);
    const rotated = await app.http
      .post(`/v2/bots/${bot.id}/developerToken`)
      .set('X-Legacy-Session-Token', account.sessionToken)
      .expect(200);
    expect(rotated.body.developerToken).not.toBe(bot.developerToken);
    await app.http.get('/v1/bots').set(dev(bot)).expect(401);
    await app.http.get('/v1/bots').set('Authorization', `Bearer ${rotated.body.developerToken}`).expect(200);
    const client = await app.http
      .post(`/v2/bots/${bot.id}/clientToken`)
      .set('X-Legacy-Session-Token', account.sessionToken)
      .expect(200);
    expect(client.body.clientToken).not.toBe(bot.clientToken);
    await app.http
      .post('/v1/Messages')
      .set('Authorization', `Bearer ${bot.clientToken}`)
      .send({ userId: 'u', platform: 'web', text: 'hi' })
      .expect(401);
  });

  it('deletes an assistant with everything it holds', async () => {
    const { account, bot } = await accountWithBot(app.http);
    await app.http
      .post('/v1/intents')
      .set(dev(bot))
      .send({ name: 'greet', utterances: { en: [{ data: [{ text: 'hello' }] }] } })
      .expect(200);
    await app.http
      .delete(`/v2/bots/${bot.id}`)
      .set('X-Legacy-Session-Token', account.sessionToken)
      .expect(200);
    await app.http.get('/v1/bots').set(dev(bot)).expect(401);
    expect(await app.store.collection('legacy_intents').count({ assistantId: bot.id })).toBe(0);
  });

  it('answers a change of an assistant deleted since its token was read as the deleted assistant’s token is answered', async () => {
    const { account, bot } = await accountWithBot(app.http);
    const { assistants } = domainOver(app);
    // PATCH /v1/bots reads the assistant of its token, then changes it: the deletion lands in between
    const read = await assistants.byDeveloperToken(bot.developerToken);
    await app.http
      .delete(`/v2/bots/${bot.id}`)
      .set('X-Legacy-Session-Token', account.sessionToken)
      .expect(200);
    await expect(assistants.update(read, { name: 'Renamed' })).rejects.toMatchObject({
      kind: 'unauthenticated',
      message: 'Unknown developer token',
    });
    expect(await app.store.collection('legacy_assistants').count({ _id: bot.id })).toBe(0);
  });

  it('answers a change with the assistant as it now stands, with what a concurrent change set', async () => {
    const { bot } = await accountWithBot(app.http);
    const { assistants } = domainOver(app);
    const read = await assistants.byDeveloperToken(bot.developerToken);
    await app.http.patch('/v1/bots').set(dev(bot)).send({ description: 'trains and buses' }).expect(200);
    const updated = await assistants.update(read, { name: 'Renamed' });
    expect(assistants.view(updated)).toMatchObject({ name: 'Renamed', description: 'trains and buses' });
  });

  it('keeps no conversation of an assistant deleted while one of its messages is answered', async () => {
    const { account, bot } = await accountWithBot(app.http);
    const { assistants, dialogue } = domainOver(app);
    // Messages reads the assistant of its client token, then answers: the deletion lands in between
    const read = await assistants.byClientToken(bot.clientToken);
    await app.http
      .delete(`/v2/bots/${bot.id}`)
      .set('X-Legacy-Session-Token', account.sessionToken)
      .expect(200);
    await dialogue.reply(read, { userId: 'late', platform: 'web', event: 'WELCOME' });
    expect(await app.store.collection('legacy_conversations').count({ assistantId: bot.id })).toBe(0);
  });

  it('leaves no model behind when the assistant is deleted while its model is being stored', async () => {
    const nlu = new HeldStoringNlu();
    const held = await startLegacyApp({ nlu });
    try {
      const { account, bot } = await accountWithBot(held.http);
      nlu.holdStoring();
      await held.http
        .post('/v1/intents')
        .set(dev(bot))
        .send({ name: 'greet', utterances: { en: [utterance('hello there')] } })
        .expect(200);
      await waitFor(() => nlu.storing === 1, {
        timeoutMs: 10_000,
        intervalMs: 10,
        what: 'the model being stored',
      });
      await held.http
        .delete(`/v2/bots/${bot.id}`)
        .set('X-Legacy-Session-Token', account.sessionToken)
        .expect(200);
      nlu.releaseStoring();
      // trainings run one at a time: once another assistant's model is trained, the first training is over
      const { bot: other } = await accountWithBot(held.http);
      await held.http
        .post('/v1/intents')
        .set(dev(other))
        .send({ name: 'greet', utterances: { en: [utterance('hello there')] } })
        .expect(200);
      await trained(held.http, other);
      expect(await held.store.collection('legacy_models').count({ assistantId: bot.id })).toBe(0);
      const blobs = await held.store.blobs('legacy_models').list();
      expect(blobs.filter((blob) => blob.id.startsWith(`${bot.id}:`))).toEqual([]);
    } finally {
      nlu.releaseStoring();
      await held.close();
    }
  });
});
