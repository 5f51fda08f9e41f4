import {
  attachRetryDelayMs, attestationEvent, attestationIdOf, attestationLayer, attestationViewOf, DSSE_LAYER_MEDIA_TYPE, requiredReplicaEvidence,
  revocationStatement, runtimeVerificationStatement, signStatement, svrStatement, type AttestationDue, type AttestationKeyList, type AttestationPage,
  type AttestationRecord, type AttestationView, type ChainHead, type SignedEnvelope, type StatementOf,
} from '../domain/attestation/index.js';
import { effectiveRolloutPolicy } from '../domain/lifecycle.js';
import type { AttestationRegistry, DueAttestations } from '../domain/ports/attestations.js';
import type { ArtifactToAttach, ImageLocator } from '../domain/ports/registry.js';
import type { Clock, Repositories } from '../domain/ports/index.js';
import type { AttestationSigner } from '../domain/ports/signer.js';
import { invalid, refusal, success, type Result } from '../domain/result.js';
import { errors } from '../errors.js';
import type { FaultHook } from '../faults.js';
import type { LifecycleLog } from './lifecycle.js';
import { relayQuietly } from './statusEvents.js';

/**
 * Signed runtime-verification attestations and revocations (docs/attestations.md "Issuance"):
 * worked off the dues the milestone writes leave on the service document, in order, each exactly
 * once whichever processes issue at once and whatever crashes between (the dues stay until the
 * attestation is stored; the stored attestation is found by its id on a retry). Issued right after
 * the milestone by the process that decided it, else by the next sweep of any process.
 */

export interface AttestationDeps {
  repos: Pick<Repositories, 'attestations' | 'attestationDues' | 'events' | 'reports' | 'rollouts' | 'catalogue'>;
  /** The server's signing key; undefined: no key configured, nothing is issued (the dues are dropped, said once in the log). */
  signer: AttestationSigner | undefined;
  now: Clock;
  log: LifecycleLog;
  /** Crash injection (tests): `after-attestation-insert`. */
  fault?: FaultHook;
  /** Where attestations are attached to their images, when the image's registry allows writes (best effort, retried by the sweeper). */
  registry?: AttestationRegistry;
}

/** Where an attestation's image lives: `host/repository@sha256:…`. */
export function imageLocatorOf (image: string): ImageLocator {
  const [name = '', digest = ''] = image.split('@');
  const slash = name.indexOf('/');
  return { registryHost: name.slice(0, slash), repository: name.slice(slash + 1), digest };
}

/**
 * The attestation as layers of cosign's `.att` image (one per envelope: the runtime verification and its
 * SVR, or the revocation) — what `cosign verify-attestation --key` reads — also pushed as an OCI 1.1 referrer.
 */
function attestationArtifact (record: AttestationRecord): ArtifactToAttach {
  const envelopes = [record.envelope, ...(record.summaryEnvelope === undefined ? [] : [record.summaryEnvelope])];
  const layers = envelopes.map((envelope) => {
    const statement = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as { predicateType: string };
    const blob = attestationLayer(envelope, statement.predicateType);
    return { mediaType: blob.descriptor.mediaType, bytes: blob.bytes, ...(blob.descriptor.annotations ? { annotations: blob.descriptor.annotations } : {}) };
  });
  return { artifactType: COSIGN_ATTESTATION_ARTIFACT_TYPE, layers };
}

const COSIGN_ATTESTATION_ARTIFACT_TYPE = 'application/vnd.dev.cosign.artifact.att.v1+json';

async function attachToRegistry (registry: AttestationRegistry, record: AttestationRecord): Promise<void> {
  const image = imageLocatorOf(record.image);
  const artifact = attestationArtifact(record);
  await registry.attach(image, artifact, { kind: 'cosign-tag', suffix: 'att' });
  await registry.attach(image, { ...artifact, artifactType: DSSE_LAYER_MEDIA_TYPE }, { kind: 'referrer' });
}

/** Rounds of read head → sign → insert an issue takes against other attestations taking the same place. */
const MAX_ROUNDS = 8;
/** Services with dues, and pending attachments, handled per sweep at most. */
const SWEEP_MAX = 500;

/** What one due came to: the stored attestation (issued here or before), or why none. */
type Outcome = { record: AttestationRecord, issuedHere: boolean } | { skipped: string };

interface Built { statement: StatementOf<unknown>, summary?: StatementOf<unknown>, revokes?: string }

const headOf = (record: AttestationRecord | null): ChainHead | null => record === null ? null : { sequence: record.sequence, envelopeDigest: record.digest };

/** The statement a due asks for, on top of `previous`; a string: why none can be made. */
async function statementOf (deps: AttestationDeps, facts: DueAttestations, due: AttestationDue, previous: ChainHead | null): Promise<Built | string> {
  const rollout = await deps.repos.rollouts.findByGeneration(facts.serviceId, due.generation);
  if (rollout === null || rollout.rolloutId !== due.rolloutId) return `rollout '${due.rolloutId}' is not in the history`;
  const plan = rollout.plan;
  const service = { id: facts.serviceId, name: facts.name };
  if (due.kind === 'revocation') {
    const revoked = await deps.repos.attestations.find(facts.serviceId, attestationIdOf(facts.serviceId, due.rolloutId, 'runtime-verification'));
    if (revoked === null) return 'the rollout has no runtime-verification attestation to revoke';
    if (previous === null || due.drift === undefined) return 'a revocation needs the chain and the drift';
    const statement = revocationStatement({
      service,
      plan,
      revokes: { attestationId: revoked.id, envelopeDigest: revoked.digest },
      reason: due.drift.reason,
      evidence: due.drift.evidence,
      revokedAt: due.at,
      previous,
    });
    return { statement, revokes: revoked.id };
  }
  const replicas = requiredReplicaEvidence(plan, await deps.repos.reports.findRolloutRecords(plan.rolloutId, plan.targetScope.targetNodeNames));
  if (replicas === undefined) return 'the rollout\'s report records no longer show every required replica verified (it drifted, or they were removed)';
  const statement = runtimeVerificationStatement({
    service,
    plan,
    outcome: plan.mode === 'rollback' ? 'rolled-back' : 'succeeded',
    rolloutPolicy: effectiveRolloutPolicy(facts.rolloutPolicy),
    trustPolicy: facts.trustPolicy,
    replicas,
    // The signed VSA the trust check let the rollout through on (fresh from the registry, or the release's stored one
    // for a rollback): the same envelope GET …/image-releases/:releaseId/verification serves. None without a trust policy.
    verificationSummaryDigest: rollout.trust?.summaryDigest ?? null,
    verifiedAt: due.at,
    previous,
    governance: { approval: rollout.approval, breakGlass: rollout.breakGlass },
  });
  return { statement, summary: svrStatement(statement) };
}

function recordOf (
  facts: DueAttestations, due: AttestationDue, built: Built, signed: SignedEnvelope, summary: SignedEnvelope | undefined, sequence: number,
): AttestationRecord {
  return {
    id: attestationIdOf(facts.serviceId, due.rolloutId, due.kind),
    serviceId: facts.serviceId,
    rolloutId: due.rolloutId,
    generation: due.generation,
    kind: due.kind,
    issuedAt: due.at,
    keyId: signed.keyId,
    envelope: signed.envelope,
    ...(summary === undefined ? {} : { summaryEnvelope: summary.envelope }),
    ...(built.revokes === undefined ? {} : { revokes: built.revokes }),
    digest: signed.digest,
    sequence,
    image: built.statement.subject[0].name,
  };
}

/** Issues one due: signs its statement on top of the chain's head and stores it (or finds it stored). */
async function issueDue (deps: AttestationDeps, signer: AttestationSigner, facts: DueAttestations, due: AttestationDue): Promise<Outcome> {
  const id = attestationIdOf(facts.serviceId, due.rolloutId, due.kind);
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const stored = await deps.repos.attestations.find(facts.serviceId, id);
    if (stored !== null) return { record: stored, issuedHere: false };
    const head = headOf(await deps.repos.attestations.head(facts.serviceId));
    const built = await statementOf(deps, facts, due, head);
    if (typeof built === 'string') return { skipped: built };
    const signed = await signStatement(built.statement, signer);
    const summary = built.summary === undefined ? undefined : await signStatement(built.summary, signer);
    const record = recordOf(facts, due, built, signed, summary, (head?.sequence ?? 0) + 1);
    const attach = deps.registry?.allowsWrites(imageLocatorOf(record.image).registryHost) === true;
    const inserted = await deps.repos.attestations.insert(attach ? { ...record, attach: 'pending' } : record);
    if (inserted === 'inserted') {
      deps.fault?.('after-attestation-insert');
      return { record: attach ? { ...record, attach: 'pending' } : record, issuedHere: true };
    }
    // 'exists': another process stored it (found at the next round); 'sequence-taken': the chain moved on, sign on top of the new head.
  }
  throw new Error(`attestation ${id}: the chain kept moving for ${MAX_ROUNDS} rounds; the sweeper tries again`);
}

/** Works off a service's dues, in order. Resolves to how many attestations this call stored. */
export async function issueDues (deps: AttestationDeps, serviceId: string): Promise<number> {
  const facts = await deps.repos.attestationDues.findDues(serviceId);
  if (facts === null || facts.dues.length === 0) return 0;
  let issued = 0;
  for (const due of facts.dues) {
    // The history says the success no longer holds (what pipelines read), before the due can go.
    if (due.kind === 'revocation') await deps.repos.rollouts.recordRevocation(due.rolloutId, due.at);
    if (deps.signer === undefined) {
      deps.log.warn({ serviceId, due: due.key }, 'no attestation signing key is configured (ATTESTATION_SIGNING_KEY): the attestation is not issued');
      await deps.repos.attestationDues.completeDue(serviceId, due.key, undefined);
      continue;
    }
    const outcome = await issueDue(deps, deps.signer, facts, due);
    if ('skipped' in outcome) {
      deps.log.warn({ serviceId, rolloutId: due.rolloutId, kind: due.kind, why: outcome.skipped }, 'attestation not issued');
      await deps.repos.attestationDues.completeDue(serviceId, due.key, undefined);
      continue;
    }
    // The event goes with the due's removal: once, by whichever process takes the due off.
    if (await deps.repos.attestationDues.completeDue(serviceId, due.key, attestationEvent(outcome.record))) {
      const { id: attestationId, sequence } = outcome.record;
      deps.log.info({ serviceId, rolloutId: due.rolloutId, kind: due.kind, attestationId, sequence }, 'attestation issued');
    }
    if (outcome.issuedHere) {
      issued++;
      // Never awaited: a registry that is slow or away does not hold up the report that made the success.
      if (outcome.record.attach === 'pending') void attachQuietly(deps, outcome.record);
    }
  }
  await relayQuietly(deps.repos, serviceId);
  return issued;
}

/** Attaches to the registry; a failure is left to the sweeper (never blocks issuing or a report). */
async function attachQuietly (deps: AttestationDeps, record: AttestationRecord): Promise<void> {
  if (deps.registry === undefined) return;
  try {
    await attachToRegistry(deps.registry, record);
    await deps.repos.attestations.markAttached(record.id);
  } catch (err) {
    const failures = (record.attachFailures ?? 0) + 1;
    const retryAt = deps.now() + attachRetryDelayMs(failures);
    await deps.repos.attestations.attachFailed(record.id, retryAt).catch(() => undefined);
    deps.log.warn({ attestationId: record.id, failures, retryAt, err }, 'attaching the attestation to its image failed; the sweeper tries again');
  }
}

/** The sweeper's part: every service's dues (a crash left them), then pending registry attachments. */
export async function sweepAttestations (deps: AttestationDeps, stopping: () => boolean): Promise<number> {
  let issued = 0;
  for (const serviceId of await deps.repos.attestationDues.servicesWithDues(SWEEP_MAX)) {
    if (stopping()) return issued;
    try {
      issued += await issueDues(deps, serviceId);
    } catch (err) {
      deps.log.warn({ serviceId, err }, 'issuing attestations failed; the next sweep takes it up');
    }
  }
  if (deps.registry !== undefined && !stopping()) {
    for (const record of await deps.repos.attestations.pendingAttachments(SWEEP_MAX, deps.now())) {
      if (stopping()) break;
      await attachQuietly(deps, record);
    }
  }
  return issued;
}

/** Reads: a service's attestations (chain order, keyset pages), one attestation, the public keys. */
function attestationReads (deps: AttestationDeps) {
  const { repos } = deps;
  return {
    async list (serviceId: string, query: { limit?: number, cursor?: string, rolloutId?: string }): Promise<Result<AttestationPage>> {
      const after = query.cursor === undefined ? 0 : Number(query.cursor);
      if (!Number.isSafeInteger(after) || after < 0) return invalid([{ field: '/cursor', message: 'must be a nextCursor this API answered' }]);
      if (!(await repos.catalogue.exists(serviceId))) return refusal(errors.serviceNotFound(serviceId));
      const limit = query.limit ?? 50;
      const rolloutId = query.rolloutId === undefined ? {} : { rolloutId: query.rolloutId };
      const rows = await repos.attestations.list(serviceId, { limit: limit + 1, afterSequence: after, ...rolloutId });
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      const attestations = page.map(attestationViewOf);
      return success(rows.length > limit && last ? { attestations, nextCursor: String(last.sequence) } : { attestations });
    },
    async get (serviceId: string, attestationId: string): Promise<Result<{ attestation: AttestationView }>> {
      const record = await repos.attestations.find(serviceId, attestationId);
      if (record !== null) return success({ attestation: attestationViewOf(record) });
      if (!(await repos.catalogue.exists(serviceId))) return refusal(errors.serviceNotFound(serviceId));
      return refusal(errors.attestationNotFound(serviceId, attestationId));
    },
    /** The active key first, then the retired ones; empty when no signing key is configured. */
    keys: (): AttestationKeyList => ({ keys: [...(deps.signer?.publicKeys() ?? [])] }),
  };
}

/** The attestation use cases, bound to their dependencies. */
export function attestationIssuer (deps: AttestationDeps) {
  return {
    issue: (serviceId: string) => issueDues(deps, serviceId),
    /** Whether the service still owes an attestation of the rollout (its report records are the evidence). */
    owes: async (serviceId: string, rolloutId: string): Promise<boolean> =>
      ((await deps.repos.attestationDues.findDues(serviceId))?.dues ?? []).some((d) => d.rolloutId === rolloutId),
    sweep: (stopping: () => boolean = () => false) => sweepAttestations(deps, stopping),
    ...attestationReads(deps),
  };
}

export type AttestationIssuer = ReturnType<typeof attestationIssuer>;
