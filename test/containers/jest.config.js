// pnpm test:containers: the production images built and run as docker-compose.yml deploys them. Not part
// of `pnpm test` (it needs podman, builds images and takes minutes); .ci/run runs it after the other tests.
const root = require('../../jest.config.js');
const [unit] = root.projects;

/** @type {import('jest').Config} */
module.exports = {
  ...unit,
  rootDir: '../..',
  displayName: 'containers',
  testMatch: ['<rootDir>/test/containers/**/*.test.ts'],
  // builds take minutes on a cold cache; each step bounds its own waits
  testTimeout: 20 * 60_000,
};
