import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import {
  IN_TOTO_PAYLOAD_TYPE, pae, parsePublicKeyPems, signStatement, verifyAttestationView, verifyChain,
  type AttestationView, type DsseEnvelope, type RefusalCode, type SignedEnvelope, type TrustedKey,
} from '../../../src/domain/attestation/index.js';
import { EventLogStore } from '../../../src/store/eventLogStore.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { testSigner } from '../../support/attestations.js';
import {
  promoteAndSucceed as succeedWith,
  bearer, createFixtureService, fullRolloutHistory, promote, pushRelease, registerCluster, type FixtureService, type PushedRelease,
} from '../../support/fixtures.js';
import { reportBody, reportVerified, verifiedReplica } from '../../support/reports.js';
import { runCli } from '../cli/harness.js';

/**
 * Signed runtime-verification attestations issued by the real app on a real database with a real key
 * (docs/attestations.md "Issuance"): one per success, chained; listed, fetched, and verified by the
 * domain's verifier and by the built CLI; a drift revokes once and takes the release off the verified
 * list (an abort skips it); a new success attests anew. No signing key: nothing issued, no keys listed.
 */

const ed = testSigner('ed25519');
const NODES = ['n1', 'n2'];
const stranger = testSigner('ed25519');

// ---------------------------------------------------------------------------------------
// Tampered copies of a real attestation listing (what `attestation verify` must refuse).
// ---------------------------------------------------------------------------------------

interface Tampering { name: string, tamper: (v: AttestationView) => void | Promise<void>, code: RefusalCode, reason: RegExp }

const statementOf = (e: DsseEnvelope): any => JSON.parse(Buffer.from(e.payload, 'base64').toString('utf8'));
const relist = (v: AttestationView, signed: SignedEnvelope): void => {
  v.envelope = signed.envelope;
  v.digest = signed.digest;
  v.keyId = signed.keyId;
};
/** The statement changed, not signed again: what anyone without the key can do. */
const unsigned = (change: (st: any) => void) => (v: AttestationView): void => {
  const st = statementOf(v.envelope);
  change(st);
  v.envelope.payload = Buffer.from(JSON.stringify(st)).toString('base64');
};
/** The statement changed and signed again with the server's key, the listing made to match: the checks after the signature. */
const resigned = (change: (st: any) => void, which: 'envelope' | 'summaryEnvelope' = 'envelope') => async (v: AttestationView): Promise<void> => {
  const st = statementOf(v[which]!);
  change(st);
  const signed = await signStatement(st, ed.signer);
  if (which === 'envelope') relist(v, signed);
  else v.summaryEnvelope = signed.envelope;
};
/** Bytes that are no statement at all, signed with the server's key. */
const resignedBytes = (body: Buffer) => async (v: AttestationView): Promise<void> => {
  const { keyId, signature } = await ed.signer.sign(pae(IN_TOTO_PAYLOAD_TYPE, body));
  v.envelope.payload = body.toString('base64');
  v.envelope.signatures = [{ keyid: keyId, sig: Buffer.from(signature).toString('base64') }];
};
const flipByte = (base64: string, at: number): string => {
  const bytes = Buffer.from(base64, 'base64');
  bytes[at] = bytes[at]! ^ 0x01;
  return bytes.toString('base64');
};

async function tamperedVariants (real: AttestationView, imageDigest: string): Promise<Tampering[]> {
  const image = statementOf(real.envelope).subject[0].name as string;
  const repository = image.split('@')[0]!;
  const other = 'f'.repeat(64);
  const foreign = (await signStatement(statementOf(real.envelope), stranger.signer)).envelope.signatures;
  const sig = real.envelope.signatures[0]!;
  const later = (iso: string): string => new Date(Date.parse(iso) + 60_000).toISOString();
  const invalid = /signature 1 \(trusted key [a-f0-9]{64}\) does not verify over the payload/;
  const differs = (field: string): RegExp => new RegExp(`the listing's ${field} is .*, the signed envelope's is`);
  return [
    // Without the key: the envelope and its signature.
    { name: 'a replica dropped, not signed again', tamper: unsigned((st) => { st.predicate.replicas.pop(); }), code: 'signature-invalid', reason: invalid },
    {
      name: 'the subject digest swapped, not signed again',
      tamper: unsigned((st) => { st.subject[0].digest.sha256 = other; }),
      code: 'signature-invalid',
      reason: invalid,
    },
    {
      name: 'a flipped signature byte',
      tamper: (v) => { v.envelope.signatures = [{ ...sig, sig: flipByte(sig.sig, 8) }]; },
      code: 'signature-invalid',
      reason: invalid,
    },
    {
      name: 'the signature truncated',
      tamper: (v) => { v.envelope.signatures = [{ ...sig, sig: sig.sig.slice(0, 44) }]; },
      code: 'signature-invalid',
      reason: invalid,
    },
    { name: 'no signature', tamper: (v) => { v.envelope.signatures = []; }, code: 'signature-missing', reason: /the envelope carries no signature/ },
    {
      name: 'only a signature by an unknown key',
      tamper: (v) => { v.envelope.signatures = foreign; },
      code: 'signature-untrusted',
      reason: new RegExp(`no signature verifies with a trusted key: signature 1 \\(key ${stranger.trusted[0]!.keyId}\\)`),
    },
    {
      name: 'the keyid hint changed (an unauthenticated hint, but another envelope than the listing names)',
      tamper: (v) => { v.envelope.signatures = [{ ...sig, keyid: stranger.trusted[0]!.keyId }]; },
      code: 'view-inconsistent',
      reason: differs('digest'),
    },
    {
      name: 'another payload type',
      tamper: (v) => { v.envelope.payloadType = 'application/json'; },
      code: 'payload-type-unsupported',
      reason: /payloadType is 'application\/json'/,
    },
    {
      name: 'a payload that is not base64',
      tamper: (v) => { v.envelope.payload = `!${v.envelope.payload.slice(1)}`; },
      code: 'envelope-malformed',
      reason: /the payload is not base64/,
    },
    {
      name: 'a member added to the envelope',
      tamper: (v) => { Object.assign(v.envelope, { note: 'x' }); },
      code: 'envelope-malformed',
      reason: /not a DSSE envelope/,
    },
    // Signed again with the server's key: the statement and its predicate.
    { name: 'a payload that is not JSON', tamper: resignedBytes(Buffer.from('not json')), code: 'statement-malformed', reason: /the payload is not JSON/ },
    {
      name: 'another statement _type',
      tamper: resigned((st) => { st._type = 'https://in-toto.io/Statement/v0.1'; }),
      code: 'statement-malformed',
      reason: /in-toto Statement v1: \/_type/,
    },
    {
      name: 'an unknown predicateType',
      tamper: resigned((st) => { st.predicateType = 'https://slsa.dev/provenance/v1'; }),
      code: 'predicate-type-unsupported',
      reason: /predicateType 'https:\/\/slsa.dev\/provenance\/v1' is not one accepted here/,
    },
    {
      name: 'the predicateType of a revocation',
      tamper: resigned((st) => { st.predicateType = 'https://serve.zone/cloudly-release/revocation/v1'; }),
      code: 'predicate-invalid',
      reason: /the predicate does not match https:\/\/serve.zone\/cloudly-release\/revocation\/v1/,
    },
    {
      name: 'a subject name that does not pin its digest',
      tamper: resigned((st) => { st.subject[0].name = `${repository}:a`; }),
      code: 'subject-inconsistent',
      reason: /the subject name '.*:a' does not pin the subject digest/,
    },
    {
      name: 'another image as the subject',
      tamper: resigned((st) => { st.subject[0] = { name: `${repository}@sha256:${other}`, digest: { sha256: other } }; }),
      code: 'subject-digest-mismatch',
      reason: new RegExp(`the subject digest is sha256:${other}, expected ${imageDigest}`),
    },
    {
      name: 'the outcome of a rollback',
      tamper: resigned((st) => { st.predicate.outcome = 'rolled-back'; }),
      code: 'predicate-inconsistent',
      reason: /outcome 'rolled-back' does not go with rollout mode 'promotion'/,
    },
    {
      name: 'the required replica count raised',
      tamper: resigned((st) => { st.predicate.targetScope.requiredReplicaCount = 3; }),
      code: 'predicate-inconsistent',
      reason: /requiredReplicaCount 3 is not 2 target nodes × 1 replicas per node/,
    },
    {
      name: 'a replica dropped',
      tamper: resigned((st) => { st.predicate.replicas.pop(); }),
      code: 'replicas-incomplete',
      reason: /node 'n2' has 0 attested replicas/,
    },
    {
      name: 'a replica listed twice',
      tamper: resigned((st) => { st.predicate.replicas[1] = st.predicate.replicas[0]; }),
      code: 'replicas-duplicated',
      reason: /replica '.*' is listed more than once/,
    },
    {
      name: 'a replica moved to another node',
      tamper: resigned((st) => { st.predicate.replicas[1].nodeName = 'n3'; }),
      code: 'replica-outside-scope',
      reason: /runs on node 'n3', which is not a target node/,
    },
    {
      name: 'a replica that ran another digest',
      tamper: resigned((st) => { st.predicate.replicas[0].repoDigests = [`${repository}@sha256:${other}`]; }),
      code: 'replica-evidence-mismatch',
      reason: new RegExp(`its repo digests \\(${repository.replace(/[./]/g, '\\$&')}@sha256:f{64}\\) do not contain`),
    },
    {
      name: 'a chain sequence 2 without its previous attestation',
      tamper: resigned((st) => { st.predicate.chain.sequence = 2; }),
      code: 'chain-link-invalid',
      reason: /chain sequence 2 with no previous attestation/,
    },
    {
      name: 'a previous attestation on the first of the chain',
      tamper: resigned((st) => { st.predicate.chain.previousEnvelopeDigest = { sha256: 'c'.repeat(64) }; }),
      code: 'chain-link-invalid',
      reason: /chain sequence 1 with a previous attestation/,
    },
    {
      name: 'verifiedAt with a time zone offset',
      tamper: resigned((st) => { st.predicate.verifiedAt = st.predicate.verifiedAt.replace('Z', '+02:00'); }),
      code: 'predicate-invalid',
      reason: /\/predicate\/verifiedAt: /,
    },
    {
      name: 'a replica verifiedSince without its time zone',
      tamper: resigned((st) => { st.predicate.replicas[0].verifiedSince = st.predicate.replicas[0].verifiedSince.replace('Z', ''); }),
      code: 'predicate-invalid',
      reason: /\/predicate\/replicas\/0\/verifiedSince: /,
    },
    {
      name: 'verifiedAt moved a minute later',
      tamper: resigned((st) => { st.predicate.verifiedAt = later(st.predicate.verifiedAt); }),
      code: 'view-inconsistent',
      reason: differs('issuedAt'),
    },
    {
      name: 'a signature verification claimed with another predicate type',
      tamper: resigned((st) => { st.predicate.signatureVerification = { predicateType: 'https://slsa.dev/provenance/v1', envelopeDigest: { sha256: other } }; }),
      code: 'predicate-invalid',
      reason: /\/predicate\/signatureVerification/,
    },
    {
      name: 'an unknown predicate member',
      tamper: resigned((st) => { st.predicate.approvedBy = 'me'; }),
      code: 'predicate-invalid',
      reason: /\/predicate\/approvedBy/,
    },
    // The listing around the envelope.
    { name: 'the listing names another id', tamper: (v) => { v.id = `${v.id}x`; }, code: 'view-inconsistent', reason: differs('id') },
    { name: 'the listing names another service', tamper: (v) => { v.serviceId = 'svc_other'; }, code: 'view-inconsistent', reason: differs('serviceId') },
    { name: 'the listing names another rollout', tamper: (v) => { v.rolloutId = 'ro_other'; }, code: 'view-inconsistent', reason: differs('rolloutId') },
    { name: 'the listing names another generation', tamper: (v) => { v.generation += 1; }, code: 'view-inconsistent', reason: differs('generation') },
    { name: 'the listing says revocation', tamper: (v) => { v.kind = 'revocation'; }, code: 'view-inconsistent', reason: differs('kind') },
    { name: 'the listing names another key', tamper: (v) => { v.keyId = stranger.trusted[0]!.keyId; }, code: 'view-inconsistent', reason: differs('keyId') },
    { name: 'the listing names another digest', tamper: (v) => { v.digest = 'a'.repeat(64); }, code: 'view-inconsistent', reason: differs('digest') },
    { name: 'the listing says it was issued a second later', tamper: (v) => { v.issuedAt += 1_000; }, code: 'view-inconsistent', reason: differs('issuedAt') },
    { name: 'the listing says it revokes something', tamper: (v) => { v.revokes = 'att_rv_other'; }, code: 'view-inconsistent', reason: differs('revokes') },
    {
      name: 'a member added to the listing',
      tamper: (v) => { Object.assign(v, { approved: true }); },
      code: 'view-inconsistent',
      reason: /not an attestation listing/,
    },
    // The SVR that comes with it.
    {
      name: 'a flipped byte in the SVR payload',
      tamper: (v) => { v.summaryEnvelope!.payload = flipByte(v.summaryEnvelope!.payload, 30); },
      code: 'summary-invalid',
      reason: /the SVR summary envelope is refused \(signature-invalid\)/,
    },
    {
      name: 'an SVR about another image',
      tamper: resigned((st) => { st.subject[0] = { name: `${repository}@sha256:${other}`, digest: { sha256: other } }; }, 'summaryEnvelope'),
      code: 'summary-invalid',
      reason: /the SVR summary envelope is refused \(subject-digest-mismatch\)/,
    },
    {
      name: 'an SVR that claims signatures verified',
      tamper: resigned((st) => { st.predicate.properties.push('CLOUDLY_RELEASE_SIGNATURES_VERIFIED_BEFORE_PROMOTION'); }, 'summaryEnvelope'),
      code: 'summary-invalid',
      reason: /the SVR's properties .* are not what the runtime verification states/,
    },
    {
      name: 'an SVR of another time',
      tamper: resigned((st) => { st.predicate.timeCreated = later(st.predicate.timeCreated); }, 'summaryEnvelope'),
      code: 'summary-invalid',
      reason: /the SVR's timeCreated .* is not what the runtime verification states/,
    },
    { name: 'the SVR dropped', tamper: (v) => { delete v.summaryEnvelope; }, code: 'summary-invalid', reason: /a runtime verification is listed with its SVR/ },
  ];
}

describe('attestations issued by the server', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let cluster: string;
  let keys: TrustedKey[];
  let dir: string;

  beforeAll(async () => {
    t = await buildTestApp({ ATTESTATION_SIGNING_KEY: ed.privateKeyPem, LIFECYCLE_SWEEP_INTERVAL_MS: 60_000 });
    [admin, api, cluster] = await Promise.all([t.token('admin'), t.token('api'), t.token('cluster')]);
    await registerCluster(t.app, admin, 'c1', NODES);
    const listed = (await t.app.inject({ method: 'GET', url: '/v1/attestation-keys', headers: bearer(api) })).json();
    const parsed = parsePublicKeyPems(listed.keys.map((k: { publicKeyPem: string }) => k.publicKeyPem).join('\n'));
    if (!parsed.ok) throw new Error(parsed.problem);
    keys = parsed.value;
    dir = await mkdtemp(join(tmpdir(), 'attest-'));
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const list = async (serviceId: string, query = ''): Promise<AttestationView[]> => {
    const res = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}/attestations${query}`, headers: bearer(api) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().attestations;
  };

  const promoteAndSucceed = (svc: FixtureService, release: PushedRelease, generation: number): Promise<IImmutableImageDeploymentPlan> =>
    succeedWith(t.app, { api, cluster }, svc, release, generation, NODES);

  /** n2 now runs another digest (sequence 2 of the session reportVerified used). */
  async function drift (svc: FixtureService, plan: IImmutableImageDeploymentPlan): Promise<void> {
    const other = `${plan.digestPinnedImageReference.split('@')[0]}@sha256:${'e'.repeat(64)}`;
    const deployments = [
      verifiedReplica(plan, svc.id, 'n1', 0),
      verifiedReplica(plan, svc.id, 'n2', 0, { evidence: { repoDigests: [other], resolvedDigest: `sha256:${'e'.repeat(64)}` } }),
    ];
    const payload = reportBody(plan, svc.id, { sequence: 2, nodeNames: NODES, deployments, session: 'session-n1' });
    const res = await t.app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: bearer(cluster), payload });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().status.status).toBe('mismatched');
  }

  it('a success issues one signed runtime verification with its SVR; it verifies, and the CLI accepts it and refuses a tampered copy', async () => {
    const svc = await createFixtureService(t.app, admin, { replicasPerNode: 1, rolloutPolicy: { stabilityWindowSeconds: 0 } });
    const a = await pushRelease(t.app, api, svc, { tag: 'a' });
    const plan = await promoteAndSucceed(svc, a, 0);
    // A report that changes nothing more issues nothing more.
    await reportVerified(t.app, cluster, plan, svc.id, NODES, 2);
    const [only, ...more] = await list(svc.id);
    expect(more).toHaveLength(0);
    expect(only).toMatchObject({ kind: 'runtime-verification', rolloutId: plan.rolloutId, generation: 1, serviceId: svc.id, keyId: ed.trusted[0]?.keyId });
    const verified = verifyAttestationView(only, { keys, expectedDigest: plan.requestedDigest });
    expect(verified.ok, JSON.stringify(verified)).toBe(true);
    if (!verified.ok) return;
    expect(verified.value.attestation.predicate).toMatchObject({ chain: { sequence: 1, previousEnvelopeDigest: null }, outcome: 'succeeded' });
    // No trust policy: no signature verification to link, and the SVR does not claim one.
    expect(verified.value.attestation.predicate).toMatchObject({ signatureVerification: null, policyDigests: { trustPolicy: null } });
    expect(verified.value.summary?.predicateType).toBe('https://in-toto.io/attestation/svr/v0.2');
    expect(verified.value.summary?.predicate)
      .toMatchObject({ properties: ['CLOUDLY_RELEASE_RUNTIME_VERIFIED', 'CLOUDLY_RELEASE_ALL_REQUIRED_REPLICAS_VERIFIED'] });
    const fetched = await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/attestations/${only!.id}`, headers: bearer(api) });
    expect(fetched.json().attestation).toEqual(only);
    const missing = await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/attestations/att_nope`, headers: bearer(api) });
    expect(missing.json().code).toBe('attestation-not-found');

    const keyFile = join(dir, 'server.pub');
    await writeFile(keyFile, ed.publicKeyPem);
    await writeFile(join(dir, 'real.json'), JSON.stringify(only));
    const accepted = await runCli(['attestation', 'verify', '--file', join(dir, 'real.json'), '--key', keyFile, '--digest', plan.requestedDigest]);
    expect(accepted.code, accepted.stderr).toBe(0);
    // Tampered copies of the real attestation, each refused (exit 1) with the code and reason of the check it fails.
    const variants = await tamperedVariants(only!, plan.requestedDigest);
    expect(variants.length).toBeGreaterThanOrEqual(20);
    expect(new Set(variants.map((v) => v.name)).size).toBe(variants.length);
    const runs = await Promise.all(variants.map(async (variant, i) => {
      const copy = structuredClone(only!);
      await variant.tamper(copy);
      const file = join(dir, `tampered-${i}.json`);
      await writeFile(file, JSON.stringify(copy));
      return runCli(['attestation', 'verify', '--file', file, '--key', keyFile, '--digest', plan.requestedDigest, '--json']);
    }));
    const outcomes = runs.map((run, i) => ({
      name: variants[i]!.name, exit: run.code, code: run.code === 1 ? run.json().error.code : 'accepted', stderr: run.stderr,
    }));
    expect(outcomes).toEqual(variants.map((v) => ({ name: v.name, exit: 1, code: v.code, stderr: expect.stringMatching(v.reason) })));
  }, 120_000);

  it('drift: one revocation linked to the attestation it revokes, the release no longer verified for an abort; a new success attests anew', async () => {
    const svc = await createFixtureService(t.app, admin, { replicasPerNode: 1, rolloutPolicy: { stabilityWindowSeconds: 0 } });
    const a = await pushRelease(t.app, api, svc, { tag: 'a' });
    const b = await pushRelease(t.app, api, svc, { tag: 'b' });
    const c = await pushRelease(t.app, api, svc, { tag: 'c' });
    await promoteAndSucceed(svc, a, 0);
    const pb = await promoteAndSucceed(svc, b, 1);
    await drift(svc, pb);
    await drift(svc, pb); // the same drift reported again: nothing more
    const view = (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/rollout`, headers: bearer(api) })).json();
    expect(view.lifecycle.drift).toMatchObject({ kind: 'replica-mismatched' });
    const history = await fullRolloutHistory(t.app, api, svc.id);
    expect(history.find((r) => r.rolloutId === pb.rolloutId)?.revokedAt).toBe(view.lifecycle.drift.at);
    expect(history.filter((r) => r.revokedAt !== undefined)).toHaveLength(1);
    const chain = await list(svc.id);
    expect(chain.map((v) => v.kind)).toEqual(['runtime-verification', 'runtime-verification', 'revocation']);
    const revocation = chain[2]!;
    expect(revocation.revokes).toBe(chain[1]!.id);
    const members = chain.map((v) => {
      const checked = verifyAttestationView(v, { keys });
      if (!checked.ok) throw new Error(JSON.stringify(checked.refusal));
      return { envelopeDigest: checked.value.attestation.envelopeDigest, chain: checked.value.attestation.chain!, serviceId: svc.id };
    });
    expect(verifyChain(members).ok).toBe(true);

    // The built CLI fetches the rollout's attestations from the real API and verifies them with the keys the server lists.
    const url = await t.app.listen({ host: '127.0.0.1', port: 0 });
    const fetched = await runCli(['attestation', 'verify', '--service', svc.id, '--rollout', pb.rolloutId, '--server-keys', '-o', 'json'],
      { CLOUDLY_URL: url, CLOUDLY_TOKEN: api });
    expect(fetched.code, fetched.stderr).toBe(0);
    expect(fetched.json().attestations).toHaveLength(2);
    expect((await list(svc.id, `?rolloutId=${pb.rolloutId}`)).map((v) => v.kind)).toEqual(['runtime-verification', 'revocation']);

    // The last verified release is a now, not b: promote c (nothing reports), abort → a.
    const pc = (await promote(t.app, api, svc.id, c.releaseId, { generation: 2 })).json().service.data.imageDeployment;
    const aborted = await t.app.inject({
      method: 'POST',
      url: `/v1/services/${svc.id}/rollout/abort`,
      headers: { ...bearer(api), 'idempotency-key': 'abort-after-drift' },
      payload: { expectedCurrentRolloutId: pc.rolloutId, expectedRolloutGeneration: 3 },
    });
    expect(aborted.statusCode, aborted.body).toBe(200);
    expect(aborted.json().service.data.imageDeployment.releaseId).toBe(a.releaseId);

    // b succeeds anew: a new attestation, after the revocation in the chain.
    const pb2 = await promoteAndSucceed(svc, b, 4);
    const after = await list(svc.id);
    expect(after.at(-1)).toMatchObject({ kind: 'runtime-verification', rolloutId: pb2.rolloutId });
    expect(after.filter((v) => v.kind === 'runtime-verification' && v.rolloutId === pb2.rolloutId)).toHaveLength(1);
    const paged = await list(svc.id, '?limit=2');
    expect(paged).toHaveLength(2);
  }, 60_000);

  it('a rollout issued by approvals: its history entry, its events and its attestation name the requester and the approvers', async () => {
    const approvals = { required: 2, approvers: [{ role: 'admin' }, { role: 'api' }], requestTtlSeconds: 3600 };
    const svc = await createFixtureService(t.app, admin, {
      replicasPerNode: 1, rolloutPolicy: { stabilityWindowSeconds: 0 }, promotionPolicy: { approvals },
    });
    const [requester, alice, bob] = await Promise.all([
      t.token('api', { subject: 'ci-pipeline' }), t.token('admin', { subject: 'alice' }), t.token('api', { subject: 'bob' }),
    ]);
    const a = await pushRelease(t.app, requester, svc, { tag: 'a' });
    const asked = await promote(t.app, requester, svc.id, a.releaseId, { generation: 0, reason: 'ship it', key: 'approve-me' });
    expect(asked.statusCode, asked.body).toBe(202);
    const requestId = asked.json().promotionRequest.requestId as string;
    // A retry of the same request (same key) is the same request and the same event.
    expect((await promote(t.app, requester, svc.id, a.releaseId, { generation: 0, reason: 'ship it', key: 'approve-me' })).statusCode).toBe(202);
    for (const who of [alice, bob]) {
      const res = await t.app.inject({ method: 'POST', url: `/v1/services/${svc.id}/promotion-requests/${requestId}/approve`, headers: bearer(who) });
      expect(res.statusCode, res.body).toBe(200);
    }
    const [entry] = await fullRolloutHistory(t.app, admin, svc.id);
    expect(entry).toMatchObject({
      approval: {
        requestId, requestedBy: { subject: 'ci-pipeline', role: 'api' }, approvedBy: [{ subject: 'alice', role: 'admin' }, { subject: 'bob', role: 'api' }],
      },
    });
    const plan = (await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(admin) })).json().service.data.imageDeployment;
    await reportVerified(t.app, cluster, plan, svc.id, NODES);

    const events = await new EventLogStore(t.database).eventsAfter(svc.id, 0, 100);
    expect(events.map((e) => e.type).filter((type) => type.startsWith('promotion.') || type === 'rollout.issued'))
      .toEqual(['promotion.requested', 'promotion.approved', 'promotion.approved', 'rollout.issued']);
    expect(events.find((e) => e.type === 'promotion.requested')?.data).toMatchObject({
      requestId, releaseId: a.releaseId, digest: a.digest, generation: 0, required: 2, by: { subject: 'ci-pipeline' }, reason: 'ship it',
    });
    expect(events.filter((e) => e.type === 'promotion.approved').map((e) => [e.data['by'], e.data['approvals']]))
      .toEqual([[expect.objectContaining({ subject: 'alice' }), 1], [expect.objectContaining({ subject: 'bob' }), 2]]);
    expect(events.find((e) => e.type === 'rollout.issued')?.data).toMatchObject({ approval: { requestId, requestedBy: { subject: 'ci-pipeline' } } });

    const [attestation] = await list(svc.id);
    const verified = verifyAttestationView(attestation!, { keys, expectedDigest: plan.requestedDigest });
    expect(verified.ok, JSON.stringify(verified)).toBe(true);
    if (!verified.ok) return;
    expect(verified.value.attestation.predicate)
      .toMatchObject({ rollout: { approval: { requestId, requestedBy: 'ci-pipeline', approvedBy: ['alice', 'bob'] } } });
  }, 60_000);

  it('without a signing key nothing is issued and no key is listed', async () => {
    const bare = await buildTestApp({ LIFECYCLE_SWEEP_INTERVAL_MS: 60_000 });
    try {
      const [ad, ap, cl] = await Promise.all([bare.token('admin'), bare.token('api'), bare.token('cluster')]);
      await registerCluster(bare.app, ad, 'c1', NODES);
      const svc = await createFixtureService(bare.app, ad, { replicasPerNode: 1, rolloutPolicy: { stabilityWindowSeconds: 0 } });
      const a = await pushRelease(bare.app, ap, svc, { tag: 'a' });
      const plan = (await promote(bare.app, ap, svc.id, a.releaseId, { generation: 0 })).json().service.data.imageDeployment;
      await reportVerified(bare.app, cl, plan, svc.id, NODES, 1);
      expect((await bare.app.inject({ method: 'GET', url: '/v1/attestation-keys', headers: bearer(ap) })).json()).toEqual({ keys: [] });
      const listed = await bare.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/attestations`, headers: bearer(ap) });
      expect(listed.json()).toEqual({ attestations: [] });
      const doc = await bare.db.collection('services').findOne({ _id: svc.id as never });
      expect(doc?.['attestationsDue'] ?? []).toEqual([]);
    } finally {
      await bare.close();
    }
  }, 60_000);
});
