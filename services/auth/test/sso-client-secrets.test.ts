import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createLogger } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { tempDir } from '@platform/testkit';
import { AtRestCipher } from '../src/domain/at-rest-cipher';
import { openSsoCollections, SsoClients, type SsoProviderDoc } from '../src/sso/providers';
import { signInWith, startFakeIdp } from './fake-idp';
import { type AuthHarness, INTERNAL_SECRET, startAuth } from './helpers';
import { storeWithInsertGate } from './store-gate';

const SECRET = 'company-secret-for-the-platform-0123456789';
const CALLBACK = (slug: string) => `http://localhost:8080/account/sso/${slug}/callback`;

/**
 * An external identity provider's client secret is sealed in the store (AES-256-GCM under auth's at-rest secret,
 * as OIDC clients' secrets are), and signing in with the provider works as before (decision 0103).
 */
describe('single sign-on providers’ client secrets at rest', () => {
  const folder = tempDir('auth-sso-client-secrets-');
  const store = createEmbeddedStore({ dataDir: folder.dir, compactionIntervalMs: 0 });
  const env = { PASSWORD_SCRYPT_N: '1024', PASSWORD_SCRYPT_P: '1' };
  const logs: string[] = [];
  const logger = createLogger({ name: 'auth', level: 'trace', destination: { write: (l) => logs.push(l) } });
  const slugs = [
    'acme',
    'acme-wrong',
    'older-idp',
    'moved-idp',
    'kept-idp',
    'lost-idp',
    'repointed-idp',
    'unopened-idp',
    'moving-idp',
  ];
  let idp: Awaited<ReturnType<typeof startFakeIdp>>;
  let h: AuthHarness;
  beforeAll(async () => {
    idp = await startFakeIdp({
      clientId: 'platform',
      clientSecret: SECRET,
      redirectUris: slugs.map(CALLBACK),
    });
    h = await startAuth({ store, env, logger });
  });
  afterAll(async () => {
    await h.stop();
    await store.close();
    await idp.close();
    folder.remove();
  });

  const providers = () => store.collection<SsoProviderDoc>('sso_providers');
  const name = (slug: string, clientSecret?: string | null, providerName = 'Acme Corp') =>
    h.http
      .put(`/internal/sso-providers/${slug}`)
      .set('x-platform-internal-secret', INTERNAL_SECRET)
      .send({ name: providerName, issuer: idp.url, clientId: 'platform', clientSecret });
  const signedIn = (res: { status: number; headers: Record<string, unknown> }) =>
    res.status === 303 &&
    res.headers.location === '/account' &&
    (res.headers['set-cookie'] as string[]).some((c) => c.startsWith('access-token='));

  it('the store and its file hold no secret, nor any answer, page or log line; a person signs in with the provider', async () => {
    const created = await name('acme', SECRET);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ result: 'created', clientId: 'platform' });
    expect(created.text).not.toContain(SECRET);

    const doc = await providers().findOne({ _id: 'acme' });
    expect(doc!.clientSecret).toMatch(/^enc:v1:/);
    expect(JSON.stringify(doc)).not.toContain(SECRET);
    // nor does the collection's file (what a copy of the data folder hands out)
    expect(readFileSync(path.join(folder.dir, 'sso_providers.db'), 'utf8')).not.toContain(SECRET);

    const page = await h.http.get('/account/login');
    expect(page.text).toContain('Sign in with Acme Corp');
    expect(page.text).not.toContain(SECRET);
    expect(signedIn(await signInWith(h, 'acme', 'grace'))).toBe(true);
    expect(await h.service.context.collections.users.findOne({ email: 'grace@acme.example' })).not.toBeNull();

    // the provider checks the secret: a wrong one does not sign in
    expect((await name('acme-wrong', 'not-the-company-secret')).status).toBe(201);
    const refused = await signInWith(h, 'acme-wrong', 'grace');
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('did not complete the sign-in');

    // the same settings again change nothing (the stored secret is compared opened)
    const again = await name('acme', SECRET);
    expect(again.status).toBe(200);
    expect(again.body.result).toBe('exists');
    expect(await providers().findOne({ _id: 'acme' })).toEqual(doc);
    // the refusal was logged, with the provider's error, and neither secret
    expect(logs.join('')).toContain('external sign-in refused');
    expect(logs.join('')).not.toContain(SECRET);
    expect(logs.join('')).not.toContain('not-the-company-secret');
  });

  it('named again without a secret, the provider keeps the stored one; an explicit null removes it; the answer says whether one is stored', async () => {
    const created = await name('kept-idp', SECRET);
    const sealed = (await providers().findOne({ _id: 'kept-idp' }))!.clientSecret;

    // `pnpm platform sso add kept-idp ...` again to rename it, without --client-secret
    const renamed = await name('kept-idp', undefined, 'Acme Corporation');
    expect(renamed.status).toBe(200);
    // before: the secret was removed, and the provider refused the sign-in
    expect((await providers().findOne({ _id: 'kept-idp' }))!.clientSecret).toBe(sealed);
    expect(signedIn(await signInWith(h, 'kept-idp', 'ada'))).toBe(true);
    expect(created.body).toMatchObject({ result: 'created', hasClientSecret: true });
    expect(renamed.body).toMatchObject({
      result: 'updated',
      name: 'Acme Corporation',
      hasClientSecret: true,
    });
    const again = await name('kept-idp', undefined, 'Acme Corporation');
    expect(again.body).toMatchObject({ result: 'exists', hasClientSecret: true });

    const removed = await name('kept-idp', null, 'Acme Corporation');
    expect(removed.body).toMatchObject({ result: 'updated', hasClientSecret: false });
    expect((await providers().findOne({ _id: 'kept-idp' }))!.clientSecret).toBeNull();
    expect((await name('kept-idp', undefined, 'Acme Corporation')).body).toMatchObject({
      result: 'exists',
      hasClientSecret: false,
    });
    // a new provider named without a secret is a public client
    const bare = await name('bare-idp');
    expect(bare.body).toMatchObject({ result: 'created', hasClientSecret: false });
    expect((await providers().findOne({ _id: 'bare-idp' }))!.clientSecret).toBeNull();
    // an empty secret is bad input, not a removal
    expect((await name('kept-idp', '')).status).toBe(400);
  });

  it('named again for another issuer or client id without a secret, the stored one is not kept (it would be sent there): a 400', async () => {
    // another party's provider that would take the stored secret: here it knows it, so a sign-in through it shows
    // that it received it
    const other = await startFakeIdp({
      clientId: 'platform',
      clientSecret: SECRET,
      redirectUris: [CALLBACK('repointed-idp')],
    });
    try {
      const put = (body: Record<string, unknown>) =>
        h.http
          .put('/internal/sso-providers/repointed-idp')
          .set('x-platform-internal-secret', INTERNAL_SECRET)
          .send({ name: 'Acme Corp', issuer: idp.url, clientId: 'platform', ...body });
      expect((await put({ clientSecret: SECRET })).status).toBe(201);
      const before = await providers().findOne({ _id: 'repointed-idp' });
      for (const moved of [{ issuer: other.url }, { clientId: 'platform-2' }]) {
        const refused = await put(moved);
        // before: 200 `updated`, and the company's secret went to the other issuer's token endpoint at every sign-in
        expect([moved, refused.status]).toEqual([moved, 400]);
        expect(refused.body).toMatchObject({
          code: 'INVALID_BODY',
          message: expect.stringContaining('clientSecret'),
        });
        expect(await providers().findOne({ _id: 'repointed-idp' })).toEqual(before);
      }
      expect(signedIn(await signInWith(h, 'repointed-idp', 'ida'))).toBe(true);
      // said on purpose: its own secret, or none (a later write: the provider's configuration is discovered again)
      h.clock.advance(1000);
      expect((await put({ issuer: other.url, clientSecret: SECRET })).body).toMatchObject({
        result: 'updated',
        issuer: other.url,
        hasClientSecret: true,
      });
      expect((await h.http.get('/account/sso/repointed-idp')).headers.location).toMatch(`${other.url}/`);
      expect(signedIn(await signInWith(h, 'repointed-idp', 'ida'))).toBe(true);
      expect((await put({ issuer: other.url, clientSecret: null })).body).toMatchObject({
        result: 'updated',
        hasClientSecret: false,
      });
      // nothing stored to send: back at the first issuer without a secret given
      expect((await put({})).body).toMatchObject({
        result: 'updated',
        hasClientSecret: false,
      });
    } finally {
      await other.close();
    }
  });

  it('a secret an earlier version stored in plain text keeps working, and is sealed at the next start', async () => {
    const now = h.clock.now();
    await openSsoCollections(store).providers.insertOne({
      _id: 'older-idp',
      name: 'Older Acme',
      issuer: idp.url,
      clientId: 'platform',
      clientSecret: SECRET,
      orgSlug: null,
      createdAt: now,
      updatedAt: now,
    });
    expect(signedIn(await signInWith(h, 'older-idp', 'linus'))).toBe(true);

    // another instance starts on the same store (an upgrade rolling out): the secret is sealed in place
    const next = await startAuth({ store, env, logger });
    try {
      const doc = await providers().findOne({ _id: 'older-idp' });
      expect(doc!.clientSecret).toMatch(/^enc:v1:/);
      expect(JSON.stringify(doc)).not.toContain(SECRET);
      expect(doc!.updatedAt).toEqual(now);
      for (const instance of [h, next])
        expect(signedIn(await signInWith(instance, 'older-idp', 'linus'))).toBe(true);
      expect(logs.join('')).not.toContain(SECRET);
    } finally {
      await next.stop();
    }
  });

  it('a secret sealed under another at-rest secret is not used, and naming the provider again mends it', async () => {
    expect((await name('moved-idp', SECRET)).status).toBe(201);
    const elsewhere = new SsoClients(openSsoCollections(store), 'another-at-rest-secret-of-32-characters');
    const failure = await elsewhere.get('moved-idp').then(
      () => null,
      (err: Error) => err.message,
    );
    expect(failure).toContain('SSO provider moved-idp was sealed under another SIGNING_KEYS_ENCRYPTION_KEY');
    expect(failure).not.toContain(SECRET);
    const settings = {
      name: 'Acme Corp',
      issuer: idp.url,
      clientId: 'platform',
      clientSecret: SECRET,
      orgSlug: null,
    };
    expect((await elsewhere.save('moved-idp', settings, h.clock.now())).result).toBe('updated');
    expect((await elsewhere.get('moved-idp'))!.provider).not.toHaveProperty('clientSecret');
  });

  it('pointed at another issuer, its people are linked anew (by their verified email): a `sub` there is not the old one’s person', async () => {
    // the company moves to another identity provider, whose subjects are its own: its `ida` is someone else
    const other = await startFakeIdp({
      clientId: 'platform',
      clientSecret: SECRET,
      redirectUris: [CALLBACK('moving-idp')],
      emailDomain: 'other.example',
    });
    try {
      const point = (issuer: string) =>
        h.http
          .put('/internal/sso-providers/moving-idp')
          .set('x-platform-internal-secret', INTERNAL_SECRET)
          .send({ name: 'Acme Corp', issuer, clientId: 'platform', clientSecret: SECRET });
      const users = h.service.context.collections.users;
      expect((await point(idp.url)).status).toBe(201);
      expect(signedIn(await signInWith(h, 'moving-idp', 'ida'))).toBe(true);
      const ida = await users.findOne({ email: 'ida@acme.example' });
      h.clock.advance(1000); // a later write: the provider's configuration is discovered again
      expect((await point(other.url)).body).toMatchObject({ result: 'updated', issuer: other.url });
      expect((await h.http.get('/account/sso/moving-idp')).headers.location).toMatch(`${other.url}/`);
      expect(signedIn(await signInWith(h, 'moving-idp', 'ida'))).toBe(true);
      // before: signed in as ida@acme.example's account, by the link of the old issuer's `ida`
      const newcomer = await users.findOne({ email: 'ida@other.example' });
      expect(newcomer).not.toBeNull();
      expect(newcomer!._id).not.toBe(ida!._id);
      // named again for the same issuer, the links stay
      expect((await point(other.url)).body.result).toBe('exists');
      expect(signedIn(await signInWith(h, 'moving-idp', 'ida'))).toBe(true);
      expect(await users.find({ email: 'ida@other.example' })).toHaveLength(1);
    } finally {
      await other.close();
    }
  });

  it('named again without a secret when the stored one no longer opens (a start over): a 400 asking for it, not `exists`', async () => {
    const put = (clientSecret?: string) =>
      h.http
        .put('/internal/sso-providers/unopened-idp')
        .set('x-platform-internal-secret', INTERNAL_SECRET)
        .send({ name: 'Acme Corp', issuer: idp.url, clientId: 'platform', clientSecret });
    expect((await put(SECRET)).status).toBe(201);
    const lost = new AtRestCipher('the-secret-that-was-lost-0123456789', 'platform-auth-sso-client-secrets');
    await providers().updateOne({ _id: 'unopened-idp' }, { $set: { clientSecret: lost.seal(SECRET) } });
    const unreadable = await providers().findOne({ _id: 'unopened-idp' });
    // the runbook's "name it again", without --client-secret: before, 200 `exists` (the CLI: "client secret: stored
    // (kept the stored one)"), and every sign-in still failed
    const refused = await put();
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      code: 'INVALID_BODY',
      message: expect.stringContaining('cannot be opened'),
    });
    expect(await providers().findOne({ _id: 'unopened-idp' })).toEqual(unreadable);
    // given again, it mends
    expect((await put(SECRET)).body).toMatchObject({ result: 'updated', hasClientSecret: true });
    expect(signedIn(await signInWith(h, 'unopened-idp', 'joy'))).toBe(true);
  });

  it('a sign-in under way when the provider’s secret stops opening (a start over after a lost signing-keys.secret) answers a page, never a 500', async () => {
    expect((await name('lost-idp', SECRET)).status).toBe(201);
    const start = await h.http.get('/account/sso/lost-idp?next=/account');
    expect(start.status).toBe(303);
    const cookie = (start.headers['set-cookie'] as unknown as string[])
      .find((c) => c.startsWith('sso-state='))!
      .split(';')[0]!;
    const state = new URL(start.headers.location!).searchParams.get('state');
    // what the start over leaves: the secret sealed under the lost one, and an instance with nothing discovered yet
    await providers().updateOne(
      { _id: 'lost-idp' },
      {
        $set: {
          clientSecret: new AtRestCipher(
            'the-secret-that-was-lost-0123456789',
            'platform-auth-sso-client-secrets',
          ).seal(SECRET),
          updatedAt: new Date(h.clock.now().getTime() + 1000),
        },
      },
    );
    // before: 500
    const back = await h.http
      .get(`/account/sso/lost-idp/callback?code=x&state=${state}`)
      .set('cookie', cookie);
    expect(back.status).toBe(502);
    expect(back.text).toContain('cannot be reached right now');
    expect((await h.http.get('/account/sso/lost-idp')).status).toBe(502);
    expect(logs.join('')).toContain('the secret of SSO provider lost-idp was sealed under another');
  });
});

describe('an identity provider named by two operators at once', () => {
  const folder = tempDir('auth-sso-races-');
  const gated = storeWithInsertGate(createEmbeddedStore({ dataDir: folder.dir, compactionIntervalMs: 0 }));
  const AT_REST = 'the-at-rest-secret-of-this-test-0123456789';
  let h: AuthHarness;
  beforeAll(async () => {
    h = await startAuth({ store: gated.store, env: { SIGNING_KEYS_ENCRYPTION_KEY: AT_REST } });
  });
  afterAll(async () => {
    await h.stop();
    await gated.store.close();
    folder.remove();
  });

  const put = (body: Record<string, unknown>) =>
    h.http
      .put('/internal/sso-providers/raced-idp')
      .set('x-platform-internal-secret', INTERNAL_SECRET)
      .send({ name: 'Acme Corp', clientId: 'platform', ...body })
      .then((res) => res);
  const stored = () => gated.store.collection<SsoProviderDoc>('sso_providers').findOne({ _id: 'raced-idp' });
  const opened = (doc: SsoProviderDoc | null) =>
    new AtRestCipher(AT_REST, 'platform-auth-sso-client-secrets').open(doc!.clientSecret!);

  it("a secret kept for the stored issuer is never written beside another issuer's: the rename is checked again", async () => {
    const [ONE, TWO] = ['https://idp-one.example', 'https://idp-two.example'];
    expect((await put({ issuer: ONE, clientSecret: SECRET })).status).toBe(201);
    // a rename keeping the stored secret, checked against issuer ONE, about to write when the provider moves to TWO
    const held = gated.gate('sso_providers', (doc) => doc._id === 'raced-idp', [
      'updateOne',
      'findOneAndUpdate',
    ]);
    const renaming = put({ issuer: ONE, name: 'Acme' });
    await held.arrived;
    const moved = await put({ issuer: TWO, clientSecret: 'the-secret-at-idp-two' });
    expect(moved.body).toMatchObject({ result: 'updated', issuer: TWO, hasClientSecret: true });
    held.release();
    // before: 200, and the provider back at ONE with TWO's secret, sent to ONE's token endpoint at every sign-in
    const renamed = await renaming;
    expect(renamed.status).toBe(400);
    expect(renamed.body.message).toContain('clientSecret');
    const doc = await stored();
    expect(doc).toMatchObject({ issuer: TWO, name: 'Acme Corp' });
    expect(opened(doc)).toBe('the-secret-at-idp-two');
  });
});
