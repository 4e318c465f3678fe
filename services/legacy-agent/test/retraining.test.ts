import { existsSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ManualClock } from '@platform/kernel';
import { loadModel, loadStoredModel, storedModelForm, TRAINING_REVISION } from '@platform/nlu';
import { createEmbeddedStore, type Store } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import { ORPHAN_BLOB_GRACE_MS } from '../src/domain/orphan-blobs';
import { type NluModel, type NluTrainingSet, Understanding } from '../src/domain/understanding';
import type { ModelDoc } from '../src/persistence/collections';
import { accountWithBot, type Bot, client, dev, trained, utterance } from './support/fixtures';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';
import { ManualTimers } from './support/manual-timers';
import { ScriptedNlu } from './support/scripted-nlu';

const intent = (name: string, ...sentences: string[]) => ({
  name,
  utterances: { en: sentences.map(utterance) },
  conditionalResponses: { en: { default: { default: [{ type: 'text', text: [`${name} answer`] }] } } },
});

/** Adds intent `name`, said as `sentences`, to the assistant (POST /v1/intents as its developer). */
const addIntent = (app: LegacyTestApp, bot: Bot, name: string, ...sentences: string[]) =>
  app.http
    .post('/v1/intents')
    .set(dev(bot))
    .send(intent(name, ...sentences))
    .expect(200);

/** The intent the assistant answers `text` (in `lang`, else its language) with (POST /v1/Messages as its client). */
const topIntent = async (app: LegacyTestApp, bot: Bot, text: string, lang?: string) =>
  (
    await app.http
      .post('/v1/Messages')
      .set(client(bot))
      .send({ userId: 'u', platform: 'web', text, ...(lang ? { lang } : {}) })
      .expect(200)
  ).body.intents[0] as { name: string; isFallback: boolean };

describe('legacy models: retraining without blocking Messages', () => {
  const started: Array<{ app: LegacyTestApp; nlu: ScriptedNlu }> = [];
  /** The app on `nlu` with one new assistant (in `languages`, else English), closed after the test. */
  const appWithAssistant = async (
    nlu: ScriptedNlu,
    options: {
      env?: Record<string, string>;
      timers?: ManualTimers;
      clock?: ManualClock;
      languages?: string[];
    } = {},
  ) => {
    const { languages, ...appOptions } = options;
    const app = await startLegacyApp({ ...appOptions, nlu });
    started.push({ app, nlu });
    const { account, bot } = await accountWithBot(app.http, languages ? { languages } : {});
    return { app, bot, account };
  };
  afterEach(async () => {
    for (const { app, nlu } of started.splice(0)) {
      nlu.release(); // a training the test still holds ends before the app closes
      await app.close();
    }
  });

  it('keeps answering with the previous model until the new one is ready', async () => {
    const nlu = new ScriptedNlu();
    const { app, bot } = await appWithAssistant(nlu);
    await addIntent(app, bot, 'Greet', 'hello there');
    await trained(app.http, bot);
    nlu.hold();
    await addIntent(app, bot, 'Weather', 'weather today');
    expect((await topIntent(app, bot, 'hello there')).name).toBe('Greet');
    expect((await topIntent(app, bot, 'weather today')).isFallback).toBe(true);
    expect((await app.http.get('/v1/bots').set(dev(bot))).body.training.upToDate).toBe(false);
    nlu.release();
    await trained(app.http, bot);
    expect((await topIntent(app, bot, 'weather today')).name).toBe('Weather');
  });

  it('trains once for a burst of changes, and only the languages that changed', async () => {
    const nlu = new ScriptedNlu();
    const timers = new ManualTimers();
    const { app, bot } = await appWithAssistant(nlu, {
      timers,
      env: { LEGACY_RETRAIN_DEBOUNCE_MS: '300', LEGACY_RETRAIN_MAX_DELAY_MS: '10000' },
      languages: ['en', 'fr'],
    });
    for (let i = 0; i < 8; i++) {
      await app.http
        .post('/v1/intents')
        .set(dev(bot))
        .send({
          name: `I${i}`,
          utterances: { en: [utterance(`sentence ${i}`)], fr: [utterance(`phrase ${i}`)] },
        })
        .expect(200);
      timers.advance(299); // each change inside the quiet time restarts it
    }
    expect(nlu.trainings).toHaveLength(0);
    timers.advance(1);
    await trained(app.http, bot);
    expect(nlu.trainings.map((s) => s.lang).sort()).toEqual(['en', 'fr']);
    expect(nlu.trainings[0]!.intents).toHaveLength(8);

    const list = (await app.http.get('/v1/intents').set(dev(bot)).expect(200)).body;
    await app.http
      .post(`/v1/intents/${list[0].id}`)
      .set(dev(bot))
      .send({ utterances: { en: list[0].utterances.en, fr: [utterance('une autre phrase')] } })
      .expect(200);
    timers.advance(300);
    await trained(app.http, bot);
    expect(nlu.trainings.map((s) => s.lang)).toEqual([expect.any(String), expect.any(String), 'fr']);
  });

  it('never delays a long burst of changes past LEGACY_RETRAIN_MAX_DELAY_MS', async () => {
    const nlu = new ScriptedNlu();
    const timers = new ManualTimers();
    const { app, bot } = await appWithAssistant(nlu, {
      timers,
      env: { LEGACY_RETRAIN_DEBOUNCE_MS: '300', LEGACY_RETRAIN_MAX_DELAY_MS: '1000' },
    });
    for (let i = 0; i < 4; i++) {
      await addIntent(app, bot, `I${i}`, `sentence ${i}`);
      timers.advance(250);
    }
    // 1,000 ms after the first change, though the last one was 250 ms ago
    await waitFor(() => nlu.trainings.length === 1, { what: 'training at the burst deadline' });
  });

  it('trains again when an intent write refused for an entity deleted meanwhile is undone (decision 0122 §3)', async () => {
    const nlu = new ScriptedNlu();
    const timers = new ManualTimers();
    const { app, bot } = await appWithAssistant(nlu, { timers, env: { LEGACY_RETRAIN_DEBOUNCE_MS: '300' } });
    const entities = app.store.collection('legacy_entities');
    const station = { name: 'Station', automaticallyExtensible: { en: true }, useSynonyms: { en: false } };
    const tagging = { en: [utterance('to [Marienplatz](Station)')] };
    await addIntent(app, bot, 'Greet', 'hello there');
    const go = (await addIntent(app, bot, 'go', 'go')).body.id as string;

    /** `write` (tagging Station) is refused: the entity is deleted after its check, and the training that deletion
     *  schedules reads the intents while the refused version is stored (before its write is undone). */
    const refusedWhileTraining = async (write: () => Promise<unknown>) => {
      const { body } = await app.http
        .post('/v1/entities')
        .set(dev(bot))
        .send({ ...station, data: { en: [{ value: 'Marienplatz' }] } })
        .expect(200);
      timers.advance(300);
      await trained(app.http, bot);
      const started = nlu.started;
      let deleted = false;
      const find = entities.find.bind(entities);
      const checked = jest.spyOn(entities, 'find').mockImplementation(async (filter, options) => {
        const found = await find(filter, options);
        // the intent's check reads without options; training reads sorted
        if (!options && !deleted) {
          deleted = true;
          await app.http.delete(`/v1/entities/${body.id}`).set(dev(bot)).expect(200);
        }
        return found;
      });
      const updateOne = entities.updateOne.bind(entities);
      const held = jest.spyOn(entities, 'updateOne').mockImplementation(async (filter, update) => {
        // the intent is stored, its hold of the entity about to miss: the deletion's training reads it now
        if (deleted && nlu.started === started) {
          timers.advance(300);
          await waitFor(() => nlu.started === started + 1, { what: 'the training of the deletion to begin' });
        }
        return updateOne(filter, update);
      });
      nlu.hold();
      try {
        await write();
      } finally {
        checked.mockRestore();
        held.mockRestore();
        nlu.release();
      }
      await waitFor(() => nlu.trainings.length === started + 1, {
        what: 'the training that read the refused write',
      });
      await waitFor(() => timers.pending === 1, { what: 'the training of the undo to be scheduled' });
      timers.advance(0);
      await trained(app.http, bot);
      return nlu.trainings.slice(started).map((set) => set.intents.map((i) => i.name));
    };

    // a refused creation is deleted
    const created = () =>
      app.http.post('/v1/intents').set(dev(bot)).send({ name: 'to', utterances: tagging }).expect(400);
    expect(await refusedWhileTraining(created)).toEqual([
      ['Greet', 'go', 'to'],
      ['Greet', 'go'],
    ]);
    expect((await topIntent(app, bot, 'to Marienplatz')).name).not.toBe('to');
    // a refused update puts the version it replaced back
    const updated = () =>
      app.http
        .post(`/v1/intents/${go}`)
        .set(dev(bot))
        .send({ name: 'go to', utterances: tagging })
        .expect(400);
    expect(await refusedWhileTraining(updated)).toEqual([
      ['Greet', 'go to'],
      ['Greet', 'go'],
    ]);
    expect((await topIntent(app, bot, 'go')).name).toBe('go');
  });

  it('refuses to train more than LEGACY_MAX_TRAINING_SENTENCES, says why in the status, and keeps the model', async () => {
    const nlu = new ScriptedNlu();
    const { app, bot } = await appWithAssistant(nlu, { env: { LEGACY_MAX_TRAINING_SENTENCES: '3' } });
    const made = await app.http
      .post('/v1/intents')
      .set(dev(bot))
      .send({ name: 'Small', utterances: { en: [utterance('one'), utterance('two')] } })
      .expect(200);
    await trained(app.http, bot);
    expect(nlu.trainings).toHaveLength(1);
    await app.http
      .post(`/v1/intents/${made.body.id}`)
      .set(dev(bot))
      .send({ utterances: { en: ['one', 'two', 'three', 'four'].map(utterance) } })
      .expect(200);
    const status = await waitFor(
      async () => {
        const training = (await app.http.get('/v1/bots').set(dev(bot))).body.training;
        return training.error ? training : null;
      },
      { what: 'the refusal in the status' },
    );
    expect(status.upToDate).toBe(false);
    expect(status.error).toMatch(/^4 training sentences in en, more than the 3 a model is trained on/);
    expect(nlu.trainings).toHaveLength(1);
    expect(status.languages.en.hasModel).toBe(true);
  });

  it('trains the other languages when one is refused: they answer, its messages answer at once, the status names it', async () => {
    const nlu = new ScriptedNlu();
    // a message that waited for the refused language's first model would outlast the test
    const { app, bot } = await appWithAssistant(nlu, {
      env: { LEGACY_MAX_TRAINING_SENTENCES: '2', LEGACY_FIRST_MODEL_WAIT_MS: '600000' },
      languages: ['en', 'fr'],
    });
    const utterances = {
      en: ['hello', 'hi there', 'good morning'].map(utterance),
      fr: [utterance('bonjour')],
    };
    await app.http.post('/v1/intents').set(dev(bot)).send({ name: 'Greet', utterances }).expect(200);
    // a French visitor waits for the French model, trained though English is refused
    expect(await topIntent(app, bot, 'bonjour', 'fr')).toMatchObject({ name: 'Greet', isFallback: false });
    const { training } = (await app.http.get('/v1/bots').set(dev(bot)).expect(200)).body;
    expect(training).toMatchObject({ upToDate: false, revision: 1 });
    expect(training.error).toMatch(/^3 training sentences in en, more than the 2 a model is trained on/);
    expect(training.languages.en).toMatchObject({ revision: 0, hasModel: false, error: training.error });
    expect(training.languages.fr).toMatchObject({ revision: 1, hasModel: true, error: null });
    // an English visitor gets the fallback at once, and starts no training
    for (let i = 0; i < 3; i++)
      expect(await topIntent(app, bot, 'hello', 'en')).toMatchObject({ isFallback: true });
    expect(nlu.started).toBe(1);
  });

  it('keeps the previous model of a refused language while the other languages learn the change', async () => {
    const nlu = new ScriptedNlu();
    const { app, bot } = await appWithAssistant(nlu, {
      env: { LEGACY_MAX_TRAINING_SENTENCES: '2' },
      languages: ['en', 'fr'],
    });
    const made = await app.http
      .post('/v1/intents')
      .set(dev(bot))
      .send({ name: 'Greet', utterances: { en: [utterance('hello')], fr: [utterance('bonjour')] } })
      .expect(200);
    await trained(app.http, bot);
    const utterances = { en: ['hello', 'hi there', 'good morning'].map(utterance), fr: [utterance('salut')] };
    await app.http.post(`/v1/intents/${made.body.id}`).set(dev(bot)).send({ utterances }).expect(200);
    const status = await waitFor(
      async () => {
        const training = (await app.http.get('/v1/bots').set(dev(bot))).body.training;
        return training.languages.fr.revision === training.revision ? training : null;
      },
      { what: 'the French model to learn the change' },
    );
    expect(status.upToDate).toBe(false);
    expect(status.languages.en).toMatchObject({ revision: 1, hasModel: true });
    expect(status.languages.en.error).toMatch(/^3 training sentences in en/);
    expect(status.error).toBe(status.languages.en.error);
    expect(await topIntent(app, bot, 'salut', 'fr')).toMatchObject({ name: 'Greet', isFallback: false });
    // English answers with its previous model: what it learnt, not the refused change
    expect((await topIntent(app, bot, 'hello', 'en')).name).toBe('Greet');
    expect((await topIntent(app, bot, 'good morning', 'en')).isFallback).toBe(true);
  });

  it('keeps up to date a language whose model learnt its sentences before LEGACY_MAX_TRAINING_SENTENCES was lowered', async () => {
    const first = await startLegacyApp({ nlu: new ScriptedNlu() });
    const { bot } = await accountWithBot(first.http, { languages: ['en', 'fr'] });
    const made = await first.http
      .post('/v1/intents')
      .set(dev(bot))
      .send({ name: 'Greet', utterances: { en: ['hello', 'hi there', 'good morning'].map(utterance) } })
      .expect(200);
    await trained(first.http, bot);
    await first.stop();
    const nlu = new ScriptedNlu();
    const app = await startLegacyApp({
      nlu,
      dataDir: first.dataDir,
      env: { LEGACY_MAX_TRAINING_SENTENCES: '2' },
    });
    try {
      // French changes; English, unchanged, has nothing to train
      const utterances = {
        en: ['hello', 'hi there', 'good morning'].map(utterance),
        fr: [utterance('bonjour')],
      };
      await app.http.post(`/v1/intents/${made.body.id}`).set(dev(bot)).send({ utterances }).expect(200);
      const status = await waitFor(
        async () => {
          const training = (await app.http.get('/v1/bots').set(dev(bot))).body.training;
          return training.languages.fr.revision === training.revision ? training : null;
        },
        { what: 'the French model to learn the change' },
      );
      expect(status).toMatchObject({ upToDate: true, error: null });
      expect(status.languages.en).toMatchObject({ revision: 2, hasModel: true, error: null });
      expect(nlu.trainings.map((set) => set.lang)).toEqual(['fr']);
    } finally {
      await app.close();
      rmSync(first.dataDir, { recursive: true, force: true });
    }
  });

  it('trains the other languages when the training of one fails, and names it in the status', async () => {
    class FailingInEnglish extends ScriptedNlu {
      override async trainModelInWorker(set: NluTrainingSet): Promise<NluModel> {
        if (set.lang !== 'en') return super.trainModelInWorker(set);
        this.started++;
        throw new Error('the training worker stopped');
      }
    }
    const nlu = new FailingInEnglish();
    const { app, bot } = await appWithAssistant(nlu, {
      env: { LEGACY_FIRST_MODEL_WAIT_MS: '600000' },
      languages: ['en', 'fr'],
    });
    const utterances = { en: [utterance('hello')], fr: [utterance('bonjour')] };
    await app.http.post('/v1/intents').set(dev(bot)).send({ name: 'Greet', utterances }).expect(200);
    expect(await topIntent(app, bot, 'bonjour', 'fr')).toMatchObject({ name: 'Greet', isFallback: false });
    const { training } = (await app.http.get('/v1/bots').set(dev(bot)).expect(200)).body;
    expect(training.languages.en).toMatchObject({ hasModel: false, error: expect.stringMatching(/\ben\b/) });
    expect(training.languages.fr).toMatchObject({ hasModel: true, error: null });
    expect(training.error).toBe(training.languages.en.error);
    expect(await topIntent(app, bot, 'hello', 'en')).toMatchObject({ isFallback: true });
    expect(nlu.started).toBe(2);
  });

  it('makes a message in a language whose training failed wait for the retraining a change started, after the languages before it', async () => {
    class FailingInEnglish extends ScriptedNlu {
      failing = true;
      override async trainModelInWorker(set: NluTrainingSet): Promise<NluModel> {
        if (set.lang !== 'en' || !this.failing) return super.trainModelInWorker(set);
        this.started++;
        throw new Error('the training worker stopped');
      }
    }
    const nlu = new FailingInEnglish();
    const { app, bot } = await appWithAssistant(nlu, {
      env: { LEGACY_FIRST_MODEL_WAIT_MS: '600000' },
      languages: ['fr', 'en'],
    });
    const made = await app.http
      .post('/v1/intents')
      .set(dev(bot))
      .send({ name: 'Greet', utterances: { fr: [utterance('bonjour')], en: [utterance('hello')] } })
      .expect(200);
    await waitFor(async () => (await app.http.get('/v1/bots').set(dev(bot))).body.training.error !== null, {
      what: 'the failed English training in the status',
    });
    // the developer changes both languages; French trains first, held, and an English visitor writes meanwhile
    nlu.failing = false;
    nlu.hold();
    const utterances = {
      fr: [utterance('bonjour'), utterance('salut')],
      en: [utterance('hello'), utterance('hi')],
    };
    await app.http.post(`/v1/intents/${made.body.id}`).set(dev(bot)).send({ utterances }).expect(200);
    await waitFor(() => nlu.started === 3, { what: 'the French retraining to begin' });
    const waiting = jest.spyOn(Understanding.prototype, 'trained');
    const answer = topIntent(app, bot, 'hello', 'en');
    await waitFor(() => waiting.mock.calls.length === 1, { what: 'the message to wait for its model' });
    waiting.mockRestore();
    nlu.release();
    expect(await answer).toMatchObject({ name: 'Greet', isFallback: false });
  });

  it('keeps nothing of a failed training of an assistant removed while it trained', async () => {
    class FailingWhenReleased extends ScriptedNlu {
      failed = false;
      override async trainModelInWorker(set: NluTrainingSet): Promise<NluModel> {
        await super.trainModelInWorker(set);
        this.failed = true;
        throw new Error('the training worker stopped');
      }
    }
    const nlu = new FailingWhenReleased();
    const { app, bot, account } = await appWithAssistant(nlu);
    nlu.hold();
    await addIntent(app, bot, 'Greet', 'hello there');
    await waitFor(() => nlu.started === 1, { what: 'the training to begin' });
    const forgetting = jest.spyOn(Understanding.prototype, 'forget');
    await app.http
      .delete(`/v2/bots/${bot.id}`)
      .set('X-Legacy-Session-Token', account.sessionToken)
      .expect(200);
    const understanding = forgetting.mock.contexts[0] as unknown as { failures: Map<string, string> };
    forgetting.mockRestore();
    nlu.release();
    await waitFor(() => nlu.failed, { what: 'the training to fail' });
    await new Promise((resolve) => setImmediate(resolve));
    expect([...understanding.failures.keys()]).toEqual([]);
  });

  it('makes a message to a brand-new assistant wait for its first model', async () => {
    const nlu = new ScriptedNlu();
    const { app, bot } = await appWithAssistant(nlu);
    nlu.hold();
    await addIntent(app, bot, 'Greet', 'hello there');
    let answered = false;
    const pending = app.http
      .post('/v1/Messages')
      .set(client(bot))
      .send({ userId: 'u', platform: 'web', text: 'hello there' })
      .then((res) => {
        answered = true;
        return res;
      });
    await waitFor(() => nlu.started === 1, { what: 'the first training to begin' });
    expect(answered).toBe(false); // it cannot answer before the held training ends
    nlu.release();
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.body.intents[0]).toMatchObject({ name: 'Greet', isFallback: false });
  });

  it('starts no training for each message to an assistant whose training failed: the fallback answers', async () => {
    // a training that fails (a worker stopped at LEGACY_TRAINING_TIMEOUT_SECONDS, say) holds the one queue
    class FailingNlu extends ScriptedNlu {
      override async trainModelInWorker(): Promise<never> {
        this.started++;
        throw new Error('the training worker stopped');
      }
    }
    const nlu = new FailingNlu();
    const { app, bot } = await appWithAssistant(nlu);
    await addIntent(app, bot, 'Greet', 'hello there');
    await waitFor(async () => (await app.http.get('/v1/bots').set(dev(bot))).body.training.error !== null, {
      what: 'the failed training in the status',
    });
    expect(nlu.started).toBe(1);
    for (let i = 0; i < 3; i++) {
      expect(await topIntent(app, bot, 'hello there')).toMatchObject({
        name: 'Default Fallback Intent',
        isFallback: true,
      });
    }
    expect(nlu.started).toBe(1);
    // the next change trains again
    await addIntent(app, bot, 'Bye', 'goodbye');
    await waitFor(() => nlu.started === 2, { what: 'the training of the next change' });
  });

  it('starts no training from a message while the previous model answers after a failed training', async () => {
    class FlakyNlu extends ScriptedNlu {
      failing = false;
      override async trainModelInWorker(set: NluTrainingSet): Promise<NluModel> {
        if (!this.failing) return super.trainModelInWorker(set);
        this.started++;
        throw new Error('the training worker stopped');
      }
    }
    const nlu = new FlakyNlu();
    const timers = new ManualTimers();
    const clock = new ManualClock('2026-11-23T10:00:00Z');
    const { app, bot } = await appWithAssistant(nlu, {
      timers,
      clock,
      env: { LEGACY_RETRAIN_DEBOUNCE_MS: '10' },
    });
    await addIntent(app, bot, 'Greet', 'hello there');
    timers.advance(10);
    await trained(app.http, bot);
    nlu.failing = true;
    await addIntent(app, bot, 'Bye', 'goodbye');
    timers.advance(10);
    await waitFor(async () => (await app.http.get('/v1/bots').set(dev(bot))).body.training.error !== null, {
      what: 'the failed training in the status',
    });
    // long after the change, and past the once-a-second look at the store for a newer model
    clock.advance(60_000);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await topIntent(app, bot, 'hello there')).name).toBe('Greet');
    expect(timers.pending).toBe(0);
  });

  it('starts one training for a message waiting for a first model while the store cannot read the entities, and trains once it can', async () => {
    const folder = tempDir('legacy-agent-');
    const real = createEmbeddedStore({ dataDir: folder.dir });
    const outage = { down: false, reads: 0 };
    // the store fails the training's read of the entities (a message reads none)
    const store = new Proxy(real, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (prop !== 'collection') return typeof value === 'function' ? value.bind(target) : value;
        return (name: string, indexes?: unknown) => {
          const collection = target.collection(name, indexes as never);
          if (name !== 'legacy_entities') return collection;
          return new Proxy(collection, {
            get(c, method) {
              const fn = Reflect.get(c, method, c);
              if (method !== 'find') return typeof fn === 'function' ? fn.bind(c) : fn;
              return (...args: unknown[]) => {
                if (!outage.down) return fn.apply(c, args);
                outage.reads++;
                return Promise.reject(new Error('connection refused'));
              };
            },
          });
        };
      },
    }) as Store;
    const nlu = new ScriptedNlu();
    const app = await startLegacyApp({ nlu, store, env: { LEGACY_FIRST_MODEL_WAIT_MS: '2000' } });
    try {
      const { bot } = await accountWithBot(app.http);
      outage.down = true;
      await addIntent(app, bot, 'Greet', 'hello there');
      await waitFor(() => outage.reads === 1, { what: 'the training of the change to fail' });
      // the message's own training fails like the change's: it answers the fallback rather than start another
      expect(await topIntent(app, bot, 'hello there')).toMatchObject({ isFallback: true });
      expect(outage.reads).toBeLessThanOrEqual(2);
      expect(nlu.started).toBe(0);
      outage.down = false;
      expect(await topIntent(app, bot, 'hello there')).toMatchObject({ name: 'Greet', isFallback: false });
    } finally {
      await app.close();
      await real.close();
      folder.remove();
    }
  });

  it('stops without waiting for a training under way, and stores nothing of it', async () => {
    const nlu = new ScriptedNlu();
    const { app, bot } = await appWithAssistant(nlu);
    nlu.hold();
    await addIntent(app, bot, 'Greet', 'hello there');
    await waitFor(() => nlu.started === 1, { what: 'the training to begin' });
    // the training is held for good: a stop that waited for it would never end
    await app.service.stop();
    nlu.release();
    expect(await app.store.collection('legacy_models').count({ assistantId: bot.id })).toBe(0);
  });

  it('answers the fallback when the first model takes longer than LEGACY_FIRST_MODEL_WAIT_MS', async () => {
    const nlu = new ScriptedNlu();
    const { app, bot } = await appWithAssistant(nlu, { env: { LEGACY_FIRST_MODEL_WAIT_MS: '50' } });
    nlu.hold();
    await addIntent(app, bot, 'Greet', 'hello there');
    expect(await topIntent(app, bot, 'hello there')).toMatchObject({
      name: 'Default Fallback Intent',
      isFallback: true,
    });
  });

  it('keeps trained models across a restart, and retrains at start what fell behind', async () => {
    const first = new ScriptedNlu();
    const app = await startLegacyApp({ nlu: first });
    const { bot } = await accountWithBot(app.http);
    await addIntent(app, bot, 'Greet', 'hello there');
    await trained(app.http, bot);
    await app.stop();

    const second = new ScriptedNlu();
    const again = await startLegacyApp({ nlu: second, dataDir: app.dataDir });
    try {
      expect((await topIntent(again, bot, 'hello there')).name).toBe('Greet');
      expect(second.trainings).toHaveLength(0);
      await again.stop();

      // Changed data whose training never ran (a crash, say): the next start trains it.
      const third = new ScriptedNlu();
      const store = createEmbeddedStore({ dataDir: again.dataDir });
      await store
        .collection('legacy_intents')
        .updateOne({ assistantId: bot.id }, { $set: { 'utterances.en': [utterance('good morning')] } });
      await store.collection('legacy_assistants').updateOne({ _id: bot.id }, { $inc: { dataRevision: 1 } });
      await store.close();
      const restarted = await startLegacyApp({ nlu: third, dataDir: again.dataDir });
      try {
        await waitFor(() => third.trainings.length === 1, { what: 'retraining at start' });
        await trained(restarted.http, bot);
        expect((await topIntent(restarted, bot, 'good morning')).name).toBe('Greet');
      } finally {
        await restarted.close();
      }

      // A model an older engine's training made (no trainingRevision: before the field): retrained at start,
      // the old one answering meanwhile, and stored again with this revision.
      const fourth = new ScriptedNlu();
      const older = createEmbeddedStore({ dataDir: again.dataDir });
      await older
        .collection('legacy_models')
        .updateOne({ _id: `${bot.id}:en` }, { $unset: { trainingRevision: 1 } });
      await older.close();
      const upgraded = await startLegacyApp({ nlu: fourth, dataDir: again.dataDir });
      try {
        await waitFor(() => fourth.trainings.length === 1, { what: 'retraining a model of an older engine' });
        await waitFor(
          async () =>
            (await upgraded.store.collection<ModelDoc>('legacy_models').findOne({ _id: `${bot.id}:en` }))
              ?.trainingRevision === TRAINING_REVISION,
          { what: 'the retrained model stored with the engine’s revision' },
        );
      } finally {
        await upgraded.close();
      }
    } finally {
      await again.stop().catch(() => undefined);
    }
  });

  it('retrains at start a model made before values that fold alike were told apart, which then extracts them as typed', async () => {
    const app = await startLegacyApp();
    const { bot } = await accountWithBot(app.http);
    await app.http
      .post('/v1/entities')
      .set(dev(bot))
      .send({
        name: 'City',
        automaticallyExtensible: { en: false },
        useSynonyms: { en: false },
        data: { en: [{ value: 'Paris' }, { value: 'paris' }] },
      })
      .expect(200);
    await addIntent(app, bot, 'Go', 'go to [Paris](City)', 'take me to [Lyon](City)');
    await trained(app.http, bot);
    const city = async (running: LegacyTestApp, text: string) =>
      (
        await running.http
          .post('/v1/Messages')
          .set(client(bot))
          .send({ userId: 'u', platform: 'web', text })
          .expect(200)
      ).body.intents[0].slots.City;
    expect(await city(app, 'go to paris')).toBe('paris');
    await app.stop();

    // the model as the engine of revision 2 stored it: without the spellings of values that fold alike
    const key = `${bot.id}:en`;
    const store = createEmbeddedStore({ dataDir: app.dataDir });
    const record = (await store.collection<ModelDoc>('legacy_models').findOne({ _id: key }))!;
    const blobs = store.blobs('legacy_models');
    const json = (await loadStoredModel((await blobs.get(record.blob!))!)).toJSON();
    const { spellings, ...entities } = json.entities as { spellings?: unknown };
    expect(spellings).toBeDefined();
    const before = loadModel({ ...json, entities });
    expect(before.parse('go to paris').entities.map((e) => e.value)).toEqual(['Paris']);
    const form = await storedModelForm(before);
    await blobs.put(record.blob!, form);
    await store
      .collection<ModelDoc>('legacy_models')
      .updateOne({ _id: key }, { $set: { bytes: form.length, trainingRevision: 2 } });
    await store.close();

    const upgraded = await startLegacyApp({ dataDir: app.dataDir });
    try {
      await waitFor(
        async () =>
          (await upgraded.store.collection<ModelDoc>('legacy_models').findOne({ _id: key }))
            ?.trainingRevision === TRAINING_REVISION,
        { what: 'the model of revision 2 retrained at start' },
      );
      expect(await city(upgraded, 'go to paris')).toBe('paris');
      expect(await city(upgraded, 'go to PARIS')).toBe('Paris');
    } finally {
      await upgraded.close();
    }
  });

  it("retrains at start the models of an older engine one after another: a new assistant's first model comes before the rest", async () => {
    const app = await startLegacyApp({ nlu: new ScriptedNlu() });
    for (const name of ['One', 'Two', 'Three']) {
      const { bot } = await accountWithBot(app.http);
      await addIntent(app, bot, name, `hello ${name}`);
      await trained(app.http, bot);
    }
    await app.stop();
    const store = createEmbeddedStore({ dataDir: app.dataDir });
    await store
      .collection<ModelDoc>('legacy_models')
      .updateMany({}, { $set: { trainingRevision: TRAINING_REVISION - 1 } });
    await store.close();

    // the whole platform is to be retrained when a developer makes a new assistant
    const nlu = new ScriptedNlu();
    const timers = new ManualTimers();
    const upgraded = await startLegacyApp({ nlu, timers, dataDir: app.dataDir });
    try {
      const { bot } = await accountWithBot(upgraded.http);
      await addIntent(upgraded, bot, 'Fresh', 'good morning');
      timers.advance(1_000);
      await waitFor(() => nlu.trainings.length >= 2, { what: 'two trainings' });
      const names = () => nlu.trainings.map((set) => set.intents[0]!.name);
      // its first model comes after the retraining under way, not after all of them
      expect(names()[1]).toBe('Fresh');
      await trained(upgraded.http, bot);
      // the others follow, the previous models answering meanwhile
      await waitFor(
        async () => {
          timers.advance(0);
          const models = await upgraded.store.collection<ModelDoc>('legacy_models').find({});
          return models.every((m) => m.trainingRevision === TRAINING_REVISION);
        },
        { what: 'every model retrained' },
      );
      expect(names().sort()).toEqual(['Fresh', 'One', 'Three', 'Two']);
    } finally {
      await upgraded.close();
    }
  });

  it('removes at start the models of an assistant whose removal was cut short', async () => {
    const app = await startLegacyApp({ nlu: new ScriptedNlu() });
    const { bot } = await accountWithBot(app.http);
    await addIntent(app, bot, 'Greet', 'hello there');
    await trained(app.http, bot);
    const { bot: kept } = await accountWithBot(app.http);
    await addIntent(app, kept, 'Greet', 'hello there');
    await trained(app.http, kept);
    await app.stop();

    // a removal stopped after its first step (the assistant is gone, its models are not)
    const store = createEmbeddedStore({ dataDir: app.dataDir });
    await store.collection('legacy_assistants').deleteOne({ _id: bot.id });
    await store.close();
    const restarted = await startLegacyApp({ nlu: new ScriptedNlu(), dataDir: app.dataDir });
    try {
      const models = restarted.store.collection<ModelDoc>('legacy_models');
      expect(await models.count({ assistantId: bot.id })).toBe(0);
      const blobs = (await restarted.store.blobs('legacy_models').list()).map((blob) => blob.id);
      expect(blobs.filter((id) => id.startsWith(`${bot.id}:`))).toEqual([]);
      // the other assistant's model stays, and answers
      expect(await models.count({ assistantId: kept.id })).toBe(1);
      expect(blobs.filter((id) => id.startsWith(`${kept.id}:`))).toHaveLength(1);
      expect((await topIntent(restarted, kept, 'hello there')).name).toBe('Greet');
    } finally {
      await restarted.close();
    }
  });

  it('removes at start the models of a language tag stored in another case, and trains the canonical one', async () => {
    const app = await startLegacyApp({ nlu: new ScriptedNlu() });
    const { bot } = await accountWithBot(app.http, { lang: 'pt-BR' });
    await app.http
      .post('/v1/intents')
      .set(dev(bot))
      .send({ name: 'Oi', utterances: { 'pt-BR': [utterance('olá')] } })
      .expect(200);
    await trained(app.http, bot);
    await app.stop();

    // as stored before tags were kept canonical: the assistant, its intent and its model in `pt-br`
    const store = createEmbeddedStore({ dataDir: app.dataDir });
    const models = store.collection<ModelDoc>('legacy_models');
    const blobs = store.blobs('legacy_models');
    const model = (await models.findOne({ _id: `${bot.id}:pt-BR` }))!;
    const older = `${bot.id}:pt-br`;
    await blobs.put(`${older}:${model.fingerprint}`, (await blobs.get(model.blob!))!);
    await models.insertOne({ ...model, _id: older, lang: 'pt-br', blob: `${older}:${model.fingerprint}` });
    await blobs.delete(model.blob!);
    await models.deleteOne({ _id: model._id });
    await store
      .collection('legacy_assistants')
      .updateOne({ _id: bot.id }, { $set: { lang: 'pt-br', languages: ['pt-br'] } });
    await store
      .collection('legacy_intents')
      .updateOne({ assistantId: bot.id }, { $set: { utterances: { 'pt-br': [utterance('olá')] } } });
    await store.close();

    const nlu = new ScriptedNlu();
    const restarted = await startLegacyApp({ nlu, dataDir: app.dataDir });
    try {
      await waitFor(() => nlu.trainings.length === 1, { what: 'the canonical language trained at start' });
      expect(nlu.trainings[0]!.lang).toBe('pt-BR');
      await trained(restarted.http, bot);
      const stored = await restarted.store
        .collection<ModelDoc>('legacy_models')
        .find({ assistantId: bot.id });
      expect(stored.map((m) => m.lang)).toEqual(['pt-BR']);
      const left = (await restarted.store.blobs('legacy_models').list()).map((blob) => blob.id);
      expect(left.filter((id) => id.startsWith(`${bot.id}:`))).toEqual([stored[0]!.blob]);
    } finally {
      await restarted.close();
    }
  });
});

/** Holds every training until the test ends it (`finish`), and records which began, in order. */
class SteppedNlu extends ScriptedNlu {
  /** `<its assistant's first intent>:<lang>` of each training begun */
  readonly begun: string[] = [];
  private readonly held: Array<() => void> = [];

  override async trainModelInWorker(set: NluTrainingSet): Promise<NluModel> {
    this.started++;
    this.begun.push(`${set.intents[0]!.name}:${set.lang}`);
    await new Promise<void>((resolve) => this.held.push(resolve));
    return this.trainModel(set);
  }

  override release(): void {
    super.release();
    for (const end of this.held.splice(0)) end();
  }

  /** Ends the `n`th training once it has begun. */
  async finish(n: number): Promise<void> {
    await waitFor(() => this.started === n && this.held.length === 1, { what: `training ${n} to begin` });
    this.held.shift()!();
  }
}

describe('legacy models: one training at a time, shared between assistants', () => {
  const started: LegacyTestApp[] = [];
  let nlu: SteppedNlu;
  let timers: ManualTimers;
  const start = async (dataDir?: string) => {
    nlu = new SteppedNlu();
    timers = new ManualTimers();
    // the first message's wait outlasts any test: what it waits for is the order of the trainings
    const env = { LEGACY_FIRST_MODEL_WAIT_MS: '600000' };
    const app = await startLegacyApp({ nlu, timers, dataDir, env });
    started.push(app);
    return app;
  };
  afterEach(async () => {
    nlu.release();
    for (const app of started.splice(0)) await app.close();
  });
  /** Ends the `n`th training, and lets the debounce of the changes made meanwhile pass until the next one begins. */
  const next = async (n: number) => {
    await nlu.finish(n);
    await waitFor(
      () => {
        timers.advance(10);
        return nlu.started > n;
      },
      { what: `training ${n + 1} to begin` },
    );
  };
  const everywhere = (text: string) => ({
    en: [utterance(text)],
    fr: [utterance(text)],
    de: [utterance(text)],
  });

  it("takes turns between assistants a language at a time: a small assistant's model waits for one of a large one's trainings, not all", async () => {
    const app = await start();
    const { bot: large } = await accountWithBot(app.http, { languages: ['en', 'fr', 'de'] });
    const { bot: small } = await accountWithBot(app.http);
    await app.http
      .post('/v1/intents')
      .set(dev(large))
      .send({ name: 'Large', utterances: everywhere('big') })
      .expect(200);
    timers.advance(10);
    await waitFor(() => nlu.started === 1, { what: 'the large assistant’s training to begin' });
    // its developer goes on editing while it trains: one more training of it, after the others'
    for (const name of ['Larger', 'Largest'])
      await app.http
        .post('/v1/intents')
        .set(dev(large))
        .send({ name, utterances: everywhere(name) })
        .expect(200);
    await addIntent(app, small, 'Small', 'hello small');
    timers.advance(10);
    await next(1);
    await next(2);
    expect(nlu.begun).toEqual(['Large:en', 'Small:en', 'Large:fr']);
    await trained(app.http, small);
    for (let n = 3; n <= 4; n++) await next(n);
    await nlu.finish(5);
    // French and German read the later changes in their turns; English is trained again for them
    expect(nlu.begun).toEqual(['Large:en', 'Small:en', 'Large:fr', 'Large:de', 'Large:en']);
    await trained(app.http, large);
  });

  it('trains first the assistant a message waits for, all its languages: the others have a model answering, or nobody waiting', async () => {
    const app = await start();
    const bots = [];
    for (const name of ['Busy', 'Other', 'Fresh']) {
      const { bot } = await accountWithBot(app.http, { languages: ['en', 'fr'] });
      const utterances = { en: [utterance(`hello ${name}`)], fr: [utterance(`bonjour ${name}`)] };
      await app.http.post('/v1/intents').set(dev(bot)).send({ name, utterances }).expect(200);
      timers.advance(10);
      bots.push(bot);
    }
    await waitFor(() => nlu.started === 1, { what: 'the first training to begin' });
    const waiting = jest.spyOn(Understanding.prototype, 'trained');
    const answer = app.http
      .post('/v1/Messages')
      .set(client(bots[2]!))
      .send({ userId: 'u', platform: 'web', text: 'bonjour Fresh', lang: 'fr' })
      .then((res) => res.body.intents?.[0]?.name as string | undefined);
    await waitFor(() => waiting.mock.calls.length === 1, { what: 'the message to wait for its model' });
    waiting.mockRestore();
    for (let n = 1; n <= 3; n++) await next(n);
    expect(nlu.begun).toEqual(['Busy:en', 'Fresh:en', 'Fresh:fr', 'Other:en']);
    expect(await answer).toBe('Fresh');
  });

  it('trains next the language a message waits for, when its first sentences came after its turn in a pass', async () => {
    const app = await start();
    const { bot } = await accountWithBot(app.http, { lang: 'fr', languages: ['fr', 'en', 'de'] });
    const both = { en: [utterance('hello')], de: [utterance('hallo')] };
    await app.http.post('/v1/intents').set(dev(bot)).send({ name: 'Multi', utterances: both }).expect(200);
    timers.advance(10);
    await waitFor(() => nlu.started === 1, { what: 'its first training to begin' });
    for (const name of ['Other', 'Later']) {
      const { bot: other } = await accountWithBot(app.http);
      await addIntent(app, other, name, `hello ${name}`);
      timers.advance(10);
    }
    await next(1);
    // French gets its first sentences once its turn in the pass is over, and a visitor writes in French
    const french = { fr: [utterance('bonjour')] };
    await app.http
      .post('/v1/intents')
      .set(dev(bot))
      .send({ name: 'Bonjour', utterances: french })
      .expect(200);
    const waiting = jest.spyOn(Understanding.prototype, 'trained');
    const answer = app.http
      .post('/v1/Messages')
      .set(client(bot))
      .send({ userId: 'u', platform: 'web', text: 'bonjour', lang: 'fr' })
      .then((res) => res.body.intents?.[0]?.name as string | undefined);
    await waitFor(() => waiting.mock.calls.length === 1, { what: 'the message to wait for its model' });
    waiting.mockRestore();
    for (let n = 2; n <= 3; n++) await next(n);
    expect(nlu.begun).toEqual(['Multi:en', 'Other:en', 'Multi:de', 'Bonjour:fr']);
    await nlu.finish(4);
    expect(await answer).toBe('Bonjour');
  });

  it('retrains what start found behind while developers keep editing: one of them in each round', async () => {
    const first = await startLegacyApp({ nlu: new ScriptedNlu() });
    started.push(first);
    const bots = [];
    for (const name of ['One', 'Two', 'Edited']) {
      const { bot } = await accountWithBot(first.http);
      await addIntent(first, bot, name, `hello ${name}`);
      await trained(first.http, bot);
      bots.push(bot);
    }
    await first.stop();
    const store = createEmbeddedStore({ dataDir: first.dataDir });
    await store
      .collection<ModelDoc>('legacy_models')
      .updateMany(
        { assistantId: { $in: [bots[0]!.id, bots[1]!.id] } },
        { $set: { trainingRevision: TRAINING_REVISION - 1 } },
      );
    await store.close();

    const app = await start(first.dataDir);
    const edited = bots[2]!;
    await waitFor(
      () => {
        timers.advance(10);
        return nlu.started === 1;
      },
      { what: 'the first retraining to begin' },
    );
    // a developer changes an assistant during every training
    for (let n = 1; n <= 4; n++) {
      await addIntent(app, edited, `Change${n}`, `change ${n}`);
      timers.advance(10);
      await next(n);
    }
    expect(nlu.begun).toEqual(['One:en', 'Edited:en', 'Two:en', 'Edited:en', 'Edited:en']);
  });

  it('goes on retraining what start found behind when the one due is deleted before its turn', async () => {
    const first = await startLegacyApp({ nlu: new ScriptedNlu() });
    started.push(first);
    const made = [];
    for (const name of ['Deleted', 'Kept']) {
      const { account, bot } = await accountWithBot(first.http);
      await addIntent(first, bot, name, `hello ${name}`);
      await trained(first.http, bot);
      made.push({ account, bot });
    }
    await first.stop();
    const store = createEmbeddedStore({ dataDir: first.dataDir });
    await store
      .collection<ModelDoc>('legacy_models')
      .updateMany({}, { $set: { trainingRevision: TRAINING_REVISION - 1 } });
    await store.close();

    const app = await start(first.dataDir);
    // the first of them is due (its debounce of 0 ms not yet over) when its developer deletes it
    const [deleted] = made;
    await app.http
      .delete(`/v2/bots/${deleted!.bot.id}`)
      .set('X-Legacy-Session-Token', deleted!.account.sessionToken)
      .expect(200);
    await waitFor(
      () => {
        timers.advance(10);
        return nlu.started === 1;
      },
      { what: 'the next one retrained' },
    );
    expect(nlu.begun).toEqual(['Kept:en']);
  });

  it('answers at once a message waiting for the first model of an assistant deleted before its turn', async () => {
    const app = await start();
    const { bot: busy } = await accountWithBot(app.http);
    await addIntent(app, busy, 'Busy', 'hello busy');
    timers.advance(10);
    await waitFor(() => nlu.started === 1, { what: 'the first training to begin' });
    const { account, bot: fresh } = await accountWithBot(app.http);
    await addIntent(app, fresh, 'Fresh', 'hello fresh');
    timers.advance(10);
    const waiting = jest.spyOn(Understanding.prototype, 'trained');
    let answered: number | undefined;
    const answer = app.http
      .post('/v1/Messages')
      .set(client(fresh))
      .send({ userId: 'u', platform: 'web', text: 'hello fresh' })
      .then((res) => {
        answered = res.status;
      });
    await waitFor(() => waiting.mock.calls.length === 1, { what: 'the message to wait for its model' });
    waiting.mockRestore();
    await app.http
      .delete(`/v2/bots/${fresh.id}`)
      .set('X-Legacy-Session-Token', account.sessionToken)
      .expect(200);
    // before the training ahead of it ends, not at LEGACY_FIRST_MODEL_WAIT_MS
    await waitFor(() => answered !== undefined, { what: 'the message answered' });
    await answer;
    expect(answered).toBe(200);
    expect(nlu.begun).toEqual(['Busy:en']);
  });
});

describe('legacy models: stored form (the real engine)', () => {
  it('stores the binary form as a file, loads it after a restart without retraining, and retrains what it cannot load', async () => {
    const app = await startLegacyApp();
    const { account, bot } = await accountWithBot(app.http);
    await addIntent(app, bot, 'Greet', 'hello there', 'good morning', 'hi friend');
    await addIntent(
      app,
      bot,
      'Weather',
      'will it rain today',
      'what is the weather like',
      'is it sunny outside',
    );
    await trained(app.http, bot);
    expect((await topIntent(app, bot, 'what about the weather')).name).toBe('Weather');
    const key = `${bot.id}:en`;
    const record = (await app.store.collection<ModelDoc>('legacy_models').findOne({ _id: key }))!;
    // chunks: 0 makes a version before blobs (after a rollback) retrain instead of answering without a model
    expect(record).toMatchObject({ hasModel: true, blob: `${key}:${record.fingerprint}`, chunks: 0 });
    // the stored form is a file beside the store's collections, not a document the store holds in memory
    const file = path.join(app.dataDir, 'legacy_models.blobs', record.blob!);
    expect(statSync(file).size).toBe(record.bytes);
    await app.stop();

    // after a restart: the stored model answers, nothing is retrained (trainedAt unchanged)
    const again = await startLegacyApp({ dataDir: app.dataDir });
    try {
      expect((await topIntent(again, bot, 'hello there my friend')).name).toBe('Greet');
      expect((await topIntent(again, bot, 'what about the weather')).name).toBe('Weather');
      const after = await again.store.collection<ModelDoc>('legacy_models').findOne({ _id: key });
      expect(after!.trainedAt).toEqual(record.trainedAt);
    } finally {
      await again.stop();
    }

    // a damaged stored model is retrained (same training set) and stored again
    writeFileSync(file, 'not a model');
    const repaired = await startLegacyApp({ dataDir: app.dataDir });
    try {
      expect((await topIntent(repaired, bot, 'what about the weather')).name).toBe('Weather');
      await waitFor(async () => readFileSync(file, 'utf8') !== 'not a model', {
        what: 'the damaged model retrained and stored',
      });
      const now = (await repaired.store.collection<ModelDoc>('legacy_models').findOne({ _id: key }))!;
      expect(statSync(file).size).toBe(now.bytes);
    } finally {
      await repaired.stop();
    }

    // a missing file (a data folder restored without it, say) is retrained and written again
    rmSync(file);
    const refilled = await startLegacyApp({ dataDir: app.dataDir });
    try {
      expect((await topIntent(refilled, bot, 'what about the weather')).name).toBe('Weather');
      await waitFor(async () => existsSync(file), { what: 'the missing model retrained and stored' });
    } finally {
      await refilled.stop();
    }

    // records an earlier version wrote: pieces of a collection and no blob, or pieces over a record of this version
    // after a rollback (its blob names another training set's model). Retrained at start, the pieces removed.
    const bytes = readFileSync(file);
    const store = createEmbeddedStore({ dataDir: app.dataDir });
    await store.collection<{ _id: string } & Record<string, unknown>>('legacy_model_chunks').insertOne({
      _id: `${key}:${record.fingerprint}:0`,
      assistantId: bot.id,
      modelKey: key,
      fingerprint: record.fingerprint,
      index: 0,
      data: bytes.toString('base64'),
    });
    await store
      .collection('legacy_models')
      .updateOne({ _id: key }, { $set: { format: 'binary', chunks: 1, blob: `${key}:an-older-set` } });
    await store.close();
    const stale = path.join(path.dirname(file), `${key}:an-older-set`);
    renameSync(file, stale);
    const upgraded = await startLegacyApp({ dataDir: app.dataDir });
    try {
      const models = upgraded.store.collection<ModelDoc>('legacy_models');
      // the blob it replaced is deleted once the record names the new one: wait for both
      await waitFor(
        async () => (await models.findOne({ _id: key }))?.blob === record.blob && !existsSync(stale),
        { what: 'the model of an earlier version retrained and stored as a blob, its old blob deleted' },
      );
      const retrained = await models.findOne({ _id: key });
      expect(retrained).toMatchObject({ blob: record.blob, bytes: statSync(file).size, chunks: 0 });
      expect(await upgraded.store.collection('legacy_model_chunks').count({})).toBe(0);
      const now = await upgraded.store
        .collection<Record<string, unknown> & { _id: string }>('legacy_models')
        .findOne({ _id: key });
      expect(now).not.toHaveProperty('format');
      expect((await topIntent(upgraded, bot, 'what about the weather')).name).toBe('Weather');
    } finally {
      await upgraded.stop();
    }

    // blobs no record names (a process stopped between writing a model and naming it, or between naming the new one
    // and deleting the old one) are removed at start once they are older than the grace a writer may still need
    const folder = path.dirname(file);
    const orphan = path.join(folder, `${key}:left-by-a-crash`);
    const fresh = path.join(folder, `${key}:being-named-by-another-instance`);
    writeFileSync(orphan, 'an orphan');
    writeFileSync(fresh, 'a fresh blob');
    // (the service's clock: a test's manual clock here, which each start sets to the same time)
    const old = new Date(app.clock.now().getTime() - ORPHAN_BLOB_GRACE_MS - 60_000);
    utimesSync(orphan, old, old);
    const swept = await startLegacyApp({ dataDir: app.dataDir });
    try {
      expect(existsSync(orphan)).toBe(false);
      expect(existsSync(fresh)).toBe(true);
      expect(existsSync(file)).toBe(true);
      expect((await topIntent(swept, bot, 'what about the weather')).name).toBe('Weather');
    } finally {
      await swept.stop();
    }
    rmSync(fresh);

    // removing the assistant removes its model's file
    const last = await startLegacyApp({ dataDir: app.dataDir });
    try {
      await last.http
        .delete(`/v2/bots/${bot.id}`)
        .set('X-Legacy-Session-Token', account.sessionToken)
        .expect(200);
      expect(existsSync(file)).toBe(false);
    } finally {
      await last.close();
    }
  }, 60_000);
});
