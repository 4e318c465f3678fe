import {
  buildOpenApiDocument,
  ErrorEnvelopeSchema,
  OPENAPI_ROUTE,
  PLATFORM_SECURITY_SCHEMES,
  type RouteDoc,
} from '@platform/kernel';
import { z } from 'zod';
import packageJson from '../package.json';
import {
  AccessTokenSummarySchema,
  CreateAccessTokenBody,
  CreatedAccessTokenSchema,
} from './routes/access-tokens';
import {
  EmailBody,
  LoginBody,
  RefreshBody,
  ResetPasswordBody,
  SignupBody,
  TokenBody,
  UserSessionSchema,
} from './routes/accounts';
import { JwksSchema } from './routes/jwks';
import { AnonymousSessionSchema } from './routes/login';
import { ActiveOrgBody, DeleteAccountBody, MeSchema } from './routes/me';
import { CreatedOrgApiKeySchema, CreateOrgApiKeyBody, OrgApiKeySchema } from './routes/org-api-keys';
import { OrgSecurityBody, OrgSecuritySchema } from './routes/org-security';
import {
  AddMemberBody,
  CreateOrgBody,
  OrgDetailSchema,
  OrgMemberSchema,
  OrgSchema,
  RenameOrgBody,
} from './routes/orgs';
import { PutRoleBody, RoleSchema } from './routes/roles';
import { PlatformStatusSchema } from './routes/status';
import {
  CreatedWorkspaceApiKeySchema,
  CreateWorkspaceKeyBody,
  WorkspaceApiKeySchema,
} from './routes/workspace-api-keys';
import {
  CreateWorkspaceBody,
  PutWorkspaceMemberBody,
  UpdateWorkspaceBody,
  WorkspaceMemberSchema,
  WorkspaceSchema,
} from './routes/workspaces';

const USER = ['sessionJwt', 'accessToken'];
const SESSION = ['sessionJwt'];
const ANY = ['sessionJwt', 'accessToken', 'apiKey'];
const error = (description: string) => ({ description, schema: ErrorEnvelopeSchema });
const ok = (description: string, schema: z.ZodType) => ({ description, schema });
const list = (description: string, item: z.ZodType) => ({ description, schema: z.array(item) });
const none = (description: string) => ({ description });
const denied = {
  401: error('missing, invalid, expired or revoked credentials'),
  403: error('the credential does not allow this'),
};
const invalid = { 400: error('invalid body: `details.issues` names the fields') };
const unknown = (what: string) => ({ 404: error(`unknown ${what}`) });

/** auth's public routes as the same zod schemas that validate them (served under {base_url}). */
export const AUTH_ROUTES: RouteDoc[] = [
  OPENAPI_ROUTE,
  {
    method: 'get',
    path: '/',
    summary: 'Platform status',
    tags: ['status'],
    security: [],
    responses: {
      200: ok('healthy', PlatformStatusSchema),
      503: ok('degraded: a dependency fails', PlatformStatusSchema),
    },
  },
  {
    method: 'get',
    path: '/oidc/jwks',
    summary: 'Public signing keys (JWKS)',
    description:
      'Every key that may verify a live session JWT: the pending, active and retired-but-kept ones.',
    tags: ['sessions'],
    security: [],
    responses: { 200: ok('JWKS', JwksSchema) },
  },
  {
    method: 'post',
    path: '/v2/login/anonymous',
    summary: 'Anonymous session (spec 2.4)',
    tags: ['sessions'],
    security: [],
    responses: {
      200: ok('a new anonymous user and session', AnonymousSessionSchema),
      429: error('RATE_LIMITED: too many anonymous logins from this address'),
    },
  },
  {
    method: 'post',
    path: '/v2/signup',
    summary: 'Create a password account (an anonymous caller keeps its user id, organizations and keys)',
    tags: ['accounts'],
    security: [],
    body: SignupBody,
    responses: {
      201: ok('the account and its first session; a verification link is mailed', UserSessionSchema),
      ...invalid,
      409: error('SignupRefused: this email cannot be used; AlreadySignedUp: the caller has an account'),
      429: error('RATE_LIMITED: too many account requests from this address'),
    },
  },
  {
    method: 'post',
    path: '/v2/login',
    summary: 'Sign in with email and password',
    tags: ['accounts'],
    security: [],
    body: LoginBody,
    responses: {
      200: ok('a new session; also set as the access-token and csrf-token cookies', UserSessionSchema),
      ...invalid,
      401: error('InvalidCredentials: the email or the password is wrong (never says which)'),
      429: error('RATE_LIMITED: too many failed attempts for this account or from this address'),
    },
  },
  {
    method: 'post',
    path: '/v2/login/refresh',
    summary: 'Exchange a refresh token for a new session JWT and refresh token',
    tags: ['accounts'],
    security: [],
    body: RefreshBody,
    responses: {
      200: ok('the same session, renewed', UserSessionSchema),
      ...invalid,
      401: error('InvalidRefreshToken: unknown, expired or spent (a spent one revokes its session)'),
    },
  },
  {
    method: 'post',
    path: '/v2/email/verify',
    summary: 'Confirm an email address with the mailed token',
    tags: ['accounts'],
    security: [],
    body: TokenBody,
    responses: {
      200: ok('verified', z.looseObject({ email: z.string(), emailVerified: z.boolean() })),
      400: error('InvalidToken: unknown, used or expired'),
    },
  },
  {
    method: 'post',
    path: '/v2/email/verification',
    summary: 'Mail a new verification link to the caller',
    tags: ['accounts'],
    security: USER,
    responses: {
      202: ok('sent (false when already verified)', z.looseObject({ sent: z.boolean() })),
      ...denied,
      429: error('RATE_LIMITED'),
    },
  },
  {
    method: 'post',
    path: '/v2/password/forgot',
    summary: 'Mail a password-reset link (the answer never says whether the email has an account)',
    tags: ['accounts'],
    security: [],
    body: EmailBody,
    responses: {
      202: ok('accepted', z.looseObject({ message: z.string() })),
      ...invalid,
      429: error('RATE_LIMITED'),
    },
  },
  {
    method: 'post',
    path: '/v2/password/reset',
    summary: 'Set a new password with the mailed token; every session of the user ends',
    tags: ['accounts'],
    security: [],
    body: ResetPasswordBody,
    responses: { 204: none('changed'), 400: error('InvalidToken, or a too short password') },
  },
  {
    method: 'post',
    path: '/v2/logout',
    summary: 'Revoke the current session',
    tags: ['sessions'],
    security: SESSION,
    responses: { 204: none('revoked'), ...denied },
  },
  {
    method: 'get',
    path: '/v2/me',
    summary: 'The current user',
    tags: ['sessions'],
    security: USER,
    responses: { 200: ok('the user, their memberships and active organization', MeSchema), ...denied },
  },
  {
    method: 'delete',
    path: '/v2/me',
    summary: 'Delete the caller’s account for good',
    description:
      'Needs a session signed in on the platform (not an access token, a key or an application’s token) and, once more, the password (and `mfaCode` when a second factor is enrolled); an account without a password needs a sign-in of the last 10 minutes; an anonymous user needs nothing more. Every session, access token and OpenID Connect grant of the person ends at once on every edge; their memberships, second factor, password, external identities and mailed links go; organizations they are the only member of are deleted with it; the email is free for a new account at once.',
    tags: ['sessions'],
    security: SESSION,
    body: DeleteAccountBody,
    responses: {
      204: none('deleted; the session cookies are cleared'),
      ...invalid,
      401: denied[401],
      403: error(
        'ReauthenticationRequired (`details.needs`: password, mfaCode, recentSignIn), InvalidCredentials, InvalidMfaCode, PlatformSessionRequired, or an access token or key',
      ),
      409: error(
        'LastOwner: the caller is the last owner of organizations or workspaces other people belong to (`details.organizations`, `details.workspaces`); AccountBeingDeleted',
      ),
      429: error('RATE_LIMITED: too many wrong passwords or codes for this account or from this address'),
    },
  },
  {
    method: 'put',
    path: '/v2/user/active-org',
    summary: 'Switch the active organization',
    tags: ['sessions'],
    security: USER,
    body: ActiveOrgBody,
    responses: { 200: ok('the /v2/me document', MeSchema), ...invalid, ...denied },
  },
  {
    method: 'post',
    path: '/v2/user/accessTokens',
    summary: 'Create a user access token (spec 2.6)',
    tags: ['access tokens'],
    security: SESSION,
    body: CreateAccessTokenBody,
    responses: {
      201: ok('the token, shown once', CreatedAccessTokenSchema),
      ...invalid,
      ...denied,
      409: error('TooManyAccessTokens'),
    },
  },
  {
    method: 'get',
    path: '/v2/user/accessTokens',
    summary: 'List access tokens',
    tags: ['access tokens'],
    security: SESSION,
    responses: {
      200: list('live tokens, newest first, without secrets', AccessTokenSummarySchema),
      ...denied,
    },
  },
  {
    method: 'delete',
    path: '/v2/user/accessTokens/:id',
    summary: 'Revoke an access token',
    tags: ['access tokens'],
    security: USER,
    responses: { 204: none('revoked'), ...denied, ...unknown('token') },
  },
  {
    method: 'post',
    path: '/v2/orgs',
    summary: 'Create an organization',
    tags: ['organizations'],
    security: USER,
    body: CreateOrgBody,
    responses: {
      201: ok('created; the caller is its owner', OrgSchema),
      ...invalid,
      ...denied,
      409: error(
        'OrgSlugTaken: in use, or (`details.reason: "deleted"`) held by a deleted organization for good; TooManyOrganizations: the caller made ORGANIZATIONS_PER_USER_LIMIT already',
      ),
    },
  },
  {
    method: 'get',
    path: '/v2/orgs',
    summary: 'The caller’s organizations',
    tags: ['organizations'],
    security: USER,
    responses: { 200: list('organizations by slug', OrgSchema), ...denied },
  },
  {
    method: 'get',
    path: '/v2/orgs/:orgSlug',
    summary: 'One organization',
    tags: ['organizations'],
    security: ANY,
    responses: { 200: ok('organization', OrgDetailSchema), ...denied, ...unknown('organization') },
  },
  {
    method: 'patch',
    path: '/v2/orgs/:orgSlug',
    summary: 'Rename an organization (owners; the slug never changes)',
    tags: ['organizations'],
    security: USER,
    body: RenameOrgBody,
    responses: {
      200: ok('renamed', OrgDetailSchema),
      ...invalid,
      401: denied[401],
      403: error('OwnerOnly: only an owner may rename it; NotAMember; MfaRequired'),
      ...unknown('or deleted organization'),
    },
  },
  {
    method: 'delete',
    path: '/v2/orgs/:orgSlug',
    summary: 'Delete an organization (owners)',
    description:
      'Revokes its API keys, deletes its workspaces (their keys revoked), memberships and custom roles, and clears the members’ active organization where it was this one; every edge drops them at once, and llm-quota stops serving its settings. The slug is reserved for good: no organization can be made with it again. Usage counted under it is kept.',
    tags: ['organizations'],
    security: USER,
    responses: {
      204: none('deleted'),
      401: denied[401],
      403: error('OwnerOnly: only an owner may delete it; NotAMember; MfaRequired'),
      ...unknown('or deleted organization'),
    },
  },
  {
    method: 'get',
    path: '/v2/orgs/:orgSlug/security',
    summary: 'The organization’s security policy',
    tags: ['organizations'],
    security: ANY,
    responses: { 200: ok('the policy', OrgSecuritySchema), ...denied, ...unknown('organization') },
  },
  {
    method: 'put',
    path: '/v2/orgs/:orgSlug/security',
    summary: 'Require two-step verification of the members (members:manage)',
    tags: ['organizations'],
    security: USER,
    body: OrgSecurityBody,
    responses: {
      200: ok('the policy', OrgSecuritySchema),
      ...invalid,
      ...denied,
      ...unknown('organization'),
    },
  },
  {
    method: 'get',
    path: '/v2/orgs/:orgSlug/members',
    summary: 'Members',
    tags: ['organizations'],
    security: ANY,
    responses: { 200: list('members', OrgMemberSchema), ...denied, ...unknown('organization') },
  },
  {
    method: 'post',
    path: '/v2/orgs/:orgSlug/members',
    summary: 'Add a member or change a role',
    tags: ['organizations'],
    security: ANY,
    body: AddMemberBody,
    responses: {
      200: ok('role changed', OrgMemberSchema),
      201: ok('added', OrgMemberSchema),
      ...invalid,
      ...denied,
      ...unknown('organization or user'),
      409: error(
        'LastOwner, AlreadyAMember, or ConcurrentUpdate (the role was changed meanwhile: try again)',
      ),
    },
  },
  {
    method: 'delete',
    path: '/v2/orgs/:orgSlug/members/:userId',
    summary: 'Remove a member',
    tags: ['organizations'],
    security: ANY,
    responses: {
      204: none('removed'),
      ...denied,
      ...unknown('organization or member'),
      409: error('LastOwner, or ConcurrentUpdate (the role was changed meanwhile: try again)'),
    },
  },
  {
    method: 'get',
    path: '/v2/orgs/:orgSlug/roles',
    summary: 'Roles',
    tags: ['roles'],
    security: ANY,
    responses: {
      200: list('built-in roles, then custom ones', RoleSchema),
      ...denied,
      ...unknown('organization'),
    },
  },
  {
    method: 'put',
    path: '/v2/orgs/:orgSlug/roles/:role',
    summary: 'Create or replace a custom role',
    tags: ['roles'],
    security: ANY,
    body: PutRoleBody,
    responses: {
      200: ok('replaced', RoleSchema),
      201: ok('created', RoleSchema),
      ...invalid,
      ...denied,
      ...unknown('organization'),
    },
  },
  {
    method: 'delete',
    path: '/v2/orgs/:orgSlug/roles/:role',
    summary: 'Delete a custom role',
    tags: ['roles'],
    security: ANY,
    responses: {
      204: none('deleted'),
      ...denied,
      ...unknown('organization or role'),
      409: error('RoleInUse'),
    },
  },
  {
    method: 'post',
    path: '/v2/orgs/:orgSlug/apikeys',
    summary: 'Create an organization API key',
    tags: ['organization API keys'],
    security: USER,
    body: CreateOrgApiKeyBody,
    responses: {
      201: ok('the key, shown once', CreatedOrgApiKeySchema),
      ...invalid,
      ...denied,
      ...unknown('organization'),
    },
  },
  {
    method: 'get',
    path: '/v2/orgs/:orgSlug/apikeys',
    summary: 'Organization API keys',
    tags: ['organization API keys'],
    security: ANY,
    responses: {
      200: list('live keys, newest first, without secrets', OrgApiKeySchema),
      ...denied,
      ...unknown('organization'),
    },
  },
  {
    method: 'delete',
    path: '/v2/orgs/:orgSlug/apikeys/:id',
    summary: 'Revoke an organization API key',
    tags: ['organization API keys'],
    security: ANY,
    responses: { 204: none('revoked'), ...denied, ...unknown('organization or key') },
  },
  {
    method: 'post',
    path: '/v2/workspaces',
    summary: 'Create a workspace in the active organization',
    tags: ['workspaces'],
    security: ANY,
    body: CreateWorkspaceBody,
    responses: {
      201: ok('created; a user creator is its owner', WorkspaceSchema),
      400: error('invalid body, or NO_ORG_CONTEXT'),
      ...denied,
    },
  },
  {
    method: 'get',
    path: '/v2/workspaces',
    summary: 'Readable workspaces of the active organization',
    tags: ['workspaces'],
    security: ANY,
    responses: { 200: list('workspaces, oldest first', WorkspaceSchema), ...denied },
  },
  {
    method: 'get',
    path: '/v2/workspaces/:id',
    summary: 'One workspace',
    tags: ['workspaces'],
    security: ANY,
    responses: { 200: ok('workspace', WorkspaceSchema), ...denied, ...unknown('workspace') },
  },
  {
    method: 'patch',
    path: '/v2/workspaces/:id',
    summary: 'Rename a workspace',
    tags: ['workspaces'],
    security: ANY,
    body: UpdateWorkspaceBody,
    responses: {
      200: ok('renamed', WorkspaceSchema),
      ...invalid,
      ...denied,
      ...unknown('workspace'),
    },
  },
  {
    method: 'delete',
    path: '/v2/workspaces/:id',
    summary: 'Delete a workspace',
    tags: ['workspaces'],
    security: ANY,
    responses: { 204: none('deleted, with its members and keys'), ...denied, ...unknown('workspace') },
  },
  {
    method: 'get',
    path: '/v2/workspaces/:id/members',
    summary: 'Workspace members',
    tags: ['workspaces'],
    security: ANY,
    responses: { 200: list('members', WorkspaceMemberSchema), ...denied, ...unknown('workspace') },
  },
  {
    method: 'put',
    path: '/v2/workspaces/:id/members/:userId',
    summary: 'Add a workspace member or change their role',
    tags: ['workspaces'],
    security: ANY,
    body: PutWorkspaceMemberBody,
    responses: {
      200: ok('changed', WorkspaceMemberSchema),
      201: ok('added', WorkspaceMemberSchema),
      400: error('invalid body, or NotAnOrgMember'),
      ...denied,
      ...unknown('workspace'),
      409: error('LastOwner, or ConcurrentUpdate (the role was changed meanwhile: try again)'),
    },
  },
  {
    method: 'delete',
    path: '/v2/workspaces/:id/members/:userId',
    summary: 'Remove a workspace member',
    tags: ['workspaces'],
    security: ANY,
    responses: {
      204: none('removed'),
      ...denied,
      ...unknown('workspace or member'),
      409: error('LastOwner, or ConcurrentUpdate (the role was changed meanwhile: try again)'),
    },
  },
  {
    method: 'post',
    path: '/v2/workspaces/:id/security/apikeys',
    summary: 'Create a workspace API key (spec 2.7)',
    tags: ['workspace API keys'],
    security: USER,
    body: CreateWorkspaceKeyBody,
    responses: {
      201: ok('the key, shown once', CreatedWorkspaceApiKeySchema),
      ...invalid,
      ...denied,
      ...unknown('workspace'),
    },
  },
  {
    method: 'get',
    path: '/v2/workspaces/:id/security/apikeys',
    summary: 'Workspace API keys',
    tags: ['workspace API keys'],
    security: ANY,
    responses: {
      200: list('live keys, newest first, without secrets', WorkspaceApiKeySchema),
      ...denied,
      ...unknown('workspace'),
    },
  },
  {
    method: 'delete',
    path: '/v2/workspaces/:id/security/apikeys/:keyId',
    summary: 'Revoke a workspace API key',
    tags: ['workspace API keys'],
    security: ANY,
    responses: { 204: none('revoked'), ...denied, ...unknown('workspace or key') },
  },
];

/** The OpenAPI 3.1 document of auth's public routes. */
export function authApiDocument(serverUrl: string): Record<string, unknown> {
  return buildOpenApiDocument({
    title: 'AI platform: authentication, organizations and workspaces',
    version: packageJson.version,
    description:
      'The `{base_url}` root. Errors use the envelope `ErrorEnvelope`; the edge in front may also answer 408, 413, 502, 503 and 504 in it, a body sent as anything but JSON is a 415, and a method the path does not take a 405 with Allow.',
    serverUrl,
    securitySchemes: PLATFORM_SECURITY_SCHEMES,
    routes: AUTH_ROUTES,
  });
}
