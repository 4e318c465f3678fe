import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Auth's signing keys and a legacy agent in a process of their own, for tests that stall the edge's process: they go
 * on answering while the test's process is blocked. Each says `pause` over the IPC channel at the moment the test
 * should block its own process, and answers in time during the stall; the process sends its URL once it listens.
 *
 * - `/oidc/jwks` answers a JWKS at once; `/paused/jwks` says `pause` when asked and answers `JWKS_LATENCY_MS` later;
 *   `/silent/jwks` never answers.
 * - `/v2/late-head` says `pause` `PAUSE_AT_MS` after the request came and answers `ANSWER_AT_MS` after it.
 * - `/v2/late-tail` sends the answer's head and first part at once, says `pause` `PAUSE_AT_MS` later and sends the
 *   answer's last part `ANSWER_AT_MS` after its first.
 * - `/v2/late-middle` sends the answer's head and first part at once, says `pause` `PAUSE_AT_MS` later, sends a middle
 *   part `ANSWER_AT_MS` after the first, and its last part once the test says `resume` (its stall is over).
 * - `/v2/silent-head` never answers; `/v2/silent-tail` sends the head and first part, then nothing;
 *   `/v2/unread-upload` neither reads the request's body nor answers.
 */
const JWKS_LATENCY_MS = 300;
/**
 * The late answers come in the last part of the test's 1,400 ms timeout, after the stall began: undici counts its
 * timeouts in ticks of about 500 ms, and a stall costs it one tick whatever it lasts, so only a stall that began in a
 * timeout's last tick made undici judge the timeout before reading what came during the stall.
 */
const PAUSE_AT_MS = 1_050;
const ANSWER_AT_MS = 1_250;

// encoded by the generation job, then imported (decision 0087)
const { publicKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});
const jwks = JSON.stringify({
  keys: [
    { ...createPublicKey(publicKey).export({ format: 'jwk' }), kid: 'paused-key', alg: 'RS256', use: 'sig' },
  ],
});

const sendJwks = (res: http.ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(jwks);
};

const services = http.createServer((req, res) => {
  if (req.url === '/v2/unread-upload') return;
  req.resume();
  req.once('end', () => {
    switch (req.url) {
      case '/oidc/jwks':
        return sendJwks(res);
      case '/paused/jwks':
        process.send?.('pause');
        setTimeout(() => sendJwks(res), JWKS_LATENCY_MS);
        return;
      case '/v2/late-head':
        setTimeout(() => process.send?.('pause'), PAUSE_AT_MS);
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"answered":"in time"}');
        }, ANSWER_AT_MS);
        return;
      case '/v2/late-tail':
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('first part, ');
        setTimeout(() => process.send?.('pause'), PAUSE_AT_MS);
        setTimeout(() => res.end('last part in time'), ANSWER_AT_MS);
        return;
      case '/v2/late-middle':
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('first part, ');
        setTimeout(() => process.send?.('pause'), PAUSE_AT_MS);
        setTimeout(() => res.write('middle part, '), ANSWER_AT_MS);
        process.once('message', (m) => {
          if (m === 'resume') res.end('last part');
        });
        return;
      case '/v2/silent-tail':
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('first part, ');
        return;
      case '/silent/jwks':
      case '/v2/silent-head':
        return;
      default:
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end('{"code":"NOT_FOUND"}');
    }
  });
});
services.listen(0, '127.0.0.1', () => {
  process.send?.({ url: `http://127.0.0.1:${(services.address() as AddressInfo).port}` });
});
process.once('disconnect', () => {
  services.close();
  services.closeAllConnections();
});
