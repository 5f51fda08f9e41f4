/**
 * Parity of src/contracts/helpers.ts with upstream `@serve.zone/interfaces` 11.3.0.
 * The reference below is a verbatim transcription of upstream's helpers (test-only);
 * the properties compare ours with it on thousands of generated inputs: return
 * values, thrown errors (type and message) and error arrays (content and order).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as ours from '../../../src/contracts/helpers.js';
import type {
  IImageRolloutStatus,
  IImmutableImageDeploymentPlan,
  TSha256Digest,
} from '../../../src/contracts/index.js';
import {
  digestArg,
  digestLike,
  hostArg,
  loose,
  nonString,
  pinnedReferenceLike,
  planInput,
  repositoryArg,
  statusInput,
  validPlan,
} from './arbitraries.js';

// ---- Reference: upstream immutableimage.ts helpers, transcribed verbatim ----------------------

const sha256DigestRegex = /^sha256:[a-f0-9]{64}$/;

const normalizeSha256Digest = (digest: string): TSha256Digest | undefined => {
  const normalizedDigest = digest.trim().toLowerCase();
  return sha256DigestRegex.test(normalizedDigest)
    ? (normalizedDigest as TSha256Digest)
    : undefined;
};

const isSha256Digest = (digest: string): digest is TSha256Digest =>
  sha256DigestRegex.test(digest);

const registryHostRegex = /^(?:localhost|[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)(?::[1-9][0-9]{0,4})?$/;
const repositoryRegex = /^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*$/;

const buildDigestPinnedImageReference = (
  registryHost: string,
  repository: string,
  digest: TSha256Digest
): string => {
  if (!registryHostRegex.test(registryHost) || !repositoryRegex.test(repository)) {
    throw new Error('registry host and repository must be canonical OCI names');
  }
  if (!isSha256Digest(digest)) {
    throw new Error('digest must be a canonical sha256 digest');
  }
  return `${registryHost}/${repository}@${digest}`;
};

const getDigestFromPinnedImageReference = (
  imageReference: string
): TSha256Digest | undefined => {
  const separatorIndex = imageReference.lastIndexOf('@');
  if (separatorIndex < 0) {
    return undefined;
  }
  return normalizeSha256Digest(imageReference.slice(separatorIndex + 1));
};

const validateImmutableImageDeploymentPlan = (
  planArg: IImmutableImageDeploymentPlan
): string[] => {
  const errors: string[] = [];
  if (!Number.isSafeInteger(planArg.rolloutGeneration) || planArg.rolloutGeneration < 1) {
    errors.push('rolloutGeneration must be a positive safe integer');
  }
  if (!Number.isSafeInteger(planArg.createdAt) || planArg.createdAt < 1) {
    errors.push('createdAt must be a positive safe integer');
  }
  let expectedReference: string | undefined;
  try {
    expectedReference = buildDigestPinnedImageReference(
      planArg.registryHost,
      planArg.repository,
      planArg.requestedDigest
    );
  } catch (error) {
    errors.push((error as Error).message);
  }
  if (expectedReference && planArg.digestPinnedImageReference !== expectedReference) {
    errors.push('digestPinnedImageReference does not match registry, repository and digest');
  }
  const scope = planArg.targetScope;
  if (!Number.isSafeInteger(scope.replicasPerNode) || scope.replicasPerNode < 1) {
    errors.push('replicasPerNode must be a positive safe integer');
  }
  if (scope.targetClusterIds.length < 1 || scope.targetNodeNames.length < 1) {
    errors.push('immutable rollout target scope must contain clusters and nodes');
  }
  if (new Set(scope.targetClusterIds).size !== scope.targetClusterIds.length
    || new Set(scope.targetNodeNames).size !== scope.targetNodeNames.length) {
    errors.push('immutable rollout target scope must not contain duplicates');
  }
  if (scope.requiredReplicaCount !== scope.targetNodeNames.length * scope.replicasPerNode) {
    errors.push('requiredReplicaCount does not match target nodes and replicasPerNode');
  }
  if (planArg.mode === 'rollback' && !planArg.rollbackOfRolloutId) {
    errors.push('rollback rollout must identify the rollout it replaces');
  }
  if (planArg.mode !== 'rollback' && planArg.rollbackOfRolloutId) {
    errors.push('only rollback rollouts may set rollbackOfRolloutId');
  }
  return errors;
};

const validateImageRolloutStatus = (statusArg: IImageRolloutStatus): string[] => {
  const errors: string[] = [];
  const counts = [
    statusArg.requiredReplicaCount,
    statusArg.observedReplicaCount,
    statusArg.healthyReplicaCount,
    statusArg.verifiedReplicaCount,
    statusArg.failedReplicaCount,
  ];
  if (counts.some((countArg) => !Number.isSafeInteger(countArg) || countArg < 0)) {
    errors.push('rollout replica counts must be non-negative safe integers');
  }
  const reporterIds = statusArg.reporters.map((reporterArg) => reporterArg.reporterId);
  const reporterSessionIds = statusArg.reporters.map((reporterArg) => reporterArg.reporterSessionId);
  const reporterNodeNames = statusArg.reporters.flatMap(
    (reporterArg) => reporterArg.reporterNodeNames
  );
  if (new Set(reporterIds).size !== reporterIds.length
    || new Set(reporterSessionIds).size !== reporterSessionIds.length) {
    errors.push('rollout status must contain one latest report per reporter and session');
  }
  for (const reporter of statusArg.reporters) {
    const reporterCounts = [
      reporter.requiredReplicaCount,
      reporter.observedReplicaCount,
      reporter.healthyReplicaCount,
      reporter.verifiedReplicaCount,
      reporter.failedReplicaCount,
    ];
    if (reporterCounts.some((countArg) => !Number.isSafeInteger(countArg) || countArg < 0)) {
      errors.push('reporter replica counts must be non-negative safe integers');
    }
    if (reporter.rolloutId !== statusArg.rolloutId
      || reporter.rolloutGeneration !== statusArg.rolloutGeneration) {
      errors.push('reporter rollout identity does not match aggregate rollout identity');
    }
    if (
      reporter.observedReplicaCount > reporter.requiredReplicaCount
      || reporter.healthyReplicaCount > reporter.observedReplicaCount
      || reporter.verifiedReplicaCount > reporter.observedReplicaCount
    ) {
      errors.push('reporter replica counts are contradictory');
    }
  }
  if (statusArg.status === 'succeeded' || statusArg.status === 'rolled-back') {
    if (
      statusArg.requiredReplicaCount < 1
      || statusArg.observedReplicaCount !== statusArg.requiredReplicaCount
      || statusArg.healthyReplicaCount !== statusArg.requiredReplicaCount
      || statusArg.verifiedReplicaCount !== statusArg.requiredReplicaCount
      || statusArg.failedReplicaCount !== 0
    ) {
      errors.push('successful rollout status requires every replica to be observed, healthy and verified');
    }
    if (statusArg.mismatchReason || statusArg.reporters.length < 1) {
      errors.push('successful rollout status requires reporters without mismatch reasons');
    }
    if (new Set(reporterNodeNames).size !== reporterNodeNames.length) {
      errors.push('successful rollout status must not count a node in multiple reporters');
    }
    if (statusArg.reporters.some((reporterArg) => (
      reporterArg.requiredReplicaCount < 1
      || reporterArg.observedReplicaCount !== reporterArg.requiredReplicaCount
      || reporterArg.healthyReplicaCount !== reporterArg.requiredReplicaCount
      || reporterArg.verifiedReplicaCount !== reporterArg.requiredReplicaCount
      || reporterArg.failedReplicaCount !== 0
      || Boolean(reporterArg.mismatchReason)
    ))) {
      errors.push('successful rollout requires every reporter replica to be healthy and verified');
    }
    const reporterTotals = statusArg.reporters.reduce((totalsArg, reporterArg) => ({
      required: totalsArg.required + reporterArg.requiredReplicaCount,
      observed: totalsArg.observed + reporterArg.observedReplicaCount,
      healthy: totalsArg.healthy + reporterArg.healthyReplicaCount,
      verified: totalsArg.verified + reporterArg.verifiedReplicaCount,
      failed: totalsArg.failed + reporterArg.failedReplicaCount,
    }), { required: 0, observed: 0, healthy: 0, verified: 0, failed: 0 });
    if (
      reporterTotals.required !== statusArg.requiredReplicaCount
      || reporterTotals.observed !== statusArg.observedReplicaCount
      || reporterTotals.healthy !== statusArg.healthyReplicaCount
      || reporterTotals.verified !== statusArg.verifiedReplicaCount
      || reporterTotals.failed !== statusArg.failedReplicaCount
    ) {
      errors.push('successful rollout aggregate must exactly match successful reporter evidence');
    }
  }
  return errors;
};

// ---- Comparison harness -------------------------------------------------------------------------

type Outcome =
  | { ok: true; value: unknown }
  | { ok: false; errorType: string; message: unknown };

/** The observable result of a call: its value, or the error's type and message. */
const outcome = (call: () => unknown): Outcome => {
  try {
    return { ok: true, value: call() };
  } catch (error) {
    return error instanceof Error
      ? { ok: false, errorType: error.constructor.name, message: error.message }
      : { ok: false, errorType: typeof error, message: error };
  }
};

const RUNS = 5000;

/** Counts how often the reference produced each classification, for coverage assertions. */
class Tally {
  readonly counts = new Map<string, number>();
  add (label: string): void {
    this.counts.set(label, (this.counts.get(label) ?? 0) + 1);
  }

  share (label: string): number {
    let total = 0;
    for (const count of this.counts.values()) total += count;
    return (this.counts.get(label) ?? 0) / total;
  }

  has (label: string): boolean {
    return this.counts.has(label);
  }
}

const classify = (result: Outcome): string => {
  if (!result.ok) return 'threw';
  if (result.value === undefined) return 'undefined';
  if (Array.isArray(result.value)) return result.value.length === 0 ? 'valid' : 'invalid';
  return 'value';
};

const digestInput = fc.oneof({ arbitrary: digestLike, weight: 12 }, { arbitrary: nonString, weight: 1 });

// ---- Properties ---------------------------------------------------------------------------------

describe('helpers behave exactly like upstream (property-based)', () => {
  it('normalizeSha256Digest', () => {
    const tally = new Tally();
    fc.assert(fc.property(digestInput, (digest) => {
      const expected = outcome(() => normalizeSha256Digest(loose<string>(digest)));
      expect(outcome(() => ours.normalizeSha256Digest(loose<string>(digest)))).toStrictEqual(expected);
      tally.add(classify(expected));
    }), { numRuns: RUNS });
    expect(tally.share('value')).toBeGreaterThan(0.2);
    expect(tally.share('undefined')).toBeGreaterThan(0.2);
    expect(tally.has('threw')).toBe(true);
  });

  it('isSha256Digest', () => {
    const tally = new Tally();
    fc.assert(fc.property(digestInput, (digest) => {
      const expected = outcome(() => isSha256Digest(loose<string>(digest)));
      expect(outcome(() => ours.isSha256Digest(loose<string>(digest)))).toStrictEqual(expected);
      tally.add(String(expected.ok && expected.value));
    }), { numRuns: RUNS });
    expect(tally.share('true')).toBeGreaterThan(0.2);
    expect(tally.share('false')).toBeGreaterThan(0.2);
  });

  it('buildDigestPinnedImageReference', () => {
    const tally = new Tally();
    fc.assert(fc.property(hostArg, repositoryArg, digestArg, (host, repository, digest) => {
      const expected = outcome(() => buildDigestPinnedImageReference(
        loose<string>(host), loose<string>(repository), loose<TSha256Digest>(digest),
      ));
      const actual = outcome(() => ours.buildDigestPinnedImageReference(
        loose<string>(host), loose<string>(repository), loose<TSha256Digest>(digest),
      ));
      expect(actual).toStrictEqual(expected);
      tally.add(expected.ok ? 'built' : String(expected.message));
    }), { numRuns: RUNS });
    expect(tally.share('built')).toBeGreaterThan(0.1);
    expect(tally.share('registry host and repository must be canonical OCI names')).toBeGreaterThan(0.1);
    expect(tally.share('digest must be a canonical sha256 digest')).toBeGreaterThan(0.1);
  });

  it('getDigestFromPinnedImageReference', () => {
    const tally = new Tally();
    const input = fc.oneof({ arbitrary: pinnedReferenceLike, weight: 12 }, { arbitrary: nonString, weight: 1 });
    fc.assert(fc.property(input, (reference) => {
      const expected = outcome(() => getDigestFromPinnedImageReference(loose<string>(reference)));
      expect(outcome(() => ours.getDigestFromPinnedImageReference(loose<string>(reference)))).toStrictEqual(expected);
      tally.add(classify(expected));
    }), { numRuns: RUNS });
    expect(tally.share('value')).toBeGreaterThan(0.2);
    expect(tally.share('undefined')).toBeGreaterThan(0.2);
  });

  it('validateImmutableImageDeploymentPlan', () => {
    const tally = new Tally();
    const messages = new Set<string>();
    const modes = new Set<string>();
    fc.assert(fc.property(planInput, (plan) => {
      const expected = outcome(() => validateImmutableImageDeploymentPlan(plan));
      expect(outcome(() => ours.validateImmutableImageDeploymentPlan(plan))).toStrictEqual(expected);
      tally.add(classify(expected));
      if (expected.ok) for (const message of expected.value as string[]) messages.add(message);
      modes.add(`${String(plan.mode)}/${'rollbackOfRolloutId' in plan ? 'with' : 'without'}`);
    }), { numRuns: RUNS });
    expect(tally.share('valid')).toBeGreaterThan(0.1);
    expect(tally.share('invalid')).toBeGreaterThan(0.3);
    // every upstream message was produced at least once (plus, for Symbol hosts, the
    // TypeError message that upstream's catch block turns into an error string)
    for (const message of [...Object.values(ours.planValidationMessages), ...Object.values(ours.referenceErrorMessages)]) {
      expect(messages).toContain(message);
    }
    for (const mode of ['promotion', 'automatic', 'rollback']) {
      expect(modes).toContain(`${mode}/with`);
      expect(modes).toContain(`${mode}/without`);
    }
  });

  it('validateImmutableImageDeploymentPlan accepts every generated valid plan', () => {
    fc.assert(fc.property(validPlan, (plan) => {
      expect(validateImmutableImageDeploymentPlan(plan)).toStrictEqual([]);
      expect(ours.validateImmutableImageDeploymentPlan(plan)).toStrictEqual([]);
      expect(ours.getDigestFromPinnedImageReference(plan.digestPinnedImageReference)).toBe(plan.requestedDigest);
    }), { numRuns: 2000 });
  });

  it('validateImageRolloutStatus', () => {
    const tally = new Tally();
    const messages = new Set<string>();
    fc.assert(fc.property(statusInput, (status) => {
      const expected = outcome(() => validateImageRolloutStatus(status));
      expect(outcome(() => ours.validateImageRolloutStatus(status))).toStrictEqual(expected);
      const successful = status.status === 'succeeded' || status.status === 'rolled-back';
      tally.add(`${successful ? 'success' : 'other'}:${classify(expected)}`);
      if (expected.ok) for (const message of expected.value as string[]) messages.add(message);
    }), { numRuns: RUNS });
    // both branches of the success rules are exercised, and a real share passes them
    expect(tally.share('success:valid')).toBeGreaterThan(0.1);
    expect(tally.share('success:invalid')).toBeGreaterThan(0.1);
    expect(tally.share('other:valid')).toBeGreaterThan(0.05);
    expect(tally.share('other:invalid')).toBeGreaterThan(0.05);
    expect([...messages].sort()).toStrictEqual(Object.values(ours.statusValidationMessages).sort());
  });

  it('validators fail the same way on structurally broken input', () => {
    const junk = fc.oneof(fc.anything(), fc.constant(undefined), fc.constant(null));
    const brokenPlan = fc.tuple(planInput, fc.constantFrom('targetScope', 'planArg', 'targetClusterIds', 'targetNodeNames'), junk)
      .map(([plan, where, value]): unknown => {
        if (where === 'planArg') return value;
        if (where === 'targetScope') return { ...plan, targetScope: value };
        return { ...plan, targetScope: { ...plan.targetScope, [where]: value } };
      });
    const brokenStatus = fc.tuple(statusInput, fc.constantFrom('reporters', 'statusArg', 'reporter', 'reporterNodeNames'), junk)
      .map(([status, where, value]): unknown => {
        if (where === 'statusArg') return value;
        if (where === 'reporters') return { ...status, reporters: value };
        if (where === 'reporter') return { ...status, reporters: [...status.reporters, value] };
        return { ...status, reporters: status.reporters.map((r) => ({ ...r, reporterNodeNames: value })) };
      });
    fc.assert(fc.property(brokenPlan, (plan) => {
      expect(outcome(() => ours.validateImmutableImageDeploymentPlan(loose(plan))))
        .toStrictEqual(outcome(() => validateImmutableImageDeploymentPlan(loose(plan))));
    }), { numRuns: 2000 });
    fc.assert(fc.property(brokenStatus, (status) => {
      expect(outcome(() => ours.validateImageRolloutStatus(loose(status))))
        .toStrictEqual(outcome(() => validateImageRolloutStatus(loose(status))));
    }), { numRuns: 2000 });
  });
});
