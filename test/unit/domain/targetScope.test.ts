import { describe, expect, it } from 'vitest';
import { Value } from '@sinclair/typebox/value';
import {
  IImmutableImageTargetScope,
  planValidationMessages,
  validateImmutableImageDeploymentPlan,
  type IImmutableImageDeploymentPlan,
  type TSha256Digest,
} from '../../../src/contracts/index.js';
import { computeTargetScope } from '../../../src/domain/clusters.js';

const digest: TSha256Digest = `sha256:${'a3'.repeat(32)}`;

/** A plan that is valid in every respect but the scope under test. */
const planWith = (targetScope: IImmutableImageTargetScope): IImmutableImageDeploymentPlan => ({
  policy: 'immutable-digest',
  rolloutId: 'rollout-1',
  rolloutGeneration: 1,
  releaseId: 'release-1',
  registryHost: 'registry.example.com',
  repository: 'team/app',
  requestedDigest: digest,
  digestPinnedImageReference: `registry.example.com/team/app@${digest}`,
  manifestMediaType: 'application/vnd.oci.image.index.v1+json',
  createdAt: 1_760_000_000_000,
  mode: 'promotion',
  targetScope,
});

const clusters = [
  { id: 'c2', nodeNames: ['n-b', 'n-a'] },
  { id: 'c1', nodeNames: ['m-2', 'm-1', 'm-10'] },
  { id: 'c3', nodeNames: [] },
];

describe('computeTargetScope', () => {
  it('keeps placement order for clusters and sorts node names', () => {
    const scope = computeTargetScope({ clusterIds: ['c2', 'c1'], replicasPerNode: 2 }, clusters);
    expect(scope).toEqual({
      targetClusterIds: ['c2', 'c1'],
      targetNodeNames: ['m-1', 'm-10', 'm-2', 'n-a', 'n-b'],
      replicasPerNode: 2,
      requiredReplicaCount: 10,
    });
    const reversed = computeTargetScope({ clusterIds: ['c1', 'c2'], replicasPerNode: 2 }, [...clusters].reverse());
    expect(reversed.targetClusterIds).toEqual(['c1', 'c2']);
    expect(reversed.targetNodeNames).toEqual(scope.targetNodeNames);
  });

  it('is deterministic whatever order the registered clusters and their nodes come in', () => {
    const shuffled = [
      { id: 'c1', nodeNames: ['m-10', 'm-2', 'm-1'] },
      { id: 'c2', nodeNames: ['n-a', 'n-b'] },
    ];
    const placement = { clusterIds: ['c2', 'c1'], replicasPerNode: 3 };
    expect(computeTargetScope(placement, shuffled)).toEqual(computeTargetScope(placement, clusters));
  });

  it('deduplicates clusters and node names', () => {
    const scope = computeTargetScope(
      { clusterIds: ['c1', 'c2', 'c1'], replicasPerNode: 1 },
      [{ id: 'c1', nodeNames: ['x', 'y', 'x'] }, { id: 'c2', nodeNames: ['y', 'z'] }]
    );
    expect(scope).toEqual({ targetClusterIds: ['c1', 'c2'], targetNodeNames: ['x', 'y', 'z'], replicasPerNode: 1, requiredReplicaCount: 3 });
  });

  it('skips unknown clusters and registered clusters without nodes', () => {
    const scope = computeTargetScope({ clusterIds: ['nope', 'c3', 'c2'], replicasPerNode: 4 }, clusters);
    expect(scope).toEqual({ targetClusterIds: ['c2'], targetNodeNames: ['n-a', 'n-b'], replicasPerNode: 4, requiredReplicaCount: 8 });
  });

  it('ignores registered clusters the placement does not name', () => {
    expect(computeTargetScope({ clusterIds: ['c2'], replicasPerNode: 1 }, clusters).targetNodeNames).toEqual(['n-a', 'n-b']);
  });

  it('returns an empty scope (never throws) without a placement or without usable clusters', () => {
    expect(computeTargetScope(undefined, clusters)).toEqual({ targetClusterIds: [], targetNodeNames: [], replicasPerNode: 1, requiredReplicaCount: 0 });
    expect(computeTargetScope(undefined, [])).toEqual({ targetClusterIds: [], targetNodeNames: [], replicasPerNode: 1, requiredReplicaCount: 0 });
    expect(computeTargetScope({ clusterIds: ['nope'], replicasPerNode: 5 }, clusters))
      .toEqual({ targetClusterIds: [], targetNodeNames: [], replicasPerNode: 5, requiredReplicaCount: 0 });
    expect(computeTargetScope({ clusterIds: ['c3'], replicasPerNode: 2 }, clusters))
      .toEqual({ targetClusterIds: [], targetNodeNames: [], replicasPerNode: 2, requiredReplicaCount: 0 });
    expect(computeTargetScope({ clusterIds: ['c1'], replicasPerNode: 2 }, [])).toMatchObject({ targetClusterIds: [], requiredReplicaCount: 0 });
  });

  it('requiredReplicaCount is node count × replicasPerNode', () => {
    const many = [{ id: 'big', nodeNames: Array.from({ length: 4096 }, (_, i) => `node-${i}`) }];
    for (const replicasPerNode of [1, 2, 7, 1024]) {
      const scope = computeTargetScope({ clusterIds: ['big'], replicasPerNode }, many);
      expect(scope.targetNodeNames).toHaveLength(4096);
      expect(scope.requiredReplicaCount).toBe(4096 * replicasPerNode);
    }
  });

  it('a non-empty scope passes the upstream plan validator and the scope schema', () => {
    const placements = [
      { clusterIds: ['c1'], replicasPerNode: 1 },
      { clusterIds: ['c2', 'c1'], replicasPerNode: 3 },
      { clusterIds: ['nope', 'c3', 'c2'], replicasPerNode: 1024 },
    ];
    for (const placement of placements) {
      const scope = computeTargetScope(placement, clusters);
      expect(scope.targetNodeNames.length).toBeGreaterThan(0);
      expect(Value.Check(IImmutableImageTargetScope, scope)).toBe(true);
      expect(validateImmutableImageDeploymentPlan(planWith(scope))).toEqual([]);
    }
  });

  it('an empty scope is what the upstream validator reports as "must contain clusters and nodes"', () => {
    const scope = computeTargetScope({ clusterIds: ['nope'], replicasPerNode: 2 }, clusters);
    expect(Value.Check(IImmutableImageTargetScope, scope)).toBe(true);
    expect(validateImmutableImageDeploymentPlan(planWith(scope))).toEqual([planValidationMessages.emptyScope]);
    expect(validateImmutableImageDeploymentPlan(planWith(computeTargetScope(undefined, clusters)))).toEqual([planValidationMessages.emptyScope]);
  });
});
