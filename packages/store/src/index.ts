export { createEmbeddedStore, type EmbeddedStoreOptions } from './embedded-store';
export { createMongoStore, type MongoStoreOptions } from './mongo';
export * from './port';
