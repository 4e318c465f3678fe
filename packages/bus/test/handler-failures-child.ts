import type { LlmCompletionEvent } from '@platform/contracts';
import { createIpcBusClient, parentProcessChannel } from '../src';
import { storeAwayForTenMinutes } from './handler-failures-scenario';

/**
 * A service of `pnpm start` for handler-failures.test.ts: its bus the IPC channel to the test (the hub), its durable
 * handler the scenario's. What it would log (its bus's reports) and what it handled are JSON lines on stdout.
 */
const say = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);
const scenario = storeAwayForTenMinutes();
const bus = createIpcBusClient(parentProcessChannel(), {
  clock: scenario.clock,
  onError: (err, context) => say({ report: { message: (err as Error).message, context } }),
});
process.on('disconnect', () => process.exit(0));
void bus
  .consumeDurable({
    ...scenario.consumer,
    handler: async (m) => {
      await scenario.consumer.handler(m);
      say({ handled: (JSON.parse(m.data) as LlmCompletionEvent).id, failures: scenario.failures() });
    },
  })
  .then(() => say({ consuming: true }));
