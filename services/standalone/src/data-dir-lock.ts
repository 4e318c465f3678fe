import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** A second `pnpm start` on a data folder a running one holds. */
export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `${dataDir} is in use by another pnpm start (process ${pid}): two platforms on one data folder lose each other's writes; stop it, or set DATA_DIR to another folder`,
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

/**
 * Claims DATA_DIR for this supervisor (`DATA_DIR/standalone.lock`, holding its process id), so that no two
 * platforms ever write the same store files (docs/decisions/0037) nor each other's `standalone.json`. A lock
 * left by a process that is gone (killed) is taken over; so is one naming this very process or its parent
 * (a container restarted with the same volume gets the same process ids). Returns the release.
 */
export function lockDataDir(dataDir: string): () => void {
  const file = path.resolve(dataDir, 'standalone.lock');
  // a folder that cannot be written: each service names it and DATA_DIR when it opens its store
  const unlocked = () => undefined;
  try {
    mkdirSync(dataDir, { recursive: true });
  } catch {
    return unlocked;
  }
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      return () => {
        try {
          if (Number.parseInt(readFileSync(file, 'utf8'), 10) === process.pid) rmSync(file, { force: true });
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return unlocked;
      const holder = Number.parseInt(readFileSync(file, 'utf8'), 10);
      const ours = holder === process.pid || holder === process.ppid;
      if (Number.isInteger(holder) && holder > 0 && !ours && alive(holder))
        throw new DataDirInUseError(path.resolve(dataDir), holder);
      rmSync(file, { force: true });
    }
  }
  // another start took the stale lock over at the same moment
  throw new DataDirInUseError(path.resolve(dataDir), Number.parseInt(readFileSync(file, 'utf8'), 10));
}
