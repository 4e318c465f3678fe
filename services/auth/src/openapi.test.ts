import { createInProcessBus } from '@platform/bus';
import { type HttpMethod, loadConfig, ManualClock, mountedRoutes, silentLogger } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { Validator } from '@seriousme/openapi-schema-validator';
import request from 'supertest';
import { authConfigSchema } from './config';
import { AUTH_ROUTES, authApiDocument } from './openapi';
import { createAuthService } from './service';

type Operation = {
  requestBody?: { content: Record<string, { schema: { required?: string[] } }> };
  responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }>;
};
type Components = { schemas: Record<string, { required?: string[]; properties?: Record<string, unknown> }> };

describe('auth OpenAPI document', () => {
  const doc = authApiDocument('http://localhost:8080');
  const paths = doc.paths as Record<string, Partial<Record<HttpMethod, Operation>>>;
  const schemas = (doc.components as Components).schemas;
  const operations = Object.entries(paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ key: `${method} ${path}`, op: op as Operation })),
  );

  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(doc as Parameters<Validator['validate']>[0]);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
  });

  it('documents every public route once, with the request schemas that validate it', () => {
    const keys = AUTH_ROUTES.map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(
      paths['/v2/user/accessTokens']!.post!.requestBody!.content['application/json']!.schema.required,
    ).toEqual(['name', 'expiresAt']);
    expect(paths['/v2/workspaces/{id}/security/apikeys']!.post!.requestBody).toBeDefined();
  });

  it('gives every answer with a body a schema, and every error the envelope', () => {
    for (const { key, op } of operations) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (status === '204') {
          expect({ key, status, content: response.content }).toEqual({ key, status, content: undefined });
          continue;
        }
        const schema = response.content?.['application/json']?.schema;
        expect({ key, status, schema }).toEqual({ key, status, schema: expect.any(Object) });
        if (Number(status) >= 400 && status !== '503')
          expect({ key, status, schema }).toEqual({
            key,
            status,
            schema: { $ref: '#/components/schemas/ErrorEnvelope' },
          });
      }
    }
  });

  it('names the fields of spec 2.4, 2.6 and 2.7 as required', () => {
    expect(schemas.AnonymousSession!.required).toEqual(['userId', 'sessionId', 'token']);
    expect(schemas.UserAccessToken!.required).toEqual(
      expect.arrayContaining(['name', 'expiresAt', 'userId', 'token', '_id']),
    );
    // listed tokens never carry the secret
    expect(Object.keys(schemas.UserAccessTokenSummary!.properties!)).not.toContain('token');
    expect(schemas.CreatedWorkspaceApiKey!.required).toEqual(
      expect.arrayContaining(['apiKey', 'name', 'rules', 'subjectId', 'subjectType']),
    );
    expect(Object.keys(schemas.WorkspaceApiKey!.properties!)).not.toContain('apiKey');
    expect(schemas.WorkspaceApiKeyRule!.required).toEqual(['action', 'subject', 'conditions']);
    expect(schemas.CreatedOrgApiKey!.required).toContain('apiKey');
  });
});

describe('auth OpenAPI coverage and serving', () => {
  const service = createAuthService({
    config: loadConfig(authConfigSchema, { PLATFORM_INTERNAL_SECRET: 's'.repeat(40) }),
    clock: new ManualClock(),
    logger: silentLogger(),
    store: createEmbeddedStore(),
    bus: createInProcessBus(),
  });

  it('documents exactly the public routes the app mounts', async () => {
    const mounted = mountedRoutes((await service).handler);
    // Operational routes, the internal API (guarded by the internal secret), the HTML pages and the
    // OpenID Connect endpoints (described by the provider's discovery document) are not the API's.
    const operational = ['get /healthz', 'get /readyz', 'get /metrics'];
    const notApi = (path: string) =>
      path.startsWith('/internal/') ||
      path.startsWith('/account') ||
      (path.startsWith('/oidc/') && path !== '/oidc/jwks');
    const publicRoutes = mounted.filter((r) => !operational.includes(r) && !notApi(r.split(' ')[1]!)).sort();
    expect(publicRoutes).toEqual(AUTH_ROUTES.map((r) => `${r.method} ${r.path}`).sort());
  });

  it('serves the document at GET /openapi.json, naming the root the proxy forwarded', async () => {
    const res = await request((await service).handler)
      .get('/openapi.json')
      .set('x-forwarded-proto', 'https')
      .set('x-forwarded-host', 'api.example.com');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.servers).toEqual([{ url: 'https://api.example.com' }]);
    expect(Object.keys(res.body.paths)).toEqual(Object.keys(authApiDocument('/').paths as object));
  });
});
