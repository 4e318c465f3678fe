import { createInProcessBus } from '@platform/bus';
import request from 'supertest';
import type { OrgGatewaySettings } from '../src/quota/org-settings';
import {
  fakeQuota,
  orgSettings,
  ownerHeaders,
  startGatewayService,
  thisMonthStart,
} from './gateway-instance';

/**
 * A model restricted to some organizations (`org_slugs`) does not exist for the others, wherever their request
 * would reach it: the model asked for, the organization's default, the platform's default, a governance
 * downgrade and a monthly-budget downgrade (decision 0105). Each answer is the one a model missing from the
 * catalogue gets, so nothing tells another organization it exists.
 */
describe("another organization's restricted model", () => {
  const bus = createInProcessBus();

  const chat = (model: string) => ({
    model_id: model,
    type: 'completion',
    provider_config: { provider: 'mock', model: 'mock-chat' },
  });
  const file = {
    providers: [{ name: 'mock', type: 'mock' }],
    models: [
      chat('open/chat'),
      chat('open/cheap'),
      { ...chat('acme/private'), org_slugs: ['acme'] },
      { ...chat('shared/private'), org_slugs: ['acme', 'initech'] },
      { ...chat('open/resilient'), failover: 'acme/private' },
      {
        model_id: 'acme/embed',
        type: 'embeddings',
        provider_config: { provider: 'mock', model: 'mock-embeddings' },
        org_slugs: ['acme'],
      },
    ],
    // the platform's default embeddings model is acme's alone: for every other organization there is none
    defaults: { completions: 'open/chat', embeddings: 'acme/embed' },
  };

  /** each organization's settings as llm-quota answers them; a test sets its own */
  const settings = new Map<string, OrgGatewaySettings>();
  let gateway: Awaited<ReturnType<typeof startGatewayService>>;

  beforeAll(async () => {
    gateway = await startGatewayService({
      file,
      bus,
      fetch: fakeQuota((slug) => settings.get(slug)),
      env: { LLM_GATEWAY_SETTINGS_TTL_MS: '0' },
    });
  }, 30_000);
  afterAll(async () => {
    await gateway?.stop();
    await bus.close();
  });

  const post = (org: string, route: string, body: Record<string, unknown>) =>
    request(gateway.service.handler).post(route).set(ownerHeaders(org)).send(body);
  const ask = (org: string, model?: string) =>
    post(org, '/v1/chat/completions', {
      ...(model === undefined ? {} : { model }),
      messages: [{ role: 'user', content: 'hello' }],
    });
  /** what a caller learns from an answer, the model's id written as MODEL */
  const seen = (res: request.Response, id: string) => ({
    status: res.status,
    body: JSON.parse(
      JSON.stringify(res.body, (k, v) => (k === 'requestId' ? undefined : v)).replaceAll(id, 'MODEL'),
    ),
  });

  it('asked for by name, it answers as a model that does not exist; its own organization is served', async () => {
    settings.set('globex', orgSettings('globex'));
    settings.set('acme', orgSettings('acme'));
    const restricted = await ask('globex', 'acme/private');
    expect(restricted.status).toBe(404);
    expect(seen(restricted, 'acme/private')).toEqual(seen(await ask('globex', 'no/such'), 'no/such'));
    expect((await ask('acme', 'acme/private')).status).toBe(200);
  });

  it('the model list names neither the other organizations a model is offered to nor a failover to it', async () => {
    settings.set('globex', orgSettings('globex'));
    settings.set('acme', orgSettings('acme'));
    const list = (org: string) => request(gateway.service.handler).get('/v1/models').set(ownerHeaders(org));
    const theirs = await list('globex');
    expect(theirs.status).toBe(200);
    expect(theirs.body.data.map((m: { id: string }) => m.id)).toContain('open/resilient');
    expect(JSON.stringify(theirs.body)).not.toContain('acme');
    const own = await list('acme');
    expect(own.body.data.map((m: { id: string }) => m.id)).toContain('shared/private');
    expect(JSON.stringify(own.body)).not.toContain('initech');
  });

  it("as the organization's default, it answers as a default that does not exist", async () => {
    settings.set('globex', orgSettings('globex', { models: { defaults: { completions: 'acme/private' } } }));
    const restricted = await ask('globex');
    settings.set('globex', orgSettings('globex', { models: { defaults: { completions: 'no/such' } } }));
    const missing = await ask('globex');
    expect(restricted.status).toBe(404);
    expect(seen(restricted, 'acme/private')).toEqual(seen(missing, 'no/such'));
  });

  it("as the platform's default, it is no default for the others", async () => {
    settings.set('globex', orgSettings('globex'));
    settings.set('acme', orgSettings('acme'));
    const other = await post('globex', '/v1/embeddings', { input: 'hello' });
    expect(other.status).toBe(400);
    expect(other.body).toMatchObject({
      code: 'INVALID_BODY',
      details: { issues: [{ field: 'model', message: 'required' }] },
    });
    expect(JSON.stringify(other.body)).not.toContain('acme/embed');
    const own = await post('acme', '/v1/embeddings', { input: 'hello' });
    expect(own.status).toBe(200);
    expect(own.body.model).toBe('acme/embed');
  });

  it('a governance downgrade (soft_downgrade) never lands on it', async () => {
    const governed = (to: string) =>
      orgSettings('globex', {
        policy: 'soft_downgrade',
        models: { allowed: ['open/cheap', to], downgrade: { 'open/chat': to } },
      });
    settings.set('globex', governed('acme/private'));
    const restricted = await ask('globex', 'open/chat');
    settings.set('globex', governed('no/such'));
    const missing = await ask('globex', 'open/chat');
    expect(restricted.status).toBe(403);
    expect(seen(restricted, 'acme/private')).toEqual(seen(missing, 'no/such'));
  });

  it('over the monthly budget, the downgrade map never lands on it: the budget answers as for an unknown model', async () => {
    const overBudget = (org: string, to: string) =>
      orgSettings(org, {
        policy: 'soft_downgrade',
        limits: { 'llm.monthly_tokens': 100 },
        month: { start: thisMonthStart(), tokens: 1_000, cost: 0 },
        models: { downgrade: { 'open/chat': to } },
      });
    settings.set('globex', overBudget('globex', 'acme/private'));
    const restricted = await ask('globex', 'open/chat');
    settings.set('globex', overBudget('globex', 'no/such'));
    const missing = await ask('globex', 'open/chat');
    expect(restricted.status).toBe(429);
    expect(restricted.body.code).toBe('MONTHLY_QUOTA_EXCEEDED');
    expect(seen(restricted, 'acme/private')).toEqual(seen(missing, 'no/such'));

    // the organization it is offered to is sent there
    settings.set('acme', overBudget('acme', 'acme/private'));
    const own = await ask('acme', 'open/chat');
    expect(own.status).toBe(200);
    expect(own.headers['x-platform-model-downgraded']).toBe('open/chat -> acme/private');
  });
});
