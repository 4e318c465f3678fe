import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '@platform/testkit';
import { createEmbeddedStore } from '../src';

describe('embedded store: blobs on disk', () => {
  it('keeps each blob as a file beside the collections, and finds it after a restart', async () => {
    const folder = tempDir('store-blobs-');
    try {
      const bytes = randomBytes(300_000);
      const first = createEmbeddedStore({ dataDir: folder.dir });
      await first.blobs('models').put('a1:en:f00d', bytes);
      await first.close();
      const file = path.join(folder.dir, 'models.blobs', 'a1:en:f00d');
      expect(statSync(file).size).toBe(bytes.length);
      // a write cut short by kill -9 leaves a partial file of its own, which no reader ever sees
      writeFileSync(path.join(folder.dir, 'models.blobs', '.cut-short.partial'), 'half a blob');

      const again = createEmbeddedStore({ dataDir: folder.dir });
      try {
        // a partial file is not a blob
        expect((await again.blobs('models').list()).map((b) => b.id)).toEqual(['a1:en:f00d']);
        expect((await again.blobs('models').get('a1:en:f00d'))!.equals(bytes)).toBe(true);
        await again.blobs('models').delete('a1:en:f00d');
        expect(existsSync(file)).toBe(false);
        // the first write after a start removes what writes cut short left
        await again.blobs('models').put('a1:en:beef', bytes.subarray(0, 10));
        expect(readdirSync(path.join(folder.dir, 'models.blobs'))).toEqual(['a1:en:beef']);
      } finally {
        await again.close();
      }
    } finally {
      folder.remove();
    }
  });
});
