import { randomBytes } from 'node:crypto';
import type { Response } from 'express';

/** Escapes text for HTML content and attribute values. */
export function esc(value: unknown): string {
  return String(value ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** A tagged template whose interpolations are escaped unless wrapped in `raw()`. */
export class Raw {
  constructor(readonly html: string) {}
}
export const raw = (html: string): Raw => new Raw(html);
export function html(strings: TemplateStringsArray, ...values: unknown[]): Raw {
  let out = strings[0]!;
  values.forEach((v, i) => {
    const part = Array.isArray(v)
      ? v.map((x) => (x instanceof Raw ? x.html : esc(x))).join('')
      : v instanceof Raw
        ? v.html
        : v === null || v === undefined || v === false
          ? ''
          : esc(v);
    out += part + strings[i + 1]!;
  });
  return new Raw(out);
}

const STYLE = `
:root{color-scheme:light dark;--bg:#f5f6f8;--card:#fff;--fg:#1c2330;--muted:#5b6575;--line:#d8dce3;--field:#767f90;--accent:#2f5bd3;--accent-fg:#fff;--danger:#b42318;--ok:#1f7a3d}
@media (prefers-color-scheme:dark){:root{--bg:#12151b;--card:#1b2029;--fg:#e6e9ef;--muted:#a3adbd;--line:#323a47;--field:#6b7588;--accent:#7a9cff;--accent-fg:#0c1020;--danger:#ff8a80;--ok:#7ddc9a}}
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
header{padding:16px 24px;border-bottom:1px solid var(--line);background:var(--card);display:flex;flex-wrap:wrap;gap:8px 16px;justify-content:space-between;align-items:center}
header .brand{font-weight:700;text-decoration:none;color:var(--fg)}
main{max-width:440px;margin:48px auto;padding:0 16px}main.wide{max-width:760px}
.card{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:28px;box-shadow:0 1px 3px rgba(0,0,0,.06);margin-bottom:24px}
h1{font-size:1.5rem;margin:0 0 8px}h2{font-size:1.15rem;margin:0 0 12px}p.lead{color:var(--muted);margin:0 0 20px}
label{display:block;font-weight:600;margin:14px 0 6px}label .optional{font-weight:400;font-size:.8125rem;color:var(--muted)}
input[type=email],input[type=password],input[type=text]{width:100%;padding:10px 12px;border:1px solid var(--field);border-radius:8px;background:var(--bg);color:var(--fg);font:inherit}
input[aria-invalid=true]{border-color:var(--danger)}
input:focus-visible,textarea:focus-visible,button:focus-visible,a:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.hint{color:var(--muted);font-size:.875rem;margin-top:4px}
button{margin-top:20px;width:100%;padding:11px 16px;border:0;border-radius:8px;background:var(--accent);color:var(--accent-fg);font:inherit;font-weight:600;cursor:pointer}
a.button{display:block;text-align:center;text-decoration:none;margin-top:12px;padding:11px 16px;border-radius:8px;font-weight:600;border:1px solid var(--line);color:var(--accent)}
button.danger{background:var(--danger);color:var(--card)}a.danger{color:var(--danger);font-weight:600}
.card ul:not(.codes){padding-left:1.25em;margin:0 0 16px}.card ul:not(.codes) li{margin:4px 0;overflow-wrap:break-word}
button.secondary{background:transparent;color:var(--accent);border:1px solid var(--line)}button.small{width:auto;margin:0;padding:6px 12px;font-size:.875rem}
.alert{border-radius:8px;padding:10px 12px;margin:0 0 16px;border:1px solid}.alert.error{color:var(--danger);border-color:var(--danger)}.alert.ok{color:var(--ok);border-color:var(--ok)}
.alert p{margin:0}.alert label{margin:10px 0 4px}textarea.secret{display:block;width:100%;padding:8px 10px;border:1px solid var(--field);border-radius:8px;color:var(--fg);font-size:.875rem;resize:none;field-sizing:content}
.links{margin-top:18px;font-size:.925rem;display:flex;justify-content:space-between;gap:12px;flex-wrap:wrap}a{color:var(--accent)}
table{width:100%;border-collapse:collapse;font-size:.925rem}th,td{text-align:left;padding:8px 6px;border-bottom:1px solid var(--line);vertical-align:middle}
code,.secret{font-family:ui-monospace,monospace;overflow-wrap:anywhere;background:var(--bg);padding:2px 6px;border-radius:6px}
.row{display:flex;flex-wrap:wrap;gap:8px 12px;align-items:flex-start}.row>*{flex:1 1 10rem;min-width:0}.row>button{flex:0 0 auto;align-self:stretch}
form button.small{margin-top:14px}td button.small,.row button.small,header button.small{margin-top:0}
.card>h2:not(:first-child){margin-top:24px}td.empty{color:var(--muted)}
header form.nav{display:flex;flex-wrap:wrap;gap:8px 12px;align-items:center;min-width:0;color:var(--muted);font-size:.925rem}
header form.nav span{overflow-wrap:anywhere}
.qr svg{width:200px;height:200px;display:block;margin:8px 0;border-radius:8px}
ul.codes{columns:2 9em;padding-left:1.2em}ul.codes li{padding:2px 0}ul.codes code{white-space:nowrap;word-break:normal}
@media (max-width:560px){
main{margin:24px auto;padding:0 12px}.card{padding:20px}header{padding:12px 16px}
table.stack thead{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
table.stack,table.stack tbody,table.stack tr,table.stack td{display:block}
table.stack tr{padding:10px 0;border-bottom:1px solid var(--line)}
table.stack td{display:flex;gap:8px;border:0;padding:2px 0;overflow-wrap:anywhere}
table.stack td[data-label]::before{content:attr(data-label) / "";flex:0 0 6.5rem;color:var(--muted);font-weight:600}
table.stack td.action{padding-top:8px}
}
`;

export interface PageSpec {
  title: string;
  body: Raw;
  status?: number;
  wide?: boolean;
  platformName: string;
  nav?: Raw;
  /** origins a form may end up at through redirects (an OAuth client's callback) */
  formTargets?: string[];
}

/**
 * Every page: one layout, no script, a strict Content-Security-Policy (styles by nonce; forms post only
 * to this origin; no framing), and no caching of pages that may hold secrets.
 */
export function renderPage(page: PageSpec): { headers: Record<string, string>; html: string } {
  const nonce = randomBytes(16).toString('base64');
  const formAction = ["'self'", ...(page.formTargets ?? [])].join(' ');
  // A page showing an error says so in its title: the title is what a screen reader reads first.
  const title = `${page.body.html.includes(`id="${FORM_ERROR_ID}"`) ? 'Error: ' : ''}${page.title}`;
  return {
    headers: {
      'content-security-policy': `default-src 'none'; style-src 'nonce-${nonce}'; img-src 'self' data:; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'content-type': 'text/html; charset=utf-8',
    },
    html: `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><link rel="icon" href="data:,"><title>${esc(title)} · ${esc(page.platformName)}</title><style nonce="${nonce}">${STYLE}</style></head><body><header><a class="brand" href="/account">${esc(page.platformName)}</a>${page.nav?.html ?? ''}</header><main${page.wide ? ' class="wide"' : ''}>${page.body.html}</main></body></html>`,
  };
}

export function sendPage(res: Response, page: PageSpec): void {
  const { headers, html: body } = renderPage(page);
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.status(page.status ?? 200).send(body);
}

/** The id of a page's error message, for the fields it is about (`aria-describedby`). */
export const FORM_ERROR_ID = 'form-error';

/** `message`: text, or markup made with `html` (an error's links to what to do) */
export const alert = (kind: 'error' | 'ok', message: string | Raw | null | undefined): Raw =>
  !message
    ? raw('')
    : kind === 'error'
      ? html`<div class="alert error" role="alert" id="${FORM_ERROR_ID}">${message}</div>`
      : html`<div class="alert ok" role="status">${message}</div>`;

/**
 * The attributes that tie a field to the page's error: read with the field, marked invalid when the error
 * is about its value, and focused on load so that a person lands where the correction is made. Without an
 * error, only `describedBy` (the field's hint).
 */
export function errorField(
  error: string | Raw | null | undefined,
  options: { describedBy?: string; invalid?: boolean } = {},
): Raw {
  const { describedBy = '', invalid = true } = options;
  if (!error) return describedBy ? raw(` aria-describedby="${esc(describedBy)}"`) : raw('');
  const ids = esc([FORM_ERROR_ID, describedBy].filter(Boolean).join(' '));
  return raw(`${invalid ? ' aria-invalid="true"' : ''} aria-describedby="${ids}" autofocus`);
}
