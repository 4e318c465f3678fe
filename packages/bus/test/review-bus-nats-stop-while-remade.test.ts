import type { LlmCompletionEvent } from '@platform/contracts';
import { describeWithNats, type NatsServerHandle, startNatsServer, waitFor } from '@platform/testkit';
import { type ConsumerMessages, connect, type NatsConnection, StringCodec } from 'nats';
import type { Consumer } from '../src';
import { consumeDurable, type DurableConsumerBus } from '../src/nats-durable-consumer';
import { jetstreamOf } from '../src/nats-jetstream';
import { completion } from './completion-event';

const codec = StringCodec();

/** where a consumer being made again after its loss is when it is stopped, or its bus closed */
type Phase = 'before its stream is made' | 'while the consumer is being added' | 'once it pulls again';
const PHASES: Phase[] = [
  'before its stream is made',
  'while the consumer is being added',
  'once it pulls again',
];

/**
 * A durable consumer made again after its loss (its consumer deleted on the server), stopped or its bus closed at each
 * step of that: the stop or the close ends, nothing is left among the bus's consumers pulling, and no message reaches
 * the handler once the stop has returned. The bus is nats-bus.ts's part for its consumers, its close() as there.
 */
describeWithNats(
  'a NATS durable consumer stopped, or its bus closed, at each step of being made again',
  () => {
    let server: NatsServerHandle;
    let stream = 0;

    beforeAll(async () => {
      server = await startNatsServer();
    });
    afterAll(() => server.dispose());

    const remade = async (phase: Phase, ending: 'stop' | 'close') => {
      const nc: NatsConnection = await connect({ servers: server.url });
      const name = `REMADE${++stream}`;
      const streamOptions = { name, subjects: [`analytics.r${stream}.>`] };
      const subject = `analytics.r${stream}.llm.completion`;
      const reports: string[] = [];
      const report = (err: unknown, context: string) => reports.push(`${context}: ${(err as Error).message}`);
      let consumer: Consumer | undefined;
      let armed = false;
      let closed = false;
      let ended: Promise<void> | undefined;
      let endReturned = false;
      const handled: Array<{ id: string; afterStop: boolean }> = [];
      const pulling = new Set<ConsumerMessages>();
      const addPulling = pulling.add.bind(pulling);
      pulling.add = (messages) => {
        addPulling(messages);
        end('once it pulls again');
        return pulling;
      };
      /** as nats-bus.ts closes: the consumers pulling first, then the connection */
      const closeBus = async () => {
        closed = true;
        for (const messages of pulling) await messages.close().catch(() => undefined);
        await nc.drain().catch(() => undefined);
      };
      /** the stop or the close, started once, at the step armed */
      const end = (at: Phase) => {
        if (!armed || at !== phase || ended) return;
        ended = (ending === 'stop' ? consumer!.stop() : closeBus()).then(() => {
          endReturned = true;
        });
      };
      const js = jetstreamOf(server.url, report);
      const bus: DurableConsumerBus = {
        server: server.url,
        report,
        clock: { now: () => new Date() },
        jetstream: {
          ...js,
          async managerOn(conn) {
            const jsm = await js.managerOn(conn);
            const add = jsm.consumers.add.bind(jsm.consumers);
            jsm.consumers.add = (...args) => {
              const adding = add(...args);
              end('while the consumer is being added');
              return adding;
            };
            return jsm;
          },
        },
        pulling,
        streamEnsured: (asked) => {
          end('before its stream is made');
          return asked === name ? streamOptions : undefined;
        },
        connection: Promise.resolve(nc),
        isClosed: () => closed,
      };
      try {
        await js.ensureStreamOn(nc, streamOptions);
        consumer = await consumeDurable(bus, nc, {
          stream: name,
          durable: 'remade',
          filterSubject: subject,
          handler: async (m) => {
            handled.push({ id: (JSON.parse(m.data) as LlmCompletionEvent).id, afterStop: endReturned });
          },
        });
        for (const id of ['a', 'b', 'c'])
          await nc.jetstream().publish(subject, codec.encode(JSON.stringify(completion(id))));
        await waitFor(() => handled.length === 3, { what: 'the three messages handled' });

        // made again, it takes the three from the start of the stream: the step armed ends it
        armed = true;
        await (await nc.jetstreamManager()).consumers.delete(name, 'remade');
        await waitFor(() => ended !== undefined, { what: `the consumer made again (${reports})` });
        await waitFor(() => endReturned, { what: `the ${ending} to end` });
        if (ending === 'close') await consumer.stop();
        await waitFor(() => pulling.size === 0, { what: "nothing left among the bus's consumers pulling" });
        // a message the server still handed out would come before the answer to this
        if (!nc.isClosed()) await nc.flush();
        expect(handled.filter((h) => h.afterStop)).toEqual([]);
        expect(reports).toEqual([expect.stringContaining('is missing on NATS')]);
      } finally {
        if (!nc.isClosed()) await nc.close();
      }
    };

    for (const phase of PHASES) {
      it(`stopped ${phase}: the stop ends, and leaves nothing pulling`, () => remade(phase, 'stop'));
      it(`its bus closed ${phase}: the close ends, and leaves nothing pulling`, () => remade(phase, 'close'));
    }
  },
);
