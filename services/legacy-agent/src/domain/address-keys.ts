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
  // a trailing dotted quad is the last two groups (`0:0:0:0:0:ffff:203.0.113.7` is mapped, not 0.0.0.0)
  const quadGroups = (quad: string) => {
    const [a, b, c, d] = quad.split('.').map(Number) as [number, number, number, number];
    return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
  };
  const groupsOf = (part: string | undefined) =>
    part ? part.split(':').flatMap((g) => (g.includes('.') ? quadGroups(g) : [g])) : [];
  const first = groupsOf(head);
  const last = groupsOf(tail);
  const groups = (
    tail === undefined ? first : [...first, ...Array(8 - first.length - last.length).fill('0'), ...last]
  ).map((g) => Number.parseInt(g, 16));
  // IPv4-mapped written in hex (`::ffff:cb00:7107`, as a proxy may forward it): its IPv4 address, not the /64
  // every mapped address shares
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const [hi, lo] = [groups[6]!, groups[7]!];
    return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`;
}

/** A list of addresses and CIDRs (and `loopback`, `linklocal`, `uniquelocal`), compiled as TRUST_PROXY is. */
export function compileAddressList(list: string): (address: string) => boolean {
  if (list.trim() === '') return () => false;
  const matches = compileTrustProxy(list);
  return (address) => matches(address, 0);
}
