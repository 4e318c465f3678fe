import { z } from 'zod';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** One route as documented: the same zod schemas that validate it generate its OpenAPI entry. */
export interface RouteDoc {
  method: HttpMethod;
  /** express-style path (`/v2/orgs/:orgSlug`), relative to the root the document describes */
  path: string;
  summary: string;
  description?: string;
  tags?: string[];
  /** security scheme names, any one of which is accepted; an empty list marks a public route */
  security?: string[];
  body?: z.ZodType;
  /** the body's media type (default `application/json`; `multipart/form-data` for an upload) */
  bodyMediaType?: string;
  query?: z.ZodObject;
  /** request headers that matter to the route (e.g. a legacy session token) */
  headers?: Record<string, { description: string; required?: boolean }>;
  /**
   * by status; a response without schema has no body worth describing. `mediaTypes` are bodies that are not
   * JSON (audio, text), answered instead of (or beside) the JSON `schema`.
   */
  responses: Record<number, { description: string; schema?: z.ZodType; mediaTypes?: string[] }>;
}

export interface ApiDocumentOptions {
  title: string;
  version: string;
  description?: string;
  serverUrl: string;
  securitySchemes?: Record<string, Record<string, unknown>>;
  routes: RouteDoc[];
}

/** The envelope of spec 2.3, as a schema every error response refers to. */
export const ErrorEnvelopeSchema = z
  .object({
    error: z.string(),
    message: z.string(),
    code: z.string().optional(),
    details: z.record(z.string(), z.unknown()).optional(),
    status: z.number().int(),
    retryAfter: z.number().int().optional(),
    requestId: z.string().optional(),
  })
  .loose()
  .meta({ id: 'ErrorEnvelope', description: 'Error envelope (spec 2.3)' });

/**
 * The platform's own credentials (spec 5.1) as security schemes: the edge verifies them alike on every root that
 * takes them, and refuses an API key sent as a Bearer token on each (spec 5.2 rule 1).
 */
export const PLATFORM_SECURITY_SCHEMES = {
  sessionJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
  accessToken: { type: 'http', scheme: 'bearer', description: 'user access token `at:...`' },
  apiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'x-platform-api-key',
    description:
      'workspace API key, or organization API key `iak_{orgSlug}_{uuid}` (never as a Bearer credential)',
  },
};

type JsonSchema = Record<string, unknown>;

/**
 * JSON Schema 2020-12 of a zod schema. Named schemas (`.meta({ id })`) come back under `$defs`; they
 * are hoisted into `components.schemas` so that references resolve from the document's root.
 */
function toSchema(
  schema: z.ZodType,
  io: 'input' | 'output',
  components: Record<string, unknown>,
): JsonSchema {
  const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as JsonSchema;
  delete json.$schema;
  const defs = (json.$defs ?? {}) as Record<string, unknown>;
  delete json.$defs;
  const rewrite = (value: unknown) =>
    JSON.parse(JSON.stringify(value).replaceAll('"#/$defs/', '"#/components/schemas/')) as JsonSchema;
  for (const [name, def] of Object.entries(defs)) components[name] = rewrite(def);
  return rewrite(json);
}

const pathParams = (path: string) => [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);

/** Builds an OpenAPI 3.1 document (JSON Schema 2020-12 dialect) from route descriptions. */
export function buildOpenApiDocument(options: ApiDocumentOptions): Record<string, unknown> {
  const schemas: Record<string, unknown> = {};
  const toSchemaIn = (schema: z.ZodType, io: 'input' | 'output') => toSchema(schema, io, schemas);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of options.routes) {
    const openApiPath = route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const parameters: unknown[] = pathParams(route.path).map((name) => ({
      name,
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    if (route.query) {
      const shape = route.query.shape as Record<string, z.ZodType>;
      for (const [name, schema] of Object.entries(shape)) {
        parameters.push({
          name,
          in: 'query',
          required: !schema.safeParse(undefined).success,
          schema: toSchemaIn(schema, 'input'),
        });
      }
    }
    for (const [name, header] of Object.entries(route.headers ?? {})) {
      parameters.push({
        name,
        in: 'header',
        required: header.required ?? false,
        description: header.description,
        schema: { type: 'string' },
      });
    }
    const responses: Record<string, unknown> = {};
    for (const [status, response] of Object.entries(route.responses)) {
      const content: Record<string, unknown> = {};
      if (response.schema) content['application/json'] = { schema: toSchemaIn(response.schema, 'output') };
      // text is a string; any other body (audio) is bytes, which OpenAPI 3.1 describes with no schema
      for (const type of response.mediaTypes ?? [])
        content[type] = type.startsWith('text/') ? { schema: { type: 'string' } } : {};
      responses[status] = {
        description: response.description,
        ...(Object.keys(content).length ? { content } : {}),
      };
    }
    paths[openApiPath] ??= {};
    paths[openApiPath]![route.method] = {
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      ...(route.tags ? { tags: route.tags } : {}),
      ...(route.security ? { security: route.security.map((name) => ({ [name]: [] })) } : {}),
      ...(parameters.length ? { parameters } : {}),
      ...(route.body
        ? {
            requestBody: {
              required: true,
              content: {
                [route.bodyMediaType ?? 'application/json']: { schema: toSchemaIn(route.body, 'input') },
              },
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: options.title,
      version: options.version,
      ...(options.description ? { description: options.description } : {}),
    },
    servers: [{ url: options.serverUrl }],
    paths,
    components: { securitySchemes: options.securitySchemes ?? {}, schemas },
  };
}

type RouterLayer = {
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: RouterLayer[] };
};

/**
 * Every route an express app mounts, as `method path` (nested routers included), so a test can hold a
 * service's OpenAPI routes equal to what it really serves. Takes the app or a service's `handler`
 * (a listener with lean routes names its app in `expressApp`). The service app's 405 answers (`all`
 * routes) are not routes of their own.
 */
export function mountedRoutes(handler: unknown): string[] {
  const app = (handler as { expressApp?: unknown }).expressApp ?? handler;
  const mounted: string[] = [];
  const walk = (stack: RouterLayer[]) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const m of Object.keys(layer.route.methods)) {
          if (m !== '_all') mounted.push(`${m} ${layer.route.path}`);
        }
      } else if (layer.handle?.stack) walk(layer.handle.stack);
    }
  };
  walk((app as { router: { stack: RouterLayer[] } }).router.stack);
  return mounted;
}
