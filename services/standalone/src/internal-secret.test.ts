import fs, { existsSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '@platform/testkit';
import { InternalSecretError, keptInternalSecret } from './internal-secret';

describe("pnpm start's internal secret (DATA_DIR/internal.secret)", () => {
  const data = tempDir('internal-secret-');
  afterAll(() => data.remove());
  let n = 0;
  /** a data folder of its own for each case */
  const folder = () => {
    const dir = path.join(data.dir, String(n++));
    fs.mkdirSync(dir);
    return dir;
  };

  it('refuses a link there to a file that is gone, instead of sealing with a secret of this run alone', () => {
    const dir = folder();
    const file = path.join(dir, 'internal.secret');
    // where the operator keeps it, not mounted now
    symlinkSync(path.join(dir, 'missing', 'secret'), file);
    expect(() => keptInternalSecret(dir)).toThrow(InternalSecretError);
    expect(() => keptInternalSecret(dir)).toThrow(
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
      const secret = keptInternalSecret(dir);
      expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const file = path.join(dir, 'internal.secret');
      expect(readFileSync(file, 'utf8')).toBe(`${secret}\n`);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(readdirSync(dir)).toEqual(['internal.secret']);
      expect(keptInternalSecret(dir)).toBe(secret);
    } finally {
      link.mockRestore();
    }
  });

  it('tightens a kept secret restored readable by others back to 0600, as signing-keys.secret is', () => {
    const dir = folder();
    const secret = keptInternalSecret(dir);
    const file = path.join(dir, 'internal.secret');
    fs.chmodSync(file, 0o644); // restored from a backup, say
    expect(keptInternalSecret(dir)).toBe(secret);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('never writes its secret through a link at its temporary file (one left there, or planted)', () => {
    const dir = folder();
    const elsewhere = path.join(data.dir, `elsewhere-${n}`);
    writeFileSync(elsewhere, '', { mode: 0o644 });
    symlinkSync(elsewhere, path.join(dir, `internal.secret.${process.pid}.tmp`));
    const secret = keptInternalSecret(dir);
    expect(readFileSync(elsewhere, 'utf8')).toBe('');
    expect(readFileSync(path.join(dir, 'internal.secret'), 'utf8')).toBe(`${secret}\n`);
    expect(existsSync(path.join(dir, `internal.secret.${process.pid}.tmp`))).toBe(false);
  });
});
