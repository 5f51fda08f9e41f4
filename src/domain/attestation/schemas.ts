import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Id, Name, Reference, contractLimits } from '../../contracts/common.js';
import { TImmutableImageMismatchReason, TImmutableImageRolloutMode } from '../../contracts/immutableImage.js';
import { literalUnion } from '../../contracts/literals.js';

/**
 * The in-toto Statement v1 and the predicates this project signs (docs/attestations.md shows each
 * with a real example). Two predicates are this project's own, strict (an unknown member is refused:
 * a new member is a new version of the predicate type); the SVR is in-toto's Simple Verification
 * Result v0.2, read by its spec's parsing rules (members it does not define are ignored).
 */

export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
export const RUNTIME_VERIFICATION_TYPE = 'https://serve.zone/cloudly-release/runtime-verification/v1';
export const REVOCATION_TYPE = 'https://serve.zone/cloudly-release/revocation/v1';
export const SVR_TYPE = 'https://in-toto.io/attestation/svr/v0.2';
export const VSA_TYPE = 'https://slsa.dev/verification_summary/v1';

/** The identity an SVR names as its verifier (versioned: it changes when what is verified changes). */
export const VERIFIER_ID = 'https://serve.zone/cloudly-release/verifier/v1';

const strict = <T extends Parameters<typeof Type.Object>[0]>(properties: T, description?: string) =>
  Type.Object(properties, { additionalProperties: false, ...(description ? { description } : {}) });

/** RFC 3339 in UTC, as `Date.prototype.toISOString` writes it (in-toto's Timestamp field type). */
export const Rfc3339 = Type.String({
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?Z$',
  description: 'RFC 3339 timestamp in UTC',
});

export const Sha256Hex = Type.String({ pattern: '^[a-f0-9]{64}$', description: 'lower-case hex sha256' });
export const DigestSet = strict({ sha256: Sha256Hex }, 'an in-toto DigestSet with its sha256 entry');
export type DigestSet = Static<typeof DigestSet>;
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Sha256Digest = Type.String({ pattern: '^sha256:[a-f0-9]{64}$' });

/** in-toto ResourceDescriptor, as the Statement's subject uses it (members it does not know are kept). */
export const ResourceDescriptor = Type.Object({
  name: Type.Optional(Type.String()),
  uri: Type.Optional(Type.String()),
  digest: Type.Optional(Type.Record(Type.String(), Type.String())),
});

export const Statement = Type.Object({
  _type: Type.Literal(STATEMENT_TYPE),
  subject: Type.Array(ResourceDescriptor, { minItems: 1 }),
  predicateType: Type.String({ minLength: 1 }),
  predicate: Type.Optional(Type.Unknown()),
});
export type Statement = Static<typeof Statement>;

/** The hash chain of a service's attestations (runtime verifications and revocations, in issue order). */
export const ChainLink = strict({
  sequence: Type.Integer({ minimum: 1, description: 'position in the service\'s chain, from 1' }),
  previousEnvelopeDigest: Type.Union([DigestSet, Type.Null()], {
    description: 'sha256 of the canonical JSON of the service\'s previous attestation envelope; null for the first',
  }),
});
export type ChainLink = Static<typeof ChainLink>;

const ServiceRef = strict({ id: Id, name: Name });
/** A principal's subject, as its token names it. */
const Subject = Type.String({ minLength: 1, maxLength: 512 });
const Reporter = strict({ id: Id, sessionId: Id });

export const ReplicaEvidence = strict({
  nodeName: Name,
  deploymentId: Id,
  slot: Type.Optional(Type.Integer({ minimum: 1, description: 'the replica slot on its node, from 1' })),
  containerImageId: Id,
  repoDigests: Type.Array(Reference, { minItems: 1, maxItems: contractLimits.repoDigests }),
  resolvedDigest: Type.Optional(Sha256Digest),
  verifiedSince: Rfc3339,
  reporter: Reporter,
});
export type ReplicaEvidence = Static<typeof ReplicaEvidence>;

export const RuntimeVerificationPredicate = strict({
  service: ServiceRef,
  rollout: strict({
    id: Id,
    generation: Type.Integer({ minimum: 1 }),
    mode: TImmutableImageRolloutMode,
    releaseId: Id,
    rollbackOfRolloutId: Type.Optional(Id),
    approval: Type.Optional(strict({
      requestId: Id,
      requestedBy: Subject,
      approvedBy: Type.Array(Subject, { minItems: 1, maxItems: 100 }),
    }, 'the promotion request whose approvals issued the rollout: its requester and approvers (subjects)')),
    breakGlass: Type.Optional(strict({
      grantId: Id,
      requestedBy: Subject,
      approvedBy: Subject,
      reason: Type.String({ maxLength: 1024 }),
    }, 'the break-glass grant the promotion passed a closed window with')),
  }),
  outcome: literalUnion(['succeeded', 'rolled-back']),
  planDigest: DigestSet,
  policyDigests: strict({ rolloutPolicy: DigestSet, trustPolicy: Nullable(DigestSet) }),
  targetScope: strict({
    nodeNames: Type.Array(Name, { minItems: 1, maxItems: contractLimits.nodes }),
    replicasPerNode: Type.Integer({ minimum: 1 }),
    requiredReplicaCount: Type.Integer({ minimum: 1 }),
  }),
  replicas: Type.Array(ReplicaEvidence, { minItems: 1, maxItems: contractLimits.nodes * contractLimits.replicas }),
  signatureVerification: Type.Union([strict({ predicateType: Type.Literal(VSA_TYPE), envelopeDigest: DigestSet }), Type.Null()], {
    description: 'the SLSA verification summary the promotion relied on (its envelope digest); null when the service has no trust policy',
  }),
  verifiedAt: Rfc3339,
  chain: ChainLink,
}, 'what the server verified running: every required replica\'s evidence, under which plan and policies');
export type RuntimeVerificationPredicate = Static<typeof RuntimeVerificationPredicate>;

export const driftKinds = ['replica-mismatched', 'replica-failed', 'replica-missing'] as const;
export const DriftEvidence = strict({
  nodeName: Name,
  deploymentId: Type.Optional(Id),
  state: literalUnion(['mismatched', 'failed', 'missing']),
  mismatchReason: Type.Optional(TImmutableImageMismatchReason),
  containerImageId: Type.Optional(Id),
  repoDigests: Type.Optional(Type.Array(Reference, { maxItems: contractLimits.repoDigests })),
  resolvedDigest: Type.Optional(Sha256Digest),
  observedAt: Rfc3339,
  reporter: Type.Optional(Reporter),
});
export type DriftEvidence = Static<typeof DriftEvidence>;

export const RevocationPredicate = strict({
  service: ServiceRef,
  rollout: strict({ id: Id, generation: Type.Integer({ minimum: 1 }) }),
  revokes: strict({ attestationId: Id, envelopeDigest: DigestSet, predicateType: Type.Literal(RUNTIME_VERIFICATION_TYPE) }),
  reason: strict({
    kind: literalUnion(driftKinds),
    mismatchReason: Type.Optional(TImmutableImageMismatchReason),
    detail: Type.String({ minLength: 1, maxLength: contractLimits.descriptionLength }),
  }),
  evidence: Type.Array(DriftEvidence, { minItems: 1, maxItems: contractLimits.nodes * contractLimits.replicas }),
  revokedAt: Rfc3339,
  chain: ChainLink,
}, 'a succeeded rollout no longer satisfies its evidence: the attestation it revokes, why, and the replicas that drifted');
export type RevocationPredicate = Static<typeof RevocationPredicate>;

/** in-toto Simple Verification Result v0.2 (github.com/in-toto/attestation spec/predicates/svr.md). */
export const SvrPredicate = Type.Object({
  verifier: Type.Object({
    id: Type.String({ minLength: 1 }),
    policies: Type.Array(ResourceDescriptor, { description: 'required by v0.2; [] when no policy can be referenced' }),
  }),
  timeCreated: Rfc3339,
  properties: Type.Array(Type.String({ minLength: 1 })),
});
export type SvrPredicate = Static<typeof SvrPredicate>;

/** The SVR properties this server asserts (prefixed, as the SVR spec asks). */
export const svrProperties = {
  runtimeVerified: 'CLOUDLY_RELEASE_RUNTIME_VERIFIED',
  rollbackRuntimeVerified: 'CLOUDLY_RELEASE_ROLLBACK_RUNTIME_VERIFIED',
  allRequiredReplicasVerified: 'CLOUDLY_RELEASE_ALL_REQUIRED_REPLICAS_VERIFIED',
  signaturesVerified: 'CLOUDLY_RELEASE_SIGNATURES_VERIFIED_BEFORE_PROMOTION',
} as const;

export const predicateSchemas = {
  [RUNTIME_VERIFICATION_TYPE]: RuntimeVerificationPredicate,
  [REVOCATION_TYPE]: RevocationPredicate,
  [SVR_TYPE]: SvrPredicate,
} as const;
export type KnownPredicateType = keyof typeof predicateSchemas;
export const knownPredicateTypes = Object.keys(predicateSchemas) as KnownPredicateType[];
export const isKnownPredicateType = (value: string): value is KnownPredicateType => Object.hasOwn(predicateSchemas, value);

/** The kind an attestation is listed as (AttestationView.kind), by its predicate type. */
export const attestationKinds = { [RUNTIME_VERIFICATION_TYPE]: 'runtime-verification', [REVOCATION_TYPE]: 'revocation' } as const;
