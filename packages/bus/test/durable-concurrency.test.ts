import type { LlmCompletionEvent } from '@platform/contracts';
import { describeWithNats, type NatsServerHandle, startNatsServer, waitFor } from '@platform/testkit';
import { type Bus, createInProcessBus, createNatsBus } from '../src';

const completion = (id: string): LlmCompletionEvent => ({
  id,
  version: 1,
  occurredAt: '2026-11-23T10:00:00Z',
  orgSlug: 'acme',
  model: 'm',
  provider: 'p',
  usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
  cost: 0.01,
});

/** `concurrency`: up to N handlers at once, each message acknowledged (or retried) on its own. */
function concurrencyContract(open: () => Promise<Bus>, stream: string) {
  it('runs up to `concurrency` handlers at once and still delivers every message, retrying failures', async () => {
    const bus = await open();
    await bus.ensureStream({ name: stream, subjects: ['analytics.>'] });
    let running = 0;
    let most = 0;
    const done = new Set<string>();
    let failedOnce = false;
    const release: Array<() => void> = [];
    const consumer = await bus.consumeDurable({
      stream,
      durable: `concurrent-${stream}`,
      filterSubject: 'analytics.llm.completion',
      concurrency: 5,
      retryDelayMs: 20,
      handler: async (m) => {
        const { id } = JSON.parse(m.data) as LlmCompletionEvent;
        running++;
        most = Math.max(most, running);
        // Hold each handler until five are running (or the backlog is nearly done), to see them overlap.
        if (running < 5 && done.size < 15) await new Promise<void>((r) => release.push(r));
        else while (release.length) release.shift()!();
        running--;
        if (id === 'c3' && !failedOnce) {
          failedOnce = true;
          throw new Error('first attempt fails');
        }
        done.add(id);
      },
    });
    for (let i = 0; i < 20; i++) await bus.publishDurable('analytics.llm.completion', completion(`c${i}`));
    await waitFor(() => {
      while (release.length) release.shift()!();
      return done.size === 20;
    });
    expect(most).toBe(5);
    expect(failedOnce).toBe(true);
    await consumer.stop();
    await bus.close();
  });
}

describe('in-process bus', () => {
  concurrencyContract(async () => createInProcessBus(), 'INPROC');
});

describeWithNats('NATS bus', () => {
  let server: NatsServerHandle;
  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterAll(() => server.dispose());
  concurrencyContract(() => createNatsBus({ url: server.url, name: 'concurrency' }), 'CONCURRENT');
});
