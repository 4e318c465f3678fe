import { tempDir } from '@platform/testkit';
import { createEmbeddedStore, type Store } from '../src';
import { pieceBlobs } from '../src/blobs';
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

/** The embedded engine with its blobs in pieces of a collection, as the MongoDB engine keeps them. */
const withPieceBlobs = (inner: Store): Store => ({
  ...inner,
  collection: inner.collection.bind(inner),
  blobs: (bucket) => pieceBlobs(inner, bucket),
});
storeContract('embedded, blobs in pieces (as on MongoDB)', async () => withPieceBlobs(createEmbeddedStore()));
