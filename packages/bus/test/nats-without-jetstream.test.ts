import type { LlmCompletionEvent } from '@platform/contracts';
import { describeWithNats, type NatsServerHandle, startNatsServer, waitFor } from '@platform/testkit';
import { type Bus, createNatsBus } from '../src';
import { completion, succeeds } from './completion-event';

describeWithNats('NATS bus on a nats-server without JetStream', () => {
  let server: NatsServerHandle;
  const buses: Bus[] = [];

  beforeEach(async () => {
    // setTimeout alone is faked, and keeps pace with the wall clock except in waitFast: the bus and nats.js wait
    // between their attempts with it
    jest.useFakeTimers({
      advanceTimers: true,
      doNotFake: [
        'Date',
        'hrtime',
        'nextTick',
        'performance',
        'queueMicrotask',
        'setImmediate',
        'clearImmediate',
        'setInterval',
        'clearInterval',
      ],
    });
    server = await startNatsServer({ jetstream: false });
  });
  afterEach(async () => {
    await Promise.all(buses.splice(0).map((b) => b.close()));
    await server.dispose();
    jest.useRealTimers();
  });

  /**
   * Waits for `probe` with timeouts running ten times faster: the waits between attempts at what JetStream's absence
   * left undone (the bus's, up to 5 s; nats.js's, 15 to 45 s) and a request left unanswered while the server stopped
   * or JetStream started (5 s) pass in a tenth of their time, while an answer of the server, in milliseconds, still
   * comes well within its request's 5 s.
   */
  const waitFast = async (probe: () => unknown, what: string) => {
    const fast = setInterval(() => jest.advanceTimersByTime(900), 100);
    try {
      return await waitFor(probe, { timeoutMs: 15_000, intervalMs: 200, what });
    } finally {
      clearInterval(fast);
    }
  };

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

  /** what llm-quota does at start: its stream made and its durable consumer started; the ids consumed in `got` */
  const consumeCompletions = async (bus: Bus, durable: string) => {
    await bus.ensureStream({ name: 'NOJS', subjects: ['analytics.>'] });
    const got: string[] = [];
    const consumer = await bus.consumeDurable({
      stream: 'NOJS',
      durable,
      filterSubject: 'analytics.llm.completion',
      handler: async (m) => void got.push((JSON.parse(m.data) as LlmCompletionEvent).id),
    });
    return { got, consumer };
  };

  it('degrades instead of failing, says once what to fix, and consumes once the server is restarted with -js', async () => {
    const { bus, errors } = await openKeepingErrors('no-js');
    const fix = `JetStream is not enabled on ${server.url}: start nats-server with -js`;
    // each failed with a bare "503", and llm-quota with it
    const { got, consumer } = await consumeCompletions(bus, 'no-js');
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
    await server.start({ jetstream: true });
    // the consumer's next attempt finds it
    await waitFast(() => succeeds(bus.ping()), 'JetStream found back');
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
    const { got, consumer } = await consumeCompletions(bus, 'comes-and-goes');
    const { bus: publisher } = await openKeepingErrors('comes-and-goes-publisher');
    const restart = async (jetstream: boolean) => {
      await server.stop();
      await server.start({ jetstream });
    };
    await restart(true);
    // the stream made by the consumer's next attempt
    await waitFast(
      () => succeeds(publisher.publishDurable('analytics.llm.completion', completion('first'), 'first')),
      'JetStream there',
    );
    await waitFor(() => got.includes('first'), { timeoutMs: 15_000, what: 'the consumer started' });
    expect(errors).toEqual([fix]);

    // the same server, restarted without -js: the consumer's bus says it, as at the start
    await restart(false);
    await waitFor(() => errors.length === 2, { timeoutMs: 15_000, what: 'JetStream missing said again' });
    expect(errors).toEqual([fix, fix]);
    await expect(bus.ping()).rejects.toThrow(fix);

    // enabled again without a restart: nothing reconnects, and readiness finds it back
    server.reload({ jetstream: true });
    await waitFor(() => succeeds(bus.ping()), { timeoutMs: 15_000, what: 'JetStream found back again' });
    await waitFast(
      () => succeeds(publisher.publishDurable('analytics.llm.completion', completion('second'), 'second')),
      'JetStream there again',
    );
    // nats.js looks for a consumer it lost again once per pull expiry (30 s), give or take half of it
    await waitFast(() => got.includes('second'), 'the consumer consuming again');
    expect(got).toEqual(['first', 'second']);
    expect(errors).toEqual([fix, fix]);
    await consumer.stop();
    // its waits' deadlines (two restarts and six waits) add up to 110 s: a slow step fails naming what it waited for
  }, 120_000);
});
