import { buildOpenApiDocument, ErrorEnvelopeSchema, OPENAPI_ROUTE, type RouteDoc } from '@platform/kernel';
import { z } from 'zod';
import packageJson from '../package.json';
import { listQuery, NEXT_AFTER_HEADER } from './routes/lists';
import { MessagesErrorSchema } from './routes/messages';
import {
  AccessTokenRecordSchema,
  AssistantSchema,
  AssistantWithTrainingSchema,
  accessTokenBody,
  createBotBody,
  credentialsBody,
  DeletedSchema,
  EntitySchema,
  entityBody,
  entityPatchBody,
  IntentSchema,
  intentBody,
  LoggedOutSchema,
  loginBody,
  MessageReplySchema,
  messageBody,
  RevokedAccessTokenSchema,
  SessionGrantSchema,
  updateBotBody,
  WidgetConfigSchema,
} from './routes/schemas';

const ACCOUNT = ['legacySession', 'legacyAccessToken'];
const DEVELOPER = ['developerToken'];
const CLIENT = ['clientToken'];
const error = (description: string) => ({ description, schema: ErrorEnvelopeSchema });
const ok = (description: string, schema: z.ZodType) => ({ description, schema });
const invalid = { 400: error('invalid body: `details.issues` names the fields') };
const account = { 401: error('missing, unknown, expired or revoked session or access token') };
const developer = { 401: error('missing or unknown developer token') };
/** Answered by the edge once legacy v1 is retired (spec 9.8), with `migration` information. */
const retired = { 410: error('ApiVersionRetired: v1 is retired; the envelope carries `migration`') };
/** The lists' paging (an addition): opt-in, the body stays the list of spec 4.3. */
const PAGING = `Without \`limit\` or \`after\`, the whole list in creation order. With them, one page in id order; while more follow, the \`${NEXT_AFTER_HEADER}\` header holds the \`after\` of the next page.`;
const unknown = (what: string) => ({ 404: error(`unknown ${what}, or another's`) });

/** legacy-agent's routes, as the same zod schemas that validate them (served under {legacy_url}). */
export const LEGACY_ROUTES: RouteDoc[] = [
  OPENAPI_ROUTE,
  {
    method: 'post',
    path: '/v2/auth/signup',
    summary: 'Create an account and open a session',
    tags: ['accounts'],
    security: [],
    body: credentialsBody,
    responses: {
      200: ok('the account and a session token', SessionGrantSchema),
      ...invalid,
      409: error('UsernameTaken (in any letter case)'),
    },
  },
  {
    method: 'post',
    path: '/v2/auth/login',
    summary: 'Open a session',
    tags: ['accounts'],
    security: [],
    body: loginBody,
    responses: {
      200: ok('a new session', SessionGrantSchema),
      ...invalid,
      401: error('InvalidCredentials'),
      429: error('too many failed logins for this username; `retryAfter` says when to retry'),
    },
  },
  {
    method: 'post',
    path: '/v2/auth/logout',
    summary: 'End the session (or access token) used',
    tags: ['accounts'],
    security: ACCOUNT,
    responses: { 200: ok('ended', LoggedOutSchema), ...account },
  },
  {
    method: 'post',
    path: '/v2/auth/accessToken',
    summary: 'Create an access token (spec 4.5)',
    tags: ['accounts'],
    security: ACCOUNT,
    body: accessTokenBody,
    responses: {
      200: ok('the record, with the token in `_session_token` (shown once)', AccessTokenRecordSchema),
      ...invalid,
      ...account,
      403: error('RestrictedToken: a restricted access token cannot create access tokens'),
    },
  },
  {
    method: 'get',
    path: '/v2/auth/accessToken',
    summary: "The account's access tokens",
    tags: ['accounts'],
    security: ACCOUNT,
    responses: {
      200: ok(
        'records, newest first, each token shown by its first characters',
        z.array(AccessTokenRecordSchema),
      ),
      ...account,
    },
  },
  {
    method: 'delete',
    path: '/v2/auth/accessToken/:token',
    summary: 'Revoke an access token, named by its value or its record `_id`',
    tags: ['accounts'],
    security: ACCOUNT,
    responses: {
      200: ok('revoked', RevokedAccessTokenSchema),
      ...account,
      403: error('RestrictedToken: a restricted access token cannot revoke access tokens'),
      404: error('AccessTokenNotFound'),
    },
  },
  {
    method: 'post',
    path: '/v2/bots',
    summary: 'Create an assistant',
    tags: ['assistants'],
    security: ACCOUNT,
    body: createBotBody,
    responses: { 200: ok('the assistant with its tokens', AssistantSchema), ...invalid, ...account },
  },
  {
    method: 'get',
    path: '/v2/bots',
    summary: "The account's assistants",
    tags: ['assistants'],
    security: ACCOUNT,
    responses: { 200: ok('assistants, tokens included', z.array(AssistantSchema)), ...account },
  },
  {
    method: 'get',
    path: '/v2/bots/:id',
    summary: 'One assistant of the account',
    tags: ['assistants'],
    security: ACCOUNT,
    responses: { 200: ok('the assistant', AssistantSchema), ...account, ...unknown('assistant') },
  },
  {
    method: 'delete',
    path: '/v2/bots/:id',
    summary: 'Delete an assistant with its intents, entities, models and conversations',
    tags: ['assistants'],
    security: ACCOUNT,
    responses: { 200: ok('deleted', DeletedSchema), ...account, ...unknown('assistant') },
  },
  {
    method: 'post',
    path: '/v2/bots/:id/developerToken',
    summary: 'Replace the developer token (the old one is refused at once)',
    tags: ['assistants'],
    security: ACCOUNT,
    responses: {
      200: ok('the assistant with its new token', AssistantSchema),
      ...account,
      ...unknown('assistant'),
    },
  },
  {
    method: 'post',
    path: '/v2/bots/:id/clientToken',
    summary: 'Replace the client token (the old one is refused at once)',
    tags: ['assistants'],
    security: ACCOUNT,
    responses: {
      200: ok('the assistant with its new token', AssistantSchema),
      ...account,
      ...unknown('assistant'),
    },
  },
  {
    method: 'get',
    path: '/v1/bots',
    summary: 'The assistant of the developer token (spec 4.3, 2.11)',
    tags: ['v1'],
    security: DEVELOPER,
    responses: {
      200: ok('the assistant and where its training stands', AssistantWithTrainingSchema),
      ...developer,
      ...retired,
    },
  },
  {
    method: 'get',
    path: '/v1/intents',
    summary: 'All intents (spec 4.3)',
    tags: ['v1'],
    security: DEVELOPER,
    description: PAGING,
    query: listQuery,
    responses: {
      200: ok(
        'intents in creation order; one page of them in id order with `limit` or `after`',
        z.array(IntentSchema),
      ),
      400: error('a bad `limit` or `after`: `details.issues` names it'),
      ...developer,
      ...retired,
    },
  },
  {
    method: 'post',
    path: '/v1/intents',
    summary: 'Create an intent (spec 2.9; every field optional)',
    tags: ['v1'],
    security: DEVELOPER,
    body: intentBody,
    responses: {
      200: ok('the intent', IntentSchema),
      ...invalid,
      ...developer,
      409: error('IntentNameTaken or LimitExceeded'),
      ...retired,
    },
  },
  {
    method: 'get',
    path: '/v1/intents/:id',
    summary: 'One intent',
    tags: ['v1'],
    security: DEVELOPER,
    responses: { 200: ok('the intent', IntentSchema), ...developer, ...unknown('intent'), ...retired },
  },
  {
    method: 'post',
    path: '/v1/intents/:id',
    summary: 'Update an intent: fields present replace the stored ones',
    tags: ['v1'],
    security: DEVELOPER,
    body: intentBody,
    responses: {
      200: ok('the updated intent', IntentSchema),
      ...invalid,
      ...developer,
      ...unknown('intent'),
      409: error('IntentNameTaken'),
      ...retired,
    },
  },
  {
    method: 'delete',
    path: '/v1/intents/:id',
    summary: 'Delete an intent',
    tags: ['v1'],
    security: DEVELOPER,
    responses: { 200: ok('deleted', DeletedSchema), ...developer, ...unknown('intent'), ...retired },
  },
  {
    method: 'get',
    path: '/v1/entities',
    summary: 'All entities',
    tags: ['v1'],
    security: DEVELOPER,
    description: PAGING,
    query: listQuery,
    responses: {
      200: ok(
        'entities in creation order; one page of them in id order with `limit` or `after`',
        z.array(EntitySchema),
      ),
      400: error('a bad `limit` or `after`: `details.issues` names it'),
      ...developer,
      ...retired,
    },
  },
  {
    method: 'post',
    path: '/v1/entities',
    summary: 'Create an entity (spec 2.10)',
    description:
      'Both flags are required for every language of `data`, `synonyms` wherever `useSynonyms` is true; values are unique per language, names per assistant, and language keys must be languages of the assistant.',
    tags: ['v1'],
    security: DEVELOPER,
    body: entityBody,
    responses: {
      200: ok('the entity', EntitySchema),
      ...invalid,
      ...developer,
      409: error('EntityNameTaken or LimitExceeded'),
      ...retired,
    },
  },
  {
    method: 'get',
    path: '/v1/entities/:id',
    summary: 'One entity',
    tags: ['v1'],
    security: DEVELOPER,
    responses: { 200: ok('the entity', EntitySchema), ...developer, ...unknown('entity'), ...retired },
  },
  {
    method: 'post',
    path: '/v1/entities/:id',
    summary: 'Update an entity: fields present replace the stored ones; the result must be complete',
    tags: ['v1'],
    security: DEVELOPER,
    body: entityPatchBody,
    responses: {
      200: ok('the updated entity', EntitySchema),
      ...invalid,
      ...developer,
      ...unknown('entity'),
      409: error('EntityNameTaken, or EntityInUse when renaming an entity utterances tag'),
      ...retired,
    },
  },
  {
    method: 'delete',
    path: '/v1/entities/:id',
    summary: 'Delete an entity',
    tags: ['v1'],
    security: DEVELOPER,
    responses: {
      200: ok('deleted', DeletedSchema),
      ...developer,
      ...unknown('entity'),
      409: error('EntityInUse: utterances tag it'),
      ...retired,
    },
  },
  {
    method: 'patch',
    path: '/v1/bots',
    summary: "Change the developer token's assistant (addition)",
    description:
      'Present fields replace the stored ones. `allowedOrigins` lists the web origins whose pages may call `/v1/Messages` from a browser (CORS; none by default); a cross-origin page of any other origin gets no CORS headers and 403.',
    tags: ['v1'],
    security: DEVELOPER,
    body: updateBotBody,
    responses: {
      200: ok('the assistant as it now stands', AssistantSchema),
      ...invalid,
      ...developer,
      ...retired,
    },
  },
  {
    method: 'get',
    path: '/v1/widget.js',
    summary: 'The web chat script (addition)',
    description:
      'Embed with `<script src="{legacy_url}/v1/widget.js" data-token="CLIENT_TOKEN" defer></script>`. JavaScript, cached a day then revalidated by ETag.',
    tags: ['v1'],
    security: [],
    responses: {
      200: { description: 'the script (text/javascript)' },
      304: { description: 'not modified' },
      ...retired,
    },
  },
  {
    method: 'get',
    path: '/v1/widget/config',
    summary: 'What the web chat shows of the assistant: name, language, photo (addition)',
    tags: ['v1'],
    security: CLIENT,
    responses: {
      200: ok('the public face of the assistant', WidgetConfigSchema),
      401: error('missing or unknown client token'),
      403: error("OriginNotAllowed: a browser page whose origin is not in the assistant's `allowedOrigins`"),
      ...retired,
    },
  },
  {
    method: 'get',
    path: '/v1/widget-demo',
    summary: 'A page showing the web chat of the assistant of `token` (addition)',
    tags: ['v1'],
    security: [],
    query: z.object({ token: z.string().meta({ description: "the assistant's client token" }) }),
    responses: {
      200: { description: 'the page (text/html)' },
      400: { description: 'no token: the page says how to give one (text/html)' },
      ...retired,
    },
  },
  {
    method: 'post',
    path: '/v1/Messages',
    summary: 'Send a text or an event to the assistant (spec 4.4)',
    description:
      'Send exactly one of `text` and `event`. Failures keep the legacy reply shape (`MessagesError`): `status.code` mirrors the HTTP status and `status.errorType` names the kind of failure.',
    tags: ['v1'],
    security: CLIENT,
    body: messageBody,
    responses: {
      200: ok('the reply (spec 2.12)', MessageReplySchema),
      400: ok('invalid_request: `status.details.issues` names the fields', MessagesErrorSchema),
      401: ok('unauthorized: missing or unknown client token', MessagesErrorSchema),
      403: ok(
        "forbidden (OriginNotAllowed): a browser page whose origin is not in the assistant's `allowedOrigins`",
        MessagesErrorSchema,
      ),
      409: ok(
        'conflict (ConcurrentUpdate): other messages of the same `userId`, answered at once by other instances, kept changing its conversation; send it again',
        MessagesErrorSchema,
      ),
      413: ok('payload_too_large', MessagesErrorSchema),
      429: ok(
        "rate_limited: the client address or the `userId` sent its window's messages to this assistant (`status.details.scope`); `Retry-After` says when to send again",
        MessagesErrorSchema,
      ),
      500: ok('internal_error', MessagesErrorSchema),
      ...retired,
    },
  },
];

/** The OpenAPI 3.1 document of the legacy virtual-agent API. */
export function legacyApiDocument(serverUrl: string): Record<string, unknown> {
  return buildOpenApiDocument({
    title: 'AI platform: legacy virtual-agent API',
    version: packageJson.version,
    description:
      'The `{legacy_url}` root. v1 is deprecated (spec 9): its answers carry `X-Platform-API-Deprecation`, and after the retirement date the edge answers 410. Errors use the envelope `ErrorEnvelope`, except `/v1/Messages`, which keeps its legacy shape.',
    serverUrl,
    securitySchemes: {
      legacySession: {
        type: 'apiKey',
        in: 'header',
        name: 'X-Legacy-Session-Token',
        description: 'a legacy session token or access token',
      },
      legacyAccessToken: { type: 'http', scheme: 'bearer', description: 'a legacy access token' },
      developerToken: { type: 'http', scheme: 'bearer', description: "the assistant's developer token" },
      clientToken: { type: 'http', scheme: 'bearer', description: "the assistant's client token (public)" },
    },
    routes: LEGACY_ROUTES,
  });
}
