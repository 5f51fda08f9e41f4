import { readFile } from 'node:fs/promises';
import {
  knownPredicateTypes, parsePublicKeyPems, REVOCATION_TYPE, RUNTIME_VERIFICATION_TYPE, SVR_TYPE, verifyAttestationView, verifyChain, verifyEnvelope,
  type AttestationKeyList, type AttestationPage, type ChainMember, type Checked, type TrustedKey, type VerifiedAttestation, type VerifiedView,
} from '../../domain/attestation/index.js';
import type { AttestationVerifyArgs } from './args.js';
import type { CommandResult } from './context.js';
import { CliError, ExitCode, usageError } from './errors.js';
import type { ApiClient } from './http.js';
import { attestationKeysRequest, attestationsRequest } from './requests.js';

/**
 * `cloudly-release attestation verify`: checks attestations with no server — a file, or the
 * attestations the server lists for a rollout — against public keys: the signature, the subject
 * (and `--digest`), the predicate's schema and rules, the SVR that comes with it, and, when asked,
 * the hash chain (`--chain`, `--after`). The checks are the domain's (src/domain/attestation), so
 * the CLI refuses exactly what the server would. Exit 0: accepted; 1: refused, with the reason.
 */

export interface AttestationContext {
  /** Only when something is fetched (--service/--rollout, --server-keys). */
  client?: ApiClient;
  log: (line: string) => void;
}

/** One thing to verify: a listing (AttestationView) or a bare envelope, and where it came from. */
interface Target { label: string, document: unknown, view: boolean }

const refused = (label: string, result: Extract<Checked<unknown>, { ok: false }>): CliError => new CliError({
  exitCode: ExitCode.refused,
  code: result.refusal.code,
  message: `${label} refused: ${result.refusal.reason}`,
  details: { refusal: result.refusal, attestation: label },
});

async function readText (path: string, option: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw usageError(`${option}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

async function trustedKeysOf (ctx: AttestationContext, args: AttestationVerifyArgs): Promise<TrustedKey[]> {
  const keys = new Map<string, TrustedKey>();
  for (const path of args.keyFiles) {
    const parsed = parsePublicKeyPems(await readText(path, '--key'));
    if (!parsed.ok) throw usageError(`--key ${path}: ${parsed.problem}`);
    for (const key of parsed.value) keys.set(key.keyId, key);
  }
  if (args.serverKeys && ctx.client) {
    const { body } = await ctx.client.send<AttestationKeyList>(attestationKeysRequest());
    const parsed = parsePublicKeyPems(body.keys.map((k) => k.publicKeyPem).join('\n'));
    if (!parsed.ok) throw new CliError({ exitCode: ExitCode.refused, code: 'keys-malformed', message: `GET /v1/attestation-keys: ${parsed.problem}` });
    // The key id is computed from the key, never taken from the listing.
    for (const key of parsed.value) keys.set(key.keyId, key);
    ctx.log(`trusting ${parsed.value.length} key(s) the server lists: ${parsed.value.map((k) => k.keyId).join(', ')}`);
  }
  return [...keys.values()];
}

/** A JSON document as a target: `{ attestation }` and `{ attestations }` (API answers), a listing, or a bare envelope. */
function targetsOf (label: string, text: string): Target[] {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (err) {
    throw refused(label, { ok: false, refusal: { code: 'envelope-malformed', reason: `not JSON (${(err as Error).message})` } });
  }
  const record = (typeof document === 'object' && document !== null ? document : {}) as Record<string, unknown>;
  if (Array.isArray(record['attestations'])) {
    return (record['attestations'] as unknown[]).map((d, i) => ({ label: `${label} attestation ${i + 1}`, document: d, view: true }));
  }
  if ('attestation' in record) return [{ label, document: record['attestation'], view: true }];
  return [{ label, document, view: 'envelope' in record }];
}

function verifyTarget (target: Target, keys: TrustedKey[], digest: string | undefined): VerifiedView {
  const options = { keys, ...(digest === undefined ? {} : { expectedDigest: digest }) };
  const result = target.view
    ? verifyAttestationView(target.document, options)
    : verifyEnvelope(target.document, { ...options, predicateTypes: knownPredicateTypes });
  if (!result.ok) throw refused(target.label, result);
  return 'attestation' in result.value ? result.value : { attestation: result.value };
}

const memberOf = (label: string, a: VerifiedAttestation): ChainMember => {
  if (a.chain === undefined || a.serviceId === undefined) {
    throw refused(label, { ok: false, refusal: { code: 'chain-link-invalid', reason: 'an SVR has no place in the chain' } });
  }
  return { envelopeDigest: a.envelopeDigest, chain: a.chain, serviceId: a.serviceId };
};

async function sourceTargets (ctx: AttestationContext, args: AttestationVerifyArgs): Promise<Target[]> {
  if (args.source.kind === 'file') return targetsOf(args.source.path, await readText(args.source.path, '--file'));
  const { serviceId, rolloutId } = args.source;
  const { body } = await (ctx.client as ApiClient).send<AttestationPage>(attestationsRequest(serviceId, rolloutId));
  if (body.attestations.length === 0) {
    throw new CliError({
      exitCode: ExitCode.refused,
      code: 'attestation-missing',
      message: `no attestation for rollout ${rolloutId} of service ${serviceId}`,
    });
  }
  return body.attestations.map((view) => ({ label: `attestation ${view.id}`, document: view, view: true }));
}

export async function verifyAttestationCommand (ctx: AttestationContext, args: AttestationVerifyArgs): Promise<CommandResult> {
  const keys = await trustedKeysOf(ctx, args);
  const verified = (await sourceTargets(ctx, args)).map((target) => verifyTarget(target, keys, args.digest));
  if (args.chainFiles.length > 0 || args.after !== undefined) {
    const earlier: ChainMember[] = [];
    for (const path of args.chainFiles) {
      for (const target of targetsOf(path, await readText(path, '--chain'))) {
        earlier.push(memberOf(target.label, verifyTarget(target, keys, undefined).attestation));
      }
    }
    const own = verified.map((v, i) => memberOf(`attestation ${i + 1}`, v.attestation));
    // A rollout's attestations as the server lists them (newest first): in chain order. A file's, as given.
    if (args.source.kind === 'server') own.sort((a, b) => a.chain.sequence - b.chain.sequence);
    const chained = verifyChain([...earlier, ...own], args.after);
    if (!chained.ok) throw refused('the chain', chained);
  }
  return verifiedResult(verified, args);
}

/** What one verified attestation says, for the document (-o json|yaml) and the text. */
interface AttestationSummary {
  predicateType: string;
  subject: { name: string, digest: string };
  keyId: string;
  digest: string;
  chain?: { sequence: number, previous: string | null };
  serviceId?: string;
  serviceName?: string;
  rolloutId?: string;
  generation?: number;
  outcome?: string;
  replicas?: number;
  nodes?: number;
  verifiedAt?: string;
  revokes?: string;
  revokedDigest?: string;
  reason?: { kind: string, detail: string };
  revokedAt?: string;
  summary?: { predicateType: string, keyId: string, properties: string[] };
}

function summaryOf ({ attestation: a, summary }: VerifiedView): AttestationSummary {
  const s: AttestationSummary = { predicateType: a.predicateType, subject: a.subject, keyId: a.keyId, digest: a.envelopeDigest };
  if (a.chain) s.chain = { sequence: a.chain.sequence, previous: a.chain.previousEnvelopeDigest?.sha256 ?? null };
  if (a.predicateType === RUNTIME_VERIFICATION_TYPE || a.predicateType === REVOCATION_TYPE) {
    const { service, rollout } = a.predicate;
    Object.assign(s, { serviceId: service.id, serviceName: service.name, rolloutId: rollout.id, generation: rollout.generation });
  }
  if (a.predicateType === RUNTIME_VERIFICATION_TYPE) {
    const p = a.predicate;
    Object.assign(s, { outcome: p.outcome, replicas: p.replicas.length, nodes: p.targetScope.nodeNames.length, verifiedAt: p.verifiedAt });
  }
  if (a.predicateType === REVOCATION_TYPE) {
    const p = a.predicate;
    Object.assign(s, { revokes: p.revokes.attestationId, revokedDigest: p.revokes.envelopeDigest.sha256, reason: p.reason, revokedAt: p.revokedAt });
  }
  if (summary?.predicateType === SVR_TYPE) s.summary = { predicateType: SVR_TYPE, keyId: summary.keyId, properties: summary.predicate.properties };
  return s;
}

function lineOf (s: AttestationSummary): string {
  const what = s.predicateType.replace(/^https:\/\/serve\.zone\/cloudly-release\/|^https:\/\/in-toto\.io\/attestation\//, '');
  const rollout = `service ${s.serviceId ?? ''} (${s.serviceName ?? ''}), rollout ${s.rolloutId ?? ''} generation ${s.generation ?? ''}`;
  const detail = s.outcome !== undefined
    ? ` — ${rollout} ${s.outcome}: ${s.replicas ?? 0} replicas on ${s.nodes ?? 0} nodes`
    : s.revokes !== undefined ? ` — ${rollout}: revokes ${s.revokes}, ${s.reason?.kind ?? ''} (${s.reason?.detail ?? ''})` : '';
  const lines = [`accepted: ${what} of ${s.subject.name}${detail}`, `  signed by key ${s.keyId}; digest ${s.digest}`];
  if (s.chain) lines.push(`  chain: sequence ${s.chain.sequence}, ${s.chain.previous === null ? 'the first' : `after ${s.chain.previous}`}`);
  if (s.summary) lines.push(`  SVR verified: ${s.summary.properties.join(', ')}`);
  return lines.join('\n');
}

function verifiedResult (verified: VerifiedView[], args: AttestationVerifyArgs): CommandResult {
  const attestations = verified.map(summaryOf);
  const chained = args.chainFiles.length > 0 || args.after !== undefined;
  const chainLine = chained
    ? `\nchain verified: ${args.chainFiles.length > 0 ? `${args.chainFiles.length} earlier attestation file(s), then ` : ''}` +
      `${attestations.length} attestation(s)${args.after === undefined ? '' : `, following ${args.after}`}`
    : '';
  return {
    exitCode: ExitCode.ok,
    json: { accepted: true, attestations, ...(chained ? { chain: { verified: true, after: args.after ?? null, earlier: args.chainFiles.length } } : {}) },
    text: `${attestations.map(lineOf).join('\n')}${chainLine}`,
  };
}
