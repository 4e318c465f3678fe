import type { Request, RequestHandler } from 'express';
import { z } from 'zod';
import { forwardedViewOf } from './forwarding';
import type { RouteDoc } from './openapi';

/** A host as it may appear in a URL authority: a name or IPv4 address, or a bracketed IPv6 address, and a port. */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/**
 * The public URL of the root a request came through, for an OpenAPI document's `servers`.
 * Scheme, host and the path prefix a proxy stripped come from `forwardedViewOf` (X-Forwarded-* only
 * from a peer TRUST_PROXY trusts). A host that is
 * not a plain authority gives a relative URL (the prefix, or `/`), which OpenAPI 3.1 resolves against
 * the document's own address.
 */
export function publicRootUrl(req: Request): string {
  const view = forwardedViewOf(req);
  // a plain path or none (forwardedView)
  const prefix = view.prefix;
  const host = view.host;
  if (!host || !HOST.test(host)) return prefix || '/';
  return `${view.protocol}://${host}${prefix}`;
}

/**
 * `GET /openapi.json`: the document is built once (zod to JSON Schema is not free), and each answer
 * only names the server the caller came through. The answer varies with the forwarded headers.
 */
export function openApiHandler(build: (serverUrl: string) => Record<string, unknown>): RequestHandler {
  let doc: Record<string, unknown> | undefined;
  return (req, res) => {
    doc ??= build('/');
    res.setHeader('cache-control', 'public, max-age=300');
    res.setHeader('vary', 'Host, X-Forwarded-Host, X-Forwarded-Proto, X-Forwarded-Prefix');
    res.json({ ...doc, servers: [{ url: publicRootUrl(req) }] });
  };
}

/** The shape of an OpenAPI 3.1 document, as far as the route serving one promises. */
export const OpenApiDocumentSchema = z
  .looseObject({
    openapi: z.string().regex(/^3\.1\.\d+$/),
    info: z.looseObject({ title: z.string(), version: z.string() }),
    servers: z.array(z.looseObject({ url: z.string() })).min(1),
    paths: z.record(z.string(), z.unknown()),
    components: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'OpenApiDocument', description: 'An OpenAPI 3.1 document (JSON Schema 2020-12 dialect)' });

/** The route serving a root's own document, to list among the root's routes. */
export const OPENAPI_ROUTE: RouteDoc = {
  method: 'get',
  path: '/openapi.json',
  summary: 'This OpenAPI 3.1 document',
  description:
    'No credentials needed. `servers` names the root the document was fetched through (X-Forwarded-* from a trusted proxy).',
  tags: ['meta'],
  security: [],
  responses: { 200: { description: 'the document', schema: OpenApiDocumentSchema } },
};
