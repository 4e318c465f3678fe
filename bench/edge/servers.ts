/**
 * Child processes of the edge benchmark (run.ts starts each with `tsx servers.ts <role> ...`):
 * - upstream <port>: a trivial node:http server answering a small JSON (the "service")
 * - auth <port>: JWKS + /internal/principal for the benchmark's credentials
 * - edge <port> <authUrl> <upstreamUrl>: the real edge service
 * - express-hpm <port> <upstreamUrl>: express + http-proxy-middleware with a keep-alive agent, no auth
 * Each prints `ready` once listening.
 */
import http from 'node:http';
import { createInProcessBus } from '@platform/bus';
import { listen, loadConfig, silentLogger } from '@platform/kernel';
import express from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { edgeConfigSchema } from '../../services/edge/src/config';
import { createEdgeService } from '../../services/edge/src/service';
import { BENCH_SECRET, benchCredentials } from './credentials';

const [role, portText, a, b] = process.argv.slice(2);
const port = Number(portText);

async function main() {
  if (role === 'upstream') {
    const body = JSON.stringify({ ok: true, service: 'bench-upstream' });
    const server = http.createServer({ keepAlive: true }, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    server.keepAliveTimeout = 65_000;
    server.listen(port, '127.0.0.1', () => console.log('ready'));
    return;
  }
  if (role === 'auth') {
    const creds = benchCredentials();
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        if (req.url === '/oidc/jwks') return res.end(JSON.stringify({ keys: [creds.jwk] }));
        if (req.url === '/internal/principal') {
          const { credential } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          return res.end(
            JSON.stringify({
              principal: creds.principalFor(credential.kind),
              expiresAt: null,
              cacheTtlSeconds: 60,
            }),
          );
        }
        res.statusCode = 404;
        res.end('{}');
      });
    });
    server.listen(port, '127.0.0.1', () => console.log('ready'));
    return;
  }
  if (role === 'edge') {
    const config = loadConfig(edgeConfigSchema, {
      PLATFORM_INTERNAL_SECRET: BENCH_SECRET,
      AUTH_URL: a,
      LLM_QUOTA_URL: b,
      LEGACY_AGENT_URL: b,
      LOG_LEVEL: 'error',
      ACCESS_LOG_SAMPLE_RATE: '0',
    });
    const service = await createEdgeService({
      config,
      logger: silentLogger(),
      clock: { now: () => new Date() },
      bus: createInProcessBus(),
    });
    await service.start();
    const server = await listen(service.handler, port, '127.0.0.1');
    process.on('SIGTERM', () => void server.close(1000).then(() => process.exit(0)));
    console.log('ready');
    return;
  }
  if (role === 'express-hpm') {
    const app = express();
    app.use(
      createProxyMiddleware({
        target: a,
        changeOrigin: false,
        agent: new http.Agent({ keepAlive: true, maxSockets: 256 }),
      }),
    );
    const server = http.createServer({ keepAlive: true }, app);
    server.listen(port, '127.0.0.1', () => console.log('ready'));
    return;
  }
  throw new Error(`unknown role ${role}`);
}

void main();
