import { mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '@platform/testkit';
import { writeOperatorHints } from './operator-hints';

describe('DATA_DIR/standalone.json', () => {
  const data = tempDir('operator-hints-');
  afterAll(() => data.remove());

  it('never writes the internal secret through a link at its temporary file (one left there, or planted)', () => {
    const dir = path.join(data.dir, 'data');
    mkdirSync(dir);
    const elsewhere = path.join(data.dir, 'elsewhere');
    writeFileSync(elsewhere, '', { mode: 0o644 });
    symlinkSync(elsewhere, path.join(dir, `standalone.json.${process.pid}.tmp`));
    writeOperatorHints(dir, { state: 'starting', internalSecret: 'the-secret', pids: {}, states: {} });
    expect(readFileSync(elsewhere, 'utf8')).toBe('');
    const file = path.join(dir, 'standalone.json');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ internalSecret: 'the-secret' });
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });
});
