import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { serviceData } from '../../support/app.js';
import { bearer, promote, pushRelease, registryHost, type Caller, type FixtureService } from '../../support/fixtures.js';
import { reportBody } from '../../support/reports.js';

/** The nodes of cluster c1, where every console test service runs (2 replicas per node). */
export const NODES = ['node-a', 'node-b'];

/** The server under test, its tokens, and the fixtures the console tests make through its API. */
export interface Stage {
  base: string;
  api: Caller;
  admin: string;
  releaser: string;
  coreflow: string;
  /** The server's HS256 secret (the demo command mints its own tokens with it, as it does with the development secret). */
  secret: string;
}

export interface PromotedService {
  svc: FixtureService;
  name: string;
  plan: IImmutableImageDeploymentPlan;
  releases: { a: string, b: string };
}

/** How a test service differs from the fixtures': its rolloutPolicy (over theirs: a 0 s stability window), deployOnPush. */
export interface ServiceOptions {
  rolloutPolicy?: Record<string, unknown>;
  deployOnPush?: boolean;
}

/** A service named `<prefix>-<random>` on c1, pulling from registry.example.com. */
export async function namedService (stage: Stage, prefix: string, opts: ServiceOptions = {}): Promise<{ svc: FixtureService, name: string }> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  const repository = `team/${name}`;
  const res = await stage.api.inject({
    method: 'POST',
    url: '/v1/services',
    headers: bearer(stage.admin),
    payload: serviceData({
      name,
      registryTarget: { protocol: 'oci', registryHost, repository },
      placement: { clusterIds: ['c1'], replicasPerNode: 2 },
      rolloutPolicy: { stabilityWindowSeconds: 0, ...opts.rolloutPolicy },
      ...(opts.deployOnPush ? { deployOnPush: true } : {}),
    }),
  });
  expect(res.statusCode, res.body).toBe(201);
  return { svc: { id: res.json().service.id, repository }, name };
}

/** A service with two releases (tags v1, v2), v1 promoted through the API: generation 1, pending. */
export async function promotedService (stage: Stage, prefix: string, opts: ServiceOptions = {}): Promise<PromotedService> {
  const { svc, name } = await namedService(stage, prefix, opts);
  const a = await pushRelease(stage.api, stage.releaser, svc, { tag: 'v1', observedAt: Date.now() - 60_000 });
  const b = await pushRelease(stage.api, stage.releaser, svc, { tag: 'v2' });
  const res = await promote(stage.api, stage.releaser, svc.id, a.releaseId, { generation: 0, reason: 'first release' });
  expect(res.statusCode, res.body).toBe(200);
  return { svc, name, plan: res.json().service.data.imageDeployment, releases: { a: a.releaseId, b: b.releaseId } };
}

const sequences = new Map<string, number>();

/** Coreflow reports these deployments for `nodeNames` (its next sequence number), as the real agent does. */
export async function report (
  stage: Stage, plan: IImmutableImageDeploymentPlan, serviceId: string, deployments: Record<string, unknown>[], nodeNames = NODES,
  opts: { reportedAt?: number } = {}
) {
  const session = `console-${plan.rolloutId}`;
  const sequence = (sequences.get(session) ?? 0) + 1;
  sequences.set(session, sequence);
  const res = await stage.api.inject({
    method: 'POST',
    url: '/v1/deployment-snapshots',
    headers: bearer(stage.coreflow),
    payload: reportBody(plan, serviceId, { session, sequence, nodeNames, deployments, ...opts }),
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

/** The rollout history, newest first, as the API has it. */
export async function history (stage: Stage, serviceId: string): Promise<Array<Record<string, any>>> {
  const res = await stage.api.inject({ method: 'GET', url: `/v1/services/${serviceId}/rollouts`, headers: bearer(stage.admin) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().rollouts;
}

/** The service's current plan. */
export async function currentPlan (stage: Stage, serviceId: string): Promise<IImmutableImageDeploymentPlan> {
  const res = await stage.api.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(stage.admin) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().service.data.imageDeployment;
}
