import { defineConfig } from 'vitest/config';

// Two projects: `unit` (pure logic, no database, no processes) and `integration` (the real stack:
// the app over a real MongoDB wire-protocol server, server processes, the CLI as a child process).
// `npx vitest run --project unit` runs in seconds.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          // Starts (or finds) the database once per run and hands its URI to the tests with provide/inject.
          globalSetup: ['test/support/globalSetup.ts'],
          pool: 'forks',
          testTimeout: 30_000,
          // The first run builds the local development database with mvn, which downloads its jars.
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
