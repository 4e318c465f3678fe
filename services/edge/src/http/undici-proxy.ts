import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { PassThrough } from 'node:stream';
import type { Logger } from '@platform/kernel';
import {
  BadGateway,
  HEADERS_TIMEOUT_MS,
  PayloadTooLarge,
  RequestTimeout,
  setDeadline,
  Unavailable,
  UpstreamTimeout,
} from '@platform/kernel';
import { type Dispatcher, errors, Pool } from 'undici';
import type { UpstreamName } from '../routing/roots';
import { loggedPath } from './request-target';
import { sendError } from './respond';

export interface UpstreamProxyOptions {
  targets: Record<UpstreamName, string>;
  /** a client's body that stops arriving this long is 408; an upstream silent this long, 504 */
  timeoutMs: number;
  /** roots whose upstream may stay silent longer than `timeoutMs` before its 504 (llm-gateway's completions) */
  answerTimeoutMs?: Partial<Record<UpstreamName, number | undefined>>;
  maxSockets: number;
  logger: Logger;
  /** how the pools resolve the services' names (kernel's `serviceLookup`, shared with the edge's calls to auth) */
  lookup: LookupFunction;
}

export interface UpstreamProxy {
  /** streams the request (req.url and forwarding headers already set) to the root's service and its answer back */
  forward(
    req: IncomingMessage,
    res: ServerResponse,
    root: UpstreamName,
    requestId: string,
    bodyLimitBytes: number,
    /** called when the upstream's final answer arrives, before any of it reaches the client */
    onAnswer?: () => void,
  ): void;
  close(): void;
}

/** Request fields undici sets itself or refuses (hop-by-hop); the body's own framing is re-made. */
const NOT_FORWARDED = [
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'expect',
  'te',
  'trailer',
  'proxy-connection',
];
/** Hop-by-hop fields of an upstream answer that must not reach the client. */
const RESPONSE_HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'trailer',
  'upgrade',
  'transfer-encoding',
]);
/**
 * Fields of the answer the edge owns: the request id and the version lifecycle's (versioning/lifecycle.ts), set
 * before the upstream answers. A service's value for one is dropped, so it neither replaces the edge's nor stands
 * in for it where the edge sets none (a route not deprecated has no `Deprecation`).
 */
const EDGE_OWNED = new Set([
  'x-request-id',
  'x-platform-api-version-used',
  'x-platform-api-deprecation',
  'deprecation',
  'sunset',
]);

/**
 * Longest a pooled connection stays open unused: a service (kernel `listen`) keeps a connection between requests for
 * the 65 s its Keep-Alive field says, but one that has carried no request yet only HEADERS_TIMEOUT_MS, then answers
 * 408 and closes it. undici leaves such connections behind (it reconnects for a request aborted when its client left,
 * then drops the request), and kept them the 65 s: a request sent on one as the service timed it out got that 408.
 */
const IDLE_CONNECTION_MAX_MS = HEADERS_TIMEOUT_MS / 2;

const TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
]);

/** A service silent past its answer timeout on a request expecting 100-continue: answered as undici's timeouts are. */
class UpstreamSilent extends Error {
  readonly code = 'UND_ERR_HEADERS_TIMEOUT';
}

const NOT_ASCII = /[^\t -~]/;
/**
 * Whether node:http sends this request's head as it came. It writes the head of a request expecting 100-continue as a
 * UTF-8 string (Node's `_storeHeader` flushes it at once), so the bytes past ASCII of a field value (read as latin1)
 * would reach the service re-encoded; undici writes them as they came.
 */
const asciiHead = (req: IncomingMessage) =>
  !NOT_ASCII.test(req.url ?? '') &&
  Object.values(req.headers).every((v) => v === undefined || !NOT_ASCII.test(`${v}`));

/** "300 ms", "30 s": how long the edge waited, in an error message */
const duration = (ms: number) => (ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`);

class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`Request body exceeds ${limit} bytes`);
  }
}

/** A streamed request body from which nothing arrived for the timeout while the edge was ready to read it. */
class BodyStalled extends Error {
  constructor(timeoutMs: number) {
    super(`The request body stopped arriving for ${duration(timeoutMs)}`);
  }
}

/**
 * Content-Length bodies up to this size are read whole and sent as one buffer (as nginx's
 * proxy_request_buffering does): handing undici the client's request stream made V8 keep every such
 * request's objects through young-generation collections (decision 0083), and costs more per request.
 * Larger bodies stream.
 */
const BUFFERED_BODY_MAX_BYTES = 64 * 1024;

/**
 * Calls `done` with the whole body once it has arrived; nothing if the client goes away before that. A body that
 * has not arrived within `timeoutMs` (a client that stalls, or sent a Content-Length longer than its body) is
 * answered 408 in the envelope and its connection closed, instead of holding it until Node's 300 s request timeout.
 */
function readBody(
  req: IncomingMessage,
  res: ServerResponse,
  length: number,
  timeoutMs: number,
  requestId: string,
  done: (body: Buffer) => void,
): void {
  const chunks: Buffer[] = [];
  const timer = setDeadline(() => {
    // the rest came while the edge's own process stalled: 'end' has handed the body on
    if (req.readableEnded) return;
    req.removeAllListeners('data').removeAllListeners('end');
    if (res.headersSent || res.destroyed) return;
    res.setHeader('connection', 'close');
    res.once('finish', () => req.socket.destroy());
    sendError(
      res,
      new RequestTimeout(`The request body did not arrive within ${duration(timeoutMs)}`),
      requestId,
    );
  }, timeoutMs);
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.once('end', () => {
    clearTimeout(timer);
    done(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length));
  });
  // an aborted upload: the socket is gone, nothing to answer
  req.once('error', () => undefined);
  req.once('close', () => clearTimeout(timer));
}

/**
 * The body handed to undici for a streamed upload: the client's request read through a stream the proxy
 * owns, with backpressure both ways. A chunked body is counted as it streams and fails past the limit
 * (Content-Length bodies were checked up front).
 *
 * A service may answer before it has read the body (an unknown route, an unsupported media type, a
 * failure); undici then stops reading the upload, or destroys it. The client's request must still be
 * read to its end, as Node does for a body no one read: a request left paused mid-body (or destroyed,
 * which leaves its socket paused) stalls the kept-alive connection, and the client's next request on it
 * is never answered. So once the answer is sent or undici is done with the upload, the rest of the body
 * is read and dropped; past the limit (chunked only) the answer closes the connection instead.
 *
 * A client that stops sending for `timeoutMs` while the edge waits for its bytes (not while the edge itself
 * holds it back for backpressure) fails the upload: 408 in the envelope and the connection closed, instead of
 * holding the connection and the service's request until Node's 300 s request timeout.
 */
function uploadOf(
  req: IncomingMessage,
  res: ServerResponse,
  limit: number,
  timeoutMs: number,
  /** called each time the upload fills up: the service takes the body slower than the client sends it */
  onHeldBack?: () => void,
): PassThrough {
  const upload = new PassThrough();
  let received = 0;
  let forwarding = true;
  /** the deadline for the client's next bytes while the edge waits for them */
  let stall: NodeJS.Timeout | undefined;
  const awaitBytes = () => {
    clearTimeout(stall);
    const deadline = setDeadline(() => {
      // superseded by bytes read since (the edge's own process stalled, not the client), or no longer awaited
      if (stall !== deadline || !forwarding) return;
      forwarding = false;
      upload.destroy(new BodyStalled(timeoutMs));
    }, timeoutMs);
    stall = deadline;
  };
  const stopAwaiting = () => {
    clearTimeout(stall);
    stall = undefined;
  };
  awaitBytes();
  const stopForwarding = () => {
    stopAwaiting();
    if (!forwarding) return;
    forwarding = false;
    upload.destroy();
    req.resume();
  };
  req.on('data', (chunk: Buffer) => {
    received += chunk.length;
    if (!forwarding) return;
    if (received > limit) {
      forwarding = false;
      stopAwaiting();
      upload.destroy(new BodyTooLarge(limit));
    } else if (upload.write(chunk)) awaitBytes();
    else {
      stopAwaiting();
      req.pause();
      onHeldBack?.();
    }
  });
  req.once('end', () => {
    stopAwaiting();
    if (forwarding) upload.end();
  });
  // an aborted upload: the socket is gone, the upstream request is cancelled
  req.once('error', () => undefined);
  req.once('close', () => {
    stopAwaiting();
    if (!req.complete && forwarding) upload.destroy(new Error('client went away'));
  });
  upload.on('drain', () => {
    if (!forwarding) return;
    awaitBytes();
    req.resume();
  });
  upload.once('close', stopForwarding);
  res.once('finish', stopForwarding);
  return upload;
}

/**
 * The proxy on undici: one connection pool per upstream (keep-alive, no pipelining), the request body
 * streamed up and the answer streamed down with backpressure. Unreachable → 503, broken answer → 502,
 * silent past UPSTREAM_TIMEOUT_MS (GATEWAY_UPSTREAM_TIMEOUT_MS for llm-gateway) → 504, chunked body past the limit → 413, a client's body that stops arriving for
 * UPSTREAM_TIMEOUT_MS → 408, each in the envelope. A streamed upload whose client expects 100-continue is sent with
 * node:http instead, which forwards the expectation (`sendExpecting`).
 */
export function createUndiciProxy(options: UpstreamProxyOptions): UpstreamProxy {
  const pools = {} as Record<UpstreamName, Pool>;
  const targets = {} as Record<UpstreamName, URL>;
  /** for uploads expecting 100-continue (`sendExpecting`): one connection per request, as many as the pool's */
  const agents = {} as Record<UpstreamName, http.Agent>;
  for (const [root, url] of Object.entries(options.targets) as Array<[UpstreamName, string]>) {
    targets[root] = new URL(url);
    agents[root] = new (targets[root].protocol === 'https:' ? https : http).Agent({
      maxSockets: options.maxSockets,
    });
    pools[root] = new Pool(targets[root].origin, {
      connections: options.maxSockets,
      pipelining: 1,
      // the answer's deadlines are the proxy's own (`send`): undici's judged a stall of the edge's own process as the
      // service's silence, before reading what the service had sent in time
      headersTimeout: 0,
      bodyTimeout: 0,
      keepAliveMaxTimeout: IDLE_CONNECTION_MAX_MS,
      connect: { timeout: Math.min(options.timeoutMs, 10_000), lookup: options.lookup },
    });
  }

  const fail = (
    res: ServerResponse,
    err: Error & { code?: string },
    requestId: string,
    url: string | undefined,
  ) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    let failure: Error;
    if (err instanceof BodyTooLarge) {
      res.setHeader('connection', 'close');
      failure = new PayloadTooLarge(err.message);
    } else if (err instanceof BodyStalled) {
      res.setHeader('connection', 'close');
      res.once('finish', () => res.socket?.destroy());
      failure = new RequestTimeout(err.message);
    } else if (err.code && TIMEOUTS.has(err.code)) failure = new UpstreamTimeout();
    else if (err.code && UNREACHABLE.has(err.code))
      failure = new Unavailable('Upstream service is unavailable');
    else failure = new BadGateway();
    if (!(err instanceof BodyTooLarge || err instanceof BodyStalled))
      options.logger.warn(
        { err, requestId, path: loggedPath(url ?? '/'), code: err.code },
        'upstream request failed',
      );
    sendError(res, failure, requestId);
  };

  /**
   * The service's answer head onto `res`: setHeader for a name's first field, appendHeader for repeats (Set-Cookie):
   * the edge's own fields (x-request-id, version headers) are already on the answer, and a service's are dropped. A
   * deprecated version's `Link` (versioning/lifecycle.ts) is kept: the service's link-values follow it.
   */
  const writeAnswerHead = (
    res: ServerResponse,
    statusCode: number,
    rawHeaders: Array<Buffer | string>,
    requestId: string,
  ) => {
    let seen: Set<string> | null = null;
    for (let i = 0; i < rawHeaders.length; i += 2) {
      const name = rawHeaders[i]!.toString('latin1');
      const lower = name.toLowerCase();
      if (RESPONSE_HOP_BY_HOP.has(lower)) continue;
      if (EDGE_OWNED.has(lower)) {
        options.logger.debug({ requestId, field: lower }, "upstream answer field dropped: the edge's own");
        continue;
      }
      const value = rawHeaders[i + 1]!.toString('latin1');
      if (seen?.has(lower) || (lower === 'link' && res.hasHeader(lower))) res.appendHeader(name, value);
      else {
        res.setHeader(name, value);
        if (!seen) seen = new Set();
        seen.add(lower);
      }
    }
    res.writeHead(statusCode);
  };

  /**
   * A streamed upload whose client expects 100-continue, sent with the expectation (undici refuses to send `Expect`):
   * the client's body is read, which tells it `100 Continue` (kernel `listen`), only once the service has asked for
   * it. A service that answers first (an unsupported media type, a body too large for it) is answered without the
   * client sending its body. One connection per such request (at most UPSTREAM_MAX_SOCKETS at once, as the pool's;
   * the others wait). The service may stay silent for its answer timeout while the edge waits for it, or while it does
   * not read the body it asked for; a client's body that stops arriving is the upload's own timeout (408).
   */
  const sendExpecting = (
    req: IncomingMessage,
    res: ServerResponse,
    root: UpstreamName,
    requestId: string,
    bodyLimitBytes: number,
    chunked: boolean,
    onAnswer: (() => void) | undefined,
  ) => {
    const target = targets[root];
    const answerTimeout = options.answerTimeoutMs?.[root] ?? options.timeoutMs;
    const upstream = (target.protocol === 'https:' ? https : http).request({
      protocol: target.protocol,
      hostname: target.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: target.port,
      path: req.url ?? '/',
      method: req.method,
      headers: {
        ...req.headers,
        expect: '100-continue',
        ...(chunked ? { 'transfer-encoding': 'chunked' } : {}),
      },
      agent: agents[root],
      lookup: options.lookup,
      timeout: answerTimeout,
    });
    // while the client's body is being sent, a silent connection is the client's stall (the upload's 408) unless the
    // service has stopped reading the body it asked for
    let sending = false;
    upstream.on('timeout', () => {
      // judged a turn later, as kernel `setDeadline` judges: after a stall of the edge's own process the connection's
      // idle timer runs before what the service sent in time is read, and that reading or writing re-arms the timer
      const socket = upstream.socket;
      const traffic = socket ? socket.bytesRead + socket.bytesWritten : 0;
      setImmediate(() => {
        if (socket && socket.bytesRead + socket.bytesWritten !== traffic) return;
        if (!sending || upstream.writableNeedDrain) upstream.destroy(new UpstreamSilent());
      });
    });
    upstream.on('error', (err) => {
      if (!res.writableFinished) fail(res, err, requestId, req.url);
    });
    res.once('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    upstream.once('continue', () => {
      sending = true;
      const body = uploadOf(req, res, bodyLimitBytes, options.timeoutMs);
      body.once('error', (err) => upstream.destroy(err));
      body.once('end', () => {
        sending = false;
      });
      body.pipe(upstream);
    });
    upstream.once('response', (answer) => {
      onAnswer?.();
      writeAnswerHead(res, answer.statusCode ?? 502, answer.rawHeaders, requestId);
      answer.pipe(res);
      answer.once('close', () => {
        if (!answer.complete) res.destroy();
        // a request whose body was not sent in full (the service answered before it) cannot go on
        else if (!upstream.writableFinished) upstream.destroy();
      });
    });
  };

  /**
   * One upstream request (its body a buffer, the client's request streamed, or none); the answer streams back to `res`.
   *
   * The service's silence is timed here, by kernel `setDeadline`'s rule, as undici timed it (its own timers are off):
   * the answer's head is awaited the answer timeout from the request's start, from the end of its body's upload, or
   * from the last time the service fell behind reading that upload (not while it keeps up with a client still sending:
   * the client's own timeout judges that wait); then each part of the answer's body the answer timeout after the last,
   * not counting the time the client holds the answer back. Past it, undici's own timeout errors: 504 as before.
   */
  const send = (
    req: IncomingMessage,
    res: ServerResponse,
    root: UpstreamName,
    requestId: string,
    body: Buffer | 'streamed' | null,
    bodyLimitBytes: number,
    onAnswer: (() => void) | undefined,
  ) => {
    // undici's own (raw) handler interface: its core calls these directly, so no header object is
    // parsed and no wrapper is allocated per request.
    let abort: ((err?: Error) => void) | null = null;
    let done = false;
    const answerTimeout = options.answerTimeoutMs?.[root] ?? options.timeoutMs;
    /** what the edge waits for from the service: its answer's head or its body's next part; none while held back */
    let awaited: 'head' | 'body' | null = null;
    /**
     * One timer per request, moved on (`refresh`) each time the service sends or reads, not made anew: a long stream
     * cost a timer and a closure per part of it. Like kernel `setDeadline`, it is judged a turn after it runs out, once
     * the bytes that came meanwhile are read; `setDeadline`'s own callback could not tell that a timer it shares with
     * the next wait was moved on in that turn (a part read after a stall of the edge's process), and would cut the answer.
     */
    let deadline: NodeJS.Timeout | undefined;
    /** counts the wait's moves: one since the deadline ran out means the service sent or read something meanwhile */
    let moves = 0;
    let movesWhenTimeUp = 0;
    const judge = () => {
      // moved on since (the edge's own process stalled, not the service), or no longer awaited
      if (moves !== movesWhenTimeUp || !awaited || done) return;
      // still sending a body the service keeps up with: awaited again once it is sent or the service falls behind
      if (awaited === 'head' && upload && !upload.readableEnded && !upload.writableNeedDrain) return;
      abort?.(awaited === 'head' ? new errors.HeadersTimeoutError() : new errors.BodyTimeoutError());
    };
    const timeUp = () => {
      movesWhenTimeUp = moves;
      setImmediate(judge);
    };
    const awaitService = (what: 'head' | 'body' | null) => {
      moves++;
      awaited = what;
      // held back: the deadline runs on but is judged as not awaited, and is moved on once the client drains
      if (!what) return;
      if (deadline) deadline.refresh();
      else deadline = setTimeout(timeUp, answerTimeout);
    };
    const stopWaiting = () => {
      done = true;
      awaited = null;
      clearTimeout(deadline);
    };
    const awaitHeadAgain = () => {
      if (awaited === 'head') awaitService('head');
    };
    const upload =
      body === 'streamed' ? uploadOf(req, res, bodyLimitBytes, options.timeoutMs, awaitHeadAgain) : null;
    upload?.once('end', awaitHeadAgain);
    res.once('close', () => {
      if (!done) abort?.(new Error('client went away'));
    });
    const handler = {
      onConnect(abortRequest: (err?: Error) => void) {
        abort = abortRequest;
        if (res.destroyed) abortRequest(new Error('client went away'));
        else awaitService('head');
      },
      onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void) {
        awaitService(statusCode < 200 ? 'head' : 'body');
        if (statusCode < 200) return true; // 1xx: the final answer follows
        onAnswer?.();
        writeAnswerHead(res, statusCode, rawHeaders, requestId);
        res.on('drain', () => {
          if (!done) awaitService('body');
          resume();
        });
        return true;
      },
      onData(chunk: Buffer) {
        const more = res.write(chunk);
        awaitService(more ? 'body' : null);
        return more;
      },
      onComplete() {
        stopWaiting();
        res.end();
      },
      onError(err: Error) {
        stopWaiting();
        fail(res, err, requestId, req.url);
      },
    };
    pools[root].dispatch(
      {
        origin: undefined,
        path: req.url ?? '/',
        method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
        headers: req.headers,
        body: body === 'streamed' ? upload : body,
      },
      handler,
    );
  };

  return {
    forward(req, res, root, requestId, bodyLimitBytes, onAnswer) {
      const headers: IncomingHttpHeaders = req.headers;
      const chunked = headers['content-length'] === undefined && headers['transfer-encoding'] !== undefined;
      const expectsContinue = headers.expect?.toLowerCase() === '100-continue';
      for (const h of NOT_FORWARDED) if (headers[h] !== undefined) delete headers[h];

      const method = req.method ?? 'GET';
      // A HEAD request's content has no meaning (RFC 9110 9.3.2) and undici closes the connection after
      // a HEAD: a service answering before it read such a body would make the upload fail (EPIPE) and
      // the client get a 502 instead of the answer. The edge reads and drops it instead.
      const dropBody = method === 'HEAD' && (chunked || Number(headers['content-length'] ?? 0) > 0);
      if (dropBody) {
        delete headers['content-length'];
        req.resume();
      }
      const length = Number(headers['content-length'] ?? 0);
      if (!dropBody && !chunked && length > 0 && length <= BUFFERED_BODY_MAX_BYTES) {
        // read whole before the upstream request starts (decision 0083); a client that leaves first is
        // never forwarded
        readBody(req, res, length, options.timeoutMs, requestId, (buffered) => {
          if (!res.destroyed) send(req, res, root, requestId, buffered, bodyLimitBytes, onAnswer);
        });
        return;
      }
      const streamed = !dropBody && (chunked || length > 0);
      // a head node:http would re-encode (`asciiHead`) goes through undici, without the expectation
      if (streamed && expectsContinue && asciiHead(req))
        return sendExpecting(req, res, root, requestId, bodyLimitBytes, chunked, onAnswer);
      send(req, res, root, requestId, streamed ? 'streamed' : null, bodyLimitBytes, onAnswer);
    },
    close() {
      for (const pool of Object.values(pools)) void pool.close();
      for (const agent of Object.values(agents)) agent.destroy();
    },
  };
}
