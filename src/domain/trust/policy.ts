import type { ITrustPolicy } from '../../contracts/trustPolicy.js';
import type { Problem } from '../../errors.js';
import { parsePublicKey, type TrustedKey } from './keys.js';

/**
 * The rules of a trust policy the schema cannot see (src/contracts/trustPolicy.ts), and the policy
 * compiled for verification: keys parsed, subject patterns compiled.
 */

export interface KeylessMatcher {
  issuer: string;
  /** Describes the rule in verdicts: the exact subject or `/pattern/`. */
  label: string;
  matches(subject: string): boolean;
}

export interface CompiledTrustPolicy {
  keys: TrustedKey[];
  identities: KeylessMatcher[];
  requiredAttestations: string[];
}

export interface PolicyContext {
  /** Whether the operator configured a Sigstore trusted root (keyless identities need one). */
  trustedRootConfigured: boolean;
}

/** Every problem of the policy, each with a JSON pointer under `fieldPath` (e.g. `/body/serviceData/trustPolicy`). */
export function trustPolicyProblems (policy: ITrustPolicy | undefined, fieldPath: string, context: PolicyContext): Problem[] {
  if (policy === undefined) return [];
  const problems: Problem[] = [];
  const keys = policy.publicKeys ?? [];
  const identities = policy.keylessIdentities ?? [];
  if (keys.length === 0 && identities.length === 0) {
    problems.push({ field: fieldPath, message: 'trusts no signer: name at least one of publicKeys or keylessIdentities (or remove trustPolicy)' });
  }
  const seenIds = new Map<string, number>();
  const seenKeys = new Map<string, number>();
  keys.forEach((entry, index) => {
    const at = `${fieldPath}/publicKeys/${index}`;
    const first = seenIds.get(entry.keyId);
    if (first !== undefined) problems.push({ field: `${at}/keyId`, message: `repeats the keyId of /publicKeys/${first}` });
    else seenIds.set(entry.keyId, index);
    const parsed = parsePublicKey(entry.keyId, entry.publicKeyPem);
    if ('problem' in parsed) {
      problems.push({ field: `${at}/publicKeyPem`, message: parsed.problem });
      return;
    }
    const same = seenKeys.get(parsed.key.fingerprint);
    if (same !== undefined) problems.push({ field: `${at}/publicKeyPem`, message: `is the same key as /publicKeys/${same}` });
    else seenKeys.set(parsed.key.fingerprint, index);
  });
  identities.forEach((identity, index) => problems.push(...identityProblems(identity, `${fieldPath}/keylessIdentities/${index}`)));
  if (identities.length > 0 && !context.trustedRootConfigured) {
    problems.push({
      field: `${fieldPath}/keylessIdentities`,
      message: 'needs a Sigstore trusted root, and this server has none configured (SIGSTORE_TRUSTED_ROOT_FILE)',
    });
  }
  return problems;
}

function identityProblems (identity: NonNullable<ITrustPolicy['keylessIdentities']>[number], at: string): Problem[] {
  if ((identity.subject === undefined) === (identity.subjectPattern === undefined)) {
    return [{ field: at, message: 'needs exactly one of subject and subjectPattern' }];
  }
  if (!/^https:\/\/[^\s/]+/.test(identity.issuer)) return [{ field: `${at}/issuer`, message: 'must be an https:// URL (the OIDC issuer)' }];
  if (identity.subjectPattern !== undefined) {
    try {
      void new RegExp(identity.subjectPattern, 'u');
    } catch (err) {
      return [{ field: `${at}/subjectPattern`, message: `is not a regular expression: ${(err as Error).message}` }];
    }
  }
  return [];
}

/** The policy ready for `verifyDigest`; call only on a policy without problems (throws otherwise). */
export function compileTrustPolicy (policy: ITrustPolicy): CompiledTrustPolicy {
  const keys = (policy.publicKeys ?? []).map((entry) => {
    const parsed = parsePublicKey(entry.keyId, entry.publicKeyPem);
    if ('problem' in parsed) throw new Error(`trust policy key ${entry.keyId} ${parsed.problem}`);
    return parsed.key;
  });
  const identities = (policy.keylessIdentities ?? []).map((identity): KeylessMatcher => {
    if (identity.subject !== undefined) {
      const subject = identity.subject;
      return { issuer: identity.issuer, label: subject, matches: (candidate) => candidate === subject };
    }
    // Anchored: the whole subject must match, as cosign's --certificate-identity-regexp is usually meant.
    const pattern = new RegExp(`^(?:${identity.subjectPattern ?? ''})$`, 'u');
    return { issuer: identity.issuer, label: `/${identity.subjectPattern ?? ''}/`, matches: (candidate) => pattern.test(candidate) };
  });
  return { keys, identities, requiredAttestations: [...(policy.requiredAttestations ?? [])] };
}
