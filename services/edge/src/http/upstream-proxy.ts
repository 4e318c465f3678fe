import http, { type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { BadGateway, type Logger, PayloadTooLarge, Unavailable, UpstreamTimeout } from '@platform/kernel';
import httpProxy from 'http-proxy';
import type { UpstreamName } from '../routing/roots';
import { sendError } from './respond';

/** Per-request state the proxy's events need; lives on the request under a symbol. */
export interface ProxyState {
  requestId: string;
  proxyReq: ClientRequest | null;
  timedOut: boolean;
  tooLarge: boolean;
}

const STATE = Symbol('edge.proxyState');
type WithState = IncomingMessage & { [STATE]?: ProxyState };

/** Upstream connection failures that mean "not reachable" (503) rather than "answered badly" (502). */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
]);

/** Hop-by-hop fields of an upstream answer that must not reach the client. */
const RESPONSE_HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'trailer', 'upgrade'];

export interface UpstreamProxyOptions {
  targets: Record<UpstreamName, string>;
  timeoutMs: number;
  maxSockets: number;
  maxFreeSockets: number;
  bodyLimitBytes: number;
  logger: Logger;
}

export interface UpstreamProxy {
  /** streams the request (req.url already rewritten) to the root's service and its answer back */
  forward(req: IncomingMessage, res: ServerResponse, root: UpstreamName, requestId: string): void;
  close(): void;
}

/**
 * The proxy: http-proxy (the engine of http-proxy-middleware) over one keep-alive agent, bodies streamed
 * both ways. Upstream unreachable → 503, broken answer → 502, silent past UPSTREAM_TIMEOUT_MS → 504,
 * each in the envelope. A chunked body is counted as it streams and cut at the body limit with a 413.
 */
export function createUpstreamProxy(options: UpstreamProxyOptions): UpstreamProxy {
  const agent = new http.Agent({
    keepAlive: true,
    maxSockets: options.maxSockets,
    maxFreeSockets: options.maxFreeSockets,
    scheduling: 'lifo',
  });
  const proxy = httpProxy.createProxyServer({
    agent,
    xfwd: true,
    proxyTimeout: options.timeoutMs,
    // The client's Connection field stays on req (for the answer); upstream sockets are always reused.
    headers: { connection: 'keep-alive' },
  });
  const targets = {} as Record<UpstreamName, httpProxy.ServerOptions['target']>;
  for (const [root, url] of Object.entries(options.targets) as Array<[UpstreamName, string]>) {
    const u = new URL(url);
    targets[root] = {
      protocol: u.protocol,
      host: u.hostname,
      hostname: u.hostname,
      port: u.port || '80',
    } as never;
  }
  const optionsByRoot = {} as Record<UpstreamName, httpProxy.ServerOptions>;
  for (const root of Object.keys(targets) as UpstreamName[]) optionsByRoot[root] = { target: targets[root] };

  proxy.on('proxyReq', (proxyReq, req) => {
    const state = (req as WithState)[STATE];
    if (!state) return;
    state.proxyReq = proxyReq;
    proxyReq.once('timeout', () => {
      state.timedOut = true;
    });
    if (state.tooLarge) proxyReq.destroy();
  });

  proxy.on('proxyRes', (proxyRes) => {
    for (const h of RESPONSE_HOP_BY_HOP) if (proxyRes.headers[h] !== undefined) delete proxyRes.headers[h];
  });

  proxy.on('error', (err: NodeJS.ErrnoException, req, res) => {
    const state = (req as WithState)[STATE];
    if (state?.tooLarge) return;
    if (!('writeHead' in res)) {
      res.destroy();
      return;
    }
    if (res.headersSent) {
      // The answer had started: the client sees a cut connection, as it would from the service.
      res.destroy();
      return;
    }
    const requestId = state?.requestId;
    let failure: Error;
    if (state?.timedOut) failure = new UpstreamTimeout();
    else if (err.code && UNREACHABLE.has(err.code))
      failure = new Unavailable('Upstream service is unavailable');
    else failure = new BadGateway();
    options.logger.warn({ err, requestId, url: req.url, code: err.code }, 'upstream request failed');
    sendError(res, failure, requestId);
  });

  // A client that went away while its request was proxied: nothing to answer.
  proxy.on('econnreset', () => undefined);

  const cutOversizedBody = (req: IncomingMessage, res: ServerResponse, state: ProxyState) => {
    state.tooLarge = true;
    req.unpipe();
    state.proxyReq?.destroy();
    if (!res.headersSent) {
      res.setHeader('connection', 'close');
      sendError(
        res,
        new PayloadTooLarge(`Request body exceeds ${options.bodyLimitBytes} bytes`),
        state.requestId,
      );
    } else {
      res.destroy();
    }
  };

  return {
    forward(req, res, root, requestId) {
      const state: ProxyState = { requestId, proxyReq: null, timedOut: false, tooLarge: false };
      (req as WithState)[STATE] = state;
      proxy.web(req, res, optionsByRoot[root]);
      // No Content-Length (chunked): count bytes as they stream; the pipe to upstream is already attached.
      if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] !== undefined) {
        let received = 0;
        const limit = options.bodyLimitBytes;
        const count = (chunk: Buffer) => {
          received += chunk.length;
          if (received > limit && !state.tooLarge) {
            req.off('data', count);
            cutOversizedBody(req, res, state);
          }
        };
        req.on('data', count);
      }
    },
    close() {
      proxy.close();
      agent.destroy();
    },
  };
}
