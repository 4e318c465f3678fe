import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { createIpcBusHub } from '@platform/bus';
import { createLogger } from '@platform/kernel';
import { tempDir, waitFor } from '@platform/testkit';
import { ServiceProcess } from './service-process';

/** a stand-in service: subscribes to `test.ping` through the hub, says it listens, and runs until SIGTERM */
const STAND_IN = `
process.send({ bus: 'sub', pattern: 'test.ping' });
process.send({ platform: 'listening', url: 'http://127.0.0.1:1' });
const timer = setInterval(() => undefined, 1000);
process.on('SIGTERM', () => process.exit(0));
`;

describe('a supervised service process', () => {
  const data = tempDir('service-process-');
  const file = path.join(data.dir, 'stand-in.js');
  writeFileSync(file, STAND_IN);
  const lines: Array<{ msg: string; child?: string; err?: { message: string } }> = [];
  const logger = createLogger({
    name: 'standalone',
    destination: { write: (line: string) => lines.push(JSON.parse(line)) },
  });
  const hub = createIpcBusHub();
  let supervised: ServiceProcess;
  let child: ChildProcess;

  beforeAll(async () => {
    supervised = new ServiceProcess(
      'stand-in',
      { PATH: process.env.PATH },
      {
        hub,
        logger,
        entry: { file, execArgv: [] },
      },
    );
    await supervised.start();
    child = (supervised as unknown as { child: ChildProcess }).child;
  });

  afterAll(async () => {
    await supervised.stop(5_000);
    await hub.close();
    data.remove();
  });

  it('logs each error of its child, the second one too, instead of crashing the supervisor', () => {
    child.emit('error', new Error('first'));
    child.emit('error', new Error('second'));
    expect(lines.filter((l) => l.child === 'stand-in').map((l) => l.err?.message)).toEqual(
      expect.arrayContaining(['first', 'second']),
    );
  });

  it('logs what the hub could not send it (EPIPE to a dying child), never an unhandled error', async () => {
    // as Node's send on a broken pipe: the error to the callback, or as an 'error' event without one
    child.send = ((_message: unknown, callback?: (err: Error) => void) => {
      const err = Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });
      if (typeof callback === 'function') process.nextTick(callback, err);
      else process.nextTick(() => child.emit('error', err));
      return false;
    }) as ChildProcess['send'];
    await hub.bus.publish('test.ping' as never, { n: 1 } as never);
    await new Promise((resolve) => setImmediate(resolve));
    await hub.bus.publish('test.ping' as never, { n: 2 } as never);
    await waitFor(() => lines.filter((l) => l.err?.message === 'write EPIPE').length === 2, {
      what: 'both failed sends logged',
    });
    expect(child.exitCode).toBeNull();
  });
});
