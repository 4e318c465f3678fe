export { createEmbeddedStore, type EmbeddedStoreOptions } from './embedded-store';
export { createStoreFromEnv, type StoreSettings } from './from-settings';
export { createMongoStore, type MongoStoreOptions } from './mongo-store';
export * from './port';
