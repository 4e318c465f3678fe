import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs, {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { hostname, uptime } from 'node:os';
import path from 'node:path';
import { tempDir, waitFor } from '@platform/testkit';
import { createEmbeddedStore, DataFolderInUseError } from '../src';

const fixture = path.join(__dirname, 'fixtures/write-and-hold.ts');

/**
 * A process that opens the folder's store, writes 20 documents `<prefix>-<i>` and keeps it open until its input ends;
 * `end` ends it without a close instead (see the fixture), its stack trace not shown.
 */
function writer(dir: string, prefix: string, end?: 'exit' | 'throw') {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, dir, prefix, ...(end ? [end] : [])], {
    stdio: ['pipe', 'pipe', end ? 'ignore' : 'inherit'],
  });
  const run = { child, out: '', exited: new Promise((resolve) => child.once('exit', resolve)) };
  child.stdout!.on('data', (chunk: Buffer) => {
    run.out += chunk.toString();
  });
  return run;
}

const ids = async (dir: string) => {
  const store = createEmbeddedStore({ dataDir: dir });
  try {
    return (await store.collection<{ _id: string }>('docs').find({})).map((d) => d._id).sort();
  } finally {
    await store.close();
  }
};

const written = (prefix: string) => Array.from({ length: 20 }, (_, i) => `${prefix}-${i}`).sort();

describe('embedded store: one process per data folder', () => {
  const running: ChildProcess[] = [];
  afterEach(() => {
    for (const child of running.splice(0)) child.kill('SIGKILL');
  });

  it('refuses another process on the folder, naming the folder and the holder, and keeps every write of the first', async () => {
    const data = tempDir('store-two-processes-');
    try {
      const first = writer(data.dir, 'first');
      running.push(first.child);
      await waitFor(() => first.out.includes('open'), {
        timeoutMs: 20_000,
        what: 'the first process to open',
      });

      // before, this process appended to and compacted the same files: each compaction kept its own writes only
      expect(() => createEmbeddedStore({ dataDir: data.dir })).toThrow(DataFolderInUseError);
      expect(() => createEmbeddedStore({ dataDir: data.dir })).toThrow(
        `${data.dir} is in use by process ${first.child.pid} (its store.lock): two processes on one data folder lose each other's writes; stop that one, or give this one another data folder`,
      );

      first.child.stdin!.end();
      await first.exited;
      expect(first.out).toBe('open\nclosed\n');
      expect(existsSync(path.join(data.dir, 'store.lock'))).toBe(false);
      expect(await ids(data.dir)).toEqual(written('first'));
    } finally {
      data.remove();
    }
  });

  it('takes over the lock of a process killed with kill -9', async () => {
    const data = tempDir('store-lock-killed-');
    try {
      const killed = writer(data.dir, 'killed');
      running.push(killed.child);
      await waitFor(() => killed.out.includes('open'), { timeoutMs: 20_000, what: 'the process to open' });
      killed.child.kill('SIGKILL');
      await killed.exited;
      expect(existsSync(path.join(data.dir, 'store.lock'))).toBe(true);

      expect(await ids(data.dir)).toEqual(written('killed'));
    } finally {
      data.remove();
    }
  });

  it.each(['exit', 'throw'] as const)(
    'frees the folder of a process that ends without closing its store (%s), as a restarted container finds it',
    async (end) => {
      const data = tempDir('store-lock-exit-');
      try {
        const ended = writer(data.dir, 'ended', end);
        running.push(ended.child);
        expect(await ended.exited).toBe(1);
        // before, the lock stood: a container restarted on the volume (another process namespace) was refused for 60 s
        expect(existsSync(path.join(data.dir, 'store.lock'))).toBe(false);
        expect(await ids(data.dir)).toEqual(written('ended'));
      } finally {
        data.remove();
      }
    },
  );

  it('takes over a lock naming a process id another program has now (a restarted container)', async () => {
    const data = tempDir('store-lock-reused-pid-');
    try {
      // the parent of this test runs, but it is not the process that wrote the lock (another start time)
      writeFileSync(
        path.join(data.dir, 'store.lock'),
        `${process.ppid}\n${hostname()}\nan-earlier-process\n${readlinkSync('/proc/self/ns/pid')}\n`,
      );
      expect(await ids(data.dir)).toEqual([]);
    } finally {
      data.remove();
    }
  });

  it('takes over the lock of a process killed but not yet waited for by its parent (a zombie)', async () => {
    const data = tempDir('store-lock-zombie-');
    // `sleep 60` (the shell, replaced) never waits for the short sleep it started
    const parent = spawn('sh', ['-c', 'sleep 0.01 & echo $!; exec sleep 60'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    running.push(parent);
    try {
      let out = '';
      parent.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
      });
      const zombie = await waitFor(() => out.includes('\n') && Number.parseInt(out, 10), { what: 'its pid' });
      await waitFor(() => readFileSync(`/proc/${zombie}/stat`, 'utf8').split(') ')[1]!.startsWith('Z'), {
        what: 'the short sleep to end',
      });
      const start = readFileSync(`/proc/${zombie}/stat`, 'utf8').split(') ')[1]!.split(' ')[19];
      const lock = `${zombie}\n${hostname()}\n${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()}/${start}\n`;
      writeFileSync(path.join(data.dir, 'store.lock'), `${lock}${readlinkSync('/proc/self/ns/pid')}\n`);
      expect(await ids(data.dir)).toEqual([]);
    } finally {
      data.remove();
    }
  });

  it('honours the lock of a process of another container of the same host name (its process id says nothing here)', async () => {
    const data = tempDir('store-lock-other-container-');
    try {
      // a process id of another process namespace: this test's parent runs here, which says nothing
      writeFileSync(
        path.join(data.dir, 'store.lock'),
        `${process.ppid}\n${hostname()}\nits-own-start\npid:[1]\n`,
      );
      expect(() => createEmbeddedStore({ dataDir: data.dir })).toThrow(
        `${data.dir} is in use by process ${process.ppid} on host ${hostname()}, in another container (its store.lock)`,
      );
    } finally {
      data.remove();
    }
  });

  it('takes over the lock of another container of this very machine once its holder has not renewed it for 10 s (a container killed, restarted)', async () => {
    const data = tempDir('store-lock-restarted-container-');
    const file = path.join(data.dir, 'store.lock');
    try {
      // the lock of this container before its restart: this boot, another process namespace
      const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
      writeFileSync(file, `7\n${hostname()}\n${boot}/12345\npid:[1]\n`);
      expect(() => createEmbeddedStore({ dataDir: data.dir })).toThrow(
        `${data.dir} is in use by process 7 on host ${hostname()}, in another container (its store.lock): two processes on one data folder lose each other's writes; stop that one, or give this one another data folder (a lock its holder has not renewed for 10 s is taken over)`,
      );
      // before, one of this machine waited for a minute too, as one of another host (whose clock may differ): the
      // restarted container exited, again and again, and its service was away for a minute or more
      const then = new Date(Date.now() - 11_000);
      utimesSync(file, then, then);
      expect(await ids(data.dir)).toEqual([]);
    } finally {
      data.remove();
    }
  });

  it('honours the lock of another machine of the same host name (another boot) while its holder renews it, not after a reboot', async () => {
    const data = tempDir('store-lock-other-boot-');
    const file = path.join(data.dir, 'store.lock');
    try {
      // two machines both named so (a default host name) on one shared volume, each in its first process namespace
      writeFileSync(
        file,
        `999999\n${hostname()}\nanother-boot/12345\n${readlinkSync('/proc/self/ns/pid')}\n`,
      );
      // before, its process id was looked up here (not running: taken over), and both appended to the same files
      expect(() => createEmbeddedStore({ dataDir: data.dir })).toThrow(
        `${data.dir} is in use by process 999999 on host ${hostname()}, another machine of that name (its store.lock)`,
      );
      // this machine before its restart: the lock was last renewed before this boot
      const before = new Date(Date.now() - uptime() * 1000 - 5_000);
      utimesSync(file, before, before);
      expect(await ids(data.dir)).toEqual([]);
    } finally {
      data.remove();
    }
  });

  it('honours the lock of another host (a shared volume) until its holder has not renewed it for a minute', async () => {
    const data = tempDir('store-lock-other-host-');
    const file = path.join(data.dir, 'store.lock');
    try {
      writeFileSync(file, '4242\nother-host.example\n\n');
      expect(() => createEmbeddedStore({ dataDir: data.dir })).toThrow(
        `${data.dir} is in use by process 4242 on host other-host.example (its store.lock)`,
      );
      const then = new Date(Date.now() - 61_000);
      utimesSync(file, then, then);
      expect(await ids(data.dir)).toEqual([]);
    } finally {
      data.remove();
    }
  });

  it.each([
    ['empty', ''],
    ['not a number', 'garbage\n'],
  ])(
    'takes over a lock without a process id (%s: a power loss before it reached the disk, a hand edit) 10 s after it was made',
    async (_, text) => {
      const data = tempDir('store-lock-no-pid-');
      const file = path.join(data.dir, 'store.lock');
      try {
        writeFileSync(file, text);
        const made = statSync(file).mtimeMs;
        let refused: unknown;
        try {
          createEmbeddedStore({ dataDir: data.dir });
        } catch (err) {
          refused = err;
        }
        // before, "in use by process NaN on host  (its store.lock)", taken over a minute after it was made
        expect(refused).toBeInstanceOf(DataFolderInUseError);
        expect((refused as Error).message).toBe(
          `${data.dir} is locked by a store.lock without a process id (a process killed or a machine powered off while writing it, or a hand edit): it is taken over 10 s after it was made, unless a process writes its own meanwhile; remove it if no process uses this data folder`,
        );
        expect((refused as DataFolderInUseError).staleAt).toBe(made + 10_000);
        const then = new Date(Date.now() - 11_000);
        utimesSync(file, then, then);
        expect(await ids(data.dir)).toEqual([]);
      } finally {
        data.remove();
      }
    },
  );

  it('of openers that all find a lock stale, never removes the lock one of them took meanwhile', async () => {
    const data = tempDir('store-lock-raced-');
    const file = path.join(data.dir, 'store.lock');
    const namespace = readlinkSync('/proc/self/ns/pid');
    const gone = spawnSync(process.execPath, ['-e', '']).pid!;
    writeFileSync(file, `${gone}\n${hostname()}\n\n${namespace}\n`);
    // two other openers: one takes the stale lock over while this one is judging it, the other opens whenever it
    // finds the folder without a lock
    const [taker, third] = [0, 1].map(() =>
      spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' }),
    ) as [ChildProcess, ChildProcess];
    running.push(taker, third);
    const kill = process.kill.bind(process);
    const judging = jest.spyOn(process, 'kill').mockImplementation((pid, signal) => {
      if (pid === gone && readFileSync(file, 'utf8').startsWith(`${gone}\n`)) {
        rmSync(file);
        writeFileSync(file, `${taker.pid}\n${hostname()}\n\n${namespace}\n`);
      }
      return kill(pid, signal);
    });
    const read = fs.readFileSync;
    const opening = jest.spyOn(fs, 'readFileSync').mockImplementation(((...args: Parameters<typeof read>) => {
      if (judging.mock.calls.length > 0 && !existsSync(file))
        writeFileSync(file, `${third.pid}\n${hostname()}\n\n${namespace}\n`, { flag: 'wx' });
      return read(...args);
    }) as typeof read);
    try {
      // before, the lock was moved aside to be removed, and the third took the folder in that moment: the taker's
      // lock, put back too late, was lost while the taker kept writing
      expect(() => createEmbeddedStore({ dataDir: data.dir })).toThrow(`in use by process ${taker.pid} `);
      expect(read(file, 'utf8')).toBe(`${taker.pid}\n${hostname()}\n\n${namespace}\n`);
      expect(readdirSync(data.dir)).toEqual(['store.lock']); // no takeover claim left behind
    } finally {
      opening.mockRestore();
      judging.mockRestore();
      data.remove();
    }
  });

  it('takes over a stale lock whose takeover an opener killed meanwhile left unfinished', async () => {
    const data = tempDir('store-lock-claimed-');
    const file = path.join(data.dir, 'store.lock');
    try {
      const lockOf = (pid: number) => `${pid}\n${hostname()}\n\n${readlinkSync('/proc/self/ns/pid')}\n`;
      writeFileSync(file, lockOf(spawnSync(process.execPath, ['-e', '']).pid!));
      const { ino, mtimeMs } = statSync(file);
      writeFileSync(
        `${file}.takeover-${ino}-${Math.round(mtimeMs)}`,
        lockOf(spawnSync(process.execPath, ['-e', '']).pid!),
      );
      expect(await ids(data.dir)).toEqual([]);
      expect(readdirSync(data.dir)).toEqual(['docs.db']); // no takeover claim left behind
    } finally {
      data.remove();
    }
  });

  it('removes what openers killed while taking a lock over left, but not the claim of an opener running now', async () => {
    const data = tempDir('store-lock-leftovers-');
    const file = path.join(data.dir, 'store.lock');
    const opener = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
    running.push(opener);
    try {
      const lockOf = (pid: number) => `${pid}\n${hostname()}\n\n${readlinkSync('/proc/self/ns/pid')}\n`;
      const gone = () => lockOf(spawnSync(process.execPath, ['-e', '']).pid!);
      // killed after removing the stale lock, before its claim: no later lock has that claim's name
      writeFileSync(`${file}.takeover-4242-1700000000000`, gone());
      // killed while removing a leftover claim in turn, and while writing a lock or a claim before linking it into place
      writeFileSync(`${file}.takeover-4242-1700000000000.takeover-77-1700000001000`, gone());
      writeFileSync(`${file}.takeover-4242-1700000000000.${process.pid + 1}-0badc0de`, gone());
      writeFileSync(`${file}.${process.pid + 2}-deadbeef`, gone());
      // an opener taking a lock over right now (its process runs)
      const live = `${file}.takeover-99-1700000002000`;
      writeFileSync(live, lockOf(opener.pid!));
      // a collection named like a claim is data
      writeFileSync(path.join(data.dir, 'store.lock.takeover-1-2.db'), '');

      expect(await ids(data.dir)).toEqual([]);
      // before, the claims stayed in the folder forever
      expect(readdirSync(data.dir).sort()).toEqual(
        ['docs.db', 'store.lock.takeover-1-2.db', 'store.lock.takeover-99-1700000002000'].sort(),
      );
      expect(readFileSync(live, 'utf8')).toBe(lockOf(opener.pid!));
    } finally {
      data.remove();
    }
  });

  it('lets the stores of one process share the folder, and frees it at the last close', async () => {
    const data = tempDir('store-lock-one-process-');
    const file = path.join(data.dir, 'store.lock');
    try {
      const one = createEmbeddedStore({ dataDir: data.dir });
      const two = createEmbeddedStore({ dataDir: data.dir });
      await one.close();
      await one.close();
      expect(existsSync(file)).toBe(true);
      await two.close();
      expect(existsSync(file)).toBe(false);
    } finally {
      data.remove();
    }
  });

  it('shares the lock with a store of this process that opened the folder by another path (a symbolic link)', async () => {
    const data = tempDir('store-lock-one-process-linked-');
    const folder = path.join(data.dir, 'data');
    const file = path.join(folder, 'store.lock');
    try {
      const one = createEmbeddedStore({ dataDir: folder });
      symlinkSync(folder, path.join(data.dir, 'link'));
      const two = createEmbeddedStore({ dataDir: path.join(data.dir, 'link') });
      // before, the second took the lock over (it named this very process) and the first close removed it while
      // the second store stayed open: another process could then open the folder
      await one.close();
      expect(existsSync(file)).toBe(true);
      await two.close();
      expect(existsSync(file)).toBe(false);
    } finally {
      data.remove();
    }
  });

  it('names a lock it cannot read, rather than a process NaN', () => {
    const data = tempDir('store-lock-unreadable-');
    try {
      mkdirSync(path.join(data.dir, 'store.lock'));
      expect(() => createEmbeddedStore({ dataDir: data.dir })).toThrow(
        `${data.dir} is locked by a store.lock this process cannot read: remove it if no process uses this data folder`,
      );
    } finally {
      data.remove();
    }
  });
});
