import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  anthropicErrorBody,
  anthropicErrorType,
  openaiErrorBody,
  openaiErrorDefaults,
  type SimulatedAnswer,
  SimulatedProviderError,
} from './answers';
import { anthropicMessages } from './anthropic';
import { openaiImages, openaiSpeech, openaiTranscription } from './media';
import {
  type ExchangeContext,
  openaiChat,
  openaiCompletions,
  openaiEmbeddings,
  openaiModels,
  openaiRerank,
} from './openai';
import { SimulatedPromptCache } from './prompt-cache';
import { RuleBook, type SimulatorApi, type SimulatorEndpoint, type SimulatorRule } from './script';

export interface ProviderSimulatorOptions {
  /** 0 (default) picks a free port on 127.0.0.1 */
  port?: number;
  /** when set, requests must carry it (`Authorization: Bearer`, Azure `api-key`, Anthropic `x-api-key`) */
  apiKey?: string;
  /** embeddings dimensions when neither the request nor a rule names them (default 16) */
  defaultEmbeddingDimensions?: number;
  /** ids listed by `GET /v1/models` */
  models?: string[];
  /**
   * Observers for benchmarks measuring what happens between a client and the simulator on one clock
   * (the simulator in the benchmark's process), and for tests acting at a given point of an answer:
   * `request` when a request's headers arrive, `frame` right after the i-th frame of a stream (`frame`,
   * its bytes) was handed to the socket.
   */
  observe?: {
    request?(path: string): void;
    frame?(index: number, frame: string | Buffer): void;
  };
}

export interface SimulatedRequest {
  api: SimulatorApi;
  endpoint: SimulatorEndpoint | 'unknown';
  method: string;
  /** path without the query */
  path: string;
  query: Record<string, string>;
  /** lower-case names, as received */
  headers: Record<string, string>;
  /** parsed JSON, or for multipart the text fields (a repeated one as the array of its values) plus `file: {filename, size}` */
  body: unknown;
  /** the model named by the body, or the Azure deployment */
  model: string | undefined;
  /** the connection closed before the answer was complete: the client gave up (or a scripted disconnect) */
  clientClosed: boolean;
  /** the frames of its stream written so far, each counted once its bytes were handed to the socket */
  framesSent: number;
  /** the client's TCP port: two requests with the same one came over one kept-alive connection */
  remotePort: number | undefined;
}

export interface ProviderSimulator {
  url: string;
  /** `${url}/v1`, what an OpenAI client takes as its base URL */
  openaiBaseUrl: string;
  /** `${url}`, what an Anthropic client takes as its base URL (it appends `/v1/messages`) */
  anthropicBaseUrl: string;
  /** replaces the rules; the first matching rule serves a request (no rule = a normal, instant answer) */
  script(rules: SimulatorRule[]): void;
  /** every request received so far, oldest first */
  requests(): SimulatedRequest[];
  /** the client ports of the connections open now (a kept-alive connection stays in this list) */
  openConnections(): number[];
  /** forgets rules, recorded requests and the simulated prompt cache */
  reset(): void;
  /** closes the server, cutting hanging and open connections */
  close(): Promise<void>;
}

interface Route {
  api: SimulatorApi;
  endpoint: SimulatorEndpoint;
  deployment?: string;
}

function route(method: string, path: string): Route | undefined {
  const azure =
    /^\/openai\/deployments\/([^/]+)\/(chat\/completions|completions|embeddings|images\/generations|audio\/(?:transcriptions|translations|speech))$/.exec(
      path,
    );
  if (azure && method === 'POST') {
    const kinds: Record<string, SimulatorEndpoint> = {
      'chat/completions': 'chat',
      completions: 'completions',
      embeddings: 'embeddings',
      'images/generations': 'images',
      'audio/transcriptions': 'transcriptions',
      'audio/translations': 'translations',
      'audio/speech': 'speech',
    };
    return { api: 'openai', endpoint: kinds[azure[2]!]!, deployment: decodeURIComponent(azure[1]!) };
  }
  const table: Record<string, Route> = {
    'POST /v1/chat/completions': { api: 'openai', endpoint: 'chat' },
    'POST /v1/completions': { api: 'openai', endpoint: 'completions' },
    'POST /v1/embeddings': { api: 'openai', endpoint: 'embeddings' },
    'POST /v1/rerank': { api: 'openai', endpoint: 'rerank' },
    'POST /v1/images/generations': { api: 'openai', endpoint: 'images' },
    'POST /v1/audio/transcriptions': { api: 'openai', endpoint: 'transcriptions' },
    'POST /v1/audio/translations': { api: 'openai', endpoint: 'translations' },
    'POST /v1/audio/speech': { api: 'openai', endpoint: 'speech' },
    'GET /v1/models': { api: 'openai', endpoint: 'models' },
    'POST /v1/messages': { api: 'anthropic', endpoint: 'messages' },
  };
  return table[`${method} ${path}`];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function flatHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** Starts an HTTP server on loopback that answers like OpenAI and Anthropic, as scripted. */
export async function startProviderSimulator(
  options: ProviderSimulatorOptions = {},
): Promise<ProviderSimulator> {
  const rules = new RuleBook();
  let received: SimulatedRequest[] = [];
  const files = new Map<string, Buffer>();
  let seq = 0;
  let url = '';
  const promptCache = new SimulatedPromptCache();

  const sendError = (res: ServerResponse, api: SimulatorApi, error: SimulatedProviderError, extra = {}) => {
    const body =
      api === 'anthropic'
        ? anthropicErrorBody(error.type, error.message)
        : openaiErrorBody(error.type, error.message, error.code);
    res.writeHead(error.status, { 'content-type': 'application/json', ...extra });
    res.end(JSON.stringify(body));
  };

  const scriptedError = (api: SimulatorApi, spec: NonNullable<SimulatorRule['error']>) => {
    const defaults = openaiErrorDefaults(spec.status);
    const type = spec.type ?? (api === 'anthropic' ? anthropicErrorType(spec.status) : defaults.type);
    const code = spec.code === undefined ? defaults.code : spec.code;
    return new SimulatedProviderError(
      spec.status,
      type,
      spec.message ?? `Simulated ${type} (${spec.status})`,
      code,
    );
  };

  const authorised = (req: IncomingMessage, api: SimulatorApi) => {
    if (!options.apiKey) return true;
    if (api === 'anthropic') return req.headers['x-api-key'] === options.apiKey;
    return (
      req.headers.authorization === `Bearer ${options.apiKey}` || req.headers['api-key'] === options.apiKey
    );
  };

  /** an event stream, or audio in chunks: the frames with the rule's pacing and failures */
  async function writeStream(
    res: ServerResponse,
    answer: {
      frames: Array<string | Buffer>;
      contentType: string;
      errorFrame?: (type: string, message: string) => string;
    },
    rule: SimulatorRule,
    record: SimulatedRequest,
  ) {
    res.writeHead(200, { 'content-type': answer.contentType, 'cache-control': 'no-cache' });
    const failure = rule.streamFailure;
    const failAt = failure && (failure.afterChunks < 0 ? answer.frames.length : 0) + failure.afterChunks;
    for (let i = 0; i < answer.frames.length; i += 1) {
      if (failure && i === failAt) {
        if (failure.mode === 'hang') return; // stays open until the client leaves or close()
        if (failure.mode === 'end-frame' && answer.errorFrame) {
          res.end(answer.frames.at(-1));
          return;
        }
        if (failure.mode === 'disconnect' || !answer.errorFrame) {
          await new Promise((resolve) => res.write('', resolve)); // what was written reaches the client first
          res.socket?.destroy();
          return;
        }
        const type = failure.type ?? 'server_error';
        res.end(answer.errorFrame(type, failure.message ?? 'Simulated failure in the middle of the stream'));
        return;
      }
      if (i > 0 && rule.chunkDelayMs) await sleep(rule.chunkDelayMs);
      if (res.destroyed) return;
      const frame =
        rule.sseComments && answer.errorFrame ? `: keep-alive\n\n${answer.frames[i]}` : answer.frames[i]!;
      const size = rule.splitFramesBytes;
      if (!size) {
        res.write(frame, () => {
          record.framesSent = i + 1;
        });
        options.observe?.frame?.(i, frame);
        continue;
      }
      for (let at = 0; at < frame.length; at += size) {
        res.write(frame.slice(at, at + size));
        await sleep(1); // lets each piece leave as its own TCP segment
        if (res.destroyed) return;
      }
      record.framesSent = i + 1;
    }
    if (rule.endDelayMs) await sleep(rule.endDelayMs);
    res.end();
  }

  async function answer(
    req: IncomingMessage,
    res: ServerResponse,
    found: Route,
    raw: Buffer,
    record: SimulatedRequest,
  ) {
    const ctx: ExchangeContext = {
      rule: {},
      created: Math.floor(Date.now() / 1000),
      seq: ++seq,
      defaultEmbeddingDimensions: options.defaultEmbeddingDimensions ?? 16,
      promptCache,
    };
    let body: Record<string, unknown> = {};
    if (found.endpoint === 'transcriptions' || found.endpoint === 'translations') {
      const parsed = await openaiTranscription(raw, req.headers['content-type'] ?? '', ctx).catch(
        (err) => err,
      );
      record.body = parsed instanceof Error ? {} : { ...parsed.fields, file: parsed.file };
      const named = parsed instanceof Error ? undefined : parsed.fields.model;
      record.model = found.deployment ?? (typeof named === 'string' ? named : undefined);
    } else if (raw.length > 0) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        throw new SimulatedProviderError(400, 'invalid_request_error', 'the body is not valid JSON');
      }
      record.body = body;
      record.model = found.deployment ?? (typeof body.model === 'string' ? body.model : undefined);
    }
    received.push(record);
    if (found.deployment && !record.query['api-version'])
      throw new SimulatedProviderError(
        404,
        'invalid_request_error',
        'api-version query parameter is required',
        '404',
      );
    if (!authorised(req, found.api))
      throw new SimulatedProviderError(
        401,
        found.api === 'anthropic' ? 'authentication_error' : 'invalid_request_error',
        'invalid x-api-key / Incorrect API key provided',
        'invalid_api_key',
      );
    if (found.api === 'anthropic' && !req.headers['anthropic-version'])
      throw new SimulatedProviderError(400, 'invalid_request_error', 'anthropic-version: header is required');

    const rule = rules.take({
      api: found.api,
      endpoint: found.endpoint,
      model: record.model,
      stream: body.stream === true,
    });
    ctx.rule = rule;
    if (rule.latencyMs) await sleep(rule.latencyMs);
    if (rule.hang) return; // never answers; close() or the client ends it
    if (rule.error) {
      const error = scriptedError(found.api, rule.error);
      const headers: Record<string, string> = { ...rule.error.headers };
      if (rule.error.retryAfterSeconds !== undefined)
        headers['retry-after'] = String(rule.error.retryAfterSeconds);
      if (rule.error.rawBody !== undefined) {
        res.writeHead(error.status, { 'content-type': 'text/html', ...headers });
        res.end(rule.error.rawBody);
        return;
      }
      sendError(res, found.api, error, headers);
      return;
    }
    if (found.deployment) body.model = found.deployment;

    let result: SimulatedAnswer;
    switch (found.endpoint) {
      case 'chat':
        result = openaiChat(body, ctx);
        break;
      case 'completions':
        result = openaiCompletions(body, ctx);
        break;
      case 'messages':
        result = anthropicMessages(body, ctx);
        break;
      case 'embeddings':
        result = openaiEmbeddings(body, ctx);
        break;
      case 'rerank':
        result = openaiRerank(body, ctx);
        break;
      case 'images':
        result = openaiImages(body, ctx, (png) => {
          const name = `img-${ctx.seq}-${files.size}.png`;
          files.set(name, png);
          return `${url}/files/${name}`;
        });
        break;
      case 'transcriptions':
      case 'translations':
        result = (await openaiTranscription(raw, req.headers['content-type'] ?? '', ctx, found.endpoint))
          .answer;
        break;
      case 'speech':
        result = openaiSpeech(body);
        break;
      case 'models':
        result = openaiModels(options.models ?? ['sim-chat', 'sim-embeddings']);
        break;
    }
    if (result.kind === 'sse')
      return writeStream(res, { ...result, contentType: 'text/event-stream; charset=utf-8' }, rule, record);
    if (result.kind === 'chunks') return writeStream(res, { ...result, frames: result.chunks }, rule, record);
    if (result.kind === 'json') {
      res.writeHead(result.status ?? 200, { 'content-type': 'application/json', ...result.headers });
      res.end(JSON.stringify(result.body));
      return;
    }
    res.writeHead(200, { 'content-type': result.contentType });
    res.end(result.body);
  }

  const server = createServer((req, res) => {
    options.observe?.request?.(req.url ?? '/');
    const parsed = new URL(req.url ?? '/', 'http://simulator');
    const method = req.method ?? 'GET';
    const file = /^\/files\/([\w.-]+)$/.exec(parsed.pathname);
    if (method === 'GET' && file && files.has(file[1]!)) {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(files.get(file[1]!));
      return;
    }
    const found = route(method, parsed.pathname);
    const api: SimulatorApi = found?.api ?? (parsed.pathname === '/v1/messages' ? 'anthropic' : 'openai');
    readBody(req)
      .then(async (raw) => {
        const record: SimulatedRequest = {
          api,
          endpoint: found?.endpoint ?? 'unknown',
          method,
          path: parsed.pathname,
          query: Object.fromEntries(parsed.searchParams),
          headers: flatHeaders(req),
          body: undefined,
          model: undefined,
          clientClosed: false,
          framesSent: 0,
          remotePort: req.socket.remotePort,
        };
        res.once('close', () => {
          if (!res.writableFinished) record.clientClosed = true;
        });
        if (!found) {
          received.push(record);
          throw new SimulatedProviderError(
            404,
            'invalid_request_error',
            `Unknown request URL: ${method} ${parsed.pathname}`,
          );
        }
        await answer(req, res, found, raw, record);
      })
      .catch((err: unknown) => {
        if (res.headersSent || res.destroyed) return;
        const error =
          err instanceof SimulatedProviderError
            ? err
            : new SimulatedProviderError(500, 'server_error', String(err));
        sendError(res, api, error);
      });
  });
  const sockets = new Set<import('node:net').Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  // A simulated provider must not keep jest alive between its own requests.
  server.keepAliveTimeout = 5_000;
  server.listen(options.port ?? 0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    openaiBaseUrl: `${url}/v1`,
    anthropicBaseUrl: url,
    script: (next) => rules.replace(next),
    requests: () => received.slice(),
    openConnections: () => [...sockets].map((socket) => socket.remotePort ?? 0),
    reset() {
      rules.replace([]);
      received = [];
      promptCache.clear();
    },
    async close() {
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closed;
    },
  };
}
