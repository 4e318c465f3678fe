export { CorruptFileError, NoRoomToRewriteError } from './collection-file';
export { createEmbeddedStore, DataFolderError, type EmbeddedStoreOptions } from './embedded-store';
export {
  alive as processAlive,
  bootId,
  DataFolderInUseError,
  type LockFileOptions,
  type LockRecord,
  lockFile,
} from './folder-lock';
export { createMongoStore, DatabaseUnreachableError, type MongoStoreOptions } from './mongo';
export * from './port';
export {
  type RateWindows,
  type RateWindowsOptions,
  rateWindowsFor,
  StoreRateWindows,
  type WindowCount,
} from './rate-windows';
export { deleteAsRead, type Revised, updateWithRevision } from './revisions';
