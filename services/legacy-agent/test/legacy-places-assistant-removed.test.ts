import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { tempDir } from '@platform/testkit';
import { accountWithBot, type Bot, dev, utterance } from './support/fixtures';
import { interceptedStore, storeUnavailable } from './support/intercepted-store';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';
import { ScriptedNlu } from './support/scripted-nlu';

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
  const store = interceptedStore(real, async (collection, method, call) => {
    if (method !== 'insertOne' || state.collection !== collection) return call();
    state.collection = null;
    await state.meanwhile();
    await call();
    throw storeUnavailable();
  });
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
