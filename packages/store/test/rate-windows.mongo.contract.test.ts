import { randomUUID } from 'node:crypto';
import { createMongoStore, rateWindowsFor } from '../src';
import { rateWindowsContract } from './rate-windows-contract';

// No MongoDB server can be installed on the build machines: this suite runs wherever MONGO_URL is set.
const url = process.env.MONGO_URL;
if (url) {
  rateWindowsContract('documents of MongoDB', {
    open: async () => createMongoStore({ url, dbName: `rate_windows_${randomUUID().slice(0, 8)}` }),
    windows: rateWindowsFor,
  });
} else {
  describe('rate windows: documents of MongoDB', () => {
    it.skip('runs only when MONGO_URL is set', () => undefined);
  });
}
