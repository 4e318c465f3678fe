import { fork } from 'node:child_process';
import path from 'node:path';
import type { LlmCompletionEvent } from '@platform/contracts';
import { batchingChannel, type createIpcBusHub, type DurableConsumerOptions } from '../src';

const MINUTE = 60_000;

/** What a bus reported through its `onError`: the error's message and the context it gave. */
export interface Report {
  message: string;
  context: string;
}

/**
 * llm-quota's counting while its store is away for ten minutes, on a clock moved by the handler: each failed call
 * stands for its one-second retry. After the outage a message whose id is `again` fails once more, a new outage.
 * The same scenario as the NATS bus's (nats-handler-flood.test.ts), for the in-process and IPC buses.
 */
export function storeAwayForTenMinutes() {
  let now = Date.parse('2026-11-28T10:00:00Z');
  const outageEnds = now + 10 * MINUTE;
  const handled: string[] = [];
  let failures = 0;
  const consumer: DurableConsumerOptions = {
    stream: 'FLOOD',
    durable: 'flood',
    filterSubject: 'analytics.llm.completion',
    retryDelayMs: 0,
    handler: async (m) => {
      const { id } = JSON.parse(m.data) as LlmCompletionEvent;
      if (id === 'again' && m.deliveryCount === 1) throw new Error('the store is away again');
      if (now < outageEnds) {
        now += 1000;
        failures++;
        throw new Error('the store is away');
      }
      handled.push(id);
    },
  };
  return { clock: { now: () => new Date(now) }, consumer, handled, failures: () => failures };
}

/**
 * What the scenario's reports must be, as the NATS bus says them: a line when the failures start, one a minute
 * while they last, one when a message is handled again; then the second outage, said at once, and its end.
 */
export function expectSaidAsAnOutage(reports: Report[]): void {
  const said = reports.filter((r) => r.context.startsWith('durable flood'));
  expect(said).toHaveLength(13);
  expect(said[0]).toEqual({
    message: 'the store is away',
    context:
      'durable flood: its handler failed; each failed message is delivered again after 0 ms, and failures are said again at most once a minute until one is handled',
  });
  // one a minute after the first failure, each a minute after the one before, with the latest why
  const reminders = said.slice(1, 10);
  expect(reminders).toEqual(
    reminders.map((_, i) => ({
      message: 'the store is away',
      context: `durable flood: its handler still fails: ${61 + 60 * i} failures since 2026-11-28T10:00:01.000Z`,
    })),
  );
  expect(said[10]).toEqual({
    message:
      'durable flood handles messages again, after 600 failures since 2026-11-28T10:00:01.000Z (599 s)',
    context: 'durable flood',
  });
  expect(said[11]).toEqual({ message: 'the store is away again', context: said[0]!.context });
  expect(said[12]!.message).toMatch(/^durable flood handles messages again, after 1 failures since /);
}

/**
 * A service of `pnpm start` in a child process (`file`, run with tsx), its IPC bus client attached to `hub`: the JSON
 * lines it writes on stdout as they come, what it wrote on stderr, and `stop`.
 */
export function childService<Line>(hub: ReturnType<typeof createIpcBusHub>, file: string) {
  const child = fork(file, [], {
    cwd: path.resolve(__dirname, '../../..'),
    execArgv: ['--require', 'tsx/cjs'],
    env: { PATH: process.env.PATH },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const lines: Line[] = [];
  let partial = '';
  let errors = '';
  child.stdout!.on('data', (d: Buffer) => {
    const complete = (partial + d.toString()).split('\n');
    partial = complete.pop()!;
    for (const line of complete) lines.push(JSON.parse(line));
  });
  child.stderr!.on('data', (d: Buffer) => {
    errors += d.toString();
  });
  const detach = hub.attach(
    batchingChannel({
      send: (message) => {
        if (child.connected) child.send(message);
      },
      onMessage: (listener) => {
        child.on('message', listener);
        return () => child.off('message', listener);
      },
    }),
  );
  return {
    lines,
    errors: () => errors,
    stop: async () => {
      detach();
      child.kill();
      await exited;
    },
  };
}
