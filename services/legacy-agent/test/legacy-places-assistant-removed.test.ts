import { ManualClock, Unavailable } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { tempDir } from '@platform/testkit';
import { accountWithBot, type Bot, dev, utterance } from './support/fixtures';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';
import { ScriptedNlu } from './support/scripted-nlu';

const unavailable = () =>
  new Unavailable('The service cannot reach its data right now; try again shortly', {
    error: 'StoreUnavailable',
  });

/**
 * The embedded store, whose next insert into `state.collection` reaches it after `state.meanwhile` and is applied, then
 * fails (a reply lost).
 */
function storeLosingAnInsertReply(dataDir: string, clock: ManualClock) {
  const real = createEmbeddedStore({ dataDir, now: () => clock.now().getTime() });
  const state: { collection: string | null; meanwhile: () => Promise<void> } = {
    collection: null,
    meanwhile: async () => undefined,
  };
  const store = new Proxy(real, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop === 'collection')
        return (name: string, indexes?: unknown) =>
          new Proxy(target.collection(name, indexes as never), {
            get(c, method) {
              const fn = Reflect.get(c, method, c);
              if (typeof fn !== 'function' || method !== 'insertOne') return fn;
              return async (...args: unknown[]) => {
                if (state.collection !== name) return fn.apply(c, args);
                state.collection = null;
                await state.meanwhile();
                await fn.apply(c, args);
                throw unavailable();
              };
            },
          });
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as Store;
  return { store, state };
}

const kinds = [
  {
    held: 'intents',
    collection: 'legacy_intents',
    body: {
      name: 'Lost',
      utterances: { en: [utterance('say lost')] },
      conditionalResponses: { en: { default: { default: [{ type: 'text', text: ['lost answer'] }] } } },
    },
  },
  {
    held: 'entities',
    collection: 'legacy_entities',
    body: {
      name: 'lost',
      automaticallyExtensible: { en: false },
      useSynonyms: { en: false },
      data: { en: [{ value: 'lost', synonyms: [] }] },
    },
  },
] as const;

describe('legacy assistant deleted while a creation whose reply was lost was stored', () => {
  const clock = new ManualClock('2026-11-23T10:00:00Z');
  let folder: ReturnType<typeof tempDir>;
  let faults: ReturnType<typeof storeLosingAnInsertReply>;
  let app: LegacyTestApp;
  let bot: Bot;
  let sessionToken: string;

  beforeEach(async () => {
    folder = tempDir('legacy-places-removed-');
    faults = storeLosingAnInsertReply(folder.dir, clock);
    app = await startLegacyApp({ clock, store: faults.store, nlu: new ScriptedNlu() });
    const made = await accountWithBot(app.http);
    bot = made.bot;
    sessionToken = made.account.sessionToken;
  });
  afterEach(async () => {
    faults.state.collection = null;
    await app.stop();
    await faults.store.close();
    folder.remove();
  });

  it.each(kinds)('leaves none of its $held behind', async ({ held, collection, body }) => {
    faults.state.collection = collection;
    // the whole deletion, its sweep of intents and entities included, comes while the insert is on its way
    faults.state.meanwhile = async () => {
      await app.http.delete(`/v2/bots/${bot.id}`).set('X-Legacy-Session-Token', sessionToken).expect(200);
    };
    await app.http.post(`/v1/${held}`).set(dev(bot)).send(body).expect(503);
    expect(await app.store.collection(collection).count({ assistantId: bot.id })).toBe(0);
  });
});
