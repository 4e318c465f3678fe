import { spawn } from 'node:child_process';
import path from 'node:path';
import { tempDir, waitFor } from '@platform/testkit';
import { createEmbeddedStore } from '../src';

describe('embedded store durability', () => {
  it('keeps every write acknowledged before kill -9', async () => {
    const data = tempDir('store-kill9-');
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(__dirname, 'fixtures/write-until-killed.ts'), data.dir],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let lastAcked = -1;
    let buffer = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) if (line.startsWith('ack ')) lastAcked = Number(line.slice(4));
    });
    await waitFor(() => lastAcked >= 300, { timeoutMs: 20_000, what: '300 acknowledged writes' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    const acked = lastAcked;

    const store = createEmbeddedStore({ dataDir: data.dir });
    try {
      const docs = store.collection<{ _id: string; i: number }>('docs');
      const present = new Set((await docs.find({})).map((d) => d.i));
      const missing = Array.from({ length: acked + 1 }, (_, i) => i).filter((i) => !present.has(i));
      expect(missing).toEqual([]);
      const counter = await store
        .collection<{ _id: string; n: number }>('counters')
        .findOne({ _id: 'acked' });
      expect(counter?.n).toBeGreaterThanOrEqual(acked + 1);
    } finally {
      await store.close();
      data.remove();
    }
  });
});
