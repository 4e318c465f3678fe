import { clearOfMinuteEnd, metricSum, waitFor } from '@platform/testkit';
import { type GatewayWorld, type Reply, startGatewayWorld } from './support';

/**
 * What an on-call engineer reads on the gateway's admin `/metrics` after real traffic through the edge:
 * requests, tokens and cost by model and provider; provider errors, retries, failovers, latency and time to
 * first token; quota refusals by reason (docs/decisions/0097).
 */
describe("the gateway's metrics follow its traffic", () => {
  let w: GatewayWorld;
  let as: { bearer: string };
  beforeAll(async () => {
    w = await startGatewayWorld();
    const { owner } = await w.org('metrics-org');
    as = { bearer: owner.token };
  });
  afterAll(() => w?.stop());
  afterEach(() => w.sim.reset());

  const scrape = async () => (await fetch(`${w.p.admin.llmGateway}/metrics`)).text();
  const chat = (caller: { bearer: string }, model: string, extra: Record<string, unknown> = {}) =>
    w.call('gateway', 'POST', '/v1/chat/completions', caller, {
      model,
      messages: [{ role: 'user', content: 'hello metrics' }],
      ...extra,
    });
  /** the change of a metric between two scrapes */
  const moved = (before: string, after: string, name: string, labels: Record<string, string>) =>
    metricSum(after, name, labels) - metricSum(before, name, labels);
  /** scrapes until `ready` holds: accounting runs after the answer has gone out */
  const scrapeUntil = (ready: (text: string) => boolean, what: string) =>
    waitFor(
      async () => {
        const text = await scrape();
        return ready(text) ? text : null;
      },
      { what },
    );
  const gpt = { model: 'sim/gpt', provider: 'sim' };

  it('counts requests, tokens and cost by served model and provider, and times calls and first chunks', async () => {
    const before = await scrape();
    const plain = await chat(as, 'sim/gpt');
    expect(plain.status).toBe(200);
    const res = await fetch(`${w.p.gatewayUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${as.bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sim/gpt',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'stream to the metrics' }],
      }),
    });
    const frames = (await res.text()).split('\n\n').filter((f) => f.startsWith('data: {'));
    const streamed = JSON.parse(frames.at(-1)!.slice(6)).usage;

    const after = await scrapeUntil(
      (text) => moved(before, text, 'llm_gateway_requests_total', { ...gpt, outcome: 'success' }) >= 2,
      'two successful requests of sim/gpt',
    );
    expect(moved(before, after, 'llm_gateway_requests_total', { ...gpt, outcome: 'success' })).toBe(2);
    const u = plain.body.usage;
    expect(moved(before, after, 'llm_gateway_tokens_total', { ...gpt, type: 'prompt' })).toBe(
      u.prompt_tokens + streamed.prompt_tokens,
    );
    expect(moved(before, after, 'llm_gateway_tokens_total', { ...gpt, type: 'completion' })).toBe(
      u.completion_tokens + streamed.completion_tokens,
    );
    expect(moved(before, after, 'llm_gateway_cost_total', gpt)).toBeCloseTo(u.cost + streamed.cost, 12);
    expect(moved(before, after, 'llm_gateway_provider_request_duration_seconds_count', gpt)).toBe(1);
    expect(moved(before, after, 'llm_gateway_provider_time_to_first_token_seconds_count', gpt)).toBe(1);
    expect(moved(before, after, 'llm_gateway_provider_errors_total', gpt)).toBe(0);
  });

  it('a provider 500 counts a server error per attempt, the retries, and the failover to the next model', async () => {
    w.sim.script([{ match: { model: 'flaky-sim' }, error: { status: 500 } }]);
    const before = await scrape();
    const reply = await chat(as, 'sim/flaky');
    expect(reply.status).toBe(200);
    expect(reply.body.model).toBe('sim/cheap');
    const after = await scrapeUntil(
      (text) =>
        moved(before, text, 'llm_gateway_requests_total', { model: 'sim/cheap', outcome: 'success' }) === 1,
      'the failed-over request to be accounted',
    );
    const flaky = { model: 'sim/flaky', provider: 'sim' };
    // three attempts (LLM_GATEWAY_MAX_ATTEMPTS), two of them retries, then the failover chain's next model
    expect(
      moved(before, after, 'llm_gateway_provider_errors_total', { ...flaky, type: 'server_error' }),
    ).toBe(3);
    expect(moved(before, after, 'llm_gateway_provider_retries_total', flaky)).toBe(2);
    expect(moved(before, after, 'llm_gateway_provider_failovers_total', flaky)).toBe(1);
    expect(moved(before, after, 'llm_gateway_requests_total', { model: 'sim/flaky' })).toBe(0);
  });

  it('a provider that does not answer in time counts a timeout and a request that ended in a provider error', async () => {
    w.sim.script([
      { match: { model: 'slow-sim' }, hang: true },
      { match: { model: 'gpt-sim' }, error: { status: 429, retryAfterSeconds: 30 } },
    ]);
    const before = await scrape();
    expect((await chat(as, 'sim/slow')).status).toBe(504);
    // a Retry-After beyond LLM_GATEWAY_RETRY_MAX_WAIT_MS is not waited for: one attempt, no retry
    expect((await chat(as, 'sim/gpt')).status).toBe(502);
    const slow = { model: 'sim/slow', provider: 'sim' };
    const after = await scrapeUntil(
      (text) =>
        moved(before, text, 'llm_gateway_requests_total', { ...slow, outcome: 'provider_error' }) === 1 &&
        moved(before, text, 'llm_gateway_requests_total', { ...gpt, outcome: 'provider_error' }) === 1,
      'both failed requests to be accounted',
    );
    expect(moved(before, after, 'llm_gateway_provider_errors_total', { ...slow, type: 'timeout' })).toBe(1);
    expect(moved(before, after, 'llm_gateway_provider_errors_total', { ...gpt, type: 'rate_limited' })).toBe(
      1,
    );
    expect(moved(before, after, 'llm_gateway_provider_retries_total', gpt)).toBe(0);
    expect(moved(before, after, 'llm_gateway_provider_request_duration_seconds_count', slow)).toBe(0);
  });

  it('quota and governance refusals are counted by reason, and reach no provider', async () => {
    const refusals = (text: string, reason: string) =>
      metricSum(text, 'llm_gateway_quota_refusals_total', { reason });
    const before = await scrape();
    const sent = w.sim.requests().length;

    // the monthly budget (400 tokens): a prompt larger than what is left is refused at once
    const { owner: budgeted } = await w.org('metrics-budget', 'budget');
    const long = await chat({ bearer: budgeted.token }, 'sim/gpt', {
      messages: [{ role: 'user', content: 'many words '.repeat(300) }],
    });
    expectCode(long, 429, 'MONTHLY_QUOTA_EXCEEDED');

    // three requests a minute per user, the four below in one calendar minute
    const { owner: tight } = await w.org('metrics-tight', 'tight');
    await clearOfMinuteEnd(15_000);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await chat({ bearer: tight.token }, 'mock/chat')).status);
    expect(statuses).toEqual([200, 200, 200, 429]);

    // a model outside the organization's allowed list
    const { owner: governed } = await w.org('metrics-governed');
    const set = await w.call(
      'gateway',
      'PATCH',
      '/v1/quotas/settings',
      { bearer: governed.token },
      {
        models: { allowed: ['mock/chat'] },
      },
    );
    expect(set.status).toBe(200);
    expectCode(await chat({ bearer: governed.token }, 'sim/gpt'), 403, 'MODEL_NOT_ALLOWED');

    const after = await scrape();
    expect(refusals(after, 'monthly_tokens') - refusals(before, 'monthly_tokens')).toBe(1);
    expect(refusals(after, 'requests_per_minute') - refusals(before, 'requests_per_minute')).toBe(1);
    expect(refusals(after, 'model_not_allowed') - refusals(before, 'model_not_allowed')).toBe(1);
    expect(refusals(after, 'monthly_cost') - refusals(before, 'monthly_cost')).toBe(0);
    expect(refusals(after, 'tokens_per_minute') - refusals(before, 'tokens_per_minute')).toBe(0);
    expect(w.sim.requests().length).toBe(sent);
  });
});

function expectCode(reply: Reply, status: number, code: string) {
  expect({ status: reply.status, code: reply.body?.code }).toEqual({ status, code });
}
