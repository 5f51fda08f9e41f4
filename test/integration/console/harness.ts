import type { Browser } from 'puppeteer-core';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { httpCaller, registerCluster } from '../../support/fixtures.js';
import { startFleet, type Fleet } from '../../support/fleet.js';
import { launchBrowser, openPage, type ConsolePage } from './browser.js';
import { NODES, type Stage } from './stage.js';

export interface Harness {
  readonly stage: Stage;
  /** A fresh page; after each test every page is closed and must have seen no error or CSP violation. */
  open(): Promise<ConsolePage>;
}

/**
 * For a describe block: one real server process (`node dist/src/server.js`, exactly what `npm start`
 * and the container image run, so the tests also prove that the build ships the page), one browser,
 * cluster c1 with NODES registered. The server's log must never contain a token (the SSE URL carries one).
 * `env`: extra server environment (LIFECYCLE_SWEEP_INTERVAL_MS, so that a short progress deadline is noticed at once).
 */
export function consoleHarness (opts: { env?: Record<string, string> } = {}): Harness {
  let fleet: Fleet | undefined;
  let browser: Browser | undefined;
  let stage: Stage | undefined;
  const pages: ConsolePage[] = [];

  beforeAll(async () => {
    [fleet, browser] = await Promise.all([startFleet({ processes: 1, ...(opts.env ? { env: opts.env } : {}) }), launchBrowser()]);
    const base = fleet.servers[0]?.url ?? '';
    stage = {
      base,
      api: httpCaller(base),
      admin: await fleet.token('admin', { subject: 'ops-admin' }),
      releaser: await fleet.token('api', { subject: 'ci-bot' }),
      coreflow: await fleet.token('cluster', { clusterId: 'c1', subject: 'coreflow-c1' }),
      secret: fleet.secret,
    };
    await registerCluster(stage.api, stage.admin, 'c1', NODES);
  }, 120_000);

  afterEach(async () => {
    const seen = pages.splice(0).flatMap((p) => p.problems);
    if (browser) await Promise.all((await browser.pages()).map((p) => p.close()));
    expect(seen, 'uncaught errors or CSP violations in the page').toEqual([]);
  });

  afterAll(async () => {
    await browser?.close();
    const logs = fleet?.logs() ?? '';
    for (const jwt of [stage?.admin, stage?.releaser]) if (jwt) expect(logs, 'a token in the server log').not.toContain(jwt.split('.')[2]);
    await fleet?.close();
  });

  return {
    get stage () {
      if (!stage) throw new Error('the console harness is not started (use it inside a test)');
      return stage;
    },
    async open () {
      if (!browser) throw new Error('the console harness is not started (use it inside a test)');
      const cp = await openPage(browser);
      pages.push(cp);
      return cp;
    },
  };
}
