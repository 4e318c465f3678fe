import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { bootId, type LockRecord, lockFile, processAlive } from '@platform/store';
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
    /** `stopping`: the process is a service of a supervisor that is gone; `unreadable`: a lock this start cannot read */
    why?: 'stopping' | 'unreadable',
  ) {
    super(
      why === 'stopping'
        ? `${dataDir} is in use by a pnpm start that was killed (process ${pid}, a service of it still stopping): two platforms on one data folder lose each other's writes; wait for it to exit, or set DATA_DIR to another folder`
        : why === 'unreadable'
          ? `${dataDir} is locked by a standalone.lock this start cannot read: remove it if no pnpm start uses this data folder`
          : Number.isNaN(pid)
            ? `${dataDir} is in use by another pnpm start (writing its lock, standalone.lock, now): two platforms on one data folder lose each other's writes; try again in a few seconds (a lock left without a process id is taken over ${WRITING_MS / 1000} s after it was made), or set DATA_DIR to another folder`
            : host
              ? `${dataDir} is in use by another pnpm start (process ${pid} on host ${host}): two platforms on one data folder lose each other's writes; stop it, or set DATA_DIR to another folder (a lock its holder has not renewed for a minute is taken over)`
              : `${dataDir} is in use by another pnpm start (process ${pid}): two platforms on one data folder lose each other's writes; stop it, or set DATA_DIR to another folder`,
    );
    this.name = 'DataDirInUseError';
  }
}

/** this boot of this host (Linux): a lock of an earlier boot was left by a process that is gone, whatever runs now */
const thisBoot = bootId || null;

/** a lock of this host's earlier boot: its process id is another program's now, if any */
const earlierBoot = (lock: { boot: string | null }) =>
  lock.boot !== null && thisBoot !== null && lock.boot !== thisBoot;

/**
 * Whether a process of this host is a service of a pnpm start (its environment names one, as `ServiceProcess` starts
 * it): a process id listed long ago may be another program's now. Without /proc, whether it runs.
 */
const runningService = (pid: number) => {
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || !processAlive(pid)) return false;
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
 * What a lock says: its holder's host and boot after its process id (absent in the formats before the host, then the
 * boot, was recorded).
 */
const dataDirLock = (lock: LockRecord) => ({
  ...lock,
  host: lock.fields[0]?.trim() || null,
  boot: lock.fields[1]?.trim() || null,
});
type Lock = ReturnType<typeof dataDirLock>;

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
    return !(Number.isInteger(lock.pid) && lock.pid > 0 && !ours && processAlive(lock.pid));
  };
  try {
    return lockFile(file, {
      text: mine,
      renewMs: RENEW_MS,
      isStale: (lock) => stale(dataDirLock(lock)),
      inUse: (lock) =>
        lock
          ? inUse(dataDirLock(lock))
          : new DataDirInUseError(path.resolve(dataDir), Number.NaN, undefined, 'unreadable'),
      beforeTakeover: (record) => {
        const lock = dataDirLock(record);
        // the services of a supervisor of an earlier boot are gone too: a process id listed is another's now
        const service =
          (!lock.host || lock.host === host) && !earlierBoot(lock) ? stoppingService(dataDir) : undefined;
        if (service !== undefined)
          throw new DataDirInUseError(path.resolve(dataDir), service, undefined, 'stopping');
      },
    });
  } catch (err) {
    // a lock that cannot be written (as a folder that cannot be)
    if (err instanceof DataDirInUseError || (err as NodeJS.ErrnoException).code === undefined) throw err;
    return unlocked;
  }
}
