import { statSync } from 'node:fs';
import path from 'node:path';
import { createEmbeddedStore } from '@platform/store';
import { tempDir } from '@platform/testkit';
import { encryptPlainPrivateKeys, generateSigningKey, PrivateKeyCodec } from '../src/domain/signing-keys';
import { startAuth } from './helpers';

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
});
