import { existsSync } from 'node:fs';
import { afterAll, beforeAll, expect } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import type { RolloutHistoryItem } from '../../../src/domain/history.js';
import { serviceData } from '../../support/app.js';
import {
  bearer, httpCaller, pushRelease, registerCluster, registryHost, type Caller, type FixtureService,
} from '../../support/fixtures.js';
import { startFleet, type Fleet } from '../../support/fleet.js';
import { fullReplicas, reportBody } from '../../support/reports.js';
import { cliEntry, killCliChildren, setCliEnv } from './harness.js';

/**
 * The world a CLI test runs in: real server processes on a fresh database, cluster `c1` with
 * nodes n1 and n2, tokens, and the CLI's environment pointing at the first process. Reports
 * and reads for assertions go through the LAST process (the other one when there are two).
 */
export interface CliFleet {
  fleet: Fleet;
  callers: Caller[];
  admin: string;
  /** Role api, subject ci-bot: what the CLI runs with. */
  api: string;
  /**
   * A fresh service on c1 (2 nodes × 1 replica) with two releases: a (v1, older) and b (v2).
   * `rolloutPolicy` goes over the fixtures' (a stability window of 0 s, the other settings the server's defaults).
   */
  service(opts?: { rolloutPolicy?: Record<string, unknown> }): Promise<{ svc: FixtureService, a: string, b: string }>;
  /** The rollout history as the server answers it. */
  history(serviceId: string): Promise<RolloutHistoryItem[]>;
  planOf(serviceId: string): Promise<IImmutableImageDeploymentPlan>;
  /** A Coreflow snapshot report of n1 and n2 for the current plan; returns the rollout status it led to. */
  report(serviceId: string, deployments: (plan: IImmutableImageDeploymentPlan) => Record<string, unknown>[]): Promise<string>;
  /** Every replica of the current plan running and verified. */
  allVerified(serviceId: string): Promise<string>;
}

/** `env`: extra server environment (e.g. LIFECYCLE_SWEEP_INTERVAL_MS, so that a short progress deadline is noticed at once). */
export async function startCliFleet (opts: { processes: number, env?: Record<string, string> }): Promise<CliFleet> {
  if (!existsSync(cliEntry)) throw new Error(`${cliEntry} does not exist: run \`npm run build\` first`);
  const fleet = await startFleet({ processes: opts.processes, ...(opts.env ? { env: opts.env } : {}) });
  const callers = fleet.servers.map((s) => httpCaller(s.url));
  const first = callers[0]!;
  const other = callers.at(-1)!;
  const admin = await fleet.token('admin');
  const api = await fleet.token('api', { subject: 'ci-bot' });
  const coreflow = await fleet.token('cluster', { clusterId: 'c1', subject: 'coreflow-c1' });
  await registerCluster(first, admin, 'c1', ['n1', 'n2']);
  setCliEnv({ CLOUDLY_URL: fleet.servers[0]!.url, CLOUDLY_TOKEN: api });
  const sequences = new Map<string, number>();

  const planOf = async (serviceId: string): Promise<IImmutableImageDeploymentPlan> =>
    (await other.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(admin) })).json().service.data.imageDeployment;

  const report: CliFleet['report'] = async (serviceId, deployments) => {
    const plan = await planOf(serviceId);
    const sequence = (sequences.get(serviceId) ?? 0) + 1;
    sequences.set(serviceId, sequence);
    const res = await other.inject({
      method: 'POST',
      url: '/v1/deployment-snapshots',
      headers: bearer(coreflow),
      payload: reportBody(plan, serviceId, { sequence, nodeNames: ['n1', 'n2'], deployments: deployments(plan) }),
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().status.status;
  };

  return {
    fleet,
    callers,
    admin,
    api,
    service: async ({ rolloutPolicy } = {}) => {
      const repository = `team/cli-${Math.random().toString(16).slice(2, 10)}`;
      const created = await first.inject({
        method: 'POST',
        url: '/v1/services',
        headers: bearer(admin),
        payload: serviceData({
          registryTarget: { protocol: 'oci', registryHost, repository },
          placement: { clusterIds: ['c1'], replicasPerNode: 1 },
          rolloutPolicy: { stabilityWindowSeconds: 0, ...rolloutPolicy },
        }),
      });
      expect(created.statusCode, created.body).toBe(201);
      const svc: FixtureService = { id: created.json().service.id, repository };
      const a = await pushRelease(first, api, svc, { tag: 'v1', observedAt: Date.now() - 60_000 });
      const b = await pushRelease(other, api, svc, { tag: 'v2' });
      return { svc, a: a.releaseId, b: b.releaseId };
    },
    history: async (serviceId) =>
      (await other.inject({ method: 'GET', url: `/v1/services/${serviceId}/rollouts`, headers: bearer(admin) })).json().rollouts,
    planOf,
    report,
    allVerified: async (serviceId) => await report(serviceId, (plan) => fullReplicas(plan, serviceId, ['n1', 'n2'])),
  };
}

/**
 * One CliFleet for a test file: started before its tests, its CLI children killed and its
 * processes closed after them. Read `.cf` and `.caller` (the first process) inside the tests.
 */
export function useCliFleet (opts: { processes: number, env?: Record<string, string> }): { readonly cf: CliFleet, readonly caller: Caller } {
  let started: CliFleet | undefined;
  beforeAll(async () => { started = await startCliFleet(opts); }, 120_000);
  afterAll(async () => {
    killCliChildren();
    await started?.fleet.close();
  });
  const get = (): CliFleet => {
    if (!started) throw new Error('the CLI fleet is not started (useCliFleet is read inside a test)');
    return started;
  };
  return { get cf () { return get(); }, get caller () { return get().callers[0]!; } };
}
