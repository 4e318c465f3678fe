import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@platform/kernel';
import { SigningKeys } from '../src/auth/signing-keys';
import { makeSigningKey } from './support';

/**
 * auth's signing keys fetched over real HTTP from a stand-in whose answer each test chooses: whatever it answers, a
 * fetch that fails is logged and the keys already held keep verifying.
 */
describe("the edge's fetch of auth's signing keys", () => {
  const held = makeSigningKey('held-key');
  const elsewhere = makeSigningKey('key-from-elsewhere');
  let answer: (res: http.ServerResponse) => void = () => undefined;
  let auth: http.Server;
  let keys: SigningKeys;
  const logged: Array<{ msg: string; err?: { message?: string } }> = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  const jwks = (key: typeof held) => JSON.stringify({ keys: [key.jwk] });

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    auth = http.createServer((req, res) => {
      if (req.url === '/elsewhere/jwks') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(jwks(elsewhere));
      }
      answer(res);
    });
    await new Promise<void>((resolve) => auth.listen(0, '127.0.0.1', resolve));
    keys = new SigningKeys({
      jwksUri: `http://127.0.0.1:${(auth.address() as AddressInfo).port}/oidc/jwks`,
      clock: { now: () => new Date() },
      logger: createLogger({
        name: 'review-undici-signing-keys',
        destination: { write: (line: string) => logged.push(JSON.parse(line)) },
      }),
      unknownKidCooldownMs: 0,
      fetchTimeoutMs: 2_000,
      algorithm: 'RS256',
    });
  });
  beforeEach(async () => {
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(jwks(held));
    };
    await keys.refresh();
    expect(keys.kids).toEqual(['held-key']);
  });
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    auth.closeAllConnections();
    await new Promise((resolve) => auth.close(resolve));
  });

  /** the refresh's failure, after which the held key is still there and the failure was logged */
  const failedRefresh = async () => {
    logged.length = 0;
    const failure = await keys.refresh().then(
      () => undefined,
      (err: Error) => err.message,
    );
    expect(keys.kids).toEqual(['held-key']);
    expect(logged.map((line) => [line.msg, line.err?.message])).toEqual([
      ['JWKS fetch failed; keeping cached keys', failure],
    ]);
    expect(unhandled).toEqual([]);
    return failure;
  };

  it('does not follow a redirect: the keys come from the JWKS URL or not at all', async () => {
    answer = (res) => {
      res.writeHead(302, { location: '/elsewhere/jwks' });
      res.end();
    };
    expect(await failedRefresh()).toBe('auth answered the JWKS fetch with status 302');
  });

  it('fails clearly on an answer that is not JSON, or not a key set', async () => {
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>maintenance</html>');
    };
    expect(await failedRefresh()).toMatch(/JSON/);
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('null');
    };
    expect(await failedRefresh()).toBeDefined();
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: 'none' }));
    };
    expect(await failedRefresh()).toBeDefined();
  });

  it('fails on an answer with an error status', async () => {
    answer = (res) => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end('{}');
    };
    expect(await failedRefresh()).toBe('auth answered the JWKS fetch with status 503');
  });

  it('gives up on a document whose end never comes within the fetch timeout', async () => {
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"keys":[');
    };
    expect(await failedRefresh()).toBe('auth did not answer the JWKS fetch within 2000 ms');
  });
});
