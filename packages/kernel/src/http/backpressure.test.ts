import type { ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { listen } from '../lifecycle';
import { writeWithBackpressure } from './backpressure';

const running = listen(() => undefined, 0, '127.0.0.1');
afterAll(async () => (await running).close(100));

/**
 * What `answer` resolves to on the response to one request from a raw client (`client` acts on its socket once
 * the request is sent), and the errors that response emitted meanwhile.
 */
async function answered<T>(
  answer: (res: ServerResponse) => Promise<T>,
  client: (socket: Socket) => void,
): Promise<{ result: T; errors: unknown[] }> {
  const { server, port } = await running;
  const outcome = new Promise<{ result: T; errors: unknown[] }>((resolve, reject) => {
    server.once('request', (_req, res: ServerResponse) => {
      const errors: unknown[] = [];
      res.on('error', (err) => errors.push(err));
      answer(res).then((result) => resolve({ result, errors }), reject);
    });
  });
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  client(socket);
  try {
    return await outcome;
  } finally {
    socket.destroy();
  }
}

describe('writeWithBackpressure', () => {
  it('resolves false, its listeners removed, when the client leaves while a write waits for it', async () => {
    const piece = 'x'.repeat(64 * 1024);
    const { result, errors } = await answered(
      async (res) => {
        const closeListeners = res.listenerCount('close');
        while (await writeWithBackpressure(res, piece));
        return { drain: res.listenerCount('drain'), close: res.listenerCount('close') - closeListeners };
      },
      // takes the first bytes, then nothing more: the server's writes wait until the client leaves
      (socket) =>
        socket.once('data', () => {
          socket.pause();
          setTimeout(() => socket.destroy(), 200);
        }),
    );
    expect(result).toEqual({ drain: 0, close: 0 });
    expect(errors).toEqual([]);
  });

  it('writes nothing and resolves false on a response already ended, without an error', async () => {
    const { result, errors } = await answered(
      async (res) => {
        res.end('done');
        return writeWithBackpressure(res, 'more');
      },
      () => undefined,
    );
    expect(result).toBe(false);
    expect(errors).toEqual([]);
  });
});
