import type { IncomingHttpHeaders } from 'node:http';
import type { Principal } from '@platform/contracts';
import { Forbidden } from '@platform/kernel';
import type { CatalogueModel } from '../catalogue/catalogue';

/** What `{...}` placeholders of a model's header policy may name. */
function identityValues(principal: Principal, requestId: string): Record<string, string | null> {
  const org = principal.session.org;
  return {
    'user.id': principal.user.id,
    'user.email': principal.user.email,
    'org.slug': org?.slug ?? null,
    'org.name': org?.name ?? null,
    'org.role': org?.role.slug ?? null,
    'credential.kind': principal.credential.kind,
    'credential.id': principal.credential.id,
    'project.id': principal.credential.projectId ?? null,
    'request.id': requestId,
  };
}

const PLACEHOLDER = /\{([a-z]+\.[a-z]+)\}/g;

/** Headers a client can never have forwarded, whatever a model's allow-list says. */
const NEVER_FORWARDED = new Set(['authorization', 'cookie', 'host', 'content-length', 'x-platform-api-key']);

/**
 * The headers sent to a model's provider: its header policy with caller identity filled in (a
 * required header left empty refuses the request: HEADER_POLICY_VIOLATION with `details.missing`),
 * plus the client headers its allow-list names. No other client header reaches the provider.
 */
export function providerHeaders(
  model: CatalogueModel,
  principal: Principal,
  clientHeaders: IncomingHttpHeaders,
  requestId: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of model.provider_config.forward_headers ?? []) {
    const key = name.toLowerCase();
    if (NEVER_FORWARDED.has(key) || key.startsWith('x-platform-')) continue;
    const value = clientHeaders[key];
    if (typeof value === 'string') out[key] = value;
  }
  const values = identityValues(principal, requestId);
  const missing: string[] = [];
  for (const [name, rule] of Object.entries(model.provider_config.headers ?? {})) {
    const { value: template, required } = typeof rule === 'string' ? { value: rule, required: false } : rule;
    let empty = false;
    const value = template.replace(PLACEHOLDER, (_m, key: string) => {
      const v = values[key];
      if (v === null || v === undefined || v === '') empty = true;
      return v ?? '';
    });
    if (empty || value === '') {
      if (required) missing.push(name);
      continue;
    }
    out[name.toLowerCase()] = value;
  }
  if (missing.length > 0) {
    throw new Forbidden(
      `The model ${model.model_id} requires caller identity this credential does not carry`,
      {
        error: 'HEADER_POLICY_VIOLATION',
        code: 'HEADER_POLICY_VIOLATION',
        details: { missing },
      },
    );
  }
  return out;
}
