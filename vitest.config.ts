import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Starts (or finds) the database once per run and hands its URI to the tests with provide/inject.
    globalSetup: ['test/globalSetup.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    // The first run builds the local development database with mvn, which downloads its jars.
    hookTimeout: 120_000
  }
});
