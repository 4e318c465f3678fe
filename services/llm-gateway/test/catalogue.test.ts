import { clearOfHourEnd } from '@platform/testkit';
import { type GatewayWorld, INTERNAL_SECRET, startGatewayWorld } from './support';

/** The model catalogue API through the edge: reads for every caller, writes for platform administrators. */
describe('model catalogue API', () => {
  let w: GatewayWorld;
  let admin: { userId: string; token: string };
  let member: { userId: string; token: string };

  const entry = (model_id: string, extra: Record<string, unknown> = {}) => ({
    model_id,
    type: 'completion',
    provider_config: { provider: 'mock', model: 'mock-chat' },
    pricing: { input_per_million: 1, output_per_million: 2 },
    ...extra,
  });

  beforeAll(async () => {
    w = await startGatewayWorld();
    admin = await w.platformAdmin();
    member = (await w.org('cat-org')).owner;
  }, 60_000);
  afterAll(() => w?.stop());

  it('models.list() of the openai SDK works, and the answer carries total, page and limit', async () => {
    const ids = [];
    for await (const m of w.client({ bearer: member.token }).models.list()) ids.push(m.id);
    expect(ids).toEqual(expect.arrayContaining(['sim/gpt', 'sim/embed', 'mock/chat']));
    const raw = await w.call('gateway', 'GET', '/v1/models?limit=2&page=1', { bearer: member.token });
    expect(raw.status).toBe(200);
    expect(raw.body).toMatchObject({ object: 'list', total: ids.length, page: 1, limit: 2 });
    expect(raw.body.data.map((m: { id: string }) => m.id)).toEqual(ids.slice(2, 4));
    const one = await w.call('gateway', 'GET', '/v1/models?model_ids=sim/gpt', { bearer: member.token });
    expect(one.body.data[0]).toMatchObject({
      id: 'sim/gpt',
      object: 'model',
      owned_by: 'sim',
      type: 'completion',
    });
    // provider details are for administrators only
    expect(one.body.data[0].provider_config).toBeUndefined();
    const tooMany = await w.call('gateway', 'GET', '/v1/models?limit=101', { bearer: member.token });
    expect(tooMany.status).toBe(400);
  });

  it('writes need a platform administrator or the operator credential', async () => {
    const refused = await w.call('gateway', 'POST', '/v1/models', { bearer: member.token }, entry('x/y'));
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('PLATFORM_ADMIN_REQUIRED');
    const anonymous = await w.call('gateway', 'POST', '/v1/models', null, entry('x/y'));
    expect(anonymous.status).toBe(401);
    const operator = await fetch(`${w.p.upstreams.llmGateway}/v1/models`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-platform-internal-secret': INTERNAL_SECRET },
      body: JSON.stringify(entry('operator/made')),
    });
    expect(operator.status).toBe(201);
  });

  it('creates, reads, patches and deletes models whose ids hold slashes and colons, sent unencoded', async () => {
    const as = { bearer: admin.token };
    for (const id of ['bedrock/anthropic.claude-3-haiku', 'eu.anthropic.claude-sonnet-4-20250514-v1:0']) {
      const created = await w.call('gateway', 'POST', '/v1/models', as, entry(id, { tags: ['new'] }));
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ model_id: id, enabled: true });
      const got = await w.call('gateway', 'GET', `/v1/models/${id}`, as);
      expect(got.status).toBe(200);
      expect(got.body).toMatchObject({ id, object: 'model', tags: ['new'] });
      // a member of an organization sees it too (no org_slugs: every organization)
      expect((await w.call('gateway', 'GET', `/v1/models/${id}`, { bearer: member.token })).status).toBe(200);
      const patched = await w.call('gateway', 'PATCH', `/v1/models/${id}`, as, {
        display: { name: 'Patched', brand: 'Anthropic' },
        tags: null,
      });
      expect(patched.status).toBe(200);
      expect(patched.body.display).toEqual({ name: 'Patched', brand: 'Anthropic' });
      expect(patched.body.tags).toBeUndefined();
      expect((await w.call('gateway', 'DELETE', `/v1/models/${id}`, as)).status).toBe(204);
      const gone = await w.call('gateway', 'GET', `/v1/models/${id}`, as);
      expect(gone.status).toBe(404);
      expect(gone.body.code).toBe('MODEL_NOT_FOUND');
    }
  });

  it('answers MISSING_MODEL_ID, MISSING_TYPE, MODEL_EXISTS and INVALID_BODY', async () => {
    const as = { bearer: admin.token };
    const { model_id: _m, ...noId } = entry('a/b');
    const { type: _t, ...noType } = entry('a/b');
    const missingId = await w.call('gateway', 'POST', '/v1/models', as, noId);
    expect([missingId.status, missingId.body.code]).toEqual([400, 'MISSING_MODEL_ID']);
    const missingType = await w.call('gateway', 'POST', '/v1/models', as, noType);
    expect([missingType.status, missingType.body.code]).toEqual([400, 'MISSING_TYPE']);
    const exists = await w.call('gateway', 'POST', '/v1/models', as, entry('sim/gpt'));
    expect([exists.status, exists.body.code]).toEqual([409, 'MODEL_EXISTS']);
    const badProvider = await w.call('gateway', 'POST', '/v1/models', as, {
      ...entry('c/d'),
      provider_config: { provider: 'nowhere', model: 'x' },
    });
    expect([badProvider.status, badProvider.body.code]).toEqual([400, 'INVALID_BODY']);
    expect(JSON.stringify(badProvider.body.details)).toContain('nowhere');
    const missing = await w.call('gateway', 'PATCH', '/v1/models/no/such:model', as, { enabled: false });
    expect([missing.status, missing.body.code]).toEqual([404, 'MODEL_NOT_FOUND']);
  });

  it('a price above a million is 400 INVALID_BODY: a near-infinite one blocked the organization for the month', async () => {
    const as = { bearer: admin.token };
    // 1e308 per million tokens made a request's cost Infinity, which the month's cost counter then held: every
    // later request of the organization was 429 MONTHLY_QUOTA_EXCEEDED
    const huge = await w.call('gateway', 'POST', '/v1/models', as, {
      ...entry('price/huge'),
      pricing: { input_per_million: 1e308, output_per_million: 1 },
    });
    expect([huge.status, huge.body.code, huge.body.details.issues[0].field]).toEqual([
      400,
      'INVALID_BODY',
      'pricing.input_per_million',
    ]);
    const top = await w.call('gateway', 'POST', '/v1/models', as, {
      ...entry('price/top'),
      pricing: { input_per_million: 1_000_000, output_per_million: 1_000_000 },
    });
    expect(top.status).toBe(201);
    const patched = await w.call('gateway', 'PATCH', '/v1/models/price/top', as, {
      pricing: { input_per_million: 1, output_per_million: 1e300 },
    });
    expect([patched.status, patched.body.details.issues[0].field]).toEqual([
      400,
      'pricing.output_per_million',
    ]);

    // the organization keeps being served, each request at a finite cost
    const client = w.client({ bearer: member.token });
    for (const content of ['one', 'two']) {
      const answer = await client.chat.completions.create({
        model: 'price/top',
        messages: [{ role: 'user', content }],
      });
      expect((answer.usage as unknown as { cost: number }).cost).toBeGreaterThan(0);
    }
    await w.call('gateway', 'DELETE', '/v1/models/price/top', as);
  });

  it('filters by type, enabled, model_ids, tags, visible_only, brand, search and capability', async () => {
    const as = { bearer: admin.token };
    const add = (id: string, extra: Record<string, unknown>) =>
      w.call('gateway', 'POST', '/v1/models', as, entry(id, extra));
    await add('filter/vision', {
      display: { name: 'Eagle Eye', brand: 'Acme' },
      capabilities: { vision: true, tools: true },
      tags: ['fast'],
    });
    await add('filter/hidden', { display: { name: 'Ghost', brand: 'Acme', hidden: true }, tags: ['slow'] });
    await add('filter/off', { enabled: false, display: { brand: 'Acme' } });
    const ids = async (query: string, who = as) =>
      (await w.call('gateway', 'GET', `/v1/models?${query}`, who)).body.data.map((m: { id: string }) => m.id);
    // an administrator outside any organization sees the whole catalogue, disabled models included
    expect(await ids('brand=acme')).toEqual(['filter/hidden', 'filter/off', 'filter/vision']);
    expect(await ids('brand=acme&orgSlug=all')).toEqual(['filter/hidden', 'filter/off', 'filter/vision']);
    // an organization's view: its usable models
    expect(await ids('brand=acme&orgSlug=cat-org')).toEqual(['filter/hidden', 'filter/vision']);
    expect(await ids('brand=acme&orgSlug=all&enabled=false')).toEqual(['filter/off']);
    expect(await ids('brand=acme&visible_only=true&orgSlug=cat-org')).toEqual(['filter/vision']);
    expect(await ids('search=EAGLE')).toEqual(['filter/vision']);
    expect(await ids('capability=vision,tools')).toEqual(['filter/vision']);
    expect(await ids('capability=vision,audio')).toEqual([]);
    expect(await ids('tags=slow,fast&brand=Acme')).toEqual(['filter/hidden', 'filter/vision']);
    expect(await ids('model_ids=filter/vision,sim/gpt')).toEqual(['filter/vision', 'sim/gpt']);
    expect(await ids('type=embeddings')).toEqual(['sim/embed']);
    // a member never sees disabled models, nor another organization's view
    expect(await ids('brand=acme&enabled=false', { bearer: member.token })).toEqual([]);
    const other = await w.call('gateway', 'GET', '/v1/models?orgSlug=all', { bearer: member.token });
    expect(other.status).toBe(403);
  });

  it("org_slugs offers a model to some organizations only; an administrator sees an org's view with orgSlug", async () => {
    const as = { bearer: admin.token };
    await w.call('gateway', 'POST', '/v1/models', as, entry('private/model', { org_slugs: ['vip-org'] }));
    const vip = (await w.org('vip-org')).owner;
    const seen = async (who: { bearer: string }, query = '') =>
      (await w.call('gateway', 'GET', `/v1/models?model_ids=private/model${query}`, who)).body.total;
    expect(await seen({ bearer: vip.token })).toBe(1);
    expect(await seen({ bearer: member.token })).toBe(0);
    expect(await seen(as, '&orgSlug=vip-org')).toBe(1);
    expect(await seen(as, '&orgSlug=cat-org')).toBe(0);
    // and the other organization cannot use it either
    const used = await w.call(
      'gateway',
      'POST',
      '/v1/chat/completions',
      { bearer: member.token },
      {
        model: 'private/model',
        messages: [{ role: 'user', content: 'hi' }],
      },
    );
    expect([used.status, used.body.code]).toEqual([404, 'MODEL_NOT_FOUND']);
    const usedByVip = await w.call(
      'gateway',
      'POST',
      '/v1/chat/completions',
      { bearer: vip.token },
      {
        model: 'private/model',
        messages: [{ role: 'user', content: 'hi' }],
      },
    );
    expect(usedByVip.status).toBe(200);
  });

  it('a disabled model is refused for inference until enabled again', async () => {
    const as = { bearer: admin.token };
    await w.call('gateway', 'POST', '/v1/models', as, entry('toggle/model'));
    const ask = () =>
      w.call(
        'gateway',
        'POST',
        '/v1/chat/completions',
        { bearer: member.token },
        {
          model: 'toggle/model',
          messages: [{ role: 'user', content: 'hi' }],
        },
      );
    expect((await ask()).status).toBe(200);
    await w.call('gateway', 'PATCH', '/v1/models/toggle/model', as, { enabled: false });
    expect((await ask()).status).toBe(404);
    await w.call('gateway', 'PATCH', '/v1/models/toggle/model', as, { enabled: true });
    expect((await ask()).status).toBe(200);
  });

  describe('PUT /v1/models (bulk replace)', () => {
    it('answers INVALID_BODY, INVALID_ITEMS with details, and 413 over 500 items', async () => {
      const as = { bearer: (await w.platformAdmin()).token };
      for (const body of [{}, { models: 'x' }, []]) {
        const r = await w.call('gateway', 'PUT', '/v1/models', as, body);
        expect([r.status, r.body.code]).toEqual([400, 'INVALID_BODY']);
      }
      const bad = await w.call('gateway', 'PUT', '/v1/models', as, {
        models: [
          entry('ok/one'),
          { model_id: 'no/type', provider_config: { provider: 'mock', model: 'm' } },
          entry('ok/one'),
          entry('bad/provider', { provider_config: { provider: 'nowhere', model: 'm' } }),
        ],
      });
      expect([bad.status, bad.body.code]).toEqual([400, 'INVALID_ITEMS']);
      expect(bad.body.details.items.map((i: { index: number }) => i.index)).toEqual([1, 2, 3]);
      expect(bad.body.details.items[0]).toMatchObject({ model_id: 'no/type' });
      const big = await w.call('gateway', 'PUT', '/v1/models', as, {
        models: Array.from({ length: 501 }, (_, i) => entry(`bulk/${i}`)),
      });
      expect([big.status, big.body.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
      // nothing changed
      expect((await w.call('gateway', 'GET', '/v1/models/sim/gpt', as)).status).toBe(200);
    });

    it('replaces the whole catalogue and answers {deleted, inserted}; the 6th replace in an hour is 429', async () => {
      const as = { bearer: (await w.platformAdmin()).token };
      // the six replaces in one calendar hour (the limit's window)
      await clearOfHourEnd();
      const before = (await w.call('gateway', 'GET', '/v1/models?orgSlug=all', as)).body.total;
      const exported = (await w.call('gateway', 'GET', '/v1/models?orgSlug=all', as)).body.data.map(
        ({ id: _i, object: _o, created: _c, owned_by: _b, ...e }: Record<string, unknown>) => e,
      );
      const replaced = await w.call('gateway', 'PUT', '/v1/models', as, {
        models: [...exported, entry('bulk/new')],
      });
      expect(replaced.status).toBe(200);
      expect(replaced.body).toEqual({ deleted: before, inserted: before + 1 });
      expect((await w.call('gateway', 'GET', '/v1/models/bulk/new', as)).status).toBe(200);
      for (let i = 2; i <= 5; i++)
        expect((await w.call('gateway', 'PUT', '/v1/models', as, { models: exported })).status).toBe(200);
      const limited = await w.call('gateway', 'PUT', '/v1/models', as, { models: exported });
      expect([limited.status, limited.body.code]).toEqual([429, 'RATE_LIMITED']);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await w.call('gateway', 'GET', '/v1/models/bulk/new', as)).status).toBe(404);
      // another administrator has a budget of its own
      const other = { bearer: (await w.platformAdmin()).token };
      expect((await w.call('gateway', 'PUT', '/v1/models', other, { models: exported })).status).toBe(200);
    });
  });

  it('a wrong method is 405 METHOD_NOT_ALLOWED with Allow', async () => {
    const r = await w.call('gateway', 'DELETE', '/v1/models', { bearer: admin.token });
    expect([r.status, r.body.code]).toEqual([405, 'METHOD_NOT_ALLOWED']);
    expect(r.headers.get('allow')).toBe('GET, HEAD, POST, PUT');
    const one = await w.call('gateway', 'POST', '/v1/models/sim/gpt', { bearer: admin.token }, {});
    expect([one.status, one.headers.get('allow')]).toEqual([405, 'GET, HEAD, PATCH, DELETE']);
  });
});
