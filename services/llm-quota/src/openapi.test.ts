import { randomUUID } from 'node:crypto';
import { createInProcessBus } from '@platform/bus';
import { type Principal, permissionTree } from '@platform/contracts';
import {
  loadConfig,
  ManualClock,
  mountedRoutes,
  PRINCIPAL_HEADER,
  sealPrincipal,
  silentLogger,
  USER_ID_HEADER,
} from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { Validator } from '@seriousme/openapi-schema-validator';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import request from 'supertest';
import { llmQuotaConfigSchema } from './config';
import { LIMIT_KEYS } from './domain/plans';
import { LLM_QUOTA_ROUTES, llmQuotaApiDocument } from './openapi';
import { createLlmQuotaService } from './service';

type Schema = {
  required?: string[];
  properties?: Record<string, { enum?: string[]; const?: string; $ref?: string }>;
};

const SECRET = 's'.repeat(40);
const clock = new ManualClock('2025-03-15T12:00:30Z');

function principal(permissions: string[]): Principal {
  return {
    credential: { kind: 'session', id: `cred-${randomUUID()}`, projectId: null },
    session: {
      id: 'sess-1',
      org: {
        slug: 'acme',
        name: 'ACME',
        role: { slug: 'owner', permissions, scopes: [] },
        groups: [],
        settings: {},
        subscription: null,
      },
    },
    user: { id: 'user-1', email: null, anonymous: false, role: null },
    run: {
      permissions: permissionTree(permissions),
      scopes: [],
      correlationId: randomUUID(),
      sourceWorkspaceId: null,
    },
  };
}

const edgeHeaders = (p: Principal) => ({
  [PRINCIPAL_HEADER]: sealPrincipal(p, SECRET, clock),
  [USER_ID_HEADER]: p.user.id!,
});

describe('llm-quota OpenAPI document', () => {
  const doc = llmQuotaApiDocument('http://localhost:8080/llm');
  const schemas = (doc.components as { schemas: Record<string, Schema> }).schemas;

  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(doc as Parameters<Validator['validate']>[0]);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
  });

  it('states spec 2.1 and 2.2: their required fields exactly, and their enums', () => {
    const usage = schemas.OrgQuotaUsage!;
    expect(usage.required).toEqual(['orgSlug', 'computed_at', 'policy', 'enforced']);
    expect(usage.properties!.policy!.enum).toEqual(['hard_block', 'soft_downgrade']);
    const gauge = schemas.QuotaGauge!;
    expect(gauge.required).toEqual(['key', 'scope', 'window', 'limit', 'used', 'percent']);
    expect(gauge.properties!.key!.enum).toEqual([...LIMIT_KEYS]);
    expect(gauge.properties!.scope!.enum).toEqual(['user', 'org']);
    expect(gauge.properties!.window!.enum).toEqual(['minute', 'month']);
    // every item of `enforced` also has source = plan and scope = org
    const orgGauge = schemas.OrgQuotaGauge!;
    expect(orgGauge.required).toEqual(expect.arrayContaining(['source', 'scope']));
    expect(orgGauge.properties!.source!.const).toBe('plan');
    expect(orgGauge.properties!.scope!.const).toBe('org');
  });
});

describe('llm-quota OpenAPI coverage and serving', () => {
  const doc = llmQuotaApiDocument('http://localhost:8080/llm');
  const service = createLlmQuotaService({
    config: loadConfig(llmQuotaConfigSchema, { PLATFORM_INTERNAL_SECRET: SECRET, LOG_LEVEL: 'silent' }),
    clock,
    logger: silentLogger(),
    store: createEmbeddedStore(),
    bus: createInProcessBus(),
  });

  it('documents exactly the public routes the app mounts', async () => {
    const mounted = mountedRoutes((await service).handler);
    // Operational routes and the operators' internal API (guarded by the internal secret) are not the root's.
    const operational = ['get /healthz', 'get /readyz', 'get /metrics'];
    const publicRoutes = mounted
      .filter((r) => !operational.includes(r) && !r.split(' ')[1]!.startsWith('/internal/'))
      .sort();
    expect(publicRoutes).toEqual(LLM_QUOTA_ROUTES.map((r) => `${r.method} ${r.path}`).sort());
  });

  it('serves the document at GET /openapi.json with the forwarded root as its server', async () => {
    const res = await request((await service).handler)
      .get('/openapi.json')
      .set('x-forwarded-proto', 'https')
      .set('x-forwarded-host', 'platform.example.com')
      .set('x-forwarded-prefix', '/llm');
    expect(res.status).toBe(200);
    expect(res.body.servers).toEqual([{ url: 'https://platform.example.com/llm' }]);
  });

  it('answers usage and settings as the document says', async () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema(doc, 'quota');
    const check = (pointer: string, body: unknown) => {
      const validate = ajv.getSchema(`quota#${pointer}`)!;
      expect({ pointer, valid: validate(body), errors: validate.errors }).toEqual({
        pointer,
        valid: true,
        errors: null,
      });
    };
    const app = (await service).handler;
    const as = edgeHeaders(principal(['models:read', 'quotas:manage']));
    const usage = await request(app).get('/v1/quotas/usage').set(as);
    expect(usage.status).toBe(200);
    check('/paths/~1v1~1quotas~1usage/get/responses/200/content/application~1json/schema', usage.body);
    const patched = await request(app)
      .patch('/v1/quotas/settings')
      .set(as)
      .send({ policy: 'soft_downgrade', org_user_quotas: { overrides: { 'user-2': { rpm: 5 } } } });
    expect(patched.status).toBe(200);
    check('/paths/~1v1~1quotas~1settings/patch/responses/200/content/application~1json/schema', patched.body);
    const refused = await request(app)
      .get('/v1/quotas/settings')
      .set(edgeHeaders(principal(['models:read'])));
    expect(refused.status).toBe(403);
    check('/components/schemas/ErrorEnvelope', refused.body);
  });
});
