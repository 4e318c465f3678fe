import {
  buildOpenApiDocument,
  ErrorEnvelopeSchema,
  OPENAPI_ROUTE,
  PLATFORM_SECURITY_SCHEMES,
  type RouteDoc,
} from '@platform/kernel';
import packageJson from '../package.json';
import { BreakdownQuerySchema, BreakdownResponseSchema } from './routes/breakdown';
import {
  PublishedSettingsResponseSchema,
  PublishedUsageResponseSchema,
  SettingsPatchSchema,
} from './routes/schemas';

const CALLER = ['sessionJwt', 'accessToken', 'apiKey'];
const error = (description: string) => ({ description, schema: ErrorEnvelopeSchema });
const orgRoute = (permission: string) => ({
  400: error('NO_ORG_CONTEXT: the caller has no active organization (`error` and `code`)'),
  401: error('missing or invalid credentials'),
  403: error(`the ${permission} permission is missing in the active organization`),
});

/** llm-quota's public routes, as the same zod schemas that validate them (served under {gateway_url}). */
export const LLM_QUOTA_ROUTES: RouteDoc[] = [
  OPENAPI_ROUTE,
  {
    method: 'get',
    path: '/v1/quotas/usage',
    summary: "The active organization's enforced LLM limits and their usage (spec 4.1)",
    description:
      'Needs `models:read` in the active organization (spec 5.2 rule 7: path, then the session’s active organization, then the first membership). At most 60 requests per 60 seconds per consumer.',
    tags: ['quotas'],
    security: CALLER,
    responses: {
      200: { description: 'organization quota usage (spec 2.1)', schema: PublishedUsageResponseSchema },
      ...orgRoute('models:read'),
      400: error(
        'NO_ORG_CONTEXT, or a query parameter (`details.issues`): the report takes none, it is the current minute and month',
      ),
      429: error('RATE_LIMITED; `retryAfter` (seconds) and the Retry-After header say when to come back'),
    },
  },
  {
    method: 'get',
    path: '/v1/quotas/usage/breakdown',
    summary: "A month's usage of each user or organization API key of the active organization (chargeback)",
    description:
      "As llm-quota counted it from the gateway's usage events, a page of items by id (`limit`, `after`). Needs `quotas:manage`: it shows everyone's usage.",
    tags: ['quotas'],
    security: CALLER,
    query: BreakdownQuerySchema,
    responses: {
      200: { description: 'the usage by user or key', schema: BreakdownResponseSchema },
      ...orgRoute('quotas:manage'),
      400: error('an invalid query (`details.issues`), or NO_ORG_CONTEXT'),
    },
  },
  {
    method: 'get',
    path: '/v1/quotas/settings',
    summary: "The active organization's quota settings",
    tags: ['quotas'],
    security: CALLER,
    responses: {
      200: { description: 'settings', schema: PublishedSettingsResponseSchema },
      ...orgRoute('quotas:manage'),
    },
  },
  {
    method: 'patch',
    path: '/v1/quotas/settings',
    summary: 'Change the policy or per-user quotas (JSON merge patch, RFC 7396)',
    description:
      '`null` removes an entry or a limit. The plan is assigned by an operator, not here. A patch that changes nothing ' +
      '(`{}`, or the values the settings hold) is not written: `updated_at` and `updated_by` stay.',
    tags: ['quotas'],
    security: CALLER,
    body: SettingsPatchSchema,
    responses: {
      200: { description: 'the settings after the change', schema: PublishedSettingsResponseSchema },
      ...orgRoute('quotas:manage'),
      400: error('invalid patch (`details.issues`), or NO_ORG_CONTEXT'),
    },
  },
];

/** The OpenAPI 3.1 document of the LLM gateway's quota routes. */
export function llmQuotaApiDocument(serverUrl: string): Record<string, unknown> {
  return buildOpenApiDocument({
    title: 'AI platform: LLM gateway quotas',
    version: packageJson.version,
    description:
      'The `{gateway_url}` root. Errors use the envelope `ErrorEnvelope` (spec 2.3); the edge in front may also answer 408, 413, 502, 503 and 504 in it, a body sent as anything but JSON is a 415, and a method the path does not take a 405 with Allow.',
    serverUrl,
    securitySchemes: PLATFORM_SECURITY_SCHEMES,
    routes: LLM_QUOTA_ROUTES,
  });
}
