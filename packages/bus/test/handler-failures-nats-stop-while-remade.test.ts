import { describeWithNats, type NatsServerHandle, startNatsServer, waitFor } from '@platform/testkit';
import { connect, type NatsConnection } from 'nats';
import type { Consumer } from '../src';
import { consumeDurable, type DurableConsumerBus } from '../src/nats-durable-consumer';
import { jetstreamOf } from '../src/nats-jetstream';

const STREAM = { name: 'REMADE', subjects: ['analytics.>'] };

/**
 * A durable consumer stopped while it is being made again after a loss (its consumer deleted on the server, or a
 * server back on empty storage): the stop ends, and what it pulls from once made is closed and no longer counted among
 * its bus's consumers pulling, which the bus's close() closes and waits for (and by which it judges whether it may ask
 * JetStream's API). nats.js ends the close of a consumer's messages only as they are read: closed unread, the stop
 * (a service's shutdown) waited for ever.
 */
describeWithNats('a NATS durable consumer stopped while it is made again after a loss', () => {
  let server: NatsServerHandle;
  let nc: NatsConnection;

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
  });
  afterAll(async () => {
    await nc.close();
    await server.dispose();
  });

  it("ends, and leaves nothing among its bus's consumers pulling", async () => {
    const reports: string[] = [];
    const report = (err: unknown, context: string) => reports.push(`${context}: ${(err as Error).message}`);
    let consumer: Consumer | undefined;
    let stopping: Promise<void> | undefined;
    let stopped = false;
    const bus: DurableConsumerBus = {
      server: server.url,
      report,
      clock: { now: () => new Date() },
      jetstream: jetstreamOf(server.url, report),
      pulling: new Set(),
      // asked for the stream to make again, right before the consumer is made again: the stop lands now
      streamEnsured: (name) => {
        stopping ??= consumer!.stop().then(() => {
          stopped = true;
        });
        return name === STREAM.name ? STREAM : undefined;
      },
      connection: Promise.resolve(nc),
      isClosed: () => false,
    };
    await bus.jetstream.ensureStreamOn(nc, STREAM);
    consumer = await consumeDurable(bus, nc, {
      stream: STREAM.name,
      durable: 'remade',
      filterSubject: 'analytics.llm.completion',
      handler: async () => undefined,
    });
    expect(bus.pulling.size).toBe(1);

    await (await nc.jetstreamManager()).consumers.delete(STREAM.name, 'remade');
    await waitFor(() => stopping !== undefined, {
      what: `the consumer made again after its loss (${reports})`,
    });
    await waitFor(() => stopped, { what: 'the stop to end' });
    expect(reports).toEqual([expect.stringContaining('is missing on NATS')]);
    expect(bus.pulling.size).toBe(0);
  });
});
