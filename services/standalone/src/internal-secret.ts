import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  fsyncSync,
  linkSync,
  openSync,
  readFileSync,
  rmSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';

/** The internal secret kept in DATA_DIR cannot be read or kept: a new one would leave what the old one sealed unreadable. */
export class InternalSecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InternalSecretError';
  }
}

/** what a kept secret may be: one word of at least 32 characters (PLATFORM_INTERNAL_SECRET's minimum) */
const SECRET = /^\S{32,}$/;

const why = (err: unknown) => {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOTDIR') return 'a part of its path is a file';
  if (code === 'EISDIR') return 'it is a folder';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EROFS') return 'a read-only file system';
  return String(code ?? err);
};

/** The secret in `file`, or undefined when there is none yet; anything else there stops the start. */
function readKept(file: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    // none yet, or no folder to hold one (a part of the path is a file): said as it cannot be written
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw new InternalSecretError(
      `cannot read the internal secret in ${file}: ${why(err)}; make it readable, or set PLATFORM_INTERNAL_SECRET to the secret this data was sealed with`,
    );
  }
  const secret = text.trim();
  if (!SECRET.test(secret))
    throw new InternalSecretError(
      `${file} does not hold an internal secret (one word of at least 32 characters): restore it from a backup of this data folder, or set PLATFORM_INTERNAL_SECRET to the secret this data was sealed with`,
    );
  try {
    // readable by its owner alone, whatever a restore left (as signing-keys.secret)
    chmodSync(file, 0o600);
  } catch {
    // another user's file, or a read-only mount: it is read as it is
  }
  return secret;
}

/**
 * `pnpm start`'s internal secret when PLATFORM_INTERNAL_SECRET is not set: 32 random bytes in
 * `DATA_DIR/internal.secret` (mode 0600, beside signing-keys.secret), made at the first start and read at every
 * next one. The services seal with it (the gateway's provider keys, the legacy assistants' developer tokens): a new
 * one at each start would leave them unreadable. Never replaced: a file that does not hold one stops the start.
 */
export function keptInternalSecret(dataDir: string): string {
  const file = path.resolve(dataDir, 'internal.secret');
  const kept = readKept(file);
  if (kept) return kept;
  const secret = randomBytes(32).toString('base64url');
  // written whole, then linked into place: never half a file, never over one another start made meanwhile
  const next = `${file}.${process.pid}.tmp`;
  try {
    // one left by a start killed with this process id (a container's are the same at each start), or a link
    // planted there: never written through
    rmSync(next, { force: true });
    writeWhole(next, secret);
    try {
      linkSync(next, file);
    } catch (err) {
      if (!NO_HARD_LINKS.has((err as NodeJS.ErrnoException).code ?? '')) throw err;
      // a file system without hard links (FAT, exFAT, a virtual machine's share): created in place, exclusively;
      // the data folder's lock keeps another start from reading it half-written
      writeWhole(file, secret);
    }
    return secret;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      const other = readKept(file);
      if (other) return other;
      // nothing to read, yet a name there: a link to a file that is gone
      throw new InternalSecretError(
        `cannot read the internal secret in ${file}: it is a link to a missing file; restore that file, or set PLATFORM_INTERNAL_SECRET to the secret this data was sealed with`,
      );
    }
    // as each service says it of its store
    throw new InternalSecretError(
      `cannot use ${path.resolve(dataDir)} as a data folder: ${why(err)}; set DATA_DIR to a writable folder, where pnpm start keeps its internal secret, or set PLATFORM_INTERNAL_SECRET`,
    );
  } finally {
    try {
      rmSync(next, { force: true });
    } catch {
      // a folder it could not write in: nothing was written there
    }
  }
}

/** what `link` answers on a file system without hard links */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

/**
 * `secret` in a new file `file` (exclusive: never through a link, never over another), owner-only, on disk; removed
 * again if it could not be written whole (a full disk), so that no start finds it empty
 */
function writeWhole(file: string, secret: string): void {
  const fd = openSync(file, 'wx', 0o600);
  try {
    writeSync(fd, `${secret}\n`);
    fsyncSync(fd);
  } catch (err) {
    rmSync(file, { force: true });
    throw err;
  } finally {
    closeSync(fd);
  }
}
