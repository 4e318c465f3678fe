import { Subjects } from '@platform/contracts';
import { waitFor } from '@platform/testkit';
import { createIpcBusClient, createIpcBusHub, type IpcBusMessage, type IpcChannel } from './ipc-bus';

/** A pair of channels joined like a parent and a child process's IPC (delivery on a later tick). */
function channelPair(): { child: IpcChannel; parent: IpcChannel; cut(): void } {
  const toChild = new Set<(m: unknown) => void>();
  const toParent = new Set<(m: unknown) => void>();
  let open = true;
  const side = (inbox: Set<(m: unknown) => void>, outbox: Set<(m: unknown) => void>): IpcChannel => ({
    send: (message: IpcBusMessage) => {
      if (!open) throw new Error('channel closed');
      const copy = JSON.parse(JSON.stringify(message));
      setImmediate(() => {
        for (const l of outbox) l(copy);
      });
    },
    onMessage: (listener) => {
      inbox.add(listener);
      return () => inbox.delete(listener);
    },
  });
  return { child: side(toChild, toParent), parent: side(toParent, toChild), cut: () => (open = false) };
}

const revoked = { version: 1 as const, kind: 'session' as const, id: 's1', at: '2025-01-01T00:00:00Z' };
const completion = (id: string) => ({
  id,
  version: 1 as const,
  occurredAt: '2025-01-01T00:00:00Z',
  orgSlug: 'acme',
  model: 'm',
  provider: 'p',
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  cost: 0,
});

describe('IPC bus: services in child processes share the parent hub', () => {
  it('a core event published by one child reaches every other child subscribed', async () => {
    const hub = createIpcBusHub();
    const a = channelPair();
    const b = channelPair();
    hub.attach(a.parent);
    hub.attach(b.parent);
    const publisher = createIpcBusClient(a.child);
    const subscriber = createIpcBusClient(b.child);
    const seen: unknown[] = [];
    subscriber.subscribe(Subjects.credentialRevoked, (p) => void seen.push(p));
    await subscriber.ping(); // the subscription reached the hub
    await publisher.publish(Subjects.credentialRevoked, revoked);
    await waitFor(() => seen.length === 1);
    expect(seen[0]).toEqual(revoked);
    await hub.close();
  });

  it('durable messages wait in the hub and are handed again when their consumer died unacknowledged', async () => {
    const hub = createIpcBusHub();
    const gateway = channelPair();
    hub.attach(gateway.parent);
    const publisher = createIpcBusClient(gateway.child);
    const stream = { name: 'ANALYTICS', subjects: ['analytics.>'] };
    await publisher.ensureStream(stream);

    // the first consumer takes the message and dies before acknowledging it
    const first = channelPair();
    const detachFirst = hub.attach(first.parent);
    const dying = createIpcBusClient(first.child);
    const taken: string[] = [];
    await dying.consumeDurable({
      stream: 'ANALYTICS',
      durable: 'llm-quota',
      filterSubject: 'analytics.llm.completion',
      retryDelayMs: 10,
      handler: async (m) => {
        taken.push(m.data);
        await new Promise(() => undefined); // never acknowledges
      },
    });
    await publisher.publishDurable(Subjects.llmCompletion, completion('e1'));
    await waitFor(() => taken.length === 1);
    first.cut();
    detachFirst();

    // its replacement gets it, exactly once acknowledged
    const second = channelPair();
    hub.attach(second.parent);
    const replacement = createIpcBusClient(second.child);
    const counted: Array<{ id: string; deliveryCount: number }> = [];
    await replacement.consumeDurable({
      stream: 'ANALYTICS',
      durable: 'llm-quota',
      filterSubject: 'analytics.llm.completion',
      retryDelayMs: 10,
      handler: async (m) => void counted.push({ id: JSON.parse(m.data).id, deliveryCount: m.deliveryCount }),
    });
    await waitFor(() => counted.length === 1);
    expect(counted[0]).toEqual({ id: 'e1', deliveryCount: 2 });
    await hub.close();
  });

  it('calls fail once the bus is closed', async () => {
    const hub = createIpcBusHub();
    const pair = channelPair();
    hub.attach(pair.parent);
    const client = createIpcBusClient(pair.child);
    await client.ping();
    await client.close();
    await expect(client.ping()).rejects.toThrow('bus is closed');
    await hub.close();
  });
});
