import net from 'node:net';
import { waitFor } from '@platform/testkit';
import { listen } from '../src/lifecycle';

describe('a client that trickles its request head', () => {
  it('loses its socket once the head has taken longer than the headers timeout, while others are served', async () => {
    const server = await listen((_req, res) => res.end('ok'), 0, '127.0.0.1', { headersTimeoutMs: 300 });
    const slow = net.connect(server.port, '127.0.0.1');
    let closed = false;
    slow.on('close', () => {
      closed = true;
    });
    slow.on('error', () => undefined);
    slow.write('GET / HTTP/1.1\r\nHost: x\r\n');
    const trickle = setInterval(() => {
      if (!slow.destroyed) slow.write('X');
    }, 50);
    try {
      expect(await (await fetch(`${server.url}/`)).text()).toBe('ok');
      await waitFor(() => closed, { timeoutMs: 10_000, what: 'the slow socket to be closed' });
    } finally {
      clearInterval(trickle);
      slow.destroy();
      await server.close(1_000);
    }
  });
});
