import { type ApiAnswer, api, type CliError, type CliSettings, failure } from './client';

/** What the LLM commands share: calls to `{gateway_url}`, their failures, the session's organization. */

/** The gateway root (`{gateway_url}`): --gateway-url, PLATFORM_GATEWAY_URL, else {base_url}/llm. */
const gw = (s: CliSettings, path: string) => `${s.gatewayUrl ?? `${s.url}/llm`}${path}`;

/** A failed answer as an error naming its code and, when the envelope has them, its details. */
export function failed(what: string, answer: ApiAnswer): CliError {
  const body = answer.body as { code?: string; message?: string; details?: unknown } | null;
  const err = failure(what, answer);
  if (body && typeof body === 'object') {
    if (body.code) err.message = err.message.replace(`(${answer.status})`, `(${answer.status} ${body.code})`);
    if (body.details) err.message += `\n${JSON.stringify(body.details, null, 2)}`;
  }
  return err;
}

/** A call to `{gateway_url}` with the operator's credential (a platform administrator's token). */
export function gateway(s: CliSettings, method: string, path: string, body?: unknown): Promise<ApiAnswer> {
  return api({ ...s, url: '' }, method, gw(s, path), body);
}

/** a model as `GET /v1/models` answers it */
export interface ModelItem {
  id: string;
  provider_config?: { provider: string };
  /** a model served by several deployments names them here instead of `provider_config` */
  deployments?: Array<{ provider: string }>;
  /** how long the gateway waits for its provider (absent: the gateway's LLM_GATEWAY_DEFAULT_TIMEOUT_MS) */
  timeout_ms?: number;
  [k: string]: unknown;
}

/** Makes `org` the session's active organization (what quota settings apply to). */
export async function useOrg(s: CliSettings, org: string): Promise<void> {
  const answer = await api(s, 'PUT', '/v2/user/active-org', { orgSlug: org });
  if (answer.status !== 200) throw failed(`Switching to the organization ${org}`, answer);
}
