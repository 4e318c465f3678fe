import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { DataDirInUseError, lockDataDir } from './data-dir-lock';

/** polls `done` until it holds, for at most 20 s */
async function until(done: () => boolean, what: string) {
  for (const deadline = Date.now() + 20_000; !done(); await new Promise((resolve) => setTimeout(resolve, 20)))
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
}

/** what this process writes in a lock: its process id, host and boot (Linux) */
const mine = `${process.pid}\n${hostname()}\n${(() => {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8');
  } catch {
    return '';
  }
})()}`;

/** a process id no process holds now */
const gonePid = () => spawnSync(process.execPath, ['-e', '']).pid!;

/** locks `dataDir` and releases it: the lock is this process's, and no takeover claim is left beside it */
function expectTakenOver(dataDir: string) {
  const release = lockDataDir(dataDir);
  try {
    expect(readFileSync(path.join(dataDir, 'standalone.lock'), 'utf8')).toBe(mine);
    expect(readdirSync(dataDir)).toEqual(['standalone.lock']);
  } finally {
    release();
  }
}

describe('lockDataDir (DATA_DIR/standalone.lock)', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'data-dir-lock-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('makes a missing data folder owner-only, as the store does (it now makes it first)', () => {
    const dataDir = path.join(root, 'fresh', 'data');
    const release = lockDataDir(dataDir);
    try {
      expect(statSync(dataDir).mode & 0o777).toBe(0o700);
      expect(statSync(path.join(root, 'fresh')).mode & 0o777).toBe(0o700);
      expect(Number.parseInt(readFileSync(path.join(dataDir, 'standalone.lock'), 'utf8'), 10)).toBe(
        process.pid,
      );
    } finally {
      release();
    }
  });

  it('records the host: a lock of a platform running on another host (a shared volume) is not taken over', () => {
    const dataDir = path.join(root, 'shared');
    mkdirSync(dataDir);
    // that host's process id means nothing here: no process holds it on this host
    writeFileSync(path.join(dataDir, 'standalone.lock'), `${gonePid()}\nother-host.example\n`);
    expect(() => lockDataDir(dataDir)).toThrow(DataDirInUseError);
    expect(() => lockDataDir(dataDir)).toThrow(/on host other-host\.example/);
    // even one with this very process id (each container's supervisor is process 1)
    writeFileSync(path.join(dataDir, 'standalone.lock'), `${process.pid}\nother-host.example\n`);
    expect(() => lockDataDir(dataDir)).toThrow(DataDirInUseError);
  });

  it("takes over another host's lock its holder stopped renewing (that platform is gone, or its container was replaced)", () => {
    const dataDir = path.join(root, 'shared');
    mkdirSync(dataDir);
    const file = path.join(dataDir, 'standalone.lock');
    writeFileSync(file, `${gonePid()}\nother-host.example\n`);
    const long = new Date(Date.now() - 10 * 60_000);
    utimesSync(file, long, long);
    const release = lockDataDir(dataDir);
    try {
      expect(readFileSync(file, 'utf8')).toBe(mine);
    } finally {
      release();
    }
  });

  it('takes over a lock of this host whose process is gone, and one of the format before the host was recorded', () => {
    const dataDir = path.join(root, 'local');
    mkdirSync(dataDir);
    const file = path.join(dataDir, 'standalone.lock');
    for (const stale of [`${gonePid()}\n${hostname()}\n`, `${gonePid()}\n`]) {
      writeFileSync(file, stale);
      lockDataDir(dataDir)();
    }
  });

  it('takes over a lock, or a takeover claim, left without a process id (a start killed or a machine crashed while writing it)', () => {
    const dataDir = path.join(root, 'empty');
    mkdirSync(dataDir);
    const file = path.join(dataDir, 'standalone.lock');
    const long = new Date(Date.now() - 10 * 60_000);
    for (const left of ['', 'garbage\n']) {
      writeFileSync(file, left);
      utimesSync(file, long, long);
      const { ino, mtimeMs } = statSync(file);
      const claim = `${file}.takeover-${ino}-${Math.round(mtimeMs)}`;
      writeFileSync(claim, left);
      utimesSync(claim, long, long);
      expectTakenOver(dataDir);
    }
  });

  it('leaves a lock without a process id that was just made: another start is writing it', () => {
    const dataDir = path.join(root, 'writing');
    mkdirSync(dataDir);
    writeFileSync(path.join(dataDir, 'standalone.lock'), '');
    expect(() => lockDataDir(dataDir)).toThrow(
      `${dataDir} is in use by another pnpm start (writing its lock, standalone.lock, now):`,
    );
    expect(readFileSync(path.join(dataDir, 'standalone.lock'), 'utf8')).toBe('');
  });

  it('names a lock it cannot read, rather than a process 0', () => {
    const dataDir = path.join(root, 'unreadable');
    mkdirSync(path.join(dataDir, 'standalone.lock'), { recursive: true });
    expect(() => lockDataDir(dataDir)).toThrow(
      `${dataDir} is locked by a standalone.lock this start cannot read: remove it if no pnpm start uses this data folder`,
    );
  });

  it('of two starts that both find the lock stale, takes it only if the other has not taken it over meanwhile', async () => {
    const dataDir = path.join(root, 'raced');
    mkdirSync(dataDir);
    const file = path.join(dataDir, 'standalone.lock');
    const stalePid = gonePid();
    writeFileSync(file, `${stalePid}\n${hostname()}\n`);
    // the other start, which takes the stale lock over while this one is still judging it
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
    const kill = process.kill.bind(process);
    const judging = jest.spyOn(process, 'kill').mockImplementation((pid, signal) => {
      if (pid === stalePid && existsSync(file) && readFileSync(file, 'utf8').startsWith(`${stalePid}\n`)) {
        rmSync(file);
        writeFileSync(file, `${other.pid}\n${hostname()}\n`);
      }
      return kill(pid, signal);
    });
    try {
      expect(() => lockDataDir(dataDir)).toThrow(`(process ${other.pid}):`);
      expect(readFileSync(file, 'utf8')).toBe(`${other.pid}\n${hostname()}\n`);
      expect(readdirSync(dataDir)).toEqual(['standalone.lock']); // no takeover claim left behind
    } finally {
      judging.mockRestore();
      other.kill('SIGKILL');
      await once(other, 'exit');
    }
  });

  it('takes over a stale lock whose takeover a start killed meanwhile left unfinished', () => {
    const dataDir = path.join(root, 'claimed');
    mkdirSync(dataDir);
    const file = path.join(dataDir, 'standalone.lock');
    writeFileSync(file, `${gonePid()}\n${hostname()}\n`);
    const { ino, mtimeMs } = statSync(file);
    writeFileSync(`${file}.takeover-${ino}-${Math.round(mtimeMs)}`, `${gonePid()}\n${hostname()}\n`);
    expectTakenOver(dataDir);
  });

  it('lets one start alone take over a stale lock that several start on at once', async () => {
    const dataDir = path.join(root, 'crowd');
    mkdirSync(dataDir);
    writeFileSync(path.join(dataDir, 'standalone.lock'), `${gonePid()}\n${hostname()}\n`);
    const go = path.join(root, 'go');
    // each waits for the others to be ready, then tries, and holds what it got until its stdin closes
    const script = `
      const { existsSync } = require('node:fs');
      const { lockDataDir } = require(${JSON.stringify(path.join(__dirname, 'data-dir-lock.ts'))});
      process.stdout.write('ready\\n');
      for (const end = Date.now() + 20_000; !existsSync(${JSON.stringify(go)}) && Date.now() < end; );
      try {
        lockDataDir(${JSON.stringify(dataDir)});
        process.stdout.write('locked\\n');
      } catch (err) {
        process.stdout.write(err.name + '\\n');
      }
      process.stdin.resume();
      process.stdin.on('end', () => process.exit(0));
    `;
    const starts = Array.from({ length: 4 }, () =>
      spawn(process.execPath, ['--require', 'tsx/cjs', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] }),
    );
    const said = starts.map(() => '');
    for (const [i, start] of starts.entries())
      start.stdout!.on('data', (d: Buffer) => {
        said[i] += d.toString();
      });
    try {
      await until(() => said.every((s) => s.includes('ready')), 'every start ready');
      writeFileSync(go, '');
      await until(() => said.every((s) => s.split('\n').length > 2), 'every start done');
      expect(said.map((s) => s.split('\n')[1]).sort()).toEqual([
        'DataDirInUseError',
        'DataDirInUseError',
        'DataDirInUseError',
        'locked',
      ]);
    } finally {
      for (const start of starts) start.stdin!.end();
      await Promise.all(starts.map((start) => (start.exitCode === null ? once(start, 'exit') : undefined)));
    }
  }, 60_000);

  it('refuses a lock of this host whose process runs, naming it', async () => {
    const dataDir = path.join(root, 'local');
    mkdirSync(dataDir);
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
    try {
      writeFileSync(path.join(dataDir, 'standalone.lock'), `${holder.pid}\n${hostname()}\n`);
      expect(() => lockDataDir(dataDir)).toThrow(`(process ${holder.pid}):`);
    } finally {
      holder.kill('SIGKILL');
      await once(holder, 'exit');
    }
  });

  it('takes over the lock of a pnpm start killed but not yet waited for by its parent (a zombie)', async () => {
    const dataDir = path.join(root, 'zombie');
    mkdirSync(dataDir);
    // `sleep 60` (the shell, replaced) never waits for the short sleep it started
    const parent = spawn('sh', ['-c', 'sleep 0.01 & echo $!; exec sleep 60'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    try {
      let out = '';
      parent.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
      });
      await until(() => out.includes('\n'), 'its pid');
      const zombie = Number.parseInt(out, 10);
      await until(
        () => readFileSync(`/proc/${zombie}/stat`, 'utf8').split(') ')[1]!.startsWith('Z'),
        'the short sleep to end',
      );
      writeFileSync(path.join(dataDir, 'standalone.lock'), `${zombie}\n${hostname()}\n`);
      // before, "in use by another pnpm start (process <the zombie>)" until its parent waited for it
      expectTakenOver(dataDir);
    } finally {
      parent.kill('SIGKILL');
      await once(parent, 'exit');
    }
  });

  it('takes over a lock of this host of an earlier boot, whatever program holds its process id now', async () => {
    const dataDir = path.join(root, 'rebooted');
    mkdirSync(dataDir);
    const file = path.join(dataDir, 'standalone.lock');
    // the platform that held it ran before a reboot (a crash, a power cut); another program got its process id,
    // and a service of another platform that of a service it listed
    const program = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
    const service = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], {
      stdio: 'ignore',
      env: { ...process.env, PLATFORM_STANDALONE_SERVICE: 'auth' },
    });
    try {
      writeFileSync(file, `${program.pid}\n${hostname()}\n00000000-0000-4000-8000-000000000000\n`);
      writeFileSync(path.join(dataDir, 'standalone.json'), JSON.stringify({ pids: { auth: service.pid } }));
      const release = lockDataDir(dataDir);
      try {
        expect(readFileSync(file, 'utf8')).toBe(mine);
      } finally {
        release();
      }
    } finally {
      program.kill('SIGKILL');
      service.kill('SIGKILL');
      await Promise.all([once(program, 'exit'), once(service, 'exit')]);
    }
  });

  it('waits for the services of a pnpm start killed with SIGKILL: they finish their shutdown, writing their stores', async () => {
    const dataDir = path.join(root, 'killed');
    mkdirSync(dataDir);
    // a service of the killed supervisor, still draining (its standalone.json lists it)
    const service = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], {
      stdio: 'ignore',
      env: { ...process.env, PLATFORM_STANDALONE_SERVICE: 'llm-quota' },
    });
    // a process id listed there that is now another program's (a restart long after): not a service
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
    try {
      writeFileSync(path.join(dataDir, 'standalone.lock'), `${gonePid()}\n${hostname()}\n`);
      writeFileSync(
        path.join(dataDir, 'standalone.json'),
        JSON.stringify({ pids: { auth: gonePid(), 'llm-quota': service.pid, edge: other.pid } }),
      );
      expect(() => lockDataDir(dataDir)).toThrow(`(process ${service.pid}, a service of it still stopping)`);
      service.kill('SIGKILL');
      await once(service, 'exit');
      lockDataDir(dataDir)();
    } finally {
      service.kill('SIGKILL');
      other.kill('SIGKILL');
      await once(other, 'exit');
    }
  });
});
