import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A platform service another one calls over real HTTP, for the caller's outage tests: while `state.failing` it
 * answers every request 503 in the envelope, as a service whose store is away does; otherwise `answer`, as JSON.
 */
export async function startOutageServer(answer: unknown): Promise<{
  url: string;
  state: { failing: boolean };
  close(): Promise<void>;
}> {
  const state = { failing: false };
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (state.failing) {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'StoreUnavailable', status: 503 }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    state,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
