import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import { RETRY_FIRST_MS } from '../src/domain/retraining';
import { accountWithBot, type Bot, client, dev, utterance } from './support/fixtures';
import { interceptedStore, storeUnavailable } from './support/intercepted-store';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';
import { ManualTimers } from './support/manual-timers';
import { ScriptedNlu } from './support/scripted-nlu';

/** The embedded store, whose next write of a model record is applied, then fails (a reply lost) while `armed`. */
function storeLosingARecordReply(dataDir: string, clock: ManualClock) {
  const real = createEmbeddedStore({ dataDir, now: () => clock.now().getTime() });
  const state = { armed: false, lost: 0 };
  const store = interceptedStore(real, async (collection, method, call) => {
    if (collection !== 'legacy_models' || method !== 'updateOne') return call();
    const result = await call();
    if (!state.armed) return result;
    state.armed = false;
    state.lost++;
    throw storeUnavailable();
  });
  return { store, state };
}

const intent = (name: string, sentence: string) => ({
  name,
  utterances: { en: [utterance(sentence)] },
  conditionalResponses: { en: { default: { default: [{ type: 'text', text: [`${name} answer`] }] } } },
});

describe('legacy training status: a model record stored though its reply was lost', () => {
  const clock = new ManualClock('2026-11-23T10:00:00Z');
  let folder: ReturnType<typeof tempDir>;
  let faults: ReturnType<typeof storeLosingARecordReply>;
  let timers: ManualTimers;
  let app: LegacyTestApp;
  let bot: Bot;

  beforeEach(async () => {
    folder = tempDir('legacy-record-reply-');
    faults = storeLosingARecordReply(folder.dir, clock);
    timers = new ManualTimers();
    app = await startLegacyApp({
      clock,
      store: faults.store,
      nlu: new ScriptedNlu(),
      timers,
      env: {
        LEGACY_RETRAIN_DEBOUNCE_MS: '10',
        LEGACY_MESSAGES_PER_USER: '0',
        LEGACY_MESSAGES_PER_ADDRESS: '0',
      },
    });
    ({ bot } = await accountWithBot(app.http));
  });
  afterEach(async () => {
    faults.state.armed = false;
    await app.stop();
    await faults.store.close();
    folder.remove();
  });

  const training = async () => (await app.http.get('/v1/bots').set(dev(bot)).expect(200)).body.training;
  const topIntent = async (text: string) =>
    (
      await app.http
        .post('/v1/Messages')
        .set(client(bot))
        .send({ userId: 'u', platform: 'web', text })
        .expect(200)
    ).body.intents[0].name as string;

  it('answers with the model the status calls up to date, and drops the blob of the one it replaced', async () => {
    await app.http.post('/v1/intents').set(dev(bot)).send(intent('Greet', 'hello there')).expect(200);
    await waitFor(
      async () => {
        timers.advance(RETRY_FIRST_MS);
        return (await training()).upToDate === true;
      },
      { timeoutMs: 20_000, intervalMs: 20, what: 'the first model' },
    );
    expect(await topIntent('hello there')).toBe('Greet');

    faults.state.armed = true;
    await app.http.post('/v1/intents').set(dev(bot)).send(intent('Weather', 'weather today')).expect(200);
    timers.advance(10); // the debounce is over; time stands still after it
    // counted once the write was applied, as it fails
    await waitFor(() => faults.state.lost === 1, {
      timeoutMs: 20_000,
      what: 'the record written, its reply lost',
    });
    expect((await training()).upToDate).toBe(true);
    // the record says the model learnt Weather: this instance answers with that model
    expect(await topIntent('weather today')).toBe('Weather');
    // Greet's model is named by no record: its blob goes, as after a write that answered
    const blobs = faults.store.blobs('legacy_models');
    await waitFor(async () => (await blobs.list()).length === 1, {
      timeoutMs: 10_000,
      what: "Greet's blob dropped",
    });
  });
});
