import { APIError } from 'openai';
import { type GatewayWorld, startGatewayWorld } from './support';

/**
 * The models an organization API key may use (`models.by_api_key`, decision 0118), as a platform team gives each
 * application a key limited to the models it was approved for: the key's list narrows the organization's `allowed`,
 * for the key alone, in every way a model is chosen (asked, default, downgrade, failover) and in the model list.
 */
describe('the models an organization API key may use, through the edge', () => {
  let w: GatewayWorld;
  beforeAll(async () => {
    w = await startGatewayWorld();
  });
  afterAll(() => w?.stop());

  const chat = (as: { bearer: string } | { apiKey: string }, model: string | undefined) =>
    w.call('gateway', 'POST', '/v1/chat/completions', as, {
      ...(model === undefined ? {} : { model }),
      messages: [{ role: 'user', content: 'hello' }],
    });

  it("hold the key to its list (MODEL_NOT_ALLOWED, scope api_key), leave other keys and users to the organization's, and list only its models", async () => {
    const { owner } = await w.org('key-models');
    const as = { bearer: owner.token };
    const app = await w.orgKey(owner, 'key-models', 'app');
    const other = await w.orgKey(owner, 'key-models', 'other');
    const set = await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      models: { by_api_key: { [app.id]: ['sim/cheap', 'sim/embed'] } },
    });
    expect(set.status).toBe(200);
    expect(set.body.models.by_api_key).toEqual({ [app.id]: ['sim/cheap', 'sim/embed'] });

    // the application, with the official SDK
    const client = w.client({ apiKey: app.apiKey });
    const answer = await client.chat.completions.create({
      model: 'sim/cheap',
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(answer.model).toBe('sim/cheap');
    const calls = w.sim.requests().length;
    const refused = await client.chat.completions
      .create({ model: 'sim/gpt', messages: [{ role: 'user', content: 'hello' }] })
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(refused).toBeInstanceOf(APIError);
    expect((refused as APIError).status).toBe(403);
    expect(w.sim.requests().length).toBe(calls);
    const envelope = await chat({ apiKey: app.apiKey }, 'sim/gpt');
    expect(envelope.body).toMatchObject({
      code: 'MODEL_NOT_ALLOWED',
      status: 403,
      model: 'sim/gpt',
      details: { scope: 'api_key' },
      message: expect.stringMatching(/^This API key may not use the model sim\/gpt/),
    });
    // embeddings and the model list follow the same list
    const embedded = await client.embeddings.create({ model: 'sim/embed', input: 'hello' });
    expect(embedded.data).toHaveLength(1);
    const listed = [];
    for await (const model of client.models.list()) listed.push(model.id);
    expect(listed.sort()).toEqual(['sim/cheap', 'sim/embed']);
    expect((await w.call('gateway', 'GET', '/v1/models/sim/gpt', { apiKey: app.apiKey })).status).toBe(404);
    // Anthropic's count_tokens resolves the model as a message would
    const counted = await w.call(
      'gateway',
      'POST',
      '/v1/messages/count_tokens',
      { apiKey: app.apiKey },
      { model: 'sim/claude', messages: [{ role: 'user', content: 'hello' }] },
    );
    expect(counted.status).toBe(403);
    expect(counted.body.error).toMatchObject({ type: 'permission_error' });

    // another key of the organization, and its members, keep every model the organization allows
    expect((await chat({ apiKey: other.apiKey }, 'sim/gpt')).status).toBe(200);
    expect((await chat(as, 'sim/gpt')).status).toBe(200);
    const theirs = await w.call('gateway', 'GET', '/v1/models', { apiKey: other.apiKey });
    expect(theirs.body.data.map((m: { id: string }) => m.id)).toContain('sim/gpt');

    // a model the organization itself does not allow stays the organization's refusal, even when the key lists it
    await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      models: { allowed: ['sim/gpt', 'sim/embed'] },
    });
    const byOrg = await chat({ apiKey: app.apiKey }, 'sim/cheap');
    expect(byOrg.body).toMatchObject({ code: 'MODEL_NOT_ALLOWED', details: { scope: 'org' } });
    expect(byOrg.body.message).toBe('The organization does not allow the model sim/cheap');
    const narrowed = await w.call('gateway', 'GET', '/v1/models', { apiKey: app.apiKey });
    expect(narrowed.body.data.map((m: { id: string }) => m.id)).toEqual(['sim/embed']);

    // an empty list: the key may use no model; removing its entry gives it the organization's models back
    await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      models: { allowed: null, by_api_key: { [app.id]: [] } },
    });
    expect((await chat({ apiKey: app.apiKey }, 'sim/cheap')).status).toBe(403);
    await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      models: { by_api_key: { [app.id]: null } },
    });
    expect((await chat({ apiKey: app.apiKey }, 'sim/gpt')).status).toBe(200);
  });

  it("choose only the key's models for a default, a soft downgrade and a failover", async () => {
    const { owner } = await w.org('key-models-choice');
    const as = { bearer: owner.token };
    const app = await w.orgKey(owner, 'key-models-choice', 'app');
    await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      models: {
        defaults: { completions: 'sim/gpt' },
        downgrade: { 'sim/gpt': 'sim/cheap' },
        by_api_key: { [app.id]: ['sim/cheap', 'sim/flaky'] },
      },
    });
    // the organization's default is not the key's: refused under hard_block, named in the refusal
    const byDefault = await chat({ apiKey: app.apiKey }, undefined);
    expect(byDefault.body).toMatchObject({ code: 'MODEL_NOT_ALLOWED', model: 'sim/gpt' });
    const defaults = () => w.call('gateway', 'GET', '/v1/defaults', { apiKey: app.apiKey });
    expect((await defaults()).body.completions).toBeNull();
    expect((await w.call('gateway', 'GET', '/v1/defaults', as)).body.completions.model_id).toBe('sim/gpt');
    // under soft_downgrade the mapped model serves, as the organization's refusals are served
    await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, { policy: 'soft_downgrade' });
    const mapped = await chat({ apiKey: app.apiKey }, undefined);
    expect(mapped.status).toBe(200);
    expect(mapped.headers.get('x-platform-model-downgraded')).toBe('sim/gpt -> sim/cheap');
    expect(mapped.body.model).toBe('sim/cheap');
    expect((await defaults()).body.completions).toMatchObject({
      model_id: 'sim/cheap',
      downgraded_from: 'sim/gpt',
    });
    // a downgrade target outside the key's list is no way out
    await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      models: { by_api_key: { [app.id]: ['sim/flaky'] } },
    });
    expect((await chat({ apiKey: app.apiKey }, 'sim/gpt')).body).toMatchObject({
      code: 'MODEL_NOT_ALLOWED',
      details: { scope: 'api_key' },
    });

    // sim/flaky fails over to sim/cheap, which the key may no longer use: the provider's error stands
    w.sim.script([{ match: { model: 'flaky-sim' }, error: { status: 500 } }]);
    try {
      const keyCalls = w.sim.requests().length;
      const failed = await chat({ apiKey: app.apiKey }, 'sim/flaky');
      expect(failed.status).toBe(502);
      expect(
        w.sim
          .requests()
          .slice(keyCalls)
          .map((r) => r.model),
      ).not.toContain('cheap-sim');
      // the owner, with every model, fails over
      const served = await chat(as, 'sim/flaky');
      expect(served.status).toBe(200);
      expect(served.body.model).toBe('sim/cheap');
    } finally {
      w.sim.script([]);
    }
  });

  it('refuses a key over its month rather than downgrade it to a model outside its list; downgrades within it', async () => {
    const { owner } = await w.org('key-budget-downgrade');
    const as = { bearer: owner.token };
    const app = await w.orgKey(owner, 'key-budget-downgrade', 'app');
    const set = await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      policy: 'soft_downgrade',
      models: { downgrade: { 'sim/gpt': 'sim/cheap' }, by_api_key: { [app.id]: ['sim/gpt'] } },
      org_user_quotas: { by_api_key: { [app.id]: { monthly_tokens: 1 } } },
    });
    expect(set.status).toBe(200);
    const chat = () =>
      w.call(
        'gateway',
        'POST',
        '/v1/chat/completions',
        { apiKey: app.apiKey },
        {
          model: 'sim/gpt',
          messages: [{ role: 'user', content: 'hello' }],
        },
      );
    // a month of 1 token: the prompt alone is over it
    const before = w.sim.requests().length;
    const refused = await chat();
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'MONTHLY_QUOTA_EXCEEDED', details: { scope: 'api_key' } });
    expect(w.sim.requests().length).toBe(before);

    // the downgrade's model in the key's list: the budget downgrades to it
    await w.call('gateway', 'PATCH', '/v1/quotas/settings', as, {
      models: { by_api_key: { [app.id]: ['sim/gpt', 'sim/cheap'] } },
    });
    const downgraded = await chat();
    expect(downgraded.status).toBe(200);
    expect(downgraded.body.model).toBe('sim/cheap');
    expect(downgraded.headers.get('x-platform-model-downgraded')).toBe('sim/gpt -> sim/cheap');
  });
});
