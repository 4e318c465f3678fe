import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { runCli } from '@platform/operator-cli';
import type { ProviderSimulator } from '@platform/testkit';
import { startProviderSimulator, tempDir } from '@platform/testkit';
import { anonymousLogin, operatorCliEnv, runCliJson, startTestPlatform, type TestPlatform } from '../harness';
import { providersAddSim } from './cli-providers';

const SECRET = 'operator-cli-llm-internal-secret-0123456789';

/** The operator CLI's LLM gateway commands against the real platform, through the edge. */
describe('operator CLI: providers, models and org governance (pnpm platform)', () => {
  let platform: TestPlatform;
  let sim: ProviderSimulator;
  let env: Record<string, string>;
  const dir = tempDir('cli-llm-');
  let operator: { userId: string; token: string };

  const run = (...argv: string[]) => runCliJson(env, ...argv);
  const gateway = async (method: string, p: string, body?: unknown) => {
    const res = await fetch(`${platform.gatewayUrl}${p}`, {
      method,
      headers: { authorization: `Bearer ${operator.token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    // biome-ignore lint/suspicious/noExplicitAny: answers are asserted field by field
    const answer: any = await res.json().catch(() => null);
    return { status: res.status, body: answer };
  };

  beforeAll(async () => {
    sim = await startProviderSimulator({ port: 0 });
    platform = await startTestPlatform({
      env: {
        PLATFORM_INTERNAL_SECRET: SECRET,
        LLM_GATEWAY_SETTINGS_TTL_MS: '0',
        // the CLI adds providers as a platform administrator, and the simulator listens on loopback
        LLM_GATEWAY_PROVIDER_PRIVATE_NETWORKS: '127.0.0.0/8,::1',
      },
    });
    operator = await anonymousLogin(platform);
    env = operatorCliEnv(platform, SECRET, operator.token);
  }, 60_000);
  afterAll(async () => {
    await platform?.stop();
    await sim?.close();
    dir.remove();
  });

  it('admin grant makes the operator a platform administrator; before it, catalogue writes are refused', async () => {
    expect((await run('providers', 'list')).code).toBe(1);
    expect(await run('admin', 'grant', operator.userId)).toMatchObject({
      code: 0,
      outcome: { result: 'updated' },
    });
    expect((await run('admin', 'grant', operator.userId)).code).toBe(0);
    expect((await run('admin', 'grant', 'no-such-user')).code).toBe(1);
  });

  it('providers add, list, test and remove; the key is never shown', async () => {
    const added = await run(...providersAddSim(sim, 'sk-cli-secret'));
    expect(added).toMatchObject({
      code: 0,
      outcome: { result: 'created', data: { name: 'sim', has_api_key: true } },
    });
    expect((await run(...providersAddSim(sim, 'sk-cli-secret'))).outcome.result).toBe('updated');
    const listed = await run('providers', 'list');
    expect(listed.outcome.data.map((p: { name: string }) => p.name)).toEqual(['mock', 'sim']);
    expect(JSON.stringify(listed)).not.toContain('sk-cli-secret');

    const created = await gateway('POST', '/v1/models', {
      model_id: 'cli/gpt',
      type: 'completion',
      provider_config: { provider: 'sim', model: 'gpt-cli' },
    });
    expect(created.status).toBe(201);
    expect((await run('org', 'create', 'cli-llm-org')).code).toBe(0);
    sim.script([
      {
        match: { model: 'gpt-cli' },
        reply: { toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] },
      },
    ]);
    const tested = await run('providers', 'test', 'sim', '--org', 'cli-llm-org');
    expect(tested).toMatchObject({
      code: 0,
      outcome: { result: 'passed', data: [{ model: 'cli/gpt', ok: true }] },
    });
    // the key reached the provider, sealed at rest but opened for the call
    expect(JSON.stringify(sim.requests().at(-1))).toContain('sk-cli-secret');
    // a model of several deployments is tested on its deployment on that provider, however light its weight
    const spread = await gateway('POST', '/v1/models', {
      model_id: 'cli/spread',
      type: 'completion',
      deployments: [
        { provider: 'mock', model: 'mock-chat', weight: 1000 },
        { provider: 'sim', model: 'gpt-cli-spread' },
      ],
    });
    expect(spread.status).toBe(201);
    expect(await run('providers', 'test', 'sim', '--org', 'cli-llm-org')).toMatchObject({
      code: 0,
      outcome: {
        result: 'passed',
        data: [
          { model: 'cli/gpt', ok: true },
          { model: 'cli/spread', ok: true },
        ],
      },
    });
    expect(sim.requests().at(-1)?.model).toBe('gpt-cli-spread');
    sim.script([{ match: { model: 'gpt-cli' }, error: { status: 500 } }]);
    const failing = await run('providers', 'test', 'sim', '--org', 'cli-llm-org');
    expect(failing.code).toBe(1);
    expect(failing.err).toContain('PROVIDER_ERROR');
    // with --json, each model's result is data, as when all pass: a script reads which one failed
    expect(failing.outcome).toMatchObject({
      result: 'failed',
      exitCode: 1,
      data: [
        { model: 'cli/gpt', ok: false, error: 'PROVIDER_ERROR' },
        { model: 'cli/spread', ok: true },
      ],
    });
    sim.script([]);

    const inUse = await run('providers', 'remove', 'sim');
    expect(inUse.code).toBe(1);
    expect(inUse.err).toContain('cli/gpt');
    expect(inUse.err).toContain('cli/spread');
    await gateway('DELETE', '/v1/models/cli/gpt');
    await gateway('DELETE', '/v1/models/cli/spread');
    expect((await run('providers', 'remove', 'sim')).outcome.result).toBe('deleted');
    expect((await run('providers', 'remove', 'sim')).outcome.result).toBe('absent');
  });

  it('models export, import (a bulk replace), enable and disable', async () => {
    const file = path.join(dir.dir, 'catalogue.json');
    const exported = await run('models', 'export', '--out', file);
    expect(exported).toMatchObject({ code: 0, outcome: { data: { models: 5 } } });
    const catalogue = JSON.parse(readFileSync(file, 'utf8')) as { models: Array<Record<string, unknown>> };
    expect(catalogue.models.map((m) => m.model_id)).toEqual([
      'mock/chat',
      'mock/embeddings',
      'mock/images',
      'mock/speech',
      'mock/transcriptions',
    ]);
    const { provider_config, ...chat } = catalogue.models[0]!;
    catalogue.models.push({
      ...chat,
      model_id: 'mock/chat-2',
      deployments: [{ ...(provider_config as object), weight: 2 }],
    });
    writeFileSync(file, JSON.stringify(catalogue));
    expect(await run('models', 'import', file)).toMatchObject({
      code: 0,
      outcome: { data: { deleted: 5, inserted: 6 } },
    });
    expect((await gateway('GET', '/v1/models/mock/chat-2')).status).toBe(200);
    const again = (await run('models', 'export')).outcome.data.models as Array<Record<string, unknown>>;
    expect(again.find((m) => m.model_id === 'mock/chat-2')?.deployments).toEqual([
      { provider: 'mock', model: 'mock-chat', weight: 2 },
    ]);

    const yamlFile = path.join(dir.dir, 'bad.yaml');
    writeFileSync(yamlFile, 'models:\n  - model_id: broken\n');
    const bad = await run('models', 'import', yamlFile);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('INVALID_ITEMS');
    expect(bad.err).toContain('provider_config');
    // an empty list (a generator that produced nothing) would remove every model: refused
    const emptyFile = path.join(dir.dir, 'empty.yaml');
    writeFileSync(emptyFile, 'models: []\n');
    expect(await run('models', 'import', emptyFile)).toMatchObject({
      code: 1,
      err: `${emptyFile} holds no models: importing it would remove every model. Nothing was changed.`,
    });
    expect((await gateway('GET', '/v1/models/mock/chat-2')).status).toBe(200);

    expect((await run('models', 'disable', 'mock/chat-2')).outcome.data.enabled).toBe(false);
    expect((await gateway('GET', '/v1/models/mock/chat-2?orgSlug=all')).body.enabled).toBe(false);
    expect((await run('models', 'enable', 'mock/chat-2')).outcome.data.enabled).toBe(true);
  });

  it('models export to a file it cannot write: exit 1 naming the file and why, not a stack trace', async () => {
    const file = path.join(dir.dir, 'no-such-folder', 'catalogue.json');
    const exported = await run('models', 'export', '--out', file);
    expect(exported.code).toBe(1);
    expect(exported.err).toBe(`Cannot write ${file}: ENOENT: no such file or directory, open '${file}'`);
  });

  it("org allow, default and downgrade change the organization's governance", async () => {
    expect((await run('org', 'create', 'cli-gov')).code).toBe(0);
    const allowed = await run('org', 'allow', 'cli-gov', 'mock/chat', 'mock/embeddings');
    expect(allowed.outcome.data.allowed).toEqual(['mock/chat', 'mock/embeddings']);
    const ids = (await gateway('GET', '/v1/models?orgSlug=cli-gov')).body.data.map(
      (m: { id: string }) => m.id,
    );
    expect(ids).toEqual(['mock/chat', 'mock/embeddings']);
    expect(
      (await run('org', 'default', 'cli-gov', 'completions', 'mock/chat')).outcome.data.defaults,
    ).toEqual({
      completions: 'mock/chat',
    });
    expect(
      (await run('org', 'downgrade', 'cli-gov', 'mock/chat-2', 'mock/chat')).outcome.data.downgrade,
    ).toEqual({
      'mock/chat-2': 'mock/chat',
    });
    expect((await run('org', 'allow', 'cli-gov', '--all')).outcome.data.allowed).toBeNull();
    expect((await run('org', 'default', 'cli-gov', 'images', 'x')).code).toBe(2);
  });

  it('org allow, default and downgrade warn about a model the organization will not get (not in the catalogue, disabled, offered to others, not allowed, a downgrade of another type or under hard_block), the change made', async () => {
    expect((await run('org', 'create', 'cli-warn')).code).toBe(0);
    const restricted = await gateway('POST', '/v1/models', {
      model_id: 'cli/elsewhere',
      type: 'completion',
      provider_config: { provider: 'mock', model: 'mock-chat' },
      org_slugs: ['cli-gov'],
    });
    expect(restricted.status).toBe(201);
    expect((await run('models', 'disable', 'mock/speech')).code).toBe(0);
    try {
      const allowed = await run(
        'org',
        'allow',
        'cli-warn',
        'mock/chat',
        'no/such-model',
        'mock/speech',
        'cli/elsewhere',
      );
      expect(allowed).toMatchObject({
        code: 0,
        outcome: {
          result: 'updated',
          data: { allowed: ['mock/chat', 'no/such-model', 'mock/speech', 'cli/elsewhere'] },
        },
      });
      expect(allowed.outcome.data.warnings).toEqual([
        'no/such-model is not in the catalogue (yet?): requests for it answer MODEL_NOT_FOUND until it is added',
        'mock/speech is disabled: requests for it answer MODEL_NOT_FOUND until it is enabled (models enable mock/speech)',
        'cli/elsewhere is offered only to other organizations (its org_slugs): requests for it from cli-warn answer MODEL_NOT_FOUND',
      ]);
      // for a person, under the data
      const out: string[] = [];
      const err: string[] = [];
      const code = await runCli(['org', 'allow', 'cli-warn', 'mock/chat', 'no/such-model'], env, {
        out: (l) => out.push(l),
        err: (l) => err.push(l),
      });
      expect(code).toBe(0);
      expect(out.at(-1)).toBe(
        'warning: no/such-model is not in the catalogue (yet?): requests for it answer MODEL_NOT_FOUND until it is added',
      );

      // a default or a downgrade target outside `allowed`: the gateway answers MODEL_NOT_ALLOWED
      const byDefault = await run('org', 'default', 'cli-warn', 'embeddings', 'mock/embeddings');
      expect(byDefault).toMatchObject({
        code: 0,
        outcome: { data: { defaults: { embeddings: 'mock/embeddings' } } },
      });
      expect(byDefault.outcome.data.warnings).toEqual([
        'mock/embeddings, the default embeddings model, is not among the models cli-warn allows: requests using that default answer MODEL_NOT_ALLOWED until it is allowed',
      ]);
      const downgraded = await run('org', 'downgrade', 'cli-warn', 'no/such-from', 'mock/images');
      expect(downgraded).toMatchObject({
        code: 0,
        outcome: { data: { downgrade: { 'no/such-from': 'mock/images' } } },
      });
      expect(downgraded.outcome.data.warnings).toEqual([
        'no/such-from is not in the catalogue (yet?): requests for it answer MODEL_NOT_FOUND until it is added',
        'mock/embeddings, the default embeddings model, is not among the models cli-warn allows: requests using that default answer MODEL_NOT_ALLOWED until it is allowed',
        'mock/images, which no/such-from is downgraded to, is not among the models cli-warn allows: that downgrade is passed over until it is allowed',
        // every organization's default policy never downgrades (before: no warning)
        `cli-warn's policy is hard_block, which never downgrades: no/such-from is not replaced by mock/images until the policy is soft_downgrade (PATCH /v1/quotas/settings {"policy":"soft_downgrade"})`,
      ]);
      expect((await gateway('PATCH', '/v1/quotas/settings', { policy: 'soft_downgrade' })).status).toBe(200);
      // settings that work: no warnings
      expect((await run('org', 'allow', 'cli-warn', '--all')).outcome.data.warnings).toBeUndefined();
      // a downgrade to a model of another type: the gateway passes it over (before: no warning)
      const crossType = await run('org', 'downgrade', 'cli-warn', 'mock/chat', 'mock/embeddings');
      expect(crossType).toMatchObject({
        code: 0,
        outcome: { data: { downgrade: { 'mock/chat': 'mock/embeddings' } } },
      });
      expect(crossType.outcome.data.warnings).toEqual([
        'mock/embeddings, which mock/chat is downgraded to, is a model of type embeddings, not completion: that downgrade is passed over until it is changed',
      ]);
      expect(
        (await run('org', 'downgrade', 'cli-warn', 'mock/chat', 'none')).outcome.data.warnings,
      ).toBeUndefined();
      // a default of another type: the gateway answers INVALID_BODY to every request using that default
      expect(
        (await run('org', 'default', 'cli-warn', 'completions', 'mock/embeddings')).outcome.data.warnings,
      ).toEqual([
        'mock/embeddings is a model of type embeddings, not completion: requests using that default answer INVALID_BODY until it is changed',
      ]);
      expect(
        (await run('org', 'default', 'cli-warn', 'completions', 'mock/chat')).outcome.data.warnings,
      ).toBeUndefined();
      expect(
        (await run('org', 'downgrade', 'cli-warn', 'no/such-from', 'none')).outcome.data.warnings,
      ).toBeUndefined();
    } finally {
      await gateway('DELETE', '/v1/models/cli/elsewhere');
      expect((await run('models', 'enable', 'mock/speech')).code).toBe(0);
    }
  });

  it('org allow naming more models than a page of the catalogue holds still warns about the one it will not get', async () => {
    expect((await run('org', 'create', 'cli-warn-many')).code).toBe(0);
    const ids = Array.from({ length: 120 }, (_, i) => `cli/many-${String(i).padStart(3, '0')}`);
    try {
      for (const id of ids) {
        const added = await gateway('POST', '/v1/models', {
          model_id: id,
          type: 'completion',
          provider_config: { provider: 'mock', model: 'mock-chat' },
          org_slugs: ['cli-warn-many'],
          enabled: id !== 'cli/many-110',
        });
        expect([id, added.status]).toEqual([id, 201]);
      }
      const allowed = await run('org', 'allow', 'cli-warn-many', ...ids);
      expect(allowed).toMatchObject({ code: 0, outcome: { result: 'updated', data: { allowed: ids } } });
      // before: no warning (the 120 models on two pages of the catalogue read: which were missing was not known)
      expect(allowed.outcome.data.warnings).toEqual([
        'cli/many-110 is disabled: requests for it answer MODEL_NOT_FOUND until it is enabled (models enable cli/many-110)',
      ]);
    } finally {
      for (const id of ids) await gateway('DELETE', `/v1/models/${id}`);
    }
  });

  it('org allow by an organization administrator who cannot read the whole catalogue (not a platform administrator) succeeds saying nothing more', async () => {
    const owner = await anonymousLogin(platform);
    const ownerEnv = operatorCliEnv(platform, SECRET, owner.token);
    expect((await runCliJson(ownerEnv, 'org', 'create', 'cli-warn-own')).code).toBe(0);
    const allowed = await runCliJson(ownerEnv, 'org', 'allow', 'cli-warn-own', 'mock/chat', 'no/such-model');
    expect(allowed).toMatchObject({
      code: 0,
      err: '',
      outcome: { result: 'updated', data: { allowed: ['mock/chat', 'no/such-model'] } },
    });
    expect(allowed.outcome.data.warnings).toBeUndefined();
  });

  it('org allow whose catalogue read is cut (the gateway gone after the change) succeeds saying nothing more', async () => {
    expect((await run('org', 'create', 'cli-warn-cut')).code).toBe(0);
    // in front of the edge: the catalogue read loses its connection, every other call goes through
    const proxy = createServer(async (req, res) => {
      if (req.method === 'GET' && req.url?.includes('/v1/models')) return req.socket.destroy();
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const answer = await fetch(`${platform.baseUrl}${req.url}`, {
        method: req.method,
        headers: { authorization: req.headers.authorization ?? '', 'content-type': 'application/json' },
        body: chunks.length ? Buffer.concat(chunks) : undefined,
      });
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' });
      res.end(Buffer.from(await answer.arrayBuffer()));
    }).listen(0, '127.0.0.1');
    await once(proxy, 'listening');
    try {
      const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const allowed = await runCliJson(
        {
          ...env,
          PLATFORM_URL: url,
          PLATFORM_GATEWAY_URL: `${url}${platform.gatewayUrl.slice(platform.baseUrl.length)}`,
        },
        'org',
        'allow',
        'cli-warn-cut',
        'no/such-model',
      );
      expect(allowed).toMatchObject({
        code: 0,
        err: '',
        outcome: { result: 'updated', data: { allowed: ['no/such-model'] } },
      });
      expect(allowed.outcome.data.warnings).toBeUndefined();
    } finally {
      proxy.close();
    }
  });

  it('org allow whose session was switched to another organization meanwhile (a second command on the same token) fails naming both, never reported done', async () => {
    expect((await run('org', 'create', 'cli-meant')).code).toBe(0);
    expect((await run('org', 'create', 'cli-other')).code).toBe(0);
    // in front of the edge: another command of the same session switches it just before the change arrives
    const proxy = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const headers = { authorization: req.headers.authorization ?? '', 'content-type': 'application/json' };
      if (req.method === 'PATCH')
        await fetch(`${platform.baseUrl}/v2/user/active-org`, {
          method: 'PUT',
          headers,
          body: JSON.stringify({ orgSlug: 'cli-other' }),
        });
      const answer = await fetch(`${platform.baseUrl}${req.url}`, {
        method: req.method,
        headers,
        body: chunks.length ? Buffer.concat(chunks) : undefined,
      });
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' });
      res.end(Buffer.from(await answer.arrayBuffer()));
    }).listen(0, '127.0.0.1');
    await once(proxy, 'listening');
    try {
      const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const switched = await runCliJson(
        {
          ...env,
          PLATFORM_URL: url,
          PLATFORM_GATEWAY_URL: `${url}${platform.gatewayUrl.slice(platform.baseUrl.length)}`,
        },
        'org',
        'allow',
        'cli-meant',
        'mock/chat',
      );
      expect(switched).toMatchObject({ code: 1, outcome: { result: 'failed', exitCode: 1 } });
      expect(switched.err).toMatch(
        /^The change went to the organization cli-other, not cli-meant: the session's active organization was switched meanwhile/,
      );
    } finally {
      proxy.close();
    }
  });

  it('providers add reads the key from --api-key-file (kept out of ps and the shell history), never showing it', async () => {
    const keyed = await startProviderSimulator({ port: 0, apiKey: 'sk-from-file' });
    try {
      const file = path.join(dir.dir, 'provider-key');
      writeFileSync(file, 'sk-from-file\n');
      const add = (...more: string[]) =>
        run('providers', 'add', 'filed', '--type', 'openai', '--base-url', keyed.openaiBaseUrl, ...more);
      const added = await add('--api-key-file', file);
      expect(added).toMatchObject({ code: 0, outcome: { result: 'created', data: { has_api_key: true } } });
      expect(JSON.stringify(added)).not.toContain('sk-from-file');
      const model = await gateway('POST', '/v1/models', {
        model_id: 'cli/filed',
        type: 'completion',
        provider_config: { provider: 'filed', model: 'gpt-filed' },
      });
      expect(model.status).toBe(201);
      expect((await run('org', 'create', 'cli-llm-org')).code).toBe(0);
      // the simulator refuses any other key: the file's newline is not part of it
      expect(await run('providers', 'test', 'filed', '--org', 'cli-llm-org')).toMatchObject({
        code: 0,
        outcome: { result: 'passed', data: [{ model: 'cli/filed', ok: true }] },
      });
      expect(await add('--api-key', 'sk-other', '--api-key-file', file)).toMatchObject({
        code: 2,
        err: expect.stringMatching(/^Give --api-key or --api-key-file, not both/),
      });
      const missing = path.join(dir.dir, 'no-such-key');
      expect(await add('--api-key-file', missing)).toMatchObject({
        code: 1,
        err: expect.stringMatching(new RegExp(`^Cannot read --api-key-file ${missing}: ENOENT`)),
      });
      await gateway('DELETE', '/v1/models/cli/filed');
      expect((await run('providers', 'remove', 'filed')).outcome.result).toBe('deleted');
    } finally {
      await keyed.close();
    }
  });

  it('providers add run again without the key or the headers never removes the stored ones (never shown, they cannot be given back): refused until given again, or --no-api-key, --no-headers', async () => {
    const keyed = await startProviderSimulator({ port: 0, apiKey: 'sk-kept' });
    try {
      const add = (...more: string[]) =>
        run('providers', 'add', 'kept', '--type', 'openai', '--base-url', keyed.openaiBaseUrl, ...more);
      expect(await add('--api-key', 'sk-kept')).toMatchObject({
        code: 0,
        outcome: { result: 'created', data: { has_api_key: true, api_key: 'set' } },
      });
      const model = await gateway('POST', '/v1/models', {
        model_id: 'cli/kept',
        type: 'completion',
        provider_config: { provider: 'kept', model: 'gpt-kept' },
      });
      expect(model.status).toBe(201);
      expect((await run('org', 'create', 'cli-llm-org')).code).toBe(0);
      const smoke = () => run('providers', 'test', 'kept', '--org', 'cli-llm-org');

      // a header added later, the key not given again: nothing is changed, and the message names the way on
      const refused = await add('--header', 'X-Team=search');
      expect(refused).toMatchObject({ code: 1, outcome: { result: 'failed', exitCode: 1 } });
      expect(refused.err).toBe(
        'The provider kept has an API key stored, which providers add without one would remove: give it again with --api-key or --api-key-file, or remove it with --no-api-key.\nNothing was changed.',
      );
      expect((await smoke()).code).toBe(0);
      expect(keyed.requests().at(-1)?.headers?.['x-team']).toBeUndefined();

      const file = path.join(dir.dir, 'kept-key');
      writeFileSync(file, 'sk-kept\n');
      expect(await add('--header', 'X-Team=search', '--api-key-file', file)).toMatchObject({
        code: 0,
        outcome: {
          result: 'updated',
          data: { has_api_key: true, api_key: 'replaced', header_names: ['X-Team'] },
        },
      });
      expect((await smoke()).code).toBe(0);
      expect(keyed.requests().at(-1)?.headers?.['x-team']).toBe('search');

      // the header values are never shown either: a new key given without them keeps them, refused
      const headless = await add('--api-key', 'sk-kept');
      expect(headless).toMatchObject({ code: 1, outcome: { result: 'failed' } });
      expect(headless.err).toBe(
        'The provider kept has the headers X-Team stored, which providers add without --header would remove: give them again with --header, or remove them with --no-headers.\nNothing was changed.',
      );
      expect((await add()).err).toMatch(
        /^The provider kept has an API key stored.*\nThe provider kept has the headers X-Team stored.*\nNothing was changed\.$/,
      );
      expect((await smoke()).code).toBe(0);
      expect(keyed.requests().at(-1)?.headers?.['x-team']).toBe('search');

      expect(await add('--no-api-key', '--api-key', 'sk-kept')).toMatchObject({
        code: 2,
        err: expect.stringMatching(/^Give --api-key, --api-key-file or --no-api-key, one of them/),
      });
      const bare = await add('--no-api-key', '--no-headers');
      expect(bare).toMatchObject({
        code: 0,
        outcome: { result: 'updated', data: { has_api_key: false, api_key: 'removed' } },
      });
      expect(bare.outcome.data.header_names).toBeUndefined();
      expect(await add('--no-api-key')).toMatchObject({
        code: 0,
        outcome: { result: 'updated', data: { has_api_key: false, api_key: 'none' } },
      });
      expect((await add()).outcome.data.api_key).toBe('none');
      await gateway('DELETE', '/v1/models/cli/kept');
      expect((await run('providers', 'remove', 'kept')).outcome.result).toBe('deleted');
    } finally {
      await keyed.close();
    }
  });

  it('providers add given some of the stored headers never removes the others unseen: refused naming them, or --no-headers keeps only those given', async () => {
    expect((await run('admin', 'grant', operator.userId)).code).toBe(0);
    const add = (...more: string[]) =>
      run('providers', 'add', 'headed', '--type', 'openai', '--base-url', sim.openaiBaseUrl, ...more);
    const names = async () =>
      (await run('providers', 'list')).outcome.data.find((p: { name: string }) => p.name === 'headed')
        .header_names;
    expect((await add('--header', 'X-Team=search', '--header', 'X-Proxy-Auth=pa-secret')).code).toBe(0);
    const partial = await add('--header', 'X-Team=search');
    expect(partial).toMatchObject({ code: 1, outcome: { result: 'failed', exitCode: 1 } });
    expect(partial.err).toBe(
      'The provider headed has the headers X-Proxy-Auth stored, which providers add without them would remove: give them again with --header, or add --no-headers to keep only the headers given.\nNothing was changed.',
    );
    expect(await names()).toEqual(['X-Team', 'X-Proxy-Auth']);
    // header names are the same in any case
    expect((await add('--header', 'x-team=search', '--header', 'x-proxy-auth=pa-secret')).code).toBe(0);
    expect(await add('--header', 'X-Team=search', '--no-headers')).toMatchObject({
      code: 0,
      outcome: { result: 'updated', data: { header_names: ['X-Team'] } },
    });
    expect((await run('providers', 'remove', 'headed')).outcome.result).toBe('deleted');
  });

  it("providers test on a model that does not answer (a provider outage) reports it failed at the model's timeout_ms, past --timeout, and tests the others", async () => {
    const stalled = await startProviderSimulator({ port: 0 });
    try {
      expect((await run('admin', 'grant', operator.userId)).code).toBe(0);
      expect(
        (await run('providers', 'add', 'stalled', '--type', 'openai', '--base-url', stalled.openaiBaseUrl))
          .code,
      ).toBe(0);
      for (const [id, model, more] of [
        ['cli/hung', 'gpt-hung', { timeout_ms: 4000 }],
        ['cli/quick', 'gpt-quick', {}],
      ] as const) {
        const created = await gateway('POST', '/v1/models', {
          model_id: id,
          type: 'completion',
          provider_config: { provider: 'stalled', model },
          ...more,
        });
        expect(created.status).toBe(201);
      }
      expect((await run('org', 'create', 'cli-llm-org')).code).toBe(0);
      stalled.script([{ match: { model: 'gpt-hung' }, hang: true }]);
      // the gateway gives the model its timeout_ms, longer than one call's --timeout: that model failed, not the command
      const tested = await run('providers', 'test', 'stalled', '--org', 'cli-llm-org', '--timeout', '2');
      expect(tested).toMatchObject({
        code: 1,
        outcome: {
          result: 'failed',
          data: [
            { model: 'cli/hung', ok: false, error: 'PROVIDER_NO_RESPONSE' },
            { model: 'cli/quick', ok: true },
          ],
        },
      });
      await gateway('DELETE', '/v1/models/cli/hung');
      await gateway('DELETE', '/v1/models/cli/quick');
      expect((await run('providers', 'remove', 'stalled')).outcome.result).toBe('deleted');
    } finally {
      await stalled.close();
    }
  });

  it('providers remove through a URL that is not the gateway root is a failure, not reported absent', async () => {
    const astray = await runCliJson(
      { ...env, PLATFORM_GATEWAY_URL: platform.baseUrl },
      'providers',
      'remove',
      'mock',
    );
    expect(astray).toMatchObject({ code: 1, outcome: { result: 'failed', exitCode: 1 } });
    expect(astray.err).toMatch(/^Removing the provider failed \(404\)/);
    expect((await run('providers', 'list')).outcome.data.map((p: { name: string }) => p.name)).toContain(
      'mock',
    );
  });

  it('models disable with an id no model has (one holding ? or #) is refused, not applied to the model it begins with', async () => {
    for (const typo of ['mock/chat?beta', 'mock/chat#beta']) {
      const refused = await run('models', 'disable', typo);
      expect(refused.code).toBe(1);
      expect(refused.err).toMatch(/^Disabling the model failed \(404/);
      expect((await gateway('GET', '/v1/models/mock/chat?orgSlug=all')).body.enabled).toBe(true);
    }
  });
});
