/**
 * Kubernetes NetworkPolicy semantics for one namespace, enough to ask "may A open a connection to B on
 * port P": a pod selected by any policy of a direction is isolated in that direction, and then only
 * what some rule of such a policy allows gets through; a connection needs both the sender's egress and
 * the receiver's ingress.
 */
import type { K8sObject } from './kustomize';

type Labels = Record<string, string>;

interface LabelSelector {
  matchLabels?: Labels;
  matchExpressions?: Array<{
    key: string;
    operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    values?: string[];
  }>;
}

interface Peer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: { cidr: string; except?: string[] };
}

interface Rule {
  from?: Peer[];
  to?: Peer[];
  ports?: Array<{ port?: number | string; protocol?: string; endPort?: number }>;
}

interface PolicySpec {
  podSelector: LabelSelector;
  policyTypes?: Array<'Ingress' | 'Egress'>;
  ingress?: Rule[];
  egress?: Rule[];
}

/** A pod of the namespace (by its labels), or something outside the cluster's pods (`external`). */
export type Endpoint = { pod: Labels } | { external: string };

export function selects(selector: LabelSelector | undefined, labels: Labels): boolean {
  if (!selector) return true;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {}))
    if (labels[key] !== value) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = e.key in labels;
    const inValues = has && (e.values ?? []).includes(labels[e.key]!);
    if (e.operator === 'In' && !inValues) return false;
    if (e.operator === 'NotIn' && inValues) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

function peerMatches(peer: Peer, endpoint: Endpoint): boolean {
  if (peer.ipBlock) return 'external' in endpoint; // our pods are never addressed by CIDR here
  if (peer.namespaceSelector) {
    throw new Error('namespaceSelector peers are not modelled by this checker; extend it first');
  }
  return 'pod' in endpoint && selects(peer.podSelector, endpoint.pod);
}

function ruleMatches(rule: Rule, peers: Peer[] | undefined, other: Endpoint, port: number, protocol: string) {
  const peerOk = !peers || peers.length === 0 || peers.some((p) => peerMatches(p, other));
  const portOk =
    !rule.ports ||
    rule.ports.length === 0 ||
    rule.ports.some((p) => {
      if ((p.protocol ?? 'TCP') !== protocol) return false;
      if (p.port === undefined) return true;
      if (typeof p.port === 'string')
        throw new Error('named ports in policies are not modelled by this checker');
      return p.endPort ? port >= p.port && port <= p.endPort : port === p.port;
    });
  return peerOk && portOk;
}

const specOf = (policy: K8sObject) => policy.spec as PolicySpec;
const typesOf = (spec: PolicySpec) => spec.policyTypes ?? (spec.egress ? ['Ingress', 'Egress'] : ['Ingress']);

function allowedBy(
  policies: K8sObject[],
  direction: 'Ingress' | 'Egress',
  self: Labels,
  other: Endpoint,
  port: number,
  protocol: string,
) {
  const applying = policies
    .map(specOf)
    .filter((s) => typesOf(s).includes(direction) && selects(s.podSelector, self));
  if (applying.length === 0) return true;
  return applying.some((spec) =>
    (direction === 'Ingress' ? (spec.ingress ?? []) : (spec.egress ?? [])).some((rule) =>
      ruleMatches(rule, direction === 'Ingress' ? rule.from : rule.to, other, port, protocol),
    ),
  );
}

/** Whether `from` may open a connection to `to` on `port`, under the NetworkPolicies of the namespace. */
export function connectionAllowed(
  policies: K8sObject[],
  from: Endpoint,
  to: Endpoint,
  port: number,
  protocol = 'TCP',
): boolean {
  const egress = 'pod' in from ? allowedBy(policies, 'Egress', from.pod, to, port, protocol) : true;
  const ingress = 'pod' in to ? allowedBy(policies, 'Ingress', to.pod, from, port, protocol) : true;
  return egress && ingress;
}
