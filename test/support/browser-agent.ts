/**
 * A minimal browser for HTTP-level flows: a cookie jar (names only; one host), manual redirects, and
 * HTML form fields read from pages. It stops when a redirect leaves the platform (an OAuth callback).
 */
export class BrowserAgent {
  readonly cookies = new Map<string, string>();

  constructor(private readonly origin: string) {}

  private cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  private keep(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const i = pair!.indexOf('=');
      const name = pair!.slice(0, i).trim();
      const value = pair!.slice(i + 1);
      const expired = attrs.some((a) => /expires=Thu, 01 Jan 1970/i.test(a)) || value === '';
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  /** Requests `url` and follows redirects inside the platform; answers the last response and its URL. */
  async go(
    url: string,
    init: { method?: string; form?: Record<string, string> } = {},
  ): Promise<{ status: number; url: string; text: string; headers: Headers }> {
    let current = new URL(url, this.origin).toString();
    let method = init.method ?? 'GET';
    let body: string | undefined = init.form ? new URLSearchParams(init.form).toString() : undefined;
    for (let hops = 0; hops < 20; hops++) {
      const res = await fetch(current, {
        method,
        redirect: 'manual',
        headers: {
          cookie: this.cookieHeader(),
          ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        body,
      });
      this.keep(res);
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        const next = new URL(location, current);
        if (next.origin !== this.origin)
          return { status: res.status, url: next.toString(), text: '', headers: res.headers };
        current = next.toString();
        method = 'GET';
        body = undefined;
        continue;
      }
      return { status: res.status, url: current, text: await res.text(), headers: res.headers };
    }
    throw new Error('too many redirects');
  }
}

/** The hidden and named input values of the form whose action is `action` in an HTML page. */
export function formFields(html: string, action: string): Record<string, string> {
  const start = html.indexOf(`action="${action}"`);
  if (start < 0) throw new Error(`no form posting to ${action}`);
  const end = html.indexOf('</form>', start);
  const fields: Record<string, string> = {};
  for (const m of html.slice(start, end).matchAll(/<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"/g)) {
    fields[m[1]!] = m[2]!.replace(/&amp;/g, '&');
  }
  return fields;
}
