import { createInProcessBus } from '@platform/bus';
import { loadConfig, ManualClock, silentLogger } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { Validator } from '@seriousme/openapi-schema-validator';
import { authConfigSchema } from './config';
import { AUTH_ROUTES, authApiDocument } from './openapi';
import { createAuthService } from './service';

describe('auth OpenAPI document', () => {
  const doc = authApiDocument('http://localhost:8080');

  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(doc as Parameters<Validator['validate']>[0]);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
  });

  it('documents every public route once, with the request schemas that validate it', () => {
    const keys = AUTH_ROUTES.map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    const paths = doc.paths as Record<
      string,
      Record<string, { requestBody?: { content: Record<string, { schema: { required?: string[] } }> } }>
    >;
    expect(
      paths['/v2/user/accessTokens']!.post!.requestBody!.content['application/json']!.schema.required,
    ).toEqual(['name', 'expiresAt']);
    expect(paths['/v2/workspaces/{id}/security/apikeys']!.post!.requestBody).toBeDefined();
  });
});

describe('auth OpenAPI coverage', () => {
  it('documents exactly the public routes the app mounts', async () => {
    const service = await createAuthService({
      config: loadConfig(authConfigSchema, { PLATFORM_INTERNAL_SECRET: 's'.repeat(40) }),
      clock: new ManualClock(),
      logger: silentLogger(),
      store: createEmbeddedStore(),
      bus: createInProcessBus(),
    });
    type Layer = { route?: { path: string; methods: Record<string, boolean> }; handle?: { stack?: Layer[] } };
    const mounted: string[] = [];
    const walk = (stack: Layer[]) => {
      for (const layer of stack) {
        if (layer.route)
          for (const m of Object.keys(layer.route.methods)) mounted.push(`${m} ${layer.route.path}`);
        else if (layer.handle?.stack) walk(layer.handle.stack);
      }
    };
    walk((service.handler as unknown as { router: { stack: Layer[] } }).router.stack);
    const operational = ['get /healthz', 'get /readyz', 'get /metrics', 'post /internal/principal'];
    const publicRoutes = mounted.filter((r) => !operational.includes(r)).sort();
    expect(publicRoutes).toEqual(AUTH_ROUTES.map((r) => `${r.method} ${r.path}`).sort());
  });
});
