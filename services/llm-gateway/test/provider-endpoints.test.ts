import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInProcessBus } from '@platform/bus';
import { createLogger, loadConfig } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { type ProviderSimulator, startProviderSimulator, tempDir } from '@platform/testkit';
import request from 'supertest';
import { catalogueCollections, type ModelDoc } from '../src/catalogue/catalogue-store';
import { llmGatewayConfigSchema } from '../src/config';
import { BUILT_IN_GATEWAY_FILE, GatewayFileSchema, readGatewayFile } from '../src/gateway-file';
import { fakeQuota, orgSettings, ownerHeaders, QUOTA_URL, startGatewayService } from './gateway-instance';
import { INTERNAL_SECRET } from './support';

/**
 * A model's deployments must be on providers that have the endpoint the model needs (decision 0105): an image,
 * speech, transcription or embeddings model on Anthropic, or `native_rerank` on Azure OpenAI, is refused by the
 * gateway file and by the catalogue API, a provider cannot change into a type its models cannot use, and an
 * entry stored before this check loses the deployments that could never serve it, so a failover never lands there.
 */
const providers = [
  { name: 'sim', type: 'openai', baseUrl: 'http://sim.test/v1', apiKey: 'sk-sim' },
  { name: 'sim-b', type: 'openai', baseUrl: 'http://sim.test/v1', apiKey: 'sk-sim-b' },
  { name: 'claude', type: 'anthropic', baseUrl: 'http://sim.test', apiKey: 'sk-ant' },
  {
    name: 'az',
    type: 'openai',
    baseUrl: 'http://sim.test',
    apiKey: 'k',
    azure: { apiVersion: '2024-10-21' },
  },
  { name: 'mock', type: 'mock' },
];
const on = (provider: string, model: string, weight?: number) => ({ provider, model, weight });

describe('the gateway file (LLM_GATEWAY_CONFIG)', () => {
  let folder: { dir: string; remove(): void };
  beforeAll(() => {
    folder = tempDir('gateway-endpoints-');
  });
  afterAll(() => folder.remove());
  const fileWith = (name: string, model: Record<string, unknown>) => {
    const file = path.join(folder.dir, name);
    writeFileSync(file, JSON.stringify({ providers, models: [model] }));
    return file;
  };

  it.each([
    [
      'an image model on Anthropic',
      { model_id: 'img/claude', type: 'image_generation', provider_config: on('claude', 'c') },
      'models.0.provider_config.provider: img/claude is a model of type image_generation: provider claude (anthropic) has no image generation endpoint',
    ],
    [
      'a speech model with one deployment on Anthropic',
      { model_id: 'tts/mixed', type: 'audio_speech', deployments: [on('mock', 'm'), on('claude', 'c')] },
      'models.0.deployments.1.provider: tts/mixed is a model of type audio_speech: provider claude (anthropic) has no speech endpoint',
    ],
    [
      'a transcription model on Anthropic',
      { model_id: 'stt/claude', type: 'audio_transcription', provider_config: on('claude', 'c') },
      'provider claude (anthropic) has no audio transcription endpoint',
    ],
    [
      'an embeddings model with one deployment on Anthropic',
      { model_id: 'emb/mixed', type: 'embeddings', deployments: [on('claude', 'c'), on('sim', 'e')] },
      'models.0.deployments.0.provider: emb/mixed is a model of type embeddings: provider claude (anthropic) has no embeddings endpoint',
    ],
    [
      'native rerank on Azure OpenAI',
      { model_id: 'rr/azure', type: 'completion', native_rerank: true, provider_config: on('az', 'gpt') },
      'rr/azure has native_rerank: provider az (Azure OpenAI) has no rerank endpoint',
    ],
  ])('%s stops the start, naming the model and the provider', (_what, model, why) => {
    const file = fileWith(`${String(model.model_id).replace('/', '-')}.json`, model);
    expect(() => readGatewayFile(file)).toThrow(why);
    expect(() =>
      loadConfig(llmGatewayConfigSchema, {
        PLATFORM_INTERNAL_SECRET: INTERNAL_SECRET,
        LLM_QUOTA_URL: QUOTA_URL,
        LLM_GATEWAY_CONFIG: file,
      }),
    ).toThrow(/LLM_GATEWAY_CONFIG/);
  });

  it('every model type stays valid on the providers that have its endpoint', () => {
    const models = [
      {
        model_id: 'chat',
        type: 'completion',
        deployments: [on('claude', 'c'), on('az', 'a'), on('sim', 's')],
      },
      {
        model_id: 'rr',
        type: 'completion',
        native_rerank: true,
        deployments: [on('sim', 's'), on('mock', 'm')],
      },
      { model_id: 'emb', type: 'embeddings', deployments: [on('az', 'a'), on('sim', 's'), on('mock', 'm')] },
      {
        model_id: 'img',
        type: 'image_generation',
        deployments: [on('az', 'a'), on('sim', 's'), on('mock', 'm')],
      },
      {
        model_id: 'stt',
        type: 'audio_transcription',
        deployments: [on('az', 'a'), on('sim', 's'), on('mock', 'm')],
      },
      {
        model_id: 'tts',
        type: 'audio_speech',
        deployments: [on('az', 'a'), on('sim', 's'), on('mock', 'm')],
      },
    ];
    expect(GatewayFileSchema.safeParse({ providers, models }).success).toBe(true);
    // the built-in mock models (the tests' own file, test/support.ts, is read by every test of the world)
    expect(GatewayFileSchema.safeParse(BUILT_IN_GATEWAY_FILE).success).toBe(true);
  });
});

describe('the catalogue API and the stored catalogue', () => {
  let sim: ProviderSimulator;
  let gateway: Awaited<ReturnType<typeof startGatewayService>>;
  const bus = createInProcessBus();
  const logged: Array<Record<string, unknown>> = [];

  const priced = { pricing: { input_per_million: 1, output_per_million: 1, per_image: 0.01 } };
  const file = () => ({
    providers: [
      ...providers.map((p) => ({ ...p })),
      { name: 'sim-img', type: 'openai', baseUrl: 'x', apiKey: 'k' },
    ],
    models: [
      { model_id: 'img/ok', type: 'image_generation', ...priced, provider_config: on('sim-img', 'img-ok') },
      {
        model_id: 'rr/sim',
        type: 'completion',
        ...priced,
        native_rerank: true,
        provider_config: on('sim-b', 'rr'),
      },
      { model_id: 'tts/mock', type: 'audio_speech', pricing: {}, provider_config: on('mock', 'mock-speech') },
    ],
  });
  /** entries stored before the catalogue checked endpoints: the file and the API refuse them now */
  const stored = [
    {
      _id: 'emb/main',
      type: 'embeddings',
      failover: 'emb/old-mixed',
      deployments: [on('sim', 'emb-main')],
    },
    // Anthropic drawn almost always, if it were drawn at all
    {
      _id: 'emb/old-mixed',
      type: 'embeddings',
      deployments: [on('claude', 'claude-emb', 1_000_000), on('sim-b', 'emb-b')],
    },
    {
      _id: 'emb/alone',
      type: 'embeddings',
      failover: 'emb/old-claude',
      deployments: [on('sim', 'emb-alone')],
    },
    { _id: 'emb/old-claude', type: 'embeddings', deployments: [on('claude', 'claude-emb-2')] },
  ];

  beforeAll(async () => {
    sim = await startProviderSimulator({ port: 0 });
    const gatewayFile = file();
    for (const p of gatewayFile.providers)
      if (p.type === 'anthropic') p.baseUrl = sim.anthropicBaseUrl;
      else if (p.type === 'openai') p.baseUrl = 'azure' in p ? sim.url : sim.openaiBaseUrl;
    const store = createEmbeddedStore();
    const { models } = catalogueCollections(store);
    for (const { _id, ...entry } of stored)
      await models.insertOne({ _id, ...entry, ...priced, source: 'api', updatedAt: new Date() } as ModelDoc);
    gateway = await startGatewayService({
      file: gatewayFile,
      store,
      bus,
      // llm-quota's answer for the organization; every other address is a provider's
      fetch: fakeQuota(() => orgSettings('acme')),
      env: { LLM_GATEWAY_RETRY_BASE_MS: '1' },
      logger: createLogger({
        name: 'llm-gateway',
        level: 'error',
        destination: { write: (line: string) => logged.push(JSON.parse(line)) },
      }),
    });
  }, 30_000);
  afterAll(async () => {
    await gateway?.stop();
    await bus.close();
    await sim?.close();
  });
  beforeEach(() => sim.reset());

  const operator = (method: 'post' | 'put' | 'patch' | 'get', route: string, body?: unknown) =>
    request(gateway.service.handler)
      [method](route)
      .set('x-platform-internal-secret', INTERNAL_SECRET)
      .send(body as object);
  const embed = (model: string) =>
    request(gateway.service.handler)
      .post('/v1/embeddings')
      .set(ownerHeaders('acme'))
      .send({ model, input: 'hello' });
  const received = (model: string) => sim.requests().filter((r) => r.model === model).length;

  it('POST /v1/models refuses a media model on a provider without its endpoint: 400 INVALID_BODY naming each', async () => {
    const res = await operator('post', '/v1/models', {
      model_id: 'img/claude',
      type: 'image_generation',
      deployments: [on('sim', 'img'), on('claude', 'c')],
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'INVALID_BODY',
      details: {
        issues: [
          {
            field: 'deployments.1.provider',
            message:
              'img/claude is a model of type image_generation: provider claude (anthropic) has no image generation endpoint',
          },
        ],
      },
    });
    expect((await operator('get', '/v1/models/img/claude?orgSlug=all')).status).toBe(404);

    const rerank = await operator('post', '/v1/models', {
      model_id: 'rr/azure',
      type: 'completion',
      native_rerank: true,
      provider_config: on('az', 'gpt'),
    });
    expect(rerank.status).toBe(400);
    expect(rerank.body.details.issues).toEqual([
      {
        field: 'provider_config.provider',
        message: 'rr/azure has native_rerank: provider az (Azure OpenAI) has no rerank endpoint',
      },
    ]);
  });

  it('PATCH cannot move a model onto such a provider; the entry stays as it was', async () => {
    const res = await operator('patch', '/v1/models/tts/mock', {
      provider_config: null,
      deployments: [on('mock', 'mock-speech'), on('claude', 'c')],
    });
    expect(res.status).toBe(400);
    expect(res.body.details.issues).toEqual([
      {
        field: 'deployments.1.provider',
        message:
          'tts/mock is a model of type audio_speech: provider claude (anthropic) has no speech endpoint',
      },
    ]);
    const now = await operator('get', '/v1/models/tts/mock?orgSlug=all');
    expect(now.body).not.toHaveProperty('deployments');
  });

  it('PUT /v1/models refuses the whole list, naming the entry', async () => {
    const res = await operator('put', '/v1/models', {
      models: [
        { model_id: 'fine', type: 'completion', provider_config: on('claude', 'c') },
        { model_id: 'stt/claude', type: 'audio_transcription', provider_config: on('claude', 'c') },
      ],
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'INVALID_ITEMS',
      details: {
        items: [
          {
            index: 1,
            model_id: 'stt/claude',
            issues: [
              {
                field: 'provider_config.provider',
                message:
                  'stt/claude is a model of type audio_transcription: provider claude (anthropic) has no audio transcription endpoint',
              },
            ],
          },
        ],
      },
    });
    expect((await operator('get', '/v1/models/img/ok?orgSlug=all')).status).toBe(200);
  });

  it('a provider cannot become a type (or an Azure one) its models cannot use', async () => {
    const toAnthropic = await operator('put', '/v1/providers/sim-img', {
      type: 'anthropic',
      baseUrl: sim.anthropicBaseUrl,
    });
    expect(toAnthropic.status).toBe(400);
    expect(toAnthropic.body).toMatchObject({
      code: 'INVALID_BODY',
      details: {
        issues: [
          {
            field: 'type',
            model_id: 'img/ok',
            message:
              'img/ok is a model of type image_generation: provider sim-img (anthropic) has no image generation endpoint',
          },
        ],
      },
    });
    const toAzure = await operator('put', '/v1/providers/sim-b', {
      type: 'openai',
      baseUrl: sim.url,
      azure: { apiVersion: '2024-10-21' },
    });
    expect(toAzure.status).toBe(400);
    expect(toAzure.body.details.issues).toEqual([
      {
        field: 'azure',
        model_id: 'rr/sim',
        message: 'rr/sim has native_rerank: provider sim-b (Azure OpenAI) has no rerank endpoint',
      },
    ]);
    const listed: Array<{ name: string }> = (await operator('get', '/v1/providers')).body.data;
    expect(listed.find((p) => p.name === 'sim-img')).toMatchObject({ type: 'openai' });
    expect(listed.find((p) => p.name === 'sim-b')).not.toHaveProperty('azure');
    // a change keeping what its models use is taken
    expect(
      (
        await operator('put', '/v1/providers/sim-img', {
          type: 'openai',
          baseUrl: sim.openaiBaseUrl,
          apiKey: 'k2',
        })
      ).status,
    ).toBe(200);
  });

  it('a stored entry loses the deployments that cannot serve it: a failover lands on those that can', async () => {
    sim.script([{ match: { model: 'emb-main' }, error: { status: 500 } }]);
    const res = await embed('emb/main');
    expect(res.status).toBe(200);
    expect(res.body.model).toBe('emb/old-mixed');
    expect(received('emb-main')).toBe(3);
    expect(received('emb-b')).toBe(1);
    expect(logged).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          model: 'emb/old-mixed',
          provider: 'claude',
          endpoint: 'embeddings',
          msg: 'deployment left out: its provider has not the endpoint its model needs',
        }),
      ]),
    );
  });

  it('a stored entry none of whose deployments can serve is not served: its failover from a failing model answers that failure', async () => {
    sim.script([{ match: { model: 'emb-alone' }, error: { status: 503 } }]);
    const res = await embed('emb/alone');
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({ code: 'PROVIDER_ERROR', model: 'emb/alone', provider: 'sim' });
    const direct = await embed('emb/old-claude');
    expect(direct.status).toBe(404);
    expect(direct.body.code).toBe('MODEL_NOT_FOUND');
    expect(sim.requests().filter((r) => r.api === 'anthropic')).toHaveLength(0);
  });
});
