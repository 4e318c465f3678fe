import type { RequestListener } from 'node:http';
import { connect, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { refusingOrReading } from '../../test/support';
import { listen, type RunningServer } from '../lifecycle';
import { noteListenOptions } from './listen-options';
import type { ListenAnswer } from './metrics';

/** Everything a raw connection receives until the server closes it. */
function exchange(port: number, send: (socket: Socket, received: () => string) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (d) => {
      text += d.toString('utf8');
    });
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
    send(socket, () => text);
  });
}

/** The answers in `text`, each its status and body (every answer here has a Content-Length). */
function answersIn(text: string): Array<{ status: number; head: string; body: string }> {
  const answers: Array<{ status: number; head: string; body: string }> = [];
  let rest = text;
  while (rest.length > 0) {
    const split = rest.indexOf('\r\n\r\n');
    if (split < 0) break;
    const head = rest.slice(0, split);
    const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
    answers.push({
      status: Number(head.slice(9, 12)),
      head,
      body: rest.slice(split + 4, split + 4 + length),
    });
    rest = rest.slice(split + 4 + length);
  }
  return answers;
}

describe("a request Node cannot read (kernel listen's clientError)", () => {
  let running: RunningServer;
  beforeAll(async () => {
    running = await listen(
      (_req, res) => {
        res.setHeader('content-type', 'text/plain');
        res.end('ok');
      },
      0,
      '127.0.0.1',
    );
  });
  afterAll(() => running.close(100));

  it("is answered in the envelope on a new connection, with the edge's fixed security headers", async () => {
    const text = await exchange(running.port, (socket) =>
      socket.write('GET / HTTP/1.1\r\nBad Header: x\r\n\r\n'),
    );
    const [answer] = answersIn(text);
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ status: 400, error: 'BadRequest' });
    expect(answer.head).toMatch(/\r\nx-content-type-options: nosniff\r\n/);
    expect(answer.head).toMatch(/\r\ncache-control: no-store\r\n/);
  });

  it('is answered too on a kept-alive connection whose earlier answers are complete (as Node does)', async () => {
    const text = await exchange(running.port, (socket, received) => {
      socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
      const next = () => {
        if (!received().endsWith('ok')) return void socket.once('data', next);
        socket.write('GET / HTTP/1.1\r\nHost: x\r\nBad Header: x\r\n\r\n');
      };
      socket.once('data', next);
    });
    const answers = answersIn(text);
    expect(answers.map((a) => a.status)).toEqual([200, 400]);
    expect(JSON.parse(answers[1].body)).toMatchObject({ status: 400, error: 'BadRequest' });
    expect(answers[1].head).toMatch(/\r\nconnection: close\r\n/i);
  });

  it('answers an HTTP/1.1 request without Host 400 in the envelope, not with a bare status line', async () => {
    const text = await exchange(running.port, (socket) => socket.write('GET / HTTP/1.1\r\n\r\n'));
    const [answer] = answersIn(text);
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({
      status: 400,
      error: 'BadRequest',
      code: 'HEADER_POLICY_VIOLATION',
    });
    expect(answer.head).toMatch(/\r\nx-content-type-options: nosniff\r\n/i);
    expect(answer.head).toMatch(/\r\nconnection: close\r\n/i);
  });

  it('refuses a request with more than one Host header 400 in the envelope (RFC 9112 3.2), before the handler', async () => {
    for (const head of [
      'GET / HTTP/1.1\r\nHost: legacy.example.test\r\nHost: api.example.test',
      'GET / HTTP/1.1\r\nHost: x\r\nAccept: */*\r\nhost: x',
      'GET / HTTP/1.0\r\nHOST: x\r\nHost: y',
    ]) {
      const text = await exchange(running.port, (socket) =>
        socket.write(`${head}\r\nConnection: close\r\n\r\n`),
      );
      const answers = answersIn(text);
      expect(answers.map((a) => a.status)).toEqual([400]);
      expect(JSON.parse(answers[0].body)).toMatchObject({
        status: 400,
        error: 'BadRequest',
        code: 'HEADER_POLICY_VIOLATION',
      });
      expect(answers[0].head).toMatch(/\r\nconnection: close\r\n/i);
    }
  });

  it('refuses a Host that is no host name, IP address or port 400 in the envelope (RFC 9110 7.2, RFC 3986 3.2.2)', async () => {
    for (const host of ['a b', 'a/b', 'user@a', '<a>', 'a:8o', 'a:1:2', '[::1', 'a\\b', '%zz']) {
      const text = await exchange(running.port, (socket) =>
        socket.write(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
      );
      const answers = answersIn(text);
      expect({ host, statuses: answers.map((a) => a.status) }).toEqual({ host, statuses: [400] });
      expect(JSON.parse(answers[0].body)).toMatchObject({
        status: 400,
        error: 'BadRequest',
        code: 'HEADER_POLICY_VIOLATION',
      });
    }
  });

  it('serves host names, IPv4 and IPv6 literals, with or without a port, and an empty Host (RFC 9110 7.2)', async () => {
    for (const host of [
      'api.example.test',
      'API.Example.test.',
      'api.example.test:8080',
      '127.0.0.1:3000',
      '[::1]:8080',
      '[::1]',
      'xn--bcher-kva.example',
      'localhost:',
      '',
    ]) {
      const text = await exchange(running.port, (socket) =>
        socket.write(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
      );
      expect({ host, answers: answersIn(text).map((a) => [a.status, a.body]) }).toEqual({
        host,
        answers: [[200, 'ok']],
      });
    }
  });

  it('sees a second Host behind a thousand other fields (Node keeps only the first ~1000 unless told otherwise)', async () => {
    const fields = Array.from({ length: 1100 }, (_, i) => `x-${i}: 1\r\n`).join('');
    const text = await exchange(running.port, (socket) =>
      socket.write(`GET / HTTP/1.1\r\nHost: a\r\n${fields}Host: b\r\nConnection: close\r\n\r\n`),
    );
    const answers = answersIn(text);
    expect(answers.map((a) => a.status)).toEqual([400]);
    expect(JSON.parse(answers[0].body)).toMatchObject({ code: 'HEADER_POLICY_VIOLATION' });
  });

  it('serves no request pipelined behind one it refused: the connection closes, the request never ran', async () => {
    const ran: string[] = [];
    const counting = await listen(
      (req, res) => {
        ran.push(`${req.method} ${req.url}`);
        res.end('ok');
      },
      0,
      '127.0.0.1',
    );
    try {
      const text = await exchange(counting.port, (socket) =>
        socket.write(
          'GET /first HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n' +
            'POST /second HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n',
        ),
      );
      expect(answersIn(text).map((a) => a.status)).toEqual([400]);
      // a request pipelined on a later connection is served as usual
      const later = await exchange(counting.port, (socket) =>
        socket.write('GET /third HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n'),
      );
      expect(answersIn(later).map((a) => a.status)).toEqual([200]);
      expect(ran).toEqual(['GET /third']);
    } finally {
      await counting.close(100);
    }
  });

  it('answers CONNECT 405 in the envelope (Node would reset the connection), with its request id', async () => {
    const text = await exchange(running.port, (socket) =>
      socket.write(
        'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nX-Request-Id: tunnel-1\r\n\r\n',
      ),
    );
    const [answer] = answersIn(text);
    expect(answer.status).toBe(405);
    expect(JSON.parse(answer.body)).toMatchObject({
      status: 405,
      error: 'MethodNotAllowed',
      code: 'METHOD_NOT_ALLOWED',
      requestId: 'tunnel-1',
    });
    expect(answer.head).toMatch(/\r\nx-request-id: tunnel-1$/i);
    expect(answer.head).toMatch(/\r\nx-content-type-options: nosniff\r\n/i);
    expect(answer.head).toMatch(/\r\nconnection: close\r\n/i);
  });

  it('answers a CONNECT pipelined after requests still being answered after their answers, in order', async () => {
    const later = await listen(
      (req, res) => {
        // answered once the CONNECT behind it has been read, the second one larger than the socket takes at once
        const chunks = [
          `answer to ${req.url}`,
          ...Array(req.url === '/second' ? 64 : 0).fill(' '.repeat(65_536)),
        ];
        res.setHeader('content-length', chunks.join('').length);
        setImmediate(() => Readable.from(chunks).pipe(res));
      },
      0,
      '127.0.0.1',
    );
    try {
      const text = await exchange(later.port, (socket) =>
        socket.write(
          'GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n' +
            'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
        ),
      );
      const answers = answersIn(text);
      expect(answers.map((a) => [a.status, a.body.slice(0, 20).trimEnd()])).toEqual([
        [200, 'answer to /first'],
        [200, 'answer to /second'],
        [405, '{"error":"MethodNotA'],
      ]);
    } finally {
      await later.close(100);
    }
  });

  it('serves a request with an expectation other than 100-continue as without it, not with a bare 417', async () => {
    const text = await exchange(running.port, (socket) =>
      socket.write('GET / HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nConnection: close\r\n\r\n'),
    );
    const [answer] = answersIn(text);
    expect(answer).toMatchObject({ status: 200, body: 'ok' });
  });
});

describe('a request that expects 100-continue (RFC 9110 10.1.1)', () => {
  let running: RunningServer;
  beforeAll(async () => {
    running = await listen(refusingOrReading, 0, '127.0.0.1');
  });
  afterAll(() => running.close(100));

  /** What the server answers a head expecting 100-continue: its body is sent once `100 Continue` arrives, if it does. */
  const expecting = (path: string) =>
    exchange(running.port, (socket, received) => {
      let sent = false;
      socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n`);
      socket.on('data', () => {
        if (!sent && received().startsWith('HTTP/1.1 100 Continue\r\n\r\n')) {
          sent = true;
          socket.write('hello');
        }
        // the final answer is in: the client is done (the server may keep the connection for another request)
        if (/(refused|read 5)$/.test(received())) socket.end();
      });
    });

  it('is answered without 100 Continue when its answer is decided before its body is read', async () => {
    const text = await expecting('/refused');
    expect(text).not.toMatch(/ 100 Continue/);
    const answers = answersIn(text);
    expect(answers.map((a) => [a.status, a.body])).toEqual([[401, 'refused']]);
    // the body may still come (a client that stops waiting sends it): not on a connection kept for another request
    expect(answers[0].head).toMatch(/\r\nconnection: close\r\n/i);
  });

  it('keeps its connection for the next request when it has no body (nothing to continue)', async () => {
    const text = await exchange(running.port, (socket) =>
      socket.write(
        'GET /refused HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n' +
          'POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nExpect: 100-continue\r\n\r\n' +
          'GET /refused HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      ),
    );
    const answers = answersIn(text).filter((a) => a.status !== 100);
    expect(answers.map((a) => [a.status, a.body])).toEqual([
      [401, 'refused'],
      [200, 'read 0'],
      [401, 'refused'],
    ]);
  });

  it('gets 100 Continue once its handler reads the body, then the answer', async () => {
    const text = await expecting('/read');
    expect(text).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
    expect(text).toMatch(/read 5$/);
  });
});

describe('the answers `listen` writes itself', () => {
  it('are told to what its handler noted, with their method, target, status and request id', async () => {
    const seen: ListenAnswer[] = [];
    const handler: RequestListener = (_req, res) => res.end('ok');
    noteListenOptions(handler, { observe: (answer) => seen.push(answer) });
    const running = await listen(handler, 0, '127.0.0.1', { headersTimeoutMs: 300 });
    try {
      // a connection that sends nothing is closed with a 408, but made no request
      expect(await exchange(running.port, () => undefined)).toMatch(/^HTTP\/1\.1 408 /);
      for (const head of [
        'GET /no-host HTTP/1.1\r\nX-Request-Id: no-host',
        'POST /two-hosts HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close',
        'GET / HTTP/1.1\r\nBad Header: x',
        'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443',
        // the handler's own answer is the handler's to count
        'GET /served HTTP/1.1\r\nHost: a\r\nConnection: close',
      ])
        await exchange(running.port, (socket) => socket.write(`${head}\r\n\r\n`));
    } finally {
      await running.close(100);
    }
    expect(seen.map(({ method, url, status }) => ({ method, url, status }))).toEqual([
      { method: 'GET', url: '/no-host', status: 400 },
      { method: 'POST', url: '/two-hosts', status: 400 },
      { method: undefined, url: undefined, status: 400 },
      { method: 'CONNECT', url: 'example.com:443', status: 405 },
    ]);
    expect(seen[0].requestId).toBe('no-host');
    for (const answer of seen) {
      expect(answer.requestId).toMatch(/\S/);
      expect(answer.seconds).toBeGreaterThanOrEqual(0);
    }
  });
});
