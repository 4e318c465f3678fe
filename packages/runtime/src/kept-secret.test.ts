import fs, { existsSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '@platform/testkit';
import { KeptSecretError, keptSecret } from './kept-secret';

const NAME = { file: 'internal.secret', what: 'internal secret', variable: 'PLATFORM_INTERNAL_SECRET' };

describe('a secret kept in DATA_DIR', () => {
  const data = tempDir('kept-secret-');
  afterAll(() => data.remove());
  let n = 0;
  /** a data folder of its own for each case */
  const folder = () => {
    const dir = path.join(data.dir, String(n++));
    fs.mkdirSync(dir);
    return dir;
  };

  it('is made once, owner-only, in a data folder made 0700 if missing, and read at every next start', () => {
    const dir = path.join(data.dir, `fresh-${n++}`, 'data');
    const secret = keptSecret(dir, NAME);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const file = path.join(dir, 'internal.secret');
    expect(readFileSync(file, 'utf8')).toBe(`${secret}\n`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readdirSync(dir)).toEqual(['internal.secret']);
    expect(keptSecret(dir, NAME)).toBe(secret);
  });

  it.each([
    ['empty', ''],
    ['cut short', 'abcde'],
  ])('refuses a file left %s, naming it and the fix, and never replaces it', (_, text) => {
    const dir = folder();
    const file = path.join(dir, 'internal.secret');
    writeFileSync(file, text);
    expect(() => keptSecret(dir, NAME)).toThrow(KeptSecretError);
    expect(() => keptSecret(dir, NAME)).toThrow(
      `${file} does not hold an internal secret (at least 32 characters): restore it from a backup of this data folder, or set PLATFORM_INTERNAL_SECRET to the secret this data was sealed with`,
    );
    expect(readFileSync(file, 'utf8')).toBe(text);
    expect(readdirSync(dir)).toEqual(['internal.secret']);
  });

  it('reads a secret an operator wrote on two lines (openssl rand -base64 64) as written', () => {
    const dir = folder();
    const file = path.join(dir, 'internal.secret');
    const text = `${'a'.repeat(76)}\n${'b'.repeat(12)}`;
    writeFileSync(file, `${text}\n`);
    expect(keptSecret(dir, NAME)).toBe(text);
  });

  it('refuses a folder in its place, and a data folder that is a file, each naming the fix', () => {
    const dir = folder();
    const file = path.join(dir, 'internal.secret');
    fs.mkdirSync(file);
    expect(() => keptSecret(dir, NAME)).toThrow(
      `cannot read the internal secret in ${file}: it is a folder; make it readable, or set PLATFORM_INTERNAL_SECRET to the secret this data was sealed with`,
    );
    const notAFolder = path.join(folder(), 'data');
    writeFileSync(notAFolder, '');
    expect(() => keptSecret(notAFolder, NAME)).toThrow(
      `cannot use ${notAFolder} as a data folder: a part of its path is a file; set DATA_DIR to a writable folder, where the internal secret is kept, or set PLATFORM_INTERNAL_SECRET`,
    );
    expect(() => keptSecret(path.join(notAFolder, 'below'), NAME)).toThrow(
      `cannot use ${path.join(notAFolder, 'below')} as a data folder: a part of its path is a file;`,
    );
  });

  it('is never made anew where data sealed with the one it replaces is kept: the missing file is named', () => {
    const dir = folder();
    const file = path.join(dir, 'internal.secret');
    expect(() => keptSecret(dir, NAME, { sealedWithIt: 'the stored tokens' })).toThrow(KeptSecretError);
    expect(() => keptSecret(dir, NAME, { sealedWithIt: 'the stored tokens' })).toThrow(
      `${file} is missing, and the stored tokens were sealed with the internal secret it held: restore it from a backup of this data folder, or set PLATFORM_INTERNAL_SECRET to the secret they were sealed with`,
    );
    expect(readdirSync(dir)).toEqual([]);
    // restored: read as it is
    writeFileSync(file, `${'r'.repeat(43)}\n`);
    expect(keptSecret(dir, NAME, { sealedWithIt: 'the stored tokens' })).toBe('r'.repeat(43));
  });

  it('refuses a link there to a file that is gone, instead of sealing with a secret of this run alone', () => {
    const dir = folder();
    const file = path.join(dir, 'internal.secret');
    // where the operator keeps it, not mounted now
    symlinkSync(path.join(dir, 'missing', 'secret'), file);
    expect(() => keptSecret(dir, NAME)).toThrow(KeptSecretError);
    expect(() => keptSecret(dir, NAME)).toThrow(
      `cannot read the internal secret in ${file}: it is a link to a missing file`,
    );
    expect(readdirSync(dir)).toEqual(['internal.secret']);
  });

  it('keeps its secret on a file system without hard links (FAT, exFAT, a virtual machine share)', () => {
    const dir = folder();
    const link = jest.spyOn(fs, 'linkSync').mockImplementation(() => {
      // as Linux answers a link on vfat
      throw Object.assign(new Error('EPERM: operation not permitted, link'), { code: 'EPERM' });
    });
    try {
      const secret = keptSecret(dir, NAME);
      expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const file = path.join(dir, 'internal.secret');
      expect(readFileSync(file, 'utf8')).toBe(`${secret}\n`);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(readdirSync(dir)).toEqual(['internal.secret']);
      expect(keptSecret(dir, NAME)).toBe(secret);
    } finally {
      link.mockRestore();
    }
  });

  it('tightens a kept secret restored readable by others back to 0600', () => {
    const dir = folder();
    const secret = keptSecret(dir, NAME);
    const file = path.join(dir, 'internal.secret');
    fs.chmodSync(file, 0o644); // restored from a backup, say
    expect(keptSecret(dir, NAME)).toBe(secret);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('never writes its secret through a link at its temporary file (one left there, or planted)', () => {
    const dir = folder();
    const elsewhere = path.join(data.dir, `elsewhere-${n}`);
    writeFileSync(elsewhere, '', { mode: 0o644 });
    symlinkSync(elsewhere, path.join(dir, `internal.secret.${process.pid}.tmp`));
    const secret = keptSecret(dir, NAME);
    expect(readFileSync(elsewhere, 'utf8')).toBe('');
    expect(readFileSync(path.join(dir, 'internal.secret'), 'utf8')).toBe(`${secret}\n`);
    expect(existsSync(path.join(dir, `internal.secret.${process.pid}.tmp`))).toBe(false);
  });
});
