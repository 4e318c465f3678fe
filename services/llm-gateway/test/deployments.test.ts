import { metricSum, type ProviderSimulator, startProviderSimulator, waitFor } from '@platform/testkit';
import type OpenAI from 'openai';
import { APIError } from 'openai';
import {
  type CompletionRecord,
  clockAhead,
  type GatewayWorld,
  INTERNAL_SECRET,
  recordCompletions,
  startGatewayWorld,
} from './support';

/**
 * One model served by several deployments (decision 0101), through the edge with the official openai SDK against
 * three provider simulators: requests spread by weight, a deployment that fails sits out its cooldown on this
 * instance while the others serve, retries go to the other deployments before the failover chain, streams switch
 * deployment only before their first chunk, and the usage event names the provider that served.
 */
describe('a model served by several deployments', () => {
  let w: GatewayWorld;
  let simB: ProviderSimulator;
  let simC: ProviderSimulator;
  let client: OpenAI;
  let as: { bearer: string };
  /** the platform's clock: cooldowns end when the test moves it */
  const time = clockAhead();
  let completions: CompletionRecord;

  const sims = () => ({ sim: w.sim, 'sim-b': simB, 'sim-c': simC });
  /** how many requests a simulator received for one of its models */
  const received = (sim: ProviderSimulator, model: string) =>
    sim.requests().filter((r) => r.model === model).length;
  let seq = 0;
  const chat = async (model: string) => {
    const requestId = `lb-${++seq}`;
    const answer = await client.chat.completions.create(
      { model, messages: [{ role: 'user', content: 'hello deployments' }] },
      { headers: { 'x-request-id': requestId } },
    );
    return { answer, requestId };
  };
  /** sends requests one at a time until `done` holds (at most `max`); the answers */
  const chatUntil = async (model: string, done: () => boolean, max = 60) => {
    const sent = [];
    while (!done()) {
      if (sent.length === max) throw new Error(`${model}: not done after ${max} requests`);
      sent.push(await chat(model));
    }
    return sent;
  };
  /** sends `n` requests, `concurrency` at a time */
  const burst = async (model: string, n: number, concurrency = 10) => {
    for (let i = 0; i < n; i += concurrency)
      await Promise.all(Array.from({ length: Math.min(concurrency, n - i) }, () => chat(model)));
  };

  const lb = (
    id: string,
    deployments: Array<Record<string, unknown>>,
    extra: Record<string, unknown> = {},
  ) => ({
    model_id: id,
    type: 'completion',
    deployments,
    pricing: { input_per_million: 1, output_per_million: 1 },
    ...extra,
  });

  beforeAll(async () => {
    simB = await startProviderSimulator({ port: 0 });
    simC = await startProviderSimulator({ port: 0 });
    w = await startGatewayWorld({
      clock: time.clock,
      file: (base) => ({
        ...base,
        providers: [
          ...base.providers,
          { name: 'sim-b', type: 'openai', baseUrl: simB.openaiBaseUrl, apiKey: 'sk-sim-b' },
          { name: 'sim-c', type: 'openai', baseUrl: simC.openaiBaseUrl, apiKey: 'sk-sim-c' },
        ],
        models: [
          ...base.models,
          lb('lb/even', [
            { provider: 'sim', model: 'even-a' },
            { provider: 'sim-b', model: 'even-b' },
          ]),
          lb('lb/weighted', [
            { provider: 'sim', model: 'heavy-a', weight: 1000 },
            { provider: 'sim-b', model: 'light-b', weight: 1 },
          ]),
          lb('lb/cool', [
            { provider: 'sim', model: 'cool-a' },
            { provider: 'sim-b', model: 'cool-b' },
            { provider: 'sim-c', model: 'cool-c' },
          ]),
          lb('lb/cold', [
            { provider: 'sim', model: 'cold-a' },
            { provider: 'sim-b', model: 'cold-b' },
          ]),
          lb(
            'lb/chain',
            [
              { provider: 'sim', model: 'chain-a' },
              { provider: 'sim-b', model: 'chain-b' },
            ],
            { failover: 'sim/cheap' },
          ),
          lb('lb/stream', [
            { provider: 'sim', model: 'stream-a' },
            { provider: 'sim-b', model: 'stream-b' },
          ]),
          lb(
            'lb/priced',
            [
              { provider: 'sim', model: 'priced-a' },
              { provider: 'sim-b', model: 'priced-b' },
            ],
            { pricing: { input_per_million: 2, output_per_million: 8 } },
          ),
        ],
      }),
    });
    const { owner } = await w.org('lb-org');
    as = { bearer: owner.token };
    client = w.client(as);
    completions = recordCompletions(w);
  }, 60_000);
  afterAll(async () => {
    completions?.stop();
    await w?.stop();
    await simB?.close();
    await simC?.close();
  });
  beforeEach(() => {
    for (const sim of Object.values(sims())) sim.reset();
  });

  it('spreads requests over the deployments by weight', async () => {
    await burst('lb/even', 200);
    const [a, b] = [received(w.sim, 'even-a'), received(simB, 'even-b')];
    expect(a + b).toBe(200);
    // an even split of 200 falls below 40 once in 10^18
    expect(Math.min(a, b)).toBeGreaterThan(40);

    await burst('lb/weighted', 200);
    const [heavy, light] = [received(w.sim, 'heavy-a'), received(simB, 'light-b')];
    expect(heavy + light).toBe(200);
    // weight 1 in 1001: on average 0.2 requests of 200
    expect(light).toBeLessThan(10);
  });

  it('a deployment answering 429 sits out while the others serve, and is back once its cooldown ends', async () => {
    const before = await (await fetch(`${w.p.admin.llmGateway}/metrics`)).text();
    w.sim.script([{ match: { model: 'cool-a' }, times: 1, error: { status: 429, retryAfterSeconds: 30 } }]);
    const first = await chatUntil('lb/cool', () => received(w.sim, 'cool-a') === 1);
    // the request that met the 429 was answered by another deployment, and accounted once, to it
    const unlucky = first.at(-1)!;
    expect(unlucky.answer.choices[0]?.message.content).toBeTruthy();
    const event = await completions.of(unlucky.requestId);
    expect(event).toMatchObject({ model: 'lb/cool', outcome: 'success' });
    expect(['sim-b', 'sim-c']).toContain(event.provider);
    expect(completions.events.filter((e) => e.requestId === unlucky.requestId)).toHaveLength(1);

    // cooling down (the provider's Retry-After: 30 s): the other two take everything, both of them
    await burst('lb/cool', 30, 5);
    expect(received(w.sim, 'cool-a')).toBe(1);
    expect(received(simB, 'cool-b')).toBeGreaterThan(0);
    expect(received(simC, 'cool-c')).toBeGreaterThan(0);

    time.ahead += 31_000;
    const back = await chatUntil('lb/cool', () => received(w.sim, 'cool-a') === 2);
    expect((await completions.of(back.at(-1)!.requestId)).provider).toBe('sim');

    // accounting runs after the answers: every request of the test, each counted once to the deployment that served
    const sent = first.length + 30 + back.length;
    const after = await waitFor(
      async () => {
        const text = await (await fetch(`${w.p.admin.llmGateway}/metrics`)).text();
        const counted =
          metricSum(text, 'llm_gateway_requests_total', { model: 'lb/cool' }) -
          metricSum(before, 'llm_gateway_requests_total', { model: 'lb/cool' });
        return counted >= sent ? text : null;
      },
      { what: 'the requests of lb/cool in the metrics' },
    );
    const moved = (name: string, labels: Record<string, string>) =>
      metricSum(after, name, labels) - metricSum(before, name, labels);
    expect(
      moved('llm_gateway_provider_errors_total', { model: 'lb/cool', provider: 'sim', type: 'rate_limited' }),
    ).toBe(1);
    expect(
      moved('llm_gateway_requests_total', { model: 'lb/cool', provider: 'sim', outcome: 'success' }),
    ).toBe(1);
    expect(
      moved('llm_gateway_requests_total', { model: 'lb/cool', provider: 'sim-b' }) +
        moved('llm_gateway_requests_total', { model: 'lb/cool', provider: 'sim-c' }),
    ).toBe(sent - 1);
  });

  it('when every deployment is cooling down, the one back soonest is called rather than refusing', async () => {
    w.sim.script([{ match: { model: 'cold-a' }, times: 1, error: { status: 429, retryAfterSeconds: 40 } }]);
    simB.script([{ match: { model: 'cold-b' }, times: 1, error: { status: 429, retryAfterSeconds: 20 } }]);
    // both deployments refuse, each asking for more than the gateway waits: the caller is told to come back
    const refused = await chat('lb/cold').catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(APIError);
    expect(refused).toMatchObject({ status: 502, error: 'PROVIDER_ERROR' });
    expect([received(w.sim, 'cold-a'), received(simB, 'cold-b')]).toEqual([1, 1]);

    const { requestId } = await chat('lb/cold');
    expect((await completions.of(requestId)).provider).toBe('sim-b');
    expect([received(w.sim, 'cold-a'), received(simB, 'cold-b')]).toEqual([1, 2]);
  });

  it("retries go to the model's other deployments first, then to its failover chain", async () => {
    w.sim.script([{ match: { model: 'chain-a' }, error: { status: 500 } }]);
    simB.script([{ match: { model: 'chain-b' }, error: { status: 503 } }]);
    const { answer, requestId } = await chat('lb/chain');
    expect(answer.model).toBe('sim/cheap');
    expect(received(w.sim, 'chain-a')).toBeGreaterThan(0);
    expect(received(simB, 'chain-b')).toBeGreaterThan(0);
    // LLM_GATEWAY_MAX_ATTEMPTS (3) on the model, then its failover
    expect(received(w.sim, 'chain-a') + received(simB, 'chain-b')).toBe(3);
    expect(received(w.sim, 'cheap-sim')).toBe(1);
    expect(await completions.of(requestId)).toMatchObject({ model: 'sim/cheap', provider: 'sim' });
  });

  it('a stream moves to another deployment before its first chunk, never after it', async () => {
    w.sim.script([{ match: { model: 'stream-a' }, error: { status: 503, retryAfterSeconds: 60 } }]);
    const streamed: Array<{ requestId: string; text: string }> = [];
    while (received(w.sim, 'stream-a') === 0) {
      if (streamed.length === 40) throw new Error('stream-a never picked');
      const requestId = `lb-stream-${streamed.length}`;
      const stream = await client.chat.completions.create(
        { model: 'lb/stream', stream: true, messages: [{ role: 'user', content: 'stream to me' }] },
        { headers: { 'x-request-id': requestId } },
      );
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      streamed.push({ requestId, text });
    }
    const switched = streamed.at(-1)!;
    expect(switched.text).toBeTruthy();
    expect((await completions.of(switched.requestId)).provider).toBe('sim-b');

    // stream-a sits out (60 s); stream-b is cut after two chunks: the stream ends in error, stream-a is not called
    simB.script([{ match: { model: 'stream-b' }, streamFailure: { afterChunks: 2, mode: 'disconnect' } }]);
    const cut = await client.chat.completions.create(
      { model: 'lb/stream', stream: true, messages: [{ role: 'user', content: 'a longer stream to cut' }] },
      { headers: { 'x-request-id': 'lb-stream-cut' } },
    );
    const chunks: string[] = [];
    const failure = await (async () => {
      for await (const chunk of cut) chunks.push(chunk.choices[0]?.delta?.content ?? '');
    })().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(APIError);
    expect(chunks.length).toBeGreaterThan(0);
    expect(received(w.sim, 'stream-a')).toBe(1);
    expect(await completions.of('lb-stream-cut')).toMatchObject({
      provider: 'sim-b',
      outcome: 'provider_error',
    });
  });

  it('usage is counted once per request, at the model’s price, whichever deployment served', async () => {
    const { owner } = await w.org('lb-usage');
    const usageAs = { bearer: owner.token };
    const usageClient = w.client(usageAs);
    w.sim.script([{ match: { model: 'priced-a' }, error: { status: 429 } }]);
    simB.script([
      { match: { model: 'priced-b' }, reply: { usage: { prompt_tokens: 1000, completion_tokens: 500 } } },
    ]);
    let sent = 0;
    while (received(w.sim, 'priced-a') === 0) {
      if (sent === 30) throw new Error('priced-a never picked');
      const answer = await usageClient.chat.completions.create({
        model: 'lb/priced',
        messages: [{ role: 'user', content: 'what does it cost' }],
      });
      sent++;
      // 1000 × 2 + 500 × 8 per million
      expect((answer.usage as unknown as { cost: number }).cost).toBeCloseTo(0.006, 9);
    }
    const usage = await w.counted('lb-usage', usageAs, {
      requests: sent,
      tokens: sent * 1500,
      cost: sent * 0.006,
    });
    const month = usage.body.enforced.find((g: { key: string }) => g.key === 'llm.monthly_tokens');
    const spent = usage.body.enforced.find((g: { key: string }) => g.key === 'llm.monthly_cost');
    expect(month.used).toBe(sent * 1500);
    expect(spent.used).toBeCloseTo(sent * 0.006, 9);
  });

  // a deployment whose provider has not the model's endpoint is refused by the catalogue, or left out of an entry
  // stored before that check (decision 0105, test/provider-endpoints.test.ts)

  describe('the catalogue API', () => {
    let admin: { bearer: string };
    const operator = (method: string, path: string, body?: unknown) =>
      fetch(`${w.p.upstreams.llmGateway}${path}`, {
        method,
        headers: { 'content-type': 'application/json', 'x-platform-internal-secret': INTERNAL_SECRET },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    beforeAll(async () => {
      admin = { bearer: (await w.platformAdmin()).token };
    });
    const two = [
      { provider: 'sim', model: 'api-a', weight: 2 },
      { provider: 'sim-b', model: 'api-b', headers: { 'x-org': '{org.slug}' } },
    ];

    it('adds, shows, patches and replaces models of several deployments', async () => {
      const created = await w.call('gateway', 'POST', '/v1/models', admin, lb('lb/api', two));
      expect(created.status).toBe(201);
      expect(created.body.deployments).toEqual(two);
      expect(created.body.provider_config).toBeUndefined();

      const shown = await w.call('gateway', 'GET', '/v1/models/lb/api?orgSlug=all', admin);
      expect(shown.body).toMatchObject({ id: 'lb/api', owned_by: 'sim', deployments: two });
      expect(shown.body.provider_config).toBeUndefined();
      const seenByMember = await w.call('gateway', 'GET', '/v1/models/lb/api', as);
      expect(seenByMember.status).toBe(200);
      expect(seenByMember.body.deployments).toBeUndefined();

      // a merge patch moves a model from one form to the other
      const single = await w.call('gateway', 'PATCH', '/v1/models/lb/api', admin, {
        deployments: null,
        provider_config: { provider: 'sim-c', model: 'api-c' },
      });
      expect(single.status).toBe(200);
      expect(single.body.deployments).toBeUndefined();
      const back = await w.call('gateway', 'PATCH', '/v1/models/lb/api', admin, {
        provider_config: null,
        deployments: two,
      });
      expect(back.status).toBe(200);
      expect(back.body.deployments).toEqual(two);
      const both = await w.call('gateway', 'PATCH', '/v1/models/lb/api', admin, {
        provider_config: { provider: 'sim', model: 'x' },
      });
      expect(both.status).toBe(400);
      expect(both.body.details.issues).toEqual([
        expect.objectContaining({ field: 'deployments', message: expect.stringContaining('not both') }),
      ]);

      // the catalogue as exported (GET) goes back in whole with PUT
      const listed = await w.call('gateway', 'GET', '/v1/models?orgSlug=all&limit=100', admin);
      const entries = listed.body.data.map(
        ({ id: _i, object: _o, created: _c, owned_by: _b, ...entry }: Record<string, unknown>) => entry,
      );
      const replaced = await w.call('gateway', 'PUT', '/v1/models', admin, { models: entries });
      expect(replaced.status).toBe(200);
      expect(replaced.body).toMatchObject({ inserted: entries.length });
      expect(
        (await w.call('gateway', 'GET', '/v1/models/lb/api?orgSlug=all', admin)).body.deployments,
      ).toEqual(two);
      const badList = await w.call('gateway', 'PUT', '/v1/models', admin, {
        models: [...entries, lb('lb/nowhere', [{ provider: 'nowhere', model: 'x' }])],
      });
      expect(badList.status).toBe(400);
      expect(badList.body.details.items).toEqual([
        expect.objectContaining({
          model_id: 'lb/nowhere',
          issues: [{ field: 'deployments.0.provider', message: 'no provider named nowhere' }],
        }),
      ]);
    });

    it('refuses unknown providers, weights that are not positive, too many deployments, and both forms', async () => {
      const refused = async (entry: Record<string, unknown>, field: string) => {
        const res = await w.call('gateway', 'POST', '/v1/models', admin, entry);
        expect(res.status).toBe(400);
        expect(res.body.details.issues.map((i: { field: string }) => i.field)).toContain(field);
      };
      await refused(lb('lb/bad', [two[0]!, { provider: 'nowhere', model: 'x' }]), 'deployments.1.provider');
      await refused(lb('lb/bad', [{ ...two[0]!, weight: 0 }]), 'deployments.0.weight');
      await refused(lb('lb/bad', [{ ...two[0]!, weight: -1 }]), 'deployments.0.weight');
      await refused(
        lb(
          'lb/bad',
          Array.from({ length: 17 }, (_, i) => ({ provider: 'sim', model: `m${i}` })),
        ),
        'deployments',
      );
      await refused(lb('lb/bad', []), 'deployments');
      await refused(lb('lb/bad', two, { provider_config: { provider: 'sim', model: 'x' } }), 'deployments');
      const { deployments: _d, ...neither } = lb('lb/bad', two);
      await refused(neither, 'provider_config');
      expect((await w.call('gateway', 'GET', '/v1/models/lb/bad?orgSlug=all', admin)).status).toBe(404);
    });

    it('a provider used by a deployment cannot be removed', async () => {
      const res = await operator('DELETE', '/v1/providers/sim-c');
      expect(res.status).toBe(409);
      expect(await res.json()).toMatchObject({
        code: 'PROVIDER_IN_USE',
        details: { models: expect.arrayContaining(['lb/cool']) },
      });
    });

    it('a smoke test calls one deployment, the one on the provider asked for when given', async () => {
      const tested = await w.call('gateway', 'POST', '/v1/test', as, {
        modelId: 'lb/weighted',
        provider: 'sim-b',
      });
      expect(tested.status).toBe(200);
      expect(tested.body).toMatchObject({ ok: true, model: 'lb/weighted', provider: 'sim-b' });
      expect(received(simB, 'light-b')).toBe(1);
      expect(received(w.sim, 'heavy-a')).toBe(0);
      const unknown = await w.call('gateway', 'POST', '/v1/test', as, {
        modelId: 'lb/weighted',
        provider: 'sim-c',
      });
      expect(unknown.status).toBe(400);
    });
  });
});
