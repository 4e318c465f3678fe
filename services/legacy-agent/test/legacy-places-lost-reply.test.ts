import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { tempDir } from '@platform/testkit';
import { accountWithBot, type Bot, dev, utterance } from './support/fixtures';
import { interceptedStore, storeUnavailable } from './support/intercepted-store';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';
import { ScriptedNlu } from './support/scripted-nlu';

/** Which operations of the store fail: `applied` ones are done, then fail (a reply lost), the others are refused. */
type Fault = (collection: string, method: string) => 'applied' | 'refused' | null;

/** The embedded store, its collections' operations failing as `state.fault` says. */
function storeWithFaults(dataDir: string, clock: ManualClock) {
  const real = createEmbeddedStore({ dataDir, now: () => clock.now().getTime() });
  const state: { fault: Fault | null } = { fault: null };
  const store = interceptedStore(real, async (collection, method, call) => {
    const failure = state.fault?.(collection, method);
    if (!failure) return call();
    if (failure === 'applied') await call();
    throw storeUnavailable();
  });
  return { store, state };
}

const intent = (name: string) => ({
  name,
  utterances: { en: [utterance(`say ${name}`)] },
  conditionalResponses: { en: { default: { default: [{ type: 'text', text: [`${name} answer`] }] } } },
});
const entity = (name: string) => ({
  name,
  automaticallyExtensible: { en: false },
  useSynonyms: { en: false },
  data: { en: [{ value: name, synonyms: [] }] },
});

const kinds = [
  { held: 'intents', collection: 'legacy_intents', body: intent, max: 'LEGACY_MAX_INTENTS' },
  { held: 'entities', collection: 'legacy_entities', body: entity, max: 'LEGACY_MAX_ENTITIES' },
] as const;

describe('legacy assistant limits: a creation whose reply was lost keeps its place', () => {
  const clock = new ManualClock('2026-11-23T10:00:00Z');
  let folder: ReturnType<typeof tempDir>;
  let faults: ReturnType<typeof storeWithFaults>;
  let app: LegacyTestApp;
  let bot: Bot;

  beforeEach(async () => {
    folder = tempDir('legacy-places-');
    faults = storeWithFaults(folder.dir, clock);
    app = await startLegacyApp({
      clock,
      store: faults.store,
      nlu: new ScriptedNlu(),
      env: { LEGACY_MAX_INTENTS: '3', LEGACY_MAX_ENTITIES: '3' },
    });
    ({ bot } = await accountWithBot(app.http));
  });
  afterEach(async () => {
    faults.state.fault = null;
    await app.stop();
    await faults.store.close();
    folder.remove();
  });

  /** The store applies the insert, then fails; `thenLookups`: how it answers the reads of that collection after it. */
  const lostReply = (collection: string, thenLookups: 'answered' | 'refused') => {
    let inserted = false;
    faults.state.fault = (name, method) => {
      if (name !== collection) return null;
      if (method === 'insertOne' && !inserted) {
        inserted = true;
        return 'applied';
      }
      return method === 'findOne' && thenLookups === 'refused' ? 'refused' : null;
    };
  };

  describe.each(kinds)('$held', ({ held, collection, body, max }) => {
    const create = (name: string) => app.http.post(`/v1/${held}`).set(dev(bot)).send(body(name));

    it.each(['answered', 'refused'] as const)(
      `never holds more than ${max} after an insert whose reply was lost (the store's reads after it %s)`,
      async (thenLookups) => {
        await create('first').expect(200);
        lostReply(collection, thenLookups);
        await create('lost').expect(503);
        faults.state.fault = null;
        // the lost reply's one is stored: one place is left of the three
        await create('second').expect(200);
        const refused = await create('third').expect(409);
        expect(refused.body.error).toBe('LimitExceeded');
        const listed = await app.http.get(`/v1/${held}`).set(dev(bot)).expect(200);
        expect((listed.body as Array<{ name: string }>).map((d) => d.name).sort()).toEqual([
          'first',
          'lost',
          'second',
        ]);
      },
    );

    it('gives the place back when the insert was refused, and after deleting the one whose reply was lost', async () => {
      faults.state.fault = (name, method) =>
        name === collection && method === 'insertOne' ? 'refused' : null;
      await create('refused').expect(503);
      lostReply(collection, 'answered');
      await create('lost').expect(503);
      faults.state.fault = null;
      const listed = await app.http.get(`/v1/${held}`).set(dev(bot)).expect(200);
      const lost = (listed.body as Array<{ id: string; name: string }>).find((d) => d.name === 'lost')!;
      await app.http.delete(`/v1/${held}/${lost.id}`).set(dev(bot)).expect(200);
      for (const name of ['a', 'b', 'c']) await create(name).expect(200);
      expect((await create('d').expect(409)).body.error).toBe('LimitExceeded');
    });
  });
});
