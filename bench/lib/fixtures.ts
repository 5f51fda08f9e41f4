import { createHash, randomBytes } from 'node:crypto';
import type { IService } from '../../src/contracts/index.js';
import type { BenchContext } from './context.js';
import { expectStatus } from './load.js';

export const registryHost = 'registry.example.com';
export const digestOf = (seed: string): `sha256:${string}` => `sha256:${createHash('sha256').update(seed).digest('hex')}`;
export const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

/** A valid `TServiceWritableData` pulling from registry.example.com/<repository>. */
export function serviceData (name: string, repository: string, placement?: { clusterIds: string[], replicasPerNode: number }): Record<string, unknown> {
  return {
    name,
    description: 'benchmark service',
    imageId: 'img-bench',
    imageVersion: '1.0.0',
    environment: { LOG_LEVEL: 'info' },
    scaleFactor: 1,
    balancingStrategy: 'round-robin',
    ports: { web: 8080 },
    domains: [{ name: `${name}.example.com` }],
    deploymentIds: [],
    registryTarget: { protocol: 'oci', registryHost, repository },
    ...(placement ? { placement } : {}),
  };
}

/** An IImmutableRegistryPushEvent for `repository`. */
export function pushEvent (serviceId: string, repository: string, seed: string, observedAt: number): Record<string, unknown> {
  const digest = digestOf(seed);
  return {
    deploymentPolicy: 'immutable-digest',
    eventId: `evt_${randomBytes(8).toString('hex')}`,
    releaseId: `rel_${createHash('sha256').update(`${serviceId}/${digest}`).digest('hex').slice(0, 24)}`,
    protocol: 'oci',
    registryHost,
    repository,
    tag: `v-${seed}`.slice(0, 120),
    registryRootDigest: digest,
    digestPinnedImageReference: `${registryHost}/${repository}@${digest}`,
    imageUrl: `${registryHost}/${repository}:v-${seed}`,
    observedAt,
    serviceId,
    imageId: 'img-bench',
    manifestMediaType: 'application/vnd.oci.image.index.v1+json',
  };
}

/**
 * Registers clusters and their nodes directly with the driver (the documents cluster
 * registration writes: src/store/clusterStore.ts), much faster than the API for 1000s of nodes.
 */
export async function seedClusters (ctx: BenchContext, clusters: Array<{ id: string, nodeNames: string[] }>): Promise<void> {
  const now = Date.now();
  if (clusters.length === 0) return;
  await ctx.db.collection('clusters').insertMany(clusters.map((c) => ({ _id: c.id as never, revision: 1, createdAt: now, updatedAt: now })));
  const nodes = clusters.flatMap((c) => c.nodeNames.map((n) => ({ _id: n as never, clusterId: c.id, revision: 1, createdAt: now })));
  for (let i = 0; i < nodes.length; i += 5_000) await ctx.db.collection('nodes').insertMany(nodes.slice(i, i + 5_000));
}

export interface SeededService {
  serviceId: string;
  repository: string;
  releaseIds: string[];
}

/** A service through the API, with `releases` releases pushed through the API. */
export async function createServiceWithReleases (
  ctx: BenchContext, name: string, releases: number, placement?: { clusterIds: string[], replicasPerNode: number },
): Promise<SeededService> {
  const admin = await ctx.token({ subject: 'bench-admin', role: 'admin' });
  const repository = `bench/${name}`;
  const data = serviceData(`${name}-${randomBytes(3).toString('hex')}`, repository, placement);
  const created = await expectStatus<{ service: IService }>([201], ctx.server.url, 'POST', '/v1/services', bearer(admin), data);
  const serviceId = created.service.id;
  const releaseIds: string[] = [];
  for (let i = 0; i < releases; i++) {
    const event = pushEvent(serviceId, repository, `${name}-${i}`, Date.now() + i);
    await expectStatus([201], ctx.server.url, 'POST', '/v1/registry/push-events', bearer(admin), event);
    releaseIds.push(event['releaseId'] as string);
  }
  return { serviceId, repository, releaseIds };
}

/** Verified replicas and report bodies for a plan: the same fixtures the tests use (an honest Coreflow's). */
export { fullReplicas, reportBody, verifiedReplica } from '../../test/support/reports.js';
