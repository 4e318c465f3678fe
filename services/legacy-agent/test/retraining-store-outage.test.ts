import { ManualClock, Unavailable } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import { RETRY_FIRST_MS, RETRY_MAX_MS } from '../src/domain/retraining';
import { accountWithBot, type Bot, client, dev, utterance } from './support/fixtures';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';
import { ManualTimers } from './support/manual-timers';
import { ScriptedNlu } from './support/scripted-nlu';

/** Which store operations fail (a MongoDB blip: the call is refused, as the store refuses it, the data untouched). */
type Fault = (collection: string, method: string, args: unknown[]) => boolean;

/**
 * The embedded store, with its collections' operations refused while `state.fault` says so; `state.refused` counts
 * the refusals by collection.
 */
function storeWithFaults(dataDir: string, clock: ManualClock) {
  const real = createEmbeddedStore({ dataDir, now: () => clock.now().getTime() });
  const state: { fault: Fault | null; refused: Map<string, number> } = { fault: null, refused: new Map() };
  const store = new Proxy(real, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop !== 'collection') return typeof value === 'function' ? value.bind(target) : value;
      return (name: string, indexes?: unknown) => {
        const collection = target.collection(name, indexes as never);
        return new Proxy(collection, {
          get(c, method) {
            const fn = Reflect.get(c, method, c);
            if (typeof fn !== 'function') return fn;
            return (...args: unknown[]) => {
              if (state.fault?.(name, String(method), args)) {
                state.refused.set(name, (state.refused.get(name) ?? 0) + 1);
                return Promise.reject(
                  new Unavailable('The service cannot reach its data right now; try again shortly', {
                    error: 'StoreUnavailable',
                  }),
                );
              }
              return fn.apply(c, args);
            };
          },
        });
      };
    },
  }) as Store;
  return { store, state };
}

/** The step that records a change for training: the assistant's revision bumped. */
const revisionBump: Fault = (collection, method, args) =>
  collection === 'legacy_assistants' &&
  method === 'findOneAndUpdate' &&
  (args[1] as { $inc?: Record<string, number> }).$inc?.dataRevision !== undefined;
/** A read of an assistant (the training's first step, and every request's credential). */
const assistantReads: Fault = (collection, method) =>
  collection === 'legacy_assistants' && method === 'findOne';
/** The write that points a model's record at the model just trained and stored. */
const modelRecordWrites: Fault = (collection, method) =>
  collection === 'legacy_models' && method === 'updateOne';
/** Every operation of the service's own collections: the store is away. */
const everything: Fault = (collection) => collection.startsWith('legacy_');

const intent = (name: string, ...sentences: string[]) => ({
  name,
  utterances: { en: sentences.map(utterance) },
  conditionalResponses: { en: { default: { default: [{ type: 'text', text: [`${name} answer`] }] } } },
});

describe('legacy models: a change made while the store fails is learnt once it is back', () => {
  const clock = new ManualClock('2026-11-23T10:00:00Z');
  let folder: ReturnType<typeof tempDir>;
  let faults: ReturnType<typeof storeWithFaults>;
  let nlu: ScriptedNlu;
  let timers: ManualTimers;
  let app: LegacyTestApp;
  let bot: Bot;

  beforeEach(async () => {
    folder = tempDir('legacy-outage-');
    faults = storeWithFaults(folder.dir, clock);
    nlu = new ScriptedNlu();
    timers = new ManualTimers();
    app = await startLegacyApp({
      clock,
      store: faults.store,
      nlu,
      timers,
      env: {
        LEGACY_RETRAIN_DEBOUNCE_MS: '10',
        LEGACY_RETRAIN_MAX_DELAY_MS: '200',
        // the tests ask the same question until the new model answers it
        LEGACY_MESSAGES_PER_USER: '0',
        LEGACY_MESSAGES_PER_ADDRESS: '0',
      },
    });
    ({ bot } = await accountWithBot(app.http));
    await addIntent('Greet', 'hello there');
    await learnt();
  });
  afterEach(async () => {
    faults.state.fault = null;
    await app.stop();
    await faults.store.close();
    folder.remove();
  });

  const addIntent = (name: string, ...sentences: string[]) =>
    app.http
      .post('/v1/intents')
      .set(dev(bot))
      .send(intent(name, ...sentences));
  const training = async () => (await app.http.get('/v1/bots').set(dev(bot)).expect(200)).body.training;
  /** Moves the service's timers on until the assistant's models learnt its intents and entities. */
  const learnt = () =>
    waitFor(
      async () => {
        timers.advance(RETRY_FIRST_MS);
        return (await training()).upToDate === true;
      },
      { timeoutMs: 20_000, intervalMs: 20, what: 'the assistant learns its intents' },
    );
  const topIntent = async (text: string) =>
    (
      await app.http
        .post('/v1/Messages')
        .set(client(bot))
        .send({ userId: 'u', platform: 'web', text })
        .expect(200)
    ).body.intents[0].name as string;
  /**
   * Until `text` gets intent `name`: the model record that says a training is over is written a moment before this
   * instance answers with its model.
   */
  const answered = (text: string, name: string) =>
    waitFor(async () => (await topIntent(text)) === name, { timeoutMs: 10_000, what: `${name} answering` });
  /** Until the service has armed a timer again (a retry's check under way arms the next one when it ends). */
  const settled = () => waitFor(() => timers.pending > 0, { timeoutMs: 10_000, what: 'a retry armed' });

  it('keeps a change whose recording for training failed, says so, and learns it once the store is back', async () => {
    faults.state.fault = revisionBump;
    // the intent is stored: the developer is told so, not asked to send it again
    await addIntent('Weather', 'weather today').expect(200);
    expect(faults.state.refused.get('legacy_assistants')).toBe(1);
    const waiting = await training();
    expect(waiting.upToDate).toBe(false);
    expect(waiting.error).toMatch(/store/);
    expect(await topIntent('weather today')).not.toBe('Weather'); // the previous model answers meanwhile

    faults.state.fault = null;
    await learnt();
    await answered('weather today', 'Weather');
    expect((await training()).error).toBeNull();
  });

  it('retrains once the store is back when the training could not read the assistant, and says why it waits', async () => {
    await addIntent('Weather', 'weather today').expect(200);
    faults.state.fault = assistantReads;
    timers.advance(10); // the debounce is over: the training's first read fails
    await waitFor(() => (faults.state.refused.get('legacy_assistants') ?? 0) > 0, {
      what: 'the failed read',
    });
    await settled();
    faults.state.fault = null;
    const waiting = await training();
    expect(waiting.upToDate).toBe(false);
    expect(waiting.error).toMatch(/store/);

    await learnt();
    await answered('weather today', 'Weather');
    expect(nlu.started).toBe(2);
  });

  it('answers a message waiting for a first model once the store is back, without waiting out the back-off', async () => {
    const { bot: fresh } = await accountWithBot(app.http);
    await app.http.post('/v1/intents').set(dev(fresh)).send(intent('Weather', 'weather today')).expect(200);
    faults.state.fault = assistantReads;
    timers.advance(10);
    await waitFor(() => (faults.state.refused.get('legacy_assistants') ?? 0) > 0, {
      what: 'the failed read',
    });
    await settled();
    faults.state.fault = null;
    let answer: string | undefined;
    const reply = app.http
      .post('/v1/Messages')
      .set(client(fresh))
      .send({ userId: 'u', platform: 'web', text: 'weather today' })
      .expect(200)
      .then((res) => {
        answer = res.body.intents[0].name;
      });
    // time stands still short of the next try: only what is due now runs
    await waitFor(
      () => {
        timers.advance(0);
        return answer !== undefined;
      },
      { timeoutMs: 20_000, intervalMs: 20, what: 'the answer' },
    );
    await reply;
    expect(answer).toBe('Weather');
  });

  it('trains again once the store is back when the trained model could not be stored', async () => {
    await addIntent('Weather', 'weather today').expect(200);
    faults.state.fault = modelRecordWrites;
    timers.advance(10);
    await waitFor(() => (faults.state.refused.get('legacy_models') ?? 0) > 0, { what: 'the failed write' });
    await settled();
    faults.state.fault = null;
    const waiting = await training();
    expect(waiting.upToDate).toBe(false);
    expect(waiting.error).toMatch(/store/);
    expect(await topIntent('weather today')).not.toBe('Weather');

    await learnt();
    await answered('weather today', 'Weather');
    expect(nlu.started).toBe(3); // Greet's, the one whose model was lost, and the one that learnt it
  });

  /** The two steps a store outage stops: recording the change (the store fails as it is made), or training it. */
  const outages: Array<[string, () => Promise<void>]> = [
    [
      'the record of a change',
      async () => {
        faults.state.fault = revisionBump;
        await addIntent('Weather', 'weather today').expect(200);
        faults.state.fault = everything;
      },
    ],
    [
      "the training's reads",
      async () => {
        await addIntent('Weather', 'weather today').expect(200);
        faults.state.fault = everything;
        timers.advance(10); // the debounce is over
      },
    ],
  ];

  it.each(outages)(
    'tries %s again with back-off through a long outage, training nothing until the store is back',
    async (_step, outage) => {
      await outage();
      await settled();
      const outageMs = 30 * 60_000;
      for (let elapsed = 0; elapsed < outageMs; elapsed += RETRY_FIRST_MS) {
        timers.advance(RETRY_FIRST_MS);
        await settled();
      }
      // one try per wait at most: waits doubling from the first to the longest, then one per longest wait
      const tries = faults.state.refused.get('legacy_assistants') ?? 0;
      expect(tries).toBeGreaterThan(1);
      expect(tries).toBeLessThanOrEqual(
        2 + Math.log2(RETRY_MAX_MS / RETRY_FIRST_MS) + outageMs / RETRY_MAX_MS,
      );
      expect(nlu.started).toBe(1); // Greet's, before the outage

      faults.state.fault = null;
      await learnt();
      expect(nlu.started).toBe(2);
      await answered('weather today', 'Weather');
    },
  );

  it('trains at most once per longest wait through a long outage that fails only the writes of models', async () => {
    const { bot: fresh } = await accountWithBot(app.http);
    await app.http.post('/v1/intents').set(dev(fresh)).send(intent('Weather', 'weather today')).expect(200);
    faults.state.fault = modelRecordWrites;
    timers.advance(10);
    await settled();
    const outageMs = 30 * 60_000;
    for (let elapsed = 0; elapsed < outageMs; elapsed += RETRY_FIRST_MS) {
      timers.advance(RETRY_FIRST_MS);
      await settled();
      // a message waiting for the assistant's first model starts no training of its own
      if (elapsed % 60_000 === 0)
        await app.http
          .post('/v1/Messages')
          .set(client(fresh))
          .send({ userId: 'u', platform: 'web', text: 'weather today' })
          .expect(200);
    }
    const trainings = nlu.started - 1; // Greet's came before
    expect(trainings).toBeGreaterThan(1);
    expect(trainings).toBeLessThanOrEqual(
      2 + Math.log2(RETRY_MAX_MS / RETRY_FIRST_MS) + outageMs / RETRY_MAX_MS,
    );
  });

  it.each(outages)('stops trying %s again when the service stops', async (_step, outage) => {
    await outage();
    await settled();
    await app.service.stop();
    expect(timers.pending).toBe(0);
    const refused = new Map(faults.state.refused);
    timers.advance(60 * 60_000);
    expect(faults.state.refused).toEqual(refused);
  });
});
