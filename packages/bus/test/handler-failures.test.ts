import path from 'node:path';
import { waitFor } from '@platform/testkit';
import { createInProcessBus, createIpcBusHub } from '../src';
import { completion } from './completion-event';
import {
  childService,
  expectSaidAsAnOutage,
  type Report,
  storeAwayForTenMinutes,
} from './handler-failures-scenario';

const STREAM = { name: 'FLOOD', subjects: ['analytics.>'] };

/** waits for the end of the scenario's second outage to be among the bus's reports */
const whenSecondOutageEnded = (reports: () => Report[]) =>
  waitFor(
    () => reports().filter((r) => r.message.startsWith('durable flood handles messages again')).length === 2,
    { what: 'the end of the second outage said' },
  );

describe("a durable consumer's handler failing for a while, as the in-process and IPC buses say it", () => {
  it('in-process bus: said once when it starts, at most once a minute while it lasts, once when a message is handled again', async () => {
    const scenario = storeAwayForTenMinutes();
    const reports: Report[] = [];
    const bus = createInProcessBus({
      clock: scenario.clock,
      onError: (err, context) => reports.push({ message: (err as Error).message, context }),
    });
    try {
      await bus.ensureStream(STREAM);
      const consumer = await bus.consumeDurable(scenario.consumer);
      for (const id of ['a', 'b', 'c'])
        await bus.publishDurable('analytics.llm.completion', completion(id), id);
      await waitFor(() => scenario.handled.length === 3, {
        timeoutMs: 60_000,
        what: 'the three messages handled',
      });
      expect(scenario.failures()).toBe(600);
      await bus.publishDurable('analytics.llm.completion', completion('again'), 'again');
      await whenSecondOutageEnded(() => reports);
      expectSaidAsAnOutage(reports);
      await consumer.stop();
    } finally {
      await bus.close();
    }
  }, 120_000);

  it("IPC bus: said the same way in the service's own process, where its handler runs", async () => {
    const hub = createIpcBusHub();
    await hub.bus.ensureStream(STREAM);
    const child = childService<{ report?: Report; handled?: string; failures?: number; consuming?: true }>(
      hub,
      path.join(__dirname, 'handler-failures-child.ts'),
    );
    const { lines } = child;
    const reports = () => lines.flatMap((l) => (l.report ? [l.report] : []));
    const handled = () => lines.flatMap((l) => (l.handled ? [l] : []));
    try {
      await waitFor(() => lines.some((l) => l.consuming), {
        timeoutMs: 30_000,
        what: `the child consuming ${child.errors()}`,
      });
      for (const id of ['a', 'b', 'c'])
        await hub.bus.publishDurable('analytics.llm.completion', completion(id), id);
      await waitFor(() => handled().length === 3, { timeoutMs: 60_000, what: 'the three messages handled' });
      expect(handled().at(-1)?.failures).toBe(600);
      await hub.bus.publishDurable('analytics.llm.completion', completion('again'), 'again');
      await waitFor(() => handled().length === 4, { what: 'the fourth message handled' });
      await whenSecondOutageEnded(reports);
      expectSaidAsAnOutage(reports());
    } finally {
      await child.stop();
      await hub.close();
    }
  }, 120_000);
});
