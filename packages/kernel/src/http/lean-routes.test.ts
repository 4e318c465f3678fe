import type { Principal } from '@platform/contracts';
import request from 'supertest';
import { Forbidden, Unauthenticated } from '../errors';
import { createLogger } from '../logger';
import { edgePrincipal, sealPrincipal } from '../principal-seal';
import type { LeanRequest } from './lean-routes';
import { createServiceApp } from './service-app';

const secret = 's'.repeat(40);
const principal: Principal = {
  credential: { kind: 'session', id: 's1' },
  session: { id: 's1', org: null },
  user: { id: 'u1', email: null, anonymous: true, role: null },
  run: { permissions: {}, scopes: [], correlationId: 'r1', sourceWorkspaceId: null },
};
const sealed = sealPrincipal(principal, secret);

const lines: Array<Record<string, unknown>> = [];
const logger = createLogger({
  name: 'lean',
  destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
});
/** which way each request went: express sets `req.app`, the lean way does not */
const ways: string[] = [];
const way = (req: LeanRequest) => ways.push((req as { app?: unknown }).app ? 'express' : 'lean');

const app = createServiceApp({
  name: 'lean',
  logger,
  before: [
    edgePrincipal(secret),
    async (req, _res, next) => {
      if (req.headers['x-reject']) throw new Forbidden('refused before the route');
      next();
    },
  ],
  leanRoutes: [
    {
      path: '/me',
      handle: async (req) => {
        way(req);
        logger.info('inside the handler');
        if (!req.principal) throw new Unauthenticated();
        return { user: req.principal.user.id, text: 'héllo' };
      },
    },
    {
      path: '/forbidden',
      handle: (req) => {
        way(req);
        throw new Forbidden('no');
      },
    },
    {
      path: '/boom',
      handle: () => {
        throw new Error('secret internal detail');
      },
    },
  ],
  routes: (router) => {
    router.get('/other', (_req, res) => {
      res.json({ other: true });
    });
  },
});

/** The answer as a client sees it, minus what differs between any two answers. */
async function answer(listener: typeof app.listener, path: string, headers: Record<string, string> = {}) {
  const res = await request(listener).get(path).set(headers);
  const { date, 'x-request-id': id, connection, ...rest } = res.headers;
  return { status: res.status, headers: rest, text: res.text, id };
}

describe('lean routes', () => {
  beforeEach(() => {
    lines.length = 0;
    ways.length = 0;
  });

  it('answers a lean GET without express, exactly as the express stack answers it', async () => {
    const auth = { 'x-platform-principal': sealed, 'x-platform-user-id': 'u1' };
    const lean = await answer(app.listener, '/me', auth);
    const viaExpress = await answer(app, '/me', auth);
    expect(ways).toEqual(['lean', 'express']);
    expect(lean.status).toBe(200);
    expect(JSON.parse(lean.text)).toEqual({ user: 'u1', text: 'héllo' });
    expect(lean.headers['cache-control']).toBe('no-store');
    expect({ ...lean, id: undefined }).toEqual({ ...viaExpress, id: undefined });
  });

  it('answers errors in the one envelope, from the handler and from a before handler, as express does', async () => {
    for (const [path, headers] of [
      ['/me', {}],
      ['/me', { 'x-platform-principal': 'forged.seal', 'x-platform-user-id': 'u1' }],
      ['/me', { 'x-platform-principal': sealed, 'x-platform-user-id': 'someone-else' }],
      ['/me', { 'x-reject': 'yes' }],
      ['/forbidden', {}],
      ['/boom', {}],
    ] as const) {
      const lean = await answer(app.listener, path, headers);
      const viaExpress = await answer(app, path, headers);
      expect(lean.status).toBeGreaterThanOrEqual(400);
      expect(JSON.parse(lean.text).requestId).toBe(lean.id);
      expect({ ...lean, text: JSON.parse(lean.text), id: undefined }).toEqual({
        ...viaExpress,
        text: { ...JSON.parse(viaExpress.text), requestId: lean.id },
        id: undefined,
      });
    }
    expect(ways).toContain('lean');
    const boom = await answer(app.listener, '/boom');
    expect(boom.status).toBe(500);
    expect(boom.text).not.toContain('secret');
    // the 5xx is logged with the request id of its request
    expect(lines.some((l) => l.msg === 'request failed' && l.requestId === boom.id)).toBe(true);
  });

  it('carries the request id: echoed when well formed, in every log line written while serving', async () => {
    const res = await answer(app.listener, '/me', { 'x-request-id': 'abc-123' });
    expect(res.id).toBe('abc-123');
    expect(lines.find((l) => l.msg === 'inside the handler')?.requestId).toBe('abc-123');
    const bad = await answer(app.listener, '/me', { 'x-request-id': 'bad id' });
    expect(bad.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('counts lean answers in the metrics under their route', async () => {
    await request(app.listener).get('/forbidden').expect(403);
    const metrics = await request(app.admin).get('/metrics').expect(200);
    expect(metrics.text).toMatch(/http_requests_total\{[^}]*route="\/forbidden",status="403"[^}]*\} [1-9]/);
  });

  it('leaves to express what is not a plain GET of the exact path', async () => {
    await request(app.listener).get('/ME').expect(401);
    await request(app.listener).get('/me/').expect(401);
    await request(app.listener).get('/me').set('content-length', '0').expect(401);
    await request(app.listener).get('/me').set('if-none-match', '"x"').expect(401);
    expect(ways).toEqual(['express', 'express', 'express', 'express']);
    const head = await request(app.listener).head('/me');
    expect(head.status).toBe(401);
    expect((await request(app.listener).get('/other').expect(200)).body).toEqual({ other: true });
    // express's answer: the path's other methods are refused with 405 and Allow
    await request(app.listener).post('/me').expect(405).expect('allow', 'GET, HEAD');
    await request(app.listener).get('/me?x=1').expect(401);
    expect(ways.at(-1)).toBe('lean');
  });
});
