import { ManualClock } from '@platform/kernel';
import { waitFor } from '@platform/testkit';
import { accountWithBot, client, dev, trained, utterance } from './support/fixtures';
import { startLegacyApp } from './support/legacy-app';
import { ScriptedNlu } from './support/scripted-nlu';

const intent = (name: string, sentence: string) => ({ name, utterances: { en: [utterance(sentence)] } });
/** these tests poll Messages until a model answers: not the callers its rate limits (decision 0112) are for */
const NO_LIMITS = { LEGACY_MESSAGES_PER_ADDRESS: '0', LEGACY_MESSAGES_PER_USER: '0' };

describe('several instances over one database', () => {
  it('an instance picks up the model another instance trained', async () => {
    const a = await startLegacyApp({ nlu: new ScriptedNlu(), env: NO_LIMITS });
    const b = await startLegacyApp({ nlu: new ScriptedNlu(), store: a.store, env: NO_LIMITS });
    try {
      const { bot } = await accountWithBot(a.http);
      await a.http.post('/v1/intents').set(dev(bot)).send(intent('Greet', 'hello there')).expect(200);
      await trained(a.http, bot);
      const ask = (text: string) =>
        b.http.post('/v1/Messages').set(client(bot)).send({ userId: 'u', platform: 'web', text }).expect(200);
      expect((await ask('hello there')).body.intents[0].name).toBe('Greet');

      await a.http.post('/v1/intents').set(dev(bot)).send(intent('Weather', 'weather today')).expect(200);
      await trained(a.http, bot);
      await waitFor(async () => (await ask('weather today')).body.intents[0].name === 'Weather', {
        what: 'instance b to load the new model',
      });
    } finally {
      await b.close();
      await a.close();
    }
  });

  it('an instance trains itself when the instance that took the change never did', async () => {
    const clock = new ManualClock('2026-11-23T10:00:00Z');
    const never = { LEGACY_RETRAIN_DEBOUNCE_MS: '600000', LEGACY_RETRAIN_MAX_DELAY_MS: '600000' };
    const a = await startLegacyApp({ nlu: new ScriptedNlu(), clock, env: NO_LIMITS });
    const bNlu = new ScriptedNlu();
    const b = await startLegacyApp({
      nlu: bNlu,
      store: a.store,
      clock,
      env: { ...NO_LIMITS, LEGACY_RETRAIN_MAX_DELAY_MS: '200' },
    });
    try {
      const { bot } = await accountWithBot(a.http);
      await a.http.post('/v1/intents').set(dev(bot)).send(intent('Greet', 'hello there')).expect(200);
      await trained(a.http, bot);
      // The change lands on an instance that will not train it (as if it died right after).
      const c = await startLegacyApp({ nlu: new ScriptedNlu(), store: a.store, clock, env: never });
      await c.http.post('/v1/intents').set(dev(bot)).send(intent('Weather', 'weather today')).expect(200);
      await c.close();
      const ask = (text: string) =>
        b.http.post('/v1/Messages').set(client(bot)).send({ userId: 'u', platform: 'web', text }).expect(200);
      expect((await ask('weather today')).body.intents[0].isFallback).toBe(true); // b still has the old model
      clock.advance(31_000);
      await waitFor(async () => (await ask('weather today')).body.intents[0].name === 'Weather', {
        what: 'instance b to retrain',
      });
      expect(bNlu.trainings.length).toBeGreaterThan(0);
    } finally {
      await b.close();
      await a.close();
    }
  });
});
