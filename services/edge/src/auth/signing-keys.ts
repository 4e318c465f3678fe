import { createPublicKey, type KeyObject } from 'node:crypto';
import { type Clock, deadlineSignal, type Logger } from '@platform/kernel';
import { JwksClient, JwksError } from 'jwks-rsa';

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
/** kids remembered as gone (a kid is an RFC 7638 thumbprint: never reused, so remembering a few is enough) */
const GONE_KIDS_REMEMBERED = 1_000;
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
 *
 * A kid that left (announced deleted or revoked, or missing from a document) is remembered as gone: a token
 * bearing it is refused without a fetch, so the tokens of a removed or revoked key, which clients and an attacker
 * keep sending, never spend the unknown-kid refetch that a token of a brand-new key needs (decision 0102). A kid
 * announced deleted is never taken back from a document either (one fetched before the deletion may still list it).
 */
export class SigningKeys {
  private keys = new Map<string, KeyObject>();
  private readonly client: JwksClient;
  private inFlight: Promise<void> | null = null;
  private again = false;
  private lastUnknownKidFetch = Number.NEGATIVE_INFINITY;
  private unknownKidFetch: Promise<void> | null = null;
  private loadedOnce = false;
  private lastError: unknown = null;
  /** kid → how it left: announced on the bus (final), or missing from a fetched document (a later one may list it) */
  private readonly gone = new Map<string, 'announced' | 'missing'>();

  constructor(private readonly options: SigningKeysOptions) {
    // No jwks-rsa cache or rate limit: this class is the cache and decides when to fetch.
    this.client = new JwksClient({
      jwksUri: options.jwksUri,
      cache: false,
      rateLimit: false,
      fetcher: (uri) => this.fetchDocument(uri),
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

  /** Drops keys auth announced as deleted (or revoked), before the refetch confirms it, and for good. */
  remove(kids: string[]): void {
    for (const kid of kids) this.markGone(kid, 'announced');
    const removed = kids.filter((kid) => this.keys.delete(kid));
    if (removed.length > 0) this.options.onKeysRemoved?.(removed);
  }

  /**
   * For a token whose kid is not known: refused at once when the kid is gone; else refetch unless one was
   * done within the cooldown; concurrent callers share one fetch. Resolves to the key, or undefined.
   */
  async resolveUnknown(kid: string): Promise<KeyObject | undefined> {
    if (this.gone.has(kid)) return undefined;
    if (this.inFlight) {
      await this.inFlight.catch(() => undefined);
      const key = this.keys.get(kid);
      // that fetch may have started before the key was made: one of our own then, if the cooldown allows
      if (key || this.gone.has(kid)) return key;
    }
    const now = this.options.clock.now().getTime();
    // a last fetch after now: the clock stepped back, and the cooldown is over
    const sinceLast = now - this.lastUnknownKidFetch;
    if (sinceLast >= 0 && sinceLast < this.options.unknownKidCooldownMs) {
      // within the cooldown only the fetch another unknown kid started a moment ago is shared
      if (!this.unknownKidFetch) return undefined;
      await this.unknownKidFetch;
      return this.keys.get(kid);
    }
    this.lastUnknownKidFetch = now;
    this.unknownKidFetch = this.refresh()
      .catch(() => undefined)
      .finally(() => {
        this.unknownKidFetch = null;
      });
    await this.unknownKidFetch;
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
      if (this.gone.get(sk.kid) === 'announced') continue;
      const key = createPublicKey(sk.getPublicKey());
      if (keyFitsAlgorithm(key, this.options.algorithm)) next.set(sk.kid, key);
    }
    for (const kid of next.keys()) this.gone.delete(kid);
    const removed = [...this.keys.keys()].filter((kid) => !next.has(kid));
    for (const kid of removed) this.markGone(kid, 'missing');
    this.keys = next;
    this.loadedOnce = true;
    this.lastError = null;
    if (removed.length > 0) this.options.onKeysRemoved?.(removed);
  }

  /**
   * The JWKS document, read as jwks-rsa reads it but within a deadline rather than its socket timeout, which ran before
   * the edge read a document that had arrived in time while the edge's own process stalled past it.
   */
  private async fetchDocument(uri: string): Promise<{ keys: unknown }> {
    const deadline = deadlineSignal(
      this.options.fetchTimeoutMs,
      () => new Error(`auth did not answer the JWKS fetch within ${this.options.fetchTimeoutMs} ms`),
    );
    try {
      // a redirect is not followed, as jwks-rsa did not: the keys come from the configured URL or not at all
      const response = await fetch(uri, { signal: deadline.signal, redirect: 'manual' });
      const text = await response.text();
      if (!response.ok) throw new JwksError(`auth answered the JWKS fetch with status ${response.status}`);
      return JSON.parse(text);
    } finally {
      deadline.end();
    }
  }

  private markGone(kid: string, how: 'announced' | 'missing'): void {
    if (this.gone.get(kid) === 'announced') return;
    this.gone.delete(kid);
    this.gone.set(kid, how);
    if (this.gone.size > GONE_KIDS_REMEMBERED) this.gone.delete(this.gone.keys().next().value!);
  }
}
