import { randomBytes } from 'node:crypto';
import {
  linkSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { hostname, uptime } from 'node:os';
import path from 'node:path';

/** the lock's file in the data folder */
const LOCK = 'store.lock';
/** how often the holder renews its lock (its modification time) */
const RENEW_MS = 2_000;
/** a lock of another host not renewed for this long was left by a process that is gone (their clocks may differ) */
const STALE_AFTER_MS = 60_000;
/**
 * a lock of another process namespace of this very machine (this boot: one clock) not renewed for this long was left
 * by a process that is gone: a container killed (kill -9, the OOM killer) and restarted on its volume
 */
const SAME_MACHINE_STALE_AFTER_MS = 10_000;

/** A data folder another process holds: two processes appending to and compacting the same files lose writes. */
export class DataFolderInUseError extends Error {
  /** the holder's host, when it is another one (a shared volume) or another container */
  readonly host?: string;
  /** of a holder elsewhere: when it last renewed its lock, and when the lock is taken over unless renewed (ms) */
  readonly renewedAt?: number;
  readonly staleAt?: number;

  constructor(
    readonly folder: string,
    readonly pid: number,
    /** a holder whose process id says nothing here: its lock is taken over `staleAfterMs` after its last renewal */
    elsewhere?: { host: string; renewedAt: number; staleAfterMs: number },
  ) {
    super(
      `${folder} is in use by process ${pid}${elsewhere ? ` on host ${elsewhere.host}` : ''} (its ${LOCK}): two processes on one data folder lose each other's writes; stop that one, or give this one another data folder${elsewhere ? ` (a lock its holder has not renewed for ${elsewhere.staleAfterMs === STALE_AFTER_MS ? 'a minute' : `${elsewhere.staleAfterMs / 1000} s`} is taken over)` : ''}`,
    );
    this.name = 'DataFolderInUseError';
    this.host = elsewhere?.host;
    this.renewedAt = elsewhere?.renewedAt;
    this.staleAt = elsewhere && elsewhere.renewedAt + elsewhere.staleAfterMs;
  }
}

/** this boot of this host (Linux), and when a process started in it: a process id is handed out again */
const bootId = (() => {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return '';
  }
})();

/** when this machine booted (ms): a lock of this host name last renewed before was left by an earlier boot */
const bootedAt = Date.now() - uptime() * 1000;

/**
 * the process ids this process sees (Linux): two containers on one host, even of one host name (host networking),
 * number their processes apart
 */
const pidNamespace = (() => {
  try {
    return readlinkSync('/proc/self/ns/pid');
  } catch {
    return '';
  }
})();

/**
 * Which process runs under `pid` (Linux: the boot and its start time), '' where /proc cannot tell; null for one that
 * has ended (a zombie: killed, not yet waited for by its parent).
 */
function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the fields after the command's name (in parentheses, may hold spaces): the state, ..., the start time (22nd)
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? null : `${bootId}/${fields[19]}`;
  } catch {
    return '';
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: a process of another user holds that id
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

interface Lock {
  pid: number;
  host: string;
  start: string;
  namespace: string;
  renewedAt: number;
  ino: number;
}

/** What a lock says: its holder's process id, host, start and process namespace; null when it is gone. */
function readLock(file: string): Lock | null {
  try {
    const [pid, host, start, namespace] = readFileSync(file, 'utf8').split('\n');
    const { mtimeMs, ino } = statSync(file);
    return {
      pid: Number.parseInt(pid ?? '', 10),
      host: host ?? '',
      start: start ?? '',
      namespace: namespace ?? '',
      renewedAt: mtimeMs,
      ino,
    };
  } catch {
    return null;
  }
}

const sameLock = (a: Lock | null, b: Lock) =>
  a !== null &&
  Object.is(a.pid, b.pid) &&
  a.host === b.host &&
  a.start === b.start &&
  a.namespace === b.namespace &&
  a.renewedAt === b.renewedAt &&
  a.ino === b.ino;

/** Creates `file` holding `text` whole, unless it exists: false then. */
function createWhole(file: string, text: string): boolean {
  const temp = `${file}.${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    writeFileSync(temp, text, { flag: 'wx', mode: 0o600 });
    linkSync(temp, file);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw err;
    // a file system without hard links: created in place
    try {
      writeFileSync(file, text, { flag: 'wx', mode: 0o600 });
      return true;
    } catch (inPlace) {
      if ((inPlace as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw inPlace;
    }
  } finally {
    rmSync(temp, { force: true });
  }
}

/**
 * Removes the lock `stale`, and only it: it is moved aside first (one taker alone moves a file), and a lock another
 * opener made meanwhile, moved by mistake, is put back.
 */
function removeStale(file: string, stale: Lock): void {
  const aside = `${file}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    renameSync(file, aside);
  } catch {
    return; // removed meanwhile
  }
  try {
    if (!sameLock(readLock(aside), stale)) linkSync(aside, file);
  } catch {
    // another lock is in place already
  } finally {
    rmSync(aside, { force: true });
  }
}

/** the folders this process holds: how many of its stores opened each, and the removal of its lock */
const held = new Map<string, { stores: number; free: () => void }>();

/**
 * A process that ends without closing its stores (`process.exit`, an uncaught exception) frees its folders: its lock
 * stood, and a container restarted on the volume (another process namespace, where a process id says nothing) was
 * refused until the lock had not been renewed for SAME_MACHINE_STALE_AFTER_MS. A process killed (kill -9, the OOM
 * killer) runs this not.
 */
const freeAtExit = () => {
  for (const claim of held.values()) claim.free();
};

/**
 * Claims a data folder for this process (`<folder>/store.lock`: its process id, host, start and process namespace),
 * so that no two processes append to and compact the same collection files. Stores of one process share the claim
 * (tests open a folder again; each service of a platform in one process has its own folder). A lock left by a process
 * that is gone (killed) is taken over: of this host and namespace, one whose process is not running or is another
 * program now (its id handed out again: a restarted container), or names this very process; of another host or
 * container (a shared volume), one its holder, which renews it every RENEW_MS, has not renewed for STALE_AFTER_MS, or
 * for SAME_MACHINE_STALE_AFTER_MS when it is of this very machine (this boot: a container restarted after a kill); of
 * this host name and another boot, one not renewed since this machine booted (another machine of the same name keeps
 * renewing its own). Returns the release.
 */
export function lockFolder(dataDir: string): () => void {
  const folder = path.resolve(dataDir);
  const file = path.join(folder, LOCK);
  const host = hostname();
  const mine = `${process.pid}\n${host}\n${processStart(process.pid) ?? ''}\n${pidNamespace}\n`;
  // the boot its holder started in: of another machine of the same host name (a default one), or of this one before
  // it restarted; '' where unknown
  const bootOf = (lock: Lock) =>
    lock.start.includes('/') ? lock.start.slice(0, lock.start.indexOf('/')) : '';
  const otherBoot = (lock: Lock) => bootId !== '' && bootOf(lock) !== '' && bootOf(lock) !== bootId;
  // a lock whose process id says nothing here
  const elsewhere = (lock: Lock) => lock.host !== host || lock.namespace !== pidNamespace || otherBoot(lock);
  // how long a lock of elsewhere stands unrenewed: less on this very machine, whose clock renewed it
  const staleAfter = (lock: Lock) =>
    bootId !== '' && bootOf(lock) === bootId ? SAME_MACHINE_STALE_AFTER_MS : STALE_AFTER_MS;
  const stale = (lock: Lock) => {
    if (elsewhere(lock))
      return (
        (lock.host === host && otherBoot(lock) && lock.renewedAt < bootedAt) ||
        Date.now() - lock.renewedAt >= staleAfter(lock)
      );
    if (!Number.isInteger(lock.pid) || lock.pid <= 0 || lock.pid === process.pid || !alive(lock.pid))
      return true;
    const start = processStart(lock.pid);
    return start === null || (lock.start !== '' && start !== lock.start);
  };
  const inUse = (lock: Lock) =>
    new DataFolderInUseError(
      folder,
      lock.pid,
      elsewhere(lock)
        ? {
            host:
              lock.host !== host
                ? lock.host
                : otherBoot(lock)
                  ? `${host}, another machine of that name`
                  : `${host}, in another container`,
            renewedAt: lock.renewedAt,
            staleAfterMs: staleAfter(lock),
          }
        : undefined,
    );

  let claim = held.get(folder);
  for (let attempt = 0; !claim && attempt < 3; attempt++) {
    if (createWhole(file, mine)) {
      const renewal = setInterval(() => {
        try {
          const now = new Date();
          utimesSync(file, now, now);
        } catch {
          // removed: nothing to renew
        }
      }, RENEW_MS);
      renewal.unref();
      const free = () => {
        clearInterval(renewal);
        held.delete(folder);
        if (held.size === 0) process.off('exit', freeAtExit);
        const lock = readLock(file);
        if (lock?.pid === process.pid && !elsewhere(lock)) rmSync(file, { force: true });
      };
      if (held.size === 0) process.on('exit', freeAtExit);
      claim = { stores: 0, free };
      held.set(folder, claim);
      break;
    }
    const lock = readLock(file);
    if (!lock) continue;
    if (!stale(lock)) throw inUse(lock);
    removeStale(file, lock);
  }
  if (!claim) {
    const holder = readLock(file);
    throw holder ? inUse(holder) : new DataFolderInUseError(folder, Number.NaN);
  }
  const taken = claim;
  taken.stores++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--taken.stores > 0) return;
    taken.free();
  };
}
