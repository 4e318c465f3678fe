import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import { builtinFallbackText } from '../src/domain/builtin-fallback';
import { accountWithBot, type Bot, client, dev, say, trained, utterance } from './support/fixtures';
import { interceptedStore, storeUnavailable } from './support/intercepted-store';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';
import { ScriptedNlu } from './support/scripted-nlu';

/** these tests ask the same question until the new replies answer it */
const env = { LEGACY_MESSAGES_PER_USER: '0', LEGACY_MESSAGES_PER_ADDRESS: '0' };

const replies = (text: string) => ({ en: { default: { default: [say(text)] } } });
const greet = (text: string) => ({
  name: 'Greet',
  utterances: { en: [utterance('hello there')] },
  conditionalResponses: replies(text),
});

const isBump = (args: unknown[]) =>
  (args[1] as { $inc?: Record<string, number> } | undefined)?.$inc?.dataRevision !== undefined;

/**
 * `store` refusing, while `state.failing`, the step that records a change for training (the revision bump), and noting
 * every write of a model record or of an assistant's revision, and the model records read.
 */
function storeLosingRecords(store: Store) {
  const state = { failing: false, refused: 0, writes: [] as string[], modelsRead: new Set<string>() };
  const faulty = interceptedStore(store, async (collection, method, call, args) => {
    const bump = collection === 'legacy_assistants' && method === 'findOneAndUpdate' && isBump(args);
    if (bump && state.failing) {
      state.refused++;
      throw storeUnavailable();
    }
    if (bump || (collection === 'legacy_models' && method !== 'find' && method !== 'findOne'))
      state.writes.push(`${collection}.${method}`);
    const result = await call();
    // noted once read: the write a turn makes after it comes before the next timer (no await in between)
    if (collection === 'legacy_models' && method === 'findOne')
      state.modelsRead.add((args[0] as { _id: string })._id);
    return result;
  });
  return { store: faulty, state };
}

const answer = async (app: LegacyTestApp, bot: Bot, text: string) => {
  const reply = (
    await app.http
      .post('/v1/Messages')
      .set(client(bot))
      .send({ userId: 'u', platform: 'web', text })
      .expect(200)
  ).body as { fulfillment: Array<{ items: Array<{ text?: string }> }> };
  return reply.fulfillment.flatMap((f) => f.items.map((i) => i.text)).join(' ');
};

/** Until `app` answers `text` with `expected`. */
const answers = (app: LegacyTestApp, bot: Bot, text: string, expected: string) =>
  waitFor(async () => (await answer(app, bot, text)) === expected, {
    timeoutMs: 20_000,
    intervalMs: 50,
    what: `"${expected}" answering`,
  });

const training = async (app: LegacyTestApp, bot: Bot) =>
  (await app.http.get('/v1/bots').set(dev(bot)).expect(200)).body.training as {
    upToDate: boolean;
    revision: number;
    error: string | null;
  };

describe('legacy replies: a change of replies only whose record for training was lost', () => {
  let folder: ReturnType<typeof tempDir>;
  let store: Store;
  let clock: ManualClock;
  const apps: LegacyTestApp[] = [];

  beforeEach(() => {
    folder = tempDir('legacy-lost-replies-');
    clock = new ManualClock('2026-11-23T10:00:00Z');
    // the apps' clock: on the real one, the store's TTL sweep would remove what the apps wrote by the test's clock
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

  /**
   * An assistant answering "hello there" with Hi and anything else with its fallback intent's Sorry, trained on `app`,
   * and answered once by `running` (which keeps its intents by the assistant's revision).
   */
  async function greeter(app: LegacyTestApp, running: LegacyTestApp) {
    const { bot } = await accountWithBot(app.http);
    const greeting = (await app.http.post('/v1/intents').set(dev(bot)).send(greet('Hi')).expect(200)).body;
    const fallback = (
      await app.http
        .post('/v1/intents')
        .set(dev(bot))
        .send({ name: 'Fallback', isFallback: true, conditionalResponses: replies('Sorry') })
        .expect(200)
    ).body;
    await trained(app.http, bot);
    expect(await answer(running, bot, 'hello there')).toBe('Hi');
    expect(await answer(running, bot, 'what time is it')).toBe('Sorry');
    return { bot, greeting: greeting.id as string, fallback: fallback.id as string };
  }

  it.each([
    {
      change: 'new replies',
      make: (app: LegacyTestApp, bot: Bot, ids: { greeting: string }) =>
        app.http
          .post(`/v1/intents/${ids.greeting}`)
          .set(dev(bot))
          .send({ conditionalResponses: replies('Hello!') })
          .expect(200),
      asked: 'hello there',
      before: 'Hi',
      after: 'Hello!',
    },
    {
      change: 'the deletion of an intent without sentences',
      make: (app: LegacyTestApp, bot: Bot, ids: { fallback: string }) =>
        app.http.delete(`/v1/intents/${ids.fallback}`).set(dev(bot)).expect(200),
      asked: 'what time is it',
      before: 'Sorry',
      // the built-in fallback
      after: builtinFallbackText('en', undefined),
    },
  ])('$change: served by an instance running all along once another starts', async (lostChange) => {
    const faults = storeLosingRecords(store);
    const running = await start(store);
    const lost = await start(faults.store);
    const { bot, ...ids } = await greeter(lost, running);
    const revision = (await training(running, bot)).revision;
    faults.state.failing = true;
    await lostChange.make(lost, bot, ids);
    expect(faults.state.refused).toBeGreaterThan(0);
    // stopped before the store came back: the record it was trying again is lost with it
    await lost.stop();
    faults.state.failing = false;
    expect(await answer(running, bot, lostChange.asked)).toBe(lostChange.before);

    const fresh = await start(store);
    await answers(running, bot, lostChange.asked, lostChange.after);
    expect(await answer(fresh, bot, lostChange.asked)).toBe(lostChange.after);
    await trained(running.http, bot);
    expect(await training(running, bot)).toMatchObject({
      upToDate: true,
      error: null,
      revision: revision + 1,
    });
  });

  it('an unchanged assistant is neither reloaded nor retrained at a start, nor is one whose records predate the check', async () => {
    const first = await start(store);
    const { bot } = await greeter(first, first);
    const revision = (await training(first, bot)).revision;
    await first.stop();
    const key = `${bot.id}:en`;
    /** a start over the store: the trainings and the writes its start check made once it read the model record */
    const restart = async () => {
      const watched = storeLosingRecords(store);
      const nlu = new ScriptedNlu();
      const app = await start(watched.store, nlu);
      await waitFor(() => watched.state.modelsRead.has(key), {
        timeoutMs: 20_000,
        intervalMs: 20,
        what: 'the start check of the assistant',
      });
      await app.stop();
      return { trainings: nlu.started + nlu.trainings.length, writes: watched.state.writes };
    };

    expect(await restart()).toEqual({ trainings: 0, writes: [] });
    // a record stored by a version before the check: given what its intents serve once, with no new revision
    await store.collection('legacy_models').updateOne({ _id: key }, { $unset: { servedFingerprint: 1 } });
    expect(await restart()).toEqual({ trainings: 0, writes: ['legacy_models.updateOne'] });
    expect(await restart()).toEqual({ trainings: 0, writes: [] });

    const last = await start(store);
    expect(await answer(last, bot, 'hello there')).toBe('Hi');
    expect(await training(last, bot)).toMatchObject({ upToDate: true, revision });
  });
});
