import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';

/** Throws (or rejects) when its dependency cannot be used right now. */
export type ReadinessCheck = () => Promise<void> | void;

export interface Readiness {
  /** dependencies no request can be served without: a failure makes /readyz answer 503 */
  required?: Record<string, ReadinessCheck>;
  /** dependencies the service degrades without (NATS): reported in /readyz, never failing it */
  reported?: Record<string, ReadinessCheck>;
}

export interface ReadinessReport {
  ready: boolean;
  /** name -> 'ok' or why not */
  checks: Record<string, string>;
  /** reported dependencies that are down: the service answers, degraded */
  degraded: string[];
}

/** A check that has not answered after this long counts as failed (a NATS flush waits for a reconnect). */
export const READINESS_CHECK_TIMEOUT_MS = 2_000;

const bounded = (check: ReadinessCheck, timeoutMs: number) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    Promise.resolve()
      .then(check)
      .then(resolve, reject)
      .finally(() => clearTimeout(timer));
  });

/** Runs every check (concurrently, each bounded in time); ready unless a required one failed. */
export async function checkReadiness(
  readiness: Readiness,
  timeoutMs = READINESS_CHECK_TIMEOUT_MS,
): Promise<ReadinessReport> {
  const checks: Record<string, string> = {};
  const degraded: string[] = [];
  let ready = true;
  const run = async (name: string, check: ReadinessCheck, required: boolean) => {
    try {
      await bounded(check, timeoutMs);
      checks[name] = 'ok';
    } catch (err) {
      checks[name] = err instanceof Error ? err.message : String(err);
      if (required) ready = false;
      else degraded.push(name);
    }
  };
  await Promise.all([
    ...Object.entries(readiness.required ?? {}).map(([n, c]) => run(n, c, true)),
    ...Object.entries(readiness.reported ?? {}).map(([n, c]) => run(n, c, false)),
  ]);
  return { ready, checks, degraded: degraded.sort() };
}

export interface MetricsSource {
  contentType: string;
  metrics(): Promise<string>;
}

export interface AdminOptions {
  /** the service's name, answered by /healthz */
  name: string;
  readiness: Readiness;
  metrics: MetricsSource;
}

const send = (res: ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('cache-control', 'no-store');
  res.end(text);
};

/**
 * The admin listener every service process serves on ADMIN_PORT, apart from its public port:
 * `/healthz` (the process answers), `/readyz` (it can serve requests: required dependencies up,
 * degraded ones named) and `/metrics` (Prometheus). Nothing else; no credentials, so the port must
 * not be exposed beyond the cluster (docs/deployment.md).
 */
export function createAdminHandler(options: AdminOptions): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?', 1)[0]!.replace(/\/+$/, '') || '/';
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return send(res, 405, { error: 'MethodNotAllowed', message: 'GET only', status: 405 });
    }
    if (path === '/healthz') return send(res, 200, { status: 'ok', service: options.name });
    if (path === '/readyz') {
      void checkReadiness(options.readiness).then(
        ({ ready, checks, degraded }) =>
          send(res, ready ? 200 : 503, {
            status: ready ? (degraded.length > 0 ? 'degraded' : 'ready') : 'not_ready',
            service: options.name,
            checks,
            ...(degraded.length > 0 ? { degraded } : {}),
          }),
        () => send(res, 503, { status: 'not_ready', service: options.name }),
      );
      return;
    }
    if (path === '/metrics') {
      void options.metrics.metrics().then(
        (text) => {
          res.setHeader('content-type', options.metrics.contentType);
          res.end(text);
        },
        () => send(res, 500, { error: 'InternalError', message: 'metrics failed', status: 500 }),
      );
      return;
    }
    send(res, 404, { error: 'RouteNotFound', message: `No admin route ${path}`, status: 404 });
  };
}
