import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { stall, waitFor } from '@platform/testkit';
import { listen, type RunningServer } from '../src/lifecycle';
import { refusingOrReading } from './support';

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

/**
 * Everything the server answers on a new connection to which `send` writes, once the server holds it: `send`
 * runs while the event loop is stalled past the headers timeout and a connections check, so what it writes is in
 * the server's socket buffer, unread, when Node checks the connection (a pooled connection that was opened and
 * left unused, then put to use as the server's event loop stalls). The stall outlasts both the headers timeout and
 * the checking interval (1 s), by a margin a loaded machine only widens (it busy-waits on the clock), so the check
 * that follows it finds the connection expired; the headers timeout (1 s, not less) is the time the test may take
 * between the server holding the connection and `send`, lest a check time it out before the stall.
 */
async function sentDuringStall(server: RunningServer, send: string): Promise<string> {
  const accepted = once(server.server, 'connection');
  const socket = net.connect(server.port, '127.0.0.1');
  await Promise.all([accepted, once(socket, 'connect')]);
  let received = '';
  socket.on('data', (d: Buffer) => {
    received += d.toString('utf8');
  });
  socket.on('error', () => undefined);
  const closed = once(socket, 'close');
  socket.write(send);
  stall(1_500);
  await waitFor(() => received.endsWith('ok') || socket.destroyed, {
    timeoutMs: 10_000,
    what: 'an answer',
  });
  socket.destroy();
  await closed;
  return received;
}

describe('a connection that has sent nothing yet (headers timeout from its opening)', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await listen((_req, res) => res.end('ok'), 0, '127.0.0.1', { headersTimeoutMs: 1_000 });
  });
  afterAll(() => server.close(1_000));

  it('gets its first request answered when the request arrived while the server was stalled', async () => {
    const received = await sentDuringStall(server, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(received).toMatch(/^HTTP\/1\.1 200 /);
    expect(received).not.toMatch(/ 408 /);
  });

  it("leaves the connection to the server's 'upgrade' listener when what arrived is an upgrade request", async () => {
    const upgrade = (_req: unknown, socket: net.Socket) =>
      // answers on the next turn of the event loop: after the 408 the server would have written on it by then
      setTimeout(() => {
        if (!socket.destroyed)
          socket.end('HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\n\r\nok');
      });
    server.server.on('upgrade', upgrade);
    try {
      const received = await sentDuringStall(
        server,
        'GET / HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: x\r\n\r\n',
      );
      expect(received).toMatch(/^HTTP\/1\.1 101 /);
      expect(received).not.toMatch(/ 408 /);
    } finally {
      server.server.off('upgrade', upgrade);
    }
  });

  it('is still closed with a 408 when what arrived starts no request', async () => {
    const received = await sentDuringStall(server, '\r\n');
    expect(received).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('is still closed with a 408 when it sends nothing at all', async () => {
    const socket = net.connect(server.port, '127.0.0.1');
    let received = '';
    socket.on('data', (d: Buffer) => {
      received += d.toString('utf8');
    });
    await once(socket, 'close');
    expect(received).toMatch(/^HTTP\/1\.1 408 /);
    expect(received).toMatch(/"code":"REQUEST_TIMEOUT"/);
  });
});

describe('a client that keeps sending a body its answer refused (lingering time, as nginx has)', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await listen(refusingOrReading, 0, '127.0.0.1', { lingeringTimeMs: 300 });
  });
  afterAll(() => server.close(1_000));

  /** A request whose body arrives a few bytes every 20 ms, `chunks` times (forever when 0); what came back, and when the server closed. */
  function trickled(path: string, head: string, piece: string, chunks = 0) {
    const socket = net.connect(server.port, '127.0.0.1');
    let received = '';
    let closed = false;
    socket.on('data', (d: Buffer) => {
      received += d.toString('utf8');
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      closed = true;
    });
    socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\n${head}\r\n\r\n`);
    let sent = 0;
    const trickle = setInterval(() => {
      if (socket.destroyed) return;
      socket.write(piece);
      if (++sent === chunks) {
        clearInterval(trickle);
        socket.write(head.includes('chunked') ? '0\r\n\r\n' : '');
      }
    }, 20);
    return {
      received: () => received,
      closed: () => closed,
      stop() {
        clearInterval(trickle);
        socket.destroy();
      },
    };
  }

  it('has its answer, then its connection closed once the lingering time is over, whatever it still sends', async () => {
    for (const [head, piece] of [
      ['Content-Length: 100000000', 'x'.repeat(100)],
      ['Transfer-Encoding: chunked', `64\r\n${'x'.repeat(100)}\r\n`],
    ]) {
      const client = trickled('/refused', head, piece);
      try {
        await waitFor(() => client.closed(), {
          timeoutMs: 10_000,
          what: `the connection (${head}) to close`,
        });
        expect(client.received()).toMatch(/^HTTP\/1\.1 401 [\s\S]*\r\n\r\nrefused$/);
      } finally {
        client.stop();
      }
    }
  });

  it('is not cut short while its handler reads the body, however long it takes', async () => {
    // 30 pieces 20 ms apart: longer than the lingering time
    const client = trickled('/read', 'Content-Length: 3000', 'x'.repeat(100), 30);
    try {
      await waitFor(() => client.received().endsWith('read 3000'), { timeoutMs: 10_000, what: 'the answer' });
      expect(client.received()).toMatch(/^HTTP\/1\.1 200 /);
    } finally {
      client.stop();
    }
  });
});

describe('a client that leaves in the middle of a body its answer refused', () => {
  /** V8's collector, which jest does not expose (`--expose-gc` set at run time reaches a new context) */
  const collect = (): void => {
    setFlagsFromString('--expose-gc');
    runInNewContext('gc')();
  };

  it('leaves nothing of its request behind once its connection is closed, not for the lingering time', async () => {
    const requests: Array<WeakRef<IncomingMessage>> = [];
    const closed: Array<Promise<unknown>> = [];
    const server = await listen(
      (req, res) => {
        requests.push(new WeakRef(req));
        // Node ends neither the request nor its stream once it is answered: its socket closes
        closed.push(new Promise((resolve) => req.socket.once('close', resolve)));
        res.statusCode = 401;
        res.end('refused');
      },
      0,
      '127.0.0.1',
    );
    try {
      for (let i = 0; i < 20; i++) {
        const socket = net.connect(server.port, '127.0.0.1');
        socket.on('error', () => undefined);
        socket.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n${'x'.repeat(100)}`);
        await once(socket, 'data');
        socket.destroy();
      }
      await Promise.all(closed);
      await new Promise((resolve) => setImmediate(resolve));
      collect();
      expect(requests.filter((request) => request.deref() !== undefined)).toHaveLength(0);
    } finally {
      await server.close(1_000);
    }
  });
});
