import { metricSum, waitFor } from '@platform/testkit';
import OpenAI, { APIError } from 'openai';
import {
  type GatewayWorld,
  gauge,
  leaveStreamAfterFirstChunk,
  leaveStreamAtFinish,
  modelEntry,
  type Reply,
  recordCompletions,
  startGatewayWorld,
} from './support';
import { reasoningReportAfterFinish } from './usage-after-finish';

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

  it("passes a provider's error type on in a short line, and refuses more than 128 choices before any call", async () => {
    w.sim.script([{ match: { model: 'gpt-sim' }, error: { status: 400, type: 'x'.repeat(5_000) } }]);
    const reply = await chat('sim/gpt');
    expectEnvelope(reply, 502, 'PROVIDER_ERROR');
    expect(reply.body.provider_error_type).toBe('x'.repeat(100));
    const many = await chat('sim/gpt', { n: 129 });
    expectEnvelope(many, 400, 'INVALID_BODY');
    expect(JSON.stringify(many.body)).toMatch(/\bn\b/);
    expect(calls('gpt-sim')).toBe(1);
  });

  it('tells the SDK whether a retry can help: x-should-retry false for what the provider refused, true after 5xx', async () => {
    w.sim.script([
      { match: { model: 'gpt-sim' }, times: 1, error: { status: 404, message: 'no such model' } },
    ]);
    const refused = await chat('sim/gpt');
    expectEnvelope(refused, 502, 'PROVIDER_ERROR');
    expect(refused.headers.get('x-should-retry')).toBe('false');

    w.sim.script([{ match: { model: 'gpt-sim' }, error: { status: 503 } }]);
    const down = await chat('sim/gpt');
    expectEnvelope(down, 502, 'PROVIDER_ERROR');
    expect(down.headers.get('x-should-retry')).toBe('true');
    expect(down.headers.get('retry-after')).toBeNull();
    expect(down.body).not.toHaveProperty('retryAfter');

    // the SDK's default retries (2) then send a provider's 400 once only
    w.sim.reset();
    w.sim.script([{ match: { model: 'gpt-sim' }, error: { status: 400, message: 'bad' } }]);
    const sdk = w.client(as).withOptions({ maxRetries: 2 });
    const error = await sdk.chat.completions
      .create({ model: 'sim/gpt', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(502);
    expect(calls('gpt-sim')).toBe(1);
  });

  it("a provider's 429 passes its Retry-After on with the 502", async () => {
    w.sim.script([{ match: { model: 'gpt-sim' }, error: { status: 429, retryAfterSeconds: 30 } }]);
    const reply = await chat('sim/gpt');
    expectEnvelope(reply, 502, 'PROVIDER_ERROR');
    expect(reply.headers.get('retry-after')).toBe('30');
    expect(reply.headers.get('x-should-retry')).toBe('true');
    expect(reply.body).toMatchObject({ retryAfter: 30, details: { upstream_status: 429 } });
  });

  it("a provider's Retry-After of 0 (or a date past) reaches the client as 1 second, never 0", async () => {
    for (const headers of [
      { 'retry-after': '0' },
      { 'retry-after': new Date(Date.now() - 60_000).toUTCString() },
    ]) {
      w.sim.script([{ match: { model: 'gpt-sim' }, error: { status: 429, headers } }]);
      const reply = await chat('sim/gpt');
      expectEnvelope(reply, 502, 'PROVIDER_ERROR');
      expect({ header: reply.headers.get('retry-after'), body: reply.body.retryAfter }).toEqual({
        header: '1',
        body: 1,
      });
    }
  });

  it('a request the gateway cannot send to the provider is a 400 naming why, never sent', async () => {
    for (const extra of [
      { n: 2 },
      { logprobs: true },
      { messages: [{ role: 'user', content: [{ type: 'file', file: {} }] }] },
    ]) {
      const reply = await chat('sim/claude', extra);
      expectEnvelope(reply, 400, 'INVALID_BODY');
      expect(reply.body).toMatchObject({
        error: 'INVALID_BODY',
        provider: 'claude',
        model: 'sim/claude',
        message: expect.stringMatching(
          /^The provider claude cannot take this request for sim\/claude: .*Anthropic/,
        ),
      });
    }
    const stream = await chat('sim/claude', { stream: true, n: 2 });
    expectEnvelope(stream, 400, 'INVALID_BODY');
    expect(calls('claude-sim')).toBe(0);
  });

  it('a tool message that answers no earlier tool call, or a tool call left unanswered, is a 400 naming it, never sent to Anthropic', async () => {
    const call = { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{}' } };
    for (const messages of [
      [
        { role: 'user', content: 'the weather?' },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      ],
      [
        { role: 'user', content: 'the weather?' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: 'call_2', content: 'sunny' },
      ],
    ]) {
      const reply = await chat('sim/claude', { messages });
      expectEnvelope(reply, 400, 'INVALID_BODY');
      expect(reply.body.message).toMatch(
        /messages\.\d\.tool_call_id.*call_\d.*assistant message just before it/,
      );
    }
    // a tool call the messages after it do not answer before the conversation goes on
    const unanswered = await chat('sim/claude', {
      messages: [
        { role: 'user', content: 'the weather?' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'user', content: 'never mind' },
      ],
    });
    expectEnvelope(unanswered, 400, 'INVALID_BODY');
    expect(unanswered.body.message).toMatch(/tool call call_1 has no tool message answering it/);
    expect(calls('claude-sim')).toBe(0);
    // answered: sent
    const answered = await chat('sim/claude', {
      messages: [
        { role: 'user', content: 'the weather?' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      ],
    });
    expect(answered.status).toBe(200);
  });

  it("tool results to Anthropic open the turn after the calls and answer that turn's calls: else a 400, never sent", async () => {
    const call = (id: string) => ({ id, type: 'function', function: { name: 'weather', arguments: '{}' } });
    const tool = (id: string) => ({ role: 'tool', tool_call_id: id, content: `sunny at ${id}` });
    const user = { role: 'user', content: 'the weather?' };
    // a user message before the answers (Anthropic: the message after tool uses begins with their results)
    const late = await chat('sim/claude', {
      messages: [user, { role: 'assistant', content: null, tool_calls: [call('a')] }, user, tool('a')],
    });
    expectEnvelope(late, 400, 'INVALID_BODY');
    expect(late.body.message).toMatch(/messages\.3\.tool_call_id \('a'\).*assistant message just before it/);
    // an answer to a call of an earlier turn, once the conversation went on (Anthropic: one of the message before)
    const stale = await chat('sim/claude', {
      messages: [
        user,
        { role: 'assistant', content: null, tool_calls: [call('a')] },
        tool('a'),
        { role: 'assistant', content: 'sunny' },
        tool('a'),
      ],
    });
    expectEnvelope(stale, 400, 'INVALID_BODY');
    expect(stale.body.message).toMatch(/messages\.4\.tool_call_id \('a'\).*assistant message just before it/);
    expect(calls('claude-sim')).toBe(0);
    // parallel calls answered in any order, and an assistant turn said in two messages (calls, then text), are sent
    for (const messages of [
      [user, { role: 'assistant', content: null, tool_calls: [call('a'), call('b')] }, tool('b'), tool('a')],
      [
        user,
        { role: 'assistant', content: null, tool_calls: [call('a')] },
        { role: 'assistant', content: 'checking' },
        tool('a'),
        user,
      ],
    ])
      expect((await chat('sim/claude', { messages })).status).toBe(200);
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
    w.sim.script([{ match: { model: 'stalling-sim' }, hang: true }]);
    const res = await fetch(`${w.p.gatewayUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${as.bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sim/stalling',
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
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

  it("an Anthropic stream a proxy ends with message_stop before the stop reason is cut; OpenAI's [DONE] ends a stream whole", async () => {
    const completions = recordCompletions(w);
    try {
      const stream = async (path: string, requestId: string, body: Record<string, unknown>) => {
        const res = await fetch(`${w.p.gatewayUrl}${path}`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${as.bearer}`,
            'content-type': 'application/json',
            'x-request-id': requestId,
          },
          body: JSON.stringify({ ...body, stream: true }),
        });
        const frames = (await res.text()).split('\n\n').filter(Boolean);
        return { frames, event: await completions.of(requestId) };
      };
      const messages = [{ role: 'user', content: 'a long one' }];
      const reply = { content: Array.from({ length: 20 }, (_, i) => `w${i}`).join(' ') };
      // the OpenAI face: [DONE] after a few words of the answer; the Anthropic face: message_stop
      w.sim.script([
        { match: { stream: true }, reply, streamFailure: { afterChunks: 6, mode: 'end-frame' } },
      ]);

      // Anthropic's protocol always gives a stop reason before message_stop: without one the answer was cut
      const cut = await stream('/v1/chat/completions', 'cut-chat-claude', { model: 'sim/claude', messages });
      expect(cut.frames.at(-1)).toBe('data: [DONE]');
      expect(JSON.parse(cut.frames.at(-2)!.slice(6)).error).toMatchObject({
        code: 'PROVIDER_ERROR',
        provider_error_type: 'incomplete_stream',
      });
      expect(cut.event.outcome).toBe('provider_error');
      // OpenAI-protocol servers that never send a finish reason (Gemini's compatibility layer, some proxies, TGI's
      // chunks each numbered as a new choice) end with [DONE]: it is the protocol's own end, the answer is whole
      const whole = await stream('/v1/chat/completions', 'done-chat-gpt', { model: 'sim/gpt', messages });
      expect(whole.frames.at(-1)).toBe('data: [DONE]');
      expect(whole.frames.some((f) => f.includes('"error"'))).toBe(false);
      expect(whole.event.outcome).toBe('success');
      // the Responses API does not answer a cut stream `completed` (nor the Messages API `end_turn`)
      const response = await stream('/v1/responses', 'cut-response', {
        model: 'sim/claude',
        input: 'a long one',
      });
      expect(response.frames.at(-2)).toMatch(/^event: response.failed\n/);
      const message = await stream('/v1/messages', 'cut-message', {
        model: 'sim/claude',
        max_tokens: 100,
        messages,
      });
      expect(message.frames.at(-1)).toMatch(/^event: error\n/);
    } finally {
      completions.stop();
    }
  });

  it('an Anthropic stream cut, lost or silent before any content is retried; the input its message_start reported is counted, however it ends', async () => {
    const completions = recordCompletions(w);
    try {
      const stream = async (requestId: string, model = 'sim/claude') => {
        const res = await fetch(`${w.p.gatewayUrl}/v1/chat/completions`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${as.bearer}`,
            'content-type': 'application/json',
            'x-request-id': requestId,
          },
          body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
        });
        await res.text();
        const { outcome, usage, cost } = await completions.of(requestId);
        return { outcome, usage, cost };
      };
      const reply = { usage: { prompt_tokens: 1000, completion_tokens: 7 } };
      // the first attempt's message_start reports its 1,000 input tokens, then a proxy ends the stream; the retry answers
      w.sim.script([
        {
          match: { model: 'claude-sim' },
          times: 1,
          reply,
          streamFailure: { afterChunks: 1, mode: 'disconnect' },
        },
        { match: { model: 'claude-sim' }, reply },
      ]);
      expect(await stream('cut-then-served')).toEqual({
        outcome: 'success',
        usage: { prompt_tokens: 2000, completion_tokens: 7, total_tokens: 2007 },
        cost: (2000 * 3 + 7 * 15) / 1e6,
      });
      // the connection lost there: nothing reached the caller, so it is retried as a loss before the first byte is
      w.sim.script([
        {
          match: { model: 'claude-sim' },
          times: 1,
          reply,
          streamFailure: { afterChunks: 1, mode: 'disconnect' },
        },
        { match: { model: 'claude-sim' }, reply },
      ]);
      expect(await stream('lost-then-served')).toEqual({
        outcome: 'success',
        usage: { prompt_tokens: 2000, completion_tokens: 7, total_tokens: 2007 },
        cost: (2000 * 3 + 7 * 15) / 1e6,
      });
      // every attempt fails so (Anthropic overloaded): the request failed, and each attempt's input was consumed
      w.sim.script([
        { match: { model: 'claude-sim' }, reply, streamFailure: { afterChunks: 1, mode: 'disconnect' } },
      ]);
      expect(await stream('cut-every-time')).toEqual({
        outcome: 'provider_error',
        usage: { prompt_tokens: 3000, completion_tokens: 0, total_tokens: 3000 },
        cost: (3000 * 3) / 1e6,
      });
      expect(w.sim.requests().filter((r) => r.model === 'claude-sim')).toHaveLength(7);
      // silent after its message_start until the model's timeout: that input was consumed too. A timeout of 2 s, so
      // that a loaded machine's pause before the message_start does not make it a timeout before any input
      const admin = await w.platformAdmin();
      const quick = modelEntry(
        'sim/claude-quick',
        'completion',
        { provider: 'claude', model: 'claude-quick' },
        {
          input_per_million: 3,
          output_per_million: 15,
        },
        { timeout_ms: 2_000 },
      );
      expect((await w.call('gateway', 'POST', '/v1/models', { bearer: admin.token }, quick)).status).toBe(
        201,
      );
      w.sim.script([
        { match: { model: 'claude-quick' }, reply, streamFailure: { afterChunks: 1, mode: 'hang' } },
      ]);
      expect(await stream('silent-after-start', 'sim/claude-quick')).toEqual({
        outcome: 'provider_error',
        usage: { prompt_tokens: 1000, completion_tokens: 0, total_tokens: 1000 },
        cost: (1000 * 3) / 1e6,
      });
      await w.call('gateway', 'DELETE', '/v1/models/sim/claude-quick', { bearer: admin.token });
      // cut after some content: the input is the one reported (800 of it read from the cache), not the tokenizer's
      const cached = {
        usage: { prompt_tokens: 1000, cached_tokens: 800, completion_tokens: 7 },
        content: 'a b c d e f',
      };
      w.sim.script([
        {
          match: { model: 'claude-sim' },
          reply: cached,
          streamFailure: { afterChunks: 5, mode: 'disconnect' },
        },
      ]);
      const cutLate = await stream('cut-after-content');
      expect(cutLate).toMatchObject({
        outcome: 'provider_error',
        usage: { prompt_tokens: 1000, cached_tokens: 800 },
      });
      expect(cutLate.usage.completion_tokens).toBeGreaterThan(0);
    } finally {
      completions.stop();
    }
  });

  it("an Anthropic stream cut before any content, then served: the org's month counts both attempts' input once, as the event does", async () => {
    const { owner } = await w.org('prov-cut-counted');
    const completions = recordCompletions(w);
    try {
      // the first attempt's message_start reports its 1,000 input tokens, then the connection drops; the retry answers
      const reply = { usage: { prompt_tokens: 1000, completion_tokens: 7 } };
      w.sim.script([
        {
          match: { model: 'claude-sim' },
          times: 1,
          reply,
          streamFailure: { afterChunks: 1, mode: 'disconnect' },
        },
        { match: { model: 'claude-sim' }, reply },
      ]);
      const res = await fetch(`${w.p.gatewayUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${owner.token}`,
          'content-type': 'application/json',
          'x-request-id': 'cut-then-served-counted',
        },
        body: JSON.stringify({
          model: 'sim/claude',
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      expect(await res.text()).toMatch(/data: \[DONE\]\n\n$/);
      const whole = { prompt_tokens: 2000, completion_tokens: 7, total_tokens: 2007 };
      expect((await completions.of('cut-then-served-counted')).usage).toEqual(whole);
      const counted = await w.counted(
        'prov-cut-counted',
        { bearer: owner.token },
        { requests: 1, tokens: 2007 },
      );
      expect(gauge(counted, 'llm.monthly_tokens').used).toBe(2007);
      expect(gauge(counted, 'llm.monthly_cost').used).toBeCloseTo((2000 * 3 + 7 * 15) / 1e6, 9);
      expect(completions.events.filter((e) => e.requestId === 'cut-then-served-counted')).toHaveLength(1);
    } finally {
      completions.stop();
    }
  });

  it('a client that disconnects cancels the provider call, and the event counts what was consumed', async () => {
    const completions = recordCompletions(w);
    try {
      await leaveStreamAfterFirstChunk(w, {
        path: '/v1/chat/completions',
        token: as.bearer,
        requestId: 'cancel-me',
        body: { model: 'sim/gpt', stream: true, messages: [{ role: 'user', content: 'a long one' }] },
      });
      const event = await completions.of('cancel-me');
      expect(event.outcome).toBe('client_cancelled');
      expect(event.usageSource).toBe('tokenizer');
      // far fewer than the 100 words the provider would have streamed
      expect(event.usage.completion_tokens).toBeLessThan(60);
    } finally {
      completions.stop();
    }
  });

  it('a client that leaves an Anthropic stream is billed the input its message_start reported and the output sent', async () => {
    const { owner } = await w.org('prov-leave-claude');
    const completions = recordCompletions(w);
    try {
      const leave = async (requestId: string, after: 'message_start' | 'first chunk') => {
        const controller = new AbortController();
        const answer = fetch(`${w.p.gatewayUrl}/v1/chat/completions`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${owner.token}`,
            'content-type': 'application/json',
            'x-request-id': requestId,
          },
          body: JSON.stringify({
            model: 'sim/claude',
            stream: true,
            messages: [{ role: 'user', content: 'a long one' }],
          }),
          signal: controller.signal,
        }).catch(() => null);
        // the answer's headers go out with its first chunk: before it, the client has only waited
        if (after === 'first chunk') await (await answer)!.body!.getReader().read();
        else
          await waitFor(() => w.sim.requests().find((r) => r.model === 'claude-sim' && r.framesSent === 1), {
            what: 'the message_start to be sent',
          });
        controller.abort();
        const { outcome, usage, cost } = await completions.of(requestId);
        return { outcome, usage, cost };
      };
      const reply = {
        usage: { prompt_tokens: 1000 },
        content: Array.from({ length: 100 }, (_, i) => `w${i}`).join(' '),
      };
      // its message_start reports 1,000 input tokens, then nothing comes until the client leaves
      w.sim.script([
        { match: { model: 'claude-sim' }, reply, streamFailure: { afterChunks: 1, mode: 'hang' } },
      ]);
      const early = await leave('leave-after-start', 'message_start');
      expect(early).toEqual({
        outcome: 'client_cancelled',
        usage: { prompt_tokens: 1000, completion_tokens: 0, total_tokens: 1000 },
        cost: (1000 * 3) / 1e6,
      });
      // after some content: the output sent so far, counted by the tokenizer (the provider reports none before its end)
      w.sim.reset();
      w.sim.script([{ match: { model: 'claude-sim' }, reply, chunkDelayMs: 100 }]);
      const late = await leave('leave-after-content', 'first chunk');
      expect(late).toMatchObject({ outcome: 'client_cancelled', usage: { prompt_tokens: 1000 } });
      expect(late.usage.completion_tokens).toBeGreaterThan(0);
      // far fewer than the 100 words the provider would have streamed
      expect(late.usage.completion_tokens).toBeLessThan(60);
      // llm-quota counts the month as the events say
      const tokens = early.usage.total_tokens + late.usage.total_tokens;
      const usage = await w.counted('prov-leave-claude', { bearer: owner.token }, { requests: 2, tokens });
      expect(gauge(usage, 'llm.monthly_tokens').used).toBe(tokens);
    } finally {
      completions.stop();
    }
  });

  it('an Anthropic stream the monthly budget cuts is billed the input its message_start reported', async () => {
    const { owner } = await w.org('prov-cut-claude', 'budget');
    const completions = recordCompletions(w);
    try {
      const content = Array.from({ length: 600 }, (_, i) => `word${i}`).join(' ');
      w.sim.script([{ match: { model: 'claude-sim' }, reply: { content, usage: { prompt_tokens: 100 } } }]);
      const res = await fetch(`${w.p.gatewayUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${owner.token}`,
          'content-type': 'application/json',
          'x-request-id': 'claude-budget-cut',
        },
        body: JSON.stringify({
          model: 'sim/claude',
          stream: true,
          messages: [{ role: 'user', content: 'long' }],
        }),
      });
      expect(await res.text()).toContain('MONTHLY_QUOTA_EXCEEDED');
      const event = await completions.of('claude-budget-cut');
      expect(event).toMatchObject({ outcome: 'budget_cut', usage: { prompt_tokens: 100 } });
      const tokens = event.usage.total_tokens;
      const usage = await w.counted('prov-cut-claude', { bearer: owner.token }, { requests: 1, tokens });
      expect(gauge(usage, 'llm.monthly_tokens').used).toBe(tokens);
    } finally {
      completions.stop();
    }
  });

  it('a stream whose end never comes after the usage report is billed the output the provider reported, hidden thinking included', async () => {
    const { owner } = await w.org('prov-unended');
    const completions = recordCompletions(w);
    try {
      // 12 prompt and 501 completion tokens, 500 of them hidden reasoning, reported by the usage chunk 300 ms after
      // the finish; then [DONE] never comes
      const usage = { prompt_tokens: 12, completion_tokens: 501 };
      const unended = { afterChunks: -1, mode: 'hang' } as const;
      w.sim.script([
        { ...reasoningReportAfterFinish('cheap-sim'), streamFailure: unended },
        { ...reasoningReportAfterFinish('gpt-stalled-sim'), streamFailure: unended },
      ]);
      const body = (model: string) => ({
        model,
        stream: true,
        messages: [{ role: 'user', content: 'think' }],
      });
      const leave = (requestId: string, model: string) =>
        leaveStreamAtFinish(w, {
          path: '/v1/chat/completions',
          token: owner.token,
          requestId,
          body: body(model),
        });
      const stay = async (requestId: string, model: string) => {
        const res = await fetch(`${w.p.gatewayUrl}/v1/chat/completions`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${owner.token}`,
            'content-type': 'application/json',
            'x-request-id': requestId,
          },
          body: JSON.stringify(body(model)),
        });
        await res.text();
      };
      // one client leaves at the finish, before the usage report; the other stays. Claude's message_delta brings the
      // stop reason and the usage at once: its answer is whole as it finishes (the next test)
      await Promise.all([leave('unended-left-gpt', 'sim/cheap'), stay('unended-stayed', 'sim/gpt-stalled')]);
      const billed = async (requestId: string) => {
        const { outcome, usage, usageSource } = await completions.of(requestId);
        return { outcome, usage, usageSource };
      };
      const whole = { usage: { ...usage, total_tokens: 513 }, usageSource: 'provider' };
      expect({
        leftGpt: await billed('unended-left-gpt'),
        stayed: await billed('unended-stayed'),
      }).toEqual({
        leftGpt: { outcome: 'client_cancelled', ...whole },
        stayed: { outcome: 'success', ...whole },
      });
      // llm-quota counts the month as the events say
      const counted = await w.counted(
        'prov-unended',
        { bearer: owner.token },
        { requests: 2, tokens: 2 * 513 },
      );
      expect(gauge(counted, 'llm.monthly_tokens').used).toBe(2 * 513);
    } finally {
      completions.stop();
    }
  });

  it('a stream whose provider stalls after every finish and its usage report ends whole: usage chunk, [DONE], success', async () => {
    const completions = recordCompletions(w);
    try {
      // the whole answer, every finish_reason (message_delta's stop reason) and the usage report, 500 of its 501
      // completion tokens hidden (OpenAI's reasoning, Claude's redacted thinking); then neither [DONE] nor message_stop
      // comes
      const usage = { prompt_tokens: 12, completion_tokens: 501 };
      const unended = { afterChunks: -1, mode: 'hang' } as const;
      w.sim.script([
        { ...reasoningReportAfterFinish('gpt-stalled-sim'), streamFailure: unended },
        {
          match: { model: 'claude-sim' },
          reply: { content: 'short', redactedThinking: true, usage },
          streamFailure: unended,
        },
      ]);
      const client = w.client(as);
      const read = async (model: string, requestId: string, n?: number) => {
        const chunks: OpenAI.ChatCompletionChunk[] = [];
        const stream = await client.chat.completions.create(
          {
            model,
            stream: true,
            stream_options: { include_usage: true },
            messages: [{ role: 'user', content: 'think' }],
            ...(model === 'sim/claude' ? { reasoning_effort: 'low' as const } : {}),
            ...(n ? { n } : {}),
          },
          { headers: { 'x-request-id': requestId } },
        );
        for await (const chunk of stream) chunks.push(chunk);
        const { outcome, usageSource } = await completions.of(requestId);
        return {
          text: chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''),
          usage: chunks.at(-1)?.usage,
          outcome,
          usageSource,
        };
      };
      const errors = async () =>
        metricSum(
          await (await fetch(`${w.p.admin.llmGateway}/metrics`)).text(),
          'llm_gateway_provider_errors_total',
          {},
        );
      const errorsBefore = await errors();
      const whole = { usage: expect.objectContaining({ ...usage, total_tokens: 513 }), outcome: 'success' };
      expect(await read('sim/gpt-stalled', 'stalled-gpt')).toEqual({
        text: 'short',
        ...whole,
        usageSource: 'provider',
      });
      expect(await read('sim/claude', 'stalled-claude')).toEqual({
        text: 'short',
        ...whole,
        usageSource: 'provider',
      });
      // the Messages API's stream gets its message_stop
      const res = await fetch(`${w.p.gatewayUrl}/v1/messages`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${as.bearer}`,
          'content-type': 'application/json',
          'x-request-id': 'stalled-message',
        },
        body: JSON.stringify({
          model: 'sim/claude',
          max_tokens: 100,
          stream: true,
          messages: [{ role: 'user', content: 'think' }],
        }),
      });
      const frames = (await res.text()).split('\n\n').filter(Boolean);
      expect(frames.at(-1)).toMatch(/^event: message_stop\n/);
      expect(frames.some((f) => f.startsWith('event: error'))).toBe(false);
      expect((await completions.of('stalled-message')).outcome).toBe('success');
      // the Responses API's stream is completed
      const response = await client.responses.create({ model: 'sim/claude', input: 'think', stream: true });
      const events: string[] = [];
      for await (const event of response) events.push(event.type);
      expect(events.at(-1)).toBe('response.completed');
      // nor is the deployment counted failed (routing would have it sit out)
      expect(await errors()).toBe(errorsBefore);
      // a stall before every choice has its finish (one of two asked for) stays an error
      w.sim.reset();
      w.sim.script([
        { match: { model: 'gpt-stalled-sim' }, reply: { content: 'one', usage }, streamFailure: unended },
      ]);
      await expect(read('sim/gpt-stalled', 'stalled-choice', 2)).rejects.toBeInstanceOf(APIError);
    } finally {
      completions.stop();
    }
  });

  it('a client that leaves after the last chunk is charged what the provider reports, hidden reasoning included', async () => {
    const completions = recordCompletions(w);
    try {
      // 12 prompt and 501 completion tokens (500 of them hidden reasoning), reported 300 ms after the finish
      w.sim.script([reasoningReportAfterFinish('gpt-sim')]);
      await leaveStreamAtFinish(w, {
        path: '/v1/chat/completions',
        token: as.bearer,
        requestId: 'leave-at-the-end',
        body: { model: 'sim/gpt', stream: true, messages: [{ role: 'user', content: 'think' }] },
      });
      const event = await completions.of('leave-at-the-end');
      expect({ outcome: event.outcome, source: event.usageSource, usage: event.usage }).toMatchObject({
        outcome: 'client_cancelled',
        source: 'provider',
        usage: { prompt_tokens: 12, completion_tokens: 501 },
      });
    } finally {
      completions.stop();
    }
  });
});
