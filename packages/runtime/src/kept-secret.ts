import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';

/** A secret kept in DATA_DIR cannot be read or kept: a new one would leave what the old one sealed unreadable. */
export class KeptSecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeptSecretError';
  }
}

/** Which secret, in the words of its errors: its file in DATA_DIR, what it is, the setting that stands for it. */
export interface KeptSecretName {
  /** e.g. `internal.secret` */
  file: string;
  /** e.g. `internal secret` */
  what: string;
  /** e.g. `PLATFORM_INTERNAL_SECRET` (when set, nothing is kept) */
  variable: string;
}

/**
 * The fewest characters of a kept secret, once trimmed: the settings' minimum. Any text, as the settings take it: a
 * secret an operator wrote on two lines (`openssl rand -base64 64`) is read as written.
 */
const SECRET_MIN_LENGTH = 32;

const why = (err: unknown) => {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOTDIR') return 'a part of its path is a file';
  if (code === 'EISDIR') return 'it is a folder';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EROFS') return 'a read-only file system';
  return String(code ?? err);
};

/** The secret in `file`, or undefined when there is none yet; anything else there stops the start. */
function readKept(file: string, { what, variable }: KeptSecretName): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    // none yet, or no folder to hold one (a part of the path is a file): said as it cannot be written
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw new KeptSecretError(
      `cannot read the ${what} in ${file}: ${why(err)}; make it readable, or set ${variable} to the secret this data was sealed with`,
    );
  }
  const secret = text.trim();
  if (secret.length < SECRET_MIN_LENGTH)
    throw new KeptSecretError(
      `${file} does not hold ${/^[aeiou]/.test(what) ? 'an' : 'a'} ${what} (at least 32 characters): restore it from a backup of this data folder, or set ${variable} to the secret this data was sealed with`,
    );
  try {
    // readable by its owner alone, whatever a restore left
    chmodSync(file, 0o600);
  } catch {
    // another user's file, or a read-only mount: it is read as it is
  }
  return secret;
}

/**
 * A secret kept in `DATA_DIR/<file>` for when its setting (`variable`) is not set: 32 random bytes (mode 0600; the
 * folder is made 0700 if missing), made at the first start and read at every next one. What was sealed with it is
 * unreadable without it: it is never replaced, and a file that does not hold one stops the start
 * (`KeptSecretError`, one line naming the file and the fix). `sealedWithIt` names what the caller already holds
 * sealed with it (`the stored signing keys`): then a missing file stops the start too, before one is made anew.
 */
export function keptSecret(
  dataDir: string,
  name: KeptSecretName,
  options: { sealedWithIt?: string } = {},
): string {
  const folder = path.resolve(dataDir);
  const file = path.join(folder, name.file);
  const kept = readKept(file, name);
  if (kept) return kept;
  // deleted, or a data folder restored without it: a new one opens nothing, and would be in the way of the restore
  if (options.sealedWithIt)
    throw new KeptSecretError(
      `${file} is missing, and ${options.sealedWithIt} were sealed with the ${name.what} it held: restore it from a backup of this data folder, or set ${name.variable} to the secret they were sealed with`,
    );
  // as each service says it of its store
  const cannotUse = (reason: string) =>
    new KeptSecretError(
      `cannot use ${folder} as a data folder: ${reason}; set DATA_DIR to a writable folder, where the ${name.what} is kept, or set ${name.variable}`,
    );
  try {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
  } catch (err) {
    // a file there: said as of a file in its path, when the secret cannot be written into it
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw cannotUse(why(err));
  }
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
      // a file system without hard links (FAT, exFAT, a virtual machine's share): created in place, exclusively
      // (pnpm start's lock on its data folder keeps another start from reading it half-written)
      writeWhole(file, secret);
    }
    return secret;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      const other = readKept(file, name);
      if (other) return other;
      // nothing to read, yet a name there: a link to a file that is gone
      throw new KeptSecretError(
        `cannot read the ${name.what} in ${file}: it is a link to a missing file; restore that file, or set ${name.variable} to the secret this data was sealed with`,
      );
    }
    throw cannotUse(why(err));
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
