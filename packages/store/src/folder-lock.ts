import { randomBytes } from 'node:crypto';
import {
  linkSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
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
/**
 * a lock without a process id (empty: a machine powered off before its write reached the disk; a hand edit) is taken
 * over this long after it was made, as `standalone.lock`'s is (decision 0037): a process writing its own in place (a
 * file system without hard links) has long written it by then
 */
const WRITING_MS = 10_000;

/** The refusal's words: a holder named (here, or elsewhere), a lock without a process id, or one that cannot be read. */
function inUseMessage(
  folder: string,
  pid: number,
  elsewhere?: { host?: string; staleAfterMs: number },
): string {
  if (Number.isNaN(pid)) {
    if (!elsewhere)
      return `${folder} is locked by a ${LOCK} this process cannot read: remove it if no process uses this data folder`;
    return `${folder} is locked by a ${LOCK} without a process id (a process killed or a machine powered off while writing it, or a hand edit): it is taken over ${elsewhere.staleAfterMs / 1000} s after it was made, unless a process writes its own meanwhile; remove it if no process uses this data folder`;
  }
  const named = `${folder} is in use by process ${pid}${elsewhere ? ` on host ${elsewhere.host}` : ''} (its ${LOCK}): two processes on one data folder lose each other's writes; stop that one, or give this one another data folder`;
  if (!elsewhere) return named;
  const unrenewed =
    elsewhere.staleAfterMs === STALE_AFTER_MS ? 'a minute' : `${elsewhere.staleAfterMs / 1000} s`;
  return `${named} (a lock its holder has not renewed for ${unrenewed} is taken over)`;
}

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
    /**
     * a holder whose process id says nothing here (or a lock without one, and no host): its lock is taken over
     * `staleAfterMs` after its last renewal
     */
    elsewhere?: { host?: string; renewedAt: number; staleAfterMs: number },
  ) {
    super(inUseMessage(folder, pid, elsewhere));
    this.name = 'DataFolderInUseError';
    this.host = elsewhere?.host;
    this.renewedAt = elsewhere?.renewedAt;
    this.staleAt = elsewhere && elsewhere.renewedAt + elsewhere.staleAfterMs;
  }
}

/** this boot of this host (Linux), and when a process started in it: a process id is handed out again; '' unknown */
export const bootId = (() => {
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

/** Whether a process of this host holds `pid`: one that has ended (a zombie) does not. */
export const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    // a pnpm start killed and not yet waited for by its parent was refused as running (standalone.lock)
    return processStart(pid) !== null;
  } catch (err) {
    // EPERM: a process of another user holds that id
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** A lock file as read: its holder's process id, the lines after it, when it was last renewed, and its file. */
export interface LockRecord {
  pid: number;
  fields: string[];
  renewedAt: number;
  ino: number;
}

/** What a lock says; null when it is gone. */
function readLock(file: string): LockRecord | null {
  try {
    const [pid, ...fields] = readFileSync(file, 'utf8').split('\n');
    const { mtimeMs, ino } = statSync(file);
    return { pid: Number.parseInt(pid ?? '', 10), fields, renewedAt: mtimeMs, ino };
  } catch {
    return null;
  }
}

// Object.is: a lock without a process id (NaN) is the same one as long as it is unchanged
const sameLock = (a: LockRecord | null, b: LockRecord) =>
  a !== null &&
  Object.is(a.pid, b.pid) &&
  a.fields.join('\n') === b.fields.join('\n') &&
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
 * Removes `file`, a lock (or a takeover claim) judged stale as `stale`, unless another opener does: of two that both
 * judged it stale, one alone removes it, the other then finds the lock the first one took. Whoever creates the claim
 * `<file>.takeover-<its inode>-<its renewal>` may remove that very file, if it is still the same one; a claim left by an
 * opener killed meanwhile is stale in turn, and taken over the same way (as `standalone.lock` does, decision 0037).
 * Answers the live opener that is taking the file over, if another one is. Before, the lock was moved aside, and put
 * back when it was another's by then: an opener that came in that moment took the folder, and the lock put back was
 * lost while its holder kept writing.
 */
function removeStale(
  file: string,
  stale: LockRecord,
  mine: string,
  isStale: (lock: LockRecord) => boolean,
): LockRecord | undefined {
  const claim = `${file}.takeover-${stale.ino}-${Math.round(stale.renewedAt)}`;
  for (let attempt = 0; attempt < 3; attempt++) {
    if (!createWhole(claim, mine)) {
      const taker = readLock(claim);
      if (!taker) continue;
      if (!isStale(taker)) return taker;
      const other = removeStale(claim, taker, mine, isStale);
      if (other) return other;
      continue;
    }
    try {
      if (sameLock(readLock(file), stale)) rmSync(file, { force: true });
      return undefined;
    } finally {
      rmSync(claim, { force: true });
    }
  }
  return undefined;
}

/**
 * What an opener leaves beside a lock `<name>` when it is killed meanwhile: its takeover claim
 * (`<name>.takeover-<inode>-<renewal>`) and the file `createWhole` writes before linking it into place
 * (`<name>.<pid>-<8 hex>`), of the lock or of such a leftover in turn. Nothing else in a data folder is named so: a
 * collection's file ends in `.db`.
 */
const LEFTOVER = /^(\.takeover-\d+-\d+|\.\d+-[0-9a-f]{8})+$/;

/**
 * Removes what openers killed while creating or taking over the lock `file` left beside it: a claim whose takeover
 * removed the lock was never removed itself (no later lock has its name), and stayed forever. Called by the new
 * holder; each leftover goes as a stale lock does (`removeStale`: that very file, once), and one whose writer
 * `isStale` finds running (an opener taking a lock over right now) is left.
 */
function removeLeftovers(file: string, mine: string, isStale: (lock: LockRecord) => boolean): void {
  const folder = path.dirname(file);
  const lockName = path.basename(file);
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return; // an unreadable folder: the lock was made, what is beside it can wait for the next opener
  }
  for (const name of names) {
    if (!name.startsWith(lockName) || !LEFTOVER.test(name.slice(lockName.length))) continue;
    const leftover = path.join(folder, name);
    const writer = readLock(leftover);
    try {
      if (writer && isStale(writer)) removeStale(leftover, writer, mine, isStale);
    } catch {
      // one that cannot be removed now (a folder turned read-only) takes no lock: the next opener tries again
    }
  }
}

/** what a store.lock says: its holder's host, start and process namespace after its process id */
const storeLock = (lock: LockRecord) => ({
  ...lock,
  host: lock.fields[0] ?? '',
  start: lock.fields[1] ?? '',
  namespace: lock.fields[2] ?? '',
});
type Lock = ReturnType<typeof storeLock>;

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

export interface LockFileOptions {
  /** what this process writes in it: its process id first, then what its `isStale` reads */
  text: string;
  /** how often its holder renews it (its modification time) */
  renewMs: number;
  /** whether a lock (or a takeover claim) was left by a holder that is gone */
  isStale(lock: LockRecord): boolean;
  /** the error naming a holder that is not gone (null: a holder that could not be read) */
  inUse(lock: LockRecord | null): Error;
  /** called before a stale lock is taken over: throws to leave it */
  beforeTakeover?(lock: LockRecord): void;
}

/**
 * Creates the lock `file` for this process (whole, exclusively) and renews it every `renewMs` until released; a lock
 * `isStale` judges left by a holder that is gone is taken over (`removeStale`), and what openers killed meanwhile left
 * beside it is removed (`removeLeftovers`). Throws `inUse` of the holder of a live one. Returns the release, which
 * removes the lock while it is still this process's.
 */
export function lockFile(file: string, options: LockFileOptions): () => void {
  let seen: LockRecord | null = null;
  for (let attempt = 0; attempt < 3; attempt++) {
    if (createWhole(file, options.text)) {
      removeLeftovers(file, options.text, options.isStale);
      const renewal = setInterval(() => {
        try {
          const now = new Date();
          utimesSync(file, now, now);
        } catch {
          // removed: nothing to renew
        }
      }, options.renewMs);
      renewal.unref();
      return () => {
        clearInterval(renewal);
        const lock = readLock(file);
        if (lock && `${lock.pid}\n${lock.fields.join('\n')}` === options.text) rmSync(file, { force: true });
      };
    }
    seen = readLock(file);
    if (!seen) continue;
    if (!options.isStale(seen)) throw options.inUse(seen);
    options.beforeTakeover?.(seen);
    // several may have judged it stale: one alone takes it over
    const taker = removeStale(file, seen, options.text, options.isStale);
    if (taker) throw options.inUse(taker);
  }
  // another took the stale lock over at the same moment
  throw options.inUse(readLock(file) ?? seen);
}

/**
 * Claims a data folder for this process (`<folder>/store.lock`: its process id, host, start and process namespace),
 * so that no two processes append to and compact the same collection files. Stores of one process share the claim
 * (tests open a folder again; each service of a platform in one process has its own folder). A lock left by a process
 * that is gone (killed) is taken over: of this host and namespace, one whose process is not running or is another
 * program now (its id handed out again: a restarted container), or names this very process; of another host or
 * container (a shared volume), one its holder, which renews it every RENEW_MS, has not renewed for STALE_AFTER_MS, or
 * for SAME_MACHINE_STALE_AFTER_MS when it is of this very machine (this boot: a container restarted after a kill); of
 * this host name and another boot, one not renewed since this machine booted (another machine of the same name keeps
 * renewing its own); one without a process id (empty, or edited by hand), WRITING_MS after it was made. Returns the
 * release.
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
    if (Number.isNaN(lock.pid)) return Date.now() - lock.renewedAt >= WRITING_MS;
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
  // where a holder elsewhere runs, in an error
  const whereHeld = (lock: Lock) => {
    if (lock.host !== host) return lock.host;
    return otherBoot(lock) ? `${host}, another machine of that name` : `${host}, in another container`;
  };
  const inUse = (lock: Lock) => {
    const { pid, renewedAt } = lock;
    if (Number.isNaN(pid))
      return new DataFolderInUseError(folder, pid, { renewedAt, staleAfterMs: WRITING_MS });
    if (!elsewhere(lock)) return new DataFolderInUseError(folder, pid);
    return new DataFolderInUseError(folder, pid, {
      host: whereHeld(lock),
      renewedAt,
      staleAfterMs: staleAfter(lock),
    });
  };

  // the folder itself, whatever path (a symbolic link) named it: one lock per folder in this process
  const key = realpathSync(folder);
  let claim = held.get(key);
  if (!claim) {
    const release = lockFile(file, {
      text: mine,
      renewMs: RENEW_MS,
      isStale: (lock) => stale(storeLock(lock)),
      inUse: (lock) => (lock ? inUse(storeLock(lock)) : new DataFolderInUseError(folder, Number.NaN)),
    });
    const free = () => {
      held.delete(key);
      if (held.size === 0) process.off('exit', freeAtExit);
      release();
    };
    if (held.size === 0) process.on('exit', freeAtExit);
    claim = { stores: 0, free };
    held.set(key, claim);
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
