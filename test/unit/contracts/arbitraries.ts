/**
 * fast-check generators for the helper parity tests: valid upstream-shaped inputs,
 * their mutations, and hostile values (non-canonical strings, non-integers, NaN,
 * ±Infinity, -0, unsafe integers, wrong types, duplicates, empty arrays).
 */
import fc from 'fast-check';
import {
  immutableImageMismatchReasons,
  immutableImageRolloutModes,
  immutableImageRolloutStatuses,
  ociManifestMediaTypes,
  type IImageRolloutReporterStatus,
  type IImageRolloutStatus,
  type IImmutableImageDeploymentPlan,
  type TSha256Digest,
} from '../../../src/contracts/index.js';

/** A value that may not conform to the static type it is passed as. */
export const loose = <T>(value: unknown): T => value as T;

// ---- strings ---------------------------------------------------------------------

/** Removed by String.prototype.trim. */
export const trimmedWhitespace = [
  ' ', '\t', '\n', '\v', '\f', '\r', '\u00a0', '\u1680', '\u2000', '\u2009', '\u200a',
  '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff',
];
/** Look like whitespace but are not trimmed. */
export const untrimmedLookalikes = ['\u200b', '\u180e', '\u0085', '\u2060', '\u0000'];
/** Characters whose case mapping is surprising (length changes, non-ASCII → ASCII). */
export const caseTraps = ['\u0130', '\u212a', '\u212b', 'ß', 'ﬀ', '\u0131', 'ſ', 'Ａ', 'ａ', '０', 'é', 'É'];

const padding = fc
  .array(fc.constantFrom(...trimmedWhitespace, ...untrimmedLookalikes), { maxLength: 3 })
  .map((chars) => chars.join(''));

const lowerHexChar = fc.constantFrom(...'0123456789abcdef'.split(''));
export const hex = (length: number): fc.Arbitrary<string> =>
  fc.string({ unit: lowerHexChar, minLength: length, maxLength: length });

export const canonicalDigest: fc.Arbitrary<TSha256Digest> = hex(64).map((body) => `sha256:${body}` as const);

type CaseMode = 'keep' | 'upper' | 'flip-first' | 'random';
const applyCase = (text: string, mode: CaseMode, seed: number): string => {
  switch (mode) {
    case 'keep': return text;
    case 'upper': return text.toUpperCase();
    case 'flip-first': return text.charAt(0).toUpperCase() + text.slice(1);
    case 'random':
      return [...text].map((char, index) => ((seed >>> (index % 31)) & 1 ? char.toUpperCase() : char)).join('');
  }
};
const caseMode = fc.constantFrom<CaseMode>('keep', 'keep', 'upper', 'flip-first', 'random');

/** 64 hex digits with one character replaced by a non-hex look-alike. */
const hexWithIntruder = fc
  .tuple(hex(64), fc.nat({ max: 63 }), fc.constantFrom('g', 'G', 'z', '-', ' ', ':', '@', ...caseTraps))
  .map(([body, at, intruder]) => body.slice(0, at) + intruder + body.slice(at + 1));

/** Digests that are almost canonical: wrong length, case, prefix, padding, intruders. */
export const nearValidDigest: fc.Arbitrary<string> = fc
  .record({
    prefix: fc.constantFrom(
      'sha256:', 'sha256:', 'SHA256:', 'Sha256:', 'sha256', 'sha-256:', 'sha512:', 'sha256::',
      'sha256: ', '', ':', 'sha256@', 'ſha256:',
    ),
    body: fc.oneof(hex(64), hex(63), hex(65), hex(0), hex(1), hex(128), hexWithIntruder),
    mode: caseMode,
    seed: fc.integer(),
    lead: padding,
    trail: padding,
  })
  .map(({ prefix, body, mode, seed, lead, trail }) => lead + applyCase(prefix + body, mode, seed) + trail);

const hostilePieces = fc.oneof(
  fc.constantFrom(
    '@', '/', ':', '.', '-', '_', 'sha256:', 'SHA256:', ' ', '\t', '\u00a0', 'A', 'localhost', '//', '@@',
    ...caseTraps, ...untrimmedLookalikes,
  ),
  canonicalDigest,
  hex(8),
  fc.string({ maxLength: 4 }),
);

/** Strings nobody should send: empty, unicode, control characters, '@' anywhere, very long. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.string(), weight: 2 },
  { arbitrary: fc.string({ unit: 'grapheme' }), weight: 1 },
  { arbitrary: fc.string({ unit: 'binary' }), weight: 1 },
  { arbitrary: fc.string({ unit: 'binary-ascii' }), weight: 1 },
  {
    arbitrary: fc.constantFrom(
      '', ' ', '@', '@@', '/', ':', 'sha256:', 'SHA256:', 'localhost', 'LOCALHOST', '🙂', 'a\u0301',
      '__proto__', 'constructor', '$where', 'a.b', ...caseTraps,
    ),
    weight: 2,
  },
  {
    arbitrary: fc
      .tuple(fc.string({ minLength: 1, maxLength: 8 }), fc.integer({ min: 64, max: 4000 }))
      .map(([unit, times]) => unit.repeat(times)),
    weight: 1,
  },
  { arbitrary: fc.array(hostilePieces, { maxLength: 8 }).map((pieces) => pieces.join('')), weight: 3 },
);

/** Values of the wrong type, for string parameters (some coerce to valid strings). */
export const nonString: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(undefined, null, 0, 42, Number.NaN, true, {}, [], Symbol('s')),
  canonicalDigest.map((digest) => [digest]),
  canonicalDigest.map((digest) => ({ toString: () => digest })),
);

export const digestLike: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: canonicalDigest, weight: 6 },
  { arbitrary: nearValidDigest, weight: 5 },
  { arbitrary: hostileString, weight: 2 },
);

// ---- registry host and repository -------------------------------------------------------

export const canonicalHost: fc.Arbitrary<string> = fc.oneof(
  fc.stringMatching(/^(?:localhost|[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)(?::[1-9][0-9]{0,4})?$/, { size: 'small' }),
  fc.constantFrom('localhost', 'localhost:5000', 'registry.example.com', 'ghcr.io', '127.0.0.1:5000', 'a:99999'),
);

export const canonicalRepository: fc.Arbitrary<string> = fc.oneof(
  fc.stringMatching(/^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*$/, { size: 'small' }),
  fc.constantFrom('app', 'library/nginx', 'team/app-api', 'a.b_c-d/e'),
);

type Mutator = (text: string) => string;
const hostMutators: Mutator[] = [
  (h) => h.toUpperCase(), (h) => `${h}:`, (h) => `${h}:0`, (h) => `${h}:080`, (h) => `${h}:123456`,
  (h) => `https://${h}`, (h) => `${h}/`, (h) => `${h}.`, (h) => `-${h}`, (h) => `${h}_x`, (h) => ` ${h}`,
  (h) => `${h} `, (h) => `${h}@`, (h) => `@${h}`, () => '', () => 'LocalHost', () => '[::1]:5000',
  (h) => `${h}\n`, (h) => `${h}\u0130`,
];
const repositoryMutators: Mutator[] = [
  (r) => r.toUpperCase(), (r) => `${r}/`, (r) => `/${r}`, (r) => `${r}//x`, (r) => `${r}__x`, (r) => `${r}:latest`,
  (r) => `${r}@x`, (r) => `${r} `, (r) => `\t${r}`, () => '', () => 'a--b', () => 'a..b', () => 'a._b',
  (r) => `${r}\n`, (r) => `${r}/É`,
];

export const mutatedHost = fc.tuple(canonicalHost, fc.constantFrom(...hostMutators)).map(([h, mutate]) => mutate(h));
export const mutatedRepository = fc
  .tuple(canonicalRepository, fc.constantFrom(...repositoryMutators))
  .map(([r, mutate]) => mutate(r));

export const hostArg: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: canonicalHost, weight: 6 },
  { arbitrary: mutatedHost, weight: 3 },
  { arbitrary: hostileString, weight: 1 },
  { arbitrary: nonString, weight: 1 },
);
export const repositoryArg: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: canonicalRepository, weight: 6 },
  { arbitrary: mutatedRepository, weight: 3 },
  { arbitrary: hostileString, weight: 1 },
  { arbitrary: nonString, weight: 1 },
);
export const digestArg: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: digestLike, weight: 10 },
  { arbitrary: nonString, weight: 1 },
);

/** Pinned references: valid ones and every way to get the '@' wrong. */
export const pinnedReferenceLike: fc.Arbitrary<string> = fc.oneof(
  {
    arbitrary: fc.tuple(canonicalHost, canonicalRepository, digestLike).map(([h, r, d]) => `${h}/${r}@${d}`),
    weight: 3,
  },
  fc.tuple(hostileString, canonicalDigest, digestLike).map(([a, d, e]) => `${a}@${d}@${e}`),
  fc.tuple(hostileString, digestLike).map(([a, d]) => `${a}@${d}`),
  fc.tuple(hostileString, canonicalDigest).map(([a, d]) => `${a}@${d}@`),
  digestLike.map((d) => `@${d}`),
  digestLike,
  hostileString,
);

// ---- numbers --------------------------------------------------------------------

export const hostileNumber: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: fc.integer({ min: -3, max: 12 }), weight: 5 },
  {
    arbitrary: fc.constantFrom<unknown>(
      Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0, 0, 0.5, 1.5, -1.5,
      Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, Number.MAX_SAFE_INTEGER + 2, -Number.MAX_SAFE_INTEGER,
      Number.MIN_SAFE_INTEGER - 1, 2 ** 53, 1e21, Number.MIN_VALUE, Number.EPSILON, Number.MAX_VALUE,
    ),
    weight: 3,
  },
  { arbitrary: fc.double(), weight: 1 },
  { arbitrary: fc.constantFrom<unknown>('1', '', '0', null, undefined, true, false, [], [1], {}), weight: 1 },
);

/** No mutation in about a third of the cases (so valid inputs stay common), else one to four. */
const mutationsOf = <T>(mutation: fc.Arbitrary<T>): fc.Arbitrary<T[]> => fc.oneof(
  { arbitrary: fc.constant<T[]>([]), weight: 1 },
  { arbitrary: fc.array(mutation, { minLength: 1, maxLength: 4 }), weight: 2 },
);

// ---- deployment plans ---------------------------------------------------------------------

const idArb = fc.oneof(
  { arbitrary: fc.stringMatching(/^[a-z0-9-]{1,12}$/), weight: 4 },
  { arbitrary: fc.string({ minLength: 1, maxLength: 10 }), weight: 1 },
);

/** A loose, mutable view of a plan: any field may hold any value. */
type LoosePlan = Record<string, unknown> & { targetScope: Record<string, unknown> };
export type PlanMutation = (plan: LoosePlan) => void;

const asArray = (value: unknown): unknown[] | undefined => (Array.isArray(value) ? value : undefined);

/** A plan upstream's validator accepts (every mode, rollbackOfRolloutId exactly for rollbacks). */
export const validPlan: fc.Arbitrary<IImmutableImageDeploymentPlan> = fc
  .record({
    host: canonicalHost,
    repository: canonicalRepository,
    digest: canonicalDigest,
    rolloutId: idArb,
    rolloutGeneration: fc.integer({ min: 1, max: 1_000_000 }),
    releaseId: idArb,
    createdAt: fc.integer({ min: 1, max: 4_102_444_800_000 }),
    manifestMediaType: fc.constantFrom(...ociManifestMediaTypes),
    mode: fc.constantFrom(...immutableImageRolloutModes),
    rollbackOfRolloutId: idArb,
    clusters: fc.uniqueArray(idArb, { minLength: 1, maxLength: 4 }),
    nodes: fc.uniqueArray(idArb, { minLength: 1, maxLength: 6 }),
    replicasPerNode: fc.integer({ min: 1, max: 5 }),
  })
  .map((seed): IImmutableImageDeploymentPlan => ({
    policy: 'immutable-digest',
    rolloutId: seed.rolloutId,
    rolloutGeneration: seed.rolloutGeneration,
    releaseId: seed.releaseId,
    registryHost: seed.host,
    repository: seed.repository,
    requestedDigest: seed.digest,
    digestPinnedImageReference: `${seed.host}/${seed.repository}@${seed.digest}`,
    manifestMediaType: seed.manifestMediaType,
    createdAt: seed.createdAt,
    mode: seed.mode,
    ...(seed.mode === 'rollback' ? { rollbackOfRolloutId: seed.rollbackOfRolloutId } : {}),
    targetScope: {
      targetClusterIds: [...seed.clusters],
      targetNodeNames: [...seed.nodes],
      replicasPerNode: seed.replicasPerNode,
      requiredReplicaCount: seed.nodes.length * seed.replicasPerNode,
    },
  }));

const hostileIdList: fc.Arbitrary<unknown[]> = fc.oneof(
  fc.constant<unknown[]>([]),
  fc.array(idArb, { maxLength: 5 }),
  fc.constantFrom<unknown[]>([Number.NaN, Number.NaN], [0, -0], ['a', 'a'], ['', ''], [undefined, undefined], ['a', 'A']),
);

export const planMutation: fc.Arbitrary<PlanMutation> = fc.oneof(
  hostileNumber.map((value): PlanMutation => (plan) => { plan.rolloutGeneration = value; }),
  hostileNumber.map((value): PlanMutation => (plan) => { plan.createdAt = value; }),
  hostArg.map((value): PlanMutation => (plan) => { plan.registryHost = value; }),
  repositoryArg.map((value): PlanMutation => (plan) => { plan.repository = value; }),
  digestArg.map((value): PlanMutation => (plan) => { plan.requestedDigest = value; }),
  pinnedReferenceLike.map((value): PlanMutation => (plan) => { plan.digestPinnedImageReference = value; }),
  fc.constantFrom<PlanMutation>(
    // re-derive the reference from whatever host/repository/digest now are
    (plan) => { plan.digestPinnedImageReference = `${String(plan.registryHost)}/${String(plan.repository)}@${String(plan.requestedDigest)}`; },
    (plan) => { plan.digestPinnedImageReference = String(plan.digestPinnedImageReference).toUpperCase(); },
    (plan) => { plan.digestPinnedImageReference = ` ${String(plan.digestPinnedImageReference)}`; },
    (plan) => { delete plan.digestPinnedImageReference; },
    (plan) => { plan.requestedDigest = String(plan.requestedDigest).toUpperCase(); },
    (plan) => { plan.requestedDigest = `${String(plan.requestedDigest)} `; },
  ),
  hostileNumber.map((value): PlanMutation => (plan) => { plan.targetScope.replicasPerNode = value; }),
  hostileNumber.map((value): PlanMutation => (plan) => { plan.targetScope.requiredReplicaCount = value; }),
  hostileIdList.map((value): PlanMutation => (plan) => { plan.targetScope.targetClusterIds = [...value]; }),
  hostileIdList.map((value): PlanMutation => (plan) => { plan.targetScope.targetNodeNames = [...value]; }),
  fc.constantFrom<PlanMutation>(
    (plan) => {
      const clusters = asArray(plan.targetScope.targetClusterIds);
      if (clusters) plan.targetScope.targetClusterIds = [...clusters, clusters[0]];
    },
    (plan) => {
      const nodes = asArray(plan.targetScope.targetNodeNames);
      if (nodes) plan.targetScope.targetNodeNames = [...nodes, nodes[nodes.length - 1]];
    },
    (plan) => { plan.targetScope.targetClusterIds = []; },
    (plan) => { plan.targetScope.targetNodeNames = []; },
    // keep requiredReplicaCount consistent with whatever the scope now is
    (plan) => {
      const nodes = asArray(plan.targetScope.targetNodeNames);
      if (nodes) plan.targetScope.requiredReplicaCount = nodes.length * (plan.targetScope.replicasPerNode as number);
    },
    (plan) => {
      const nodes = asArray(plan.targetScope.targetNodeNames);
      if (nodes) plan.targetScope.requiredReplicaCount = nodes.length * (plan.targetScope.replicasPerNode as number) + 1;
    },
  ),
  fc
    .constantFrom<unknown>(...immutableImageRolloutModes, 'ROLLBACK', 'rollback ', '', undefined, null)
    .map((value): PlanMutation => (plan) => { plan.mode = value; }),
  fc
    .constantFrom<unknown>('<delete>', undefined, '', 'r', 'rollout-1', 0, null, Number.NaN, ' ', false)
    .map((value): PlanMutation => (plan) => {
      if (value === '<delete>') delete plan.rollbackOfRolloutId;
      else plan.rollbackOfRolloutId = value;
    }),
);

/** A valid plan with zero to four mutations applied to a fresh copy. */
export const planInput: fc.Arbitrary<IImmutableImageDeploymentPlan> = fc
  .tuple(validPlan, mutationsOf(planMutation))
  .map(([plan, mutations]) => {
    const copy: LoosePlan = { ...plan, targetScope: { ...plan.targetScope } };
    for (const mutate of mutations) mutate(copy);
    return loose<IImmutableImageDeploymentPlan>(copy);
  });

// ---- rollout statuses ----------------------------------------------------------------------

interface ReporterSeed {
  nodes: number;
  required: number;
  observed: number;
  healthy: number;
  verified: number;
  failed: number;
  reportSequence: number;
  reportedAt: number;
}

const completeReporterSeed: fc.Arbitrary<ReporterSeed> = fc
  .record({
    nodes: fc.integer({ min: 1, max: 3 }),
    replicas: fc.integer({ min: 1, max: 6 }),
    reportSequence: fc.nat({ max: 1000 }),
    reportedAt: fc.integer({ min: 1, max: 4_102_444_800_000 }),
  })
  .map(({ replicas, ...rest }) => ({
    ...rest, required: replicas, observed: replicas, healthy: replicas, verified: replicas, failed: 0,
  }));

const partialReporterSeed: fc.Arbitrary<ReporterSeed> = fc
  .record({
    nodes: fc.integer({ min: 0, max: 3 }),
    required: fc.integer({ min: 0, max: 6 }),
    reportSequence: fc.nat({ max: 1000 }),
    reportedAt: fc.integer({ min: 1, max: 4_102_444_800_000 }),
  })
  .chain((seed) => fc.integer({ min: 0, max: seed.required }).chain((observed) => fc
    .record({
      healthy: fc.integer({ min: 0, max: observed }),
      verified: fc.integer({ min: 0, max: observed }),
      failed: fc.integer({ min: 0, max: 3 }),
    })
    .map((counts) => ({ ...seed, observed, ...counts }))));

type Counts = Pick<
  IImageRolloutStatus,
  'requiredReplicaCount' | 'observedReplicaCount' | 'healthyReplicaCount' | 'verifiedReplicaCount' | 'failedReplicaCount'
>;

const sumCounts = (reporters: readonly Counts[]): Counts => ({
  requiredReplicaCount: reporters.reduce((sum, r) => sum + r.requiredReplicaCount, 0),
  observedReplicaCount: reporters.reduce((sum, r) => sum + r.observedReplicaCount, 0),
  healthyReplicaCount: reporters.reduce((sum, r) => sum + r.healthyReplicaCount, 0),
  verifiedReplicaCount: reporters.reduce((sum, r) => sum + r.verifiedReplicaCount, 0),
  failedReplicaCount: reporters.reduce((sum, r) => sum + r.failedReplicaCount, 0),
});

const successStatuses = ['succeeded', 'rolled-back'] as const;

/**
 * Statuses built consistently: "successful" ones (every reporter complete, totals add
 * up, no mismatch reason — upstream accepts them) and ones in any status with partial
 * reporters and, sometimes, independent aggregate counts.
 */
export const consistentStatus: fc.Arbitrary<IImageRolloutStatus> = fc
  .record({
    successful: fc.boolean(),
    rolloutId: idArb,
    rolloutGeneration: fc.integer({ min: 1, max: 1_000_000 }),
    expectedDigest: canonicalDigest,
    updatedAt: fc.integer({ min: 1, max: 4_102_444_800_000 }),
    anyStatus: fc.constantFrom(...immutableImageRolloutStatuses),
    successStatus: fc.constantFrom(...successStatuses),
    completeReporters: fc.array(completeReporterSeed, { minLength: 1, maxLength: 4 }),
    partialReporters: fc.array(partialReporterSeed, { minLength: 0, maxLength: 4 }),
    ownAggregate: fc.option(
      fc.record({
        requiredReplicaCount: fc.nat({ max: 20 }),
        observedReplicaCount: fc.nat({ max: 20 }),
        healthyReplicaCount: fc.nat({ max: 20 }),
        verifiedReplicaCount: fc.nat({ max: 20 }),
        failedReplicaCount: fc.nat({ max: 3 }),
      }),
      { freq: 3 },
    ),
  })
  .map((seed): IImageRolloutStatus => {
    const seeds = seed.successful ? seed.completeReporters : seed.partialReporters;
    const reporters = seeds.map((r, index): IImageRolloutReporterStatus => ({
      reporterId: `reporter-${index}`,
      reporterSessionId: `session-${index}`,
      clusterId: `cluster-${index}`,
      reporterNodeNames: Array.from({ length: r.nodes }, (_, node) => `node-${index}-${node}`),
      rolloutId: seed.rolloutId,
      rolloutGeneration: seed.rolloutGeneration,
      reportSequence: r.reportSequence,
      reportedAt: r.reportedAt,
      requiredReplicaCount: r.required,
      observedReplicaCount: r.observed,
      healthyReplicaCount: r.healthy,
      verifiedReplicaCount: r.verified,
      failedReplicaCount: r.failed,
    }));
    const aggregate = seed.successful || seed.ownAggregate === null ? sumCounts(reporters) : seed.ownAggregate;
    return {
      rolloutId: seed.rolloutId,
      rolloutGeneration: seed.rolloutGeneration,
      expectedDigest: seed.expectedDigest,
      status: seed.successful ? seed.successStatus : seed.anyStatus,
      ...aggregate,
      updatedAt: seed.updatedAt,
      reporters,
    };
  });

type LooseReporter = Record<string, unknown>;
type LooseStatus = Record<string, unknown> & { reporters: LooseReporter[] };
export type StatusMutation = (status: LooseStatus) => void;

const countFields = [
  'requiredReplicaCount', 'observedReplicaCount', 'healthyReplicaCount', 'verifiedReplicaCount', 'failedReplicaCount',
] as const;

const pick = <T>(items: readonly T[], index: number): T | undefined =>
  items.length === 0 ? undefined : items[index % items.length];

const mismatchReasonValue = fc.constantFrom<unknown>(...immutableImageMismatchReasons, '', undefined, 0, null, '<delete>');

export const statusMutation: fc.Arbitrary<StatusMutation> = fc.oneof(
  fc.tuple(fc.constantFrom(...countFields), hostileNumber)
    .map(([field, value]): StatusMutation => (status) => { status[field] = value; }),
  fc.tuple(fc.constantFrom(...countFields), fc.constantFrom(-1, 1))
    .map(([field, delta]): StatusMutation => (status) => { status[field] = (status[field] as number) + delta; }),
  fc.tuple(fc.nat(), fc.constantFrom(...countFields), hostileNumber)
    .map(([index, field, value]): StatusMutation => (status) => {
      const reporter = pick(status.reporters, index);
      if (reporter) reporter[field] = value;
    }),
  fc.tuple(fc.nat(), fc.constantFrom(...countFields), fc.constantFrom(-1, 1))
    .map(([index, field, delta]): StatusMutation => (status) => {
      const reporter = pick(status.reporters, index);
      if (reporter) reporter[field] = (reporter[field] as number) + delta;
    }),
  // the same hostile value in every count but `failed` (e.g. all undefined or all NaN)
  fc.tuple(fc.nat(), hostileNumber, fc.boolean())
    .map(([index, value, onReporter]): StatusMutation => (status) => {
      const target = onReporter ? pick(status.reporters, index) : status;
      if (!target) return;
      for (const field of countFields) target[field] = field === 'failedReplicaCount' ? 0 : value;
    }),
  fc.tuple(fc.nat(), fc.constantFrom<unknown>('other-rollout', '', undefined))
    .map(([index, value]): StatusMutation => (status) => {
      const reporter = pick(status.reporters, index);
      if (reporter) reporter.rolloutId = value;
    }),
  fc.tuple(fc.nat(), hostileNumber)
    .map(([index, value]): StatusMutation => (status) => {
      const reporter = pick(status.reporters, index);
      if (reporter) reporter.rolloutGeneration = value;
    }),
  fc.tuple(fc.nat(), fc.nat(), fc.constantFrom('reporterId', 'reporterSessionId'))
    .map(([from, to, field]): StatusMutation => (status) => {
      const source = pick(status.reporters, from);
      const target = pick(status.reporters, to);
      if (source && target) target[field] = source[field];
    }),
  fc.tuple(fc.nat(), fc.nat())
    .map(([from, to]): StatusMutation => (status) => {
      const source = pick(status.reporters, from);
      const target = pick(status.reporters, to);
      const names = source ? asArray(source.reporterNodeNames) : undefined;
      const targetNames = target ? asArray(target.reporterNodeNames) : undefined;
      if (target && names && targetNames && names.length > 0) target.reporterNodeNames = [...targetNames, names[0]];
    }),
  fc.tuple(fc.nat(), hostileIdList)
    .map(([index, value]): StatusMutation => (status) => {
      const reporter = pick(status.reporters, index);
      if (reporter) reporter.reporterNodeNames = [...value];
    }),
  mismatchReasonValue.map((value): StatusMutation => (status) => {
    if (value === '<delete>') delete status.mismatchReason;
    else status.mismatchReason = value;
  }),
  fc.tuple(fc.nat(), mismatchReasonValue)
    .map(([index, value]): StatusMutation => (status) => {
      const reporter = pick(status.reporters, index);
      if (!reporter) return;
      if (value === '<delete>') delete reporter.mismatchReason;
      else reporter.mismatchReason = value;
    }),
  fc.constantFrom<unknown>(...immutableImageRolloutStatuses, 'SUCCEEDED', '', undefined)
    .map((value): StatusMutation => (status) => { status.status = value; }),
  fc.constantFrom<StatusMutation>(
    (status) => { status.reporters = []; },
    (status) => { status.reporters = status.reporters.slice(1); },
    (status) => {
      const first = status.reporters[0];
      if (first) status.reporters = [...status.reporters, { ...first }];
    },
    // re-derive the aggregate from the (possibly mutated) reporters, as a server would
    (status) => {
      for (const field of countFields) {
        status[field] = status.reporters.reduce<unknown>((sum, r) => (sum as number) + (r[field] as number), 0);
      }
    },
  ),
);

/** A consistent status with zero to four mutations applied to a deep copy. */
export const statusInput: fc.Arbitrary<IImageRolloutStatus> = fc
  .tuple(consistentStatus, mutationsOf(statusMutation))
  .map(([status, mutations]) => {
    const copy: LooseStatus = {
      ...status,
      reporters: status.reporters.map((reporter) => ({ ...reporter, reporterNodeNames: [...reporter.reporterNodeNames] })),
    };
    for (const mutate of mutations) mutate(copy);
    return loose<IImageRolloutStatus>(copy);
  });
