import { describe, expect, it } from 'vitest';
import type { IImageRelease, IService, TSha256Digest } from '../../../src/contracts/index.js';
import { computeTargetScope } from '../../../src/domain/clusters.js';
import { buildPlan } from '../../../src/domain/rollouts.js';

const digest: TSha256Digest = `sha256:${'a3'.repeat(32)}`;

const service: IService = {
  id: 'service-1',
  data: {
    name: 'app',
    description: 'the app',
    imageId: 'image-1',
    imageVersion: '1.2.3',
    environment: {},
    scaleFactor: 1,
    balancingStrategy: 'round-robin',
    ports: { web: 3000 },
    resources: { memorySizeMB: 512, cpus: 0.5 },
    domains: [],
    deploymentIds: [],
    placement: { clusterIds: ['c1', 'c2'], replicasPerNode: 1 },
  },
};

const release: IImageRelease = {
  id: 'release-1',
  data: {
    serviceId: 'service-1',
    imageId: 'image-1',
    registryHost: 'registry.example.com',
    repository: 'team/app',
    registryRootDigest: digest,
    digestPinnedImageReference: `registry.example.com/team/app@${digest}`,
    manifestMediaType: 'application/vnd.oci.image.index.v1+json',
    observedTags: ['v1'],
    firstObservedAt: 1_760_000_000_000,
    lastObservedAt: 1_760_000_000_000,
    observationCount: 1,
  },
};

const nodes = (prefix: string, count: number): string[] => Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

const planFor = (nodesPerCluster: number) => buildPlan({
  service,
  release,
  intent: { kind: 'promotion', mode: 'promotion' },
  targetScope: computeTargetScope(service.data.placement, [
    { id: 'c1', nodeNames: nodes('a', nodesPerCluster) },
    { id: 'c2', nodeNames: nodes('b', nodesPerCluster) },
  ]),
  rolloutId: 'ro_1',
  now: 1_760_000_100_000,
});

describe('buildPlan: the plan schema\'s size limits', () => {
  it('builds a plan whose scope holds exactly 4096 nodes', () => {
    const built = planFor(2048);
    expect('plan' in built && built.plan.targetScope.targetNodeNames).toHaveLength(4096);
  });

  it('refuses a scope of more than 4096 nodes as invalid-deployment-plan, naming the field', () => {
    const built = planFor(2049);
    const refusal = 'refusal' in built ? built.refusal : undefined;
    expect(refusal?.code).toBe('invalid-deployment-plan');
    const problems = refusal?.details['problems'] as string[];
    expect(problems.some((p) => p.startsWith('plan.targetScope.targetNodeNames'))).toBe(true);
  });
});
