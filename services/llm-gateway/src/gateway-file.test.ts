import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '@platform/testkit';
import { seedCatalogue } from './catalogue/catalogue-store';
import { readGatewayFile } from './gateway-file';

describe('the gateway file (LLM_GATEWAY_CONFIG)', () => {
  const dir = tempDir('gateway-file-');
  afterAll(() => dir.remove());
  const write = (name: string, text: string) => {
    const file = path.join(dir.dir, name);
    writeFileSync(file, text);
    return file;
  };
  const expected = {
    providers: [
      { name: 'local', type: 'openai', baseUrl: 'http://127.0.0.1:8000/v1', apiKeyEnv: 'LOCAL_KEY' },
    ],
    models: [
      {
        model_id: 'local/chat',
        type: 'completion',
        provider_config: { provider: 'local', model: 'qwen' },
        pricing: { input_per_million: 0.5, output_per_million: 1.5 },
      },
    ],
  };

  it('reads YAML and JSON to the same catalogue', () => {
    const yaml = write(
      'gateway.yaml',
      [
        'providers:',
        '  - name: local',
        '    type: openai',
        '    baseUrl: http://127.0.0.1:8000/v1',
        '    apiKeyEnv: LOCAL_KEY',
        'models:',
        '  - model_id: local/chat',
        '    type: completion',
        '    provider_config: { provider: local, model: qwen }',
        '    pricing: { input_per_million: 0.5, output_per_million: 1.5 }',
        '',
      ].join('\n'),
    );
    const json = write('gateway.json', JSON.stringify(expected));
    expect(readGatewayFile(yaml)).toEqual(readGatewayFile(json));
    expect(readGatewayFile(yaml)).toMatchObject(expected);
  });

  it('names the file and the format when it cannot be parsed', () => {
    expect(() => readGatewayFile(write('bad.yaml', 'providers: [unclosed'))).toThrow(
      /bad\.yaml is not valid YAML/,
    );
    expect(() => readGatewayFile(write('bad.json', '{"providers": '))).toThrow(/bad\.json is not valid JSON/);
  });

  it('refuses a provider key or header HTTP cannot send (they would fail every call as unreachable)', () => {
    const provider = (over: Record<string, unknown>) =>
      write(
        'odd.json',
        JSON.stringify({
          ...expected,
          providers: [{ ...expected.providers[0], apiKeyEnv: undefined, ...over }],
        }),
      );
    expect(() => readGatewayFile(provider({ apiKey: 'sk-pasted\n' }))).toThrow(/apiKey/);
    expect(() => readGatewayFile(provider({ headers: { 'x team': 'a' } }))).toThrow(/headers/);
    expect(() => readGatewayFile(provider({ headers: { 'x-team': 'a\r\nx-evil: 1' } }))).toThrow(/headers/);
    expect(
      readGatewayFile(provider({ apiKey: 'sk-fine', headers: { 'x-team': 'search\tteam' } })).providers[0],
    ).toMatchObject({
      apiKey: 'sk-fine',
    });
  });

  it('refuses at start a key read from the environment with its trailing newline, naming the variable', async () => {
    const file = readGatewayFile(write('env.json', JSON.stringify(expected)));
    const collections = { providers: { deleteOne: async () => 0, insertOne: async () => undefined } };
    await expect(
      seedCatalogue(collections as never, file, {
        box: { seal: (v: string) => v } as never,
        clock: { now: () => new Date() },
        env: { LOCAL_KEY: 'sk-from-a-secret\n' },
      }),
    ).rejects.toThrow(/LOCAL_KEY holds a space, line break or control character/);
  });

  it("loads the README's example as it is written", () => {
    const readme = readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8');
    const example = /## The gateway file[^\n]*\n+```yaml\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(example).toBeDefined();
    const file = readGatewayFile(write('readme.yaml', example!));
    expect(file.models.map((m) => m.model_id)).toContain('llama-local');
    expect(file.models.find((m) => m.model_id === 'gpt-4o-mini')?.failover).toBe('llama-local');
    expect(file.models.find((m) => m.model_id === 'gpt-4o')?.deployments).toHaveLength(3);
  });

  it('takes a model served by several deployments, and checks each one', () => {
    const providers = [
      { name: 'east', type: 'openai', baseUrl: 'https://east.example/v1' },
      { name: 'west', type: 'openai', baseUrl: 'https://west.example/v1' },
    ];
    const fileWith = (name: string, model: Record<string, unknown>) =>
      write(
        name,
        JSON.stringify({ providers, models: [{ model_id: 'gpt-4o', type: 'completion', ...model }] }),
      );
    const deployments = [
      { provider: 'east', model: 'gpt-4o', weight: 3, headers: { 'x-region': 'east' } },
      { provider: 'west', model: 'gpt-4o-2024-08-06' },
    ];
    expect(readGatewayFile(fileWith('two.json', { deployments })).models[0]).toMatchObject({ deployments });
    const refused = (name: string, model: Record<string, unknown>, why: RegExp) =>
      expect(() => readGatewayFile(fileWith(name, model))).toThrow(why);
    refused(
      'unknown.json',
      { deployments: [deployments[0], { provider: 'north', model: 'gpt-4o' }] },
      /models\.0\.deployments\.1\.provider: no provider named north/,
    );
    refused(
      'weight.json',
      { deployments: [{ ...deployments[0], weight: 0 }] },
      /models\.0\.deployments\.0\.weight/,
    );
    refused(
      'both.json',
      { deployments, provider_config: { provider: 'east', model: 'gpt-4o' } },
      /give provider_config or deployments, not both/,
    );
    refused('neither.json', {}, /models\.0\.provider_config: provider_config \(or deployments\) is required/);
    refused(
      'many.json',
      { deployments: Array.from({ length: 17 }, (_, i) => ({ provider: 'east', model: `m${i}` })) },
      /at most 16 deployments/,
    );
    refused(
      'twice.json',
      { deployments: [deployments[1], deployments[1]] },
      /west \/ gpt-4o-2024-08-06 is named twice/,
    );
  });
});
