import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir, waitFor } from '@platform/testkit';
import { CorruptFileError, createEmbeddedStore } from '../src';

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

  describe('a collection file with unreadable lines (a disk error, a hand edit)', () => {
    /** Opens `lines` as the collection `docs`: its documents, what the store was told, the files beside it. */
    const load = async (lines: string[]) => {
      const data = tempDir('store-corrupt-');
      const file = path.join(data.dir, 'docs.db');
      const original = `${lines.join('\n')}\n`;
      writeFileSync(file, original, { mode: 0o600 });
      const told: Array<{ err: unknown; collection: string }> = [];
      const store = createEmbeddedStore({
        dataDir: data.dir,
        onBackgroundError: (err, collection) => told.push({ err, collection }),
      });
      try {
        const ids = (await store.collection<{ _id: string }>('docs').find({})).map((d) => d._id).sort();
        const kept = readdirSync(data.dir).filter((name) => name.startsWith('docs.db.corrupt-'));
        const keptFile = path.join(data.dir, kept[0] ?? 'none');
        return {
          ids,
          told,
          kept,
          keptText: kept.length ? readFileSync(keptFile, 'utf8') : '',
          keptMode: kept.length ? statSync(keptFile).mode & 0o777 : 0,
          original,
          file,
        };
      } finally {
        await store.close();
        data.remove();
      }
    };

    it('loads the readable documents of a file a third of which is unreadable, where the collection failed', async () => {
      const loaded = await load(['{"_id":"a"}', '\u0000\u0000{"_id":"b"', '{"_id":"c"}']);
      expect(loaded.ids).toEqual(['a', 'c']);
      expect(loaded.kept).toHaveLength(1);
      expect(loaded.keptText).toBe(loaded.original);
      expect(loaded.keptMode).toBe(0o600);
      expect(loaded.told).toHaveLength(1);
      expect(loaded.told[0]!.collection).toBe('docs');
      expect(loaded.told[0]!.err).toBeInstanceOf(CorruptFileError);
      expect((loaded.told[0]!.err as Error).message).toBe(
        `${loaded.file}: 1 of its 3 lines cannot be read; the collection is loaded without them, and the file as it was is kept in ${path.join(path.dirname(loaded.file), loaded.kept[0]!)}`,
      );
    });

    it('keeps the file as it was and says so when a few lines among many are unreadable (NeDB dropped them silently)', async () => {
      const lines = Array.from({ length: 20 }, (_, i) => `{"_id":"d${String(i).padStart(2, '0')}"}`);
      lines[10] = '{"_id":"d10"';
      const loaded = await load(lines);
      expect(loaded.ids).toEqual(
        Array.from({ length: 20 }, (_, i) => `d${String(i).padStart(2, '0')}`).filter((id) => id !== 'd10'),
      );
      expect(loaded.keptText).toBe(loaded.original);
      expect(loaded.told.map(({ err }) => (err as CorruptFileError).unreadable)).toEqual([1]);
    });

    it('keeps no copy of a file that reads whole', async () => {
      const loaded = await load(['{"_id":"a"}', '{"_id":"b"}']);
      expect(loaded.ids).toEqual(['a', 'b']);
      expect(loaded.kept).toEqual([]);
      expect(loaded.told).toEqual([]);
    });
  });
});
