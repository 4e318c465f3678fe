import { existsSync, mkdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { CHILD_SERVICE_ENV } from './service-process';

/** how often the holder renews its lock (its modification time) */
const RENEW_MS = 15_000;
/** a lock of another host not renewed for this long is left by a platform that is gone */
const STALE_AFTER_MS = 60_000;
/**
 * a lock (or takeover claim) without a process id is one a start is writing (made, not yet written) for this long;
 * older, it was left so by a start killed at that moment or a machine that crashed before writing it out
 */
const WRITING_MS = 10_000;

/** A second `pnpm start` on a data folder a running one holds. */
export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
    /** the holder's host, when it is another one (a shared volume) */
    readonly host?: string,
    /** the process is a service of a supervisor that is gone, still stopping */
    stopping = false,
  ) {
    super(
      stopping
        ? `${dataDir} is in use by a pnpm start that was killed (process ${pid}, a service of it still stopping): two platforms on one data folder lose each other's writes; wait for it to exit, or set DATA_DIR to another folder`
        : Number.isNaN(pid)
          ? `${dataDir} is in use by another pnpm start (writing its lock, standalone.lock, now): two platforms on one data folder lose each other's writes; try again in a few seconds (a lock left without a process id is taken over ${WRITING_MS / 1000} s after it was made), or set DATA_DIR to another folder`
          : host
            ? `${dataDir} is in use by another pnpm start (process ${pid} on host ${host}): two platforms on one data folder lose each other's writes; stop it, or set DATA_DIR to another folder (a lock its holder has not renewed for a minute is taken over)`
            : `${dataDir} is in use by another pnpm start (process ${pid}): two platforms on one data folder lose each other's writes; stop it, or set DATA_DIR to another folder`,
    );
    this.name = 'DataDirInUseError';
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

/** this boot of this host (Linux): a lock of an earlier boot was left by a process that is gone, whatever runs now */
const thisBoot = (() => {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
  } catch {
    return null;
  }
})();

/** a lock of this host's earlier boot: its process id is another program's now, if any */
const earlierBoot = (lock: { boot: string | null }) =>
  lock.boot !== null && thisBoot !== null && lock.boot !== thisBoot;

/**
 * Whether a process of this host is a service of a pnpm start (its environment names one, as `ServiceProcess` starts
 * it): a process id listed long ago may be another program's now. Without /proc, whether it runs.
 */
const runningService = (pid: number) => {
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || !alive(pid)) return false;
  try {
    const environ = readFileSync(`/proc/${pid}/environ`, 'latin1');
    return environ.split('\0').some((entry) => entry.startsWith(`${CHILD_SERVICE_ENV}=`));
  } catch {
    return !existsSync('/proc/self');
  }
};

/**
 * A service of a supervisor killed with SIGKILL, still finishing its shutdown (its requests, its usage, its store
 * closed): DATA_DIR/standalone.json, left behind, lists the services' process ids.
 */
function stoppingService(dataDir: string): number | undefined {
  try {
    const { pids } = JSON.parse(readFileSync(path.join(dataDir, 'standalone.json'), 'utf8')) as {
      pids?: Record<string, unknown>;
    };
    return Object.values(pids ?? {}).find(
      (pid): pid is number => typeof pid === 'number' && runningService(pid),
    );
  } catch {
    return undefined;
  }
}

/**
 * What a lock says: its holder's process id, host and boot (absent in the formats before the host, then the boot,
 * was recorded).
 */
function readLock(
  file: string,
): { pid: number; host: string | null; boot: string | null; renewedAt: number; ino: number } | null {
  try {
    const [pid, host, boot] = readFileSync(file, 'utf8').split('\n');
    const { mtimeMs, ino } = statSync(file);
    return {
      pid: Number.parseInt(pid ?? '', 10),
      host: host?.trim() || null,
      boot: boot?.trim() || null,
      renewedAt: mtimeMs,
      ino,
    };
  } catch {
    return null; // removed meanwhile (its holder stopped, or another start took it over)
  }
}

type Lock = NonNullable<ReturnType<typeof readLock>>;

// Object.is: a lock without a process id (NaN) is the same one as long as it is unchanged
const sameLock = (a: Lock | null, b: Lock) =>
  a !== null &&
  Object.is(a.pid, b.pid) &&
  a.host === b.host &&
  a.renewedAt === b.renewedAt &&
  a.ino === b.ino;

/**
 * Removes `file`, a lock (or a takeover claim) judged stale as `stale`, unless another start does: of two starts that
 * both judged it stale, one alone removes it, the other then finds the lock the first one took. Whoever creates the
 * claim `<file>.takeover-<its identity>` (O_EXCL) may remove that very file, if it is still the same one; a claim left
 * by a start killed meanwhile is stale in turn, and taken over the same way. Answers the live start that is taking
 * the file over, if another one is.
 */
function removeStale(
  file: string,
  stale: Lock,
  /** what this start writes in a lock or claim */
  mine: string,
  isStale: (lock: Lock) => boolean,
): Lock | undefined {
  const claim = `${file}.takeover-${stale.ino}-${Math.round(stale.renewedAt)}`;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(claim, mine, { flag: 'wx', mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
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
 * Claims DATA_DIR for this supervisor (`DATA_DIR/standalone.lock`, holding its process id, host and boot), so that
 * no two platforms ever write the same store files (docs/decisions/0037) nor each other's `standalone.json`. A lock
 * left by a process of this host that is gone (killed) is taken over; so is one naming this very process or its
 * parent (a container restarted with the same volume gets the same process ids), or one of an earlier boot (its
 * process id handed out again since). A process id of another host (a shared volume, another container) says
 * nothing here: its lock is taken over only once its holder, which renews it every RENEW_MS, has not for
 * STALE_AFTER_MS. The services of a supervisor killed with SIGKILL finish their shutdown
 * first (`stoppingService`). Returns the release.
 */
export function lockDataDir(dataDir: string): () => void {
  const file = path.resolve(dataDir, 'standalone.lock');
  const host = hostname();
  const mine = `${process.pid}\n${host}\n${thisBoot ? `${thisBoot}\n` : ''}`;
  // a folder that cannot be written: each service names it and DATA_DIR when it opens its store
  const unlocked = () => undefined;
  try {
    // owner-only, as the store makes it (collections and standalone.json hold secrets): made here first now
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  } catch {
    return unlocked;
  }
  const inUse = (lock: Lock) =>
    new DataDirInUseError(
      path.resolve(dataDir),
      lock.pid,
      lock.host && lock.host !== host ? lock.host : undefined,
    );
  // a lock (or a takeover claim) whose holder is gone: of this host, not running (or this very process or its
  // parent, or of an earlier boot, as above); of another host, not renewed for STALE_AFTER_MS; without a process
  // id, made WRITING_MS ago
  const stale = (lock: Lock) => {
    if (Number.isNaN(lock.pid)) return Date.now() - lock.renewedAt >= WRITING_MS;
    if (lock.host && lock.host !== host) return Date.now() - lock.renewedAt >= STALE_AFTER_MS;
    const ours = lock.pid === process.pid || lock.pid === process.ppid;
    if (earlierBoot(lock)) return true;
    return !(Number.isInteger(lock.pid) && lock.pid > 0 && !ours && alive(lock.pid));
  };
  let seen: Lock | null = null;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(file, mine, { flag: 'wx', mode: 0o600 });
      const renewal = setInterval(() => {
        try {
          const now = new Date();
          utimesSync(file, now, now);
        } catch {
          // removed: nothing to renew
        }
      }, RENEW_MS);
      renewal.unref();
      return () => {
        clearInterval(renewal);
        const lock = readLock(file);
        if (lock?.pid === process.pid && (lock.host ?? host) === host) rmSync(file, { force: true });
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return unlocked;
      seen = readLock(file);
      if (!seen) continue;
      if (!stale(seen)) throw inUse(seen);
      // the services of a supervisor of an earlier boot are gone too: a process id listed is another's now
      if ((!seen.host || seen.host === host) && !earlierBoot(seen)) {
        const service = stoppingService(dataDir);
        if (service !== undefined)
          throw new DataDirInUseError(path.resolve(dataDir), service, undefined, true);
      }
      // two starts may both have judged it stale: one alone takes it over
      const taker = removeStale(file, seen, mine, stale);
      if (taker) throw inUse(taker);
    }
  }
  // another start took the stale lock over at the same moment
  const holder = readLock(file) ?? seen;
  throw holder ? inUse(holder) : new DataDirInUseError(path.resolve(dataDir), 0);
}
