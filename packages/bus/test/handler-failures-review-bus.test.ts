import path from 'node:path';
import type { LlmCompletionEvent, OrgDeletedEvent } from '@platform/contracts';
import { describeWithNats, type NatsServerHandle, startNatsServer, waitFor } from '@platform/testkit';
import { type Bus, type BusReporting, createInProcessBus, createIpcBusHub, createNatsBus } from '../src';
import { completion } from './completion-event';
import { childService, type Report } from './handler-failures-scenario';

const STREAM = { name: 'OVERLAP', subjects: ['analytics.>'] };

/**
 * Two messages handled at once (concurrency 2): `a` fails, and `b` is handled while `a` is still failing (it returns
 * once `a`'s failure was said). `b` handled is no end of the failures: `a` fails twice more after it, then is handled,
 * and only that ends them. Said as one outage: a line when it starts, one when it ends, on every bus alike.
 */
function overlappingCalls(open: (reporting: BusReporting) => Promise<Bus>) {
  it('a message handled while another one fails does not end the failures', async () => {
    const reports: Report[] = [];
    const bus = await open({
      onError: (err, context) => reports.push({ message: (err as Error).message, context }),
    });
    try {
      await bus.ensureStream(STREAM);
      let bStarted = false;
      let bReturned = false;
      let aFailuresAfterB = 0;
      const handled: string[] = [];
      const consumer = await bus.consumeDurable({
        stream: STREAM.name,
        durable: 'overlap',
        filterSubject: 'analytics.llm.completion',
        concurrency: 2,
        retryDelayMs: 0,
        handler: async (m) => {
          const { id } = JSON.parse(m.data) as LlmCompletionEvent;
          if (id === 'b') {
            bStarted = true;
            await waitFor(() => reports.length > 0, { what: "a's failure said" });
            bReturned = true;
          } else if (!bReturned || aFailuresAfterB < 2) {
            if (m.deliveryCount === 1) await waitFor(() => bStarted, { what: 'b handled alongside a' });
            if (bReturned) aFailuresAfterB++;
            throw new Error('the store refuses a');
          }
          handled.push(id);
        },
      });
      for (const id of ['a', 'b']) await bus.publishDurable('analytics.llm.completion', completion(id), id);
      await waitFor(() => handled.length === 2, { what: 'both handled' });
      await waitFor(() => reports.length >= 2, { what: 'the end of the failures said' });
      expect(handled).toEqual(['b', 'a']);
      expect(aFailuresAfterB).toBe(2);
      expect(reports).toEqual([
        {
          message: 'the store refuses a',
          context: expect.stringMatching(/^durable overlap: its handler failed; /),
        },
        {
          message: expect.stringMatching(
            /^durable overlap handles messages again, after \d+ failures since /,
          ),
          context: 'durable overlap',
        },
      ]);
      await consumer.stop();
    } finally {
      await bus.close();
    }
  }, 30_000);
}

describe("the in-process bus: a durable's handler called for several messages at once", () => {
  overlappingCalls(async (reporting) => createInProcessBus(reporting));
});

describeWithNats("the NATS bus: a durable's handler called for several messages at once", () => {
  let server: NatsServerHandle;
  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterAll(() => server.dispose());
  overlappingCalls((reporting) => createNatsBus({ url: server.url, name: 'llm-quota', ...reporting }));
});

const orgDeleted = (orgSlug: string): OrgDeletedEvent => ({ version: 1, orgId: orgSlug, orgSlug, at: 'now' });

/**
 * A plain subscription's handler failing for a hundred notifications (what it writes to is away), then handling one:
 * said as a durable's failures are, a line when they start (as the NATS bus says each: `handler for <subject>`) and
 * one when they end, not a line each.
 */
const expectSaidOnce = (reports: Report[]) =>
  expect(reports).toEqual([
    { message: 'the settings store is away', context: 'handler for auth.org.deleted' },
    {
      message: expect.stringMatching(
        /^handler for auth\.org\.deleted handles messages again, after 100 failures since /,
      ),
      context: 'handler for auth.org.deleted',
    },
  ]);

/** the hundred failing notifications, then one handled, on `bus` (subscribed before the first is published) */
async function failForAWhile(bus: Bus, reports: Report[]) {
  const called: string[] = [];
  bus.subscribe('auth.org.deleted', (payload) => {
    const { orgSlug } = payload as OrgDeletedEvent;
    called.push(orgSlug);
    if (orgSlug.startsWith('fail')) throw new Error('the settings store is away');
  });
  await bus.ping();
  for (let i = 0; i < 100; i++) await bus.publish('auth.org.deleted', orgDeleted(`fail-${i}`));
  await waitFor(() => called.length === 100, { what: 'the hundred notifications handled' });
  await bus.publish('auth.org.deleted', orgDeleted('ok'));
  await waitFor(() => reports.length === 2, { what: 'the end of the failures said' });
  expectSaidOnce(reports);
}

describeWithNats("a plain subscription's handler failing for a while, on NATS", () => {
  let server: NatsServerHandle;
  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterAll(() => server.dispose());
  it('said once when it starts and once when it ends, not once a notification', async () => {
    const reports: Report[] = [];
    const bus = await createNatsBus({
      url: server.url,
      name: 'auth',
      onError: (err, context) => reports.push({ message: (err as Error).message, context }),
    });
    try {
      await failForAWhile(bus, reports);
    } finally {
      await bus.close();
    }
  });
});

describe("a plain subscription's handler failing for a while", () => {
  it('in-process bus: said once when it starts and once when it ends, not once a notification', async () => {
    const reports: Report[] = [];
    const bus = createInProcessBus({
      onError: (err, context) => reports.push({ message: (err as Error).message, context }),
    });
    try {
      await failForAWhile(bus, reports);
    } finally {
      await bus.close();
    }
  });

  it("IPC bus: said the same way in the service's own process, where its handler runs", async () => {
    const hub = createIpcBusHub();
    const child = childService<{ report?: Report; called?: string; subscribed?: true }>(
      hub,
      path.join(__dirname, 'handler-failures-review-bus-child.ts'),
    );
    const { lines } = child;
    const reports = () => lines.flatMap((l) => (l.report ? [l.report] : []));
    try {
      await waitFor(() => lines.some((l) => l.subscribed), {
        timeoutMs: 30_000,
        what: `the child subscribed ${child.errors()}`,
      });
      for (let i = 0; i < 100; i++) await hub.bus.publish('auth.org.deleted', orgDeleted(`fail-${i}`));
      await waitFor(() => lines.filter((l) => l.called).length === 100, {
        what: 'the hundred notifications handled',
      });
      await hub.bus.publish('auth.org.deleted', orgDeleted('ok'));
      await waitFor(() => reports().length === 2, { what: 'the end of the failures said' });
      expectSaidOnce(reports());
    } finally {
      await child.stop();
      await hub.close();
    }
  }, 60_000);
});
