import { Subjects } from '@platform/contracts';
import { waitFor } from '@platform/testkit';
import {
  batchingChannel,
  createIpcBusClient,
  createIpcBusHub,
  type IpcBusMessage,
  type IpcChannel,
} from './ipc-bus';

/**
 * A pair of channels joined like a parent and a child process's IPC (delivery on a later tick);
 * `written` counts the messages each end put on the wire.
 */
function channelPair(): {
  child: IpcChannel;
  parent: IpcChannel;
  cut(): void;
  written: { child: number; parent: number };
} {
  const written = { child: 0, parent: 0 };
  const toChild = new Set<(m: unknown) => void>();
  const toParent = new Set<(m: unknown) => void>();
  let open = true;
  const side = (
    end: 'child' | 'parent',
    inbox: Set<(m: unknown) => void>,
    outbox: Set<(m: unknown) => void>,
  ): IpcChannel => ({
    send: (message: IpcBusMessage) => {
      if (!open) throw new Error('channel closed');
      written[end]++;
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
  return {
    child: side('child', toChild, toParent),
    parent: side('parent', toParent, toChild),
    cut: () => (open = false),
    written,
  };
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

  it('with batching ends, a group of durable publications crosses in a few messages, each counted once, in order', async () => {
    const hub = createIpcBusHub();
    const gateway = channelPair();
    const quota = channelPair();
    hub.attach(batchingChannel(gateway.parent));
    hub.attach(batchingChannel(quota.parent));
    const publisher = createIpcBusClient(batchingChannel(gateway.child));
    const consumer = createIpcBusClient(batchingChannel(quota.child));
    await publisher.ensureStream({ name: 'ANALYTICS', subjects: ['analytics.>'] });
    const counted: string[] = [];
    await consumer.consumeDurable({
      stream: 'ANALYTICS',
      durable: 'llm-quota',
      filterSubject: 'analytics.llm.completion',
      retryDelayMs: 10,
      handler: async (m) => void counted.push(JSON.parse(m.data).id),
    });
    const before = { ...gateway.written };
    const ids = Array.from({ length: 50 }, (_, i) => `e${i}`);
    // an outbox group: every publication sent in one turn
    await Promise.all(ids.map((id) => publisher.publishDurable(Subjects.llmCompletion, completion(id))));
    await waitFor(() => counted.length === 50);
    expect(counted).toEqual(ids);
    expect(gateway.written.child - before.child).toBe(1); // 50 calls, one message
    expect(gateway.written.parent - before.parent).toBeLessThan(50); // their results, batched too
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(counted).toHaveLength(50); // acknowledged: nothing handed again
    await hub.close();
  });

  it('a batching end whose channel has closed drops what it owed, without throwing', async () => {
    let tried = 0;
    const end = batchingChannel({
      send: () => {
        tried++;
        throw new Error('channel closed');
      },
      onMessage: () => () => undefined,
    });
    end.send({ bus: 'sub', pattern: 'a' });
    end.send({ bus: 'sub', pattern: 'b' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(tried).toBe(1); // one batch, refused, and nothing thrown out of the loop's turn
  });
});
