import { callJson, startTestPlatform, type TestPlatform } from '../harness';

/**
 * A JSON body nested past 128 levels, through the edge, to each family of services: the kernel refuses it in the
 * service's own error shape before any route reads it (JSON.parse reads 100,000 levels; JSON.stringify, sending the
 * body on or storing it, overflows the stack at a few thousand). The gateway's own case is in its inference tests.
 */
const deep = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
const REFUSAL = 'Invalid body: nested more than 128 levels deep';
const ISSUE = 'nested more than 128 levels deep';
/** The path the refusal names for `deep(n)` at `at`: the value one level past the bound. */
const pastTheBound = (at: string, levelsAbove: number) => `${at}${'.0'.repeat(128 - levelsAbove)}`;

describe('a JSON body nested thousands of levels deep, through the edge', () => {
  let p: TestPlatform;
  let token: string;

  beforeAll(async () => {
    p = await startTestPlatform({ env: { LEGACY_V1_RETIREMENT_DATE: '2099-01-01' } });
    ({ token } = (await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).body);
  });
  afterAll(() => p.stop());

  const send = async (
    url: string,
    method: string,
    headers: Record<string, string>,
    body: string,
    // biome-ignore lint/suspicious/noExplicitAny: answers of several shapes, asserted field by field
  ): Promise<{ status: number; body: any }> => {
    const res = await fetch(url, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    return { status: res.status, body: await res.json() };
  };

  it('auth: 400 INVALID_BODY naming where, and no organization is made', async () => {
    const res = await send(
      `${p.baseUrl}/v2/orgs`,
      'POST',
      { authorization: `Bearer ${token}` },
      `{"slug":"deep-org","name":"Deep","x":${deep(10_000)}}`,
    );
    expect(res).toEqual({
      status: 400,
      body: expect.objectContaining({
        code: 'INVALID_BODY',
        message: REFUSAL,
        details: { issues: [{ field: pastTheBound('x', 1), message: ISSUE }] },
      }),
    });
    const orgs = await callJson(`${p.baseUrl}/v2/orgs`, 'GET', { bearer: token });
    expect(orgs.body).toEqual([]);
  });

  it('llm-quota: a settings PATCH is 400 INVALID_BODY, and the settings are unchanged', async () => {
    const org = await callJson(`${p.baseUrl}/v2/orgs`, 'POST', {
      bearer: token,
      body: { slug: 'deep-quota', name: 'Deep quota' },
    });
    expect(org.status).toBe(201);
    const settings = `${p.gatewayUrl}/v1/quotas/settings`;
    const before = await callJson(settings, 'GET', { bearer: token });
    expect(before.status).toBe(200);
    const res = await send(
      settings,
      'PATCH',
      { authorization: `Bearer ${token}` },
      `{"policy":"soft_downgrade","org_user_quotas":{"overrides":{"u":${deep(10_000)}}}}`,
    );
    expect(res).toEqual({
      status: 400,
      body: expect.objectContaining({
        code: 'INVALID_BODY',
        message: REFUSAL,
        details: { issues: [{ field: pastTheBound('org_user_quotas.overrides.u', 3), message: ISSUE }] },
      }),
    });
    expect(await callJson(settings, 'GET', { bearer: token })).toEqual(before);
  });

  it("llm-gateway: Anthropic's /v1/messages answers a body that does not parse in its own error shape too", async () => {
    const caller = (await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).body.token;
    const org = { bearer: caller, body: { slug: 'deep-gateway', name: 'Deep gateway' } };
    expect((await callJson(`${p.baseUrl}/v2/orgs`, 'POST', org)).status).toBe(201);
    for (const [body, message] of [
      [`{"model":"x","x":${deep(10_000)}}`, REFUSAL],
      // the kernel's parser answered it in the platform envelope, which Anthropic's SDKs do not read
      ['{"model": ', 'Request body is not valid JSON'],
    ]) {
      const res = await send(
        `${p.gatewayUrl}/v1/messages`,
        'POST',
        { authorization: `Bearer ${caller}` },
        body,
      );
      expect(res).toEqual({
        status: 400,
        body: expect.objectContaining({
          type: 'error',
          error: expect.objectContaining({ type: 'invalid_request_error', message }),
        }),
      });
    }
  });

  it('llm-gateway: a body in UTF-7, which spells `[` without its byte, is refused too (it was a 500)', async () => {
    const caller = (await callJson(`${p.baseUrl}/v2/login/anonymous`, 'POST')).body.token;
    const org = { bearer: caller, body: { slug: 'deep-charset', name: 'Deep charset' } };
    expect((await callJson(`${p.baseUrl}/v2/orgs`, 'POST', org)).status).toBe(201);
    // `+AFsAWwBb-` is `[[[` in UTF-7
    const schema = `+${'AFsAWwBb'.repeat(4_000)}-${']'.repeat(12_000)}`;
    const tools = `[{"type":"function","function":{"name":"f","parameters":{"x":${schema}}}}]`;
    const res = await fetch(`${p.gatewayUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${caller}`, 'content-type': 'application/json; charset=utf-7' },
      body: `{"model":"x","messages":[{"role":"user","content":"hi"}],"tools":${tools}}`,
    });
    expect([res.status, await res.json()]).toEqual([
      400,
      expect.objectContaining({
        code: 'INVALID_BODY',
        message: REFUSAL,
        details: { issues: [{ field: pastTheBound('tools.0.function.parameters.x', 5), message: ISSUE }] },
      }),
    ]);
  });

  it('legacy-agent: Messages refuses it in the Messages shape, the management API in the envelope; nothing stored', async () => {
    const legacy = (method: string, path: string, headers: Record<string, string>, body: string) =>
      send(`${p.legacyUrl}${path}`, method, headers, body);
    const signup = await legacy(
      'POST',
      '/v2/auth/signup',
      {},
      '{"username":"ada","password":"analytical engine"}',
    );
    const created = await legacy(
      'POST',
      '/v2/bots',
      { 'x-legacy-session-token': signup.body.sessionToken },
      '{"name":"Deep","lang":"en","languages":["en"]}',
    );
    expect(created.status).toBe(200);
    const bot = created.body;

    // a payload the assistant ignores was answered 200
    const message = await legacy(
      'POST',
      '/v1/Messages',
      { authorization: `Bearer ${bot.clientToken}` },
      `{"userId":"visitor","platform":"web","text":"hi","payload":{"x":${deep(10_000)}}}`,
    );
    expect(message.status).toBe(400);
    expect(message.body.status).toEqual({
      code: 400,
      errorType: 'invalid_request',
      errorDetails: REFUSAL,
      details: { issues: [{ field: pastTheBound('payload.x', 2), message: ISSUE }] },
    });

    const developer = { authorization: `Bearer ${bot.developerToken}` };
    const intent = await legacy(
      'POST',
      '/v1/intents',
      developer,
      `{"name":"Deep","parameters":{"en":[{"x":${deep(10_000)}}]}}`,
    );
    expect(intent).toEqual({
      status: 400,
      body: expect.objectContaining({
        code: 'INVALID_BODY',
        message: REFUSAL,
        details: { issues: [{ field: pastTheBound('parameters.en.0.x', 4), message: ISSUE }] },
      }),
    });
    const intents = await fetch(`${p.legacyUrl}/v1/intents`, { headers: developer });
    expect(await intents.json()).toEqual([]);
  });
});
