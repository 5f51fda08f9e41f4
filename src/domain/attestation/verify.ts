import { Value } from '@sinclair/typebox/value';
import type { TSchema } from '@sinclair/typebox';
import { decodeBase64, DsseEnvelope, IN_TOTO_PAYLOAD_TYPE, envelopeDigest, pae } from './dsse.js';
import { verifyBytes, type TrustedKey } from './keys.js';
import { accept, refuse, type Checked } from './refusal.js';
import {
  Statement, isKnownPredicateType, knownPredicateTypes, predicateSchemas,
  type ChainLink, type KnownPredicateType, type RevocationPredicate, type RuntimeVerificationPredicate, type SvrPredicate,
} from './schemas.js';
import { checkRevocation, checkRuntimeVerification } from './semantics.js';

/**
 * Offline verification of one DSSE envelope, in the order DSSE prescribes: the envelope's shape,
 * its payload type, a signature by a trusted key over PAE(payloadType, payload) — and only then the
 * payload: an in-toto Statement v1, a predicate type this project knows, its subject (and the
 * expected digest, when given), the predicate's schema and the rules its members obey together.
 * The first check that fails refuses, with a reason that says exactly what failed.
 */

export interface VerifyOptions {
  /** The public keys trusted to sign (active and retired). */
  keys: readonly TrustedKey[];
  /** The image digest the subject must name (`sha256:<hex>` or bare hex). */
  expectedDigest?: string;
  /** The predicate types accepted here (default: every one this project knows). */
  predicateTypes?: readonly KnownPredicateType[];
}

export type KnownPredicate =
  | { predicateType: 'https://serve.zone/cloudly-release/runtime-verification/v1', predicate: RuntimeVerificationPredicate }
  | { predicateType: 'https://serve.zone/cloudly-release/revocation/v1', predicate: RevocationPredicate }
  | { predicateType: 'https://in-toto.io/attestation/svr/v0.2', predicate: SvrPredicate };

export type VerifiedAttestation = KnownPredicate & {
  statement: Statement;
  subject: { name: string, digest: string };
  /** The trusted key whose signature verified. */
  keyId: string;
  envelopeDigest: string;
  /** The chain link of a runtime verification or a revocation (an SVR has none). */
  chain?: ChainLink;
  serviceId?: string;
};

/** The first schema error as `path: message` (the path relative to `base`). */
export function firstSchemaError (schema: TSchema, value: unknown, base = ''): string | undefined {
  const first = Value.Errors(schema, value).First();
  if (first === undefined) return undefined;
  return `${base}${first.path === '' ? '/' : first.path}: ${first.message}`;
}

function checkEnvelope (input: unknown): Checked<DsseEnvelope> {
  const problem = firstSchemaError(DsseEnvelope, input);
  if (problem !== undefined) return refuse('envelope-malformed', `not a DSSE envelope: ${problem}`);
  const envelope = input as DsseEnvelope;
  if (envelope.payloadType !== IN_TOTO_PAYLOAD_TYPE) {
    return refuse('payload-type-unsupported', `payloadType is '${envelope.payloadType}', expected '${IN_TOTO_PAYLOAD_TYPE}'`);
  }
  if (envelope.signatures.length === 0) return refuse('signature-missing', 'the envelope carries no signature');
  return accept(envelope);
}

/**
 * A signature by a trusted key over PAE(payloadType, payload). The keyid is an unauthenticated hint
 * (DSSE): it picks the key to try when it names a trusted one; otherwise (cosign writes '') every
 * trusted key is tried. One verifying signature is enough; others (untrusted co-signers) are ignored.
 */
function checkSignatures (envelope: DsseEnvelope, body: Buffer, keys: readonly TrustedKey[]): Checked<string> {
  const data = pae(envelope.payloadType, body);
  const invalid: string[] = [];
  const untrusted: string[] = [];
  for (const [index, signature] of envelope.signatures.entries()) {
    const keyid = signature.keyid ?? '';
    const named = keys.find((k) => k.keyId === keyid);
    const sig = decodeBase64(signature.sig);
    if (sig === undefined) {
      invalid.push(`signature ${index + 1} is not base64`);
      continue;
    }
    const match = (named === undefined ? keys : [named]).find((k) => verifyBytes(k.key, k.algorithm, data, sig));
    if (match !== undefined) return accept(match.keyId);
    if (named !== undefined) invalid.push(`signature ${index + 1} (trusted key ${keyid}) does not verify over the payload`);
    else untrusted.push(keyid === '' ? `signature ${index + 1} (no keyid)` : `signature ${index + 1} (key ${keyid})`);
  }
  if (invalid.length > 0) {
    return refuse('signature-invalid', `${invalid.join('; ')}: the payload, its type or the signature was altered`);
  }
  const trusted = keys.length === 0 ? 'no key is trusted' : `trusted: ${keys.map((k) => k.keyId).join(', ')}`;
  return refuse('signature-untrusted', `no signature verifies with a trusted key: ${untrusted.join(', ')}; ${trusted}`);
}

function parseStatement (body: Buffer, accepted: readonly KnownPredicateType[]): Checked<Statement> {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (err) {
    return refuse('statement-malformed', `the payload is not JSON (${(err as Error).message})`);
  }
  const problem = firstSchemaError(Statement, value);
  if (problem !== undefined) return refuse('statement-malformed', `the payload is not an in-toto Statement v1: ${problem}`);
  const statement = value as Statement;
  if (!isKnownPredicateType(statement.predicateType) || !accepted.includes(statement.predicateType)) {
    return refuse('predicate-type-unsupported', `predicateType '${statement.predicateType}' is not one accepted here (${accepted.join(', ')})`);
  }
  return accept(statement);
}

const normalizeDigest = (digest: string): string => digest.toLowerCase().replace(/^sha256:/, '');

/** One subject: the image, named by its digest-pinned reference, with that digest's sha256. */
function checkSubject (statement: Statement, expectedDigest: string | undefined): Checked<{ name: string, digest: string }> {
  const [subject, ...more] = statement.subject;
  if (subject === undefined || more.length > 0) return refuse('subject-malformed', `expected exactly one subject, found ${statement.subject.length}`);
  const hex = subject.digest?.['sha256'];
  if (hex === undefined || !/^[a-f0-9]{64}$/.test(hex)) return refuse('subject-malformed', 'the subject has no lower-case hex sha256 digest');
  const name = subject.name ?? '';
  if (!name.endsWith(`@sha256:${hex}`)) {
    return refuse('subject-inconsistent', `the subject name '${name}' does not pin the subject digest sha256:${hex}`);
  }
  if (expectedDigest !== undefined && normalizeDigest(expectedDigest) !== hex) {
    return refuse('subject-digest-mismatch', `the subject digest is sha256:${hex}, expected sha256:${normalizeDigest(expectedDigest)}`);
  }
  return accept({ name, digest: `sha256:${hex}` });
}

function checkPredicate (statement: Statement, predicateType: KnownPredicateType, subjectName: string): Checked<KnownPredicate> {
  const problem = firstSchemaError(predicateSchemas[predicateType], statement.predicate ?? {}, '/predicate');
  if (problem !== undefined) return refuse('predicate-invalid', `the predicate does not match ${predicateType}: ${problem}`);
  const known = { predicateType, predicate: statement.predicate } as KnownPredicate;
  if (known.predicateType === 'https://serve.zone/cloudly-release/runtime-verification/v1') {
    const semantic = checkRuntimeVerification(known.predicate, subjectName);
    if (!semantic.ok) return semantic;
  } else if (known.predicateType === 'https://serve.zone/cloudly-release/revocation/v1') {
    const semantic = checkRevocation(known.predicate);
    if (!semantic.ok) return semantic;
  }
  return accept(known);
}

/** Verifies one envelope (any JSON value) against trusted keys; see the module comment for the order. */
export function verifyEnvelope (input: unknown, options: VerifyOptions): Checked<VerifiedAttestation> {
  const envelope = checkEnvelope(input);
  if (!envelope.ok) return envelope;
  const body = decodeBase64(envelope.value.payload);
  if (body === undefined) return refuse('envelope-malformed', 'the payload is not base64');
  const keyId = checkSignatures(envelope.value, body, options.keys);
  if (!keyId.ok) return keyId;
  const statement = parseStatement(body, options.predicateTypes ?? knownPredicateTypes);
  if (!statement.ok) return statement;
  const subject = checkSubject(statement.value, options.expectedDigest);
  if (!subject.ok) return subject;
  const known = checkPredicate(statement.value, statement.value.predicateType as KnownPredicateType, subject.value.name);
  if (!known.ok) return known;
  const linked = known.value.predicateType === 'https://in-toto.io/attestation/svr/v0.2'
    ? {}
    : { chain: known.value.predicate.chain, serviceId: known.value.predicate.service.id };
  return accept({
    ...known.value,
    ...linked,
    statement: statement.value,
    subject: subject.value,
    keyId: keyId.value,
    envelopeDigest: envelopeDigest(envelope.value),
  });
}
