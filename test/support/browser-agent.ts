/**
 * A minimal browser for HTTP-level flows: a cookie jar per host (names only), redirects followed by
 * hand, HTML form fields read from pages. By default it stops when a redirect leaves the first origin
 * (an OAuth callback); with `stopAt` it follows every origin and stops only at those URL prefixes.
 */
export class BrowserAgent {
  private readonly jars = new Map<string, Map<string, string>>();

  constructor(
    private readonly origin: string,
    private readonly options: { stopAt?: string[] } = {},
  ) {}

  /** the cookies of the first origin's host */
  get cookies(): Map<string, string> {
    return this.jar(new URL(this.origin).host);
  }

  private jar(host: string): Map<string, string> {
    const jar = this.jars.get(host) ?? new Map<string, string>();
    this.jars.set(host, jar);
    return jar;
  }

  private keep(host: string, res: Response): void {
    const jar = this.jar(host);
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const i = pair!.indexOf('=');
      const name = pair!.slice(0, i).trim();
      const value = pair!.slice(i + 1);
      const expired = attrs.some((a) => /expires=Thu, 01 Jan 1970/i.test(a)) || value === '';
      if (expired) jar.delete(name);
      else jar.set(name, value);
    }
  }

  private stops(next: URL): boolean {
    if (this.options.stopAt) return this.options.stopAt.some((p) => next.toString().startsWith(p));
    return next.origin !== new URL(this.origin).origin;
  }

  /** Requests `url` and follows redirects; answers the last response and its URL. */
  async go(
    url: string,
    init: { method?: string; form?: Record<string, string> } = {},
  ): Promise<{ status: number; url: string; text: string; headers: Headers }> {
    let current = new URL(url, this.origin);
    let method = init.method ?? 'GET';
    let body: string | undefined = init.form ? new URLSearchParams(init.form).toString() : undefined;
    for (let hops = 0; hops < 20; hops++) {
      const jar = this.jar(current.host);
      const res = await fetch(current, {
        method,
        redirect: 'manual',
        headers: {
          cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
          ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        body,
      });
      this.keep(current.host, res);
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        const next = new URL(location, current);
        if (this.stops(next))
          return { status: res.status, url: next.toString(), text: '', headers: res.headers };
        current = next;
        method = 'GET';
        body = undefined;
        continue;
      }
      return { status: res.status, url: current.toString(), text: await res.text(), headers: res.headers };
    }
    throw new Error('too many redirects');
  }
}

/** The hidden and named input values of the form whose action is `action` in an HTML page. */
export function formFields(html: string, action: string): Record<string, string> {
  const start = html.indexOf(`action="${action}"`);
  if (start < 0) throw new Error(`no form posting to ${action} in ${html.slice(0, 3000)}`);
  const end = html.indexOf('</form>', start);
  const fields: Record<string, string> = {};
  for (const m of html.slice(start, end).matchAll(/<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"/g)) {
    fields[m[1]!] = m[2]!.replace(/&amp;/g, '&');
  }
  return fields;
}
