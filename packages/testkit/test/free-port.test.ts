import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { freePort } from '../src';

describe('freePort', () => {
  it('gives a bindable port outside the range the kernel hands out to listen(0) and outgoing connections', async () => {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    const ports = await Promise.all(Array.from({ length: 10 }, () => freePort()));
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(low!);
    }
    const server = createServer().listen(ports[0], '127.0.0.1');
    await once(server, 'listening');
    server.close();
  });
});
