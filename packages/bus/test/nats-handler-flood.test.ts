import type { LlmCompletionEvent } from '@platform/contracts';
import { describeWithNats, type NatsServerHandle, startNatsServer, waitFor } from '@platform/testkit';
import { type Bus, createNatsBus } from '../src';
import { completion } from './completion-event';

const MINUTE = 60_000;

describeWithNats("NATS bus when a durable consumer's handler keeps failing", () => {
  let server: NatsServerHandle;
  const buses: Bus[] = [];

  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterEach(async () => {
    await Promise.all(buses.splice(0).map((b) => b.close()));
  });
  afterAll(async () => {
    await server.dispose();
  });

  it('says it once when it starts, at most once a minute while it lasts, and once when a message is handled again', async () => {
    // a clock moved by the handler: each failed call stands for llm-quota's one-second retry while its store is away
    let now = Date.parse('2026-11-28T10:00:00Z');
    const reports: Array<{ message: string; context: string }> = [];
    const bus = await createNatsBus({
      url: server.url,
      name: 'llm-quota',
      clock: { now: () => new Date(now) },
      onError: (err, context) => reports.push({ message: (err as Error).message, context }),
    });
    buses.push(bus);
    await bus.ensureStream({ name: 'FLOOD', subjects: ['analytics.>'] });
    const outageEnds = now + 10 * MINUTE;
    const handled: string[] = [];
    let failures = 0;
    let awayAgain = false;
    const consumer = await bus.consumeDurable({
      stream: 'FLOOD',
      durable: 'flood',
      filterSubject: 'analytics.llm.completion',
      retryDelayMs: 0,
      handler: async (m) => {
        if (awayAgain) throw new Error('the store is away again');
        if (now < outageEnds) {
          now += 1000;
          failures++;
          throw new Error('the store is away');
        }
        handled.push((JSON.parse(m.data) as LlmCompletionEvent).id);
      },
    });
    for (const id of ['a', 'b', 'c'])
      await bus.publishDurable('analytics.llm.completion', completion(id), id);
    await waitFor(() => handled.length === 3, { timeoutMs: 60_000, what: 'the three messages handled' });

    // ten simulated minutes of failures, every call failed until then
    expect(failures).toBe(600);
    const said = reports.filter((r) => r.context.startsWith('durable flood'));
    // a line when it starts, nine reminders, a line when it ends (600 lines before: one per failed call)
    expect(said).toHaveLength(11);
    expect(said[0]).toEqual({
      message: 'the store is away',
      context: expect.stringContaining('its handler failed'),
    });
    // one a minute after the first failure, each a minute after the one before, with the latest why
    const reminders = said.slice(1, -1);
    expect(reminders).toEqual(
      reminders.map((_, i) => ({
        message: 'the store is away',
        context: expect.stringContaining(`still fails: ${61 + 60 * i} failures since 2026-11-28T10:00:01`),
      })),
    );
    expect(said.at(-1)?.message).toBe(
      'durable flood handles messages again, after 600 failures since 2026-11-28T10:00:01.000Z (599 s)',
    );

    // a failure after that is a new outage, said at once
    awayAgain = true;
    await bus.publishDurable('analytics.llm.completion', completion('d'), 'd');
    await waitFor(() => reports.some((r) => r.message === 'the store is away again'), {
      timeoutMs: 15_000,
      what: 'the new outage said',
    });
    expect(reports.find((r) => r.message === 'the store is away again')?.context).toContain(
      'its handler failed',
    );
    await consumer.stop();
  }, 120_000);
});
