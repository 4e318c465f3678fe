import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import { accountWithBot, type Bot, client, dev, say, trained, utterance } from './support/fixtures';
import { interceptedStore, storeUnavailable } from './support/intercepted-store';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';
import { ScriptedNlu } from './support/scripted-nlu';
import { travelEntities, travelIntents } from './support/travel-assistant';

/** these tests ask the same question until the new model answers it */
const env = { LEGACY_MESSAGES_PER_USER: '0', LEGACY_MESSAGES_PER_ADDRESS: '0' };

const reply = (lang: string, text: string) => ({ [lang]: { default: { default: [say(text)] } } });

const intent = (name: string, sentence: string) => ({
  name,
  utterances: { en: [utterance(sentence)] },
  conditionalResponses: reply('en', `${name} answer`),
});

/** `store` refusing, while `state.failing`, the step that records a change for training (the revision bump). */
function storeFailingRecords(store: Store) {
  const state = { failing: false, refused: 0 };
  const faulty = interceptedStore(store, (collection, method, call, args) => {
    const bump = (args[1] as { $inc?: Record<string, number> } | undefined)?.$inc?.dataRevision !== undefined;
    if (!state.failing || collection !== 'legacy_assistants' || method !== 'findOneAndUpdate' || !bump)
      return call();
    state.refused++;
    throw storeUnavailable();
  });
  return { store: faulty, state };
}

/**
 * `store` noting what a starting instance's training turns do: the model records they read (an assistant's, then each
 * of its languages' when it has learnt something), how many reads of an assistant's entities (a training turn's) run
 * at once at most, and every write of a model record or of an assistant's revision.
 */
function storeWatchingTurns(store: Store) {
  const seen = {
    recordsRead: new Set<string>(),
    modelsRead: new Set<string>(),
    entityReads: 0,
    mostEntityReads: 0,
    writes: [] as string[],
  };
  const watched = interceptedStore(store, async (collection, method, call, args) => {
    if (collection === 'legacy_entities' && method === 'find') {
      seen.entityReads++;
      seen.mostEntityReads = Math.max(seen.mostEntityReads, seen.entityReads);
      try {
        return await call();
      } finally {
        seen.entityReads--;
      }
    }
    const bump = (args[1] as { $inc?: Record<string, number> } | undefined)?.$inc?.dataRevision !== undefined;
    if ((collection === 'legacy_models' && method !== 'find' && method !== 'findOne') || bump)
      seen.writes.push(`${collection}.${method}`);
    const result = await call();
    // noted once read: a training the turn would start begins before the next timer (no await in between)
    if (collection === 'legacy_models' && method === 'findOne')
      seen.modelsRead.add((args[0] as { _id: string })._id);
    if (collection === 'legacy_models' && method === 'find')
      seen.recordsRead.add((args[0] as { assistantId?: string }).assistantId ?? '');
    return result;
  });
  return { store: watched, seen };
}

const modelKeys = (bots: Bot[]) => bots.flatMap((bot) => bot.languages.map((lang) => `${bot.id}:${lang}`));

const status = async (app: LegacyTestApp, bot: Bot) =>
  (await app.http.get('/v1/bots').set(dev(bot)).expect(200)).body.training as {
    upToDate: boolean;
    revision: number;
  };

const topIntent = async (app: LegacyTestApp, bot: Bot, text: string) =>
  (
    await app.http
      .post('/v1/Messages')
      .set(client(bot))
      .send({ userId: 'u', platform: 'web', text })
      .expect(200)
  ).body.intents[0].name as string;

/** Until `app` answers `text` with intent `name`. */
const answered = (app: LegacyTestApp, bot: Bot, text: string, name: string) =>
  waitFor(async () => (await topIntent(app, bot, text)) === name, {
    timeoutMs: 20_000,
    intervalMs: 50,
    what: `${name} answering`,
  });

/** A start checks each assistant's models against its intents and entities, and learns what a model missed. */
describe('legacy models: the start check', () => {
  let folder: ReturnType<typeof tempDir>;
  let store: Store;
  let clock: ManualClock;
  const apps: LegacyTestApp[] = [];

  beforeEach(() => {
    folder = tempDir('legacy-start-check-');
    clock = new ManualClock('2026-11-23T10:00:00Z');
    // the apps' clock: on the real one, the store's TTL sweep (each minute) removed what the apps wrote by the test's
    // clock, a session once the real date passed its 30 days
    store = createEmbeddedStore({ dataDir: folder.dir, now: () => clock.now().getTime() });
  });
  afterEach(async () => {
    for (const app of apps.splice(0).reverse()) await app.stop();
    await store.close();
    folder.remove();
  });
  const start = async (over: Store, nlu = new ScriptedNlu()) => {
    const app = await startLegacyApp({ nlu, store: over, clock, env });
    apps.push(app);
    return app;
  };

  describe('of a change whose record for training was still waiting when its instance stopped', () => {
    /** An assistant trained on Greet, then given Weather on `app` while the store refuses to record it; `app` stops. */
    async function changeLostWith(app: LegacyTestApp, faults: ReturnType<typeof storeFailingRecords>) {
      const { bot } = await accountWithBot(app.http);
      await app.http.post('/v1/intents').set(dev(bot)).send(intent('Greet', 'hello there')).expect(200);
      await trained(app.http, bot);
      faults.state.failing = true;
      await app.http.post('/v1/intents').set(dev(bot)).send(intent('Weather', 'weather today')).expect(200);
      expect(faults.state.refused).toBeGreaterThan(0);
      expect((await app.http.get('/v1/bots').set(dev(bot))).body.training.upToDate).toBe(false);
      // stopped before the store came back: the record it was trying again is lost with it
      await app.stop();
      faults.state.failing = false;
      return bot;
    }

    it('is learnt when the service starts again on the same data', async () => {
      const faults = storeFailingRecords(store);
      const bot = await changeLostWith(await start(faults.store), faults);

      const restarted = await start(store);
      await answered(restarted, bot, 'weather today', 'Weather');
      const training = (await restarted.http.get('/v1/bots').set(dev(bot))).body.training;
      expect(training).toMatchObject({ upToDate: true, error: null });
    });

    it("is learnt when the service starts again, when it was the assistant's first change", async () => {
      const faults = storeFailingRecords(store);
      const app = await start(faults.store);
      const { bot } = await accountWithBot(app.http);
      faults.state.failing = true;
      await app.http.post('/v1/intents').set(dev(bot)).send(intent('Weather', 'weather today')).expect(200);
      expect(faults.state.refused).toBeGreaterThan(0);
      await app.stop();
      faults.state.failing = false;

      const restarted = await start(store);
      await answered(restarted, bot, 'weather today', 'Weather');
      const training = (await restarted.http.get('/v1/bots').set(dev(bot))).body.training;
      expect(training).toMatchObject({ upToDate: true, error: null, revision: 1 });
    });

    it('is learnt at the next start when the model trained on it could not be recorded', async () => {
      const state = { failing: false };
      const faulty = interceptedStore(store, (collection, method, call) => {
        if (state.failing && collection === 'legacy_models' && method === 'updateOne')
          throw storeUnavailable();
        return call();
      });
      const app = await start(faulty);
      const { bot } = await accountWithBot(app.http);
      await app.http.post('/v1/intents').set(dev(bot)).send(intent('Greet', 'hello there')).expect(200);
      await trained(app.http, bot);
      state.failing = true;
      await app.http.post('/v1/intents').set(dev(bot)).send(intent('Weather', 'weather today')).expect(200);
      await waitFor(
        async () => /store/.test((await app.http.get('/v1/bots').set(dev(bot))).body.training.error ?? ''),
        { timeoutMs: 20_000, what: 'the model record refused' },
      );
      await app.stop();
      state.failing = false;

      const restarted = await start(store);
      await answered(restarted, bot, 'weather today', 'Weather');
      expect((await restarted.http.get('/v1/bots').set(dev(bot))).body.training.upToDate).toBe(true);
    });

    it('is learnt by an instance that was running all along once another instance starts', async () => {
      const faults = storeFailingRecords(store);
      const running = await start(store);
      const lost = await start(faults.store);
      const bot = await changeLostWith(lost, faults);
      // the running instance holds the model that never learnt Weather
      expect(await topIntent(running, bot, 'weather today')).not.toBe('Weather');

      await start(store);
      await answered(running, bot, 'weather today', 'Weather');
      expect((await running.http.get('/v1/bots').set(dev(bot))).body.training.upToDate).toBe(true);
    });

    it('is recorded once, and learnt, by two instances starting at once', async () => {
      const faults = storeFailingRecords(store);
      const first = await start(faults.store);
      const { bot } = await accountWithBot(first.http);
      await first.http.post('/v1/intents').set(dev(bot)).send(intent('Greet', 'hello there')).expect(200);
      await trained(first.http, bot);
      const lost = (await status(first, bot)).revision;
      faults.state.failing = true;
      await first.http.post('/v1/intents').set(dev(bot)).send(intent('Weather', 'weather today')).expect(200);
      await first.stop();
      faults.state.failing = false;

      const [a, b] = await Promise.all([start(store), start(store)]);
      for (const app of [a!, b!]) await answered(app, bot, 'weather today', 'Weather');
      await trained(a!.http, bot);
      // one record for the one change lost, whichever instance found it first
      expect((await status(a!, bot)).revision).toBe(lost + 1);
    });
  });

  describe('of assistants whose models are current', () => {
    /** Until the starting instance's turns have read the model records of `bots`, and of each language of `learning`. */
    const checked = (seen: ReturnType<typeof storeWatchingTurns>['seen'], bots: Bot[], learning = bots) =>
      waitFor(
        () =>
          bots.every((bot) => seen.recordsRead.has(bot.id)) &&
          modelKeys(learning).every((key) => seen.modelsRead.has(key)),
        {
          timeoutMs: 60_000,
          intervalMs: 20,
          what: 'the start check of every assistant',
        },
      );

    it('trains and records nothing when nothing was lost, in every language, with or without sentences or changes', async () => {
      const first = await start(store);
      // entities with synonyms and slots, a welcome and a fallback without sentences
      const { bot: travel } = await accountWithBot(first.http);
      for (const entity of travelEntities)
        await first.http.post('/v1/entities').set(dev(travel)).send(entity).expect(200);
      for (const intent of Object.values(travelIntents))
        await first.http.post('/v1/intents').set(dev(travel)).send(intent).expect(200);
      // three languages: two with sentences, one with an entity's values only (no model)
      const { bot: polyglot } = await accountWithBot(first.http, {
        lang: 'en',
        languages: ['en', 'fr', 'de'],
      });
      await first.http
        .post('/v1/entities')
        .set(dev(polyglot))
        .send({
          name: 'Colour',
          automaticallyExtensible: { de: false },
          useSynonyms: { de: true },
          data: { de: [{ value: 'rot', synonyms: ['rötlich'] }] },
        })
        .expect(200);
      await first.http
        .post('/v1/intents')
        .set(dev(polyglot))
        .send({
          name: 'Greet',
          utterances: { en: [utterance('hello there')], fr: [utterance('bonjour à vous')] },
          conditionalResponses: { ...reply('en', 'Hi'), ...reply('fr', 'Salut') },
        })
        .expect(200);
      // only an event: no language has sentences
      const { bot: events } = await accountWithBot(first.http);
      await first.http
        .post('/v1/intents')
        .set(dev(events))
        .send({ name: 'Hello', events: ['HELLO'], conditionalResponses: reply('en', 'Hello') })
        .expect(200);
      // never changed
      const { bot: empty } = await accountWithBot(first.http);
      const learning = [travel, polyglot, events];
      const bots = [...learning, empty];
      for (const bot of bots) await trained(first.http, bot);
      const before = await Promise.all(bots.map((bot) => status(first, bot)));
      await first.stop();

      const nlu = new ScriptedNlu();
      const watching = storeWatchingTurns(store);
      const restarted = await start(watching.store, nlu);
      await checked(watching.seen, bots, learning);

      expect({ trainings: nlu.started + nlu.trainings.length, writes: watching.seen.writes }).toEqual({
        trainings: 0,
        writes: [],
      });
      expect(await Promise.all(bots.map((bot) => status(restarted, bot)))).toEqual(
        before.map((training) => expect.objectContaining({ upToDate: true, revision: training.revision })),
      );
    });

    it('reads one assistant at a time, trains none of 100 with nothing lost, and answers meanwhile', async () => {
      const first = await start(store);
      const bots: Bot[] = [];
      const { account } = await accountWithBot(first.http);
      for (let n = 0; n < 100; n++) {
        const created = await first.http
          .post('/v2/bots')
          .set('X-Legacy-Session-Token', account.sessionToken)
          .send({ name: `Helper ${n}`, lang: 'en' })
          .expect(200);
        const bot = created.body as Bot;
        for (const [name, text] of [
          ['Greet', 'hello there'],
          ['Weather', 'weather today'],
          ['Order', 'i would like to order'],
        ])
          await first.http
            .post('/v1/intents')
            .set(dev(bot))
            .send({
              name,
              utterances: { en: [utterance(`${text} ${n}`)] },
              conditionalResponses: reply('en', name),
            })
            .expect(200);
        bots.push(bot);
      }
      for (const bot of bots) await trained(first.http, bot, 60_000);
      await first.stop();

      const nlu = new ScriptedNlu();
      const watching = storeWatchingTurns(store);
      const restarted = await start(watching.store, nlu);
      // a message of the last assistant, sent as the start check begins
      const last = bots[bots.length - 1]!;
      expect(await topIntent(restarted, last, 'weather today 99')).toBe('Weather');
      await checked(watching.seen, bots);

      expect(watching.seen.mostEntityReads).toBe(1);
      expect({ trainings: nlu.started + nlu.trainings.length, writes: watching.seen.writes }).toEqual({
        trainings: 0,
        writes: [],
      });
    }, 300_000);
  });
});
