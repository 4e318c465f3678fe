export { createEmbeddedStore, DataFolderError, type EmbeddedStoreOptions } from './embedded-store';
export { createMongoStore, type MongoStoreOptions } from './mongo';
export * from './port';
