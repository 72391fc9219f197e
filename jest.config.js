/**
 * ESM TypeScript under jest 30: ts-jest's default-esm preset, run with
 * NODE_OPTIONS=--experimental-vm-modules (p-queue 9 is ESM-only). Relative imports are
 * written with `.js` (NodeNext); the mapper strips it so jest finds the `.ts` source.
 * @type {import('jest').Config}
 */
export default {
  preset: 'ts-jest/presets/default-esm',
  testEnvironment: 'node',
  roots: ['<rootDir>/apps', '<rootDir>/packages', '<rootDir>/scripts'],
  testMatch: ['**/*.test.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.json', diagnostics: false }],
  },
  testTimeout: 60_000,
  // Three suites at once on 2 cores: the long suites (the chaos experiments, the fleet tests) mostly
  // wait on venue latency, budget windows and child processes, so a third lane overlaps those waits
  // (a busy-core run of the whole suite: 14:48 with three against 20-23 min with two, 2026-11-28).
  maxWorkers: 3,
};
