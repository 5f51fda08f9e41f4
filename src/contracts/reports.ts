/**
 * The input schema this service accepts for `reportDeploymentSnapshots`: the
 * upstream request, except that each replica's `runtimeImageEvidence` is read
 * leniently (every field optional, any `verificationStatus`). The server never
 * trusts a reporter's verification claim — it recomputes it from the raw fields —
 * so a forged or incomplete claim must reach the verifier and become a replica
 * `mismatched` with the exact reason, instead of failing the whole report as a
 * schema error (digests are therefore plain bounded strings here: a malformed one
 * is a mismatch reason, not a 400). Every request valid under the upstream schema is valid here
 * (test/contracts checks the assignability).
 */
import { Type, type Static } from '@sinclair/typebox';
import { Id, NonNegativeSafeInteger, Reference, Timestamp, contractLimits, strictObject } from './common.js';
import { IDeployment } from './deployment.js';
import {
  IImmutableRolloutReportEnvelope, TImmutableImageMismatchReason, TRuntimeImageVerificationStatus,
} from './immutableImage.js';
import { literalUnion } from './literals.js';
import { ReportDeploymentSnapshotsRequest } from './requests.js';

export const ReportedRuntimeImageEvidence = strictObject({
  rolloutId: Type.Optional(Id),
  rolloutGeneration: Type.Optional(NonNegativeSafeInteger),
  expectedDigest: Type.Optional(Type.String({ maxLength: contractLimits.referenceLength })),
  serviceImageReference: Type.Optional(Reference),
  taskImageReference: Type.Optional(Reference),
  taskReportedDigest: Type.Optional(Type.String({ maxLength: contractLimits.referenceLength })),
  containerImageId: Type.Optional(Id),
  containerConfigImageReference: Type.Optional(Reference),
  resolvedDigest: Type.Optional(Type.String({ maxLength: contractLimits.referenceLength })),
  platformManifestDigest: Type.Optional(Type.String({ maxLength: contractLimits.referenceLength })),
  repoDigests: Type.Optional(Type.Array(Reference, { maxItems: contractLimits.repoDigests })),
  evidenceSource: Type.Optional(literalUnion(['task-spec', 'local-container-inspect'])),
  observedAt: Timestamp,
  /** The reporter's claim: accepted as input, never believed. */
  verificationStatus: TRuntimeImageVerificationStatus,
  mismatchReason: Type.Optional(TImmutableImageMismatchReason),
});
export type ReportedRuntimeImageEvidence = Static<typeof ReportedRuntimeImageEvidence>;

export const ReportedDeployment = Type.Composite([
  Type.Omit(IDeployment, ['runtimeImageEvidence']),
  Type.Object({ runtimeImageEvidence: Type.Optional(ReportedRuntimeImageEvidence) }),
], { additionalProperties: false });
export type ReportedDeployment = Static<typeof ReportedDeployment>;

/** The report payload (the upstream request without `identity`), evidence read leniently. */
export const ReportDeploymentSnapshotsInput = Type.Composite([
  Type.Omit(ReportDeploymentSnapshotsRequest, ['identity', 'deployments', 'immutableReport']),
  Type.Object({
    deployments: Type.Array(ReportedDeployment, { maxItems: contractLimits.deploymentsPerReport }),
    immutableReport: Type.Optional(IImmutableRolloutReportEnvelope),
  }),
], { additionalProperties: false });
export type ReportDeploymentSnapshotsInput = Static<typeof ReportDeploymentSnapshotsInput>;
