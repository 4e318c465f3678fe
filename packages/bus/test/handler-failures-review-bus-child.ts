import type { OrgDeletedEvent } from '@platform/contracts';
import { createIpcBusClient, parentProcessChannel } from '../src';

/**
 * A service of `pnpm start` for handler-failures-review-bus.test.ts: its bus the IPC channel to the test (the hub),
 * subscribed to `auth.org.deleted` with a handler that fails for an org whose slug starts with `fail`. What it would
 * log (its bus's reports) and each call of its handler are JSON lines on stdout.
 */
const say = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);
const bus = createIpcBusClient(parentProcessChannel(), {
  onError: (err, context) => say({ report: { message: (err as Error).message, context } }),
});
process.on('disconnect', () => process.exit(0));
bus.subscribe('auth.org.deleted', (payload) => {
  const { orgSlug } = payload as OrgDeletedEvent;
  say({ called: orgSlug });
  if (orgSlug.startsWith('fail')) throw new Error('the settings store is away');
});
// answered once the hub has read the subscription, sent before it on the same channel
void bus.ping().then(() => say({ subscribed: true }));
