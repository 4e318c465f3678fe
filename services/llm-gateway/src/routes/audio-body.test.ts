import { once } from 'node:events';
import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody } from './audio';

/** How an audio upload's body is read, on a real HTTP server: what is left behind once it is read, or not read. */
describe('reading an audio upload', () => {
  let server: Server;
  let onRequest: (req: IncomingMessage) => Promise<void>;
  beforeAll(async () => {
    server = createServer((req, res) => {
      void onRequest(req).finally(() => res.end());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  const send = (body: Buffer) =>
    new Promise<void>((resolve, reject) => {
      const { port } = server.address() as AddressInfo;
      const req = request({ host: '127.0.0.1', port, method: 'POST' }, (res) =>
        res.resume().on('end', resolve),
      );
      req.on('error', reject);
      req.end(body);
    });

  it('once read, the request holds no listener of the reading (nor, through one, its chunks)', async () => {
    const listeners: Record<string, number> = {};
    let read = 0;
    const before: Record<string, number> = {};
    onRequest = async (req) => {
      for (const event of ['data', 'end', 'error', 'close']) before[event] = req.listenerCount(event);
      read = (await readBody(req, 1_000_000)).length;
      for (const event of ['data', 'end', 'error', 'close']) listeners[event] = req.listenerCount(event);
    };
    await send(Buffer.alloc(200_000, 1));
    expect(read).toBe(200_000);
    expect(listeners).toEqual(before);
  });

  it('a request already destroyed (its client gone) is refused at once, never waited for', async () => {
    const refused = new Promise<unknown>((resolve) => {
      onRequest = async (req) => {
        req.destroy();
        await once(req, 'close');
        resolve(await readBody(req, 1_000_000).catch((err: unknown) => err));
      };
    });
    await send(Buffer.from('audio')).catch(() => undefined);
    expect(String(await refused)).toMatch(/client left/);
  });
});
