import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createEmbeddedStore } from '@platform/store';
import { tempDir } from '@platform/testkit';
import { AtRestCipher } from '../src/domain/at-rest-cipher';
import { FIRST_PARTY_CLIENT_ID, type OidcClientDoc } from '../src/oidc/clients';
import { type AuthHarness, INTERNAL_SECRET, startAuth } from './helpers';
import { APP_REDIRECT, authorizeApp, registerApp, signUp, userinfo } from './oidc-app';
import { storeWithInsertGate } from './store-gate';

/**
 * A confidential client's secret is sealed in the store (AES-256-GCM under auth's at-rest secret, as private
 * signing keys are), and client_secret_post works as before (decision 0103).
 */
describe('OpenID Connect client secrets at rest', () => {
  const folder = tempDir('auth-oidc-client-secrets-');
  const store = createEmbeddedStore({ dataDir: folder.dir, compactionIntervalMs: 0 });
  const env = { PASSWORD_SCRYPT_N: '1024', PASSWORD_SCRYPT_P: '1' };
  let h: AuthHarness;
  beforeAll(async () => {
    h = await startAuth({ store, env });
  });
  afterAll(async () => {
    await h.stop();
    await store.close();
    folder.remove();
  });

  const stored = (clientId: string) =>
    store.collection<OidcClientDoc>('oidc_clients').findOne({ _id: clientId });

  it('the store holds no client secret; client_secret_post signs the application in, a wrong secret does not', async () => {
    const registered = await registerApp(h, 'vault-app', true);
    expect(registered).toMatchObject({ result: 'created', tokenEndpointAuthMethod: 'client_secret_post' });
    const secret = registered.clientSecret!;
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const doc = await stored('vault-app');
    expect(doc!.metadata.client_secret).toMatch(/^enc:v1:/);
    expect(JSON.stringify(doc)).not.toContain(secret);
    // nor does the collection's file (what a copy of the data folder hands out)
    expect(readFileSync(path.join(folder.dir, 'oidc_clients.db'), 'utf8')).not.toContain(secret);

    const person = await signUp(h);
    const { redeem } = await authorizeApp(h, person, 'vault-app', 'openid email');
    expect((await redeem('not-the-secret')).body).toMatchObject({ error: 'invalid_client' });
    expect((await redeem()).status).toBe(401);
    const tokens = await redeem(secret);
    expect(tokens.status).toBe(200);
    expect((await userinfo(h, tokens.body.access_token)).body).toMatchObject({ sub: person.userId });

    // the same registration again changes nothing (the secret is sealed afresh, and compared opened)
    const again = await registerApp(h, 'vault-app', true);
    expect(again.result).toBe('exists');
    expect(again.clientSecret).toBeUndefined();
  });

  it('registered again without `confidential` or `name`, a client keeps its secret and name; false and null drop them', async () => {
    const put = (clientId: string, body: Record<string, unknown>) =>
      h.http
        .put(`/internal/oidc-clients/${clientId}`)
        .set('x-platform-internal-secret', INTERNAL_SECRET)
        .send({ redirectUris: [APP_REDIRECT], ...body });
    const created = await put('kept-app', { name: 'Kept App', confidential: true });
    expect(created.body).toMatchObject({ result: 'created', tokenEndpointAuthMethod: 'client_secret_post' });
    const secret = created.body.clientSecret as string;

    // its redirect URIs changed, `confidential` and `name` left out (before: made public, its secret and name gone)
    const moved = await put('kept-app', { redirectUris: [APP_REDIRECT, 'https://app.example/cb'] });
    expect(moved.status).toBe(200);
    expect(moved.body).toEqual({
      result: 'updated',
      clientId: 'kept-app',
      name: 'Kept App',
      redirectUris: [APP_REDIRECT, 'https://app.example/cb'],
      postLogoutRedirectUris: [],
      tokenEndpointAuthMethod: 'client_secret_post',
    });
    const person = await signUp(h);
    expect((await (await authorizeApp(h, person, 'kept-app', 'openid')).redeem(secret)).status).toBe(200);
    expect((await put('kept-app', { confidential: true })).body).toMatchObject({
      result: 'updated',
      name: 'Kept App',
    });
    expect((await put('kept-app', {})).body.result).toBe('exists');

    // said on purpose: public (its secret dropped), the name cleared
    const made = await put('kept-app', { confidential: false, name: null });
    expect(made.body).toMatchObject({ result: 'updated', name: null, tokenEndpointAuthMethod: 'none' });
    expect(made.body.clientSecret).toBeUndefined();
    expect((await stored('kept-app'))!.metadata).not.toHaveProperty('client_secret');
    expect((await stored('kept-app'))!.metadata).not.toHaveProperty('client_name');
    expect((await put('kept-app', {})).body).toMatchObject({
      result: 'exists',
      tokenEndpointAuthMethod: 'none',
    });
    // confidential again: a new secret, shown this once
    const again = await put('kept-app', { confidential: true });
    expect(again.body).toMatchObject({ result: 'updated', tokenEndpointAuthMethod: 'client_secret_post' });
    expect(again.body.clientSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(again.body.clientSecret).not.toBe(secret);
    // one whose secret no longer opens (a start over), registered again without `confidential`: a new secret
    const doc = (await stored('kept-app'))!;
    const lost = new AtRestCipher('the-secret-that-was-lost-0123456789', 'platform-auth-oidc-client-secrets');
    await store
      .collection<OidcClientDoc>('oidc_clients')
      .updateOne(
        { _id: 'kept-app' },
        { $set: { metadata: { ...doc.metadata, client_secret: lost.seal('old') } } },
      );
    const mended = await put('kept-app', {});
    expect(mended.body).toMatchObject({ result: 'updated', tokenEndpointAuthMethod: 'client_secret_post' });
    expect(mended.body.clientSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);

    // a new client without either: public, no name
    expect((await put('bare-app', {})).body).toMatchObject({
      result: 'created',
      name: null,
      tokenEndpointAuthMethod: 'none',
    });
    expect((await put('bare-app', { name: null, confidential: false })).body.result).toBe('exists');
  });

  it('registered again without `postLogoutRedirectUris`, a client keeps its logout redirects; [] clears them', async () => {
    const LOGOUT = 'http://127.0.0.1:7/signed-out';
    const put = (body: Record<string, unknown>) =>
      h.http
        .put('/internal/oidc-clients/logout-app')
        .set('x-platform-internal-secret', INTERNAL_SECRET)
        .send({ redirectUris: [APP_REDIRECT], ...body });
    // the application's "signed out" page, as its logout asks for it
    const signOut = () =>
      h.http.get(
        `/oidc/session/end?${new URLSearchParams({ client_id: 'logout-app', post_logout_redirect_uri: LOGOUT })}`,
      );
    expect((await put({ postLogoutRedirectUris: [LOGOUT] })).body).toMatchObject({
      result: 'created',
      postLogoutRedirectUris: [LOGOUT],
    });
    expect((await signOut()).status).toBe(200);

    // its redirect URIs changed, the logout redirects left out (before: cleared, the application's logout refused)
    const moved = await put({ redirectUris: [APP_REDIRECT, 'https://app.example/cb'] });
    expect(moved.body).toMatchObject({ result: 'updated', postLogoutRedirectUris: [LOGOUT] });
    expect((await signOut()).status).toBe(200);
    expect((await put({ redirectUris: [APP_REDIRECT, 'https://app.example/cb'] })).body.result).toBe(
      'exists',
    );

    // said on purpose: none
    const cleared = await put({ postLogoutRedirectUris: [] });
    expect(cleared.body).toMatchObject({ result: 'updated', postLogoutRedirectUris: [] });
    expect((await stored('logout-app'))!.metadata.post_logout_redirect_uris).toEqual([]);
    expect((await signOut()).status).toBe(400);
    expect((await put({})).body).toMatchObject({ result: 'exists', postLogoutRedirectUris: [] });
  });

  it('a redirect URI that is not http or https (the provider would refuse every sign-in) is a 400, nothing stored', async () => {
    const put = (clientId: string, body: Record<string, unknown>) =>
      h.http
        .put(`/internal/oidc-clients/${clientId}`)
        .set('x-platform-internal-secret', INTERNAL_SECRET)
        .send({ redirectUris: [APP_REDIRECT], ...body });
    expect((await put('web-app', {})).status).toBe(201);
    for (const body of [
      { redirectUris: ['myapp:/callback'] },
      { redirectUris: [APP_REDIRECT, 'javascript:alert(1)'] },
      { postLogoutRedirectUris: ['data:text/html,bye'] },
    ]) {
      // before: 201 or 200, then every sign-in of the application a "Sign-in problem" page
      for (const clientId of ['web-app', 'native-app']) {
        const res = await put(clientId, body);
        expect([body, clientId, res.status]).toEqual([body, clientId, 400]);
        expect(res.body).toMatchObject({
          code: 'INVALID_BODY',
          message: expect.stringContaining('http(s) URL'),
        });
      }
    }
    expect(await stored('native-app')).toBeNull();
    expect((await stored('web-app'))!.metadata).toMatchObject({
      redirect_uris: [APP_REDIRECT],
      post_logout_redirect_uris: [],
    });
  });

  it('a leaked secret is rotated: a new one, answered once, and the old one refused from then on', async () => {
    const put = (clientId: string, body: Record<string, unknown>) =>
      h.http
        .put(`/internal/oidc-clients/${clientId}`)
        .set('x-platform-internal-secret', INTERNAL_SECRET)
        .send({ redirectUris: [APP_REDIRECT], ...body });
    const leaked = (await put('rotated-app', { name: 'Rotated', confidential: true })).body
      .clientSecret as string;
    const person = await signUp(h);
    // a code the application was redeeming as the secret leaked
    const { redeem } = await authorizeApp(h, person, 'rotated-app', 'openid');
    // another instance, which has read the client with its old secret: a made-up code is refused, the client is not
    const next = await startAuth({ store, env });
    try {
      const redeemAtNext = async (clientSecret: string) =>
        (
          await next.http.post('/oidc/token').type('form').send({
            grant_type: 'authorization_code',
            code: 'not-a-code',
            redirect_uri: APP_REDIRECT,
            client_id: 'rotated-app',
            client_secret: clientSecret,
          })
        ).body.error;
      expect(await redeemAtNext(leaked)).toBe('invalid_grant');

      // before: 400 (an unknown field), and the only way was --public then --confidential, the client public in between
      const rotated = await put('rotated-app', { rotateSecret: true });
      expect(rotated.status).toBe(200);
      expect(rotated.body).toMatchObject({
        result: 'updated',
        name: 'Rotated',
        tokenEndpointAuthMethod: 'client_secret_post',
        clientSecret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      });
      const renewed = rotated.body.clientSecret as string;
      expect(renewed).not.toBe(leaked);
      expect((await redeem(leaked)).body).toMatchObject({ error: 'invalid_client' });
      expect((await redeem(renewed)).status).toBe(200);
      expect(await redeemAtNext(leaked)).toBe('invalid_client');
      expect(await redeemAtNext(renewed)).toBe('invalid_grant');
    } finally {
      await next.stop();
    }
    // registered again without it: the new secret is kept, and never answered again
    const again = await put('rotated-app', {});
    expect(again.body).toMatchObject({ result: 'exists', tokenEndpointAuthMethod: 'client_secret_post' });
    expect(again.body.clientSecret).toBeUndefined();
    expect((await put('rotated-app', { confidential: true, rotateSecret: false })).body.result).toBe(
      'exists',
    );

    // only a stored confidential client has a secret to rotate: else a 400, nothing changed
    const before = await stored('rotated-app');
    expect((await put('public-app', {})).status).toBe(201);
    for (const [clientId, body, said] of [
      ['rotated-app', { confidential: false, rotateSecret: true }, 'a public client has no secret to rotate'],
      ['public-app', { rotateSecret: true }, 'a public client has no secret to rotate'],
      ['public-app', { confidential: true, rotateSecret: true }, 'a public client has no secret to rotate'],
      ['unknown-app', { confidential: true, rotateSecret: true }, 'no such client'],
    ] as const) {
      const res = await put(clientId, body);
      expect([clientId, body, res.status]).toEqual([clientId, body, 400]);
      expect(res.body).toMatchObject({
        code: 'INVALID_BODY',
        message: expect.stringContaining(`rotateSecret: ${said}`),
      });
    }
    expect(await stored('rotated-app')).toEqual(before);
    expect((await stored('public-app'))!.metadata.token_endpoint_auth_method).toBe('none');
    expect(await stored('unknown-app')).toBeNull();
  });

  it('registered again without `redirectUris`, a client keeps them (a secret rotated alone); a new one needs one, [] is a 400', async () => {
    const OTHER = 'https://app.example/cb';
    const put = (clientId: string, body: Record<string, unknown>) =>
      h.http
        .put(`/internal/oidc-clients/${clientId}`)
        .set('x-platform-internal-secret', INTERNAL_SECRET)
        .send(body);
    const created = await put('uris-app', { redirectUris: [APP_REDIRECT, OTHER], confidential: true });
    expect(created.status).toBe(201);
    const leaked = created.body.clientSecret as string;

    // before: 400 `redirectUris: Required`, so rotating needed every URI again, and a forgotten one was dropped
    const rotated = await put('uris-app', { rotateSecret: true });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({
      result: 'updated',
      redirectUris: [APP_REDIRECT, OTHER],
      clientSecret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    expect(rotated.body.clientSecret).not.toBe(leaked);
    const person = await signUp(h);
    expect(
      (await (await authorizeApp(h, person, 'uris-app', 'openid')).redeem(rotated.body.clientSecret)).status,
    ).toBe(200);
    expect((await put('uris-app', {})).body).toMatchObject({
      result: 'exists',
      redirectUris: [APP_REDIRECT, OTHER],
    });
    expect((await put('uris-app', { name: 'Uris' })).body).toMatchObject({
      result: 'updated',
      redirectUris: [APP_REDIRECT, OTHER],
    });

    // one whose secret no longer opens (a start over), mended as auth's log says, `--confidential` alone: a new secret
    const doc = (await stored('uris-app'))!;
    const lost = new AtRestCipher('the-secret-that-was-lost-0123456789', 'platform-auth-oidc-client-secrets');
    await store
      .collection<OidcClientDoc>('oidc_clients')
      .updateOne(
        { _id: 'uris-app' },
        { $set: { metadata: { ...doc.metadata, client_secret: lost.seal('old') } } },
      );
    const mended = await put('uris-app', { confidential: true });
    expect(mended.body).toMatchObject({
      result: 'updated',
      redirectUris: [APP_REDIRECT, OTHER],
      clientSecret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });

    // a new client has none to keep; [] leaves a client nobody can sign in to: a 400 naming the field, nothing changed
    const before = await stored('uris-app');
    for (const [clientId, body] of [
      ['uris-new-app', {}],
      ['uris-new-app', { confidential: true, name: 'New' }],
      ['uris-new-app', { redirectUris: [] }],
      ['uris-app', { redirectUris: [] }],
    ] as const) {
      const res = await put(clientId, body);
      expect([clientId, body, res.status]).toEqual([clientId, body, 400]);
      expect(res.body).toMatchObject({
        code: 'INVALID_BODY',
        message: expect.stringContaining('redirectUris: '),
        details: { issues: [expect.objectContaining({ field: 'redirectUris' })] },
      });
    }
    expect(await stored('uris-new-app')).toBeNull();
    expect(await stored('uris-app')).toEqual(before);
  });

  it('a plain-http redirect URI is a 400 naming the field unless its host is loopback (RFC 9700 2.1, RFC 8252 7.3)', async () => {
    const put = (clientId: string, body: Record<string, unknown>) =>
      h.http
        .put(`/internal/oidc-clients/${clientId}`)
        .set('x-platform-internal-secret', INTERNAL_SECRET)
        .send({ redirectUris: [APP_REDIRECT], ...body });
    const loopback = [
      'http://127.0.0.1:7/cb',
      'http://localhost:3000/cb',
      'http://[::1]:8080/cb',
      'http://LOCALHOST/cb',
    ];
    expect(
      (await put('plain-app', { redirectUris: loopback, postLogoutRedirectUris: loopback })).status,
    ).toBe(201);
    for (const [body, said] of [
      // before: 201; the code (and a public client's tokens with it) crossed the network in clear text
      [{ redirectUris: ['http://app.example/cb'] }, 'redirectUris.0: must be https'],
      [{ redirectUris: [APP_REDIRECT, 'http://10.0.0.5/cb'] }, 'redirectUris.1: must be https'],
      [{ redirectUris: ['http://localhost.evil.example/cb'] }, 'redirectUris.0: must be https'],
      [{ redirectUris: ['http://127.0.0.1.evil.example/cb'] }, 'redirectUris.0: must be https'],
      [{ postLogoutRedirectUris: ['http://app.example/bye'] }, 'postLogoutRedirectUris.0: must be https'],
    ] as const) {
      for (const clientId of ['plain-app', 'plain-new-app']) {
        const res = await put(clientId, body);
        expect([body, clientId, res.status]).toEqual([body, clientId, 400]);
        expect(res.body).toMatchObject({ code: 'INVALID_BODY', message: expect.stringContaining(said) });
        expect(res.body.details.issues[0].field).toBe(said.slice(0, said.indexOf(':')));
      }
    }
    expect(await stored('plain-new-app')).toBeNull();
    expect((await stored('plain-app'))!.metadata).toMatchObject({
      redirect_uris: loopback,
      post_logout_redirect_uris: loopback,
    });
  });

  it('a client stored with a plain-http redirect URI before the https rule keeps signing in, and keeps it when registered again', async () => {
    const OLD = 'http://app.example/cb';
    const now = h.clock.now();
    await store.collection<OidcClientDoc>('oidc_clients').insertOne({
      _id: 'pre-rule-app',
      metadata: {
        client_id: 'pre-rule-app',
        redirect_uris: [OLD],
        post_logout_redirect_uris: ['http://app.example/bye'],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        scope: 'openid email profile offline_access',
      },
      firstParty: false,
      createdAt: now,
      updatedAt: now,
    });
    const signIn = () =>
      h.http.get(
        `/oidc/auth?${new URLSearchParams({
          client_id: 'pre-rule-app',
          redirect_uri: OLD,
          response_type: 'code',
          scope: 'openid',
          code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
          code_challenge_method: 'S256',
        })}`,
      );
    expect((await signIn()).headers.location).toMatch(/^\/oidc\/interaction\//);
    const put = (body: Record<string, unknown>) =>
      h.http
        .put('/internal/oidc-clients/pre-rule-app')
        .set('x-platform-internal-secret', INTERNAL_SECRET)
        .send(body);
    // left out, or named again as stored: kept (a secret rotated or a name changed in an incident is not refused)
    expect((await put({ name: 'Pre-rule' })).body).toMatchObject({
      result: 'updated',
      redirectUris: [OLD],
      postLogoutRedirectUris: ['http://app.example/bye'],
    });
    expect((await put({ redirectUris: [OLD, 'https://app.example/cb'] })).body).toMatchObject({
      result: 'updated',
      redirectUris: [OLD, 'https://app.example/cb'],
    });
    expect((await signIn()).headers.location).toMatch(/^\/oidc\/interaction\//);
    // a plain-http URI it does not have yet follows the rule
    const added = await put({ redirectUris: [OLD, 'http://app.example/cb2'] });
    expect(added.status).toBe(400);
    expect(added.body.message).toContain('redirectUris.1: must be https');
    // one dropped is gone: named again later, it is a new one
    expect((await put({ redirectUris: ['https://app.example/cb'] })).status).toBe(200);
    expect((await put({ redirectUris: [OLD] })).status).toBe(400);
    expect((await stored('pre-rule-app'))!.metadata.redirect_uris).toEqual(['https://app.example/cb']);
  });

  it('a redirect URI with user information, a fragment or a * in its host is a 400 naming the field, nothing stored', async () => {
    const put = (clientId: string, body: Record<string, unknown>) =>
      h.http
        .put(`/internal/oidc-clients/${clientId}`)
        .set('x-platform-internal-secret', INTERNAL_SECRET)
        .send({ redirectUris: [APP_REDIRECT], ...body });
    expect((await put('strict-app', {})).status).toBe(201);
    for (const [body, said] of [
      // before: 201; a reviewer reads `app.example`, the browser goes to evil.example
      [
        { redirectUris: ['https://app.example@evil.example/cb'] },
        'redirectUris.0: must not have user information',
      ],
      [
        { redirectUris: [APP_REDIRECT, 'https://u:p@app.example/cb'] },
        'redirectUris.1: must not have user information',
      ],
      [{ redirectUris: ['https://app.example/cb#done'] }, 'redirectUris.0: must not have a fragment'],
      // before: 201, and every sign-in refused: the provider compares strings, `*` matches no host
      [{ redirectUris: ['https://*.app.example/cb'] }, 'redirectUris.0: must not have a * in its host'],
      [{ redirectUris: ['https://%2A.app.example/cb'] }, 'redirectUris.0: must not have a * in its host'],
      [
        { postLogoutRedirectUris: ['https://user@app.example/bye'] },
        'postLogoutRedirectUris.0: must not have user',
      ],
      [
        { postLogoutRedirectUris: ['https://*.app.example/bye'] },
        'postLogoutRedirectUris.0: must not have a *',
      ],
    ] as const) {
      for (const clientId of ['strict-app', 'strict-new-app']) {
        const res = await put(clientId, body);
        expect([body, clientId, res.status]).toEqual([body, clientId, 400]);
        expect(res.body).toMatchObject({ code: 'INVALID_BODY', message: expect.stringContaining(said) });
      }
    }
    expect(await stored('strict-new-app')).toBeNull();
    expect((await stored('strict-app'))!.metadata).toMatchObject({
      redirect_uris: [APP_REDIRECT],
      post_logout_redirect_uris: [],
    });
  });

  it('an internationalized host is stored as browsers send it (punycode), so its sign-in and logout match', async () => {
    const put = () =>
      h.http
        .put('/internal/oidc-clients/idn-app')
        .set('x-platform-internal-secret', INTERNAL_SECRET)
        .send({
          redirectUris: ['https://bücher.example/cb'],
          postLogoutRedirectUris: ['https://bücher.example'],
        });
    const created = await put();
    expect(created.body).toMatchObject({
      result: 'created',
      redirectUris: ['https://xn--bcher-kva.example/cb'],
      postLogoutRedirectUris: ['https://xn--bcher-kva.example'],
    });
    expect((await stored('idn-app'))!.metadata).toMatchObject({
      redirect_uris: ['https://xn--bcher-kva.example/cb'],
      post_logout_redirect_uris: ['https://xn--bcher-kva.example'],
    });
    expect((await put()).body.result).toBe('exists');
    // its host written percent-encoded: the same host
    const encoded = await h.http
      .put('/internal/oidc-clients/idn-app')
      .set('x-platform-internal-secret', INTERNAL_SECRET)
      .send({ redirectUris: ['https://b%C3%BCcher.example/cb'] });
    expect(encoded.body).toMatchObject({
      result: 'exists',
      redirectUris: ['https://xn--bcher-kva.example/cb'],
    });

    // the provider compares a sign-in's redirect_uri with the stored ones as strings (before: 400 "redirect_uri did
    // not match", the Unicode form stored); the application behind that host sends what its browsers send
    const query = new URLSearchParams({
      client_id: 'idn-app',
      redirect_uri: 'https://xn--bcher-kva.example/cb',
      response_type: 'code',
      scope: 'openid',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    });
    const started = await h.http.get(`/oidc/auth?${query}`);
    expect([started.status, started.headers.location]).toEqual([
      303,
      expect.stringMatching(/^\/oidc\/interaction\//),
    ]);
    const signOut = await h.http.get(
      `/oidc/session/end?${new URLSearchParams({ client_id: 'idn-app', post_logout_redirect_uri: 'https://xn--bcher-kva.example' })}`,
    );
    expect(signOut.status).toBe(200);
  });

  it('a misspelt field is a 400 naming it, nothing stored: left out, it would keep what is stored unseen', async () => {
    const put = (body: Record<string, unknown>) =>
      h.http
        .put('/internal/oidc-clients/typo-app')
        .set('x-platform-internal-secret', INTERNAL_SECRET)
        .send({ redirectUris: [APP_REDIRECT], ...body });
    for (const body of [{ confidental: true }, { post_logout_redirect_uris: ['https://app.example/bye'] }]) {
      const res = await put(body);
      // before: 201, a public client without logout redirects, as if the field had been left out
      expect([body, res.status]).toEqual([body, 400]);
      expect(res.body).toMatchObject({
        code: 'INVALID_BODY',
        message: expect.stringContaining(Object.keys(body)[0]!),
      });
    }
    expect(await stored('typo-app')).toBeNull();
  });

  it('the platform’s own pages’ client (`platform-web`) cannot be registered over: a 400, the client as it was', async () => {
    const before = await stored(FIRST_PARTY_CLIENT_ID);
    // before: 200 `updated`, the pages' own sign-in refused (their redirect URI gone) until auth started again, and
    // the application first-party: no consent, its tokens minting API keys as the person's own sessions do
    const res = await h.http
      .put(`/internal/oidc-clients/${FIRST_PARTY_CLIENT_ID}`)
      .set('x-platform-internal-secret', INTERNAL_SECRET)
      .send({ redirectUris: ['https://app.example/cb'] });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ status: 400, message: expect.stringContaining('reserved') });
    expect(await stored(FIRST_PARTY_CLIENT_ID)).toEqual(before);
  });

  it('a secret an earlier version stored in plain text keeps working, and is sealed at the next start', async () => {
    const plain = 'a-secret-an-earlier-version-stored-as-it-was';
    const now = h.clock.now();
    await store.collection<OidcClientDoc>('oidc_clients').insertOne({
      _id: 'older-app',
      metadata: {
        client_id: 'older-app',
        client_secret: plain,
        redirect_uris: [APP_REDIRECT],
        post_logout_redirect_uris: [],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
        scope: 'openid email profile offline_access',
      },
      firstParty: false,
      createdAt: now,
      updatedAt: now,
    });
    const person = await signUp(h);
    expect((await (await authorizeApp(h, person, 'older-app', 'openid')).redeem(plain)).status).toBe(200);

    // another instance starts on the same store (an upgrade rolling out): the secret is sealed in place
    const next = await startAuth({ store, env });
    try {
      const doc = await stored('older-app');
      expect(doc!.metadata.client_secret).toMatch(/^enc:v1:/);
      expect(JSON.stringify(doc)).not.toContain(plain);
      for (const instance of [h, next]) {
        const code = await authorizeApp(instance, person, 'older-app', 'openid');
        expect((await code.redeem(plain)).status).toBe(200);
      }
    } finally {
      await next.stop();
    }
  });

  it('a secret sealed under a lost at-rest secret: the app is refused as unknown (never 500), registering it again makes a new one', async () => {
    // what a start over after losing signing-keys.secret leaves (docs/operations.md)
    const now = h.clock.now();
    await store.collection<OidcClientDoc>('oidc_clients').insertOne({
      _id: 'orphaned-app',
      metadata: {
        client_id: 'orphaned-app',
        client_name: 'orphaned-app',
        client_secret: new AtRestCipher(
          'the-secret-that-was-lost-0123456789',
          'platform-auth-oidc-client-secrets',
        ).seal('its-old-secret'),
        redirect_uris: [APP_REDIRECT],
        post_logout_redirect_uris: [],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
        scope: 'openid email profile offline_access',
      },
      firstParty: false,
      createdAt: now,
      updatedAt: now,
    });
    // before: 500 server_error at both, and 500 at the registration below
    const authorize = await h.http.get(
      `/oidc/auth?client_id=orphaned-app&response_type=code&scope=openid&redirect_uri=${encodeURIComponent(APP_REDIRECT)}`,
    );
    expect(authorize.status).toBe(400);
    expect(authorize.text).toContain('client is invalid');
    const token = await h.http.post('/oidc/token').type('form').send({
      grant_type: 'authorization_code',
      code: 'x',
      client_id: 'orphaned-app',
      client_secret: 'its-old-secret',
    });
    expect(token.status).toBe(401);
    expect(token.body).toMatchObject({ error: 'invalid_client' });

    const again = await registerApp(h, 'orphaned-app', true);
    expect(again).toMatchObject({ result: 'updated', tokenEndpointAuthMethod: 'client_secret_post' });
    expect(again.clientSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const person = await signUp(h);
    const { redeem } = await authorizeApp(h, person, 'orphaned-app', 'openid');
    expect((await redeem(again.clientSecret)).status).toBe(200);
    // and it is sealed under this instance's secret: the same registration again is `exists`
    expect((await registerApp(h, 'orphaned-app', true)).result).toBe('exists');
  });

  it('a sign-in under way when the application’s secret stops opening (a start over) answers a page to start again, never a 500', async () => {
    await registerApp(h, 'midway-app', true);
    const query = new URLSearchParams({
      client_id: 'midway-app',
      redirect_uri: APP_REDIRECT,
      response_type: 'code',
      scope: 'openid',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    });
    const started = await h.http.get(`/oidc/auth?${query}`);
    expect(started.headers.location).toMatch(/^\/oidc\/interaction\//);
    const cookies = (started.headers['set-cookie'] as unknown as string[]).map((c) => c.split(';')[0]!);
    // what the start over leaves: the secret sealed under the lost at-rest secret
    const doc = (await stored('midway-app'))!;
    const lost = new AtRestCipher('the-secret-that-was-lost-0123456789', 'platform-auth-oidc-client-secrets');
    await store
      .collection<OidcClientDoc>('oidc_clients')
      .updateOne(
        { _id: 'midway-app' },
        { $set: { metadata: { ...doc.metadata, client_secret: lost.seal('old') } } },
      );
    // before: 500
    const page = await h.http.get(started.headers.location!).set('cookie', cookies.join('; '));
    expect(page.status).toBe(400);
    expect(page.text).toContain('sign in again');
  });
});

describe('OpenID Connect clients registered by two operators at once', () => {
  const folder = tempDir('auth-oidc-client-races-');
  const gated = storeWithInsertGate(createEmbeddedStore({ dataDir: folder.dir, compactionIntervalMs: 0 }));
  const env = { PASSWORD_SCRYPT_N: '1024', PASSWORD_SCRYPT_P: '1' };
  let h: AuthHarness;
  beforeAll(async () => {
    h = await startAuth({ store: gated.store, env });
  });
  afterAll(async () => {
    await h.stop();
    await gated.store.close();
    folder.remove();
  });

  const put = (clientId: string, body: Record<string, unknown>) =>
    h.http
      .put(`/internal/oidc-clients/${clientId}`)
      .set('x-platform-internal-secret', INTERNAL_SECRET)
      .send(body)
      .then((res) => res);
  const stored = (clientId: string) =>
    gated.store.collection<OidcClientDoc>('oidc_clients').findOne({ _id: clientId });
  /** `first` has read the client and is about to write it when `second` runs to its end */
  async function interleaved(
    clientId: string,
    first: Record<string, unknown>,
    second: Record<string, unknown>,
  ) {
    const held = gated.gate('oidc_clients', (doc) => doc._id === clientId, ['insertOne', 'findOneAndUpdate']);
    const firstDone = put(clientId, first);
    await held.arrived;
    const secondDone = await put(clientId, second);
    held.release();
    return { first: await firstDone, second: secondDone };
  }

  it('each keeps what the other changed: neither a name nor a redirect URI is lost', async () => {
    expect((await put('race-app', { redirectUris: [APP_REDIRECT] })).status).toBe(201);
    const { first, second } = await interleaved(
      'race-app',
      { name: 'Race App' },
      { redirectUris: [APP_REDIRECT, 'https://app.example/cb'] },
    );
    expect([first.status, second.status]).toEqual([200, 200]);
    // before: the name's write, computed from the client as it was, put the old redirect URIs back
    expect(first.body).toMatchObject({
      result: 'updated',
      name: 'Race App',
      redirectUris: [APP_REDIRECT, 'https://app.example/cb'],
    });
    expect((await stored('race-app'))!.metadata).toMatchObject({
      client_name: 'Race App',
      redirect_uris: [APP_REDIRECT, 'https://app.example/cb'],
    });
  });

  it('a secret answered to one of them is the one stored: a change made at once does not make the client public', async () => {
    expect((await put('race-secret-app', { redirectUris: [APP_REDIRECT] })).status).toBe(201);
    const { first, second } = await interleaved(
      'race-secret-app',
      { name: 'Renamed' },
      { confidential: true },
    );
    const secret = second.body.clientSecret as string;
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // before: the rename, computed from the public client, wrote it public again: the secret just answered opened nothing
    expect(first.body).toMatchObject({ name: 'Renamed', tokenEndpointAuthMethod: 'client_secret_post' });
    expect(first.body.clientSecret).toBeUndefined();
    const person = await signUp(h);
    expect((await (await authorizeApp(h, person, 'race-secret-app', 'openid')).redeem(secret)).status).toBe(
      200,
    );
  });

  it('a client created by both at once is created once, with one secret that works', async () => {
    const body = { redirectUris: [APP_REDIRECT], confidential: true };
    const { first, second } = await interleaved('race-new-app', body, body);
    expect(second.body).toMatchObject({ result: 'created', clientSecret: expect.any(String) });
    // before: both 201 `created`, each with its own secret, and the first's write threw the second's away
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ result: 'exists', tokenEndpointAuthMethod: 'client_secret_post' });
    expect(first.body.clientSecret).toBeUndefined();
    const person = await signUp(h);
    const { redeem } = await authorizeApp(h, person, 'race-new-app', 'openid');
    expect((await redeem(second.body.clientSecret)).status).toBe(200);
  });
});
