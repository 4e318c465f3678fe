import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createLogger } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { tempDir } from '@platform/testkit';
import { openSsoCollections, SsoClients, type SsoProviderDoc } from '../src/sso/providers';
import { signInWith, startFakeIdp } from './fake-idp';
import { type AuthHarness, INTERNAL_SECRET, startAuth } from './helpers';

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
  const slugs = ['acme', 'acme-wrong', 'older-idp', 'moved-idp'];
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
  const name = (slug: string, clientSecret: string) =>
    h.http
      .put(`/internal/sso-providers/${slug}`)
      .set('x-platform-internal-secret', INTERNAL_SECRET)
      .send({ name: 'Acme Corp', issuer: idp.url, clientId: 'platform', clientSecret });
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
    expect(await elsewhere.save('moved-idp', settings, h.clock.now())).toBe('updated');
    expect((await elsewhere.get('moved-idp'))!.provider).not.toHaveProperty('clientSecret');
  });
});
