import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for auth's principal lookup in a process of its own, for tests that stall the edge's process: it goes on
 * answering while the test's process is blocked. It answers every principal lookup with a valid principal after
 * `LOOKUP_LATENCY_MS`, says `pause` over the IPC channel when a lookup arrives (the moment the test blocks its own
 * process), and sends its URL once it listens.
 */
const LOOKUP_LATENCY_MS = 300;

const principal = {
  credential: { kind: 'access_token', id: 'paused-token' },
  session: { id: null, org: null },
  user: { id: 'user-paused', email: null, anonymous: false, role: null },
  run: { permissions: {}, scopes: [], correlationId: '', sourceWorkspaceId: null },
};

const auth = http.createServer((req, res) => {
  req.resume();
  req.once('end', () => {
    // the edge reads auth's signing keys too: none, this test's credential is an access token
    if (req.url !== '/internal/principal') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [] }));
      return;
    }
    process.send?.('pause');
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ principal, expiresAt: null, cacheTtlSeconds: 0 }));
    }, LOOKUP_LATENCY_MS);
  });
});
auth.listen(0, '127.0.0.1', () => {
  process.send?.({ url: `http://127.0.0.1:${(auth.address() as AddressInfo).port}` });
});
process.once('disconnect', () => {
  auth.close();
  auth.closeAllConnections();
});
