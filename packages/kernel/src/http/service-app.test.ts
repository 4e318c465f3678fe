import { once } from 'node:events';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import type { ErrorRequestHandler } from 'express';
import request from 'supertest';
import { z } from 'zod';
import { Forbidden, RateLimited } from '../errors';
import { listen } from '../lifecycle';
import { silentLogger } from '../logger';
import { envelopeOf } from './envelope';
import { createServiceApp } from './service-app';
import { jsonBody, parseInput } from './validate';

const app = createServiceApp({
  name: 'test',
  logger: silentLogger(),
  bodyLimit: 100,
  readiness: {
    required: { db: async () => undefined },
    reported: { bus: async () => Promise.reject(new Error('bus down')) },
  },
  routes: (router) => {
    router.get('/things/:id', (req, res) => {
      res.json({ id: req.params.id });
    });
    router.post('/echo', (req, res) => {
      const body = parseInput(z.object({ name: z.string().min(1) }), jsonBody(req));
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
  it('serves health, readiness and metrics on the admin listener only, never on the public app', async () => {
    await request(app.admin).get('/healthz').expect(200, { status: 'ok', service: 'test' });
    for (const path of ['/healthz', '/readyz', '/metrics']) await request(app).get(path).expect(404);
  });

  it('stays ready when only a reported dependency (the bus) is down, naming it as degraded', async () => {
    const ready = await request(app.admin).get('/readyz').expect(200);
    expect(ready.body).toMatchObject({ status: 'degraded', degraded: ['bus'] });
    expect(ready.body.checks).toEqual({ db: 'ok', bus: 'bus down' });
    const storeDown = createServiceApp({
      name: 'down',
      logger: silentLogger(),
      readiness: { required: { store: () => Promise.reject(new Error('store down')) } },
      routes: () => undefined,
    });
    const notReady = await request(storeDown.admin).get('/readyz').expect(503);
    expect(notReady.body).toMatchObject({ status: 'not_ready', checks: { store: 'store down' } });
  });

  it('counts requests by route and status in /metrics', async () => {
    await request(app).post('/echo').send({ name: 'a' }).expect(200);
    const metrics = await request(app.admin).get('/metrics').expect(200);
    expect(metrics.text).toMatch(/http_requests_total\{[^}]*route="\/echo",status="200"[^}]*\} 1/);
  });

  it('counts in /metrics the answers `listen` writes itself, before the app (route listen:refused)', async () => {
    const server = await listen(app.listener, 0, '127.0.0.1');
    try {
      for (const hosts of ['', 'Host: a\r\nHost: b\r\n']) {
        const socket = connect(server.port, '127.0.0.1');
        socket.write(`GET /things/1 HTTP/1.1\r\n${hosts}Connection: close\r\n\r\n`);
        socket.resume();
        await once(socket, 'close');
      }
    } finally {
      await server.close(100);
    }
    const metrics = await request(app.admin).get('/metrics').expect(200);
    expect(metrics.text).toMatch(
      /http_requests_total\{method="GET",route="listen:refused",status="400"[^}]*\} 2/,
    );
  });

  it('answers no-store by default: API answers are never cached unless a route says so', async () => {
    const res = await request(app).post('/echo').send({ name: 'a' }).expect(200);
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('answers 415 in the envelope to an unsupported Content-Encoding, 400 to a body that does not decode', async () => {
    const unsupported = await request(app)
      .post('/echo')
      .set('content-type', 'application/json')
      .set('content-encoding', 'compress')
      .send('{}');
    expect(unsupported.status).toBe(415);
    expect(unsupported.body).toMatchObject({ status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' });
    const notGzip = await request(app)
      .post('/echo')
      .set('content-type', 'application/json')
      .set('content-encoding', 'gzip')
      .send('{}');
    expect(notGzip.status).toBe(400);
    expect(notGzip.body).toMatchObject({ status: 400, error: 'InvalidBody' });
    // Real HTTP: supertest re-encodes a Buffer sent as JSON.
    const server = await listen(app, 0, '127.0.0.1');
    try {
      const post = (body: Buffer) =>
        fetch(`${server.url}/echo`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
          body,
        });
      const gzipped = await post(gzipSync(JSON.stringify({ name: 'zipped' })));
      expect(gzipped.status).toBe(200);
      expect(await gzipped.json()).toEqual({ name: 'zipped' });
      // The limit counts decompressed bytes: a small gzip of a large body is refused.
      const bomb = await post(gzipSync(JSON.stringify({ name: 'x'.repeat(10_000) })));
      expect(bomb.status).toBe(413);
    } finally {
      await server.close(100);
    }
  });

  it('answers 400 naming where to a JSON body holding a key named __proto__, escaped or not, at any depth', async () => {
    for (const [raw, field] of [
      ['{"name":"a","__proto__":{"admin":true}}', '__proto__'],
      ['{"name":"a","nested":[{"x":1},{"\\u005f_proto__":1}]}', 'nested.1.__proto__'],
    ] as const) {
      const res = await request(app).post('/echo').set('content-type', 'application/json').send(raw);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        code: 'INVALID_BODY',
        details: { issues: [{ field, message: expect.stringContaining('__proto__') }] },
      });
    }
    // escapes alone, and the word in a value, are fine
    for (const raw of ['{"name":"caf\\u00e9"}', '{"name":"__proto__"}']) {
      const res = await request(app).post('/echo').set('content-type', 'application/json').send(raw);
      expect(res.status).toBe(200);
    }
  });

  it('answers 400 naming where to a JSON body nested more than 128 levels deep, before any route reads it', async () => {
    let read = 0;
    const roomy = createServiceApp({
      name: 'roomy',
      logger: silentLogger(),
      routes: (router) => {
        router.post('/store', (req, res) => {
          read += 1;
          // what a route does with a body (sends it on, stores it, logs it) overflowed the stack past a few thousand
          res.json({ bytes: JSON.stringify(req.body).length });
        });
      },
    });
    const post = (raw: string) =>
      request(roomy).post('/store').set('content-type', 'application/json').send(raw);
    const deep = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
    const refused = await post(`{"a":1,"b":{"c":${deep(10_000)}}}`);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      error: 'InvalidInput',
      code: 'INVALID_BODY',
      message: 'Invalid body: nested more than 128 levels deep',
      details: { issues: [{ field: `b.c${'.0'.repeat(126)}`, message: 'nested more than 128 levels deep' }] },
    });
    // one past the bound, in an object or an array, escaped or not; never read by the route
    expect((await post(`{"a":${deep(128)}}`)).status).toBe(400);
    expect((await post(`[{"\\u0061":${deep(127)}}]`)).status).toBe(400);
    expect(read).toBe(0);
    // up to the bound, and many brackets that do not nest, are the route's
    expect((await post(`{"a":${deep(127)}}`)).status).toBe(200);
    expect((await post(`[${Array.from({ length: 500 }, () => '{"x":[1]}').join(',')}]`)).status).toBe(200);
    // brackets inside strings do not nest
    expect((await post(JSON.stringify({ text: '['.repeat(1000) }))).status).toBe(200);
    expect(read).toBe(3);
  });

  it('refuses a deep body or a __proto__ key in any charset JSON may come in, not only in UTF-8', async () => {
    let read = 0;
    const roomy = createServiceApp({
      name: 'roomy',
      logger: silentLogger(),
      routes: (router) => {
        router.post('/store', (req, res) => {
          read += 1;
          res.json({ bytes: JSON.stringify(req.body).length });
        });
      },
    });
    // Real HTTP: supertest re-encodes a Buffer sent as JSON.
    const server = await listen(roomy, 0, '127.0.0.1');
    try {
      const post = async (charset: string, body: Buffer) => {
        const res = await fetch(`${server.url}/store`, {
          method: 'POST',
          headers: { 'content-type': `application/json; charset=${charset}` },
          body,
        });
        return { status: res.status, body: await res.json() };
      };
      // UTF-7 spells `[` without its byte: `+AFsAWwBb-` is `[[[` (a stack overflow, 500, in the route)
      const utf7 = Buffer.from(`{"a":+${'AFsAWwBb'.repeat(4_000)}-${']'.repeat(12_000)}}`);
      // UTF-16 and UTF-32 put a zero byte between `_` and `_`
      const utf16 = Buffer.from('{"__proto__":{"admin":true}}', 'utf16le');
      for (const [charset, body, message] of [
        ['utf-7', utf7, 'Invalid body: nested more than 128 levels deep'],
        ['utf-16le', utf16, 'Invalid body: __proto__: a key named __proto__ is not accepted'],
      ] as const) {
        expect(await post(charset, body)).toEqual({
          status: 400,
          body: expect.objectContaining({ code: 'INVALID_BODY', message }),
        });
      }
      expect(read).toBe(0);
      expect(await post('utf-16le', Buffer.from('{"a":[[1]]}', 'utf16le'))).toEqual({
        status: 200,
        body: { bytes: 11 },
      });
    } finally {
      await server.close(100);
    }
  });

  it('hands a refused or unreadable body to the error handler of the route it was sent to (its own shape)', async () => {
    const shaped = createServiceApp({
      name: 'shaped',
      logger: silentLogger(),
      bodyLimit: 1000,
      routes: (router) => {
        router.post('/v1/shaped', (_req, res) => {
          res.json({ ok: true });
        });
        router.use('/v1/shaped', ((err, _req, res, _next) => {
          const { status, message } = envelopeOf(err, undefined);
          res.status(status).json({ type: 'error', error: { message } });
        }) as ErrorRequestHandler);
      },
    });
    for (const [raw, status, message] of [
      [`{"a":${'['.repeat(200)}${']'.repeat(200)}}`, 400, 'Invalid body: nested more than 128 levels deep'],
      ['{"__proto__":{}}', 400, 'Invalid body: __proto__: a key named __proto__ is not accepted'],
      ['{"a":', 400, 'Request body is not valid JSON'],
      [`{"a":"${'x'.repeat(1000)}"}`, 413, 'Request body is too large: this route takes at most 1000 bytes'],
    ] as const) {
      const res = await request(shaped).post('/v1/shaped').set('content-type', 'application/json').send(raw);
      expect([res.status, res.body]).toEqual([status, { type: 'error', error: { message } }]);
    }
  });

  it('answers 415 to a body sent as anything but JSON on a JSON route, rather than reading it as no body', async () => {
    const form = await request(app).post('/echo').type('form').send('name=curl');
    expect(form.status).toBe(415);
    expect(form.body).toMatchObject({ status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' });
    expect(form.body.message).toBe(
      'Send the body as JSON, with Content-Type: application/json (not application/x-www-form-urlencoded)',
    );
    const untyped = await request(app)
      .post('/echo')
      .set('content-type', '')
      .send(Buffer.from('{"name":"x"}'));
    expect(untyped.status).toBe(415);
    // no body at all is still the route's to judge: here a 400 naming the field
    const empty = await request(app).post('/echo');
    expect(empty.status).toBe(400);
    expect((await request(app).post('/echo').send({ name: 'json' })).body).toEqual({ name: 'json' });
  });

  it('answers 405 with Allow to a method no route of the path takes, 404 to a path no route has', async () => {
    const wrong = await request(app).delete('/things/1');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.allow).toBe('GET, HEAD');
    expect(wrong.body).toMatchObject({
      error: 'METHOD_NOT_ALLOWED',
      code: 'METHOD_NOT_ALLOWED',
      status: 405,
      message: 'DELETE is not allowed here; use GET or HEAD',
    });
    expect((await request(app).get('/echo')).headers.allow).toBe('POST');
    expect((await request(app).head('/things/1')).status).toBe(200);
    expect((await request(app).post('/nothing')).status).toBe(404);
  });

  it('answers 400 in the envelope to malformed percent-encoding in a path parameter', async () => {
    const bad = await request(app).get('/things/%zz').expect(400);
    expect(bad.body).toMatchObject({ status: 400, code: 'INVALID_PATH' });
    await request(app).get('/things/%u0041').expect(400);
    expect((await request(app).get('/things/a%20b').expect(200)).body).toEqual({ id: 'a b' });
  });

  it('echoes a well-formed x-request-id and replaces a malformed one', async () => {
    const ok = await request(app).post('/echo').send({ name: 'a' }).set('x-request-id', 'abc-123');
    expect(ok.headers['x-request-id']).toBe('abc-123');
    const bad = await request(app)
      .post('/echo')
      .send({ name: 'a' })
      .set('x-request-id', 'bad id with spaces');
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
    expect(malformed.body.message).toBe('Request body is not valid JSON');
    const scalar = await request(app).post('/echo').set('content-type', 'application/json').send('null');
    expect(scalar.status).toBe(400);
    expect(scalar.body.message).toBe('Request body must be a JSON object or array');

    const big = await request(app)
      .post('/echo')
      .send({ name: 'x'.repeat(200) })
      .expect(413);
    expect(big.body.code).toBe('PAYLOAD_TOO_LARGE');
    expect(big.body.message).toBe('Request body is too large: this route takes at most 100 bytes');

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

describe('requests and responses of a listening service app', () => {
  /** The requests and responses whose prototype something changed while `send` ran. */
  async function prototypeChanges(send: () => Promise<void>): Promise<string[]> {
    const setPrototypeOf = Object.setPrototypeOf;
    const changed: string[] = [];
    const spy = jest
      .spyOn(Object, 'setPrototypeOf')
      .mockImplementation((target: object, proto: object | null) => {
        if (
          Object.getPrototypeOf(target) !== proto &&
          (target instanceof IncomingMessage || target instanceof ServerResponse)
        )
          changed.push(target.constructor.name);
        return setPrototypeOf(target, proto);
      });
    try {
      await send();
    } finally {
      spy.mockRestore();
    }
    return changed;
  }

  async function callBoth(url: string) {
    const read = await fetch(`${url}/things/7`);
    expect(await read.json()).toEqual({ id: '7' });
    const echo = await fetch(`${url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x' }),
    });
    expect(await echo.json()).toEqual({ name: 'x' });
  }

  it('are built with express prototypes by `listen`, so express re-prototypes no live object (decision 0083)', async () => {
    const server = await listen(app.listener, 0, '127.0.0.1');
    try {
      expect(await prototypeChanges(() => callBoth(server.url))).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('would otherwise be re-prototyped on every request (what the test above guards against)', async () => {
    const server = createServer(app);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const changed = await prototypeChanges(() =>
        callBoth(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
      );
      expect(changed).toEqual(expect.arrayContaining(['IncomingMessage', 'ServerResponse']));
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
