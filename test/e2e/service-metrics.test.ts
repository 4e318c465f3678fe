import { hasMetric, metricSum, waitFor } from '@platform/testkit';
import {
  GIBBERISH,
  travelEntities,
  travelIntents,
} from '../../services/legacy-agent/test/support/travel-assistant';
import { callJson, type JsonReply, startTestPlatform, type TestPlatform } from '../harness';

/**
 * The metrics of auth and legacy-agent, and the dependencies every service reports, after real traffic
 * through the edge (docs/decisions/0097). The gateway's own are in services/llm-gateway/test/metrics*.test.ts.
 */
describe('service metrics through the edge', () => {
  let p: TestPlatform;
  beforeAll(async () => {
    p = await startTestPlatform({
      env: {
        LEGACY_V1_RETIREMENT_DATE: '2099-01-01',
        LOGIN_ACCOUNT_MAX_FAILURES: '3',
        // the first message waits for the first model: on a loaded machine training takes longer than the 10 s default
        LEGACY_FIRST_MODEL_WAIT_MS: '90000',
      },
    });
  });
  afterAll(() => p?.stop());

  const scrape = async (service: keyof TestPlatform['admin']) =>
    (await fetch(`${p.admin[service]}/metrics`)).text();

  it('every service reports its dependencies as up', async () => {
    const expected = {
      edge: ['jwks', 'bus'],
      auth: ['store', 'bus'],
      llmGateway: ['store', 'bus'],
      llmQuota: ['store', 'bus'],
      legacyAgent: ['store'],
    } as const;
    for (const [service, dependencies] of Object.entries(expected)) {
      const text = await scrape(service as keyof typeof expected);
      for (const dependency of dependencies) expect(metricSum(text, 'dependency_up', { dependency })).toBe(1);
    }
  });

  it('auth counts password sign-ins by result: success, wrong password, and the throttle', async () => {
    const logins = (text: string, result: string) =>
      metricSum(text, 'auth_password_logins_total', { result });
    const email = 'metrics@example.com';
    const password = 'correct horse battery';
    const signup = await callJson(`${p.baseUrl}/v2/signup`, 'POST', { body: { email, password } });
    expect(signup.status).toBe(201);
    const before = await scrape('auth');

    const login = (pw: string) =>
      callJson(`${p.baseUrl}/v2/login`, 'POST', { body: { email, password: pw } });
    expect((await login(password)).status).toBe(200);
    // LOGIN_ACCOUNT_MAX_FAILURES=3: three wrong passwords are checked, the fourth attempt is locked out
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await login('wrong password!')).status);
    expect(statuses).toEqual([401, 401, 401, 429]);

    const after = await scrape('auth');
    expect(logins(after, 'success') - logins(before, 'success')).toBe(1);
    expect(logins(after, 'invalid_credentials') - logins(before, 'invalid_credentials')).toBe(3);
    expect(logins(after, 'throttled') - logins(before, 'throttled')).toBe(1);
    expect(logins(after, 'invalid_second_factor') - logins(before, 'invalid_second_factor')).toBe(0);
  });

  it('legacy-agent counts answered, fallback and model-less messages, and times its trainings', async () => {
    const legacy = (
      path: string,
      token: string | null,
      body?: unknown,
      headers: Record<string, string> = {},
    ): Promise<JsonReply> =>
      fetch(`${p.legacyUrl}${path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...headers,
        },
        body: JSON.stringify(body ?? {}),
      }).then(async (res) => ({ status: res.status, body: await res.json() }));
    await legacy('/v2/auth/signup', null, { username: 'metrics', password: 'analytical engine' });
    const session = (
      await legacy('/v2/auth/login', null, { username: 'metrics', password: 'analytical engine' })
    ).body.sessionToken as string;
    const bot = async (name: string) =>
      (await legacy('/v2/bots', null, { name, lang: 'en' }, { 'x-legacy-session-token': session })).body as {
        clientToken: string;
        developerToken: string;
      };
    const travel = await bot('Travel');
    const empty = await bot('Empty');
    for (const entity of travelEntities)
      expect((await legacy('/v1/entities', travel.developerToken, entity)).status).toBe(200);
    for (const intent of Object.values(travelIntents))
      expect((await legacy('/v1/intents', travel.developerToken, intent)).status).toBe(200);
    const before = await scrape('legacyAgent');
    expect(hasMetric(before, 'legacy_agent_training_queue_length')).toBe(true);

    const say = (token: string, text: string) =>
      legacy('/v1/Messages', token, { userId: 'u1', platform: 'web', text });
    // the first message waits for the assistant's first model
    const answered = await say(travel.clientToken, 'i need a train from marienplatz to main station');
    expect(answered.body.intents[0]).toMatchObject({ name: 'FindConnection', isFallback: false });
    expect((await say(travel.clientToken, GIBBERISH)).body.intents[0].isFallback).toBe(true);
    // an assistant without intents has no model to classify with
    expect((await say(empty.clientToken, 'hello')).body.intents[0].isFallback).toBe(true);

    const after = await waitFor(
      async () => {
        const text = await scrape('legacyAgent');
        return metricSum(text, 'legacy_agent_training_queue_length') === 0 ? text : null;
      },
      { what: 'the training queue to empty' },
    );
    const messages = (result: string) =>
      metricSum(after, 'legacy_agent_messages_total', { result }) -
      metricSum(before, 'legacy_agent_messages_total', { result });
    expect([messages('answered'), messages('fallback'), messages('no_model')]).toEqual([1, 1, 1]);
    // the travel assistant's model (this platform trains nothing else)
    expect(
      metricSum(after, 'legacy_agent_training_duration_seconds_count', { result: 'success' }),
    ).toBeGreaterThanOrEqual(1);
    expect(metricSum(after, 'legacy_agent_training_duration_seconds_count', { result: 'failed' })).toBe(0);
  }, 120_000);
});
