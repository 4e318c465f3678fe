import { createPublicKey, type KeyObject } from 'node:crypto';
import type { Clock, Logger } from '@platform/kernel';
import { JwksClient } from 'jwks-rsa';

export interface SigningKeysOptions {
  jwksUri: string;
  clock: Clock;
  logger: Logger;
  /** an unknown kid refetches at most once per this period */
  unknownKidCooldownMs: number;
  fetchTimeoutMs: number;
  /** the one algorithm tokens may use; keys of another family or curve are not kept */
  algorithm: string;
  /** called with the kids that disappeared, so verified-token caches can forget them */
  onKeysRemoved?: (kids: string[]) => void;
}

const MIN_RSA_BITS = 2048;
const EC_CURVE_OF: Record<string, string> = { ES256: 'prime256v1', ES384: 'secp384r1', ES512: 'secp521r1' };

/** Whether a public key may verify `algorithm`: RSA of 2048+ bits for RS/PS, the matching curve for ES. */
export function keyFitsAlgorithm(key: KeyObject, algorithm: string): boolean {
  if (algorithm.startsWith('RS') || algorithm.startsWith('PS')) {
    return key.asymmetricKeyType === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) >= MIN_RSA_BITS;
  }
  return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === EC_CURVE_OF[algorithm];
}

/**
 * The edge's own map of auth's public signing keys (kid → key of the configured algorithm). jwks-rsa fetches and converts the
 * JWKS; this class decides when: at start, on `gateway.jwks.updated`, periodically, on bus reconnect,
 * and on an unknown kid at most once per cooldown. Fetches are single-flight, and a refresh asked for
 * while one is running runs again after it, so an event is never answered by an older document. Keys
 * already held keep verifying while auth is unreachable.
 */
export class SigningKeys {
  private keys = new Map<string, KeyObject>();
  private readonly client: JwksClient;
  private inFlight: Promise<void> | null = null;
  private again = false;
  private lastUnknownKidFetch = Number.NEGATIVE_INFINITY;
  private loadedOnce = false;
  private lastError: unknown = null;

  constructor(private readonly options: SigningKeysOptions) {
    // No jwks-rsa cache or rate limit: this class is the cache and decides when to fetch.
    this.client = new JwksClient({
      jwksUri: options.jwksUri,
      cache: false,
      rateLimit: false,
      timeout: options.fetchTimeoutMs,
    });
  }

  get(kid: string): KeyObject | undefined {
    return this.keys.get(kid);
  }

  /** true once a JWKS document has been loaded (readiness) */
  get loaded(): boolean {
    return this.loadedOnce;
  }

  get kids(): string[] {
    return [...this.keys.keys()];
  }

  /** why the last fetch failed, for readiness */
  get error(): unknown {
    return this.lastError;
  }

  /** Fetches the JWKS now (joining a running fetch, then fetching again so the answer is fresh). */
  refresh(): Promise<void> {
    if (this.inFlight) {
      this.again = true;
      return this.inFlight;
    }
    this.inFlight = (async () => {
      try {
        do {
          this.again = false;
          await this.fetchOnce();
        } while (this.again);
      } finally {
        this.inFlight = null;
      }
    })();
    return this.inFlight;
  }

  /** Drops keys auth announced as deleted, before the refetch confirms it. */
  remove(kids: string[]): void {
    const removed = kids.filter((kid) => this.keys.delete(kid));
    if (removed.length > 0) this.options.onKeysRemoved?.(removed);
  }

  /**
   * For a token whose kid is not known: refetch unless one was done within the cooldown; concurrent
   * callers share one fetch. Resolves to the key, or undefined.
   */
  async resolveUnknown(kid: string): Promise<KeyObject | undefined> {
    const now = this.options.clock.now().getTime();
    if (this.inFlight) {
      await this.inFlight.catch(() => undefined);
      return this.keys.get(kid);
    }
    if (now - this.lastUnknownKidFetch < this.options.unknownKidCooldownMs) return undefined;
    this.lastUnknownKidFetch = now;
    await this.refresh().catch(() => undefined);
    return this.keys.get(kid);
  }

  private async fetchOnce(): Promise<void> {
    let signingKeys: Awaited<ReturnType<JwksClient['getSigningKeys']>>;
    try {
      signingKeys = await this.client.getSigningKeys();
    } catch (err) {
      this.lastError = err;
      this.options.logger.warn(
        { err, jwksUri: this.options.jwksUri },
        'JWKS fetch failed; keeping cached keys',
      );
      throw err;
    }
    const next = new Map<string, KeyObject>();
    for (const sk of signingKeys) {
      if (!sk.kid || (sk.alg && sk.alg !== this.options.algorithm)) continue;
      const key = createPublicKey(sk.getPublicKey());
      if (keyFitsAlgorithm(key, this.options.algorithm)) next.set(sk.kid, key);
    }
    const removed = [...this.keys.keys()].filter((kid) => !next.has(kid));
    this.keys = next;
    this.loadedOnce = true;
    this.lastError = null;
    if (removed.length > 0) this.options.onKeysRemoved?.(removed);
  }
}
