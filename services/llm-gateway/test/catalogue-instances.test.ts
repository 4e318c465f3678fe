import { createInProcessBus, createNatsBus } from '@platform/bus';
import type { Collection, Doc, Store } from '@platform/store';
import { createEmbeddedStore } from '@platform/store';
import { describeWithNats, type NatsServerHandle, startNatsServer, waitFor } from '@platform/testkit';
import { catalogueEntry as entry, type GatewayInstance, startInstance } from './gateway-instance';

type Entry = { model_id: string; enabled: boolean } | null;

const ids = async (instance: GatewayInstance) =>
  (await instance.call('GET', '/v1/models?orgSlug=all')).body.data.map((m: { id: string }) => m.id);

/** A store whose `llm_models` collection refuses its n-th insert once armed (a failure midway). */
function storeFailingInsert(inner: Store) {
  const state = { armedAt: -1, inserts: 0 };
  const store: Store = {
    ...inner,
    engine: inner.engine,
    ping: () => inner.ping(),
    close: () => inner.close(),
    collection<T extends Doc>(name: string, indexes?: Parameters<Store['collection']>[1]): Collection<T> {
      const c = inner.collection<T>(name, indexes);
      if (name !== 'llm_models') return c;
      return Object.assign(Object.create(c) as Collection<T>, {
        insertOne: async (doc: T) => {
          if (state.armedAt > 0 && ++state.inserts === state.armedAt) {
            state.armedAt = -1;
            throw new Error('disk full (simulated)');
          }
          return c.insertOne(doc);
        },
      });
    },
  };
  return {
    store,
    failInsert(n: number) {
      state.armedAt = n;
      state.inserts = 0;
    },
  };
}

describe('catalogue bulk replace is all or nothing', () => {
  it('a replace whose 300th insert fails answers 500 BULK_REPLACE_FAILED and leaves the previous catalogue whole', async () => {
    const faulty = storeFailingInsert(createEmbeddedStore());
    const gw = await startInstance(faulty.store, createInProcessBus());
    try {
      const first = await gw.call('PUT', '/v1/models', {
        models: Array.from({ length: 120 }, (_, i) => entry(`old/${String(i).padStart(3, '0')}`)),
      });
      expect(first.body).toEqual({ deleted: 5, inserted: 120 }); // the five built-in mock models
      const before = await ids(gw);
      expect(before).toHaveLength(100); // one page

      faulty.failInsert(300);
      const failed = await gw.call('PUT', '/v1/models', {
        models: Array.from({ length: 450 }, (_, i) => entry(`new/${i}`)),
      });
      expect(failed.status).toBe(500);
      expect(failed.body).toMatchObject({
        code: 'BULK_REPLACE_FAILED',
        error: 'BULK_REPLACE_FAILED',
        status: 500,
      });
      const after = await gw.call('GET', '/v1/models?orgSlug=all&limit=100&page=1');
      expect(after.body.total).toBe(120);
      expect(await ids(gw)).toEqual(before);
      // and the store holds exactly the old catalogue, as a restart would load it
      const restarted = await startInstance(faulty.store, createInProcessBus());
      expect((await restarted.call('GET', '/v1/models?orgSlug=all')).body.total).toBe(120);
      expect((await restarted.call('GET', '/v1/models/new/0')).status).toBe(404);
      await restarted.stop();
    } finally {
      await gw.stop();
    }
  });

  it('every change is audited in the store: who, when, before and after', async () => {
    const store = createEmbeddedStore();
    const gw = await startInstance(store, createInProcessBus());
    try {
      await gw.call('POST', '/v1/models', entry('audit/me'));
      await gw.call('PATCH', '/v1/models/audit/me', { enabled: false });
      await gw.call('DELETE', '/v1/models/audit/me');
      const trail = await store
        .collection<Doc & { action: string; actor: unknown; before: Entry; after: Entry; at: Date }>(
          'llm_catalogue_audit',
        )
        .find({}, { sort: { at: 1 } });
      expect(trail.map((t) => t.action)).toEqual(['create', 'update', 'delete']);
      expect(trail[0]).toMatchObject({ actor: { kind: 'operator', userId: null }, before: null });
      expect(trail[1]!.before?.enabled).toBe(true);
      expect(trail[1]!.after?.enabled).toBe(false);
      expect(trail[2]).toMatchObject({ before: { model_id: 'audit/me' }, after: null });
      expect(trail.every((t) => t.at instanceof Date)).toBe(true);
    } finally {
      await gw.stop();
    }
  });
});

describe('an instance that missed the bus notice', () => {
  it('picks the change up from the store at its next catalogue check', async () => {
    const store = createEmbeddedStore();
    // two buses that do not meet: the notice never reaches the second instance
    const a = await startInstance(store, createInProcessBus());
    const b = await startInstance(store, createInProcessBus(), { LLM_GATEWAY_CATALOGUE_POLL_MS: '50' });
    try {
      expect((await a.call('POST', '/v1/models', entry('missed/notice'))).status).toBe(201);
      await waitFor(async () => (await b.call('GET', '/v1/models/missed/notice')).status === 200, {
        timeoutMs: 10_000, // a loaded machine; far below the default poll it must not wait for
        what: 'the second instance to reload from the store',
      });
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});

describeWithNats('a catalogue change reaches every instance over NATS', () => {
  let nats: NatsServerHandle;
  beforeAll(async () => {
    nats = await startNatsServer();
  }, 30_000);
  afterAll(() => nats?.dispose());

  // The bus alone carries the change here (no store polling), so the second instance serving it at all proves
  // the path; how fast it does (the 1 s) is measured by bench/llm-gateway/catalogue-propagation.ts,
  // not asserted: a loaded CI machine once took longer than 1 s.
  it('a model added, disabled and removed on one instance is served so by a second, over the bus alone', async () => {
    const store = createEmbeddedStore();
    const buses = await Promise.all(
      ['a', 'b'].map((n) => createNatsBus({ url: nats.url, name: `gateway-${n}` })),
    );
    // no store polling: only the bus can carry the change in time
    const a = await startInstance(store, buses[0]!, { LLM_GATEWAY_CATALOGUE_POLL_MS: '0' });
    const b = await startInstance(store, buses[1]!, { LLM_GATEWAY_CATALOGUE_POLL_MS: '0' });
    // the server has taken b's subscription once it answers a ping sent after it (a notice published before that
    // would not reach b, and with no polling nothing else would: a loaded CI run once lost the first one)
    await buses[1]!.ping();
    try {
      const seenByB = async (expectStatus: number, enabled?: boolean) =>
        waitFor(
          async () => {
            const r = await b.call('GET', '/v1/models/eu.anthropic.claude-sonnet-4-20250514-v1:0');
            return r.status === expectStatus && (enabled === undefined || r.body.enabled === enabled);
          },
          { timeoutMs: 10_000, intervalMs: 20, what: 'the second instance to serve the change' },
        );
      expect(
        (await a.call('POST', '/v1/models', entry('eu.anthropic.claude-sonnet-4-20250514-v1:0'))).status,
      ).toBe(201);
      await seenByB(200, true);
      await a.call('PATCH', '/v1/models/eu.anthropic.claude-sonnet-4-20250514-v1:0', { enabled: false });
      await seenByB(200, false);
      await a.call('DELETE', '/v1/models/eu.anthropic.claude-sonnet-4-20250514-v1:0');
      await seenByB(404);
    } finally {
      await a.stop();
      await b.stop();
      await Promise.all(buses.map((bus) => bus.close()));
    }
  });
});
