import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  describeWithNats,
  freePort,
  type NatsServerHandle,
  startNatsServer,
  tempDir,
  waitFor,
} from '@platform/testkit';
import { nkeys } from 'nats';
import { type Bus, createNatsBus } from '../src';

/**
 * How a service proves itself to NATS (decision 0095): a user and password or a token in NATS_URL, a
 * credentials file, a private certificate authority; and what it says, and does, when NATS refuses it.
 */
describeWithNats('the NATS bus with credentials', () => {
  const dir = tempDir('nats-credentials-');
  const servers: NatsServerHandle[] = [];
  const buses: Bus[] = [];

  /** a nats-server whose configuration file (in `dir`, rewritable) is `conf` */
  const serverWith = async (name: string, conf: string) => {
    const file = path.join(dir.dir, `${name}.conf`);
    writeFileSync(file, conf);
    const server = await startNatsServer({ file });
    servers.push(server);
    return { server, rewrite: (next: string) => writeFileSync(file, next) };
  };
  const hostOf = (server: NatsServerHandle) => `127.0.0.1:${server.port}`;
  /** a bus whose reports (what the service logs) are kept as `context: message` lines */
  const open = async (options: { url: string; credsFile?: string; tlsCaFile?: string }) => {
    const reports: string[] = [];
    const bus = await createNatsBus({
      ...options,
      name: 'credentials-test',
      onError: (err, context) => reports.push(`${context}: ${err instanceof Error ? err.message : err}`),
    });
    buses.push(bus);
    return { bus, reports };
  };
  /**
   * `open` on credentials the server takes, once connected. On a starved machine the first attempt can time out (5 s)
   * and the bus then connects in the background: not what these tests are about, so that one line is not kept.
   */
  const openConnected = async (options: { url: string; credsFile?: string; tlsCaFile?: string }) => {
    const opened = await open(options);
    await waitFor(() => opened.bus.ping().then(() => true), {
      timeoutMs: 15_000,
      what: 'the bus to connect',
    });
    const timedOut = opened.reports.findIndex((r) => r.includes(': TIMEOUT; retrying in the background'));
    if (timedOut >= 0) opened.reports.splice(timedOut, 1);
    return opened;
  };
  /**
   * `open` on credentials the server refuses, once the refusal is what its first attempt found. On a starved machine
   * that attempt can time out (5 s) before the refusal is read, and the bus says TIMEOUT: that bus is closed and
   * another opened, since what these tests check is what the bus says of a refusal.
   */
  const openRefused = (options: { url: string }) =>
    waitFor(
      async () => {
        const opened = await open(options);
        if (!opened.reports.some((r) => r.includes(': TIMEOUT; retrying in the background'))) return opened;
        buses.splice(buses.indexOf(opened.bus), 1);
        await opened.bus.close();
        return null;
      },
      { timeoutMs: 30_000, what: 'a first attempt to connect that NATS answered' },
    );
  const restart = async (server: NatsServerHandle) => {
    await server.stop();
    await server.start();
  };

  afterEach(async () => {
    await Promise.all(buses.splice(0).map((b) => b.close()));
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.dispose()));
    dir.remove();
  });

  describe('a user and password in NATS_URL', () => {
    // URL-encoded in NATS_URL; 12e5 would be a number to nats-server unquoted
    const password = '12e5 p@ss:w/rd%';
    let monitor: number;
    // with its monitoring port, which lists the connections it refused
    const users = (pass: string) =>
      `http: "127.0.0.1:${monitor}"\nauthorization { users = [ { user: "svc", password: ${JSON.stringify(pass)} } ] }\n`;
    const refusedConnections = async () => {
      const connz = (await (await fetch(`http://127.0.0.1:${monitor}/connz?state=closed`)).json()) as {
        connections?: Array<{ reason?: string }>;
      };
      return (connz.connections ?? []).filter((c) => c.reason === 'Authentication Failure').length;
    };
    let nats: Awaited<ReturnType<typeof serverWith>>;
    beforeAll(async () => {
      monitor = await freePort();
      nats = await serverWith('users', users(password));
    });
    afterEach(async () => {
      nats.rewrite(users(password));
      await restart(nats.server);
    });

    it("connects with them (nats.js alone drops a URL's credentials) and carries events", async () => {
      const { bus, reports } = await openConnected({
        url: `nats://svc:${encodeURIComponent(password)}@${hostOf(nats.server)}`,
      });
      const seen: unknown[] = [];
      bus.subscribe('llm.catalogue.updated', (payload) => {
        seen.push(payload);
      });
      await bus.ping();
      await bus.publish('llm.catalogue.updated', { version: 1, at: 'now' });
      await waitFor(() => seen.length === 1);
      expect(reports).toEqual([]);
    });

    it('a refused password: says NATS refused the credentials, never the password; serves degraded and connects once NATS takes it', async () => {
      const wrong = 'wrong-Secret-42';
      const { bus, reports } = await openRefused({ url: `nats://svc:${wrong}@${hostOf(nats.server)}` });
      expect(reports).toEqual([
        `connect to nats://svc:***@${hostOf(nats.server)}: NATS refused the credentials (Authorization Violation); retrying in the background: 'Authorization Violation'`,
      ]);
      // readiness names the reason; a durable publication fails at once (the gateway's outbox keeps the event)
      await expect(bus.ping()).rejects.toThrow(
        'NATS is not connected yet: NATS refused the credentials (Authorization Violation)',
      );
      await expect(bus.publishDurable('llm.catalogue.updated', { version: 1, at: 'now' })).rejects.toThrow(
        'not connected',
      );
      // the operator gives NATS that password: the bus connects by itself, no restart
      nats.rewrite(users(wrong));
      await restart(nats.server);
      await waitFor(() => bus.ping().then(() => true), { timeoutMs: 15_000, what: 'the bus to connect' });
      expect(reports.join('\n')).not.toContain(wrong);
    });

    it('credentials refused at a reconnection (changed on NATS first) do not end the connection', async () => {
      const { bus, reports } = await openConnected({
        url: `nats://svc:${encodeURIComponent(password)}@${hostOf(nats.server)}`,
      });
      nats.rewrite(users('the-new-password'));
      await restart(nats.server);
      await waitFor(() => reports.some((r) => r.includes('NATS refused the credentials')), {
        timeoutMs: 15_000,
        what: 'the refusal to be reported',
      });
      // nats.js gives up for good after the same refusal twice, unless told not to
      await waitFor(async () => (await refusedConnections()) >= 3, {
        timeoutMs: 15_000,
        what: 'three refused attempts to reconnect',
      });
      nats.rewrite(users(password));
      await restart(nats.server);
      await waitFor(() => bus.ping().then(() => true), { timeoutMs: 15_000, what: 'the bus to reconnect' });
      // said once for the whole time away, not at every attempt
      expect(reports.filter((r) => r.includes('refused'))).toEqual([
        `NATS at nats://svc:***@${hostOf(nats.server)}: NATS refused the credentials (AUTHORIZATION_VIOLATION); trying again`,
      ]);
      // its waits' deadlines (the first connection, two restarts and four waits) add up to 85 s: a slow step fails
      // naming what it waited for
    }, 90_000);
  });

  it('a token alone in NATS_URL', async () => {
    const { server } = await serverWith('token', 'authorization { token: "s3cret-token" }\n');
    const { reports } = await openConnected({ url: `nats://s3cret-token@${hostOf(server)}` });
    expect(reports).toEqual([]);
  });

  it('a credentials file (JWT and nkey seed), read again at each connection: a renewed file is used', async () => {
    // a server in operator mode, as nsc sets one up (JetStream needs its system account)
    const operator = nkeys.createOperator();
    const system = nkeys.createAccount();
    const account = nkeys.createAccount();
    const { server } = await serverWith(
      'operator',
      [
        `operator: ${jwt(operator, operator, 'operator', {})}`,
        `system_account: ${system.getPublicKey()}`,
        'resolver: MEMORY',
        'resolver_preload: {',
        `  ${system.getPublicKey()}: ${jwt(operator, system, 'account', { limits: UNLIMITED })}`,
        `  ${account.getPublicKey()}: ${jwt(operator, account, 'account', { limits: UNLIMITED })}`,
        '}',
        '',
      ].join('\n'),
    );
    const credsFile = path.join(dir.dir, 'service.creds');
    writeFileSync(credsFile, creds(account, {}));
    const { bus, reports } = await openConnected({ url: `nats://${hostOf(server)}`, credsFile });
    await bus.publish('llm.catalogue.updated', { version: 1, at: 'now' });
    await bus.ping();
    expect(reports).toEqual([]);

    // the Secret is renewed with a user that may not publish there; the next connection uses it
    writeFileSync(credsFile, creds(account, { pub: { deny: ['llm.catalogue.updated'] } }));
    await restart(server);
    await waitFor(() => bus.ping().then(() => true), { timeoutMs: 15_000, what: 'the bus to reconnect' });
    await bus.publish('llm.catalogue.updated', { version: 1, at: 'now' });
    await waitFor(() => reports.length > 0, { what: 'the refused publication to be reported' });
    expect(reports).toEqual([
      `NATS at nats://${hostOf(server)}: NATS refused this user the permission to publish "llm.catalogue.updated" (permissions violation)`,
    ]);
    // its waits' deadlines (the first connection, a restart and three waits) add up to 60 s, jest's own limit
  }, 90_000);

  const openssl = spawnSync('openssl', ['version']).status === 0;
  (openssl ? it : it.skip)(
    "TLS: NATS_TLS_CA_FILE is the authority the server's certificate is checked against",
    async () => {
      const file = (name: string) => path.join(dir.dir, name);
      const run = (...args: string[]) => {
        const result = spawnSync('openssl', args, { encoding: 'utf8' });
        if (result.status !== 0) throw new Error(`openssl ${args[0]}: ${result.stderr}`);
      };
      run(
        ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=test CA'],
        ...['-keyout', file('ca.key'), '-out', file('ca.pem')],
      );
      run(
        ...['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1'],
        ...['-keyout', file('server.key'), '-out', file('server.csr')],
      );
      // nats.js checks the certificate of a server reached by its address against the name localhost
      writeFileSync(file('san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
      run(
        ...['x509', '-req', '-in', file('server.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key')],
        ...['-CAcreateserial', '-days', '1', '-extfile', file('san.ext'), '-out', file('server.pem')],
      );
      const { server } = await serverWith(
        'tls',
        `tls { cert_file: "${file('server.pem')}", key_file: "${file('server.key')}" }\n`,
      );
      const trusted = await openConnected({ url: `tls://${hostOf(server)}`, tlsCaFile: file('ca.pem') });
      expect(trusted.reports).toEqual([]);
      // without the private authority, the certificate is not believed
      const untrusted = await open({ url: `tls://${hostOf(server)}` });
      await expect(untrusted.bus.ping()).rejects.toThrow('NATS is not connected yet');
      expect(untrusted.reports).toEqual([expect.stringContaining(`connect to tls://${hostOf(server)}:`)]);
    },
  );
});

const UNLIMITED = {
  subs: -1,
  conn: -1,
  leaf: -1,
  imports: -1,
  exports: -1,
  data: -1,
  payload: -1,
  wildcards: true,
};
type KeyPair = { getPublicKey(): string; getSeed(): Uint8Array; sign(data: Uint8Array): Uint8Array };

/** A NATS JWT (as nsc makes them) about `subject`, signed by `issuer`. */
function jwt(issuer: KeyPair, subject: KeyPair, type: string, nats: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const claims = {
    iat: Math.floor(Date.now() / 1000),
    iss: issuer.getPublicKey(),
    sub: subject.getPublicKey(),
    name: type,
    nats: { type, version: 2, ...nats },
  };
  const jti = createHash('sha256').update(JSON.stringify(claims)).digest('hex').toUpperCase();
  const signed = `${part({ typ: 'JWT', alg: 'ed25519-nkey' })}.${part({ jti, ...claims })}`;
  return `${signed}.${Buffer.from(issuer.sign(Buffer.from(signed))).toString('base64url')}`;
}

/** A credentials file of a new user of `account`, with `permissions` (nsc's `pub`/`sub`). */
function creds(account: KeyPair, permissions: Record<string, unknown>): string {
  const user = nkeys.createUser() as KeyPair;
  const token = jwt(account, user, 'user', {
    pub: {},
    sub: {},
    subs: -1,
    data: -1,
    payload: -1,
    ...permissions,
  });
  return [
    '-----BEGIN NATS USER JWT-----',
    token,
    '------END NATS USER JWT------',
    '',
    '-----BEGIN USER NKEY SEED-----',
    Buffer.from(user.getSeed()).toString(),
    '------END USER NKEY SEED------',
    '',
  ].join('\n');
}
