import { createRootResolver } from './roots';
import { compileRoutes, normalizeRoutePath } from './route-table';

describe('root resolution', () => {
  const resolve = createRootResolver({
    gatewayPrefix: '/llm',
    legacyPrefix: '/legacy',
    gatewayHosts: ['gateway.example.com'],
    legacyHosts: [],
  });

  it('strips the gateway and legacy prefixes and keeps the query', () => {
    expect(resolve('/llm/v1/quotas/usage?x=1', 'edge')).toEqual({
      root: 'gateway',
      path: '/v1/quotas/usage',
      upstreamUrl: '/v1/quotas/usage?x=1',
      prefix: '/llm',
    });
    expect(resolve('/legacy', undefined)).toEqual({
      root: 'legacy',
      path: '/',
      upstreamUrl: '/',
      prefix: '/legacy',
    });
    expect(resolve('/legacy?a=b', undefined)).toEqual({
      root: 'legacy',
      path: '/',
      upstreamUrl: '/?a=b',
      prefix: '/legacy',
    });
    expect(resolve('/legacyish/v1', undefined)).toEqual({
      root: 'base',
      path: '/legacyish/v1',
      upstreamUrl: '/legacyish/v1',
      prefix: '',
    });
    expect(resolve('/v2/me', undefined)).toEqual({
      root: 'base',
      path: '/v2/me',
      upstreamUrl: '/v2/me',
      prefix: '',
    });
  });

  it('maps configured host names onto a root without a prefix', () => {
    expect(resolve('/v1/quotas/usage', 'Gateway.Example.com:8443')).toMatchObject({
      root: 'gateway',
      upstreamUrl: '/v1/quotas/usage',
    });
    expect(resolve('/v1/quotas/usage', 'other.example.com')).toMatchObject({ root: 'base' });
  });
});

describe('the route table', () => {
  const lookup = compileRoutes([
    {
      root: 'gateway',
      method: 'GET',
      path: '/v1/quotas/usage',
      requireOrg: true,
      permission: 'models:read',
      rateLimit: { points: 60, durationSeconds: 60 },
    },
    { root: 'base', method: 'POST', path: '/v2/login/anonymous', access: 'public' },
    { root: 'base', method: 'GET', path: '/v2/orgs/:orgSlug/things', permission: 'things:read' },
    { root: 'base', method: 'OPTIONS', path: '/oidc/token', access: 'public', preflight: true },
  ]);

  it('matches case-insensitively and ignores trailing slashes, like the services', () => {
    expect(normalizeRoutePath('/V1/Quotas/Usage//')).toBe('/v1/quotas/usage');
    for (const path of ['/v1/quotas/usage', '/v1/quotas/usage/', '/V1/QUOTAS/usage']) {
      expect(lookup('gateway', 'GET', path)).toMatchObject({ requireOrg: true, permission: 'models:read' });
    }
    expect(lookup('gateway', 'HEAD', '/v1/quotas/usage').permission).toBe('models:read');
  });

  it('falls back to the root default: authenticated on base and gateway, public on legacy', () => {
    expect(lookup('gateway', 'POST', '/v1/quotas/usage')).toMatchObject({
      name: 'gateway',
      access: 'authenticated',
      rateLimit: null,
    });
    expect(lookup('base', 'POST', '/v2/login/anonymous').access).toBe('public');
    expect(lookup('base', 'GET', '/v2/login/anonymous').access).toBe('authenticated');
    expect(lookup('legacy', 'GET', '/v1/bots').access).toBe('public');
  });

  it('matches :param segments, never empty ones', () => {
    expect(lookup('base', 'GET', '/v2/orgs/acme/things').permission).toBe('things:read');
    expect(lookup('base', 'GET', '/v2/orgs//things').permission).toBeNull();
  });

  it('a preflight rule matches CORS preflights alone: a plain OPTIONS gets the root default', () => {
    const preflight = { origin: 'https://app.example', 'access-control-request-method': 'POST' };
    expect(lookup('base', 'OPTIONS', '/oidc/Token/', preflight).access).toBe('public');
    expect(lookup('base', 'OPTIONS', '/oidc/token', { origin: 'https://app.example' }).access).toBe(
      'authenticated',
    );
    expect(lookup('base', 'OPTIONS', '/oidc/token').access).toBe('authenticated');
    expect(lookup('base', 'OPTIONS', '/v2/me', preflight).access).toBe('authenticated');
    expect(lookup('base', 'POST', '/oidc/token', preflight).access).toBe('authenticated');
  });

  it("lets pages of other origins read the edge's own errors on the paths a preflight rule names, and there alone", () => {
    const lookup = compileRoutes([
      { root: 'base', method: 'OPTIONS', path: '/oidc/token', access: 'public', preflight: true },
      { root: 'base', method: 'POST', path: '/oidc/token', access: 'public' },
      { root: 'base', method: 'POST', path: '/oidc/token/revocation', access: 'public' },
      { root: 'base', method: 'POST', path: '/v2/login/anonymous', access: 'public' },
    ]);
    expect(lookup('base', 'POST', '/OIDC/token/').crossOriginErrors).toBe(true);
    const preflight = { origin: 'https://app.example', 'access-control-request-method': 'POST' };
    expect(lookup('base', 'OPTIONS', '/oidc/token', preflight).crossOriginErrors).toBe(true);
    expect(lookup('base', 'POST', '/oidc/token/revocation').crossOriginErrors).toBe(false);
    expect(lookup('base', 'POST', '/v2/login/anonymous').crossOriginErrors).toBe(false);
    // a method the table does not list there is the root's default
    expect(lookup('base', 'PUT', '/oidc/token').crossOriginErrors).toBe(false);
  });
});
