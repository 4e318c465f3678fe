import { createHash } from 'node:crypto';

const PAGE_STYLE = `
body{margin:0;font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2330;background:#f5f6fb}
main{max-width:720px;margin:0 auto;padding:56px 24px 112px}
h1{font-size:30px;margin:0 0 8px}
p{color:#454b5c}
code{background:#e9ebf5;padding:2px 6px;border-radius:6px;font-size:14px;overflow-wrap:anywhere}
pre{background:#1f2330;color:#e9ebf5;padding:16px;border-radius:12px;font-size:13px;white-space:pre-wrap;overflow-wrap:anywhere}
.note{background:#fff7e6;border:1px solid #f5d9a3;padding:12px 16px;border-radius:10px}
`;

/** The page's own stylesheet is allowed by its hash, so the policy needs no 'unsafe-inline'. */
const STYLE_HASH = createHash('sha256').update(PAGE_STYLE).digest('base64');

/**
 * The demo page's policy: only its own scripts (widget.js), its own API calls, images from https (the
 * assistant's photo and card images), its own inline style by hash; no framing, no forms, no base.
 */
export const DEMO_PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "connect-src 'self'",
  "img-src 'self' https: data:",
  `style-src 'sha256-${STYLE_HASH}'`,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const escapeHtml = (value: string) =>
  value.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );

/**
 * `GET /v1/widget-demo?token=<client token>`: a page showing the web chat of that assistant; without a token, or
 * with one no assistant has (`unknown`), a page saying what to give.
 */
export function demoPage(
  token: string | undefined,
  script: { url: string; path: string },
  unknown = false,
): string {
  const body = unknown
    ? `<h1>Web chat demo</h1>
<p class="note">No assistant has this client token. Check it with <code>GET /v1/bots</code> and the developer token.</p>`
    : token
      ? `<h1>Web chat demo</h1>
<p>This page embeds the assistant's web chat. Open it with the button at the bottom right, or press Tab to reach it.</p>
<p>To put the same chat on your site, add this line to your pages and allow your site's origin in the assistant's <code>allowedOrigins</code> (<code>PATCH /v1/bots</code> with the developer token):</p>
<pre>&lt;script src="${escapeHtml(script.url)}" data-token="${escapeHtml(token)}" defer&gt;&lt;/script&gt;</pre>
<script src="${escapeHtml(script.path)}" data-token="${escapeHtml(token)}" defer></script>`
      : `<h1>Web chat demo</h1>
<p class="note">Give an assistant's client token in the address: <code>/v1/widget-demo?token=CLIENT_TOKEN</code>.</p>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>Web chat demo</title>
<style>${PAGE_STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}
