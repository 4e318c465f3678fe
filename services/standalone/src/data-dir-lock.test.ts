import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { DataDirInUseError, lockDataDir } from './data-dir-lock';

/** a process id no process holds now */
const gonePid = () => spawnSync(process.execPath, ['-e', '']).pid!;

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
      expect(readFileSync(file, 'utf8')).toBe(`${process.pid}\n${hostname()}\n`);
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
