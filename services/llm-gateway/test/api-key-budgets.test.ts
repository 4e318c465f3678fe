import { APIError } from 'openai';
import { type GatewayWorld, startGatewayWorld } from './support';

/**
 * An organization API key's month budget (`org_user_quotas.by_api_key[id].monthly_tokens` / `monthly_cost`,
 * decision 0117) through the edge with the official SDK: the key is refused, and its stream cut, at its own budget
 * while the organization and its other keys go on.
 */
describe("an organization API key's month budget, through the edge", () => {
  let w: GatewayWorld;
  beforeAll(async () => {
    w = await startGatewayWorld();
  });
  afterAll(() => w?.stop());

  it("cuts the key's stream at its budget, then refuses the key alone with MONTHLY_QUOTA_EXCEEDED", async () => {
    const { owner } = await w.org('key-budget');
    const keys: Record<string, { id: string; apiKey: string }> = {};
    for (const name of ['app', 'other']) keys[name] = await w.orgKey(owner, 'key-budget', name);
    const set = await w.call(
      'gateway',
      'PATCH',
      '/v1/quotas/settings',
      { bearer: owner.token },
      { org_user_quotas: { by_api_key: { [keys.app!.id]: { monthly_tokens: 200 } } } },
    );
    expect(set.status).toBe(200);

    const long = Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ');
    w.sim.script([{ match: { model: 'gpt-sim', stream: true }, reply: { content: long } }]);
    const app = w.client({ apiKey: keys.app!.apiKey });
    const stream = await app.chat.completions.create({
      model: 'sim/gpt',
      messages: [{ role: 'user', content: 'a long one' }],
      stream: true,
    });
    let text = '';
    const cut = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    })().then(
      () => null,
      (err: unknown) => err,
    );
    // the SDK raises the stream's error chunk
    expect(cut).toBeInstanceOf(APIError);
    expect((cut as APIError).message).toContain("This API key's monthly token budget");
    expect(text.length).toBeGreaterThan(0);
    expect(text.length).toBeLessThan(long.length);

    const refused = await w.call(
      'gateway',
      'POST',
      '/v1/chat/completions',
      { apiKey: keys.app!.apiKey },
      {
        model: 'sim/cheap',
        messages: [{ role: 'user', content: 'more' }],
      },
    );
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({
      code: 'MONTHLY_QUOTA_EXCEEDED',
      details: { key: 'llm.monthly_tokens', scope: 'api_key', limit: 200 },
    });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);

    // the organization's other key, and its members, go on
    const other = await w.client({ apiKey: keys.other!.apiKey }).chat.completions.create({
      model: 'sim/cheap',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(other.choices[0]?.message.content).toBeTruthy();
    const member = await w.client({ bearer: owner.token }).chat.completions.create({
      model: 'sim/cheap',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(member.choices[0]?.message.content).toBeTruthy();
  });
});
