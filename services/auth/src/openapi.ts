import { buildOpenApiDocument, ErrorEnvelopeSchema, type RouteDoc } from '@platform/kernel';
import packageJson from '../package.json';
import { CreateAccessTokenBody } from './routes/access-tokens';
import { ActiveOrgBody } from './routes/me';
import { CreateOrgApiKeyBody } from './routes/org-api-keys';
import { AddMemberBody, CreateOrgBody } from './routes/orgs';
import { PutRoleBody } from './routes/roles';
import { CreateWorkspaceKeyBody } from './routes/workspace-api-keys';
import { CreateWorkspaceBody, PutWorkspaceMemberBody, UpdateWorkspaceBody } from './routes/workspaces';

const USER = ['sessionJwt', 'accessToken'];
const SESSION = ['sessionJwt'];
const ANY = ['sessionJwt', 'accessToken', 'apiKey'];
const error = (description: string) => ({ description, schema: ErrorEnvelopeSchema });
const denied = { 401: error('missing or invalid credentials'), 403: error('not allowed') };

/** auth's public routes as the same zod schemas that validate them (served under {base_url}). */
export const AUTH_ROUTES: RouteDoc[] = [
  {
    method: 'get',
    path: '/',
    summary: 'Platform status',
    security: [],
    responses: { 200: { description: 'healthy' }, 503: { description: 'degraded' } },
  },
  {
    method: 'get',
    path: '/oidc/jwks',
    summary: 'Public signing keys (JWKS)',
    security: [],
    responses: { 200: { description: 'JWKS' } },
  },
  {
    method: 'post',
    path: '/v2/login/anonymous',
    summary: 'Anonymous session (spec 2.4)',
    security: [],
    responses: { 200: { description: '{userId, sessionId, token}' }, 429: error('RATE_LIMITED') },
  },
  {
    method: 'post',
    path: '/v2/logout',
    summary: 'Revoke the current session',
    security: SESSION,
    responses: { 204: { description: 'revoked' }, ...denied },
  },
  {
    method: 'get',
    path: '/v2/me',
    summary: 'The current user',
    security: USER,
    responses: { 200: { description: 'user' }, ...denied },
  },
  {
    method: 'put',
    path: '/v2/user/active-org',
    summary: 'Switch the active organization',
    security: USER,
    body: ActiveOrgBody,
    responses: { 200: { description: 'the /v2/me document' }, 400: error('invalid body'), ...denied },
  },
  {
    method: 'post',
    path: '/v2/user/accessTokens',
    summary: 'Create a user access token (spec 2.6)',
    security: SESSION,
    body: CreateAccessTokenBody,
    responses: {
      201: { description: 'the token, shown once' },
      400: error('invalid body'),
      409: error('too many tokens'),
      ...denied,
    },
  },
  {
    method: 'get',
    path: '/v2/user/accessTokens',
    summary: 'List access tokens',
    security: SESSION,
    responses: { 200: { description: 'tokens' }, ...denied },
  },
  {
    method: 'delete',
    path: '/v2/user/accessTokens/:id',
    summary: 'Revoke an access token',
    security: USER,
    responses: { 204: { description: 'revoked' }, 404: error('unknown token'), ...denied },
  },
  {
    method: 'post',
    path: '/v2/orgs',
    summary: 'Create an organization',
    security: USER,
    body: CreateOrgBody,
    responses: {
      201: { description: 'created' },
      400: error('invalid body'),
      409: error('slug taken'),
      ...denied,
    },
  },
  {
    method: 'get',
    path: '/v2/orgs',
    summary: 'The caller’s organizations',
    security: USER,
    responses: { 200: { description: 'organizations' }, ...denied },
  },
  {
    method: 'get',
    path: '/v2/orgs/:orgSlug',
    summary: 'One organization',
    security: ANY,
    responses: { 200: { description: 'organization' }, 404: error('unknown'), ...denied },
  },
  {
    method: 'get',
    path: '/v2/orgs/:orgSlug/members',
    summary: 'Members',
    security: ANY,
    responses: { 200: { description: 'members' }, ...denied },
  },
  {
    method: 'post',
    path: '/v2/orgs/:orgSlug/members',
    summary: 'Add a member or change a role',
    security: ANY,
    body: AddMemberBody,
    responses: {
      200: { description: 'role changed' },
      201: { description: 'added' },
      400: error('invalid body'),
      409: error('last owner'),
      ...denied,
    },
  },
  {
    method: 'delete',
    path: '/v2/orgs/:orgSlug/members/:userId',
    summary: 'Remove a member',
    security: ANY,
    responses: { 204: { description: 'removed' }, 409: error('last owner'), ...denied },
  },
  {
    method: 'get',
    path: '/v2/orgs/:orgSlug/roles',
    summary: 'Roles',
    security: ANY,
    responses: { 200: { description: 'roles' }, ...denied },
  },
  {
    method: 'put',
    path: '/v2/orgs/:orgSlug/roles/:role',
    summary: 'Create or replace a custom role',
    security: ANY,
    body: PutRoleBody,
    responses: {
      200: { description: 'replaced' },
      201: { description: 'created' },
      400: error('invalid body'),
      ...denied,
    },
  },
  {
    method: 'delete',
    path: '/v2/orgs/:orgSlug/roles/:role',
    summary: 'Delete a custom role',
    security: ANY,
    responses: { 204: { description: 'deleted' }, 409: error('in use'), ...denied },
  },
  {
    method: 'post',
    path: '/v2/orgs/:orgSlug/apikeys',
    summary: 'Create an organization API key',
    security: USER,
    body: CreateOrgApiKeyBody,
    responses: { 201: { description: 'the key, shown once' }, 400: error('invalid body'), ...denied },
  },
  {
    method: 'get',
    path: '/v2/orgs/:orgSlug/apikeys',
    summary: 'Organization API keys',
    security: ANY,
    responses: { 200: { description: 'keys' }, ...denied },
  },
  {
    method: 'delete',
    path: '/v2/orgs/:orgSlug/apikeys/:id',
    summary: 'Revoke an organization API key',
    security: ANY,
    responses: { 204: { description: 'revoked' }, 404: error('unknown key'), ...denied },
  },
  {
    method: 'post',
    path: '/v2/workspaces',
    summary: 'Create a workspace in the active organization',
    security: ANY,
    body: CreateWorkspaceBody,
    responses: { 201: { description: 'created' }, 400: error('invalid body or NO_ORG_CONTEXT'), ...denied },
  },
  {
    method: 'get',
    path: '/v2/workspaces',
    summary: 'Readable workspaces',
    security: ANY,
    responses: { 200: { description: 'workspaces' }, ...denied },
  },
  {
    method: 'get',
    path: '/v2/workspaces/:id',
    summary: 'One workspace',
    security: ANY,
    responses: { 200: { description: 'workspace' }, 404: error('unknown'), ...denied },
  },
  {
    method: 'patch',
    path: '/v2/workspaces/:id',
    summary: 'Rename a workspace',
    security: ANY,
    body: UpdateWorkspaceBody,
    responses: { 200: { description: 'renamed' }, 400: error('invalid body'), ...denied },
  },
  {
    method: 'delete',
    path: '/v2/workspaces/:id',
    summary: 'Delete a workspace',
    security: ANY,
    responses: { 204: { description: 'deleted' }, ...denied },
  },
  {
    method: 'get',
    path: '/v2/workspaces/:id/members',
    summary: 'Workspace members',
    security: ANY,
    responses: { 200: { description: 'members' }, ...denied },
  },
  {
    method: 'put',
    path: '/v2/workspaces/:id/members/:userId',
    summary: 'Add a workspace member or change their role',
    security: ANY,
    body: PutWorkspaceMemberBody,
    responses: {
      200: { description: 'changed' },
      201: { description: 'added' },
      400: error('invalid body'),
      409: error('last owner'),
      ...denied,
    },
  },
  {
    method: 'delete',
    path: '/v2/workspaces/:id/members/:userId',
    summary: 'Remove a workspace member',
    security: ANY,
    responses: { 204: { description: 'removed' }, 409: error('last owner'), ...denied },
  },
  {
    method: 'post',
    path: '/v2/workspaces/:id/security/apikeys',
    summary: 'Create a workspace API key (spec 2.7)',
    security: USER,
    body: CreateWorkspaceKeyBody,
    responses: { 201: { description: 'the key, shown once' }, 400: error('invalid body'), ...denied },
  },
  {
    method: 'get',
    path: '/v2/workspaces/:id/security/apikeys',
    summary: 'Workspace API keys',
    security: ANY,
    responses: { 200: { description: 'keys' }, ...denied },
  },
  {
    method: 'delete',
    path: '/v2/workspaces/:id/security/apikeys/:keyId',
    summary: 'Revoke a workspace API key',
    security: ANY,
    responses: { 204: { description: 'revoked' }, 404: error('unknown key'), ...denied },
  },
];

/** The OpenAPI 3.1 document of auth's public routes. */
export function authApiDocument(serverUrl: string): Record<string, unknown> {
  return buildOpenApiDocument({
    title: 'AI platform: authentication, organizations and workspaces',
    version: packageJson.version,
    serverUrl,
    securitySchemes: {
      sessionJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      accessToken: { type: 'http', scheme: 'bearer', description: 'user access token `at:...`' },
      apiKey: { type: 'apiKey', in: 'header', name: 'x-platform-api-key' },
    },
    routes: AUTH_ROUTES,
  });
}
