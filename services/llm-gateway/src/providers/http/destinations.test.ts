import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DestinationRefused, ProviderDestinations } from './destinations';
import { fetchTransport, restrictedTransport, undiciTransport } from './transport';

const never = new AbortController().signal;
const post = { method: 'POST' as const, headers: {}, body: '{}', signal: never };

describe('provider destinations', () => {
  let server: Server;
  let other: Server;
  let hits: string[];
  let port: number;

  beforeAll(async () => {
    hits = [];
    other = createServer((req, res) => {
      hits.push(`other ${req.url}`);
      res.end('{}');
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const otherPort = (other.address() as AddressInfo).port;
    server = createServer((req, res) => {
      hits.push(req.url ?? '');
      if (req.url === '/redirect') {
        res.writeHead(307, { location: `http://127.0.0.1:${otherPort}/inside` }).end();
        return;
      }
      res.setHeader('content-type', 'application/json').end('{"ok":true}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await new Promise((r) => other.close(r));
  });
  beforeEach(() => {
    hits.length = 0;
  });

  it('allows public addresses and refuses loopback, private, link-local (metadata) and mapped ones', () => {
    const d = new ProviderDestinations();
    for (const ok of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111']) expect(d.refusal(ok)).toBeNull();
    for (const no of [
      '127.0.0.1',
      '10.1.2.3',
      '172.20.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.100.100.200',
      '0.0.0.0',
      '::1',
      '::',
      'fd00:ec2::254',
      'fe80::1',
      '::ffff:127.0.0.1',
      '::ffff:169.254.169.254',
    ])
      expect([no, d.refusal(no)]).toEqual([no, expect.stringContaining('not a public address')]);
    expect(d.urlRefusal('ftp://example.com/')).toBe('only http and https URLs');
  });

  it('lets the operator open named networks, and nothing more', () => {
    const d = new ProviderDestinations(['127.0.0.0/8', '10.20.0.0/16']);
    expect(d.refusal('127.0.0.1')).toBeNull();
    expect(d.refusal('10.20.3.4')).toBeNull();
    expect(d.refusal('10.21.0.1')).not.toBeNull();
    expect(d.refusal('169.254.169.254')).not.toBeNull();
  });

  it('checks the addresses a host name resolves to when connecting, before any byte is sent', async () => {
    const refused = restrictedTransport(undiciTransport, new ProviderDestinations(), { injected: false });
    const err = await refused(`http://localhost:${port}/v1/chat/completions`, post).catch((e) => e);
    const chain = [err, err?.cause, err?.cause?.cause];
    expect(chain.some((e) => e instanceof DestinationRefused)).toBe(true);
    await expect(refused(`http://127.0.0.1:${port}/v1`, post)).rejects.toBeInstanceOf(DestinationRefused);
    expect(hits).toEqual([]);
    const allowed = new ProviderDestinations(['127.0.0.0/8', '::1']);
    const open = restrictedTransport(undiciTransport, allowed, { injected: false });
    expect((await open(`http://localhost:${port}/v1`, post)).status).toBe(200);
    await allowed.close();
  });

  it('never follows a redirect: it is the provider answer', async () => {
    const send = fetchTransport((...args) => fetch(...args));
    const res = await send(`http://127.0.0.1:${port}/redirect`, post);
    expect(res.status).toBe(307);
    expect(hits).toEqual(['/redirect']);
    const direct = await undiciTransport(`http://127.0.0.1:${port}/redirect`, post);
    expect(direct.status).toBe(307);
    await direct.text();
    expect(hits).toEqual(['/redirect', '/redirect']);
  });
});
