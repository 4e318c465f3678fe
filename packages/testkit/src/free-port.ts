import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';

const LOWEST = 10_000;

/** The first port the kernel hands out for `listen(0)` and outgoing connections (Linux), or null. */
function ephemeralLow(): number | null {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) ? low : null;
  } catch {
    return null;
  }
}

async function bindable(port: number): Promise<number | null> {
  const server = createServer();
  server.listen(port, '127.0.0.1');
  try {
    await once(server, 'listening'); // rejects on 'error' (EADDRINUSE)
  } catch {
    return null;
  }
  const bound = (server.address() as AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return bound;
}

/**
 * A TCP port on 127.0.0.1 that was free a moment ago, for a server that must know its port before it starts (a
 * public URL in its configuration). Taken below the kernel's ephemeral range where there is one: a port the kernel
 * chose would be handed out again to whatever next listens on port 0 or connects out (another test's servers, the
 * platform's own services), which then took it before the caller bound it.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  if (low !== null && low - LOWEST >= 1_000) {
    for (let attempt = 0; attempt < 50; attempt++) {
      const port = await bindable(LOWEST + Math.floor(Math.random() * (low - LOWEST)));
      if (port !== null) return port;
    }
  }
  const port = await bindable(0);
  if (port === null) throw new Error('no free TCP port on 127.0.0.1');
  return port;
}
