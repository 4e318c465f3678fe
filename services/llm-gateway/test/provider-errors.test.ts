import { type LlmCompletionEvent, Subjects } from '@platform/contracts';
import { waitFor } from '@platform/testkit';
import { type GatewayWorld, type Reply, startGatewayWorld } from './support';

/** Provider failures as callers meet them: retried, failed over, or answered in the envelope. */
describe('provider errors, retries, failover and cancellation', () => {
  let w: GatewayWorld;
  let as: { bearer: string };
  beforeAll(async () => {
    w = await startGatewayWorld();
    const { owner } = await w.org('prov-errors');
    as = { bearer: owner.token };
  });
  afterAll(() => w?.stop());
  afterEach(() => w.sim.reset());

  const chat = (model: string, extra: Record<string, unknown> = {}) =>
    w.call('gateway', 'POST', '/v1/chat/completions', as, {
      model,
      messages: [{ role: 'user', content: 'hello provider' }],
      ...extra,
    });
  const calls = (model: string) => w.sim.requests().filter((r) => r.model === model).length;
  const expectEnvelope = (reply: Reply, status: number, code: string) => {
    expect({ status: reply.status, code: reply.body?.code }).toEqual({ status, code });
    expect(reply.body.requestId).toBe(reply.headers.get('x-request-id'));
  };

  it('PROVIDER_ERROR with provider, model and provider_error_type for an error the provider means', async () => {
    w.sim.script([
      { match: { model: 'gpt-sim' }, error: { status: 400, type: 'invalid_request_error', message: 'bad' } },
    ]);
    const reply = await chat('sim/gpt');
    expectEnvelope(reply, 502, 'PROVIDER_ERROR');
    expect(reply.body).toMatchObject({
      error: 'PROVIDER_ERROR',
      provider: 'sim',
      model: 'sim/gpt',
      provider_error_type: 'invalid_request_error',
    });
    expect(calls('gpt-sim')).toBe(1);
  });

  it('a 429 or 5xx is retried with backoff and then answered', async () => {
    w.sim.script([
      { match: { model: 'gpt-sim' }, times: 1, error: { status: 429, retryAfterSeconds: 0 } },
      { match: { model: 'gpt-sim' }, times: 1, error: { status: 503 } },
    ]);
    const reply = await chat('sim/gpt');
    expect(reply.status).toBe(200);
    expect(calls('gpt-sim')).toBe(3);
  });

  it('after the attempts on a model, its failover model answers', async () => {
    w.sim.script([{ match: { model: 'flaky-sim' }, error: { status: 500 } }]);
    const reply = await chat('sim/flaky');
    expect(reply.status).toBe(200);
    expect(reply.body.model).toBe('sim/cheap');
    expect(calls('flaky-sim')).toBe(3);
    expect(calls('cheap-sim')).toBe(1);
  });

  it('PROVIDER_NO_RESPONSE when nothing comes within the model timeout', async () => {
    w.sim.script([{ match: { model: 'slow-sim' }, hang: true }]);
    const reply = await chat('sim/slow');
    expectEnvelope(reply, 504, 'PROVIDER_NO_RESPONSE');
    expect(reply.body).toMatchObject({ provider: 'sim', model: 'sim/slow' });
  });

  it('a stream fails over before its first chunk', async () => {
    w.sim.script([{ match: { model: 'flaky-sim' }, hang: true }]);
    const res = await fetch(`${w.p.gatewayUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${as.bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim/flaky', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('"model":"sim/cheap"');
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('a provider error mid-stream ends the stream with an error chunk and [DONE]', async () => {
    w.sim.script([
      {
        match: { model: 'gpt-sim', stream: true },
        streamFailure: { afterChunks: 2, mode: 'error-event', type: 'server_error' },
      },
    ]);
    const res = await fetch(`${w.p.gatewayUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${as.bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim/gpt', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const frames = (await res.text()).split('\n\n').filter(Boolean);
    expect(frames.at(-1)).toBe('data: [DONE]');
    const last = JSON.parse(frames.at(-2)!.slice(6));
    expect(last.error).toMatchObject({ code: 'PROVIDER_ERROR', provider: 'sim', model: 'sim/gpt' });
  });

  it('a client that disconnects cancels the provider call, and the event counts what was consumed', async () => {
    const events: LlmCompletionEvent[] = [];
    const unsubscribe = w.p.bus.subscribe(Subjects.llmCompletion, (e) => {
      events.push(e as LlmCompletionEvent);
    });
    try {
      w.sim.script([
        {
          match: { model: 'gpt-sim', stream: true },
          chunkDelayMs: 100,
          reply: { content: Array.from({ length: 100 }, (_, i) => `w${i}`).join(' ') },
        },
      ]);
      const controller = new AbortController();
      const res = await fetch(`${w.p.gatewayUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${as.bearer}`,
          'content-type': 'application/json',
          'x-request-id': 'cancel-me',
        },
        body: JSON.stringify({
          model: 'sim/gpt',
          stream: true,
          messages: [{ role: 'user', content: 'a long one' }],
        }),
        signal: controller.signal,
      });
      const reader = res.body!.getReader();
      await reader.read();
      controller.abort();
      const event = await waitFor(() => events.find((e) => e.requestId === 'cancel-me'), {
        what: 'the usage event of the cancelled stream',
      });
      expect(event.outcome).toBe('client_cancelled');
      expect(event.usageSource).toBe('tokenizer');
      // far fewer than the 100 words the provider would have streamed
      expect(event.usage.completion_tokens).toBeLessThan(60);
    } finally {
      unsubscribe();
    }
  });
});
