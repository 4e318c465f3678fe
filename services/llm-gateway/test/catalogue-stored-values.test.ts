import { createInProcessBus } from '@platform/bus';
import { createEmbeddedStore, type Doc } from '@platform/store';
import request from 'supertest';
import { fakeQuota, orgSettings, startGatewayService } from './gateway-instance';
import { INTERNAL_SECRET } from './support';

/**
 * Catalogue entries holding what today's rules refuse: written before a rule existed (a model named `auto`, an
 * embeddings model on an Anthropic provider, a member since dropped, a price above the bound) or left so by another
 * change (a failover whose model was removed). A patch that leaves such a value alone succeeds and keeps it as
 * stored, the operator CLI's `models enable|disable` among them; what a patch writes inside, around or over such a
 * value is validated as ever, so no patch stores a new refused value.
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
  const patch = (id: string, body: object) => operator('patch', `/v1/models/${id}`, body);
  /** what `pnpm platform models enable|disable` sends */
  const setEnabled = (id: string, enabled: boolean) =>
    operator('patch', `/v1/models/${encodeURIComponent(id)}`, { enabled });
  /** a model document as an older gateway wrote it, straight into the store */
  const storeOld = (_id: string, doc: Record<string, unknown>) =>
    models.insertOne({ _id, enabled: true, source: 'api', updatedAt: new Date(), ...doc });
  /** a model document as stored, without its bookkeeping */
  const stored = async (id: string) => {
    const { _id, updatedAt: _u, revision: _r, source: _s, ...doc } = (await models.findOne({ _id: id }))!;
    return doc;
  };
  /** the fields a 400 names */
  const fields = (res: request.Response) => res.body.details?.issues?.map((i: { field: string }) => i.field);
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
    const named = await patch('auto', { model_id: 'auto', enabled: false });
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
    const written = await patch('fo/main', { failover: 'fo/backup' });
    expect([written.status, written.body.details.issues]).toEqual([
      400,
      [{ field: 'failover', message: 'no model named fo/backup' }],
    ]);
    const cleared = await patch('fo/main', { failover: null });
    expect([cleared.status, cleared.body.failover]).toEqual([200, undefined]);
  });

  it('a model its provider cannot serve can be renamed and disabled; a new type is checked; its provider can take a new key', async () => {
    const renamed = await patch('old/claude-embed', {
      display: { name: 'Old embed' },
    });
    expect([renamed.status, renamed.body.display]).toEqual([200, { name: 'Old embed' }]);
    expect((await setEnabled('old/claude-embed', false)).status).toBe(200);
    const retyped = await patch('old/claude-embed', { type: 'image_generation' });
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
    const written = await patch('old/ranked', { rank: 4 });
    expect([written.status, written.body.details.issues]).toEqual([
      400,
      [{ field: 'rank', message: 'Unrecognized key: "rank"' }],
    ]);
  });

  it('next to a price above the bound, what a patch breaks elsewhere is refused and a removed price takes its default', async () => {
    // `deployments` is not written by the patch, but its problem is the patch's, not the stored entry's
    const both = await patch('old/pooled', { provider_config: onMock });
    expect([both.status, both.body.details.issues.map((i: { field: string }) => i.field)]).toEqual([
      400,
      ['deployments'],
    ]);
    const repriced = await patch('old/pooled', {
      pricing: { output_per_million: null, cached_input_per_million: 0.5 },
    });
    expect([repriced.status, repriced.body.pricing]).toEqual([
      200,
      { input_per_million: 1e308, output_per_million: 0, cached_input_per_million: 0.5 },
    ]);
    const stored = await models.findOne({ _id: 'old/pooled' });
    expect(stored?.pricing).toEqual(repriced.body.pricing);
  });

  it('a price written next to a kept price above the bound is validated, the kept one stays; writing or removing the kept one is validated', async () => {
    await storeOld('rv/priced', {
      type: 'completion',
      provider_config: onMock,
      pricing: { input_per_million: 1, output_per_million: 1e308 },
    });
    const input = await patch('rv/priced', { pricing: { input_per_million: 5 } });
    expect([input.status, input.body.pricing]).toEqual([
      200,
      { input_per_million: 5, output_per_million: 1e308 },
    ]);
    const bad = await patch('rv/priced', { pricing: { input_per_million: -1 } });
    expect([bad.status, fields(bad)]).toEqual([400, ['pricing.input_per_million']]);
    const whole = await patch('rv/priced', { pricing: { input_per_million: 5, output_per_million: 1e308 } });
    expect([whole.status, fields(whole)]).toEqual([400, ['pricing.output_per_million']]);
    const dropped = await patch('rv/priced', { pricing: null });
    expect([dropped.status, dropped.body.pricing]).toEqual([
      200,
      { input_per_million: 0, output_per_million: 0 },
    ]);
  });

  it('a header written next to a kept malformed header is validated; the malformed one is kept, refused when written, gone when removed', async () => {
    await storeOld('rv/headers', {
      type: 'completion',
      provider_config: { ...onMock, headers: { 'x-old': 5 } },
    });
    const added = await patch('rv/headers', { provider_config: { headers: { 'x-new': 'v' } } });
    expect([added.status, added.body.provider_config.headers]).toEqual([200, { 'x-old': 5, 'x-new': 'v' }]);
    const badNew = await patch('rv/headers', { provider_config: { headers: { 'x-bad': 7 } } });
    expect([badNew.status, fields(badNew)]).toEqual([400, ['provider_config.headers.x-bad']]);
    const inside = await patch('rv/headers', {
      provider_config: { headers: { 'x-old': { required: true } } },
    });
    expect([inside.status, fields(inside)]).toEqual([400, ['provider_config.headers.x-old']]);
    const removed = await patch('rv/headers', { provider_config: { headers: { 'x-old': null } } });
    expect([removed.status, removed.body.provider_config.headers]).toEqual([200, { 'x-new': 'v' }]);
  });

  it('an empty object over a kept value replaces it, so it is validated: no patch stores a new refused value', async () => {
    await storeOld('rv/ranked', { type: 'completion', provider_config: onMock, rank: 3 });
    const emptied = await patch('rv/ranked', { rank: {} });
    expect([emptied.status, fields(emptied)]).toEqual([400, ['rank']]);
    expect((await stored('rv/ranked')).rank).toBe(3);
    // an empty object over an object writes nothing: the kept price stays, the patch succeeds
    await storeOld('rv/priced-empty', {
      type: 'completion',
      provider_config: onMock,
      pricing: { input_per_million: 1, output_per_million: 1e308 },
    });
    expect((await patch('rv/priced-empty', { pricing: {}, enabled: false })).status).toBe(200);
  });

  it('an empty object over a kept malformed header replaces it, so it is validated', async () => {
    await storeOld('rv/header-object', {
      type: 'completion',
      provider_config: { ...onMock, headers: { 'x-old': 5 } },
    });
    const header = await patch('rv/header-object', { provider_config: { headers: { 'x-old': {} } } });
    expect([header.status, fields(header)]).toEqual([400, ['provider_config.headers.x-old']]);
    expect((await stored('rv/header-object')).provider_config).toEqual({
      ...onMock,
      headers: { 'x-old': 5 },
    });
  });

  it('a model another one fails over to is not removed: 409 naming them; once they fail over elsewhere it is', async () => {
    const backup = { model_id: 'rv/backup', type: 'completion', provider_config: onMock };
    expect((await operator('post', '/v1/models', backup)).status).toBe(201);
    for (const model_id of ['rv/main-a', 'rv/main-b', 'rv/other'])
      expect(
        (await operator('post', '/v1/models', { ...backup, model_id, failover: 'rv/backup' })).status,
      ).toBe(201);
    // a model naming itself is left to its own removal
    expect((await patch('rv/backup', { failover: 'rv/backup' })).status).toBe(200);
    expect((await operator('delete', '/v1/models/rv/other')).status).toBe(204);
    const refused = await operator('delete', '/v1/models/rv/backup');
    expect([refused.status, refused.body.code, refused.body.details.models.sort()]).toEqual([
      409,
      'MODEL_IN_USE',
      ['rv/main-a', 'rv/main-b'],
    ]);
    expect(await models.findOne({ _id: 'rv/backup' })).not.toBeNull();
    expect((await patch('rv/main-a', { failover: null })).status).toBe(200);
    expect((await patch('rv/main-b', { failover: 'rv/main-a' })).status).toBe(200);
    expect((await operator('delete', '/v1/models/rv/backup')).status).toBe(204);
  });

  it('two patches at once both land, each over the other’s version', async () => {
    await storeOld('rv/race', {
      type: 'completion',
      provider_config: onMock,
      pricing: { input_per_million: 1, output_per_million: 1e308 },
    });
    const [a, b] = await Promise.all([
      patch('rv/race', { display: { name: 'A' } }),
      patch('rv/race', { tags: ['b'] }),
    ]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(await stored('rv/race')).toMatchObject({
      display: { name: 'A' },
      tags: ['b'],
      pricing: { input_per_million: 1, output_per_million: 1e308 },
    });
  });

  it('a provider replacement that loses an endpoint a model needs is refused; the same replacement twice is the same provider', async () => {
    const embed = {
      model_id: 'rv/embed',
      type: 'embeddings',
      provider_config: { provider: 'oai', model: 'e' },
    };
    const oai = { type: 'openai', baseUrl: 'https://openai.invalid', apiKey: 'k' };
    expect((await operator('put', '/v1/providers/oai', oai)).status).toBe(201);
    expect((await operator('post', '/v1/models', embed)).status).toBe(201);
    const lost = await operator('put', '/v1/providers/oai', {
      type: 'anthropic',
      baseUrl: 'https://anthropic.invalid',
      apiKey: 'k',
    });
    expect([lost.status, lost.body.details.issues.map((i: { model_id: string }) => i.model_id)]).toEqual([
      400,
      ['rv/embed'],
    ]);
    const again = await operator('put', '/v1/providers/oai', oai);
    const twice = await operator('put', '/v1/providers/oai', oai);
    const view = ({ updatedAt: _u, ...rest }: Record<string, unknown>) => rest;
    expect([again.status, twice.status]).toEqual([200, 200]);
    expect(view(twice.body)).toEqual(view(again.body));
  });

  it('a provider replaced by one of another kind lacking only what the stored one already lacked is not refused', async () => {
    const anthropic = { type: 'anthropic', baseUrl: 'https://anthropic.invalid', apiKey: 'k' };
    expect((await operator('put', '/v1/providers/rv-claude', anthropic)).status).toBe(201);
    // before the catalogue checked endpoints: native rerank on a provider without it
    await storeOld('rv/reranked', {
      type: 'completion',
      provider_config: { provider: 'rv-claude', model: 'c' },
      native_rerank: true,
    });
    const azure = {
      type: 'openai',
      baseUrl: 'https://azure.invalid',
      apiKey: 'k',
      azure: { apiVersion: '2024-10-21' },
    };
    const moved = await operator('put', '/v1/providers/rv-claude', azure);
    expect([moved.status, moved.body.details]).toEqual([200, undefined]);
  });
});
