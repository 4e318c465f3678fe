/**
 * The three roots of the spec and where each goes (DESIGN.md "Roots"): `{base_url}` → auth,
 * `{gateway_url}` → llm-quota, `{legacy_url}` → legacy-agent. A root is chosen by host name first
 * (when the deployment maps hosts), then by path prefix, which is stripped before proxying.
 */
export type RootName = 'base' | 'gateway' | 'legacy';

/**
 * The services behind the roots: `{gateway_url}` is shared by llm-gateway (`gateway`, inference) and
 * llm-quota (`quota`, the `/v1/quotas/...` routes).
 */
export type UpstreamName = RootName | 'quota';

/** Which service serves a path of a root (the path inside the root, as matched). */
export function upstreamOf(root: RootName, path: string): UpstreamName {
  if (root !== 'gateway') return root;
  const p = path.toLowerCase();
  return p === '/v1/quotas' || p.startsWith('/v1/quotas/') ? 'quota' : 'gateway';
}

export interface RootMatch {
  root: RootName;
  /** the path inside the root (always starts with `/`), query excluded */
  path: string;
  /** what the upstream receives: the path inside the root plus the query */
  upstreamUrl: string;
  /** the path prefix the edge removed (`/llm`, `/legacy`), '' when none: sent as X-Forwarded-Prefix */
  prefix: string;
}

export interface RootTable {
  gatewayPrefix: string;
  legacyPrefix: string;
  gatewayHosts: string[];
  legacyHosts: string[];
}

/** `host`: the one the client asked for (a trusted proxy's X-Forwarded-Host, else Host: ForwardedView.host) */
export type RootResolver = (url: string, host: string | undefined) => RootMatch;

/** Builds a resolver with the prefixes and host names compiled once. */
export function createRootResolver(table: RootTable): RootResolver {
  const hostRoots = new Map<string, RootName>();
  for (const h of table.gatewayHosts) hostRoots.set(h, 'gateway');
  for (const h of table.legacyHosts) hostRoots.set(h, 'legacy');
  const prefixes: Array<[string, RootName]> = [
    [table.gatewayPrefix, 'gateway'],
    [table.legacyPrefix, 'legacy'],
  ];

  return (url, host) => {
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    if (hostRoots.size > 0 && host) {
      const colon = host.lastIndexOf(':');
      const name = (colon > host.lastIndexOf(']') ? host.slice(0, colon) : host).toLowerCase();
      // `legacy.example.com.` (fully qualified, as DNS writes it) is `legacy.example.com`
      const byHost = hostRoots.get(name.endsWith('.') ? name.slice(0, -1) : name);
      if (byHost) return { root: byHost, path, upstreamUrl: url, prefix: '' };
    }
    for (const [prefix, root] of prefixes) {
      if (!path.startsWith(prefix)) continue;
      const n = prefix.length;
      if (path.length === n) return { root, path: '/', upstreamUrl: `/${url.slice(n)}`, prefix };
      if (path.charCodeAt(n) === 47 /* / */)
        return { root, path: path.slice(n), upstreamUrl: url.slice(n), prefix };
    }
    return { root: 'base', path, upstreamUrl: url, prefix: '' };
  };
}
