import { accountWithBot, client, dev } from './support/fixtures';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';

/** The web chat's server side: allowed origins, CORS on the client-token routes, the script and demo page. */
describe('legacy web chat: origins, CORS, script and demo page', () => {
  let app: LegacyTestApp;
  beforeAll(async () => {
    app = await startLegacyApp({ env: { LEGACY_FIRST_MODEL_WAIT_MS: '0' } });
  });
  afterAll(() => app.close());

  const SHOP = 'https://shop.example';
  const EVIL = 'https://evil.example';
  const welcome = { userId: 'visitor-1', platform: 'web', event: 'WELCOME' };

  it('allows no origin by default; the developer token sets allowedOrigins, normalised and deduplicated', async () => {
    const { bot } = await accountWithBot(app.http);
    expect((await app.http.get('/v1/bots').set(dev(bot)).expect(200)).body.allowedOrigins).toEqual([]);
    const res = await app.http
      .patch('/v1/bots')
      .set(dev(bot))
      .send({ allowedOrigins: ['https://Shop.Example', 'https://shop.example/', 'http://localhost:8080'] })
      .expect(200);
    expect(res.body).toMatchObject({
      id: bot.id,
      name: 'Travel helper',
      developerToken: bot.developerToken,
      allowedOrigins: ['https://shop.example', 'http://localhost:8080'],
    });
    expect((await app.http.get('/v1/bots').set(dev(bot)).expect(200)).body.allowedOrigins).toEqual([
      'https://shop.example',
      'http://localhost:8080',
    ]);
    const renamed = await app.http.patch('/v1/bots').set(dev(bot)).send({ name: 'Trains' }).expect(200);
    expect(renamed.body).toMatchObject({
      name: 'Trains',
      allowedOrigins: ['https://shop.example', 'http://localhost:8080'],
    });
  });

  it.each([
    ['a path', 'https://shop.example/page'],
    ['a wildcard', 'https://*.shop.example'],
    ['another scheme', 'ftp://shop.example'],
    ['no scheme', 'shop.example'],
    ['a query', 'https://shop.example?x=1'],
    ['credentials', 'https://user:pw@shop.example'],
  ])('refuses an allowed origin with %s, naming the field', async (_what, origin) => {
    const { bot } = await accountWithBot(app.http);
    const res = await app.http
      .patch('/v1/bots')
      .set(dev(bot))
      .send({ allowedOrigins: [origin] })
      .expect(400);
    expect(JSON.stringify(res.body.details)).toContain('allowedOrigins');
  });

  it('refuses unknown fields, a client token and no token when changing an assistant', async () => {
    const { bot } = await accountWithBot(app.http);
    await app.http.patch('/v1/bots').set(dev(bot)).send({ lang: 'fr' }).expect(400);
    await app.http
      .patch('/v1/bots')
      .set(client(bot))
      .send({ allowedOrigins: [SHOP] })
      .expect(401);
    await app.http
      .patch('/v1/bots')
      .send({ allowedOrigins: [SHOP] })
      .expect(401);
  });

  it('answers a preflight with CORS headers only for an origin some assistant allows', async () => {
    const { bot } = await accountWithBot(app.http);
    await app.http
      .patch('/v1/bots')
      .set(dev(bot))
      .send({ allowedOrigins: [SHOP] })
      .expect(200);
    const preflight = (origin: string, path = '/v1/Messages') =>
      app.http
        .options(path)
        .set('Origin', origin)
        .set('Access-Control-Request-Method', 'POST')
        .set('Access-Control-Request-Headers', 'authorization, content-type');
    const ok = await preflight(SHOP).expect(204);
    expect(ok.headers['access-control-allow-origin']).toBe(SHOP);
    expect(ok.headers['access-control-allow-methods']).toContain('POST');
    expect(ok.headers['access-control-allow-headers']).toContain('authorization');
    expect(ok.headers.vary).toContain('Origin');
    const config = await preflight(SHOP, '/v1/widget/config').expect(204);
    expect(config.headers['access-control-allow-origin']).toBe(SHOP);
    const refused = await preflight(EVIL);
    expect(refused.headers['access-control-allow-origin']).toBeUndefined();
    expect(refused.headers['access-control-allow-methods']).toBeUndefined();
  });

  it('answers Messages and the widget config to an allowed origin, and 403 without CORS headers to any other', async () => {
    const { bot } = await accountWithBot(app.http, { name: 'Trenes', lang: 'es' });
    const { bot: other } = await accountWithBot(app.http);
    await app.http
      .patch('/v1/bots')
      .set(dev(bot))
      .send({ allowedOrigins: [SHOP] })
      .expect(200);
    await app.http
      .patch('/v1/bots')
      .set(dev(other))
      .send({ allowedOrigins: [EVIL] })
      .expect(200);

    const allowed = await app.http
      .post('/v1/Messages')
      .set(client(bot))
      .set('Origin', SHOP)
      .send(welcome)
      .expect(200);
    expect(allowed.headers['access-control-allow-origin']).toBe(SHOP);
    expect(allowed.body.status).toEqual({ code: 200, errorType: 'success' });
    const config = await app.http.get('/v1/widget/config').set(client(bot)).set('Origin', SHOP).expect(200);
    expect(config.body).toEqual({ name: 'Trenes', lang: 'es', photo: null });
    expect(config.headers['access-control-allow-origin']).toBe(SHOP);

    // EVIL is allowed by another assistant (so its preflight passes), never by this one.
    const refused = await app.http
      .post('/v1/Messages')
      .set(client(bot))
      .set('Origin', EVIL)
      .send(welcome)
      .expect(403);
    expect(refused.headers['access-control-allow-origin']).toBeUndefined();
    expect(refused.body.status).toMatchObject({ code: 403, errorType: 'forbidden' });
    expect(refused.body.status.errorDetails).toContain('allowedOrigins');
    await app.http.get('/v1/widget/config').set(client(bot)).set('Origin', EVIL).expect(403);
    // Nothing was processed for the refused page: no conversation of its user.
    const conversations = await app.store.collection('legacy_conversations').find({ assistantId: bot.id });
    expect(conversations).toHaveLength(1);

    // A caller that is not a browser page (no Origin) and the same origin keep working as before.
    await app.http.post('/v1/Messages').set(client(bot)).send(welcome).expect(200);
    const host = 'http://example.test';
    await app.http
      .post('/v1/Messages')
      .set(client(bot))
      .set('Host', 'example.test')
      .set('Origin', host)
      .send(welcome)
      .expect(200);
    await app.http
      .post('/v1/Messages')
      .set(client(bot))
      .set('Origin', EVIL)
      .set('Sec-Fetch-Site', 'same-origin')
      .send(welcome)
      .expect(200);
  });

  it('serves the script as JavaScript with a long cache and an ETag, and 304 when unchanged', async () => {
    const res = await app.http.get('/v1/widget.js').expect(200);
    expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(res.headers['cache-control']).toContain('max-age=86400');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cross-origin-resource-policy']).toBe('cross-origin');
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.text).toContain('/v1/Messages');
    expect(Buffer.byteLength(res.text)).toBeLessThan(24 * 1024);
    // It parses as a script.
    expect(() => new Function(res.text)).not.toThrow();
    await app.http.get('/v1/widget.js').set('If-None-Match', res.headers.etag!).expect(304);
  });

  it('shows the demo page of a real assistant only, never indexed, with a strict policy allowing only its own script', async () => {
    const { bot } = await accountWithBot(app.http);
    const res = await app.http.get('/v1/widget-demo').query({ token: bot.clientToken }).expect(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['x-robots-tag']).toBe('noindex, nofollow');
    expect(res.text).toContain(`data-token="${bot.clientToken}"`);
    // a token no assistant has shows no chat on the platform's origin, and is not echoed
    const forged = await app.http
      .get('/v1/widget-demo')
      .query({ token: 'lct_x"><script>alert(1)</script>' })
      .expect(404);
    expect(forged.text).not.toContain('alert(1)');
    expect(forged.text).not.toContain('widget.js');
    expect(forged.text).toContain('No assistant has this client token');
    const csp = res.headers['content-security-policy']!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    const missing = await app.http.get('/v1/widget-demo').expect(400);
    expect(missing.text).toContain('?token=');
    // the page's own script tag names the script from the root: at `/v1/widget-demo/` too, it loads
    for (const page of ['/v1/widget-demo', '/v1/widget-demo/']) {
      const shown = await app.http.get(page).query({ token: bot.clientToken }).expect(200);
      expect(shown.text).toContain(`<script src="/v1/widget.js" data-token="${bot.clientToken}" defer>`);
    }
  });
});
