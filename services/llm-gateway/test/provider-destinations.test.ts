import { type GatewayWorld, INTERNAL_SECRET, startGatewayWorld } from './support';

/**
 * Providers a platform administrator defines reach public addresses only: not the platform's own
 * services on loopback, the private network, nor the cloud metadata service. The operator's are not
 * restricted (the gateway file, the operator's credential on the gateway's own port).
 */
describe('where providers may connect', () => {
  let w: GatewayWorld;
  let admin: { bearer: string };
  let member: { bearer: string };

  beforeAll(async () => {
    w = await startGatewayWorld();
    admin = { bearer: (await w.platformAdmin()).token };
    member = { bearer: (await w.org('dest-org')).owner.token };
  }, 60_000);
  afterAll(() => w?.stop());

  const simPort = () => new URL(w.sim.openaiBaseUrl).port;
  const putProvider = (name: string, baseUrl: string) =>
    w.call('gateway', 'PUT', `/v1/providers/${name}`, admin, { type: 'openai', baseUrl, apiKey: 'sk-x' });
  const addModel = async (modelId: string, provider: string) => {
    const res = await w.call('gateway', 'POST', '/v1/models', admin, {
      model_id: modelId,
      type: 'completion',
      provider_config: { provider, model: 'gpt-sim' },
    });
    expect(res.status).toBe(201);
  };
  const ask = (model: string) =>
    w.call('gateway', 'POST', '/v1/chat/completions', member, {
      model,
      messages: [{ role: 'user', content: 'hello' }],
    });

  it('refuses a platform administrator a base URL naming a loopback, private or metadata address', async () => {
    for (const baseUrl of [
      'http://169.254.169.254/latest/meta-data/?',
      `http://127.0.0.1:${simPort()}/v1`,
      `http://[::ffff:127.0.0.1]:${simPort()}/v1`,
      'http://[::1]:9464/metrics?',
      'http://10.0.0.5/v1',
      'http://0.0.0.0:9464/',
      'file:///etc/passwd',
    ]) {
      const res = await putProvider('inside', baseUrl);
      expect([baseUrl, res.status, res.body.code]).toEqual([baseUrl, 400, 'PROVIDER_DESTINATION_REFUSED']);
    }
    const listed = await w.call('gateway', 'GET', '/v1/providers', admin);
    expect(listed.body.data.map((p: { name: string }) => p.name)).not.toContain('inside');
  });

  it('refuses the connection when a host name resolves to such an address, without reaching it', async () => {
    const put = await putProvider('by-name', `http://localhost:${simPort()}/v1`);
    expect([put.status, put.body.restricted]).toEqual([201, true]);
    await addModel('by-name/gpt', 'by-name');
    w.sim.reset();
    const res = await ask('by-name/gpt');
    expect([res.status, res.body.code, res.body.provider_error_type]).toEqual([
      502,
      'PROVIDER_ERROR',
      'destination_refused',
    ]);
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(w.sim.requests()).toHaveLength(0);
  });

  it("leaves the operator's providers unrestricted: a local server stays reachable", async () => {
    const res = await fetch(`${w.p.upstreams.llmGateway}/v1/providers/operator-local`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', 'x-platform-internal-secret': INTERNAL_SECRET },
      body: JSON.stringify({ type: 'openai', baseUrl: `http://127.0.0.1:${simPort()}/v1`, apiKey: 'sk-x' }),
    });
    expect(res.status).toBe(201);
    expect(((await res.json()) as { restricted?: boolean }).restricted).toBeUndefined();
    await addModel('operator-local/gpt', 'operator-local');
    expect((await ask('operator-local/gpt')).status).toBe(200);
    // a platform administrator replacing it makes it restricted again
    expect((await putProvider('operator-local', `http://localhost:${simPort()}/v1`)).status).toBe(200);
    expect((await ask('operator-local/gpt')).body.provider_error_type).toBe('destination_refused');
  });
});
