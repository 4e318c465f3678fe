import request from 'supertest';
import { z } from 'zod';
import { Forbidden, RateLimited } from '../errors';
import { silentLogger } from '../logger';
import { createServiceApp } from './service-app';
import { parseInput } from './validate';

const app = createServiceApp({
  name: 'test',
  logger: silentLogger(),
  bodyLimit: 100,
  readiness: { db: async () => undefined, bus: async () => Promise.reject(new Error('bus down')) },
  routes: (router) => {
    router.post('/echo', (req, res) => {
      const body = parseInput(z.object({ name: z.string().min(1) }), req.body);
      res.json(body);
    });
    router.get('/forbidden', async () => {
      throw new Forbidden('no');
    });
    router.get('/limited', () => {
      throw new RateLimited(7);
    });
    router.get('/boom', async () => {
      throw new Error('secret internal detail');
    });
  },
});

describe('the common service app', () => {
  it('answers health, and readiness naming each failing check', async () => {
    await request(app).get('/healthz').expect(200, { status: 'ok', service: 'test' });
    const ready = await request(app).get('/readyz').expect(503);
    expect(ready.body.checks).toEqual({ db: 'ok', bus: 'bus down' });
  });

  it('counts requests by route and status in /metrics', async () => {
    await request(app).post('/echo').send({ name: 'a' }).expect(200);
    const metrics = await request(app).get('/metrics').expect(200);
    expect(metrics.text).toMatch(/http_requests_total\{[^}]*route="\/echo",status="200"[^}]*\} 1/);
  });

  it('echoes a well-formed x-request-id and replaces a malformed one', async () => {
    const ok = await request(app).get('/healthz').set('x-request-id', 'abc-123');
    expect(ok.headers['x-request-id']).toBe('abc-123');
    const bad = await request(app).get('/healthz').set('x-request-id', 'bad id with spaces');
    expect(bad.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('maps errors to the envelope', async () => {
    const invalid = await request(app).post('/echo').send({ name: '' }).expect(400);
    expect(invalid.body).toMatchObject({ error: 'InvalidInput', code: 'INVALID_BODY', status: 400 });
    expect(invalid.body.details.issues[0].field).toBe('name');
    expect(invalid.body.requestId).toBe(invalid.headers['x-request-id']);

    const malformed = await request(app)
      .post('/echo')
      .set('content-type', 'application/json')
      .send('{"name":');
    expect(malformed.status).toBe(400);
    expect(malformed.body.code).toBe('INVALID_BODY');

    const big = await request(app)
      .post('/echo')
      .send({ name: 'x'.repeat(200) })
      .expect(413);
    expect(big.body.code).toBe('PAYLOAD_TOO_LARGE');

    await request(app).get('/forbidden').expect(403);
    const limited = await request(app).get('/limited').expect(429);
    expect(limited.headers['retry-after']).toBe('7');
    expect(limited.body).toMatchObject({ error: 'RATE_LIMITED', code: 'RATE_LIMITED', retryAfter: 7 });

    const boom = await request(app).get('/boom').expect(500);
    expect(JSON.stringify(boom.body)).not.toContain('secret');
    expect(boom.body.error).toBe('InternalError');

    const missing = await request(app).get('/nope').expect(404);
    expect(missing.body.error).toBe('RouteNotFound');
  });
});
