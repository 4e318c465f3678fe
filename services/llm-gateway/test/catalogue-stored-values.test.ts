import { createInProcessBus } from '@platform/bus';
import { createEmbeddedStore, type Doc } from '@platform/store';
import request from 'supertest';
import { fakeQuota, orgSettings, startGatewayService } from './gateway-instance';
import { INTERNAL_SECRET } from './support';

/**
 * Catalogue entries holding what today's rules refuse: written before a rule existed (a model named `auto`, an
 * embeddings model on an Anthropic provider, a member since dropped, a price above the bound) or left so by another
 * change (a failover whose model was removed). A patch that leaves such a value alone succeeds and keeps it as
 * stored, the operator CLI's `models enable|disable` among them; a patch that writes it is validated as ever.
 */
describe('catalogue entries holding values today’s rules refuse', () => {
  const store = createEmbeddedStore();
  const bus = createInProcessBus();
  const models = store.collection<Doc & Record<string, unknown>>('llm_models');
  let gateway: Awaited<ReturnType<typeof startGatewayService>>;

  /** a request with the operator's credential, as the operator CLI sends it */
  const operator = (method: 'patch' | 'post' | 'put' | 'delete', path: string, body?: object) => {
    const req = request(gateway.service.handler)
      [method](path)
      .set('x-platform-internal-secret', INTERNAL_SECRET);
    return body ? req.send(body) : req;
  };
  /** what `pnpm platform models enable|disable` sends */
  const setEnabled = (id: string, enabled: boolean) =>
    operator('patch', `/v1/models/${encodeURIComponent(id)}`, { enabled });
  /** a model document as an older gateway wrote it, straight into the store */
  const storeOld = (_id: string, doc: Record<string, unknown>) =>
    models.insertOne({ _id, enabled: true, source: 'api', updatedAt: new Date(), ...doc });
  const onMock = { provider: 'mock', model: 'mock-chat' };
  const prices = { input_per_million: 1, output_per_million: 2 };

  beforeAll(async () => {
    gateway = await startGatewayService({
      file: {
        providers: [
          { name: 'mock', type: 'mock' },
          { name: 'claude', type: 'anthropic', baseUrl: 'https://anthropic.invalid', apiKey: 'k1' },
        ],
        models: [],
      },
      store,
      bus,
      fetch: fakeQuota((slug) => orgSettings(slug)),
    });
    // before `auto` and `default` named the organization's routing and default (decision 0120)
    await storeOld('auto', { type: 'completion', provider_config: onMock, pricing: prices });
    // before the catalogue checked a provider's endpoints (decision 0105)
    await storeOld('old/claude-embed', {
      type: 'embeddings',
      provider_config: { provider: 'claude', model: 'claude-embed' },
      pricing: prices,
    });
    // a member a later gateway no longer knows
    await storeOld('old/ranked', { type: 'completion', provider_config: onMock, pricing: prices, rank: 3 });
    // before prices were bounded
    await storeOld('old/pooled', {
      type: 'completion',
      deployments: [onMock],
      pricing: { input_per_million: 1e308, output_per_million: 2 },
    });
  }, 30_000);
  afterAll(async () => {
    await gateway?.stop();
    await bus.close();
  });

  it('a model named auto can be disabled and enabled; naming its model_id is still refused', async () => {
    const disabled = await setEnabled('auto', false);
    expect([disabled.status, disabled.body.model_id, disabled.body.enabled]).toEqual([200, 'auto', false]);
    expect((await setEnabled('auto', true)).status).toBe(200);
    const named = await operator('patch', '/v1/models/auto', { model_id: 'auto', enabled: false });
    expect([named.status, named.body.code, named.body.details.issues[0].field]).toEqual([
      400,
      'INVALID_BODY',
      'model_id',
    ]);
  });

  it('a failover whose model was removed is kept by other patches, refused when written, and can be removed', async () => {
    const backup = { model_id: 'fo/backup', type: 'completion', provider_config: onMock };
    expect((await operator('post', '/v1/models', backup)).status).toBe(201);
    const main = { ...backup, model_id: 'fo/main', failover: 'fo/backup' };
    expect((await operator('post', '/v1/models', main)).status).toBe(201);
    // removed while the failover was being written (DELETE refuses a model another one fails over to)
    await models.deleteOne({ _id: 'fo/backup' });

    const disabled = await setEnabled('fo/main', false);
    expect([disabled.status, disabled.body.enabled, disabled.body.failover]).toEqual([
      200,
      false,
      'fo/backup',
    ]);
    const written = await operator('patch', '/v1/models/fo/main', { failover: 'fo/backup' });
    expect([written.status, written.body.details.issues]).toEqual([
      400,
      [{ field: 'failover', message: 'no model named fo/backup' }],
    ]);
    const cleared = await operator('patch', '/v1/models/fo/main', { failover: null });
    expect([cleared.status, cleared.body.failover]).toEqual([200, undefined]);
  });

  it('a model its provider cannot serve can be renamed and disabled; a new type is checked; its provider can take a new key', async () => {
    const renamed = await operator('patch', '/v1/models/old/claude-embed', {
      display: { name: 'Old embed' },
    });
    expect([renamed.status, renamed.body.display]).toEqual([200, { name: 'Old embed' }]);
    expect((await setEnabled('old/claude-embed', false)).status).toBe(200);
    const retyped = await operator('patch', '/v1/models/old/claude-embed', { type: 'image_generation' });
    expect([retyped.status, retyped.body.details.issues]).toEqual([
      400,
      [
        {
          field: 'provider_config.provider',
          message:
            'old/claude-embed is a model of type image_generation: provider claude (anthropic) has no image generation endpoint',
        },
      ],
    ]);
    const rotated = await operator('put', '/v1/providers/claude', {
      type: 'anthropic',
      baseUrl: 'https://anthropic.invalid',
      apiKey: 'k2',
    });
    expect([rotated.status, rotated.body.has_api_key]).toEqual([200, true]);
  });

  it('a member a later gateway dropped is kept by other patches and refused when written', async () => {
    const disabled = await setEnabled('old/ranked', false);
    expect([disabled.status, disabled.body.rank]).toEqual([200, 3]);
    const written = await operator('patch', '/v1/models/old/ranked', { rank: 4 });
    expect([written.status, written.body.details.issues]).toEqual([
      400,
      [{ field: 'rank', message: 'Unrecognized key: "rank"' }],
    ]);
  });

  it('next to a price above the bound, what a patch breaks elsewhere is refused and a removed price takes its default', async () => {
    // `deployments` is not written by the patch, but its problem is the patch's, not the stored entry's
    const both = await operator('patch', '/v1/models/old/pooled', { provider_config: onMock });
    expect([both.status, both.body.details.issues.map((i: { field: string }) => i.field)]).toEqual([
      400,
      ['deployments'],
    ]);
    const repriced = await operator('patch', '/v1/models/old/pooled', {
      pricing: { output_per_million: null, cached_input_per_million: 0.5 },
    });
    expect([repriced.status, repriced.body.pricing]).toEqual([
      200,
      { input_per_million: 1e308, output_per_million: 0, cached_input_per_million: 0.5 },
    ]);
    const stored = await models.findOne({ _id: 'old/pooled' });
    expect(stored?.pricing).toEqual(repriced.body.pricing);
  });
});
