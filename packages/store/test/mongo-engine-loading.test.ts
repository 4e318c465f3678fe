import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { createMongoStore } from '../src';

describe('the MongoDB engine is loaded only when it is used', () => {
  it('a process on the embedded engine never loads mongoose or the driver', () => {
    // a process of its own: jest's module registry is not node's
    const script = `
      const { createEmbeddedStore } = require('./src');
      (async () => {
        const store = createEmbeddedStore();
        await store.collection('things').insertOne({ _id: 'a' });
        const loaded = Object.keys(require.cache).filter((f) => /node_modules\\/(mongoose|mongodb)\\//.test(f));
        console.log(JSON.stringify(loaded));
      })();
    `;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], {
      cwd: path.join(__dirname, '..'),
      encoding: 'utf8',
    });
    expect(JSON.parse(out.trim().split('\n').at(-1)!)).toEqual([]);
  });

  it('createMongoStore loads it on first use and says why a server cannot be reached', async () => {
    await expect(
      createMongoStore({ url: 'mongodb://127.0.0.1:9/none', serverSelectionTimeoutMs: 200 }),
    ).rejects.toThrow(/ECONNREFUSED|Server selection timed out/);
  });
});
