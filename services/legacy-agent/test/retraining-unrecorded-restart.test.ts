import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import { accountWithBot, type Bot, client, dev, trained, utterance } from './support/fixtures';
import { interceptedStore, storeUnavailable } from './support/intercepted-store';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';
import { ScriptedNlu } from './support/scripted-nlu';

/** these tests ask the same question until the new model answers it */
const env = { LEGACY_MESSAGES_PER_USER: '0', LEGACY_MESSAGES_PER_ADDRESS: '0' };

const intent = (name: string, sentence: string) => ({
  name,
  utterances: { en: [utterance(sentence)] },
  conditionalResponses: { en: { default: { default: [{ type: 'text', text: [`${name} answer`] }] } } },
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

describe('legacy models: a change whose record for training was still waiting when its instance stopped', () => {
  let folder: ReturnType<typeof tempDir>;
  let store: Store;
  let clock: ManualClock;
  const apps: LegacyTestApp[] = [];

  beforeEach(() => {
    folder = tempDir('legacy-unrecorded-');
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
  const start = async (over: Store) => {
    const app = await startLegacyApp({ nlu: new ScriptedNlu(), store: over, clock, env });
    apps.push(app);
    return app;
  };

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
      if (state.failing && collection === 'legacy_models' && method === 'updateOne') throw storeUnavailable();
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
});
