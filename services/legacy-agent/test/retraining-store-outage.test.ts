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
 * How a faulty operation fails: `refused` (503, nothing done), `reply lost` (done, then 503: a MongoDB connection cut
 * after the server applied a write), `disk full` (the file system's ENOSPC, as the embedded store's blob write meets it).
 */
type Failure = 'refused' | 'reply lost' | 'disk full';

const unavailable = () =>
  new Unavailable('The service cannot reach its data right now; try again shortly', {
    error: 'StoreUnavailable',
  });
const diskFull = () =>
  Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28 });

/**
 * The embedded store, with its collections' and blob buckets' operations failing as `state.failure` says while
 * `state.fault` names them (a bucket's name is `blobs:<bucket>`); `state.refused` counts the failures by name (as they begin).
 */
function storeWithFaults(dataDir: string, clock: ManualClock) {
  const real = createEmbeddedStore({ dataDir, now: () => clock.now().getTime() });
  const state: {
    fault: Fault | null;
    failure: Failure;
    refused: Map<string, number>;
    /** while set, a failing operation waits for it before it fails (a call under way) */
    held: Promise<void> | null;
  } = { fault: null, failure: 'refused', refused: new Map(), held: null };
  const faulty = <T extends object>(name: string, target: T): T =>
    new Proxy(target, {
      get(c, method) {
        const fn = Reflect.get(c, method, c);
        if (typeof fn !== 'function') return fn;
        return async (...args: unknown[]) => {
          if (!state.fault?.(name, String(method), args)) return fn.apply(c, args);
          state.refused.set(name, (state.refused.get(name) ?? 0) + 1);
          await state.held;
          if (state.failure === 'disk full') throw diskFull();
          if (state.failure === 'reply lost') await fn.apply(c, args);
          throw unavailable();
        };
      },
    });
  const store = new Proxy(real, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop === 'collection')
        return (name: string, indexes?: unknown) => faulty(name, target.collection(name, indexes as never));
      if (prop === 'blobs') return (bucket: string) => faulty(`blobs:${bucket}`, target.blobs(bucket));
      return typeof value === 'function' ? value.bind(target) : value;
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
/** The step after an intent's or entity's deletion (or a creation that failed) that gives its place back. */
const placeReleases: Fault = (collection, method, args) => {
  if (collection !== 'legacy_assistants' || method !== 'updateOne') return false;
  const inc = (args[1] as { $inc?: Record<string, number> }).$inc;
  return inc?.intentCount !== undefined || inc?.entityCount !== undefined;
};
/** Every operation of the service's own collections: the store is away. */
const everything: Fault = (collection) => collection.startsWith('legacy_');

const entity = (name: string, ...values: string[]) => ({
  name,
  automaticallyExtensible: { en: false },
  useSynonyms: { en: false },
  data: { en: values.map((value) => ({ value, synonyms: [] })) },
});
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
  let sessionToken: string;

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
    const made = await accountWithBot(app.http);
    bot = made.bot;
    sessionToken = made.account.sessionToken;
    await addIntent('Greet', 'hello there');
    await learnt();
  });
  afterEach(async () => {
    faults.state.fault = null;
    faults.state.failure = 'refused';
    faults.state.held = null;
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
  /** Until `text` gets intent `name`. */
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

  it('answers a message waiting for a first model while the store fails the training, starting one turn at most', async () => {
    const { bot: fresh } = await accountWithBot(app.http);
    await app.http.post('/v1/intents').set(dev(fresh)).send(intent('Weather', 'weather today')).expect(200);
    const intentReads: Fault = (collection, method) => collection === 'legacy_intents' && method === 'find';
    faults.state.fault = intentReads;
    timers.advance(10);
    await waitFor(() => (faults.state.refused.get('legacy_intents') ?? 0) > 0, { what: 'the failed read' });
    await settled();
    const refused = faults.state.refused.get('legacy_intents');
    // the answer reads the intents too: it is the store's error, at once, after one turn at most
    const res = await app.http
      .post('/v1/Messages')
      .set(client(fresh))
      .send({ userId: 'u', platform: 'web', text: 'weather today' })
      .expect(503);
    expect(res.body.status).toMatchObject({ code: 503, errorType: 'unavailable' });
    expect(faults.state.refused.get('legacy_intents')).toBeLessThanOrEqual((refused ?? 0) + 2);
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

  it("tries each of many assistants' records at most once per wait through a long outage, and learns them all after", async () => {
    const { account } = await accountWithBot(app.http);
    const bots: Bot[] = [];
    for (let i = 0; i < 200; i++)
      bots.push(
        (
          await app.http
            .post('/v2/bots')
            .set('X-Legacy-Session-Token', account.sessionToken)
            .send({ name: `Helper ${i}`, lang: 'en', description: 'helps' })
            .expect(200)
        ).body,
      );
    const tries = new Map<string, number>();
    faults.state.fault = (collection, method, args) => {
      if (!revisionBump(collection, method, args)) return false;
      const id = (args[0] as { _id: string })._id;
      tries.set(id, (tries.get(id) ?? 0) + 1);
      return true;
    };
    for (const [i, b] of bots.entries())
      await app.http
        .post('/v1/intents')
        .set(dev(b))
        .send(intent(`Ask${i}`, `question ${i}`))
        .expect(200);
    const outageMs = 30 * 60_000;
    for (let elapsed = 0; elapsed < outageMs; elapsed += RETRY_FIRST_MS) {
      timers.advance(RETRY_FIRST_MS);
      await settled();
    }
    expect(tries.size).toBe(bots.length);
    const most = Math.max(...tries.values());
    expect(most).toBeLessThanOrEqual(2 + Math.log2(RETRY_MAX_MS / RETRY_FIRST_MS) + outageMs / RETRY_MAX_MS);

    faults.state.fault = null;
    const trainings = nlu.started;
    await waitFor(
      async () => {
        timers.advance(RETRY_FIRST_MS);
        return nlu.started - trainings === bots.length;
      },
      { timeoutMs: 60_000, intervalMs: 20, what: 'every assistant trained' },
    );
  });

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

  it.each(outages)('stops trying %s again when the assistant is removed', async (_step, outage) => {
    await outage();
    await settled();
    faults.state.fault = null;
    await app.http.delete(`/v2/bots/${bot.id}`).set('X-Legacy-Session-Token', sessionToken).expect(200);
    expect(timers.pending).toBe(0);
    const reads = nlu.started;
    timers.advance(60 * 60_000);
    expect(timers.pending).toBe(0);
    expect(nlu.started).toBe(reads);
  });

  it.each(outages)('stops trying %s again when the service stops during a try', async (_step, outage) => {
    await outage();
    await settled();
    let release: () => void = () => undefined;
    faults.state.held = new Promise((resolve) => {
      release = resolve;
    });
    const before = faults.state.refused.get('legacy_assistants') ?? 0;
    timers.advance(RETRY_MAX_MS);
    await waitFor(() => (faults.state.refused.get('legacy_assistants') ?? 0) > before, {
      what: 'a try under way',
    });
    const stopped = app.service.stop();
    release();
    await stopped;
    // the try's failure, which arms the next when the service runs, comes after the stop
    await waitFor(() => timers.pending === 0, { what: 'no try armed' });
    const refused = new Map(faults.state.refused);
    timers.advance(60 * 60_000);
    expect(faults.state.refused).toEqual(refused);
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
  /** The last training's intents and entities, by name. */
  const lastTrained = () => {
    const set = nlu.trainings.at(-1)!;
    return { intents: set.intents.map((i) => i.name), entities: set.entities.map((e) => e.name) };
  };

  /**
   * Changes stored though their request failed after the write (503): a retry of the request does not make them
   * again (404, 409), so they are recorded for training all the same.
   */
  const storedThoughFailed: Array<
    [string, () => Promise<void>, (trained: ReturnType<typeof lastTrained>) => void]
  > = [
    [
      'an intent deleted whose place could not be given back',
      async () => {
        const { id } = (await addIntent('Weather', 'weather today').expect(200)).body;
        await learnt();
        faults.state.fault = placeReleases;
        await app.http.delete(`/v1/intents/${id}`).set(dev(bot)).expect(503);
        faults.state.fault = null;
        await app.http.delete(`/v1/intents/${id}`).set(dev(bot)).expect(404);
      },
      (trained) => expect(trained.intents).toEqual(['Greet']),
    ],
    [
      "an intent created whose write's reply was lost",
      async () => {
        faults.state.fault = (collection, method) =>
          collection === 'legacy_intents' && method === 'insertOne';
        faults.state.failure = 'reply lost';
        await addIntent('Weather', 'weather today').expect(503);
        faults.state.fault = null;
        await addIntent('Weather', 'weather today').expect(409);
      },
      (trained) => expect(trained.intents).toEqual(['Greet', 'Weather']),
    ],
    [
      "an entity created whose write's reply was lost",
      async () => {
        faults.state.fault = (collection, method) =>
          collection === 'legacy_entities' && method === 'insertOne';
        faults.state.failure = 'reply lost';
        await app.http.post('/v1/entities').set(dev(bot)).send(entity('city', 'Paris')).expect(503);
        faults.state.fault = null;
        await app.http.post('/v1/entities').set(dev(bot)).send(entity('city', 'Paris')).expect(409);
      },
      (trained) => expect(trained.entities).toEqual(['city']),
    ],
    [
      'an entity deleted whose place could not be given back',
      async () => {
        const { id } = (
          await app.http.post('/v1/entities').set(dev(bot)).send(entity('city', 'Paris')).expect(200)
        ).body;
        await learnt();
        faults.state.fault = placeReleases;
        await app.http.delete(`/v1/entities/${id}`).set(dev(bot)).expect(503);
        faults.state.fault = null;
        await app.http.delete(`/v1/entities/${id}`).set(dev(bot)).expect(404);
      },
      (trained) => expect(trained.entities).toEqual([]),
    ],
  ];

  it.each(storedThoughFailed)(
    'learns %s (a 503 after the change was stored)',
    async (_change, change, check) => {
      await change();
      const trainings = nlu.started;
      expect((await training()).upToDate).toBe(false);
      await learnt();
      expect(nlu.started).toBe(trainings + 1);
      check(lastTrained());
    },
  );

  it('tries a training again when the store fails otherwise than with Unavailable (a full disk refusing the model)', async () => {
    await addIntent('Weather', 'weather today').expect(200);
    faults.state.fault = (collection, method) => collection === 'blobs:legacy_models' && method === 'put';
    faults.state.failure = 'disk full';
    timers.advance(10);
    await waitFor(() => (faults.state.refused.get('blobs:legacy_models') ?? 0) > 0, {
      what: 'the failed write',
    });
    await settled();
    faults.state.fault = null;
    const waiting = await training();
    expect(waiting.upToDate).toBe(false);
    expect(waiting.error).toMatch(/store/);

    await learnt();
    await answered('weather today', 'Weather');
  });

  it('does not try again a training the engine failed, even with an error that reads like the store', async () => {
    class Failing extends ScriptedNlu {
      override async trainModelInWorker(): Promise<never> {
        this.started++;
        throw unavailable();
      }
    }
    const failing = new Failing();
    const otherTimers = new ManualTimers();
    const other = await startLegacyApp({ clock, nlu: failing, timers: otherTimers });
    try {
      const { bot: fresh } = await accountWithBot(other.http);
      await other.http
        .post('/v1/intents')
        .set(dev(fresh))
        .send(intent('Weather', 'weather today'))
        .expect(200);
      const status = async () => (await other.http.get('/v1/bots').set(dev(fresh)).expect(200)).body.training;
      await waitFor(
        async () => {
          otherTimers.advance(10);
          return (await status()).error !== null;
        },
        { what: 'the failure in the status' },
      );
      expect((await status()).error).toMatch(/the training in en failed/);
      expect(otherTimers.pending).toBe(0);
      otherTimers.advance(60 * 60_000);
      expect(failing.started).toBe(1);
    } finally {
      await other.close();
    }
  });

  it('learns, training it once, a change another instance could not record while this one trained its own', async () => {
    const otherTimers = new ManualTimers();
    const otherNlu = new ScriptedNlu();
    const other = await startLegacyApp({
      clock,
      store: faults.store,
      nlu: otherNlu,
      timers: otherTimers,
      env: { LEGACY_MESSAGES_PER_USER: '0', LEGACY_MESSAGES_PER_ADDRESS: '0' },
    });
    try {
      faults.state.fault = revisionBump;
      await addIntent('Weather', 'weather today').expect(200);
      faults.state.fault = null;
      // the other instance trains a change of its own, reading the one this instance could not record
      await other.http.post('/v1/intents').set(dev(bot)).send(intent('Rain', 'rain tomorrow')).expect(200);
      await waitFor(
        async () => {
          otherTimers.advance(RETRY_FIRST_MS);
          return (await other.http.get('/v1/bots').set(dev(bot)).expect(200)).body.training.upToDate === true;
        },
        { timeoutMs: 20_000, intervalMs: 20, what: 'the other instance trains' },
      );
      expect(otherNlu.trainings.at(-1)!.intents.map((i) => i.name)).toEqual(['Greet', 'Weather', 'Rain']);

      // this instance records its change: the models learnt it already, nothing trains again
      await learnt();
      expect(nlu.started + otherNlu.started).toBe(2);
      await answered('weather today', 'Weather');
      await answered('rain tomorrow', 'Rain');
    } finally {
      await other.stop();
    }
  });
});
