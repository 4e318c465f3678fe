// Three projects so each kind of test can run alone: `pnpm test:unit`, `:integration`, `:e2e`.
const swc = [
  '@swc/jest',
  { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } },
];
// Packages that ship ES modules only: Node loads them natively, jest needs them compiled to CommonJS.
const esmOnly = ['jose', '@seriousme/openapi-schema-validator'];
const base = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': swc, '^.+\\.m?js$': swc },
  transformIgnorePatterns: [`/node_modules/(?!(\\.pnpm/[^/]+/node_modules/)?(${esmOnly.join('|')})/)`],
  moduleFileExtensions: ['ts', 'js', 'json'],
};

/** @type {import('jest').Config} */
module.exports = {
  testTimeout: 30_000,
  // Known leak: after the NATS-reconnect test in services/edge/test/edge-session-jwt.test.ts restarts
  // its nats-server, a handle stays open and the in-band run (2 cores) would never exit. Results are
  // complete when this applies; remove it once that handle is found.
  forceExit: true,
  projects: [
    {
      ...base,
      displayName: 'unit',
      testMatch: ['<rootDir>/packages/*/src/**/*.test.ts', '<rootDir>/services/*/src/**/*.test.ts'],
    },
    {
      ...base,
      displayName: 'integration',
      testMatch: ['<rootDir>/packages/*/test/**/*.test.ts', '<rootDir>/services/*/test/**/*.test.ts'],
    },
    { ...base, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'] },
    { ...base, displayName: 'browser', testMatch: ['<rootDir>/test/browser/**/*.test.ts'] },
  ],
};
