import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import proxyAddr from 'proxy-addr';
import { z } from 'zod';

/** Whether the peer at `address` (hop `i`, 0 = the socket) is a proxy whose X-Forwarded-* is believed. */
export type TrustProxy = (address: string, hop: number) => boolean;

const TRUST_NONE: TrustProxy = () => false;

/**
 * Compiles a TRUST_PROXY value, express style: `false` (or empty) trusts no one; otherwise a
 * comma-separated list of addresses, CIDR ranges and the names `loopback`, `linklocal`,
 * `uniquelocal`. `true` (trust everyone) is refused: it lets any client choose its own address.
 */
export function compileTrustProxy(setting: string): TrustProxy {
  const text = setting.trim().toLowerCase();
  if (text === '' || text === 'false') return TRUST_NONE;
  if (text === 'true' || text === '*')
    throw new Error('trusting every peer lets clients spoof their address');
  const list = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const compiled = proxyAddr.compile(list);
  return (address, hop) => compiled(address, hop);
}

/** The TRUST_PROXY configuration key (kept as text in the frozen config; compile it where it is used). */
export const trustProxySetting = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .superRefine((value, ctx) => {
      try {
        compileTrustProxy(value);
      } catch (err) {
        ctx.addIssue({
          code: 'custom',
          message: `must be false or a list of addresses, CIDRs, loopback, linklocal, uniquelocal (${(err as Error).message})`,
        });
      }
    });

/** What a request says about its origin once untrusted forwarding headers are ignored. */
export interface ForwardedView {
  /** the client's address: the first hop, from the right, that is not a trusted proxy */
  clientAddress: string;
  /** the scheme the client used */
  protocol: 'http' | 'https';
  /** the host the client asked for (X-Forwarded-Host from a trusted proxy, else Host) */
  host: string | undefined;
  /** the path prefix a trusted proxy removed, without trailing `/` ('' when none, or when it is not a plain path) */
  prefix: string;
  /** whether the socket's peer is a trusted proxy */
  fromTrustedProxy: boolean;
}

const firstValue = (value: string | string[] | undefined): string | undefined => {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return undefined;
  const comma = text.indexOf(',');
  const first = (comma === -1 ? text : text.slice(0, comma)).trim();
  return first || undefined;
};

/** A path prefix a proxy stripped: `/llm`, `/api/v1`… (unreserved characters only). */
const PREFIX = /^(?:\/[A-Za-z0-9._~-]+)+$/;

/**
 * The prefix a proxy says it removed, without trailing `/`; '' when it is not a plain path: a `//host` or a `>` would
 * name another place in a URL built from it, or add a link-value.
 */
function plainPrefix(value: string | undefined): string {
  const prefix = value?.replace(/\/+$/, '') ?? '';
  return PREFIX.test(prefix) ? prefix : '';
}

/**
 * The one place X-Forwarded-For/-Host/-Proto/-Prefix are read: believed only when the socket's peer
 * is trusted by TRUST_PROXY, and then the client address walks X-Forwarded-For from the right past
 * trusted hops (proxy-addr, as express does).
 */
export function forwardedView(req: IncomingMessage, trust: TrustProxy): ForwardedView {
  const peer = req.socket.remoteAddress ?? '';
  const encrypted = (req.socket as TLSSocket).encrypted === true;
  const fromTrustedProxy = peer !== '' && trust(peer, 0);
  if (!fromTrustedProxy) {
    return {
      clientAddress: peer,
      protocol: encrypted ? 'https' : 'http',
      host: req.headers.host,
      prefix: '',
      fromTrustedProxy,
    };
  }
  const proto = firstValue(req.headers['x-forwarded-proto'])?.toLowerCase();
  return {
    clientAddress: proxyAddr(req, trust),
    protocol: proto === 'https' || proto === 'http' ? proto : encrypted ? 'https' : 'http',
    host: firstValue(req.headers['x-forwarded-host']) ?? req.headers.host,
    prefix: plainPrefix(firstValue(req.headers['x-forwarded-prefix'])),
    fromTrustedProxy,
  };
}

/** The view of an express request, under the app's `trust proxy fn` (set from TRUST_PROXY by the service app). */
export function forwardedViewOf(
  req: IncomingMessage & { app?: { get(name: string): unknown } },
): ForwardedView {
  const trust = (req.app?.get('trust proxy fn') as TrustProxy | undefined) ?? TRUST_NONE;
  return forwardedView(req, trust);
}
