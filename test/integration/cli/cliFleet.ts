import { existsSync } from 'node:fs';
import { expect } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import {
  bearer, createFixtureService, httpCaller, pushRelease, registerCluster, type Caller, type FixtureService,
} from '../../support/fixtures.js';
import { startFleet, type Fleet } from '../../support/fleet.js';
import { fullReplicas, reportBody } from '../../support/reports.js';
import { cliEntry, setCliEnv } from './harness.js';

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
  /** A fresh service on c1 (2 nodes × 1 replica) with two releases: a (v1, older) and b (v2). */
  service(): Promise<{ svc: FixtureService, a: string, b: string }>;
  /** The rollout history as the server answers it. */
  history(serviceId: string): Promise<Array<{ rolloutId: string, generation: number, reason: string, idempotencyKeyHash: string }>>;
  planOf(serviceId: string): Promise<IImmutableImageDeploymentPlan>;
  /** A Coreflow snapshot report of n1 and n2 for the current plan; returns the rollout status it led to. */
  report(serviceId: string, deployments: (plan: IImmutableImageDeploymentPlan) => Record<string, unknown>[]): Promise<string>;
  /** Every replica of the current plan running and verified. */
  allVerified(serviceId: string): Promise<string>;
}

export async function startCliFleet (opts: { processes: number }): Promise<CliFleet> {
  if (!existsSync(cliEntry)) throw new Error(`${cliEntry} does not exist: run \`npm run build\` first`);
  const fleet = await startFleet({ processes: opts.processes });
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
    service: async () => {
      const svc = await createFixtureService(first, admin, { clusterIds: ['c1'], replicasPerNode: 1 });
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
