import { pbkdf2 } from 'node:crypto';
import { createSocket } from 'node:dgram';
import dns from 'node:dns';
import { once } from 'node:events';
import type { LookupFunction } from 'node:net';
import { serviceLookup } from './service-lookup';

type Answer = Array<{ address: string; ttl: number }>;

/** a resolver answering from a script, counting its queries */
function scripted(answers: Record<string, Answer | NodeJS.ErrnoException>) {
  const asked: string[] = [];
  return {
    asked,
    resolver: {
      resolve4: (async (name: string) => {
        asked.push(name);
        const answer = answers[name];
        if (!answer) throw Object.assign(new Error('not found'), { code: dns.NOTFOUND });
        if (answer instanceof Error) throw answer;
        return answer;
      }) as unknown as dns.promises.Resolver['resolve4'],
    },
  };
}

/** the system's lookup, scripted: answers after `systemDelay` (a lookup holding a thread), counting its calls */
const fallbackCalls: string[] = [];
let systemDelay = 0;
const fallback = ((
  name: string,
  options: dns.LookupOptions,
  callback: (e: NodeJS.ErrnoException | null, a: unknown, f?: number) => void,
) => {
  fallbackCalls.push(name);
  const address = name === 'localhost' ? '127.0.0.1' : name === 'ip6-only' ? 'fd00::5' : '10.0.0.99';
  const family = address.includes(':') ? 6 : 4;
  setTimeout(
    () => (options.all ? callback(null, [{ address, family }]) : callback(null, address, family)),
    systemDelay,
  );
}) as unknown as typeof dns.lookup;

const lookup = (fn: LookupFunction, name: string, options: dns.LookupOptions = {}) =>
  new Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family?: number }>((resolve) =>
    fn(name, options, (err, address, family) => resolve({ err, address, family })),
  );

const timeout = () => Object.assign(new Error('timeout'), { code: dns.TIMEOUT });

beforeEach(() => {
  fallbackCalls.length = 0;
  systemDelay = 0;
});

describe('serviceLookup', () => {
  it('answers A records from the resolver, one address or all of them as net.connect asks', async () => {
    const { resolver } = scripted({
      'llm-quota': [
        { address: '10.89.0.5', ttl: 60 },
        { address: '10.89.0.6', ttl: 60 },
      ],
    });
    const fn = serviceLookup({ resolver, fallback });
    expect(await lookup(fn, 'llm-quota')).toEqual({ err: null, address: '10.89.0.5', family: 4 });
    expect(await lookup(fn, 'llm-quota', { all: true })).toMatchObject({
      err: null,
      address: [
        { address: '10.89.0.5', family: 4 },
        { address: '10.89.0.6', family: 4 },
      ],
    });
    expect(fallbackCalls).toEqual([]);
  });

  it('keeps an answer for its TTL (at most maxTtlMs), and asks once for lookups made together', async () => {
    let now = 0;
    const { resolver, asked } = scripted({
      'llm-quota': [{ address: '10.89.0.5', ttl: 60 }],
      auth: [{ address: '10.89.0.7', ttl: 2 }],
    });
    const fn = serviceLookup({ resolver, fallback, now: () => now, maxTtlMs: 10_000 });
    await Promise.all([lookup(fn, 'llm-quota'), lookup(fn, 'llm-quota'), lookup(fn, 'auth')]);
    expect(asked).toEqual(['llm-quota', 'auth']);
    now = 3_000; // past auth's own TTL (2 s), within llm-quota's (capped at 10 s)
    await Promise.all([lookup(fn, 'llm-quota'), lookup(fn, 'auth')]);
    expect(asked).toEqual(['llm-quota', 'auth', 'auth']);
    now = 10_001;
    await lookup(fn, 'llm-quota');
    expect(asked).toEqual(['llm-quota', 'auth', 'auth', 'llm-quota']);
  });

  it("uses the last answer while the name server does not answer, for staleMs; then the system's lookup", async () => {
    let now = 0;
    const answers: Record<string, Answer | NodeJS.ErrnoException> = {
      'llm-quota': [{ address: '10.89.0.5', ttl: 5 }],
    };
    const { resolver } = scripted(answers);
    const fn = serviceLookup({ resolver, fallback, now: () => now, staleMs: 60_000 });
    await lookup(fn, 'llm-quota');
    answers['llm-quota'] = timeout();
    now = 30_000;
    expect(await lookup(fn, 'llm-quota')).toEqual({ err: null, address: '10.89.0.5', family: 4 });
    expect(fallbackCalls).toEqual([]);
    now = 70_000;
    expect(await lookup(fn, 'llm-quota')).toEqual({ err: null, address: '10.0.0.99', family: 4 });
    expect(fallbackCalls).toEqual(['llm-quota']);
  });

  it("leaves to the system's lookup what the name server does not know, IP literals and IPv6", async () => {
    let now = 0;
    const { resolver, asked } = scripted({});
    const fn = serviceLookup({ resolver, fallback, now: () => now });
    expect(await lookup(fn, 'localhost')).toEqual({ err: null, address: '127.0.0.1', family: 4 });
    await lookup(fn, '127.0.0.1');
    await lookup(fn, 'llm-quota', { family: 6 });
    expect(fallbackCalls).toEqual(['localhost', '127.0.0.1', 'llm-quota']);
    expect(asked).toEqual(['localhost']);
    // an IPv6-only name (no A record) gets its IPv6 answer
    expect(await lookup(fn, 'ip6-only', { all: true })).toMatchObject({
      err: null,
      address: [{ address: 'fd00::5', family: 6 }],
    });
    // a name the name server did not know goes to the system's lookup without asking it again, for a minute
    await lookup(fn, 'localhost');
    expect(asked).toEqual(['localhost', 'ip6-only']);
    now = 61_000;
    await lookup(fn, 'localhost');
    expect(asked).toEqual(['localhost', 'ip6-only', 'localhost']);
  });

  it("asks the system's lookup once at a time per name when the name server does not answer", async () => {
    const { resolver, asked } = scripted({
      'dead-server': timeout(),
      'no-server': Object.assign(new Error('refused'), { code: dns.CONNREFUSED }),
    });
    const fn = serviceLookup({ resolver, fallback });
    systemDelay = 30; // the system's lookup holds its thread meanwhile
    const answers = await Promise.all(Array.from({ length: 8 }, () => lookup(fn, 'dead-server')));
    for (const answer of answers) expect(answer).toEqual({ err: null, address: '10.0.0.99', family: 4 });
    expect(asked).toEqual(['dead-server']);
    // eight callers, one query to the name server and one lookup on the pool
    expect(fallbackCalls).toEqual(['dead-server']);
    // no name server at all (refused at once): the hosts file still answers
    expect(await lookup(fn, 'no-server')).toEqual({ err: null, address: '10.0.0.99', family: 4 });
  });
});

describe('serviceLookup with a real resolver', () => {
  /** a name server on loopback answering one A record for every name, counting the queries it got */
  async function nameServer(address: string) {
    const socket = createSocket('udp4');
    let queries = 0;
    socket.on('message', (query, from) => {
      queries++;
      // the question ends after its name's labels, then 4 bytes of type and class
      let end = 12;
      while (query[end]! !== 0) end += query[end]! + 1;
      end += 5;
      const header = Buffer.from([query[0]!, query[1]!, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]);
      const answer = Buffer.from([
        0xc0,
        12,
        0,
        1,
        0,
        1,
        0,
        0,
        0,
        30,
        0,
        4,
        ...address.split('.').map(Number),
      ]);
      socket.send(Buffer.concat([header, query.subarray(12, end), answer]), from.port, from.address);
    });
    socket.bind(0, '127.0.0.1');
    await once(socket, 'listening');
    return { port: socket.address().port, queries: () => queries, close: () => socket.close() };
  }

  it("answers while every thread of libuv's pool is busy (where the default lookup waits its turn)", async () => {
    const server = await nameServer('10.89.0.5');
    try {
      const resolver = new dns.promises.Resolver({ timeout: 1_000, tries: 1 });
      resolver.setServers([`127.0.0.1:${server.port}`]);
      const fn = serviceLookup({ resolver });
      // every thread of the pool, each held for a while: nothing else runs there until one of them ends
      let poolFull = true;
      const jobs = Array.from(
        { length: Number(process.env.UV_THREADPOOL_SIZE ?? 4) },
        () =>
          new Promise((resolve) =>
            pbkdf2('x', 'salt', 400_000, 32, 'sha256', () => {
              poolFull = false;
              resolve(undefined);
            }),
          ),
      );
      // the default lookup (getaddrinfo on the pool) waits for a free thread, even for localhost
      const system = new Promise<boolean>((resolve) => dns.lookup('localhost', () => resolve(poolFull)));
      const answered = await lookup(fn, 'llm-quota');
      expect(answered).toEqual({ err: null, address: '10.89.0.5', family: 4 });
      expect(poolFull).toBe(true);
      expect(await system).toBe(false);
      expect(server.queries()).toBe(1);
      await Promise.all(jobs);
    } finally {
      server.close();
    }
  });
});
