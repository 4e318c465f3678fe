import { type LookupAddress, lookup } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { Agent } from 'undici';

/**
 * Addresses that are not the public internet: loopback, the private ranges, link-local (cloud metadata
 * services answer on 169.254.169.254 and fd00:ec2::254), carrier-grade NAT (Alibaba's metadata on
 * 100.100.100.200), multicast and reserved ranges. IPv4-mapped IPv6 addresses are checked as IPv4.
 */
const NOT_PUBLIC: Array<[string, number, 'ipv4' | 'ipv6']> = [
  ['0.0.0.0', 8, 'ipv4'],
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['224.0.0.0', 3, 'ipv4'],
  ['::', 128, 'ipv6'],
  ['::1', 128, 'ipv6'],
  ['64:ff9b::', 96, 'ipv6'],
  ['fc00::', 7, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
];

const MAPPED_V4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

/** a refused destination: the provider layer answers it as a provider error, never retried */
export class DestinationRefused extends Error {
  readonly code = 'EDESTINATIONREFUSED';
}

/**
 * Where providers defined by platform administrators (through `PUT /v1/providers`) may connect: public
 * addresses, and the non-public networks the operator lists (`LLM_GATEWAY_PROVIDER_PRIVATE_NETWORKS`).
 * The operator's own providers (the gateway file, the operator's credential) are not restricted.
 * Checked where the connection is made (the resolved addresses, so DNS cannot point elsewhere after a
 * check), not only when the URL is written.
 */
export class ProviderDestinations {
  private readonly notPublic = new BlockList();
  private readonly allowed = new BlockList();
  private agentInstance: Agent | undefined;

  constructor(allowedNetworks: readonly string[] = []) {
    for (const [net, prefix, family] of NOT_PUBLIC) this.notPublic.addSubnet(net, prefix, family);
    for (const cidr of allowedNetworks) {
      const parsed = parseCidr(cidr);
      if (!parsed) throw new Error(`not a network: ${cidr}`);
      this.allowed.addSubnet(parsed.address, parsed.prefix, parsed.family);
    }
  }

  /** why a provider may not connect to this address, or null when it may */
  refusal(address: string): string | null {
    const mapped = MAPPED_V4.exec(address)?.[1];
    const ip = mapped ?? address;
    const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
    if (isIP(ip) === 0) return `${address} is not an IP address`;
    if (!this.notPublic.check(ip, family) || this.allowed.check(ip, family)) return null;
    return `${address} is not a public address (the operator allows others with LLM_GATEWAY_PROVIDER_PRIVATE_NETWORKS)`;
  }

  /** A URL's own problems: its scheme, and its host when it is an address. Host names are checked on connection. */
  urlRefusal(url: string): string | null {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return 'not a URL';
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'only http and https URLs';
    const host = parsed.hostname.replace(/^\[|\]$/g, '');
    return isIP(host) ? this.refusal(host) : null;
  }

  /** Refuses a request's URL before anything is sent; its host name is checked again by `agent`'s lookup. */
  assertUrl(url: string): void {
    const why = this.urlRefusal(url);
    if (why) throw new DestinationRefused(why);
  }

  /** Resolves a host name and refuses it when any of its addresses is refused (for transports without `agent`). */
  async assertResolved(url: string): Promise<void> {
    this.assertUrl(url);
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) return;
    const addresses = await new Promise<LookupAddress[]>((resolve, reject) =>
      lookup(host, { all: true }, (err, found) => (err ? reject(err) : resolve(found))),
    );
    for (const { address } of addresses) {
      const why = this.refusal(address);
      if (why) throw new DestinationRefused(`${host}: ${why}`);
    }
  }

  /** an undici dispatcher whose connections only reach allowed addresses (redirects are never followed) */
  get agent(): Agent {
    this.agentInstance ??= new Agent({
      connect: {
        lookup: (hostname, options, callback) => {
          lookup(hostname, { ...options, all: true }, (err, found) => {
            if (err) return callback(err, '', 0);
            const refused = found.map((a) => this.refusal(a.address)).find((why) => why !== null);
            if (refused) return callback(new DestinationRefused(`${hostname}: ${refused}`), '', 0);
            if ((options as { all?: boolean }).all)
              return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, found);
            const first = found[0]!;
            callback(null, first.address, first.family);
          });
        },
      },
    });
    return this.agentInstance;
  }

  async close(): Promise<void> {
    await this.agentInstance?.close();
  }
}

/** `10.0.0.0/8`, `fd00::/8`, or an address alone (a network of one) */
export function parseCidr(cidr: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | null {
  const [address = '', bits] = cidr.trim().split('/');
  const version = isIP(address);
  if (version === 0) return null;
  const max = version === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : Number(bits);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max) return null;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}
