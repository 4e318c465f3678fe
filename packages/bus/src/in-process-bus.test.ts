import { waitFor } from '@platform/testkit';
import { createInProcessBus, subjectMatches } from './in-process-bus';

describe('subject matching', () => {
  it.each([
    ['a.b', 'a.b', true],
    ['a.*', 'a.b', true],
    ['a.*', 'a.b.c', false],
    ['a.>', 'a.b.c', true],
    ['a.>', 'a', false],
    ['a.b', 'a.c', false],
  ])('%s matches %s: %s', (pattern, subject, expected) => {
    expect(subjectMatches(pattern, subject)).toBe(expected);
  });
});

describe('in-process bus', () => {
  it('delivers to subscribers, and durable messages to a consumer attached later, retrying failures', async () => {
    const bus = createInProcessBus();
    const seen: unknown[] = [];
    bus.subscribe('auth.membership.changed', (p) => {
      seen.push(p);
    });
    await bus.publish('auth.membership.changed', { version: 1, orgSlug: 'acme', at: 'now' });
    await waitFor(() => seen.length === 1);

    await bus.ensureStream({ name: 'S', subjects: ['analytics.>'] });
    const consumer0 = await bus.consumeDurable({
      stream: 'S',
      durable: 'd',
      filterSubject: 'analytics.llm.completion',
      handler: async () => undefined,
    });
    await consumer0.stop();
    await bus.publishDurable('analytics.llm.completion.dead', { reason: 'x', raw: '{}', at: 'now' });
    await bus.publishDurable('analytics.llm.completion', {
      id: 'e1',
      version: 1,
      occurredAt: '2026-01-01T00:00:00Z',
      orgSlug: 'acme',
      model: 'm',
      provider: 'p',
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
      cost: 0,
    });
    const attempts: number[] = [];
    await bus.consumeDurable({
      stream: 'S',
      durable: 'd',
      filterSubject: 'analytics.llm.completion',
      retryDelayMs: 10,
      handler: async (m) => {
        attempts.push(m.deliveryCount);
        if (m.deliveryCount === 1) throw new Error('retry me');
      },
    });
    await waitFor(() => attempts.length === 2);
    expect(attempts).toEqual([1, 2]);
    await bus.close();
  });

  it('keeps durable messages published before their stream or its first consumer exists, as JetStream would', async () => {
    // `pnpm start`: the gateway's outbox can publish before llm-quota has made the stream and its consumer; the
    // publication was acknowledged and the event was gone
    const bus = createInProcessBus();
    const event = (id: string) => ({
      id,
      version: 1 as const,
      occurredAt: '2026-01-01T00:00:00Z',
      orgSlug: 'acme',
      model: 'm',
      provider: 'p',
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
      cost: 0,
    });
    await bus.publishDurable('analytics.llm.completion', event('before-stream'), 'before-stream');
    await bus.ensureStream({ name: 'LATE', subjects: ['analytics.>'] });
    await bus.publishDurable('analytics.llm.completion', event('before-consumer'), 'before-consumer');
    await bus.publishDurable('analytics.llm.completion.dead', { reason: 'x', raw: '{}', at: 'now' });
    const got: string[] = [];
    const consumer = await bus.consumeDurable({
      stream: 'LATE',
      durable: 'late',
      filterSubject: 'analytics.llm.completion',
      handler: async (m) => {
        got.push((JSON.parse(m.data) as { id: string }).id);
      },
    });
    await bus.publishDurable('analytics.llm.completion', event('after'), 'after');
    await waitFor(() => got.length === 3);
    expect(got).toEqual(['before-stream', 'before-consumer', 'after']);
    await consumer.stop();
    await bus.close();
  });

  it('says so, once, when it drops the oldest of more durable messages than it holds for a missing stream', async () => {
    const bus = createInProcessBus();
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      for (let i = 0; i < 10_002; i++)
        await bus.publishDurable('analytics.llm.completion.dead', { reason: 'x', raw: String(i), at: 'now' });
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls[0]).toEqual([
        expect.stringMatching(/^more than 10000 durable messages on analytics\.llm\.completion\.dead wait/),
        'BusWarning',
      ]);
    } finally {
      warn.mockRestore();
      await bus.close();
    }
  }, 30_000);
});
