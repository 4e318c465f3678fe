import { randomUUID } from 'node:crypto';
import { waitFor } from '@platform/testkit';
import { Validator } from '@seriousme/openapi-schema-validator';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { travelEntities, travelIntents } from '../../services/legacy-agent/test/support/travel-assistant';
import { silentWav } from '../../services/llm-gateway/src/routes/wav-fixture';
import { startTestPlatform, type TestPlatform } from '../harness';

/**
 * The published OpenAPI 3.1 documents of the three roots, checked against what the platform really
 * answers: a realistic flow across `{base_url}`, `{gateway_url}` and `{legacy_url}` through the edge,
 * where every answer must be documented for its (method, path, status) and match the schema there.
 *
 * Response schemas are published open (spec 9.3 lets a version add optional fields); this test closes
 * every object that lists its properties, so a field the code answers but the document does not name
 * fails here too. Objects the spec calls free-form stay open.
 */

type RootName = 'base' | 'gateway' | 'legacy';
type Json = Record<string, unknown>;

interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: bodies are checked by the documents' schemas, then read freely
  body: any;
}

interface Operation {
  requestBody?: { content: Record<string, { schema: Json }> };
  responses: Record<string, { content?: Record<string, { schema: Json }> }>;
}

/** Objects that are free-form by the spec (or by OpenAPI itself), left open when closing the others. */
const FREE_FORM_COMPONENTS = new Set(['ErrorEnvelope', 'OpenApiDocument']);
const FREE_FORM_PROPERTIES = new Set(['included', 'per_user_defaults']);

/** A copy of a schema tree where every object listing its properties allows no others. */
function closeObjects(schema: unknown, freeForm = false): unknown {
  if (Array.isArray(schema)) return schema.map((s) => closeObjects(s, freeForm));
  if (!schema || typeof schema !== 'object') return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema as Json)) {
    if (key === 'properties' && value && typeof value === 'object') {
      const props: Json = {};
      for (const [name, sub] of Object.entries(value as Json))
        props[name] = closeObjects(sub, freeForm || FREE_FORM_PROPERTIES.has(name));
      out[key] = props;
    } else out[key] = closeObjects(value, freeForm);
  }
  const extra = out.additionalProperties;
  const open = extra === undefined || (typeof extra === 'object' && Object.keys(extra as Json).length === 0);
  if (!freeForm && out.properties && open) out.additionalProperties = false;
  return out;
}

/** One root's document: operations by (method, path template), validators compiled on demand. */
class DocumentedRoot {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly templates: Array<{ template: string; pattern: RegExp; params: number }>;
  readonly exercised = new Set<string>();

  constructor(
    readonly name: RootName,
    readonly doc: Json,
  ) {
    addFormats(this.ajv);
    const components = (doc.components as { schemas: Json }).schemas;
    const closedComponents: Json = {};
    for (const [name, schema] of Object.entries(components))
      closedComponents[name] = closeObjects(schema, FREE_FORM_COMPONENTS.has(name));
    const paths: Json = {};
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
      const ops: Json = {};
      for (const [method, op] of Object.entries(item)) {
        const responses: Json = {};
        for (const [status, response] of Object.entries(op.responses)) {
          const schema = response.content?.['application/json']?.schema;
          responses[status] = schema ? { schema: closeObjects(schema) } : {};
        }
        ops[method] = { request: op.requestBody?.content['application/json']?.schema, responses };
      }
      paths[path] = ops;
    }
    this.ajv.addSchema({ components: { schemas: closedComponents }, paths }, name);
    this.templates = Object.keys(doc.paths as Json).map((template) => ({
      template,
      pattern: new RegExp(
        `^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`,
      ),
      params: (template.match(/\{/g) ?? []).length,
    }));
  }

  /** The documented path template of a concrete path (the most specific one when several match). */
  templateOf(path: string): string | undefined {
    return this.templates.filter((t) => t.pattern.test(path)).sort((a, b) => a.params - b.params)[0]
      ?.template;
  }

  private validator(pointer: string): ValidateFunction | undefined {
    return this.ajv.getSchema(`${this.name}#${pointer}`);
  }

  private operation(template: string, method: string): Operation | undefined {
    return (this.doc.paths as Record<string, Record<string, Operation>>)[template]?.[method];
  }

  /** Throws, naming the exchange, unless the answer is documented and matches its schema. */
  check(method: string, path: string, answer: Answer, requestBody: unknown, rawBody: string): void {
    const m = method.toLowerCase();
    const where = `${this.name} ${method} ${path} → ${answer.status}`;
    const template = this.templateOf(path.split('?')[0]!);
    const op = template ? this.operation(template, m) : undefined;
    if (!template || !op) throw new Error(`${where}: undocumented path or method`);
    const status = String(answer.status);
    const documented = op.responses[status];
    if (!documented) throw new Error(`${where}: status ${status} is not documented for ${m} ${template}`);
    const esc = (s: string) => s.replaceAll('~', '~0').replaceAll('/', '~1');
    const base = `/paths/${esc(template)}/${m}`;
    const answered = answer.headers.get('content-type')?.split(';')[0]?.trim() ?? '';
    if (answered !== 'application/json' && documented.content?.[answered]) {
      // a body that is not JSON (audio, text) in a media type the document names: nothing more to check
    } else if (documented.content?.['application/json']) {
      if (answered !== 'application/json')
        throw new Error(`${where}: answered ${answer.headers.get('content-type')}, documented JSON`);
      const validate = this.validator(`${base}/responses/${status}/schema`)!;
      if (!validate(answer.body))
        throw new Error(
          `${where}: body does not match the document: ${this.ajv.errorsText(validate.errors)}\n${rawBody.slice(0, 2000)}`,
        );
    } else if (rawBody.length > 0) {
      throw new Error(`${where}: answered a body the document does not describe`);
    }
    // A request the service accepted must be one the document allows.
    if (answer.status < 300 && requestBody !== undefined) {
      const validate = this.validator(`${base}/request`);
      if (!validate) throw new Error(`${where}: the request body is not documented`);
      if (!validate(requestBody))
        throw new Error(
          `${where}: accepted a body the document refuses: ${this.ajv.errorsText(validate.errors)}`,
        );
    }
    this.exercised.add(`${status} ${method.toUpperCase()} ${template}`);
  }
}

const OPERATOR_SECRET = 'conformance-internal-secret-0123456789abcdef';

describe('OpenAPI documents of the three roots, against real answers through the edge', () => {
  let p: TestPlatform;
  const roots = {} as Record<RootName, DocumentedRoot>;
  const urlOf = (root: RootName) =>
    root === 'base' ? p.baseUrl : root === 'gateway' ? p.gatewayUrl : p.legacyUrl;
  let documentsVia: 'edge' | 'upstreams';

  /** Calls the platform through the edge and checks the answer against the root's document. */
  const call = async (
    root: RootName,
    method: string,
    path: string,
    options: { body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<Answer> => {
    const res = await fetch(`${urlOf(root)}${path}`, {
      method,
      headers: {
        ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...options.headers,
      },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await res.text();
    const answer: Answer = {
      status: res.status,
      headers: res.headers,
      body: text ? JSON.parse(text) : undefined,
    };
    roots[root].check(method, path, answer, options.body, text);
    return answer;
  };
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const inAWeek = () => new Date(Date.now() + 7 * 86_400_000).toISOString();

  beforeAll(async () => {
    p = await startTestPlatform({
      env: {
        // legacy v1 is retired on 2025-12-31 by default; keep it open so it answers
        LEGACY_V1_RETIREMENT_DATE: '2099-01-01',
        LEGACY_PASSWORD_SCRYPT_COST: '1024',
        LEGACY_RETRAIN_DEBOUNCE_MS: '10',
        LEGACY_RETRAIN_MAX_DELAY_MS: '200',
        PLATFORM_INTERNAL_SECRET: OPERATOR_SECRET,
      },
    });
    const edge = new URL(p.baseUrl);
    const prefix: Record<RootName, string> = {
      base: '',
      gateway: new URL(p.gatewayUrl).pathname,
      legacy: new URL(p.legacyUrl).pathname,
    };
    const upstream: Record<RootName, string> = {
      base: p.upstreams.auth,
      gateway: p.upstreams.llmGateway,
      legacy: p.upstreams.legacyAgent,
    };
    // The documents are public: the edge serves them without credentials once its route table opens
    // `GET /openapi.json` on every root (docs/spec-decisions.md).
    const probe = await fetch(`${p.baseUrl}/openapi.json`);
    await probe.arrayBuffer();
    documentsVia = probe.status === 200 ? 'edge' : 'upstreams';
    if (documentsVia === 'upstreams') expect(probe.status).toBe(401);
    for (const root of ['base', 'gateway', 'legacy'] as const) {
      // FALLBACK while the edge answers 401 for `GET /openapi.json` (its route table does not open the
      // path yet): fetch each document from its service directly, with the headers the edge forwards.
      const res =
        documentsVia === 'edge'
          ? await fetch(`${urlOf(root)}/openapi.json`)
          : await fetch(`${upstream[root]}/openapi.json`, {
              headers: {
                'x-forwarded-proto': 'http',
                'x-forwarded-host': edge.host,
                'x-forwarded-prefix': prefix[root],
              },
            });
      expect({ root, status: res.status }).toEqual({ root, status: 200 });
      const doc = (await res.json()) as Json;
      const result = await new Validator().validate(doc as Parameters<Validator['validate']>[0]);
      expect({ root, errors: result.errors, valid: result.valid }).toEqual({
        root,
        errors: undefined,
        valid: true,
      });
      roots[root] = new DocumentedRoot(root, doc);
    }
  });
  afterAll(() => p?.stop());

  it('serves each root’s document naming that root as its server', async () => {
    for (const root of ['base', 'gateway', 'legacy'] as const)
      expect({ root, servers: roots[root].doc.servers }).toEqual({ root, servers: [{ url: urlOf(root) }] });
    if (documentsVia === 'edge')
      for (const root of ['base', 'gateway', 'legacy'] as const) await call(root, 'GET', '/openapi.json');
  });

  const state = {} as {
    owner: { userId: string; token: string };
    member: { userId: string; token: string };
    stranger: { userId: string; token: string };
    accessToken: { _id: string; token: string };
    orgSlug: string;
    orgKey: { _id: string; apiKey: string };
    workspaceId: string;
    workspaceKeyId: string;
  };

  it('{base_url}: status, keys, sessions, access tokens, organizations, roles, keys and workspaces', async () => {
    expect((await call('base', 'GET', '/')).status).toBe(200);
    expect((await call('base', 'GET', '/oidc/jwks')).body.keys.length).toBeGreaterThan(0);
    for (const who of ['owner', 'member', 'stranger'] as const) {
      const login = await call('base', 'POST', '/v2/login/anonymous');
      expect(login.status).toBe(200);
      state[who] = login.body;
    }
    const owner = bearer(state.owner.token);

    expect((await call('base', 'GET', '/v2/me')).status).toBe(401);
    expect((await call('base', 'GET', '/v2/me', { headers: owner })).body.id).toBe(state.owner.userId);

    const missingExpiry = await call('base', 'POST', '/v2/user/accessTokens', {
      headers: owner,
      body: { name: 'ci' },
    });
    expect(missingExpiry.status).toBe(400);
    const token = await call('base', 'POST', '/v2/user/accessTokens', {
      headers: owner,
      body: { name: 'ci', expiresAt: inAWeek() },
    });
    expect(token.status).toBe(201);
    state.accessToken = token.body;
    expect((await call('base', 'GET', '/v2/user/accessTokens', { headers: owner })).body).toHaveLength(1);
    expect((await call('base', 'GET', '/v2/me', { headers: bearer(token.body.token) })).status).toBe(200);

    state.orgSlug = `conformance-${randomUUID().slice(0, 8)}`;
    const org = await call('base', 'POST', '/v2/orgs', {
      headers: owner,
      body: { slug: state.orgSlug, name: 'Conformance' },
    });
    expect(org.status).toBe(201);
    expect((await call('base', 'GET', '/v2/orgs', { headers: owner })).body).toHaveLength(1);
    expect((await call('base', 'GET', `/v2/orgs/${state.orgSlug}`, { headers: owner })).status).toBe(200);
    expect((await call('base', 'GET', '/v2/orgs/no-such-org', { headers: owner })).status).toBe(404);
    const member = await call('base', 'POST', `/v2/orgs/${state.orgSlug}/members`, {
      headers: owner,
      body: { userId: state.member.userId, role: 'member' },
    });
    expect(member.status).toBe(201);
    expect(
      (await call('base', 'GET', `/v2/orgs/${state.orgSlug}/members`, { headers: owner })).body,
    ).toHaveLength(2);
    expect((await call('base', 'GET', `/v2/orgs/${state.orgSlug}/roles`, { headers: owner })).status).toBe(
      200,
    );
    const role = await call('base', 'PUT', `/v2/orgs/${state.orgSlug}/roles/reader`, {
      headers: owner,
      body: { description: 'reads models', permissions: ['models:read'] },
    });
    expect(role.status).toBe(201);
    const orgKey = await call('base', 'POST', `/v2/orgs/${state.orgSlug}/apikeys`, {
      headers: owner,
      body: { name: 'reporting', permissions: ['models:read'] },
    });
    expect(orgKey.status).toBe(201);
    state.orgKey = orgKey.body;
    expect(
      (await call('base', 'GET', `/v2/orgs/${state.orgSlug}/apikeys`, { headers: owner })).body,
    ).toHaveLength(1);
    const active = await call('base', 'PUT', '/v2/user/active-org', {
      headers: owner,
      body: { orgSlug: state.orgSlug },
    });
    expect(active.body.activeOrgSlug).toBe(state.orgSlug);

    const workspace = await call('base', 'POST', '/v2/workspaces', {
      headers: owner,
      body: { name: 'Docs' },
    });
    expect(workspace.status).toBe(201);
    state.workspaceId = workspace.body.id;
    const ws = `/v2/workspaces/${state.workspaceId}`;
    expect((await call('base', 'GET', '/v2/workspaces', { headers: owner })).body).toHaveLength(1);
    expect((await call('base', 'GET', ws, { headers: owner })).status).toBe(200);
    expect((await call('base', 'PATCH', ws, { headers: owner, body: { name: 'Handbook' } })).status).toBe(
      200,
    );
    expect((await call('base', 'GET', `/v2/workspaces/${randomUUID()}`, { headers: owner })).status).toBe(
      404,
    );
    const wsMember = await call('base', 'PUT', `${ws}/members/${state.member.userId}`, {
      headers: owner,
      body: { role: 'viewer' },
    });
    expect(wsMember.status).toBe(201);
    expect((await call('base', 'GET', `${ws}/members`, { headers: owner })).body).toHaveLength(2);
    const wsKey = await call('base', 'POST', `${ws}/security/apikeys`, {
      headers: owner,
      body: { name: 'reader', rules: [{ action: 'read', subject: 'workspace' }] },
    });
    expect(wsKey.status).toBe(201);
    state.workspaceKeyId = wsKey.body._id;
    const asKey = { 'x-platform-api-key': wsKey.body.apiKey };
    expect((await call('base', 'GET', ws, { headers: asKey })).status).toBe(200);
    expect((await call('base', 'GET', `${ws}/security/apikeys`, { headers: owner })).body).toHaveLength(1);
    expect((await call('base', 'GET', `/v2/orgs/${state.orgSlug}`, { headers: asKey })).status).toBe(403);
  });

  it('{gateway_url}: quota usage and settings, and their refusals', async () => {
    const owner = bearer(state.owner.token);
    const usage = await call('gateway', 'GET', '/v1/quotas/usage', { headers: owner });
    expect(usage.status).toBe(200);
    expect(usage.body.orgSlug).toBe(state.orgSlug);
    const byKey = await call('gateway', 'GET', '/v1/quotas/usage', {
      headers: { 'x-platform-api-key': state.orgKey.apiKey },
    });
    expect(byKey.status).toBe(200);
    expect((await call('gateway', 'GET', '/v1/quotas/usage')).status).toBe(401);
    const noOrg = await call('gateway', 'GET', '/v1/quotas/usage', { headers: bearer(state.stranger.token) });
    expect(noOrg.body.error).toBe('NO_ORG_CONTEXT');

    expect((await call('gateway', 'GET', '/v1/quotas/settings', { headers: owner })).status).toBe(200);
    const patched = await call('gateway', 'PATCH', '/v1/quotas/settings', {
      headers: owner,
      body: { policy: 'soft_downgrade', org_user_quotas: { by_role: { member: { rpm: 10 } } } },
    });
    expect(patched.body.policy).toBe('soft_downgrade');
    const badPatch = await call('gateway', 'PATCH', '/v1/quotas/settings', {
      headers: owner,
      body: { policy: 'block_everything' },
    });
    expect(badPatch.status).toBe(400);
    const memberTries = await call('gateway', 'GET', '/v1/quotas/settings', {
      headers: bearer(state.member.token),
    });
    expect(memberTries.status).toBe(403);
  });

  it('{gateway_url}: inference on the built-in mock models, and its refusals', async () => {
    const owner = bearer(state.owner.token);
    const messages = [{ role: 'user', content: 'Hello from the conformance test' }];
    const chat = await call('gateway', 'POST', '/v1/chat/completions', {
      headers: owner,
      body: { model: 'mock/chat', messages },
    });
    expect(chat.status).toBe(200);
    // the Responses API and its stored responses (llm-gateway decision 0108)
    const first = await call('gateway', 'POST', '/v1/responses', {
      headers: owner,
      body: { model: 'mock/chat', input: 'Remember the number 7' },
    });
    expect(first.status).toBe(200);
    const second = await call('gateway', 'POST', '/v1/responses', {
      headers: owner,
      body: {
        model: 'mock/chat',
        input: [{ role: 'user', content: 'Which number?' }],
        previous_response_id: first.body.id,
      },
    });
    expect(second.body.previous_response_id).toBe(first.body.id);
    expect((await call('gateway', 'GET', `/v1/responses/${second.body.id}`, { headers: owner })).status).toBe(
      200,
    );
    const items = await call('gateway', 'GET', `/v1/responses/${second.body.id}/input_items?order=asc`, {
      headers: owner,
    });
    expect(items.body.data).toHaveLength(1);
    expect(
      (await call('gateway', 'DELETE', `/v1/responses/${first.body.id}`, { headers: owner })).status,
    ).toBe(200);
    for (const [method, path] of [
      ['GET', `/v1/responses/${first.body.id}`],
      ['DELETE', `/v1/responses/${first.body.id}`],
      ['GET', `/v1/responses/${first.body.id}/input_items`],
    ] as const)
      expect((await call('gateway', method, path, { headers: owner })).status).toBe(404);
    const embeddings = await call('gateway', 'POST', '/v1/embeddings', {
      headers: owner,
      body: { model: 'mock/embeddings', input: ['one', 'two'], dimensions: 64 },
    });
    expect(embeddings.status).toBe(200);
    const rerank = await call('gateway', 'POST', '/v1/rerank', {
      headers: owner,
      body: { model: 'mock/chat', query: 'trains', documents: ['trains run', 'boats float'], top_n: 1 },
    });
    expect(rerank.status).toBe(200);
    expect((await call('gateway', 'GET', '/v1/models', { headers: owner })).status).toBe(200);
    expect((await call('gateway', 'GET', '/v1/models/mock%2Fchat', { headers: owner })).status).toBe(200);
    expect((await call('gateway', 'GET', '/v1/models/no-such-model', { headers: owner })).status).toBe(404);
    const unknown = await call('gateway', 'POST', '/v1/chat/completions', {
      headers: owner,
      body: { model: 'no/such-model', messages },
    });
    expect(unknown.body.code).toBe('MODEL_NOT_FOUND');
    const dims = await call('gateway', 'POST', '/v1/embeddings', {
      headers: owner,
      body: { model: 'mock/embeddings', input: 'x', dimensions: 7 },
    });
    expect(dims.body.code).toBe('INVALID_DIMENSIONS');
  });

  it('{gateway_url}: model catalogue, defaults, smoke tests, images and audio', async () => {
    const owner = bearer(state.owner.token);
    const admin = (await call('base', 'POST', '/v2/login/anonymous')).body as {
      userId: string;
      token: string;
    };
    const granted = await fetch(`${p.upstreams.auth}/internal/users/${admin.userId}/platform-admin`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', 'x-platform-internal-secret': OPERATOR_SECRET },
      body: JSON.stringify({ granted: true }),
    });
    expect(granted.status).toBe(200);
    const as = bearer(admin.token);
    const entry = (model_id: string, type: string, model: string) => ({
      model_id,
      type,
      provider_config: { provider: 'mock', model },
      display: { name: model_id, brand: 'Mock' },
      pricing: { per_image: 0.01, per_audio_minute: 0.006 },
    });
    expect((await call('gateway', 'GET', '/v1/models?limit=1&page=0', { headers: as })).status).toBe(200);
    const image = entry('conformance-image', 'image_generation', 'mock-image');
    expect((await call('gateway', 'POST', '/v1/models', { headers: as, body: image })).status).toBe(201);
    expect((await call('gateway', 'POST', '/v1/models', { headers: as, body: image })).status).toBe(409);
    const whisper = entry('conformance-whisper', 'audio_transcription', 'mock-whisper');
    expect((await call('gateway', 'POST', '/v1/models', { headers: as, body: whisper })).status).toBe(201);
    const { type: _t, ...noType } = image;
    expect((await call('gateway', 'POST', '/v1/models', { headers: as, body: noType })).status).toBe(400);
    expect((await call('gateway', 'POST', '/v1/models', { headers: owner, body: image })).status).toBe(403);
    const patched = await call('gateway', 'PATCH', '/v1/models/conformance-image', {
      headers: as,
      body: { tags: ['conformance'] },
    });
    expect(patched.status).toBe(200);
    expect((await call('gateway', 'GET', '/v1/models/conformance-image', { headers: as })).status).toBe(200);
    const throwaway = entry('conformance-throwaway', 'completion', 'mock-chat');
    await call('gateway', 'POST', '/v1/models', { headers: as, body: throwaway });
    expect(
      (await call('gateway', 'DELETE', '/v1/models/conformance-throwaway', { headers: as })).status,
    ).toBe(204);
    expect(
      (await call('gateway', 'DELETE', '/v1/models/conformance-throwaway', { headers: as })).status,
    ).toBe(404);
    const items = await call('gateway', 'PUT', '/v1/models', {
      headers: as,
      body: { models: [{ model_id: 'x' }] },
    });
    expect(items.body.code).toBe('INVALID_ITEMS');
    const many = await call('gateway', 'PUT', '/v1/models', {
      headers: as,
      body: { models: Array.from({ length: 501 }, (_, i) => ({ ...throwaway, model_id: `bulk-${i}` })) },
    });
    expect(many.status).toBe(413);
    const all = await call('gateway', 'GET', '/v1/models?orgSlug=all', { headers: as });
    const exported = all.body.data.map(
      ({ id: _i, object: _o, created: _c, owned_by: _b, ...e }: Record<string, unknown>) => e,
    );
    const replaced = await call('gateway', 'PUT', '/v1/models', { headers: as, body: { models: exported } });
    expect(replaced.body).toEqual({ deleted: exported.length, inserted: exported.length });

    expect((await call('gateway', 'GET', '/v1/defaults', { headers: owner })).status).toBe(200);
    const smoke = await call('gateway', 'POST', '/v1/test', {
      headers: owner,
      body: { modelId: 'mock/embeddings' },
    });
    expect(smoke.body.ok).toBe(true);
    const images = await call('gateway', 'POST', '/v1/images/generations', {
      headers: owner,
      body: { model: 'conformance-image', prompt: 'a kite', response_format: 'b64_json' },
    });
    expect(images.status).toBe(200);
    // multipart is not JSON: sent here, checked against the document the same way
    const form = new FormData();
    form.append('model', 'conformance-whisper');
    form.append('file', new Blob([silentWav(1)], { type: 'audio/wav' }), 'a.wav'); // real audio: bytes that are none are refused (400)
    const res = await fetch(`${p.gatewayUrl}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: owner,
      body: form,
    });
    const text = await res.text();
    expect(res.status).toBe(200);
    roots.gateway.check(
      'POST',
      '/v1/audio/transcriptions',
      { status: res.status, headers: res.headers, body: JSON.parse(text) },
      undefined,
      text,
    );
    // the same upload translated, answered as text
    form.set('response_format', 'text');
    const translated = await fetch(`${p.gatewayUrl}/v1/audio/translations`, {
      method: 'POST',
      headers: owner,
      body: form,
    });
    const translation = await translated.text();
    expect([translated.status, translation]).toEqual([
      200,
      expect.stringMatching(/^Mock translation of a\.wav/),
    ]);
    roots.gateway.check(
      'POST',
      '/v1/audio/translations',
      { status: translated.status, headers: translated.headers, body: undefined },
      undefined,
      translation,
    );
    // speech: a JSON request, an audio answer
    const speechBody = { model: 'mock/speech', input: 'Hello from the document', voice: 'alloy' };
    const spoken = await fetch(`${p.gatewayUrl}/v1/audio/speech`, {
      method: 'POST',
      headers: { ...owner, 'content-type': 'application/json' },
      body: JSON.stringify(speechBody),
    });
    const audio = Buffer.from(await spoken.arrayBuffer());
    expect([spoken.status, audio.subarray(0, 4).toString()]).toEqual([200, 'RIFF']);
    roots.gateway.check(
      'POST',
      '/v1/audio/speech',
      { status: spoken.status, headers: spoken.headers, body: undefined },
      speechBody,
      audio.toString('latin1'),
    );
    const tooLong = await call('gateway', 'POST', '/v1/audio/speech', {
      headers: owner,
      body: { ...speechBody, input: 'a'.repeat(4097) },
    });
    expect(tooLong.body.code).toBe('INVALID_BODY');
  });

  it('{legacy_url}: accounts, tokens, assistants, entities, intents and Messages', async () => {
    const credentials = { username: `dev-${randomUUID().slice(0, 8)}`, password: 'correct horse battery' };
    expect((await call('legacy', 'POST', '/v2/auth/signup', { body: credentials })).status).toBe(200);
    const wrong = await call('legacy', 'POST', '/v2/auth/login', {
      body: { ...credentials, password: 'nope' },
    });
    expect(wrong.status).toBe(401);
    const login = await call('legacy', 'POST', '/v2/auth/login', { body: credentials });
    const session = { 'x-legacy-session-token': login.body.sessionToken };
    const token = await call('legacy', 'POST', '/v2/auth/accessToken', {
      headers: session,
      body: { expiresAt: inAWeek() },
    });
    expect(token.status).toBe(200);
    expect((await call('legacy', 'GET', '/v2/auth/accessToken', { headers: session })).body).toHaveLength(1);

    const bot = await call('legacy', 'POST', '/v2/bots', {
      headers: bearer(token.body._session_token),
      body: { name: 'Travel helper', lang: 'en', description: 'finds trains' },
    });
    expect(bot.status).toBe(200);
    expect((await call('legacy', 'GET', '/v2/bots', { headers: session })).body).toHaveLength(1);
    expect((await call('legacy', 'GET', `/v2/bots/${bot.body.id}`, { headers: session })).status).toBe(200);
    const developer = bearer(bot.body.developerToken);
    expect((await call('legacy', 'GET', '/v1/bots')).status).toBe(401);

    // The travel assistant of the legacy tests: every response element type, contexts, events, slots.
    const entityIds: string[] = [];
    for (const entity of travelEntities) {
      const created = await call('legacy', 'POST', '/v1/entities', { headers: developer, body: entity });
      expect(created.status).toBe(200);
      entityIds.push(created.body.id);
    }
    expect((await call('legacy', 'GET', '/v1/entities', { headers: developer })).body).toHaveLength(1);
    expect((await call('legacy', 'GET', `/v1/entities/${entityIds[0]}`, { headers: developer })).status).toBe(
      200,
    );
    const intentIds: Record<string, string> = {};
    for (const [key, intent] of Object.entries(travelIntents)) {
      const created = await call('legacy', 'POST', '/v1/intents', { headers: developer, body: intent });
      expect(created.status).toBe(200);
      intentIds[key] = created.body.id;
    }
    const contextsByName = await call('legacy', 'POST', '/v1/intents', {
      headers: developer,
      body: { name: 'Goodbye', events: ['BYE'], outputContexts: { en: ['farewell'] } },
    });
    expect(contextsByName.status).toBe(200);
    expect((await call('legacy', 'GET', '/v1/intents', { headers: developer })).body).toHaveLength(6);
    expect(
      (await call('legacy', 'GET', `/v1/intents/${intentIds.find}`, { headers: developer })).status,
    ).toBe(200);
    expect((await call('legacy', 'GET', `/v1/intents/${randomUUID()}`, { headers: developer })).status).toBe(
      404,
    );
    const updated = await call('legacy', 'POST', `/v1/intents/${intentIds.welcome}`, {
      headers: developer,
      body: { events: ['HELLO'], disambiguationSentence: { en: 'Say hello' } },
    });
    expect(updated.status).toBe(200);
    const invalidIntent = await call('legacy', 'POST', '/v1/intents', {
      headers: developer,
      body: { events: 'x' },
    });
    expect(invalidIntent.status).toBe(400);
    await waitFor(
      async () => (await call('legacy', 'GET', '/v1/bots', { headers: developer })).body.training.upToDate,
      { timeoutMs: 15_000, what: 'the travel assistant to be trained' },
    );

    const client = bearer(bot.body.clientToken);
    const say = (text: string) =>
      call('legacy', 'POST', '/v1/Messages', {
        headers: client,
        body: { userId: 'traveller', platform: 'web', text },
      });
    const find = await say('i need a train from marienplats to main station');
    expect(find.status).toBe(200);
    expect(find.body.intents[0].slots).toEqual({ from: 'Marienplatz', to: 'Hauptbahnhof' });
    // in the booking context: a button, cards, events and an event item
    expect((await say('yes please')).body.intents[0].name).toBe('Confirm');
    const byEvent = await call('legacy', 'POST', '/v1/Messages', {
      headers: client,
      body: { userId: 'traveller', platform: 'web', event: 'HELP' },
    });
    expect(byEvent.body.intents[0].name).toBe('Help');
    const noUser = await call('legacy', 'POST', '/v1/Messages', {
      headers: client,
      body: { platform: 'web', text: 'hi' },
    });
    expect(noUser.status).toBe(400);
    const unknownClient = await call('legacy', 'POST', '/v1/Messages', {
      headers: bearer('not-a-client-token'),
      body: { userId: 'traveller', platform: 'web', text: 'hi' },
    });
    expect(unknownClient.status).toBe(401);
    expect((await call('legacy', 'GET', '/v1/bots', { headers: developer })).body.training.upToDate).toBe(
      true,
    );

    expect(
      (await call('legacy', 'DELETE', `/v1/intents/${contextsByName.body.id}`, { headers: developer }))
        .status,
    ).toBe(200);
    const revoke = await call('legacy', 'DELETE', `/v2/auth/accessToken/${token.body._session_token}`, {
      headers: session,
    });
    expect(revoke.status).toBe(200);
  });

  it('{base_url}: revocations answer 204 without a body', async () => {
    const owner = bearer(state.owner.token);
    const ws = `/v2/workspaces/${state.workspaceId}`;
    expect(
      (await call('base', 'DELETE', `${ws}/security/apikeys/${state.workspaceKeyId}`, { headers: owner }))
        .status,
    ).toBe(204);
    expect(
      (
        await call('base', 'DELETE', `/v2/orgs/${state.orgSlug}/apikeys/${state.orgKey._id}`, {
          headers: owner,
        })
      ).status,
    ).toBe(204);
    expect(
      (await call('base', 'DELETE', `/v2/user/accessTokens/${state.accessToken._id}`, { headers: owner }))
        .status,
    ).toBe(204);
  });

  it('checked the main answers of every root', () => {
    const exercised = (root: RootName) => [...roots[root].exercised];
    expect(exercised('base')).toEqual(
      expect.arrayContaining([
        '200 POST /v2/login/anonymous',
        '200 GET /v2/me',
        '201 POST /v2/user/accessTokens',
        '201 POST /v2/orgs',
        '201 POST /v2/orgs/{orgSlug}/members',
        '201 POST /v2/orgs/{orgSlug}/apikeys',
        '201 POST /v2/workspaces',
        '201 POST /v2/workspaces/{id}/security/apikeys',
        '401 GET /v2/me',
        '400 POST /v2/user/accessTokens',
        '404 GET /v2/workspaces/{id}',
      ]),
    );
    expect(exercised('gateway')).toEqual(
      expect.arrayContaining([
        '200 GET /v1/quotas/usage',
        '401 GET /v1/quotas/usage',
        '400 GET /v1/quotas/usage',
        '200 PATCH /v1/quotas/settings',
        '200 POST /v1/chat/completions',
        '200 POST /v1/responses',
        '200 GET /v1/responses/{id}',
        '200 GET /v1/responses/{id}/input_items',
        '200 DELETE /v1/responses/{id}',
        '404 GET /v1/responses/{id}',
        '404 DELETE /v1/responses/{id}',
        '404 GET /v1/responses/{id}/input_items',
        '200 POST /v1/embeddings',
        '200 POST /v1/rerank',
        '200 GET /v1/models',
        '200 GET /v1/models/{id}',
        '400 POST /v1/embeddings',
        '404 POST /v1/chat/completions',
        '404 GET /v1/models/{id}',
        '201 POST /v1/models',
        '409 POST /v1/models',
        '400 POST /v1/models',
        '403 POST /v1/models',
        '200 PATCH /v1/models/{id}',
        '204 DELETE /v1/models/{id}',
        '404 DELETE /v1/models/{id}',
        '400 PUT /v1/models',
        '413 PUT /v1/models',
        '200 PUT /v1/models',
        '200 GET /v1/defaults',
        '200 POST /v1/test',
        '200 POST /v1/images/generations',
        '200 POST /v1/audio/transcriptions',
        '200 POST /v1/audio/translations',
        '200 POST /v1/audio/speech',
        '400 POST /v1/audio/speech',
      ]),
    );
    expect(exercised('legacy')).toEqual(
      expect.arrayContaining([
        '200 POST /v2/auth/signup',
        '200 POST /v2/auth/accessToken',
        '200 POST /v2/bots',
        '200 GET /v1/bots',
        '200 POST /v1/entities',
        '200 POST /v1/intents',
        '200 POST /v1/Messages',
        '400 POST /v1/Messages',
        '401 POST /v1/Messages',
        '404 GET /v1/intents/{id}',
      ]),
    );
  });
});
