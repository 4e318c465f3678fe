import { tempDir } from '@platform/testkit';
import { createEmbeddedStore } from '../src';
import { storeContract } from './store-contract';

let dir: ReturnType<typeof tempDir> | undefined;
storeContract(
  'embedded (on disk)',
  async () => {
    dir = tempDir('store-contract-');
    return createEmbeddedStore({ dataDir: dir.dir });
  },
  async () => dir?.remove(),
);
storeContract('embedded (memory only)', async () => createEmbeddedStore());
