import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInProcessBus } from '@platform/bus';
import { forkParty, partyReady, stall, stopParty } from '@platform/testkit';
import request from 'supertest';
import { orgSettings, ownerHeaders, startGatewayService } from './gateway-instance';
import type { PauseScript } from './pause-provider-process';

/**
 * When the gateway's own process stalls past one of its deadlines (a long garbage collection, a starved
 * container) while a provider (or llm-quota) answers in time, the answer is whole: the bytes that arrived during the
 * stall are read before the deadline is judged. The provider and llm-quota run in a process of their own, which goes
 * on sending while the test blocks this one (the gateway's) for longer than the deadline.
 */
describe("an answer that arrived while the gateway's process stalled", () => {
  const bus = createInProcessBus();
  let provider: ChildProcess;
  let gateway: Awaited<ReturnType<typeof startGatewayService>>;

  beforeAll(async () => {
    provider = forkParty(path.join(__dirname, 'pause-provider-process.ts'));
    const { url, quotaUrl } = await partyReady<{ url: string; quotaUrl: string }>(provider, 'the provider');
    gateway = await startGatewayService({
      file: {
        providers: [
          { name: 'paused', type: 'openai', baseUrl: `${url}/v1`, apiKey: 'sk-paused' },
          {
            name: 'azure',
            type: 'openai',
            baseUrl: url,
            apiKey: 'az-paused',
            azure: { apiVersion: '2024-10-21' },
          },
        ],
        models: [
          // silence of more than 1.5 s is the provider's: the stalls below last 3 s
          {
            model_id: 'paused/gpt',
            type: 'completion',
            provider_config: { provider: 'paused', model: 'gpt-paused' },
            timeout_ms: 1_500,
          },
          // the gateway's default timeout: the stalls below are shorter, only the waits after a report end in them;
          // a prefix cache's prompt tokens priced apart, as vLLM's are
          {
            model_id: 'paused/patient',
            type: 'completion',
            provider_config: { provider: 'paused', model: 'gpt-patient' },
            pricing: { input_per_million: 2, cached_input_per_million: 0.5, output_per_million: 8 },
          },
          {
            model_id: 'azure/gpt',
            type: 'completion',
            provider_config: { provider: 'azure', model: 'gpt-deployment' },
          },
        ],
      },
      bus,
      fetch,
      env: { LLM_QUOTA_URL: quotaUrl, LLM_GATEWAY_SETTINGS_TTL_MS: '0' },
    });
  }, 60_000);
  afterAll(async () => {
    await gateway?.stop();
    await bus.close();
    await stopParty(provider);
  });

  /** scripts the provider's process; this process stalls `ms` once that says the moment has come */
  const scriptStall = async (script: Omit<PauseScript, 'settings'>, ms: number) => {
    let stalled = false;
    const onPause = (m: unknown) => {
      if (m !== 'pause') return;
      provider.off('message', onPause);
      // a turn later: what this process has already received of the answer is read first
      setImmediate(() => {
        stall(ms);
        stalled = true;
      });
    };
    provider.on('message', onPause);
    const scripted = new Promise((resolve) => {
      const onScripted = (m: unknown) => {
        if (m !== 'scripted') return;
        provider.off('message', onScripted);
        resolve(undefined);
      };
      provider.on('message', onScripted);
    });
    provider.send({ settings: orgSettings('any'), ...script });
    await scripted;
    return { stalled: () => stalled };
  };

  const post = (route: string, body: Record<string, unknown>, org = 'pause-org') =>
    request(gateway.service.handler).post(route).set(ownerHeaders(org)).send(body);
  const messages = [{ role: 'user', content: 'hello' }];
  /** the chunks of an event stream's body */
  const chunksOf = (text: string) =>
    text
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: {'))
      .map((frame) => JSON.parse(frame.slice('data: '.length)));

  it('an answer sent within the timeout while the gateway stalled past it is served, not a 504', async () => {
    const run = await scriptStall(
      { rules: [{ latencyMs: 300, reply: { content: 'answered in time' } }], pauseOn: 'request' },
      3_000,
    );
    const res = await post('/v1/chat/completions', { model: 'paused/gpt', messages });
    expect(run.stalled()).toBe(true);
    expect({ status: res.status, content: res.body.choices?.[0]?.message?.content }).toEqual({
      status: 200,
      content: 'answered in time',
    });
  });

  it("a stream's first bytes sent within the timeout while the gateway stalled past it are streamed, not a 504", async () => {
    const run = await scriptStall(
      { rules: [{ latencyMs: 300, reply: { content: 'answered in time' } }], pauseOn: 'request' },
      3_000,
    );
    const res = await post('/v1/chat/completions', { model: 'paused/gpt', messages, stream: true });
    expect(run.stalled()).toBe(true);
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/data: \[DONE\]\n\n$/);
    const chunks = chunksOf(res.text);
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe('answered in time');
  });

  it("a stream's next chunks sent within the timeout while the gateway stalled past it end the answer whole, not in an error", async () => {
    const run = await scriptStall(
      {
        rules: [{ chunkDelayMs: 200, reply: { content: 'one two three four five six' } }],
        pauseOn: { frame: '"content":" two"' },
      },
      3_000,
    );
    const res = await post('/v1/chat/completions', { model: 'paused/gpt', messages, stream: true });
    expect(run.stalled()).toBe(true);
    expect(res.text).toMatch(/data: \[DONE\]\n\n$/);
    const chunks = chunksOf(res.text);
    expect(chunks.filter((c) => c.error)).toEqual([]);
    expect(chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('')).toBe(
      'one two three four five six',
    );
  });

  it("a one-choice stream's usage chunk sent right after its finishing chunk's report, the gateway stalled, is the report the client gets", async () => {
    // vLLM's usage on every chunk lacks the cached prompt tokens that the usage chunk following the finish says
    const run = await scriptStall(
      {
        rules: [
          {
            chunkDelayMs: 100,
            reply: {
              content: 'Hello there',
              continuousUsage: true,
              continuousUsageCachedTokens: 800,
              usage: { prompt_tokens: 1000 },
            },
          },
        ],
        pauseOn: { frame: '"finish_reason":"' },
      },
      2_000,
    );
    const res = await post('/v1/completions', {
      model: 'paused/patient',
      prompt: 'a long shared prefix',
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(run.stalled()).toBe(true);
    expect(res.text).toMatch(/data: \[DONE\]\n\n$/);
    const usage = chunksOf(res.text).filter((c) => c.usage);
    expect(usage).toEqual([
      expect.objectContaining({
        usage: expect.objectContaining({
          prompt_tokens: 1000,
          prompt_tokens_details: { cached_tokens: 800 },
        }),
      }),
    ]);
  });

  it("Azure's content filter verdict sent soon after the usage report, the gateway stalled past the wait for it, reaches the client", async () => {
    // the verdict wait after the report is 5 s: the stall outlasts it
    const run = await scriptStall(
      {
        rules: [{ chunkDelayMs: 200, reply: { content: 'short', asyncContentFilter: true } }],
        pauseOn: { frame: '"choices":\\[\\],"usage":\\{' },
      },
      6_000,
    );
    const res = await post('/v1/chat/completions', {
      model: 'azure/gpt',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(run.stalled()).toBe(true);
    expect(res.text).toMatch(/data: \[DONE\]\n\n$/);
    const chunks = chunksOf(res.text);
    // the filter's last annotation, its verdict on the answer's end, comes before the usage chunk
    const verdicts = chunks.filter((c) => c.choices?.[0]?.content_filter_results?.violence !== undefined);
    expect(verdicts.map((c) => c.choices[0].content_filter_results.violence)).toEqual([
      { filtered: false, severity: 'safe' },
    ]);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: expect.any(Object) });
  });

  it("llm-quota's settings sent within their timeout while the gateway stalled past it are used, not a 503", async () => {
    // an organization whose settings the gateway never read: none are held to fall back on; the timeout is 5 s
    const run = await scriptStall({ rules: [], pauseOn: 'settings', settingsLatencyMs: 300 }, 6_000);
    const res = await post('/v1/chat/completions', { model: 'paused/patient', messages }, 'pause-new-org');
    expect(run.stalled()).toBe(true);
    expect(res.status).toBe(200);
  });
});
