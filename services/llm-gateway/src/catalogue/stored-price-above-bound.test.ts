import { createInProcessBus } from '@platform/bus';
import { createEmbeddedStore, type Doc } from '@platform/store';
import request from 'supertest';
import { fakeQuota, orgSettings, ownerHeaders, startGatewayService } from '../../test/gateway-instance';
import { INTERNAL_SECRET } from '../../test/support';

/**
 * A price stored above the bound (a million per million tokens) before the bound existed: a patch of another member
 * keeps it and succeeds, and inference bills it at the bound, never at an infinite cost.
 */
describe('a model whose stored price is above the bound', () => {
  const store = createEmbeddedStore();
  const bus = createInProcessBus();
  let gateway: Awaited<ReturnType<typeof startGatewayService>>;

  beforeAll(async () => {
    gateway = await startGatewayService({
      file: {
        providers: [{ name: 'mock', type: 'mock' }],
        models: [
          {
            model_id: 'old/priced',
            type: 'completion',
            provider_config: { provider: 'mock', model: 'mock-chat' },
          },
        ],
      },
      store,
      bus,
      fetch: fakeQuota((slug) => orgSettings(slug)),
    });
    // as a catalogue written before the bound holds it
    await store
      .collection<Doc>('llm_models')
      .updateOne(
        { _id: 'old/priced' },
        { $set: { pricing: { input_per_million: 1e308, output_per_million: 2 } } },
      );
  }, 30_000);
  afterAll(async () => {
    await gateway?.stop();
    await bus.close();
  });

  it('a patch that leaves the price alone succeeds and keeps it; one that sets it is still held to the bound', async () => {
    const patch = (body: object) =>
      request(gateway.service.handler)
        .patch('/v1/models/old/priced')
        .set('x-platform-internal-secret', INTERNAL_SECRET)
        .send(body);
    const renamed = await patch({ display: { name: 'Old one' }, pricing: { output_per_million: 3 } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.display).toEqual({ name: 'Old one' });
    expect(renamed.body.pricing).toEqual({ input_per_million: 1e308, output_per_million: 3 });
    const stored = await store
      .collection<Doc & { pricing?: unknown }>('llm_models')
      .findOne({ _id: 'old/priced' });
    expect(stored?.pricing).toEqual({ input_per_million: 1e308, output_per_million: 3 });

    const raised = await patch({ pricing: { input_per_million: 2e6 } });
    expect([raised.status, raised.body.code, raised.body.details.issues[0].field]).toEqual([
      400,
      'INVALID_BODY',
      'pricing.input_per_million',
    ]);
  });

  it('inference bills it at the bound: every request of the organization has a finite cost', async () => {
    for (const content of ['one', 'two']) {
      const res = await request(gateway.service.handler)
        .post('/v1/chat/completions')
        .set(ownerHeaders('acme'))
        .send({ model: 'old/priced', messages: [{ role: 'user', content }] });
      expect(res.status).toBe(200);
      const { prompt_tokens, completion_tokens, cost } = res.body.usage;
      expect(cost).toBeCloseTo((prompt_tokens * 1_000_000 + completion_tokens * 3) / 1_000_000, 6);
    }
  });
});
