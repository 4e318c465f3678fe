import type { IncomingHttpHeaders } from 'node:http';
import { classifyOpaqueCredential } from '@platform/contracts';
import { readAccessTokenCookie } from '../http/header-hygiene';
import type { RootName } from '../routing/roots';

/** The one platform credential a request presents, by shape only (no lookup yet). */
export type PresentedCredential =
  | { kind: 'none' }
  | { kind: 'invalid'; reason: string }
  | { kind: 'jwt'; token: string; fromCookie: boolean }
  | { kind: 'access_token'; token: string }
  | { kind: 'api_key'; key: string };

const NONE: PresentedCredential = { kind: 'none' };

/** `Bearer <token>` (scheme in any case); the token's shape is checked by whoever reads it. */
function bearerToken(authorization: string): string | null {
  if (authorization.length < 8 || authorization.slice(0, 7).toLowerCase() !== 'bearer ') return null;
  const token = authorization.slice(7).trim();
  return token.length > 0 && !token.includes(' ') ? token : null;
}

function fromBearer(authorization: string): PresentedCredential {
  const token = bearerToken(authorization);
  if (!token) return { kind: 'invalid', reason: 'Authorization must use the Bearer scheme' };
  if (token.startsWith('at:')) {
    return classifyOpaqueCredential(token) === 'access_token'
      ? { kind: 'access_token', token }
      : { kind: 'invalid', reason: 'Malformed access token' };
  }
  if (token.startsWith('iak_')) {
    return {
      kind: 'invalid',
      // the openai SDK sends its apiKey as Bearer: say where the key goes (spec 5.2 rule 1)
      reason:
        "Organization API keys go in the x-platform-api-key header, not alone as a Bearer token (openai SDK: defaultHeaders: { 'x-platform-api-key': key })",
    };
  }
  if (token.startsWith('wak_')) {
    return {
      kind: 'invalid',
      reason: 'Workspace API keys are accepted only in the x-platform-api-key header',
    };
  }
  // Anything else can only be a session JWT: the verifier checks its shape on a cache miss.
  return { kind: 'jwt', token, fromCookie: false };
}

function fromApiKeyHeader(value: string): PresentedCredential {
  const kind = classifyOpaqueCredential(value);
  if (kind === 'workspace_api_key' || kind === 'org_api_key') return { kind: 'api_key', key: value };
  if (kind === 'access_token') {
    return { kind: 'invalid', reason: 'Access tokens are accepted only as Bearer credentials' };
  }
  return { kind: 'invalid', reason: 'Malformed API key' };
}

/**
 * `x-api-key`, where the route takes it (Anthropic's Messages API, whose SDKs send their key there): an organization
 * API key, as if sent in `x-platform-api-key`. Anything else there is no platform credential: beside another one
 * it is ignored (a client's placeholder), alone it is refused saying where the caller's credential goes.
 * Undefined: the header says nothing.
 */
function fromAnthropicApiKey(
  headers: IncomingHttpHeaders,
): { key: string } | PresentedCredential | undefined {
  const header = headers['x-api-key'];
  if (typeof header !== 'string') return undefined;
  const value = header.trim();
  if (classifyOpaqueCredential(value) === 'org_api_key') return { key: value };
  if (value.startsWith('iak_')) return { kind: 'invalid', reason: 'Malformed API key' };
  if (headers.authorization !== undefined || headers['x-platform-api-key'] !== undefined) return undefined;
  return {
    kind: 'invalid',
    reason:
      'x-api-key takes an organization API key (iak_...) here; a session or an at: access token goes in Authorization: Bearer (Anthropic SDK: authToken, Claude Code: ANTHROPIC_AUTH_TOKEN)',
  };
}

/**
 * Which credential a request presents. On the base and gateway roots: `Authorization: Bearer` (session
 * JWT or `at:` token), or `x-platform-api-key` (workspace or organization key), or the `access-token`
 * cookie; sending both a header credential and an API key is ambiguous and refused, unless the Bearer token is
 * that same API key. On the legacy root
 * `Authorization` belongs to legacy-agent, so only the API key and the cookie are platform credentials.
 * `anthropicApiKey` (the route table's): an organization API key may come as `x-api-key` too.
 * Malformed values are refused here, without any lookup.
 */
export function presentedCredential(
  root: RootName,
  headers: IncomingHttpHeaders,
  options: { anthropicApiKey?: boolean } = {},
): PresentedCredential {
  let apiKey = headers['x-platform-api-key'];
  if (options.anthropicApiKey) {
    const anthropic = fromAnthropicApiKey(headers);
    if (anthropic && 'kind' in anthropic) return anthropic;
    if (anthropic) {
      // the same key in both headers is one credential; two different ones are ambiguous (below)
      if (apiKey !== undefined && (typeof apiKey !== 'string' || apiKey.trim() !== anthropic.key))
        return { kind: 'invalid', reason: 'Send one API key: x-api-key or x-platform-api-key, not both' };
      apiKey = anthropic.key;
    }
  }
  let authorization = root === 'legacy' ? undefined : headers.authorization;
  // The same API key in both is one credential, not two: the openai SDK always sends its `apiKey` as a Bearer
  // token, so `new OpenAI({ apiKey: key, defaultHeaders: { 'x-platform-api-key': key } })` presents it twice.
  if (
    authorization !== undefined &&
    typeof apiKey === 'string' &&
    bearerToken(authorization) === apiKey.trim()
  ) {
    authorization = undefined;
  }
  if (authorization !== undefined && apiKey !== undefined) {
    return {
      kind: 'invalid',
      reason:
        'Send one credential: Authorization or x-platform-api-key, not both (an API key may also be repeated as the Bearer token)',
    };
  }
  if (authorization !== undefined) return fromBearer(authorization);
  if (typeof apiKey === 'string') return fromApiKeyHeader(apiKey.trim());
  const cookieToken = readAccessTokenCookie(headers.cookie);
  if (cookieToken !== undefined) return { kind: 'jwt', token: cookieToken, fromCookie: true };
  return NONE;
}
