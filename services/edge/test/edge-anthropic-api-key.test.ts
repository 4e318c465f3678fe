import { ManualClock } from '@platform/kernel';
import {
  accessToken,
  type Backends,
  bearer,
  forwardedPrincipal,
  orgKey,
  principalOf,
  request,
  startBackends,
  startEdge,
  type TestEdge,
} from './support';

/**
 * Anthropic's SDKs send their key as `x-api-key`. On the routes of Anthropic's Messages API, and there alone, the
 * edge takes an organization API key from it, and never forwards the header (llm-gateway decision 0111).
 */
describe('an organization API key in x-api-key', () => {
  let services: Backends;
  let clock: ManualClock;
  let edge: TestEdge;

  beforeEach(async () => {
    services = await startBackends();
    clock = new ManualClock('2026-11-27T10:00:00Z');
    edge = await startEdge({ ...services.urls, clock });
  });
  afterEach(async () => {
    await edge.close();
    await services.close();
  });

  const member = (kind: 'org_api_key' | 'access_token') =>
    principalOf({
      kind,
      userId: kind === 'org_api_key' ? null : 'u-1',
      org: { slug: 'acme', permissions: ['models:read'] },
    });
  const valid = (credential: string, kind: 'org_api_key' | 'access_token' = 'org_api_key') =>
    services.auth.state.answers.set(credential, () => ({
      principal: member(kind),
      expiresAt: null,
      cacheTtlSeconds: 30,
    }));
  const post = (path: string, headers: Record<string, string>) =>
    request(edge.url, `/llm${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: '{}',
    });

  it('authenticates /v1/messages and /v1/messages/count_tokens with it, and the header goes no further', async () => {
    const key = orgKey('acme');
    valid(key);
    for (const path of ['/v1/messages', '/v1/messages/count_tokens', '/V1/Messages/']) {
      const answer = await post(path, { 'x-api-key': key });
      expect({ path, status: answer.status }).toEqual({ path, status: 200 });
      expect(answer.json.headers['x-api-key']).toBeUndefined();
      expect(forwardedPrincipal(answer, clock)?.credential).toMatchObject({ kind: 'org_api_key' });
    }
    expect(services.auth.state.principalCalls.at(-1)).toEqual({ credential: { kind: 'api_key', key } });
  });

  it('is no credential on any other route: chat completions and the Responses API refuse it', async () => {
    const key = orgKey('acme');
    valid(key);
    for (const path of ['/v1/chat/completions', '/v1/responses', '/v1/messages/other']) {
      const answer = await post(path, { 'x-api-key': key });
      expect({ path, status: answer.status }).toEqual({ path, status: 401 });
    }
    expect(services.auth.state.principalCalls).toHaveLength(0);
  });

  it('takes the same key twice as one, and refuses two different credentials', async () => {
    const key = orgKey('acme');
    valid(key);
    const twice = await post('/v1/messages', { 'x-api-key': key, 'x-platform-api-key': key });
    expect(twice.status).toBe(200);
    const asBearerToo = await post('/v1/messages', { 'x-api-key': key, ...bearer(key) });
    expect(asBearerToo.status).toBe(200);

    const other = orgKey('acme');
    valid(other);
    const twoKeys = await post('/v1/messages', { 'x-api-key': key, 'x-platform-api-key': other });
    expect(twoKeys.status).toBe(401);
    expect(twoKeys.json.message).toMatch(/Send one API key/);
    const token = accessToken();
    valid(token, 'access_token');
    const keyAndToken = await post('/v1/messages', { 'x-api-key': key, ...bearer(token) });
    expect(keyAndToken.status).toBe(401);
    expect(keyAndToken.json.message).toMatch(/Send one credential/);
  });

  it("ignores a value that is no organization key beside a Bearer token, and says where a user's credential goes when alone", async () => {
    const token = accessToken();
    valid(token, 'access_token');
    // a client's placeholder key beside its real credential (the SDK with apiKey and authToken)
    const withBearer = await post('/v1/messages', { 'x-api-key': 'sk-ant-placeholder', ...bearer(token) });
    expect(withBearer.status).toBe(200);
    expect(withBearer.json.headers['x-api-key']).toBeUndefined();
    expect(forwardedPrincipal(withBearer, clock)?.user.id).toBe('u-1');

    const alone = await post('/v1/messages', { 'x-api-key': token });
    expect(alone.status).toBe(401);
    expect(alone.json.message).toMatch(/Authorization: Bearer/);
    const malformed = await post('/v1/messages', { 'x-api-key': 'iak_acme_not-a-uuid' });
    expect(malformed.status).toBe(401);
    expect(malformed.json.message).toBe('Malformed API key');
  });
});
