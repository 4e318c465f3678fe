import { createHash } from 'node:crypto';
import { brotliCompressSync, gzipSync, constants as zlib } from 'node:zlib';
import { AppError, forwardedViewOf } from '@platform/kernel';
import type { Request, Router } from 'express';
import type { LegacyDomain } from '../domain';
import { DEMO_PAGE_CSP, demoPage } from '../widget/demo-page';
import { WIDGET_SCRIPT } from '../widget/script';
import { allowOrigin } from './cors';
import { bearerToken } from './credentials';

const SCRIPT_ETAG = `"${createHash('sha256').update(WIDGET_SCRIPT).digest('base64url').slice(0, 27)}"`;
/**
 * Sites embed the script by a fixed address, so it cannot be cached forever: a day fresh, then a week
 * served stale while the browser revalidates it with its ETag (a 304 costs a few bytes).
 */
const SCRIPT_CACHE = 'public, max-age=86400, stale-while-revalidate=604800';

/** The script compressed once at start (18 KB → about 5 KB): brotli where the browser takes it, else gzip. */
const SCRIPT_ENCODED = {
  br: brotliCompressSync(WIDGET_SCRIPT, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } }),
  gzip: gzipSync(WIDGET_SCRIPT, { level: 9 }),
};

/** The best encoding the request accepts (`q=0` refuses one), or none. */
function scriptEncoding(req: Request): keyof typeof SCRIPT_ENCODED | undefined {
  const accepted = new Set(
    (req.headers['accept-encoding'] ?? '')
      .split(',')
      .map((part) => part.trim().toLowerCase().split(';'))
      .filter(([, q]) => !q || !/^\s*q\s*=\s*0(?:\.0*)?\s*$/.test(q))
      .map(([name]) => name),
  );
  if (accepted.has('br')) return 'br';
  if (accepted.has('gzip')) return 'gzip';
  return undefined;
}

/**
 * The script's address as the browser sees it (through the edge: its host, protocol and root): in full, for the line
 * a site copies, and from the root of the origin, for the demo page's own tag (relative to the page, it would miss
 * at `/v1/widget-demo/`).
 */
function scriptAddress(req: Request): { url: string; path: string } {
  const view = forwardedViewOf(req);
  const path = `${view.prefix}/v1/widget.js`;
  return { url: `${view.protocol}://${view.host ?? 'localhost'}${path}`, path };
}

/** The web chat: its script, the assistant's public face for it, and a demo page (issue 12 item 5). */
export function mountWidgetRoutes(router: Router, { assistants }: LegacyDomain): void {
  router.get('/v1/widget.js', (req, res) => {
    const encoding = scriptEncoding(req);
    // each encoding is its own representation, with its own validator
    const etag = encoding ? `${SCRIPT_ETAG.slice(0, -1)}-${encoding}"` : SCRIPT_ETAG;
    res.setHeader('cache-control', SCRIPT_CACHE);
    res.setHeader('etag', etag);
    res.setHeader('vary', 'accept-encoding');
    // Any site may load the script; what it may call is decided by the assistant's allowedOrigins.
    res.setHeader('cross-origin-resource-policy', 'cross-origin');
    // A site may load it with `crossorigin` (e.g. for Subresource Integrity): a public file, readable by all.
    res.setHeader('access-control-allow-origin', '*');
    res.setHeader('x-content-type-options', 'nosniff');
    if (req.headers['if-none-match']?.split(',').some((tag) => tag.trim() === etag)) {
      res.status(304).end();
      return;
    }
    res.type('text/javascript; charset=utf-8');
    if (!encoding) {
      res.send(WIDGET_SCRIPT);
      return;
    }
    res.setHeader('content-encoding', encoding);
    res.send(SCRIPT_ENCODED[encoding]);
  });

  router.get('/v1/widget/config', async (req, res) => {
    const assistant = await assistants.byClientToken(bearerToken(req));
    allowOrigin(req, res, assistant);
    res.setHeader('cache-control', 'no-store');
    res.json({ name: assistant.name, lang: assistant.lang, photo: assistant.photo });
  });

  router.get('/v1/widget-demo', async (req, res) => {
    const token =
      typeof req.query.token === 'string' && req.query.token.trim() ? req.query.token.trim() : undefined;
    // a page of the platform's origin showing a developer's content: only for a real assistant, never indexed
    const unknown =
      token !== undefined &&
      !(await assistants.byClientToken(token).catch((err: unknown) => {
        // only a token no assistant has; a store that fails is the envelope's 503, not a 404 page
        if (err instanceof AppError && err.kind === 'unauthenticated') return null;
        throw err;
      }));
    res.setHeader('content-security-policy', DEMO_PAGE_CSP);
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('referrer-policy', 'no-referrer');
    res.setHeader('cache-control', 'no-store');
    res.setHeader('x-robots-tag', 'noindex, nofollow');
    res
      .status(unknown ? 404 : token ? 200 : 400)
      .type('text/html; charset=utf-8')
      .send(demoPage(token, scriptAddress(req), unknown));
  });
}
