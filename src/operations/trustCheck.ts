import type { IImageRelease, ITrustPolicy } from '../contracts/index.js';
import type { AdmissionFacts, TrustFact } from '../domain/admission.js';
import { signStatement } from '../domain/attestation/sign.js';
import { VERIFIER_ID } from '../domain/attestation/schemas.js';
import { remember } from '../domain/objects.js';
import type { Clock, Repositories } from '../domain/ports/index.js';
import type { ImageLocator, ImageRegistry, SignatureArtifacts } from '../domain/ports/registry.js';
import type { AttestationSigner } from '../domain/ports/signer.js';
import type { RolloutIntent } from '../domain/rollouts.js';
import {
  buildVerificationSummary, compileTrustPolicy, releaseVerificationOf, trustPolicyDigest, trustRefusalError, verifyDigest,
  type CompiledTrustPolicy, type KeylessVerifier, type TrustVerdict, type VerificationCache,
} from '../domain/trust/index.js';
import { isAppError } from '../errors.js';

/**
 * Verification before promotion (issue 21, docs/trust.md): the signature rule's fact for a rollout of
 * a service with a trust policy. Read after every other admission rule admitted, before the rollout is
 * recorded (the compare-and-swap): a refusal writes nothing.
 *
 * - promotion, automatic promotion: the registry is asked for the digest's signatures (every time:
 *   a registry that cannot be asked refuses, `registry-unavailable`), they are verified, and a pass is
 *   stated as a SLSA Verification Summary signed by the server's attestation key;
 * - rollback, abort: the release's stored verification is relied on when it was made under the policy
 *   in force (same policy digest) — the registry is not asked; otherwise (the policy changed since, or
 *   the release was never verified) it is re-checked like a promotion, and the history says which.
 */

export interface TrustCheckDeps {
  repos: Pick<Repositories, 'releases'>;
  registry: ImageRegistry;
  /** The server's attestation signer; without one, a service with a trust policy cannot be promoted (fail closed). */
  signer?: AttestationSigner | undefined;
  /** Present when the operator configured a Sigstore trusted root. */
  keyless?: KeylessVerifier | undefined;
  /** Signature-check outcomes per (signed content, key fingerprint), shared by every verification of the process. */
  cache: VerificationCache;
  now: Clock;
}

/** Verdicts per (digest, policy digest, the signature manifests the registry listed): the same answer is not verified twice. */
const VERDICTS_KEPT = 2_000;
/** Compiled policies per policy digest (PEMs parsed once). */
const POLICIES_KEPT = 500;

export const imageOf = (release: IImageRelease): ImageLocator =>
  ({ registryHost: release.data.registryHost, repository: release.data.repository, digest: release.data.registryRootDigest });

/** The check bound to its dependencies and its caches, as the rollout issuer calls it. */
export function trustChecker (deps: TrustCheckDeps) {
  const verdicts = new Map<string, TrustVerdict>();
  const policies = new Map<string, CompiledTrustPolicy>();

  const compiled = (policy: ITrustPolicy, digest: string): CompiledTrustPolicy =>
    policies.get(digest) ?? remember(policies, digest, compileTrustPolicy(policy), POLICIES_KEPT);

  function verdictOf (image: ImageLocator, fetched: SignatureArtifacts, policy: ITrustPolicy, policyDigest: string): TrustVerdict {
    const listed = fetched.artifacts.map((a) => a.digest).sort().join(',');
    const key = `${image.registryHost}/${image.repository}@${image.digest}\u0000${policyDigest}\u0000${listed}`;
    const known = verdicts.get(key);
    if (known) return known;
    const verdict = verifyDigest({ image, fetched, policy: compiled(policy, policyDigest), keyless: deps.keyless, cache: deps.cache });
    return fetched.skipped.length > 0 ? verdict : remember(verdicts, key, verdict, VERDICTS_KEPT);
  }

  /** Asks the registry and verifies; a pass is signed. */
  async function verifyNow (serviceId: string, release: IImageRelease, policy: ITrustPolicy, policyDigest: string): Promise<TrustFact> {
    const image = imageOf(release);
    let fetched: SignatureArtifacts;
    try {
      fetched = await deps.registry.fetchSignatureArtifacts(image);
    } catch (err) {
      if (isAppError(err) && err.code === 'registry-unavailable') return { kind: 'refused', error: err };
      throw err;
    }
    const verdict = verdictOf(image, fetched, policy, policyDigest);
    if (verdict.outcome === 'refused') return { kind: 'refused', error: trustRefusalError(verdict) };
    // Fail closed: a verification the server cannot sign is no evidence a rollback could rely on later.
    if (!deps.signer) throw new Error('no attestation signing key is configured (ATTESTATION_SIGNING_KEY): verification summaries cannot be signed');
    const verifiedAt = deps.now();
    const statement = buildVerificationSummary({
      image, verdict, policy, policyUri: `cloudly-release:services/${serviceId}#trustPolicy`, verifier: { id: VERIFIER_ID }, timeVerified: verifiedAt,
    });
    const signed = await signStatement(statement, deps.signer);
    const verification = releaseVerificationOf(verdict, policyDigest, verifiedAt, signed);
    return { kind: 'passed', check: { basis: 'registry', policyDigest, summaryDigest: signed.digest }, verification };
  }

  /** The fact for admission; undefined when the service has no trust policy or the target is not one of its releases. */
  async function trustFactOf (intent: RolloutIntent, facts: AdmissionFacts): Promise<TrustFact | undefined> {
    const policy = facts.service.data.trustPolicy;
    const release = facts.release;
    if (policy === undefined || release === null) return undefined;
    const policyDigest = trustPolicyDigest(policy);
    const stored = intent.kind === 'rollback' ? await deps.repos.releases.findVerification(release.id) : null;
    if (stored && stored.policyDigest === policyDigest) {
      return { kind: 'passed', check: { basis: 'stored-summary', policyDigest, summaryDigest: stored.summary.digest } };
    }
    const fact = await verifyNow(facts.service.id, release, policy, policyDigest);
    if (fact.kind === 'passed' && stored) return { ...fact, check: { ...fact.check, storedPolicyDigest: stored.policyDigest } };
    return fact;
  }

  return { trustFactOf };
}

export type TrustChecker = ReturnType<typeof trustChecker>;
