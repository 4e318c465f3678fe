import { createHash, createPrivateKey, generateKeyPair, type KeyObject } from 'node:crypto';
import type { Collection } from '@platform/store';
import { EC_CURVES } from '../config';
import type { SigningKeyDoc } from '../data/collections';
import { AtRestCipher, isSealed } from './at-rest-cipher';

export interface KeyParameters {
  kty: 'RSA' | 'EC';
  alg: string;
  size: number;
}

export interface GeneratedKey {
  kid: string;
  publicJwk: Record<string, string>;
  /** PKCS#8 PEM */
  privatePem: string;
}

/**
 * A key pair generated off the event loop and encoded by the generation job itself (public key as a JWK,
 * private key as PKCS#8 PEM), so that no KeyObject of it is ever made. On Node 20 a generated KeyObject
 * shares a lock with its generation job, and the job's destructor takes that lock: a garbage collection
 * that collects the job while the key is being read (its details, an export) deadlocks the event loop
 * for good (docs/decisions/0087).
 */
export function generateEncodedKeyPair(
  type: 'rsa' | 'ec',
  options: { modulusLength: number; publicExponent: number } | { namedCurve: string },
): Promise<{ publicJwk: Record<string, string>; privatePem: string }> {
  const encodings = {
    publicKeyEncoding: { format: 'jwk' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  };
  return new Promise((resolve, reject) => {
    // @types/node has no overload for a JWK public key encoding
    generateKeyPair(
      type as 'rsa',
      { ...options, ...encodings } as never,
      ((err: Error | null, publicJwk: Record<string, string>, privatePem: string) =>
        err ? reject(err) : resolve({ publicJwk, privatePem })) as never,
    );
  });
}

/**
 * Makes a signing key pair off the event loop (2048-bit RSA takes 100 ms or more). The kid is the
 * RFC 7638 thumbprint of the public key, so it names the key itself.
 */
export async function generateSigningKey(params: KeyParameters): Promise<GeneratedKey> {
  const { publicJwk: jwk, privatePem } =
    params.kty === 'RSA'
      ? await generateEncodedKeyPair('rsa', { modulusLength: params.size, publicExponent: 0x10001 })
      : await generateEncodedKeyPair('ec', { namedCurve: EC_CURVES[params.alg]!.curve });
  const kid = thumbprint(jwk);
  const publicJwk: Record<string, string> =
    params.kty === 'RSA'
      ? { kty: 'RSA', kid, alg: params.alg, use: 'sig', n: jwk.n!, e: jwk.e! }
      : { kty: 'EC', kid, alg: params.alg, use: 'sig', crv: jwk.crv!, x: jwk.x!, y: jwk.y! };
  return { kid, publicJwk, privatePem };
}

/** RFC 7638 JWK thumbprint (sha256, base64url) over the required members in lexicographic order. */
export function thumbprint(jwk: Record<string, string>): string {
  const members =
    jwk.kty === 'RSA' ? { e: jwk.e, kty: 'RSA', n: jwk.n } : { crv: jwk.crv, kty: 'EC', x: jwk.x, y: jwk.y };
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url');
}

/**
 * Private keys at rest: plain PKCS#8 PEM, or AES-256-GCM under a key derived from
 * SIGNING_KEYS_ENCRYPTION_KEY when one is configured.
 */
export class PrivateKeyCodec {
  private readonly cipher: AtRestCipher | null;

  /** `source`: where the secret came from, as an operator would look for it (named when it opens no stored key) */
  constructor(
    secret: string | undefined,
    readonly source = 'SIGNING_KEYS_ENCRYPTION_KEY',
  ) {
    this.cipher = secret ? new AtRestCipher(secret, 'platform-auth-signing-keys') : null;
  }

  /** whether keys are encrypted at rest */
  get encrypts(): boolean {
    return this.cipher !== null;
  }

  seal(pem: string): string {
    return this.cipher ? this.cipher.seal(pem) : pem;
  }

  open(stored: string): KeyObject {
    if (!isSealed(stored)) return createPrivateKey(stored);
    if (!this.cipher)
      throw new Error('a signing key is encrypted but SIGNING_KEYS_ENCRYPTION_KEY is not set');
    return createPrivateKey(this.cipher.open(stored));
  }
}

/**
 * Stops a start whose secret opens none of the stored sealed private keys (another SIGNING_KEYS_ENCRYPTION_KEY, a
 * replaced signing-keys.secret), or does not open the key that signs (`signingKid`; a retired key another secret left
 * may open when it does not), before anything is written: every key check would fail, and a key or secret sealed
 * under it would be unreadable to the instances that hold the right one. The keys are never replaced for it: that
 * would sign everyone out.
 */
export async function checkSecretOpensStoredKeys(
  signingKeys: Collection<SigningKeyDoc>,
  codec: PrivateKeyCodec,
  signingKid: string | null = null,
): Promise<void> {
  const sealed = (await signingKeys.find({})).filter((doc) => isSealed(doc.privateKey));
  const signing = sealed.find((doc) => doc._id === signingKid);
  if (
    signing
      ? opens(codec, signing.privateKey)
      : sealed.length === 0 || sealed.some((doc) => opens(codec, doc.privateKey))
  )
    return;
  throw new Error(
    `the stored signing keys cannot be opened with the secret of ${codec.source}: restore the secret they were sealed with`,
  );
}

/** Whether any stored private key is sealed (by a secret that must then be kept: it is never made anew). */
export async function holdsSealedKeys(signingKeys: Collection<SigningKeyDoc>): Promise<boolean> {
  return (await signingKeys.find({})).some((doc) => isSealed(doc.privateKey));
}

function opens(codec: PrivateKeyCodec, stored: string): boolean {
  try {
    codec.open(stored);
    return true;
  } catch {
    return false;
  }
}

/** Private keys stored in plain text by an earlier version: encrypted in place (idempotent). */
export async function encryptPlainPrivateKeys(
  signingKeys: Collection<SigningKeyDoc>,
  codec: PrivateKeyCodec,
): Promise<number> {
  if (!codec.encrypts) return 0;
  // never sealed beside keys under another secret
  await checkSecretOpensStoredKeys(signingKeys, codec);
  let sealed = 0;
  for (const doc of await signingKeys.find({})) {
    if (isSealed(doc.privateKey)) continue;
    const done = await signingKeys.updateOne(
      { _id: doc._id, privateKey: doc.privateKey },
      { $set: { privateKey: codec.seal(doc.privateKey) } },
    );
    sealed += done.modified;
  }
  return sealed;
}
