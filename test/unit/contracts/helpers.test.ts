/** Example-based tests pinning upstream's exact results and messages. */
import { describe, expect, it } from 'vitest';
import {
  buildDigestPinnedImageReference,
  getDigestFromPinnedImageReference,
  isSha256Digest,
  normalizeSha256Digest,
  validateImageRolloutStatus,
  validateImmutableImageDeploymentPlan,
  type IImageRolloutReporterStatus,
  type IImageRolloutStatus,
  type IImmutableImageDeploymentPlan,
  type TImmutableImageRolloutMode,
  type TSha256Digest,
} from '../../../src/contracts/index.js';
import { loose } from './arbitraries.js';

const hex = 'a3'.repeat(32);
const digest: TSha256Digest = `sha256:${hex}`;
const otherDigest: TSha256Digest = `sha256:${'0f'.repeat(32)}`;

const plan = (overrides: Partial<IImmutableImageDeploymentPlan> = {}): IImmutableImageDeploymentPlan => ({
  policy: 'immutable-digest',
  rolloutId: 'rollout-2',
  rolloutGeneration: 2,
  releaseId: 'release-1',
  registryHost: 'registry.example.com:5000',
  repository: 'team/app',
  requestedDigest: digest,
  digestPinnedImageReference: `registry.example.com:5000/team/app@${digest}`,
  manifestMediaType: 'application/vnd.oci.image.index.v1+json',
  createdAt: 1_760_000_000_000,
  mode: 'promotion',
  targetScope: {
    targetClusterIds: ['cluster-a'],
    targetNodeNames: ['node-1', 'node-2'],
    replicasPerNode: 2,
    requiredReplicaCount: 4,
  },
  ...overrides,
});

const reporter = (overrides: Partial<IImageRolloutReporterStatus> = {}): IImageRolloutReporterStatus => ({
  reporterId: 'reporter-a',
  reporterSessionId: 'session-a',
  clusterId: 'cluster-a',
  reporterNodeNames: ['node-1', 'node-2'],
  rolloutId: 'rollout-2',
  rolloutGeneration: 2,
  reportSequence: 7,
  reportedAt: 1_760_000_000_500,
  requiredReplicaCount: 4,
  observedReplicaCount: 4,
  healthyReplicaCount: 4,
  verifiedReplicaCount: 4,
  failedReplicaCount: 0,
  ...overrides,
});

const status = (overrides: Partial<IImageRolloutStatus> = {}): IImageRolloutStatus => ({
  rolloutId: 'rollout-2',
  rolloutGeneration: 2,
  expectedDigest: digest,
  status: 'succeeded',
  requiredReplicaCount: 4,
  observedReplicaCount: 4,
  healthyReplicaCount: 4,
  verifiedReplicaCount: 4,
  failedReplicaCount: 0,
  updatedAt: 1_760_000_001_000,
  reporters: [reporter()],
  ...overrides,
});

describe('normalizeSha256Digest / isSha256Digest', () => {
  it('trims and lower-cases before checking', () => {
    expect(normalizeSha256Digest(`  SHA256:${hex.toUpperCase()}\n`)).toBe(digest);
    expect(normalizeSha256Digest(`\ufeff${digest}\u3000`)).toBe(digest);
    expect(isSha256Digest(`SHA256:${hex}`)).toBe(false);
    expect(isSha256Digest(` ${digest}`)).toBe(false);
    expect(isSha256Digest(digest)).toBe(true);
  });

  it('rejects wrong lengths, non-hex and untrimmed look-alike whitespace', () => {
    expect(normalizeSha256Digest(`sha256:${hex.slice(1)}`)).toBeUndefined();
    expect(normalizeSha256Digest(`sha256:${hex}0`)).toBeUndefined();
    expect(normalizeSha256Digest(`sha256:${hex.slice(1)}g`)).toBeUndefined();
    expect(normalizeSha256Digest(`\u200b${digest}`)).toBeUndefined();
    expect(normalizeSha256Digest(`sha512:${hex}`)).toBeUndefined();
    expect(normalizeSha256Digest('')).toBeUndefined();
  });

  it('throws upstream TypeErrors for non-strings', () => {
    expect(() => normalizeSha256Digest(loose<string>(42))).toThrow('digest.trim is not a function');
    expect(() => normalizeSha256Digest(loose<string>(undefined))).toThrow("Cannot read properties of undefined (reading 'trim')");
    expect(isSha256Digest(loose<string>([digest]))).toBe(true); // RegExp#test coerces, as upstream
  });
});

describe('buildDigestPinnedImageReference', () => {
  it('builds host/repository@digest', () => {
    expect(buildDigestPinnedImageReference('localhost:5000', 'library/nginx', digest)).toBe(`localhost:5000/library/nginx@${digest}`);
  });

  it('checks host and repository before the digest', () => {
    expect(() => buildDigestPinnedImageReference('Registry.example.com', 'app', loose<TSha256Digest>('nope')))
      .toThrow(new Error('registry host and repository must be canonical OCI names'));
    expect(() => buildDigestPinnedImageReference('registry.example.com', 'App', digest))
      .toThrow(new Error('registry host and repository must be canonical OCI names'));
    expect(() => buildDigestPinnedImageReference('registry.example.com:080', 'app', digest))
      .toThrow(new Error('registry host and repository must be canonical OCI names'));
    expect(() => buildDigestPinnedImageReference('registry.example.com', 'app', loose<TSha256Digest>(` ${digest}`)))
      .toThrow(new Error('digest must be a canonical sha256 digest'));
  });
});

describe('getDigestFromPinnedImageReference', () => {
  it('normalizes what follows the last @', () => {
    expect(getDigestFromPinnedImageReference(`registry/app@${otherDigest}@ SHA256:${hex.toUpperCase()} `)).toBe(digest);
    expect(getDigestFromPinnedImageReference(`registry/app@${digest}@`)).toBeUndefined();
    expect(getDigestFromPinnedImageReference('registry/app:latest')).toBeUndefined();
    expect(getDigestFromPinnedImageReference(`@${digest}`)).toBe(digest);
  });
});

describe('validateImmutableImageDeploymentPlan', () => {
  it('accepts a consistent plan', () => {
    expect(validateImmutableImageDeploymentPlan(plan())).toStrictEqual([]);
  });

  it('reports every broken rule in upstream order', () => {
    expect(validateImmutableImageDeploymentPlan(plan({
      rolloutGeneration: 0,
      createdAt: 1.5,
      registryHost: 'REGISTRY',
      mode: 'rollback',
      targetScope: {
        targetClusterIds: [],
        targetNodeNames: ['node-1', 'node-1'],
        replicasPerNode: Number.NaN,
        requiredReplicaCount: 2,
      },
    }))).toStrictEqual([
      'rolloutGeneration must be a positive safe integer',
      'createdAt must be a positive safe integer',
      'registry host and repository must be canonical OCI names',
      'replicasPerNode must be a positive safe integer',
      'immutable rollout target scope must contain clusters and nodes',
      'immutable rollout target scope must not contain duplicates',
      'requiredReplicaCount does not match target nodes and replicasPerNode',
      'rollback rollout must identify the rollout it replaces',
    ]);
  });

  it('compares the pinned reference only when it could be built', () => {
    expect(validateImmutableImageDeploymentPlan(plan({ digestPinnedImageReference: `registry.example.com:5000/team/app@${otherDigest}` })))
      .toStrictEqual(['digestPinnedImageReference does not match registry, repository and digest']);
    expect(validateImmutableImageDeploymentPlan(plan({ requestedDigest: loose<TSha256Digest>(digest.toUpperCase()) })))
      .toStrictEqual(['digest must be a canonical sha256 digest']);
  });

  it('treats -0 like 0 and unsafe integers as invalid', () => {
    expect(validateImmutableImageDeploymentPlan(plan({ rolloutGeneration: Number.MAX_SAFE_INTEGER + 1, createdAt: -0 })))
      .toStrictEqual(['rolloutGeneration must be a positive safe integer', 'createdAt must be a positive safe integer']);
  });

  const modes: TImmutableImageRolloutMode[] = ['promotion', 'automatic', 'rollback'];
  const rollbackTargets: Array<[string, Partial<IImmutableImageDeploymentPlan>]> = [
    ['absent', {}],
    ['undefined', { rollbackOfRolloutId: undefined }],
    ['empty string', { rollbackOfRolloutId: '' }],
    ['set', { rollbackOfRolloutId: 'rollout-1' }],
  ];
  for (const mode of modes) {
    for (const [label, extra] of rollbackTargets) {
      const named = label === 'set';
      const expected = mode === 'rollback'
        ? (named ? [] : ['rollback rollout must identify the rollout it replaces'])
        : (named ? ['only rollback rollouts may set rollbackOfRolloutId'] : []);
      it(`mode ${mode}, rollbackOfRolloutId ${label}`, () => {
        expect(validateImmutableImageDeploymentPlan(plan({ mode, ...extra }))).toStrictEqual(expected);
      });
    }
  }
});

describe('validateImageRolloutStatus', () => {
  it('accepts a complete successful rollout and a pending one', () => {
    expect(validateImageRolloutStatus(status())).toStrictEqual([]);
    expect(validateImageRolloutStatus(status({ status: 'rolled-back' }))).toStrictEqual([]);
    expect(validateImageRolloutStatus(status({
      status: 'pending', observedReplicaCount: 0, healthyReplicaCount: 0, verifiedReplicaCount: 0, reporters: [],
    }))).toStrictEqual([]);
  });

  it('reports every broken rule in upstream order', () => {
    expect(validateImageRolloutStatus(status({
      failedReplicaCount: -1,
      mismatchReason: 'replica-unhealthy',
      reporters: [
        reporter({ observedReplicaCount: 5, healthyReplicaCount: 1.5 }),
        reporter({ reporterSessionId: 'session-b', rolloutGeneration: 3, reporterNodeNames: ['node-2'] }),
      ],
    }))).toStrictEqual([
      'rollout replica counts must be non-negative safe integers',
      'rollout status must contain one latest report per reporter and session',
      'reporter replica counts must be non-negative safe integers',
      'reporter replica counts are contradictory',
      'reporter rollout identity does not match aggregate rollout identity',
      'successful rollout status requires every replica to be observed, healthy and verified',
      'successful rollout status requires reporters without mismatch reasons',
      'successful rollout status must not count a node in multiple reporters',
      'successful rollout requires every reporter replica to be healthy and verified',
      'successful rollout aggregate must exactly match successful reporter evidence',
    ]);
  });

  it('applies the success rules only to succeeded and rolled-back', () => {
    const three = { observedReplicaCount: 3, healthyReplicaCount: 3, verifiedReplicaCount: 3 };
    const incomplete = { ...three, reporters: [reporter(three)] };
    expect(validateImageRolloutStatus(status({ ...incomplete, status: 'verifying' }))).toStrictEqual([]);
    expect(validateImageRolloutStatus(status({ ...incomplete, status: 'succeeded' }))).toStrictEqual([
      'successful rollout status requires every replica to be observed, healthy and verified',
      'successful rollout requires every reporter replica to be healthy and verified',
    ]);
  });

  it('requires at least one reporter for success', () => {
    expect(validateImageRolloutStatus(status({ reporters: [] }))).toStrictEqual([
      'successful rollout status requires reporters without mismatch reasons',
      'successful rollout aggregate must exactly match successful reporter evidence',
    ]);
  });

  it('treats an empty mismatchReason as absent (truthiness, as upstream)', () => {
    expect(validateImageRolloutStatus(status({
      mismatchReason: loose(''),
      reporters: [reporter({ mismatchReason: loose('') })],
    }))).toStrictEqual([]);
    expect(validateImageRolloutStatus(status({ reporters: [reporter({ mismatchReason: 'pull-failed' })] })))
      .toStrictEqual(['successful rollout requires every reporter replica to be healthy and verified']);
  });
});
