import dns from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';

export interface ServiceLookupOptions {
  /** longest time an answer is used without asking again (the record's own TTL when shorter); default 10 s */
  maxTtlMs?: number;
  /** how long a previous answer is still used when the name server does not answer; default 5 min */
  staleMs?: number;
  /** per query: the wait before asking again, and how many times (c-ares' timeout and tries); default 1 s × 3 */
  timeoutMs?: number;
  tries?: number;
  /** for tests: the resolver and the system's lookup */
  resolver?: Pick<dns.promises.Resolver, 'resolve4'>;
  fallback?: typeof dns.lookup;
  now?: () => number;
}

/** how long a name the name server did not know goes straight to the system's lookup */
const SYSTEM_LOOKUP_MS = 60_000;

interface Cached {
  addresses: dns.LookupAddress[];
  /** until then the answer is used without asking */
  freshUntil: number;
  /** until then it is used when asking fails */
  staleUntil: number;
}

/**
 * `lookup` for `net.connect` (and undici's `connect` option) on calls between the platform's services, which
 * address each other by name (`llm-quota`, `llm-quota.platform.svc`).
 *
 * Node's default lookup is `getaddrinfo` on libuv's thread pool (4 threads shared with file I/O). A name server
 * that leaves queries unanswered (podman's aardvark-dns after containers start, decision 0084) holds a thread for
 * each lookup until glibc gives up, and lookups started meanwhile queue behind: a caller that aborts after 5 s
 * does not free its thread. This one asks for A records through c-ares (`dns.Resolver`: sockets on the event
 * loop, no thread), once at a time per name, keeps the answer for its TTL (at most `maxTtlMs`), and uses the last
 * answer for `staleMs` while the name server does not answer.
 *
 * What c-ares cannot answer goes to the system's lookup (IPv4 and IPv6; the hosts file, resolv.conf's search list,
 * which c-ares' queries do not apply, as for Kubernetes' short names), at most one at a time per name, so that a name server
 * that does not answer holds one thread per name, not one per call. A name the name server did not know is not
 * asked of it again for a minute. IP literals and IPv6 requests go to the system's lookup as they are.
 */
export function serviceLookup(options: ServiceLookupOptions = {}): LookupFunction {
  const maxTtlMs = options.maxTtlMs ?? 10_000;
  const staleMs = options.staleMs ?? 5 * 60_000;
  const now = options.now ?? Date.now;
  const fallback = options.fallback ?? dns.lookup;
  const resolver =
    options.resolver ??
    new dns.promises.Resolver({ timeout: options.timeoutMs ?? 1_000, tries: options.tries ?? 3 });
  const cache = new Map<string, Cached>();
  const asking = new Map<string, Promise<dns.LookupAddress[]>>();
  /** names the name server did not know, left to the system's lookup until then (not asked again each time) */
  const systemUntil = new Map<string, number>();
  const systemAsking = new Map<string, Promise<dns.LookupAddress[]>>();

  const ask = (hostname: string): Promise<dns.LookupAddress[]> => {
    let pending = asking.get(hostname);
    if (!pending) {
      pending = resolver
        .resolve4(hostname, { ttl: true })
        .then((records) => {
          const ttlMs = Math.min(maxTtlMs, Math.max(1_000, Math.min(...records.map((r) => r.ttl * 1000))));
          const addresses = records.map((r) => ({ address: r.address, family: 4 }));
          const at = now();
          cache.set(hostname, { addresses, freshUntil: at + ttlMs, staleUntil: at + ttlMs + staleMs });
          return addresses;
        })
        .finally(() => asking.delete(hostname));
      asking.set(hostname, pending);
    }
    return pending;
  };

  /** the system's answer (IPv4 and IPv6), one lookup at a time per name */
  const askSystem = (hostname: string): Promise<dns.LookupAddress[]> => {
    let pending = systemAsking.get(hostname);
    if (!pending) {
      pending = new Promise<dns.LookupAddress[]>((resolve, reject) =>
        fallback(hostname, { all: true }, (err, addresses) =>
          err ? reject(err) : resolve(addresses as dns.LookupAddress[]),
        ),
      ).finally(() => systemAsking.delete(hostname));
      systemAsking.set(hostname, pending);
    }
    return pending;
  };

  const resolve = async (hostname: string): Promise<dns.LookupAddress[]> => {
    const cached = cache.get(hostname);
    if (cached && now() < cached.freshUntil) return cached.addresses;
    if ((systemUntil.get(hostname) ?? 0) > now()) return askSystem(hostname);
    try {
      return await ask(hostname);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === dns.NOTFOUND || code === dns.NODATA) {
        if (systemUntil.size >= 1_000) systemUntil.clear();
        systemUntil.set(hostname, now() + SYSTEM_LOOKUP_MS);
      } else if (cached && now() < cached.staleUntil) return cached.addresses;
      return askSystem(hostname);
    }
  };

  return (hostname, lookupOptions, callback) => {
    const family = lookupOptions.family;
    if (isIP(hostname) || family === 6 || family === 'IPv6') {
      fallback(hostname, lookupOptions, callback);
      return;
    }
    resolve(hostname).then(
      (addresses) => {
        if (addresses.length === 0) {
          callback(Object.assign(new Error(`no address for ${hostname}`), { code: dns.NODATA }), '', 0);
          return;
        }
        if (lookupOptions.all)
          (callback as (err: null, addresses: dns.LookupAddress[]) => void)(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}
