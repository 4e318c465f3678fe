// Four projects so each kind of test can run alone: `pnpm test:unit`, `:integration`, `:e2e`, `:browser`.
const swc = [
  '@swc/jest',
  { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } },
];
// Packages that ship ES modules only: Node loads them natively, jest needs them compiled to CommonJS.
const esmOnly = [
  'jose',
  '@seriousme/openapi-schema-validator',
  'oidc-provider',
  'openid-client',
  'oauth4webapi',
];
const base = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': swc, '^.+\\.m?js$': swc },
  transformIgnorePatterns: [`/node_modules/(?!(\\.pnpm/[^/]+/node_modules/)?(${esmOnly.join('|')})/)`],
  moduleFileExtensions: ['ts', 'js', 'json'],
  // stops a platform whose test's start timed out, which would keep jest from exiting
  setupFilesAfterEnv: ['<rootDir>/test/support/stop-live-platforms.ts'],
};

/** @type {import('jest').Config} */
module.exports = {
  // a deadline for a hung test, not a timing: a platform's start in a hook takes over 30 s on a loaded 2-core machine
  testTimeout: 60_000,
  // jest's default (one worker per core but one) runs a 2-core machine's files one at a time, and most of their time
  // is waiting on other processes (platforms, nats-server, Chromium): two files at once (decision 0126)
  maxWorkers: Math.max(2, require('node:os').availableParallelism() - 1),
  projects: [
    {
      ...base,
      displayName: 'unit',
      testMatch: [
        '<rootDir>/packages/*/src/**/*.test.ts',
        '<rootDir>/services/*/src/**/*.test.ts',
        '<rootDir>/scripts/**/*.test.ts',
      ],
    },
    {
      ...base,
      displayName: 'integration',
      testMatch: ['<rootDir>/packages/*/test/**/*.test.ts', '<rootDir>/services/*/test/**/*.test.ts'],
    },
    {
      ...base,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/e2e/**/*.test.ts', '<rootDir>/test/chaos/**/*.test.ts'],
    },
    // Pages in a real Chromium (Debian's package; never downloaded): see test/browser/chromium.ts.
    { ...base, displayName: 'browser', testMatch: ['<rootDir>/test/browser/**/*.test.ts'] },
  ],
};
