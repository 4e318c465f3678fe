import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
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

  it('keeps none of a refused batch whose append was cut short (a disk filled partway through)', async () => {
    const data = tempDir('store-cut-batch-');
    // a file size limit of 1 MB cuts the 2 MB batch's append after some whole lines, as a full disk does
    const fixture = path.join(__dirname, 'fixtures/batch-past-file-limit.ts');
    const child = spawn(
      'sh',
      ['-c', 'ulimit -f 2048 && exec "$0" --import tsx "$1" "$2"', process.execPath, fixture, data.dir],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    await new Promise((resolve) => child.once('exit', resolve));
    expect(out).toBe('acked\nbatch unavailable\n');

    const store = createEmbeddedStore({ dataDir: data.dir });
    try {
      const docs = store.collection<{ _id: string }>('docs');
      expect((await docs.find({})).map((d) => d._id)).toEqual(['acked']);
    } finally {
      await store.close();
      data.remove();
    }
  });

  it('loads a collection whose last line a crash cut short, dropping only that unacknowledged write', async () => {
    // a write of more than one system call (a large document) or a power cut can leave half a line at the end
    const data = tempDir('store-torn-');
    const file = path.join(data.dir, 'docs.db');
    writeFileSync(file, '{"_id":"a","i":1}\n{"_id":"b","i":2}\n{"_id":"c","i":3,"text":"half a li');
    try {
      let store = createEmbeddedStore({ dataDir: data.dir });
      let docs = store.collection<{ _id: string; i: number }>('docs');
      expect((await docs.find({}, { sort: { i: 1 } })).map((d) => d._id)).toEqual(['a', 'b']);
      await docs.insertOne({ _id: 'd', i: 4 });
      await store.close();
      expect(readFileSync(file, 'utf8').endsWith('\n')).toBe(true);
      store = createEmbeddedStore({ dataDir: data.dir });
      docs = store.collection<{ _id: string; i: number }>('docs');
      expect((await docs.find({}, { sort: { i: 1 } })).map((d) => d._id)).toEqual(['a', 'b', 'd']);
      await store.close();
    } finally {
      data.remove();
    }
  });
});
