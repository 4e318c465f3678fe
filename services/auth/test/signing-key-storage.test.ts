import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInProcessBus } from '@platform/bus';
import { loadConfig, ManualClock, silentLogger } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { freePort, tempDir } from '@platform/testkit';
import { authConfigSchema } from '../src/config';
import type { RotationDoc, SigningKeyDoc } from '../src/data/collections';
import { encryptPlainPrivateKeys, generateSigningKey, PrivateKeyCodec } from '../src/domain/signing-keys';
import { createAuthServiceForTests } from '../src/testing';
import { INTERNAL_SECRET, startAuth } from './helpers';

const modeOf = (file: string) => statSync(file).mode & 0o777;

/** Issue 14 item 10: the signing private key is never stored readable by others, nor in plain text. */
describe('signing keys at rest on the embedded store', () => {
  it('encrypts private keys with a generated secret kept in DATA_DIR (0600), and keeps data files 0600', async () => {
    const data = tempDir('auth-keys-');
    const storeDir = path.join(data.dir, 'auth');
    const store = createEmbeddedStore({ dataDir: storeDir, compactionIntervalMs: 0 });
    const h = await startAuth({ store, env: { DATA_DIR: data.dir } });
    try {
      const stored = await h.service.context.collections.signingKeys.find({});
      expect(stored.length).toBeGreaterThan(0);
      for (const key of stored) expect(key.privateKey).toMatch(/^enc:v1:/);
      expect(modeOf(path.join(data.dir, 'signing-keys.secret'))).toBe(0o600);
      expect(modeOf(path.join(storeDir, 'signing_keys.db'))).toBe(0o600);
      expect(modeOf(storeDir)).toBe(0o700);
      // Tokens still verify: the instance reads its own encrypted keys.
      expect((await h.http.post('/v2/login/anonymous')).status).toBe(200);
    } finally {
      await h.stop();
      await store.close();
    }

    // A restart on the same data opens the same keys with the same secret.
    const again = createEmbeddedStore({ dataDir: storeDir, compactionIntervalMs: 0 });
    const h2 = await startAuth({ store: again, env: { DATA_DIR: data.dir } });
    try {
      expect((await h2.http.post('/v2/login/anonymous')).status).toBe(200);
    } finally {
      await h2.stop();
      await again.close();
      data.remove();
    }
  });

  it.each([
    ['empty', ''],
    ['cut short', 'abcde'],
  ])(
    'a signing-keys.secret left %s (a crash, a full disk) stops auth naming the file and the fix, and is kept',
    async (_, text) => {
      const data = tempDir('auth-keys-');
      const file = path.join(data.dir, 'signing-keys.secret');
      writeFileSync(file, text);
      const store = createEmbeddedStore({ dataDir: path.join(data.dir, 'auth'), compactionIntervalMs: 0 });
      try {
        await expect(startAuth({ store, env: { DATA_DIR: data.dir } })).rejects.toThrow(
          `${file} does not hold a signing-keys secret (at least 32 characters): restore it from a backup of this data folder, or set SIGNING_KEYS_ENCRYPTION_KEY to the secret this data was sealed with`,
        );
        expect(readFileSync(file, 'utf8')).toBe(text);
        expect(await store.collection('signing_keys').count({})).toBe(0);
      } finally {
        await store.close();
        data.remove();
      }
    },
  );

  it('a signing-keys.secret replaced by another secret stops the start at once, saying so, and writes nothing', async () => {
    const data = tempDir('auth-keys-');
    const storeDir = path.join(data.dir, 'auth');
    const file = path.join(data.dir, 'signing-keys.secret');
    const first = createEmbeddedStore({ dataDir: storeDir, compactionIntervalMs: 0 });
    const h = await startAuth({ store: first, env: { DATA_DIR: data.dir } });
    await h.stop();
    await first.close();
    // well-formed, but not the secret the keys were sealed with
    writeFileSync(file, 'z'.repeat(43));
    const store = createEmbeddedStore({ dataDir: storeDir, compactionIntervalMs: 0 });
    try {
      const before = await storedKeys(store);
      await expect(startAuth({ store, env: { DATA_DIR: data.dir } })).rejects.toThrow(
        `the stored signing keys cannot be opened with the secret of ${file}: restore the secret they were sealed with`,
      );
      expect(await storedKeys(store)).toEqual(before);
      expect(readFileSync(file, 'utf8')).toBe('z'.repeat(43));
    } finally {
      await store.close();
      data.remove();
    }
  });

  it('a deleted signing-keys.secret is not made anew beside the keys it sealed: the start stops naming it, a restore starts', async () => {
    const data = tempDir('auth-keys-');
    const storeDir = path.join(data.dir, 'auth');
    const file = path.join(data.dir, 'signing-keys.secret');
    const first = createEmbeddedStore({ dataDir: storeDir, compactionIntervalMs: 0 });
    const h = await startAuth({ store: first, env: { DATA_DIR: data.dir } });
    await h.stop();
    await first.close();
    const kept = readFileSync(file, 'utf8');
    rmSync(file);
    const store = createEmbeddedStore({ dataDir: storeDir, compactionIntervalMs: 0 });
    try {
      const before = await storedKeys(store);
      await expect(startAuth({ store, env: { DATA_DIR: data.dir } })).rejects.toThrow(
        `${file} is missing, and the stored signing keys were sealed with the signing-keys secret it held: restore it from a backup of this data folder, or set SIGNING_KEYS_ENCRYPTION_KEY to the secret they were sealed with`,
      );
      // before: a new secret was written there, then refused
      expect(existsSync(file)).toBe(false);
      expect(await storedKeys(store)).toEqual(before);
      // the file restored as it was: auth starts with the same keys
      writeFileSync(file, kept, { mode: 0o600 });
      const restored = await startAuth({ store, env: { DATA_DIR: data.dir } });
      try {
        expect((await restored.http.post('/v2/login/anonymous')).status).toBe(200);
        expect((await storedKeys(store)).keys.map((k) => k._id)).toEqual(before.keys.map((k) => k._id));
      } finally {
        await restored.stop();
      }
    } finally {
      await store.close();
      data.remove();
    }
  });

  it('two instances with different secrets starting at once on an empty store: one seals the first key, the other refuses', async () => {
    const data = tempDir('auth-keys-');
    const store = createEmbeddedStore({ dataDir: path.join(data.dir, 'auth'), compactionIntervalMs: 0 });
    // each keeps its own secret: another DATA_DIR
    const dirs = [path.join(data.dir, 'a'), path.join(data.dir, 'b')];
    const starts = await Promise.allSettled(dirs.map((dir) => startAuth({ store, env: { DATA_DIR: dir } })));
    try {
      const started = starts.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
      expect(started).toHaveLength(1);
      const loser = starts.findIndex((s) => s.status === 'rejected');
      expect((starts[loser] as PromiseRejectedResult).reason.message).toBe(
        `the stored signing keys cannot be opened with the secret of ${path.join(dirs[loser]!, 'signing-keys.secret')}: restore the secret they were sealed with`,
      );
      const { keys } = await storedKeys(store);
      expect(keys).toHaveLength(1);
      expect((await started[0]!.http.post('/v2/login/anonymous')).status).toBe(200);
    } finally {
      for (const s of starts) if (s.status === 'fulfilled') await s.value.stop();
      await store.close();
      data.remove();
    }
  });

  it('encrypts keys an earlier version stored in plain text', async () => {
    const store = createEmbeddedStore();
    const keys = store.collection<{ _id: string; privateKey: string }>('signing_keys');
    const generated = await generateSigningKey({ kty: 'EC', alg: 'ES256', size: 256 });
    await keys.insertOne({ _id: generated.kid, privateKey: generated.privatePem });
    const codec = new PrivateKeyCodec('x'.repeat(40));
    expect(await encryptPlainPrivateKeys(keys as never, codec)).toBe(1);
    const doc = (await keys.findOne({ _id: generated.kid }))!;
    expect(doc.privateKey).toMatch(/^enc:v1:/);
    expect(codec.open(doc.privateKey).asymmetricKeyType).toBe('ec');
    expect(await encryptPlainPrivateKeys(keys as never, codec)).toBe(0);
    await store.close();
  });

  it('does not seal keys in plain text beside keys sealed under another secret', async () => {
    const store = createEmbeddedStore();
    const keys = store.collection<{ _id: string; privateKey: string }>('signing_keys');
    const [sealedKey, plainKey] = await Promise.all([
      generateSigningKey({ kty: 'EC', alg: 'ES256', size: 256 }),
      generateSigningKey({ kty: 'EC', alg: 'ES256', size: 256 }),
    ]);
    await keys.insertOne({
      _id: sealedKey.kid,
      privateKey: new PrivateKeyCodec('r'.repeat(40)).seal(sealedKey.privatePem),
    });
    await keys.insertOne({ _id: plainKey.kid, privateKey: plainKey.privatePem });
    await expect(encryptPlainPrivateKeys(keys as never, new PrivateKeyCodec('w'.repeat(40)))).rejects.toThrow(
      'the stored signing keys cannot be opened with the secret of SIGNING_KEYS_ENCRYPTION_KEY',
    );
    expect((await keys.findOne({ _id: plainKey.kid }))!.privateKey).toBe(plainKey.privatePem);
    await store.close();
  });
});

/** what auth stores of its signing keys: the keys and the rotation document */
const storedKeys = async (store: Store) => ({
  keys: await store.collection('signing_keys').find({}),
  rotation: await store.collection('signing_rotation').find({}),
});

/** The embedded engine answering as MongoDB: what auth decides from `store.engine` (no MongoDB server runs here). */
const asMongoDb = (store: Store): Store => ({ ...store, engine: 'mongodb' });

describe('signing keys at rest on MongoDB', () => {
  it('auth does not start without SIGNING_KEYS_ENCRYPTION_KEY: one line naming it and how to make one', async () => {
    const closed = await freePort();
    const child = spawn(process.execPath, ['--require', 'tsx/cjs', 'services/auth/src/main.ts'], {
      cwd: path.resolve(__dirname, '../../..'),
      env: {
        PATH: process.env.PATH,
        PLATFORM_INTERNAL_SECRET: INTERNAL_SECRET,
        MONGO_URL: `mongodb://127.0.0.1:${closed}/auth?serverSelectionTimeoutMS=200`,
        PORT: '0',
        ADMIN_PORT: '0',
        ADMIN_HOST: '127.0.0.1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    // an auth that starts waits for its database instead of exiting: stop it at the deadline
    const deadline = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    clearTimeout(deadline);
    expect(code).toBe(1);
    // (oidc-provider warns of a Node.js older than it likes, on some machines)
    const lines = stderr
      .trim()
      .split('\n')
      .filter((line) => !line.startsWith('oidc-provider WARNING'));
    expect(lines).toEqual([
      expect.stringMatching(
        /^config error: SIGNING_KEYS_ENCRYPTION_KEY: required with MONGO_URL .*openssl rand -base64 48/,
      ),
    ]);
  }, 30_000);

  it('a MongoDB store handed to the service without the key is refused too, before anything is stored', async () => {
    const store = createEmbeddedStore();
    const config = loadConfig(authConfigSchema, {
      PLATFORM_INTERNAL_SECRET: INTERNAL_SECRET,
      LOG_LEVEL: 'silent',
    });
    await expect(
      createAuthServiceForTests({
        config,
        clock: new ManualClock('2025-03-01T00:00:00Z'),
        logger: silentLogger(),
        store: asMongoDb(store),
        bus: createInProcessBus(),
      }),
    ).rejects.toThrow(/^SIGNING_KEYS_ENCRYPTION_KEY: required with MONGO_URL/);
    expect(await store.collection('signing_keys').count({})).toBe(0);
    await store.close();
  });

  it('once the key is set, keys stored in plain text by a deployment without it are encrypted at start', async () => {
    const store = createEmbeddedStore();
    const plain = await generateSigningKey({ kty: 'RSA', alg: 'RS256', size: 2048 });
    await store
      .collection<{ _id: string; privateKey: string }>('signing_keys')
      .insertOne({ _id: plain.kid, privateKey: plain.privatePem });
    const h = await startAuth({
      store: asMongoDb(store),
      env: { SIGNING_KEYS_ENCRYPTION_KEY: 'a-key-set-after-an-upgrade-0123456789' },
    });
    try {
      const stored = await h.service.context.collections.signingKeys.find({});
      expect(stored.map((k) => k._id)).toContain(plain.kid);
      for (const key of stored) expect(key.privateKey).toMatch(/^enc:v1:/);
    } finally {
      await h.stop();
      await store.close();
    }
  });

  it('an instance started with another SIGNING_KEYS_ENCRYPTION_KEY stops at once and leaves the others signing', async () => {
    const store = asMongoDb(createEmbeddedStore());
    const right = await startAuth({
      store,
      env: { SIGNING_KEYS_ENCRYPTION_KEY: 'the-secret-every-instance-shares-0123' },
    });
    try {
      const before = await storedKeys(store);
      await expect(
        startAuth({ store, env: { SIGNING_KEYS_ENCRYPTION_KEY: 'a-mistyped-secret-of-one-instance-0123' } }),
      ).rejects.toThrow(
        /^the stored signing keys cannot be opened with the secret of SIGNING_KEYS_ENCRYPTION_KEY: restore the secret they were sealed with$/,
      );
      expect(await storedKeys(store)).toEqual(before);
      expect((await right.http.post('/v2/login/anonymous')).status).toBe(200);
    } finally {
      await right.stop();
      await store.close();
    }
  });

  it('the secret must open the key that signs: a retired key sealed under it does not let a wrong instance rotate', async () => {
    const clock = new ManualClock('2025-03-01T00:00:00Z');
    const store = asMongoDb(createEmbeddedStore());
    const wrong = 'a-mistyped-secret-of-one-instance-0123';
    const right = await startAuth({
      store,
      clock,
      env: { SIGNING_KEYS_ENCRYPTION_KEY: 'the-secret-every-instance-shares-0123' },
    });
    await right.stop();
    // what an instance started with the wrong secret before this check could leave: a key sealed under it, retired
    const left = await generateSigningKey({ kty: 'RSA', alg: 'RS256', size: 2048 });
    await store.collection<SigningKeyDoc>('signing_keys').insertOne({
      _id: left.kid,
      kty: 'RSA',
      alg: 'RS256',
      size: 2048,
      publicJwk: left.publicJwk,
      privateKey: new PrivateKeyCodec(wrong).seal(left.privatePem),
      createdAt: clock.now(),
      activatesAt: clock.now(),
      retiredAt: clock.now(),
      removeAfter: new Date(clock.now().getTime() + 400 * 86_400_000),
    });
    // a rotation is due: the wrong instance would seal the next key under its secret, which no other could open
    clock.advance(31 * 86_400_000);
    // a client secret an upgrade left in plain text: sealed at start, but never under a wrong secret
    const clients = store.collection<{ _id: string; metadata: { client_secret: string } }>('oidc_clients');
    await clients.insertOne({ _id: 'plain-client', metadata: { client_secret: 'left-in-plain-text' } });
    try {
      const before = await storedKeys(store);
      await expect(startAuth({ store, clock, env: { SIGNING_KEYS_ENCRYPTION_KEY: wrong } })).rejects.toThrow(
        /^the stored signing keys cannot be opened with the secret of SIGNING_KEYS_ENCRYPTION_KEY: restore the secret they were sealed with$/,
      );
      expect(await storedKeys(store)).toEqual(before);
      expect((await clients.findOne({ _id: 'plain-client' }))?.metadata.client_secret).toBe(
        'left-in-plain-text',
      );
    } finally {
      await store.close();
    }
  });

  it('instances starting at once: one with another secret stops, saying so, as soon as the first key is committed', async () => {
    const store = asMongoDb(createEmbeddedStore());
    const right = new PrivateKeyCodec('the-secret-every-instance-shares-0123');
    // another instance, starting too, holds the lease on the very first key
    const clock = new ManualClock('2025-03-01T00:00:00Z');
    const rotation = store.collection<RotationDoc>('signing_rotation');
    await rotation.insertOne({
      _id: 'rotation',
      version: 1,
      activeKid: null,
      pendingKid: null,
      pendingActivatesAt: null,
      nextRotationAt: null,
      lease: { owner: 'another-instance', until: new Date(clock.now().getTime() + 60_000) },
      rotations: 0,
    });
    const wrong = startAuth({
      store,
      clock,
      env: { SIGNING_KEYS_ENCRYPTION_KEY: 'a-mistyped-secret-of-one-instance-0123' },
    });
    const failed = wrong.then(
      () => null,
      (err: Error) => err.message,
    );
    // it commits its key, sealed under the secret every other instance shares
    const key = await generateSigningKey({ kty: 'RSA', alg: 'RS256', size: 2048 });
    await store.collection<SigningKeyDoc>('signing_keys').insertOne({
      _id: key.kid,
      kty: 'RSA',
      alg: 'RS256',
      size: 2048,
      publicJwk: key.publicJwk,
      privateKey: right.seal(key.privatePem),
      createdAt: clock.now(),
      activatesAt: clock.now(),
      retiredAt: null,
      removeAfter: null,
    });
    await rotation.updateOne(
      { _id: 'rotation' },
      { $set: { version: 2, activeKid: key.kid, lease: null, rotations: 1 } },
    );
    try {
      // before: "no signing key became available", 20 s later
      expect(await failed).toBe(
        'the stored signing keys cannot be opened with the secret of SIGNING_KEYS_ENCRYPTION_KEY: restore the secret they were sealed with',
      );
      expect((await storedKeys(store)).keys.map((k) => k._id)).toEqual([key.kid]);
    } finally {
      await store.close();
    }
  }, 10_000);
});
