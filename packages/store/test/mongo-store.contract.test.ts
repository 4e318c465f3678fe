import { randomUUID } from 'node:crypto';
import { createMongoStore } from '../src';
import { storeContract } from './store-contract';

// No MongoDB server can be installed on the build machines: this suite runs wherever MONGO_URL is set.
const url = process.env.MONGO_URL;
if (url) {
  storeContract('mongodb', () => createMongoStore({ url, dbName: `contract_${randomUUID().slice(0, 8)}` }));
} else {
  describe('store contract: mongodb', () => {
    it.skip('runs only when MONGO_URL is set', () => undefined);
  });
}
