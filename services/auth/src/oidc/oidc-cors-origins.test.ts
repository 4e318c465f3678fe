import { createEmbeddedStore, type Store } from '@platform/store';
import { waitFor } from '@platform/testkit';
import { type OidcClientDoc, OidcClients, REGISTERED_ORIGINS_MS } from './clients';
import { redirectsTo } from './cors';

const AT_REST_SECRET = 'oidc-cors-origins-test-secret-0123456789abcdef';

/** `store`, counting the reads of every client (`find` on oidc_clients). */
function countingClientReads(store: Store): { store: Store; reads: () => number } {
  let reads = 0;
  const collection = (name: string) => {
    const inner = store.collection(name);
    if (name !== 'oidc_clients') return inner;
    return new Proxy(inner, {
      get(target, prop) {
        const value = Reflect.get(target, prop);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (prop === 'find') reads++;
          return value.apply(target, args);
        };
      },
    });
  };
  const counted = new Proxy(store, {
    get: (target, prop) => (prop === 'collection' ? collection : Reflect.get(target, prop)),
  });
  return { store: counted, reads: () => reads };
}

describe('the origins a CORS preflight is judged by', () => {
  const store = createEmbeddedStore();
  const counted = countingClientReads(store);
  const clients = new OidcClients(counted.store, AT_REST_SECRET);
  /** another auth instance on the same store */
  const elsewhere = new OidcClients(store, AT_REST_SECRET);
  const register = (on: OidcClients, clientId: string, origin: string) =>
    on.register({ clientId, redirectUris: [`${origin}/callback`] }, new Date());
  afterAll(() => store.close());

  it('a flood of preflights reads the clients once, not every client at every preflight', async () => {
    await register(clients, 'flood-app', 'https://flood.example');
    const before = counted.reads();
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        clients.someRedirectTo(i % 2 ? 'https://flood.example' : `https://attacker-${i}.example`),
      ),
    );
    expect(answers.filter(Boolean)).toHaveLength(100);
    expect(counted.reads() - before).toBe(1);
  });

  it('a client registered through this instance counts at once; through another, within REGISTERED_ORIGINS_MS', async () => {
    expect(await clients.someRedirectTo('https://here.example')).toBe(false);
    await register(clients, 'here-app', 'https://here.example');
    expect(await clients.someRedirectTo('https://here.example')).toBe(true);
    await clients.save('saved-app', new Date(), () => ({
      clientId: 'saved-app',
      redirectUris: ['https://saved.example/callback'],
    }));
    expect(await clients.someRedirectTo('https://saved.example')).toBe(true);

    expect(await clients.someRedirectTo('https://there.example')).toBe(false);
    await register(elsewhere, 'there-app', 'https://there.example');
    const seen = waitFor(() => clients.someRedirectTo('https://there.example'), {
      timeoutMs: REGISTERED_ORIGINS_MS + 15_000,
      what: 'a client registered elsewhere',
    });
    await expect(seen).resolves.toBe(true);
    // and a client removed from the store stops counting as soon
    await store.collection<OidcClientDoc>('oidc_clients').deleteOne({ _id: 'there-app' });
    const gone = waitFor(async () => !(await clients.someRedirectTo('https://there.example')), {
      timeoutMs: REGISTERED_ORIGINS_MS + 15_000,
      what: 'a removed client',
    });
    await expect(gone).resolves.toBe(true);
  }, 60_000);

  it('the opaque origin `null` is no page, whatever a client stored before redirect URIs were checked', async () => {
    const now = new Date();
    await store.collection<OidcClientDoc>('oidc_clients').insertOne({
      _id: 'native-legacy',
      metadata: {
        client_id: 'native-legacy',
        redirect_uris: ['com.example.app:/cb', 'file:///app/index.html', 'not a uri'],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      },
      firstParty: false,
      createdAt: now,
      updatedAt: now,
      revision: 'stored-before-validation',
    });
    await register(clients, 'after-legacy', 'https://after.example');
    expect(await clients.someRedirectTo('null')).toBe(false);
    expect(redirectsTo(['com.example.app:/cb', 'file:///app/index.html', 'data:text/html,x'], 'null')).toBe(
      false,
    );
    expect(redirectsTo(['https://app.example:443/cb', 'http://[::1]:8080/cb'], 'https://app.example')).toBe(
      true,
    );
    expect(redirectsTo(['http://[::1]:8080/cb'], 'http://[::1]:8080')).toBe(true);
  });
});
