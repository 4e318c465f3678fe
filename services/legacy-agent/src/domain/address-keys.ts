import { isIPv4, isIPv6 } from 'node:net';
import { compileTrustProxy } from '@platform/kernel';

/**
 * The part of a client address that names one client: an IPv4 address, or an IPv6 address's /64 (one
 * subscriber's network: a host picks any of its 2^64 addresses, so counting whole addresses would give
 * every request a fresh budget). An IPv4-mapped IPv6 address counts as its IPv4 address.
 */
export function clientKey(address: string): string {
  const plain = address.split('%')[0]!.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(plain);
  if (mapped && isIPv4(mapped[1]!)) return mapped[1]!;
  if (!isIPv6(plain)) return plain;
  const [head, tail] = plain.includes('::') ? plain.split('::') : [plain, undefined];
  const groupsOf = (part: string | undefined) =>
    part ? part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : [];
  const first = groupsOf(head);
  const last = groupsOf(tail);
  const groups =
    tail === undefined ? first : [...first, ...Array(8 - first.length - last.length).fill('0'), ...last];
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}

/** A list of addresses and CIDRs (and `loopback`, `linklocal`, `uniquelocal`), compiled as TRUST_PROXY is. */
export function compileAddressList(list: string): (address: string) => boolean {
  if (list.trim() === '') return () => false;
  const matches = compileTrustProxy(list);
  return (address) => matches(address, 0);
}
