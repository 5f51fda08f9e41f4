import { randomUUID } from 'node:crypto';
import type { IImageRelease, IImmutableImageDeploymentPlan, IService } from '../contracts/index.js';
import { ProblemError, type Api } from './api.js';
import type { ReleaseLabel } from './args.js';
import { pushEventOf, serviceDataOf, type FleetSpec } from './fleet.js';
import { shortDigest, type Output } from './output.js';

/** The operator's side of the demo, with an admin token: clusters, the service, releases, promotion. */

export interface SetupContext {
  api: Api;
  spec: FleetSpec;
  out: Output;
}

const servicePath = (serviceId: string): string => `/v1/services/${encodeURIComponent(serviceId)}`;

/** PUT declares a cluster's full node set, so registering again is harmless. */
export async function registerClusters ({ api, spec, out }: SetupContext): Promise<void> {
  for (const cluster of spec.clusters) {
    await api.call({ method: 'PUT', path: `/v1/clusters/${encodeURIComponent(cluster.id)}`, as: { role: 'admin' }, body: { nodeNames: cluster.nodeNames } });
    out.line(`cluster ${cluster.id} registered: ${cluster.nodeNames.join(', ')}`);
  }
}

/**
 * Creates the service, or reuses the one of an earlier run: service names are unique, and the 409 names its id.
 * A reused service gets the demo's service data again (PUT), so that this run's `--stability-window` is the one in force.
 */
export async function ensureService ({ api, spec, out }: SetupContext): Promise<string> {
  const window = `stability window ${spec.stabilityWindowSeconds} s`;
  try {
    const { service } = await api.call<{ service: IService }>({ method: 'POST', path: '/v1/services', as: { role: 'admin' }, body: serviceDataOf(spec) });
    const placement = `${spec.clusters.map((c) => c.id).join(', ')}, ${spec.replicasPerNode} replicas per node`;
    out.line(`service ${spec.name} created: ${service.id} (placement: ${placement}; ${window})`);
    return service.id;
  } catch (err) {
    const existing = err instanceof ProblemError && err.code === 'service-already-exists' ? err.problem['serviceId'] : undefined;
    if (typeof existing !== 'string') throw err;
    await api.call({ method: 'PUT', path: servicePath(existing), as: { role: 'admin' }, body: serviceDataOf(spec) });
    out.line(`service ${spec.name} exists: ${existing} (reused; ${window})`);
    return existing;
  }
}

/** What the registry integration would report after `docker push` of v1 and v2. */
export async function pushReleases ({ api, spec, out }: SetupContext, serviceId: string): Promise<void> {
  for (const release of Object.values(spec.releases)) {
    const body = pushEventOf(spec, release, serviceId);
    const answer = await api.call<{ release: IImageRelease }>({ method: 'POST', path: '/v1/registry/push-events', as: { role: 'admin' }, body });
    const seen = answer.release.data.observationCount;
    const again = seen > 1 ? `, observed ${seen} times` : '';
    out.line(`release ${release.label} pushed: ${release.releaseId} ${shortDigest(release.digest)} (tag ${release.label}${again})`);
  }
}

/** Promotes with compare-and-swap on the generation just read, under a fresh Idempotency-Key (retries replay it). */
export async function promote ({ api, spec, out }: SetupContext, serviceId: string, label: ReleaseLabel): Promise<IImmutableImageDeploymentPlan> {
  const release = spec.releases[label];
  const { service } = await api.call<{ service: IService }>({ method: 'GET', path: servicePath(serviceId), as: { role: 'admin' } });
  const generation = service.data.imageDeployment?.rolloutGeneration ?? 0;
  const promoted = await api.call<{ service: IService }>({
    method: 'POST',
    path: `${servicePath(serviceId)}/image-releases/${encodeURIComponent(release.releaseId)}/promote`,
    as: { role: 'admin' },
    headers: { 'idempotency-key': `demo-${randomUUID()}` },
    body: { expectedRolloutGeneration: generation, enableImmutableImage: true, reason: `npm run demo: promote ${label}` },
  });
  const plan = promoted.service.data.imageDeployment;
  if (!plan) throw new Error('the promotion answer carries no deployment plan');
  const scope = plan.targetScope;
  out.line(`promoted ${label}: rollout ${plan.rolloutId} (generation ${plan.rolloutGeneration}), ` +
    `${scope.requiredReplicaCount} replicas on ${scope.targetNodeNames.length} nodes`);
  return plan;
}
