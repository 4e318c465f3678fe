export * from './port';
export { createEmbeddedStore, type EmbeddedStoreOptions } from './embedded-store';
export { createMongoStore, type MongoStoreOptions } from './mongo-store';
export { createStoreFromEnv, type StoreSettings } from './from-settings';
