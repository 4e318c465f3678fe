import { createInProcessBus } from '@platform/bus';
import { type LlmCompletionEvent, Subjects } from '@platform/contracts';
import { createEmbeddedStore } from '@platform/store';
import { type ProviderSimulator, startProviderSimulator, waitFor } from '@platform/testkit';
import request from 'supertest';
import { fakeQuota, orgSettings, ownerHeaders, startGatewayService } from '../../test/gateway-instance';
import { catalogueCollections, type ModelDoc } from '../catalogue/catalogue-store';
import { toAnthropicRequest } from '../providers/anthropic/anthropic-translate';

// Anthropic's translation, counted: a request's body is translated before admission as well as when it is sent
jest.mock('../providers/anthropic/anthropic-translate', () => {
  const actual = jest.requireActual('../providers/anthropic/anthropic-translate');
  return { ...actual, toAnthropicRequest: jest.fn(actual.toAnthropicRequest) };
});

/**
 * Which deployments a request may reach, through the gateway's routes against a provider simulator: a deployment
 * whose provider cannot serve the request (a model without the asked dimensions; Anthropic, which has no image or
 * speech endpoint, in an entry stored before the catalogue refused it, decision 0105) is never drawn, in the
 * requested model or in its failover chain; and a request that got no answer is accounted to the deployment that
 * failed it last.
 */
describe('the deployments a request may reach', () => {
  let sim: ProviderSimulator;
  let gateway: Awaited<ReturnType<typeof startGatewayService>>;
  const bus = createInProcessBus();
  const events: LlmCompletionEvent[] = [];

  const priced = { pricing: { input_per_million: 1, output_per_million: 1, per_image: 0.01 } };
  const on = (provider: string, model: string, weight?: number) => ({ provider, model, weight });
  const file = {
    providers: [
      { name: 'sim', type: 'openai', baseUrl: '', apiKey: 'sk-sim' },
      { name: 'sim-b', type: 'openai', baseUrl: '', apiKey: 'sk-sim-b' },
      { name: 'claude', type: 'anthropic', baseUrl: '', apiKey: 'sk-ant' },
      { name: 'claude-b', type: 'anthropic', baseUrl: '', apiKey: 'sk-ant-b' },
      { name: 'mock', type: 'mock' },
    ],
    models: [
      // embeddings: the failover model has not the dimensions asked for
      {
        model_id: 'emb/64',
        type: 'embeddings',
        ...priced,
        supported_dimensions: [64],
        failover: 'emb/256',
        deployments: [on('sim', 'emb-64')],
      },
      {
        model_id: 'emb/256',
        type: 'embeddings',
        ...priced,
        supported_dimensions: [256],
        deployments: [on('sim', 'emb-256')],
      },
      // chat: a pair whose second deployment is drawn almost always, and a model failing over to another provider
      {
        model_id: 'chat/pair',
        type: 'completion',
        ...priced,
        deployments: [on('sim', 'pair-a', 1), on('sim-b', 'pair-b', 1_000_000)],
      },
      {
        model_id: 'chat/first',
        type: 'completion',
        ...priced,
        failover: 'chat/second',
        deployments: [on('sim', 'chat-first')],
      },
      { model_id: 'chat/second', type: 'completion', ...priced, deployments: [on('sim-b', 'chat-second')] },
      // chat on Anthropic, whose translation cannot carry some requests (`n: 2`): drawn almost always, failed over to
      {
        model_id: 'chat/mostly-claude',
        type: 'completion',
        ...priced,
        deployments: [on('claude', 'claude-mostly', 1_000_000), on('sim', 'mostly-sim')],
      },
      {
        model_id: 'chat/to-claude',
        type: 'completion',
        ...priced,
        failover: 'chat/claude',
        deployments: [on('sim', 'to-claude')],
      },
      { model_id: 'chat/claude', type: 'completion', ...priced, deployments: [on('claude', 'claude-only')] },
      // Anthropic on two providers, failing over to Anthropic
      {
        model_id: 'chat/claudes',
        type: 'completion',
        ...priced,
        failover: 'chat/claude',
        deployments: [on('claude', 'claudes-a'), on('claude-b', 'claudes-b')],
      },
      // text completions on the mock, which answers at most 2048 choices a request: drawn almost always
      {
        model_id: 'text/mostly-mock',
        type: 'completion',
        ...priced,
        deployments: [on('mock', 'mostly-mock', 1_000_000), on('sim', 'text-sim')],
      },
      {
        model_id: 'img/failing',
        type: 'image_generation',
        ...priced,
        failover: 'img/failing-b',
        deployments: [on('sim', 'img-failing')],
      },
      {
        model_id: 'img/failing-b',
        type: 'image_generation',
        ...priced,
        deployments: [on('sim-b', 'img-failing-b')],
      },
    ],
  };

  /**
   * Entries stored before the catalogue refused deployments on providers without the model's endpoint (the file
   * and the API refuse them now): images, a failing model, then one drawing Anthropic almost always, and a model
   * on Anthropic alone.
   */
  const stored = [
    {
      _id: 'img/first',
      type: 'image_generation',
      ...priced,
      failover: 'img/mixed',
      deployments: [on('sim', 'img-first')],
    },
    {
      _id: 'img/mixed',
      type: 'image_generation',
      ...priced,
      deployments: [on('claude', 'claude-img-2', 1_000_000), on('sim-b', 'img-mixed')],
    },
    {
      _id: 'img/alone',
      type: 'image_generation',
      ...priced,
      failover: 'img/nowhere',
      deployments: [on('sim', 'img-alone')],
    },
    { _id: 'img/nowhere', type: 'image_generation', ...priced, deployments: [on('claude', 'claude-img-3')] },
    // speech: the mock has it, Anthropic (drawn almost always) has not
    {
      _id: 'speech/mixed',
      type: 'audio_speech',
      pricing: { per_million_characters: 1 },
      deployments: [on('claude', 'claude-speech', 1_000_000), on('mock', 'mock-speech')],
    },
  ];

  beforeAll(async () => {
    sim = await startProviderSimulator({ port: 0 });
    for (const p of file.providers)
      if (p.type === 'openai') p.baseUrl = sim.openaiBaseUrl;
      else if (p.type === 'anthropic') p.baseUrl = sim.anthropicBaseUrl;
    const store = createEmbeddedStore();
    for (const { _id, ...entry } of stored)
      await catalogueCollections(store).models.insertOne({
        _id,
        ...entry,
        source: 'api',
        updatedAt: new Date(),
      } as ModelDoc);
    gateway = await startGatewayService({
      file,
      store,
      bus,
      // llm-quota's answer for the organization; every other address is a provider's
      fetch: fakeQuota(() => orgSettings('acme')),
      env: { LLM_GATEWAY_RETRY_BASE_MS: '1', LLM_GATEWAY_OUTBOX_INTERVAL_MS: '50' },
    });
    bus.subscribe(Subjects.llmCompletion, (e) => {
      events.push(e as LlmCompletionEvent);
    });
  }, 30_000);
  afterAll(async () => {
    await gateway?.stop();
    await bus.close();
    await sim?.close();
  });
  beforeEach(() => sim.reset());

  let seq = 0;
  const post = async (route: string, body: Record<string, unknown>) => {
    const requestId = `serving-${++seq}`;
    const res = await request(gateway.service.handler)
      .post(route)
      .set(ownerHeaders('acme'))
      .set('x-request-id', requestId)
      .send(body);
    return { res, requestId };
  };
  const image = (model: string) => post('/v1/images/generations', { model, prompt: 'a red circle' });
  const received = (model: string) => sim.requests().filter((r) => r.model === model).length;
  const eventOf = (requestId: string) =>
    waitFor(() => events.find((e) => e.requestId === requestId), { what: `the usage event of ${requestId}` });

  it('a failover chain passes over the deployments whose provider has not the endpoint', async () => {
    sim.script([{ match: { model: 'img-first' }, error: { status: 500 } }]);
    const { res, requestId } = await image('img/first');
    expect(res.status).toBe(200);
    expect(res.body.model).toBe('img/mixed');
    expect(received('img-first')).toBe(3);
    expect(received('img-mixed')).toBe(1);
    expect(await eventOf(requestId)).toMatchObject({
      model: 'img/mixed',
      provider: 'sim-b',
      outcome: 'success',
    });
  });

  it('a model whose chain has nothing else that can serve answers its own failure, never a 500', async () => {
    sim.script([{ match: { model: 'img-alone' }, error: { status: 503 } }]);
    const { res } = await image('img/alone');
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({ code: 'PROVIDER_ERROR', provider: 'sim', model: 'img/alone' });
  });

  it('a model none of whose deployments can serve is not served, and no provider is called', async () => {
    const { res } = await image('img/nowhere');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: 'MODEL_NOT_FOUND' });
    expect(sim.requests()).toHaveLength(0);
  });

  it("a model's deployments whose provider has not the endpoint are never drawn", async () => {
    for (const input of ['first', 'second', 'third']) {
      const { res, requestId } = await post('/v1/audio/speech', {
        model: 'speech/mixed',
        input,
        voice: 'alloy',
      });
      expect(res.status).toBe(200);
      expect(await eventOf(requestId)).toMatchObject({ model: 'speech/mixed', provider: 'mock' });
    }
    expect(sim.requests()).toHaveLength(0);
  });

  it('a failover model without the dimensions asked for is never called', async () => {
    sim.script([{ match: { model: 'emb-64' }, error: { status: 500 } }]);
    const { res } = await post('/v1/embeddings', { model: 'emb/64', input: 'hello', dimensions: 64 });
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({ code: 'PROVIDER_ERROR', model: 'emb/64' });
    expect(received('emb-64')).toBe(3);
    expect(received('emb-256')).toBe(0);
  });

  it("a request Anthropic's translation cannot carry is never drawn to an Anthropic deployment, nor failed over to one", async () => {
    const chat = (model: string, stream = false) =>
      post('/v1/chat/completions', { model, n: 2, stream, messages: [{ role: 'user', content: 'hello' }] });
    for (const stream of [false, true]) {
      const { res, requestId } = await chat('chat/mostly-claude', stream);
      expect(res.status).toBe(200);
      expect(await eventOf(requestId)).toMatchObject({ model: 'chat/mostly-claude', provider: 'sim' });
    }
    sim.script([{ match: { model: 'to-claude' }, error: { status: 500 } }]);
    const failed = await chat('chat/to-claude');
    expect(failed.res.status).toBe(502);
    expect(failed.res.body).toMatchObject({ code: 'PROVIDER_ERROR', model: 'chat/to-claude' });
    // refused by every deployment: the 400 naming why, before admission (no usage event is sent)
    const refused = await chat('chat/claude');
    expect(refused.res.status).toBe(400);
    expect(refused.res.body).toMatchObject({
      code: 'INVALID_BODY',
      provider: 'claude',
      model: 'chat/claude',
      message: expect.stringContaining('n must be 1'),
    });
    expect(received('claude-mostly') + received('claude-only')).toBe(0);
  });

  it('a text completion with more choices than the mock answers is never drawn to the mock', async () => {
    const many = Array.from({ length: 17 }, (_, i) => `prompt ${i}`);
    for (const stream of [false, true]) {
      const { res, requestId } = await post('/v1/completions', {
        model: 'text/mostly-mock',
        prompt: many,
        n: 128,
        stream,
      });
      expect([stream, res.status]).toEqual([stream, 200]);
      expect(await eventOf(requestId)).toMatchObject({ model: 'text/mostly-mock', provider: 'sim' });
    }
    expect(received('text-sim')).toBe(2);
  });

  it('a body is translated for Anthropic once before admission, not once per deployment of the model and its failover', async () => {
    const translated = toAnthropicRequest as jest.Mock;
    // a big multimodal prompt: each translation reads all of it
    const image = `data:image/png;base64,${'A'.repeat(100_000)}`;
    const content = [
      { type: 'text', text: 'what is this?' },
      { type: 'image_url', image_url: { url: image } },
    ];
    for (const stream of [false, true]) {
      translated.mockClear();
      const { res } = await post('/v1/chat/completions', {
        model: 'chat/claudes',
        stream,
        messages: [{ role: 'user', content }],
      });
      expect(res.status).toBe(200);
      // the check before admission, then the call
      expect(translated).toHaveBeenCalledTimes(2);
    }
  });

  describe("a failed request's usage event", () => {
    it('names the deployment that failed it, not the first of its model', async () => {
      sim.script([{ match: { model: 'pair-b' }, error: { status: 400 } }]);
      const { res, requestId } = await post('/v1/chat/completions', {
        model: 'chat/pair',
        messages: [{ role: 'user', content: 'hello' }],
      });
      expect(res.status).toBe(502);
      expect(res.body).toMatchObject({ provider: 'sim-b' });
      expect(await eventOf(requestId)).toMatchObject({
        model: 'chat/pair',
        provider: 'sim-b',
        outcome: 'provider_error',
      });
    });

    it('names the failover model and provider that failed last', async () => {
      sim.script([{ error: { status: 500 } }]);
      const chat = await post('/v1/chat/completions', {
        model: 'chat/first',
        messages: [{ role: 'user', content: 'hello' }],
      });
      expect(chat.res.status).toBe(502);
      expect(received('chat-second')).toBe(3);
      expect(await eventOf(chat.requestId)).toMatchObject({
        model: 'chat/second',
        provider: 'sim-b',
        outcome: 'provider_error',
      });

      const images = await image('img/failing');
      expect(images.res.status).toBe(502);
      expect(await eventOf(images.requestId)).toMatchObject({
        model: 'img/failing-b',
        provider: 'sim-b',
        outcome: 'provider_error',
      });
    });
  });
});
