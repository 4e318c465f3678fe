import { execFileSync } from 'node:child_process';
import path from 'node:path';

describe('the NATS client is loaded only when a bus on NATS is created', () => {
  it('a process on the in-process bus never loads the nats package', () => {
    // a process of its own: jest's module registry is not node's
    const script = `
      const { createInProcessBus } = require('./src');
      (async () => {
        const bus = createInProcessBus();
        let got = null;
        bus.subscribe('auth.credential.revoked', (payload) => { got = payload; });
        await bus.publish('auth.credential.revoked', { version: 1 });
        await new Promise((resolve) => setTimeout(resolve, 20));
        const loaded = Object.keys(require.cache).filter((f) => /node_modules\\/nats\\//.test(f));
        console.log(JSON.stringify({ delivered: got !== null, loaded }));
      })();
    `;
    const out = execFileSync(process.execPath, ['--require', 'tsx/cjs', '-e', script], {
      cwd: path.join(__dirname, '..'),
      encoding: 'utf8',
    });
    expect(JSON.parse(out.trim().split('\n').at(-1)!)).toEqual({ delivered: true, loaded: [] });
  });
});
