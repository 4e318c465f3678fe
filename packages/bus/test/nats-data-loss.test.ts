import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { LlmCompletionEvent } from '@platform/contracts';
import { describeWithNats, type NatsServerHandle, startNatsServer, waitFor } from '@platform/testkit';
import { connect } from 'nats';
import { type Bus, createNatsBus } from '../src';
import { completion, succeeds } from './completion-event';

const AUTHORIZATION = path.resolve(__dirname, '../../../deploy/nats/authorization.conf');
const USERS = ['edge', 'auth', 'llm-gateway', 'llm-quota', 'legacy-agent'] as const;
const passwords = Object.fromEntries(USERS.map((u) => [u, randomBytes(12).toString('hex')]));

describeWithNats('NATS bus when the server comes back without its JetStream data', () => {
  /** a real nats-server with the platform's users (deploy/nats/authorization.conf) */
  let server: NatsServerHandle;
  const buses: Bus[] = [];
  const urlOf = (user: (typeof USERS)[number]) =>
    `nats://${user}:${passwords[user]}@127.0.0.1:${server.port}`;

  beforeEach(async () => {
    server = await startNatsServer({
      file: AUTHORIZATION,
      env: Object.fromEntries(
        USERS.map((u) => [`${u.toUpperCase().replace(/-/g, '_')}_NATS_PASSWORD`, `"${passwords[u]}"`]),
      ),
    });
  });
  afterEach(async () => {
    await Promise.all(buses.splice(0).map((b) => b.close()));
    await server.dispose();
  });

  /** a bus as `user`, on its own inbox as the services are, keeping what it reports to `onError` */
  const openAs = async (user: 'llm-gateway' | 'llm-quota') => {
    const errors: string[] = [];
    const bus = await createNatsBus({
      url: urlOf(user),
      name: user,
      onError: (err, context) => errors.push(`${context}: ${(err as Error).message}`),
    });
    buses.push(bus);
    return { bus, errors };
  };

  /** llm-quota's stream and durable consumer (services/llm-quota/src/ingest/usage-consumer.ts), counting ids */
  const consumeAsLlmQuota = async (bus: Bus, got: string[]) => {
    await bus.ensureStream({ name: 'ANALYTICS', subjects: ['analytics.>'] });
    return bus.consumeDurable({
      stream: 'ANALYTICS',
      durable: 'llm-quota',
      filterSubject: 'analytics.llm.completion',
      handler: async (m) => void got.push((JSON.parse(m.data) as LlmCompletionEvent).id),
    });
  };

  it("makes llm-quota's stream and consumer again once the server is back on empty storage, and consumes what comes after once", async () => {
    const { bus: quota, errors: quotaErrors } = await openAs('llm-quota');
    // a second instance shares the durable: both make the stream and consumer again, and each event is taken once
    const { bus: otherQuota, errors: otherQuotaErrors } = await openAs('llm-quota');
    const { bus: gateway, errors: gatewayErrors } = await openAs('llm-gateway');
    const got: string[] = [];
    const consumers = [await consumeAsLlmQuota(quota, got), await consumeAsLlmQuota(otherQuota, got)];
    await gateway.publishDurable('analytics.llm.completion', completion('before'), 'before');
    await waitFor(() => got.includes('before'), { timeoutMs: 15_000, what: 'the first event consumed' });

    await server.stop();
    // not acknowledged by any stream: the gateway's outbox keeps it and publishes it again until one takes it
    await expect(
      gateway.publishDurable('analytics.llm.completion', completion('while-away'), 'while-away'),
    ).rejects.toThrow();
    // back without its JetStream data, as a pod without a persistent volume comes back
    server.loseJetStreamData();
    await server.start();

    // the gateway may not make the stream (its user is not allowed): llm-quota's bus makes it again
    await waitFor(
      () =>
        succeeds(gateway.publishDurable('analytics.llm.completion', completion('while-away'), 'while-away')),
      { timeoutMs: 20_000, what: 'the stream made again' },
    );
    await gateway.publishDurable('analytics.llm.completion', completion('after'), 'after');
    await waitFor(() => got.includes('while-away') && got.includes('after'), {
      timeoutMs: 20_000,
      what: 'the consumers consuming again',
    });
    // each once, in whichever order the two instances took them
    expect([...got].sort()).toEqual(['after', 'before', 'while-away']);
    // the loss is said (by the instance that found it: the other may find both made again already), and nothing the
    // remaking asked was refused to llm-quota's user
    expect(
      [...quotaErrors, ...otherQuotaErrors].some(
        (e) => e.includes('ANALYTICS') && e.includes('making them again'),
      ),
    ).toBe(true);
    expect(
      [...quotaErrors, ...otherQuotaErrors, ...gatewayErrors].filter((e) => e.includes('permission')),
    ).toEqual([]);
    await Promise.all(consumers.map((c) => c.stop()));
    // its waits' deadlines (15 + 20 + 20 s and more) and a restart add up past jest's 60 s: a slow step names its wait
  }, 90_000);

  it('makes the consumer and its stream again when they are deleted under a running consumer, without a reconnection', async () => {
    // an operator's own tool, outside the platform's users, deletes the stream: what a pull then finds missing
    const unguarded = await startNatsServer();
    try {
      const open = async (name: string) => {
        const bus = await createNatsBus({ url: unguarded.url, name });
        buses.push(bus);
        return bus;
      };
      const quota = await open('quota');
      const gateway = await open('gateway');
      const got: string[] = [];
      const consumer = await consumeAsLlmQuota(quota, got);
      await gateway.publishDurable('analytics.llm.completion', completion('before'), 'before');
      await waitFor(() => got.includes('before'), { timeoutMs: 15_000, what: 'the first event consumed' });

      const admin = await connect({ servers: unguarded.url.replace(/^nats:\/\//, '') });
      await (await admin.jetstreamManager()).streams.delete('ANALYTICS');
      await admin.close();

      await waitFor(
        () => succeeds(gateway.publishDurable('analytics.llm.completion', completion('after'), 'after')),
        { timeoutMs: 20_000, what: 'the stream made again' },
      );
      await waitFor(() => got.includes('after'), { timeoutMs: 20_000, what: 'the consumer consuming again' });
      expect(got).toEqual(['before', 'after']);
      await consumer.stop();
    } finally {
      await Promise.all(buses.splice(0).map((b) => b.close()));
      await unguarded.dispose();
    }
  }, 60_000);
});
