import type { Bus } from '@platform/bus';
import { ManualClock, silentLogger } from '@platform/kernel';
import type { SettingsRepository } from '../data/settings-repo';
import type { UsageBatcher } from './usage-batcher';
import { RetryLater, UsageConsumer } from './usage-consumer';

const message = (data: string) => ({ subject: 'analytics.llm.completion', data, deliveryCount: 1 });
const valid = JSON.stringify({
  id: 'e1',
  version: 1,
  occurredAt: '2025-03-15T12:00:00Z',
  orgSlug: 'acme',
  model: 'm',
  provider: 'p',
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  cost: 0,
});

function consumer(bus: Partial<Bus>, outcome: 'counted' | 'duplicate' | 'retry' = 'counted') {
  const add = jest.fn().mockResolvedValue(outcome);
  const ensure = jest.fn().mockResolvedValue(undefined);
  const outcomes: string[] = [];
  const c = new UsageConsumer({
    bus: bus as Bus,
    batcher: { add } as unknown as UsageBatcher,
    settings: { ensure } as unknown as SettingsRepository,
    clock: new ManualClock('2025-03-15T12:00:30Z'),
    logger: silentLogger(),
    stream: 'ANALYTICS',
    durable: 'llm-quota',
    streamMaxAgeMs: 0,
    maxEventAgeMs: 86_400_000,
    concurrency: 1,
    retryDelayMs: 10,
    onOutcome: (o) => outcomes.push(o),
  });
  return { c, add, ensure, outcomes };
}

describe('UsageConsumer.handle', () => {
  it('counts a valid event, making sure its organization has settings once', async () => {
    const { c, add, ensure, outcomes } = consumer({});
    await c.handle(message(valid));
    await c.handle(message(valid));
    expect(add).toHaveBeenCalledTimes(2);
    expect(ensure).toHaveBeenCalledTimes(1);
    expect(outcomes).toEqual(['counted', 'counted']);
  });

  it('asks for a redelivery when the event must be retried', async () => {
    const { c } = consumer({}, 'retry');
    await expect(c.handle(message(valid))).rejects.toBeInstanceOf(RetryLater);
  });

  it('dead-letters a malformed event into the stream and acknowledges it', async () => {
    const publishDurable = jest.fn().mockResolvedValue(undefined);
    const { c, add, outcomes } = consumer({ publishDurable });
    await c.handle(message('nope'));
    expect(publishDurable).toHaveBeenCalledWith('analytics.llm.completion.dead', {
      reason: 'malformed_json',
      raw: 'nope',
      at: '2025-03-15T12:00:30.000Z',
    });
    expect(add).not.toHaveBeenCalled();
    expect(outcomes).toEqual(['dead_letter']);
  });

  it('still acknowledges a malformed event when no stream takes dead letters', async () => {
    const publishDurable = jest.fn().mockRejectedValue(new Error('no stream matches subject'));
    const publish = jest.fn().mockResolvedValue(undefined);
    const { c } = consumer({ publishDurable, publish });
    await expect(c.handle(message('{"id":"x"}'))).resolves.toBeUndefined();
    expect(publish).toHaveBeenCalledWith(
      'analytics.llm.completion.dead',
      expect.objectContaining({ raw: '{"id":"x"}' }),
    );
  });
});
