import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import type { LlmCompletionEvent } from '@platform/contracts';
import { describeWithNats, freePort, tempDir, waitFor } from '@platform/testkit';
import { type Bus, createNatsBus } from '../src';

const completion = (id: string): LlmCompletionEvent => ({
  id,
  version: 1,
  occurredAt: '2026-11-28T10:00:00Z',
  orgSlug: 'acme',
  model: 'm',
  provider: 'p',
  usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
  cost: 0.01,
});

const succeeds = (promise: Promise<unknown>) =>
  promise.then(
    () => true,
    () => false,
  );

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/**
 * A real nats-server on one port, started with or without JetStream: testkit's always has it, and what is tested
 * here is a server without it, restarted or reloaded (its configuration file changed, SIGHUP) with it.
 */
async function natsServerOnFreePort() {
  const port = await freePort();
  const storage = tempDir('nats-no-js-');
  const file = path.join(storage.dir, 'nats.conf');
  const configure = (jetstream: boolean) =>
    writeFileSync(file, jetstream ? `jetstream { store_dir: ${JSON.stringify(storage.dir)} }\n` : '');
  let child: ChildProcess | undefined;
  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const gone = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGTERM');
    await gone;
  };
  return {
    url: `nats://127.0.0.1:${port}`,
    async start(jetstream: boolean) {
      configure(jetstream);
      child = spawn(
        process.env.NATS_SERVER_BIN ?? 'nats-server',
        ['-c', file, '-a', '127.0.0.1', '-p', String(port)],
        {
          stdio: 'ignore',
        },
      );
      await waitFor(() => portOpen(port), { timeoutMs: 10_000, what: 'nats-server' });
    },
    /** JetStream enabled without a restart: the clients stay connected */
    reload(jetstream: boolean) {
      configure(jetstream);
      child?.kill('SIGHUP');
    },
    stop,
    async dispose() {
      await stop();
      storage.remove();
    },
  };
}

describeWithNats('NATS bus on a nats-server without JetStream', () => {
  let server: Awaited<ReturnType<typeof natsServerOnFreePort>>;
  const buses: Bus[] = [];

  beforeEach(async () => {
    server = await natsServerOnFreePort();
    await server.start(false);
  });
  afterEach(async () => {
    await Promise.all(buses.splice(0).map((b) => b.close()));
    await server.dispose();
  });

  /** a bus that keeps the messages of what it reports to `onError` in `errors` */
  const openKeepingErrors = async (name: string) => {
    const errors: string[] = [];
    const bus = await createNatsBus({
      url: server.url,
      name,
      onError: (err) => errors.push((err as Error).message),
    });
    buses.push(bus);
    return { bus, errors };
  };

  it('degrades instead of failing, says once what to fix, and consumes once the server is restarted with -js', async () => {
    const { bus, errors } = await openKeepingErrors('no-js');
    const fix = `JetStream is not enabled on ${server.url}: start nats-server with -js`;
    // what llm-quota does at start: each failed with a bare "503", and the service with it
    await bus.ensureStream({ name: 'NOJS', subjects: ['analytics.>'] });
    const got: string[] = [];
    const consumer = await bus.consumeDurable({
      stream: 'NOJS',
      durable: 'no-js',
      filterSubject: 'analytics.llm.completion',
      handler: async (m) => void got.push((JSON.parse(m.data) as LlmCompletionEvent).id),
    });
    // a gateway's outbox keeps what is refused, and logs why
    const { bus: publisher, errors: publisherErrors } = await openKeepingErrors('no-js-publisher');
    for (const id of ['refused-1', 'refused-2'])
      await expect(publisher.publishDurable('analytics.llm.completion', completion(id), id)).rejects.toThrow(
        fix,
      );
    await expect(bus.ping()).rejects.toThrow(fix);
    expect(errors).toEqual([fix]);
    expect(publisherErrors).toEqual([fix]);

    await server.stop();
    await server.start(true);
    await waitFor(() => succeeds(bus.ping()), { timeoutMs: 15_000, what: 'JetStream found back' });
    await waitFor(
      () => succeeds(publisher.publishDurable('analytics.llm.completion', completion('after'), 'after')),
      { timeoutMs: 15_000, what: 'the stream made once JetStream is there' },
    );
    await expect(publisher.ping()).resolves.toBeUndefined();
    await waitFor(() => got.includes('after'), { timeoutMs: 15_000, what: 'the consumer started' });
    expect(got).toEqual(['after']);
    expect(errors).toEqual([fix]);
    expect(publisherErrors).toEqual([fix]);
    await consumer.stop();
  });

  it('says it again when JetStream goes away after it came, and consumes again once it is back', async () => {
    const { bus, errors } = await openKeepingErrors('js-comes-and-goes');
    const fix = `JetStream is not enabled on ${server.url}: start nats-server with -js`;
    await bus.ensureStream({ name: 'NOJS', subjects: ['analytics.>'] });
    const got: string[] = [];
    const consumer = await bus.consumeDurable({
      stream: 'NOJS',
      durable: 'comes-and-goes',
      filterSubject: 'analytics.llm.completion',
      handler: async (m) => void got.push((JSON.parse(m.data) as LlmCompletionEvent).id),
    });
    const { bus: publisher } = await openKeepingErrors('comes-and-goes-publisher');
    const restart = async (jetstream: boolean) => {
      await server.stop();
      await server.start(jetstream);
    };
    await restart(true);
    await waitFor(
      () => succeeds(publisher.publishDurable('analytics.llm.completion', completion('first'), 'first')),
      { timeoutMs: 15_000, what: 'JetStream there' },
    );
    await waitFor(() => got.includes('first'), { timeoutMs: 15_000, what: 'the consumer started' });
    expect(errors).toEqual([fix]);

    // the same server, restarted without -js: the consumer's bus says it, as at the start
    await restart(false);
    await waitFor(() => errors.length === 2, { timeoutMs: 15_000, what: 'JetStream missing said again' });
    expect(errors).toEqual([fix, fix]);
    await expect(bus.ping()).rejects.toThrow(fix);

    // enabled again without a restart: nothing reconnects, and readiness finds it back
    server.reload(true);
    await waitFor(() => succeeds(bus.ping()), { timeoutMs: 15_000, what: 'JetStream found back again' });
    await waitFor(
      () => succeeds(publisher.publishDurable('analytics.llm.completion', completion('second'), 'second')),
      { timeoutMs: 15_000, what: 'JetStream there again' },
    );
    // nats.js looks for a consumer it lost again once per pull expiry (30 s)
    await waitFor(() => got.includes('second'), { timeoutMs: 60_000, what: 'the consumer consuming again' });
    expect(got).toEqual(['first', 'second']);
    expect(errors).toEqual([fix, fix]);
    await consumer.stop();
  }, 120_000);
});
