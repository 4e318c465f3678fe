import { createEmbeddedStore } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import { accountWithBot, client, dev, utterance } from './support/fixtures';
import { interceptedStore } from './support/intercepted-store';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';
import { ScriptedNlu } from './support/scripted-nlu';

const env = {
  LEGACY_RETRAIN_DEBOUNCE_MS: '10',
  LEGACY_MESSAGES_PER_USER: '0',
  LEGACY_MESSAGES_PER_ADDRESS: '0',
};

/**
 * The embedded store, counting the writes of model records once they are over (whether they failed or not). While
 * `gate` is set, a write that only brings a record's revision forward (a model that learnt the change already) waits
 * for it, counted in `waiting`.
 */
function storeCountingRecords(dataDir: string) {
  const real = createEmbeddedStore({ dataDir });
  const state: { records: number; gate: Promise<void> | null; waiting: number } = {
    records: 0,
    gate: null,
    waiting: 0,
  };
  const store = interceptedStore(real, async (collection, method, call, args) => {
    if (collection !== 'legacy_models' || method !== 'updateOne') return call();
    const set = (args[1] as { $set?: Record<string, unknown> }).$set ?? {};
    if (state.gate && !('fingerprint' in set) && 'revision' in set) {
      state.waiting++;
      await state.gate;
    }
    try {
      return await call();
    } finally {
      state.records++;
    }
  });
  return { store, state };
}

const intent = (name: string, sentence: string) => ({
  name,
  utterances: { en: [utterance(sentence)] },
  conditionalResponses: { en: { default: { default: [{ type: 'text', text: [`${name} answer`] }] } } },
});

describe('legacy training status with two instances training one assistant at once', () => {
  let folder: ReturnType<typeof tempDir>;
  let counted: ReturnType<typeof storeCountingRecords>;
  let slow: ScriptedNlu;
  let a: LegacyTestApp;
  let b: LegacyTestApp;

  beforeEach(async () => {
    folder = tempDir('legacy-two-instances-');
    counted = storeCountingRecords(folder.dir);
    slow = new ScriptedNlu();
    a = await startLegacyApp({ nlu: slow, store: counted.store, env });
    b = await startLegacyApp({ nlu: new ScriptedNlu(), store: counted.store, env });
  });
  afterEach(async () => {
    slow.release();
    await b.stop();
    await a.stop();
    await counted.store.close();
    folder.remove();
  });

  it('keeps the model of the newer data when the turn that began first ends last', async () => {
    const { bot } = await accountWithBot(a.http);
    const training = async () => (await a.http.get('/v1/bots').set(dev(bot)).expect(200)).body.training;
    await a.http.post('/v1/intents').set(dev(bot)).send(intent('Greet', 'hello there')).expect(200);
    await waitFor(async () => (await training()).upToDate === true, {
      timeoutMs: 20_000,
      what: 'Greet learnt',
    });

    // a change on instance A: its training of it is held; one on B meanwhile, which B learns first
    slow.hold();
    const begun = slow.started;
    await a.http.post('/v1/intents').set(dev(bot)).send(intent('Weather', 'weather today')).expect(200);
    await waitFor(() => slow.started > begun, { timeoutMs: 20_000, what: "A's training begun" });
    await b.http.post('/v1/intents').set(dev(bot)).send(intent('Rain', 'rain today')).expect(200);
    await waitFor(async () => (await training()).upToDate === true, {
      timeoutMs: 20_000,
      what: 'B learnt Rain',
    });
    const records = counted.state.records;

    slow.release();
    await waitFor(() => counted.state.records > records, { timeoutMs: 20_000, what: "A's record written" });
    expect(await training()).toMatchObject({ upToDate: true, languages: { en: { revision: 3 } } });
    // A answers with the model B recorded, and the blob of its own older one goes
    const top = async () =>
      (
        await a.http
          .post('/v1/Messages')
          .set(client(bot))
          .send({ userId: 'u', platform: 'web', text: 'rain today' })
          .expect(200)
      ).body.intents[0].name;
    await waitFor(async () => (await top()) === 'Rain', { timeoutMs: 10_000, what: 'Rain answering on A' });
    const blobs = counted.store.blobs('legacy_models');
    await waitFor(async () => (await blobs.list()).length === 1, {
      timeoutMs: 10_000,
      what: "A's blob dropped",
    });
  });

  it('keeps the revision of a model another instance recorded meanwhile when bringing its own forward', async () => {
    const { bot } = await accountWithBot(a.http);
    const training = async () => (await a.http.get('/v1/bots').set(dev(bot)).expect(200)).body.training;
    const made = await a.http
      .post('/v1/intents')
      .set(dev(bot))
      .send(intent('Greet', 'hello there'))
      .expect(200);
    await waitFor(async () => (await training()).upToDate === true, {
      timeoutMs: 20_000,
      what: 'Greet learnt',
    });

    // a change of an answer on A: its model learnt the sentences already, and A's write of the new revision waits
    let open: () => void = () => undefined;
    counted.state.gate = new Promise((resolve) => {
      open = resolve;
    });
    const reworded = {
      ...intent('Greet', 'hello there'),
      conditionalResponses: { en: { default: { default: [{ type: 'text', text: ['hi'] }] } } },
    };
    await a.http.post(`/v1/intents/${made.body.id}`).set(dev(bot)).send(reworded).expect(200);
    await waitFor(() => counted.state.waiting === 1, { timeoutMs: 20_000, what: "A's revision write" });
    // B learns a newer change meanwhile
    await b.http.post('/v1/intents').set(dev(bot)).send(intent('Rain', 'rain today')).expect(200);
    await waitFor(async () => (await training()).upToDate === true, {
      timeoutMs: 20_000,
      what: 'B learnt Rain',
    });
    const records = counted.state.records;

    counted.state.gate = null;
    open();
    await waitFor(() => counted.state.records > records, { timeoutMs: 20_000, what: "A's revision written" });
    expect(await training()).toMatchObject({ upToDate: true, languages: { en: { revision: 3 } } });
  });
});
