import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  deploymentStatuses,
  immutableImageMismatchReasons,
  type IDeployment,
  type IImmutableImageDeploymentPlan,
  type TImmutableImageMismatchReason,
  type TSha256Digest,
} from '../../../src/contracts/index.js';
import {
  verifyReplicaEvidence,
  type ReportedDeployment,
  type ReportedEvidence,
} from '../../../src/domain/evidence.js';

const host = 'registry.example.com:5000';
const repository = 'team/app';
const name = `${host}/${repository}`;
/** The plan's (root) digest. */
const rootDigest: TSha256Digest = `sha256:${'a3'.repeat(32)}`;
/** The platform manifest a multi-arch index resolves to on the node. */
const platformDigest: TSha256Digest = `sha256:${'5c'.repeat(32)}`;
/** Some other image. */
const otherDigest: TSha256Digest = `sha256:${'0f'.repeat(32)}`;
/** A local image id (config digest). */
const imageId = `sha256:${'bb'.repeat(32)}`;
const pinned = `${name}@${rootDigest}`;
/** Swarm keeps the tag a service was created with beside the pinned digest. */
const taggedPinned = `${name}:1.4.2@${rootDigest}`;

const singleArchPlan: IImmutableImageDeploymentPlan = {
  policy: 'immutable-digest',
  rolloutId: 'rollout-7',
  rolloutGeneration: 7,
  releaseId: 'release-1',
  registryHost: host,
  repository,
  requestedDigest: rootDigest,
  digestPinnedImageReference: pinned,
  manifestMediaType: 'application/vnd.oci.image.manifest.v1+json',
  createdAt: 1_760_000_000_000,
  mode: 'promotion',
  targetScope: { targetClusterIds: ['cluster-a'], targetNodeNames: ['node-1'], replicasPerNode: 1, requiredReplicaCount: 1 },
};
const indexPlan: IImmutableImageDeploymentPlan = { ...singleArchPlan, manifestMediaType: 'application/vnd.oci.image.index.v1+json' };
const manifestListPlan: IImmutableImageDeploymentPlan = {
  ...singleArchPlan, manifestMediaType: 'application/vnd.docker.distribution.manifest.list.v2+json',
};
const dockerManifestPlan: IImmutableImageDeploymentPlan = {
  ...singleArchPlan, manifestMediaType: 'application/vnd.docker.distribution.manifest.v2+json',
};

type VerifiedEvidence = Extract<NonNullable<IDeployment['runtimeImageEvidence']>, { verificationStatus: 'verified' }>;

/** Valid evidence for a single-arch plan: every digest-bearing field is the root digest. */
const verifiedEvidence = (observedAt: number): VerifiedEvidence => ({
  verificationStatus: 'verified',
  rolloutId: 'rollout-7',
  rolloutGeneration: 7,
  expectedDigest: rootDigest,
  serviceImageReference: taggedPinned,
  taskImageReference: pinned,
  taskReportedDigest: rootDigest,
  containerImageId: imageId,
  containerConfigImageReference: taggedPinned,
  resolvedDigest: rootDigest,
  repoDigests: [pinned],
  evidenceSource: 'local-container-inspect',
  observedAt,
});
const singleArchEvidence = (): ReportedEvidence => verifiedEvidence(1_760_000_100_000);

/** Valid evidence for an index plan: the engine resolved the platform manifest. */
const indexEvidence = (): ReportedEvidence => ({
  ...singleArchEvidence(),
  resolvedDigest: platformDigest,
  platformManifestDigest: platformDigest,
});

const deploymentWith = (evidence: ReportedEvidence | undefined, overrides: Partial<ReportedDeployment> = {}): ReportedDeployment => ({
  status: 'running',
  rolloutId: 'rollout-7',
  rolloutGeneration: 7,
  ...(evidence === undefined ? {} : { runtimeImageEvidence: evidence }),
  ...overrides,
});

const reasonOf = (plan: IImmutableImageDeploymentPlan, evidence: ReportedEvidence): TImmutableImageMismatchReason | undefined =>
  verifyReplicaEvidence(plan, deploymentWith(evidence)).mismatchReason;

/** Removes one field (a shallow copy). */
const without = (evidence: ReportedEvidence, field: keyof ReportedEvidence): ReportedEvidence => {
  const copy = { ...evidence };
  delete copy[field];
  return copy;
};

describe('verifyReplicaEvidence: valid evidence', () => {
  it('verifies the single-arch baseline against manifest plans', () => {
    for (const plan of [singleArchPlan, dockerManifestPlan]) {
      expect(verifyReplicaEvidence(plan, deploymentWith(singleArchEvidence()))).toEqual({ health: 'healthy', verification: 'verified' });
    }
  });

  it('verifies the multi-arch baseline (platform manifest resolved) against index and manifest-list plans', () => {
    for (const plan of [indexPlan, manifestListPlan]) {
      expect(verifyReplicaEvidence(plan, deploymentWith(indexEvidence()))).toEqual({ health: 'healthy', verification: 'verified' });
    }
  });

  it('verifies an index plan whose container resolved the index digest itself', () => {
    expect(reasonOf(indexPlan, singleArchEvidence())).toBeUndefined();
    expect(verifyReplicaEvidence(indexPlan, deploymentWith(singleArchEvidence())).verification).toBe('verified');
  });

  it('accepts a real IDeployment (the contract type is a ReportedDeployment)', () => {
    const deployment: IDeployment = {
      id: 'deployment-1',
      serviceId: 'service-1',
      nodeName: 'node-1',
      rolloutId: 'rollout-7',
      rolloutGeneration: 7,
      runtimeImageEvidence: verifiedEvidence(1),
      deploymentLog: [],
      status: 'running',
    };
    expect(verifyReplicaEvidence(singleArchPlan, deployment)).toEqual({ health: 'healthy', verification: 'verified' });
  });

  it('verifies without deployment-level rollout fields (the evidence carries them)', () => {
    const deployment = deploymentWith(singleArchEvidence());
    delete deployment.rolloutId;
    delete deployment.rolloutGeneration;
    expect(verifyReplicaEvidence(singleArchPlan, deployment).verification).toBe('verified');
  });

  const expectedHealth = { running: 'healthy', failed: 'failed' } as const;
  it.each(deploymentStatuses)('computes health for status %s, whatever the verification', (status) => {
    const health = status === 'running' || status === 'failed' ? expectedHealth[status] : 'unhealthy';
    const valid = verifyReplicaEvidence(singleArchPlan, deploymentWith(singleArchEvidence(), { status }));
    expect(valid).toEqual({ health, verification: 'verified' });
    expect(verifyReplicaEvidence(singleArchPlan, deploymentWith(undefined, { status })).health).toBe(health);
    expect(verifyReplicaEvidence(singleArchPlan, deploymentWith(singleArchEvidence(), { status, rolloutId: 'rollout-6' })))
      .toEqual({ health, verification: 'other-rollout' });
  });

  it('treats an unknown status as unhealthy', () => {
    expect(verifyReplicaEvidence(singleArchPlan, deploymentWith(singleArchEvidence(), { status: 'paused' })).health).toBe('unhealthy');
  });
});

interface ReasonCase {
  title: string;
  plan: IImmutableImageDeploymentPlan;
  /** ONE mutation of the baseline for `plan`. */
  evidence: ReportedEvidence | undefined;
  reason: TImmutableImageMismatchReason;
  verification?: 'mismatched' | 'missing';
}

const single = singleArchEvidence;
const reasonCases: ReasonCase[] = [
  // 1
  { title: 'no evidence', plan: singleArchPlan, evidence: undefined, reason: 'runtime-attestation-missing', verification: 'missing' },
  // 2
  { title: 'task-spec evidence', plan: singleArchPlan, evidence: { ...single(), evidenceSource: 'task-spec' }, reason: 'container-inspection-unavailable' },
  { title: 'no evidence source', plan: singleArchPlan, evidence: without(single(), 'evidenceSource'), reason: 'container-inspection-unavailable' },
  // 3
  { title: 'evidence of another rollout id', plan: singleArchPlan, evidence: { ...single(), rolloutId: 'rollout-6' }, reason: 'stale-rollout-report' },
  { title: 'evidence of another generation', plan: singleArchPlan, evidence: { ...single(), rolloutGeneration: 6 }, reason: 'stale-rollout-report' },
  { title: 'evidence without rollout id', plan: singleArchPlan, evidence: without(single(), 'rolloutId'), reason: 'stale-rollout-report' },
  { title: 'evidence without generation', plan: singleArchPlan, evidence: without(single(), 'rolloutGeneration'), reason: 'stale-rollout-report' },
  // 4
  { title: 'no expected digest', plan: singleArchPlan, evidence: without(single(), 'expectedDigest'), reason: 'requested-digest-missing' },
  {
    title: 'upper-case expected digest',
    plan: singleArchPlan,
    evidence: { ...single(), expectedDigest: rootDigest.toUpperCase() },
    reason: 'requested-digest-malformed',
  },
  { title: 'short expected digest', plan: singleArchPlan, evidence: { ...single(), expectedDigest: 'sha256:a3a3' }, reason: 'requested-digest-malformed' },
  { title: 'other expected digest', plan: singleArchPlan, evidence: { ...single(), expectedDigest: otherDigest }, reason: 'registry-digest-inconsistent' },
  // 5
  { title: 'no service reference', plan: singleArchPlan, evidence: without(single(), 'serviceImageReference'), reason: 'service-image-not-digest-pinned' },
  {
    title: 'tag-only service reference',
    plan: singleArchPlan,
    evidence: { ...single(), serviceImageReference: `${name}:1.4.2` },
    reason: 'service-image-not-digest-pinned',
  },
  {
    title: 'service reference with a bad digest',
    plan: singleArchPlan,
    evidence: { ...single(), serviceImageReference: `${name}@sha256:a3` },
    reason: 'service-image-not-digest-pinned',
  },
  {
    title: 'service reference to another digest',
    plan: singleArchPlan,
    evidence: { ...single(), serviceImageReference: `${name}@${otherDigest}` },
    reason: 'service-image-digest-mismatch',
  },
  {
    title: 'service reference to another repository',
    plan: singleArchPlan,
    evidence: { ...single(), serviceImageReference: `${host}/team/other@${rootDigest}` },
    reason: 'service-image-digest-mismatch',
  },
  {
    title: 'service reference to another registry',
    plan: singleArchPlan,
    evidence: { ...single(), serviceImageReference: `mirror.example.com/${repository}@${rootDigest}` },
    reason: 'service-image-digest-mismatch',
  },
  {
    title: 'service reference with an upper-case digest',
    plan: singleArchPlan,
    evidence: { ...single(), serviceImageReference: `${name}@${rootDigest.toUpperCase()}` },
    reason: 'service-image-digest-mismatch',
  },
  {
    title: 'service reference with an invalid tag',
    plan: singleArchPlan,
    evidence: { ...single(), serviceImageReference: `${name}:@${rootDigest}` },
    reason: 'service-image-digest-mismatch',
  },
  // 6
  { title: 'no task reference', plan: singleArchPlan, evidence: without(single(), 'taskImageReference'), reason: 'task-image-not-digest-pinned' },
  {
    title: 'tag-only task reference',
    plan: singleArchPlan,
    evidence: { ...single(), taskImageReference: `${name}:latest` },
    reason: 'task-image-not-digest-pinned',
  },
  {
    title: 'task reference to another digest',
    plan: singleArchPlan,
    evidence: { ...single(), taskImageReference: `${name}:1.4.2@${otherDigest}` },
    reason: 'task-image-digest-mismatch',
  },
  {
    title: 'task reference to another repository',
    plan: singleArchPlan,
    evidence: { ...single(), taskImageReference: `${host}/team/app-old@${rootDigest}` },
    reason: 'task-image-digest-mismatch',
  },
  // 7
  { title: 'no task digest', plan: singleArchPlan, evidence: without(single(), 'taskReportedDigest'), reason: 'pulled-digest-missing' },
  { title: 'other task digest', plan: singleArchPlan, evidence: { ...single(), taskReportedDigest: otherDigest }, reason: 'pulled-digest-mismatch' },
  {
    title: 'task digest = platform digest',
    plan: indexPlan,
    evidence: { ...indexEvidence(), taskReportedDigest: platformDigest },
    reason: 'pulled-digest-mismatch',
  },
  // 8
  { title: 'no container image id', plan: singleArchPlan, evidence: without(single(), 'containerImageId'), reason: 'container-image-id-missing' },
  {
    title: 'short container image id',
    plan: singleArchPlan,
    evidence: { ...single(), containerImageId: 'bbbbbbbbbbbb' },
    reason: 'container-image-id-missing',
  },
  {
    title: 'upper-case container image id',
    plan: singleArchPlan,
    evidence: { ...single(), containerImageId: imageId.toUpperCase() },
    reason: 'container-image-id-missing',
  },
  // 9
  { title: 'no repo digests', plan: singleArchPlan, evidence: without(single(), 'repoDigests'), reason: 'container-repodigest-missing' },
  { title: 'empty repo digests', plan: singleArchPlan, evidence: { ...single(), repoDigests: [] }, reason: 'container-repodigest-missing' },
  {
    title: 'repo digests of another repository',
    plan: singleArchPlan,
    evidence: { ...single(), repoDigests: [`${host}/team/other@${rootDigest}`] },
    reason: 'container-repodigest-mismatch',
  },
  {
    title: 'repo digests of another digest',
    plan: singleArchPlan,
    evidence: { ...single(), repoDigests: [`${name}@${otherDigest}`] },
    reason: 'container-repodigest-mismatch',
  },
  { title: 'repo digest with a tag', plan: singleArchPlan, evidence: { ...single(), repoDigests: [taggedPinned] }, reason: 'container-repodigest-mismatch' },
  {
    title: 'repo digests bound to the platform manifest, not the index',
    plan: indexPlan,
    evidence: { ...indexEvidence(), repoDigests: [`${name}@${platformDigest}`] },
    reason: 'container-repodigest-mismatch',
  },
  // 10
  { title: 'no resolved digest', plan: singleArchPlan, evidence: without(single(), 'resolvedDigest'), reason: 'pulled-digest-missing' },
  { title: 'other resolved digest', plan: singleArchPlan, evidence: { ...single(), resolvedDigest: otherDigest }, reason: 'pulled-digest-mismatch' },
  {
    title: 'platform digest on a single-arch plan',
    plan: singleArchPlan,
    evidence: { ...indexEvidence() },
    reason: 'pulled-digest-mismatch',
  },
  {
    title: 'platform digest on a docker manifest plan',
    plan: dockerManifestPlan,
    evidence: { ...indexEvidence() },
    reason: 'pulled-digest-mismatch',
  },
  { title: 'index plan, no platform digest', plan: indexPlan, evidence: without(indexEvidence(), 'platformManifestDigest'), reason: 'pulled-digest-mismatch' },
  {
    title: 'index plan, another platform digest',
    plan: indexPlan,
    evidence: { ...indexEvidence(), platformManifestDigest: otherDigest },
    reason: 'pulled-digest-mismatch',
  },
  {
    title: 'index plan, malformed resolved = platform digest',
    plan: indexPlan,
    evidence: { ...indexEvidence(), resolvedDigest: 'sha256:5c', platformManifestDigest: 'sha256:5c' },
    reason: 'pulled-digest-mismatch',
  },
];

describe('verifyReplicaEvidence: one reason per failed check', () => {
  it.each(reasonCases)('$title → $reason', ({ plan, evidence, reason, verification }) => {
    const verdict = verifyReplicaEvidence(plan, deploymentWith(evidence));
    expect(verdict).toEqual({ health: 'healthy', verification: verification ?? 'mismatched', mismatchReason: reason });
  });

  it('covers every reason a replica check can produce', () => {
    const covered = new Set(reasonCases.map((reasonCase) => reasonCase.reason));
    expect([...covered].sort()).toEqual([
      'container-image-id-missing',
      'container-inspection-unavailable',
      'container-repodigest-mismatch',
      'container-repodigest-missing',
      'pulled-digest-mismatch',
      'pulled-digest-missing',
      'registry-digest-inconsistent',
      'requested-digest-malformed',
      'requested-digest-missing',
      'runtime-attestation-missing',
      'service-image-digest-mismatch',
      'service-image-not-digest-pinned',
      'stale-rollout-report',
      'task-image-digest-mismatch',
      'task-image-not-digest-pinned',
    ]);
  });

  it('does not count a task of another rollout: other-rollout, no reason', () => {
    for (const overrides of [{ rolloutId: 'rollout-6' }, { rolloutGeneration: 6 }, { rolloutId: 'rollout-6', rolloutGeneration: 6 }]) {
      expect(verifyReplicaEvidence(singleArchPlan, deploymentWith(singleArchEvidence(), overrides)))
        .toEqual({ health: 'healthy', verification: 'other-rollout' });
    }
    expect(verifyReplicaEvidence(singleArchPlan, deploymentWith(undefined, { rolloutId: 'rollout-6', status: 'failed' })))
      .toEqual({ health: 'failed', verification: 'other-rollout' });
  });
});

describe('verifyReplicaEvidence: the order of the checks', () => {
  /** One representative single-arch mutation per check, in check order. */
  const mutations: Array<{ check: number, reason: TImmutableImageMismatchReason, apply: (evidence: ReportedEvidence) => ReportedEvidence }> = [
    { check: 2, reason: 'container-inspection-unavailable', apply: (evidence) => ({ ...evidence, evidenceSource: 'task-spec' }) },
    { check: 3, reason: 'stale-rollout-report', apply: (evidence) => ({ ...evidence, rolloutGeneration: 6 }) },
    { check: 4, reason: 'registry-digest-inconsistent', apply: (evidence) => ({ ...evidence, expectedDigest: otherDigest }) },
    { check: 5, reason: 'service-image-digest-mismatch', apply: (evidence) => ({ ...evidence, serviceImageReference: `${name}@${otherDigest}` }) },
    { check: 6, reason: 'task-image-not-digest-pinned', apply: (evidence) => ({ ...evidence, taskImageReference: `${name}:latest` }) },
    { check: 7, reason: 'pulled-digest-mismatch', apply: (evidence) => ({ ...evidence, taskReportedDigest: otherDigest }) },
    { check: 8, reason: 'container-image-id-missing', apply: (evidence) => without(evidence, 'containerImageId') },
    { check: 9, reason: 'container-repodigest-mismatch', apply: (evidence) => ({ ...evidence, repoDigests: [`${name}@${otherDigest}`] }) },
    { check: 10, reason: 'pulled-digest-missing', apply: (evidence) => without(evidence, 'resolvedDigest') },
  ];

  it('a report failing checks 5 and 9 gets the reason of check 5', () => {
    const evidence = { ...singleArchEvidence(), serviceImageReference: `${name}:1.4.2`, repoDigests: [] };
    expect(reasonOf(singleArchPlan, evidence)).toBe('service-image-not-digest-pinned');
  });

  const pairs = mutations.flatMap((earlier, index) => mutations.slice(index + 1).map((later) => ({ earlier, later })));
  it.each(pairs)('check $earlier.check wins over check $later.check', ({ earlier, later }) => {
    expect(reasonOf(singleArchPlan, later.apply(singleArchEvidence()))).toBe(later.reason);
    expect(reasonOf(singleArchPlan, earlier.apply(later.apply(singleArchEvidence())))).toBe(earlier.reason);
  });

  it('other-rollout (0) and missing evidence (1) come before every evidence check', () => {
    const broken = mutations.reduce((evidence, mutation) => mutation.apply(evidence), singleArchEvidence());
    expect(reasonOf(singleArchPlan, broken)).toBe('container-inspection-unavailable');
    expect(verifyReplicaEvidence(singleArchPlan, deploymentWith(broken, { rolloutGeneration: 6 })))
      .toEqual({ health: 'healthy', verification: 'other-rollout' });
    expect(verifyReplicaEvidence(singleArchPlan, deploymentWith(undefined, { rolloutGeneration: 6 })))
      .toEqual({ health: 'healthy', verification: 'other-rollout' });
  });
});

describe('verifyReplicaEvidence: the reporter\'s claim is ignored', () => {
  it.each([
    { title: 'a wrong resolved digest', evidence: { ...singleArchEvidence(), resolvedDigest: otherDigest }, reason: 'pulled-digest-mismatch' },
    { title: 'a tag-only task reference', evidence: { ...singleArchEvidence(), taskImageReference: `${name}:1.4.2` }, reason: 'task-image-not-digest-pinned' },
    { title: 'missing repo digests', evidence: without(singleArchEvidence(), 'repoDigests'), reason: 'container-repodigest-missing' },
    { title: 'empty repo digests', evidence: { ...singleArchEvidence(), repoDigests: [] }, reason: 'container-repodigest-missing' },
    { title: 'nothing but the claim', evidence: { verificationStatus: 'verified', observedAt: 1 }, reason: 'container-inspection-unavailable' },
  ] satisfies Array<{ title: string, evidence: ReportedEvidence, reason: TImmutableImageMismatchReason }>)(
    'a forged "verified" claim with $title is mismatched ($reason)',
    ({ evidence, reason }) => {
      expect(evidence.verificationStatus).toBe('verified');
      expect(verifyReplicaEvidence(singleArchPlan, deploymentWith(evidence)))
        .toEqual({ health: 'healthy', verification: 'mismatched', mismatchReason: reason });
    },
  );

  it('a "mismatched: pull-failed" claim on perfect evidence is still verified', () => {
    const evidence: ReportedEvidence = { ...singleArchEvidence(), verificationStatus: 'mismatched', mismatchReason: 'pull-failed' };
    expect(verifyReplicaEvidence(singleArchPlan, deploymentWith(evidence))).toEqual({ health: 'healthy', verification: 'verified' });
    for (const verificationStatus of ['pending', 'not-required', 'missing'] as const) {
      expect(verifyReplicaEvidence(indexPlan, deploymentWith({ ...indexEvidence(), verificationStatus })).verification).toBe('verified');
    }
  });
});

// ---------------------------------------------------------------------------
// Property: arbitrary mutations of the baseline never produce a wrongful `verified`.

const evidenceFields = [
  'rolloutId', 'rolloutGeneration', 'expectedDigest', 'serviceImageReference', 'taskImageReference',
  'taskReportedDigest', 'containerImageId', 'containerConfigImageReference', 'resolvedDigest',
  'platformManifestDigest', 'repoDigests', 'evidenceSource', 'verificationStatus',
] as const satisfies ReadonlyArray<keyof ReportedEvidence>;
const digestFields = ['expectedDigest', 'taskReportedDigest', 'resolvedDigest', 'platformManifestDigest'] as const;
const referenceFields = ['serviceImageReference', 'taskImageReference', 'containerConfigImageReference'] as const;
type StringField = typeof digestFields[number] | typeof referenceFields[number] | 'containerImageId';
const stringFields: readonly StringField[] = [...digestFields, ...referenceFields, 'containerImageId'];

/** Small pool: the right digest, the platform digest, another image, and two malformed look-alikes. */
const digestPool = [rootDigest, platformDigest, otherDigest, rootDigest.toUpperCase(), `sha256:${'a3'.repeat(31)}`];
const tagPool = ['latest', '1.4.2', 'v2', 'x'];
const namePool = [name, `${host}/team/other`, `mirror.example.com/${repository}`, name.toUpperCase()];

type Mutation =
  | { kind: 'drop', field: typeof evidenceFields[number] }
  | { kind: 'set-digest', field: typeof digestFields[number], digest: string }
  | { kind: 'repin', field: typeof referenceFields[number] | 'repoDigests', digest: string }
  | { kind: 'rename', field: typeof referenceFields[number] | 'repoDigests', name: string }
  | { kind: 'tag', field: typeof referenceFields[number] | 'repoDigests', tag: string }
  | { kind: 'unpin', field: typeof referenceFields[number] | 'repoDigests' }
  | { kind: 'upper-case', field: StringField | 'repoDigests' }
  | { kind: 'add-repo-digest', reference: string }
  | { kind: 'empty-repo-digests' };

const referenceOrRepoDigests = fc.constantFrom(...referenceFields, 'repoDigests' as const);
const mutationArbitrary: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('drop' as const), field: fc.constantFrom(...evidenceFields) }),
  fc.record({ kind: fc.constant('set-digest' as const), field: fc.constantFrom(...digestFields), digest: fc.constantFrom(...digestPool) }),
  fc.record({ kind: fc.constant('repin' as const), field: referenceOrRepoDigests, digest: fc.constantFrom(...digestPool) }),
  fc.record({ kind: fc.constant('rename' as const), field: referenceOrRepoDigests, name: fc.constantFrom(...namePool) }),
  fc.record({ kind: fc.constant('tag' as const), field: referenceOrRepoDigests, tag: fc.constantFrom(...tagPool) }),
  fc.record({ kind: fc.constant('unpin' as const), field: referenceOrRepoDigests }),
  fc.record({ kind: fc.constant('upper-case' as const), field: fc.constantFrom<StringField | 'repoDigests'>(...stringFields, 'repoDigests') }),
  fc.record({
    kind: fc.constant('add-repo-digest' as const),
    reference: fc.tuple(fc.constantFrom(...namePool), fc.constantFrom(...digestPool)).map(([n, d]) => `${n}@${d}`),
  }),
  fc.record({ kind: fc.constant('empty-repo-digests' as const) }),
);

/** Rewrites a reference `name[:tag]@digest` (or a tag-only one) part by part. */
const splitReference = (reference: string): { base: string, digest: string | undefined } => {
  const at = reference.lastIndexOf('@');
  return at < 0 ? { base: reference, digest: undefined } : { base: reference.slice(0, at), digest: reference.slice(at + 1) };
};
const joinReference = (base: string, digest: string | undefined): string => (digest === undefined ? base : `${base}@${digest}`);

const rewriteReference = (mutation: Mutation, reference: string): string => {
  const { base, digest } = splitReference(reference);
  switch (mutation.kind) {
    case 'repin': return `${base}@${mutation.digest}`;
    case 'rename': return joinReference(mutation.name, digest);
    case 'tag': return joinReference(`${base}:${mutation.tag}`, digest);
    case 'unpin': return base;
    default: return reference;
  }
};

const applyMutation = (evidence: ReportedEvidence, mutation: Mutation): ReportedEvidence => {
  const next: ReportedEvidence = { ...evidence, ...(evidence.repoDigests ? { repoDigests: [...evidence.repoDigests] } : {}) };
  switch (mutation.kind) {
    case 'drop':
      delete next[mutation.field];
      return next;
    case 'set-digest':
      return { ...next, [mutation.field]: mutation.digest };
    case 'repin': case 'rename': case 'tag': case 'unpin': {
      if (mutation.field === 'repoDigests') {
        return next.repoDigests ? { ...next, repoDigests: next.repoDigests.map((entry) => rewriteReference(mutation, entry)) } : next;
      }
      const current = next[mutation.field];
      return current === undefined ? next : { ...next, [mutation.field]: rewriteReference(mutation, current) };
    }
    case 'upper-case': {
      if (mutation.field === 'repoDigests') {
        return next.repoDigests ? { ...next, repoDigests: next.repoDigests.map((entry) => entry.toUpperCase()) } : next;
      }
      const current = next[mutation.field];
      return current === undefined ? next : { ...next, [mutation.field]: current.toUpperCase() };
    }
    case 'add-repo-digest':
      return { ...next, repoDigests: [...(next.repoDigests ?? []), mutation.reference] };
    case 'empty-repo-digests':
      return { ...next, repoDigests: [] };
  }
};

/**
 * The oracle, written independently of the implementation: every digest-bearing field
 * names the plan's image by the plan's digest, literally.
 */
const bindsToPlan = (plan: IImmutableImageDeploymentPlan, evidence: ReportedEvidence): boolean => {
  const image = `${plan.registryHost}/${plan.repository}`;
  const digest = plan.requestedDigest;
  const referenceBinds = (reference: string | undefined): boolean => {
    if (reference === undefined || !reference.endsWith(`@${digest}`)) return false;
    const base = reference.slice(0, -(digest.length + 1));
    return base === image || (base.startsWith(`${image}:`) && /^[\w.-]+$/.test(base.slice(image.length + 1)));
  };
  const isIndex = plan.manifestMediaType.includes('index') || plan.manifestMediaType.includes('list');
  const resolvedBinds = evidence.resolvedDigest === digest
    || (isIndex && evidence.resolvedDigest !== undefined && evidence.resolvedDigest === evidence.platformManifestDigest);
  return evidence.expectedDigest === digest
    && referenceBinds(evidence.serviceImageReference)
    && referenceBinds(evidence.taskImageReference)
    && evidence.taskReportedDigest === digest
    && (evidence.repoDigests ?? []).includes(`${image}@${digest}`)
    && resolvedBinds;
};

const reasonSet: ReadonlySet<string> = new Set(immutableImageMismatchReasons);

describe('verifyReplicaEvidence: property', () => {
  /** Plans with the baseline that verifies against them. */
  const validPairs = [
    { plan: singleArchPlan, baseline: singleArchEvidence },
    { plan: dockerManifestPlan, baseline: singleArchEvidence },
    { plan: indexPlan, baseline: indexEvidence },
    { plan: manifestListPlan, baseline: indexEvidence },
    { plan: indexPlan, baseline: singleArchEvidence },
  ];
  const scenario = fc.tuple(
    fc.constantFrom(
      ...validPairs,
      // Platform-resolved evidence against single-platform plans: the multi-arch rule must not apply.
      { plan: singleArchPlan, baseline: indexEvidence },
      { plan: dockerManifestPlan, baseline: indexEvidence },
    ),
    fc.array(mutationArbitrary, { minLength: 0, maxLength: 6 }),
  );

  it('verified only if every digest-bearing field binds to the plan; failures always carry an upstream reason', () => {
    let verified = 0;
    let rejected = 0;
    fc.assert(fc.property(scenario, ([{ plan, baseline }, mutations]) => {
      const evidence = mutations.reduce(applyMutation, baseline());
      const verdict = verifyReplicaEvidence(plan, deploymentWith(evidence));
      expect(verdict.health).toBe('healthy');
      if (verdict.verification === 'verified') {
        verified++;
        expect(bindsToPlan(plan, evidence)).toBe(true);
        expect(verdict.mismatchReason).toBeUndefined();
      } else {
        rejected++;
        expect(['mismatched', 'missing']).toContain(verdict.verification);
        expect(verdict.mismatchReason).toBeDefined();
        expect(reasonSet.has(verdict.mismatchReason ?? '')).toBe(true);
      }
    }), { numRuns: 2000 });
    // Both outcomes are exercised, so the implication is not vacuous.
    expect(verified).toBeGreaterThan(50);
    expect(rejected).toBeGreaterThan(50);
  });

  it('the reporter\'s claim never changes the verdict', () => {
    const claims: Array<Pick<ReportedEvidence, 'verificationStatus' | 'mismatchReason'>> = [
      { verificationStatus: 'verified' },
      { verificationStatus: 'pending' },
      { verificationStatus: 'not-required' },
      { verificationStatus: 'missing', mismatchReason: 'runtime-attestation-missing' },
      { verificationStatus: 'mismatched', mismatchReason: 'pull-failed' },
    ];
    fc.assert(fc.property(scenario, fc.constantFrom(...claims), ([{ plan, baseline }, mutations], claim) => {
      const evidence = without(without(mutations.reduce(applyMutation, baseline()), 'verificationStatus'), 'mismatchReason');
      expect(verifyReplicaEvidence(plan, deploymentWith({ ...evidence, ...claim })))
        .toEqual(verifyReplicaEvidence(plan, deploymentWith(evidence)));
    }), { numRuns: 1000 });
  });

  it('valid tags added to the service and task references keep the evidence verified', () => {
    const tagOnly = fc.array(fc.record({
      kind: fc.constant('tag' as const),
      field: fc.constantFrom('serviceImageReference' as const, 'taskImageReference' as const),
      tag: fc.constantFrom(...tagPool),
    }), { maxLength: 2 });
    fc.assert(fc.property(fc.constantFrom(...validPairs), tagOnly, ({ plan, baseline }, mutations) => {
      // At most one tag per reference: `name:a:b` is no valid reference.
      const once = mutations.filter((mutation, index) => mutations.findIndex((other) => other.field === mutation.field) === index);
      const untagged = { ...baseline(), serviceImageReference: pinned, taskImageReference: pinned };
      const evidence = once.reduce<ReportedEvidence>(applyMutation, untagged);
      expect(verifyReplicaEvidence(plan, deploymentWith(evidence)).verification).toBe('verified');
    }), { numRuns: 1000 });
  });
});
