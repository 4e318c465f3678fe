import express from 'express';
import request from 'supertest';
import { openApiHandler } from './openapi-serve';

function appTrusting(trust: string | boolean) {
  const app = express();
  app.set('trust proxy', trust);
  let builds = 0;
  app.get(
    '/openapi.json',
    openApiHandler((url) => {
      builds++;
      return { openapi: '3.1.0', info: { title: 't', version: '1' }, servers: [{ url }], paths: {} };
    }),
  );
  return { app, builds: () => builds };
}

describe('GET /openapi.json server URL', () => {
  it('names the root a trusted proxy forwarded: scheme, host and stripped prefix', async () => {
    const { app } = appTrusting('loopback');
    const res = await request(app)
      .get('/openapi.json')
      .set('x-forwarded-proto', 'https, http')
      .set('x-forwarded-host', 'api.example.com, 127.0.0.1:8080')
      .set('x-forwarded-prefix', '/llm/');
    expect(res.body.servers).toEqual([{ url: 'https://api.example.com/llm' }]);
    expect(res.headers.vary).toContain('X-Forwarded-Prefix');
  });

  it('ignores forwarded headers from a peer it does not trust', async () => {
    const { app } = appTrusting(false);
    const res = await request(app)
      .get('/openapi.json')
      .set('host', 'svc.internal:8081')
      .set('x-forwarded-proto', 'https')
      .set('x-forwarded-host', 'evil.example')
      .set('x-forwarded-prefix', '/llm');
    expect(res.body.servers).toEqual([{ url: 'http://svc.internal:8081' }]);
  });

  it('refuses a host or prefix that is not a plain URL part', async () => {
    const { app } = appTrusting('loopback');
    const badPrefix = await request(app)
      .get('/openapi.json')
      .set('x-forwarded-host', 'api.example.com')
      .set('x-forwarded-prefix', '/a"><script>');
    expect(badPrefix.body.servers).toEqual([{ url: 'http://api.example.com' }]);
    const badHost = await request(app)
      .get('/openapi.json')
      .set('x-forwarded-host', 'evil.example/path?x')
      .set('x-forwarded-prefix', '/legacy');
    expect(badHost.body.servers).toEqual([{ url: '/legacy' }]);
  });

  it('builds the document once', async () => {
    const { app, builds } = appTrusting('loopback');
    await request(app).get('/openapi.json').set('x-forwarded-host', 'a.example');
    const second = await request(app).get('/openapi.json').set('x-forwarded-host', 'b.example');
    expect(second.body.servers).toEqual([{ url: 'http://b.example' }]);
    expect(builds()).toBe(1);
  });
});
