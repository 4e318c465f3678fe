import type { Bus } from './port';

export interface NatsBusOptions {
  url: string;
  /** connection name shown in the server's monitoring */
  name: string;
  /** errors from handlers and the connection, for the service's logger */
  onError?: (err: unknown, context: string) => void;
}

/**
 * The bus on a real NATS server, its client loaded on first use: the `nats` package takes ~13 MiB of every process
 * that loads it, and `pnpm start` without NATS_URL (its IPC bus) or a test on the in-process bus never needs it.
 */
export async function createNatsBus(options: NatsBusOptions): Promise<Bus> {
  // require, not import(): pnpm start runs the sources under tsx's CommonJS hook only (decision 0085)
  return (require('./nats-bus') as typeof import('./nats-bus')).openNatsBus(options);
}
