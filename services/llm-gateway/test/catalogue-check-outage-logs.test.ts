import { createInProcessBus } from '@platform/bus';
import { createLogger, loadConfig, ManualClock, OUTAGE_REMINDER_MS } from '@platform/kernel';
import { type Collection, createEmbeddedStore, type Doc, type Store } from '@platform/store';
import { waitFor } from '@platform/testkit';
import { llmGatewayConfigSchema } from '../src/config';
import { createLlmGatewayService } from '../src/service';
import { catalogueEntry, startInstance } from './gateway-instance';
import { INTERNAL_SECRET } from './support';

/**
 * The store, except that the catalogue's version cannot be read while `versionAway` (each refusal counted), and the
 * next `modelReadsToRefuse` reads of the models fail.
 */
function storeAway(inner: Store) {
  const state = { versionAway: false, versionRefusals: 0, modelReadsToRefuse: 0 };
  const refusing = <T extends Doc, M extends 'findOne' | 'find'>(
    c: Collection<T>,
    method: M,
    refuses: () => boolean,
  ): Collection<T> =>
    Object.assign(Object.create(c) as Collection<T>, {
      [method]: (...args: Parameters<Collection<T>[M]>) => {
        if (refuses()) return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:27017 (simulated)'));
        return (c[method] as (...a: typeof args) => unknown)(...args);
      },
    });
  const store: Store = {
    engine: inner.engine,
    blobs: (bucket) => inner.blobs(bucket),
    ping: () => inner.ping(),
    close: () => inner.close(),
    collection<T extends Doc>(name: string, indexes?: Parameters<Store['collection']>[1]): Collection<T> {
      const c = inner.collection<T>(name, indexes);
      if (name === 'llm_catalogue_meta')
        return refusing(c, 'findOne', () => {
          if (state.versionAway) state.versionRefusals++;
          return state.versionAway;
        });
      if (name === 'llm_models') return refusing(c, 'find', () => state.modelReadsToRefuse-- > 0);
      return c;
    },
  };
  return { store, state };
}

describe("the gateway's catalogue checks while its store refuses them", () => {
  it('logs why once, then once a minute, and once when a check succeeds again, however many checks fail', async () => {
    const { store, state } = storeAway(createEmbeddedStore());
    const lines: Array<{ level: number; msg: string; [field: string]: unknown }> = [];
    const clock = new ManualClock('2026-03-01T10:00:00Z');
    const service = await createLlmGatewayService({
      config: loadConfig(llmGatewayConfigSchema, {
        PLATFORM_INTERNAL_SECRET: INTERNAL_SECRET,
        LLM_QUOTA_URL: 'http://127.0.0.1:9',
        LLM_GATEWAY_CATALOGUE_POLL_MS: '20',
      }),
      logger: createLogger({
        name: 'test',
        destination: { write: (line: string) => lines.push(JSON.parse(line)) },
      }),
      clock,
      store,
      bus: createInProcessBus(),
    });
    await service.start();
    const checkLines = () => lines.filter((line) => /catalogue version check/.test(line.msg));
    const refusedChecks = (more: number) => {
      const target = state.versionRefusals + more;
      return waitFor(() => state.versionRefusals >= target, {
        timeoutMs: 10_000,
        what: `${more} more refused catalogue checks`,
      });
    };
    try {
      state.versionAway = true;
      await refusedChecks(5);
      expect(checkLines()).toEqual([
        expect.objectContaining({
          level: 40,
          msg: expect.stringMatching(/^catalogue version check failed: /),
          err: expect.objectContaining({ message: expect.stringMatching(/ECONNREFUSED/) }),
        }),
      ]);

      clock.advance(OUTAGE_REMINDER_MS);
      await refusedChecks(5);
      expect(checkLines().slice(1)).toEqual([
        expect.objectContaining({
          level: 40,
          msg: 'catalogue version checks still fail',
          since: '2026-03-01T10:00:00.000Z',
          outageSeconds: OUTAGE_REMINDER_MS / 1000,
        }),
      ]);

      state.versionAway = false;
      await waitFor(() => checkLines().length === 3, {
        timeoutMs: 10_000,
        what: 'the end of the outage logged',
      });
      expect(checkLines()[2]).toEqual(
        expect.objectContaining({
          level: 30,
          msg: 'catalogue version checks succeed again',
          outageSeconds: OUTAGE_REMINDER_MS / 1000,
          refusals: state.versionRefusals,
        }),
      );
    } finally {
      await service.stop();
      await store.close();
    }
  });

  it('reloads at a later check a change whose reload failed', async () => {
    const inner = createEmbeddedStore();
    const { store, state } = storeAway(inner);
    // two buses that do not meet: the second instance learns of the change from its checks alone
    const a = await startInstance(inner, createInProcessBus());
    const b = await startInstance(store, createInProcessBus(), { LLM_GATEWAY_CATALOGUE_POLL_MS: '20' });
    try {
      state.modelReadsToRefuse = 1;
      expect((await a.call('POST', '/v1/models', catalogueEntry('reload/failed'))).status).toBe(201);
      // before, the check that saw the change took it as seen, and its failed reload was never tried again
      await waitFor(async () => (await b.call('GET', '/v1/models/reload/failed')).status === 200, {
        timeoutMs: 10_000,
        what: 'the second instance to serve the change',
      });
      expect(state.modelReadsToRefuse).toBeLessThan(0);
    } finally {
      await a.stop();
      await b.stop();
      await inner.close();
    }
  });
});
