export { createEmbeddedStore, DataFolderError, type EmbeddedStoreOptions } from './embedded-store';
export { createMongoStore, DatabaseUnreachableError, type MongoStoreOptions } from './mongo';
export * from './port';
export { type Revised, updateWithRevision } from './revisions';
