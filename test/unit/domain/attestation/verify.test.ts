import { describe, expect, it } from 'vitest';
import {
  attestationIdOf, canonicalJson, REVOCATION_TYPE, RUNTIME_VERIFICATION_TYPE, signStatement, SVR_TYPE, svrStatement,
  verifyAttestationView, verifyChain, verifyEnvelope,
  type AttestationView, type DsseEnvelope, type RefusalCode, type VerifiedAttestation,
} from '../../../../src/domain/attestation/index.js';
import {
  samplePlan, sampleRuntimeStatement, signedRevocation, signedSample, T0, testSigner, trustedKeys, type TestSigner,
} from '../../../support/attestations.js';

const ed = testSigner('ed25519');
const ec = testSigner('ecdsa-p256');
const stranger = testSigner('ed25519');

/** Re-signs a changed statement with the trusted key: a wrongly issued envelope, which verification must still catch. */
async function resigned (signer: TestSigner, change: (statement: Record<string, any>) => void) {
  const statement: Record<string, any> = JSON.parse(JSON.stringify(sampleRuntimeStatement()));
  change(statement);
  return (await signStatement(statement, signer.signer)).envelope;
}

function refusalOf (result: ReturnType<typeof verifyEnvelope>): { code: RefusalCode, reason: string } {
  if (result.ok) throw new Error('accepted');
  return result.refusal;
}

function accepted (result: ReturnType<typeof verifyEnvelope>): VerifiedAttestation {
  if (!result.ok) throw new Error(`refused: ${result.refusal.code}: ${result.refusal.reason}`);
  return result.value;
}

describe('verifying an attestation offline', () => {
  it.each([['ed25519', ed], ['ecdsa-p256', ec]] as const)('accepts a runtime verification and its SVR signed with %s', async (_, s) => {
    const { signed, summary, statement } = await signedSample(s.signer);
    const a = accepted(verifyEnvelope(signed.envelope, { keys: s.trusted, expectedDigest: samplePlan().requestedDigest }));
    expect(a).toMatchObject({ predicateType: RUNTIME_VERIFICATION_TYPE, keyId: s.signer.activeKey.keyId, envelopeDigest: signed.digest });
    expect(a.subject).toEqual({ name: samplePlan().digestPinnedImageReference, digest: samplePlan().requestedDigest });
    // The payload is the statement's canonical JSON, standard base64.
    expect(Buffer.from(signed.envelope.payload, 'base64').toString('utf8')).toBe(canonicalJson(statement));
    expect(signed.envelope.signatures).toEqual([{ keyid: s.signer.activeKey.keyId, sig: expect.stringMatching(/^[A-Za-z0-9+/]+=*$/) }]);
    const svr = accepted(verifyEnvelope(summary.envelope, { keys: s.trusted }));
    expect(svr.predicateType).toBe(SVR_TYPE);
    expect(svr.predicate).toEqual({
      verifier: { id: 'https://serve.zone/cloudly-release/verifier/v1', policies: [{ name: 'rollout-policy', digest: { sha256: expect.stringMatching(/^[a-f0-9]{64}$/) } }] },
      timeCreated: '2026-12-04T12:00:35.000Z',
      properties: ['CLOUDLY_RELEASE_RUNTIME_VERIFIED', 'CLOUDLY_RELEASE_ALL_REQUIRED_REPLICAS_VERIFIED'],
    });
  });

  it('after a rotation, an attestation signed by the retired key still verifies against the listed keys', async () => {
    const old = testSigner('ecdsa-p256');
    const { signed } = await signedSample(old.signer);
    const rotated = testSigner('ed25519', old.publicKeyPem);
    const listed = rotated.signer.publicKeys();
    expect(listed.map((k) => [k.keyId, k.retired])).toEqual([[rotated.signer.activeKey.keyId, false], [old.signer.activeKey.keyId, true]]);
    const keys = trustedKeys(listed.map((k) => k.publicKeyPem).join('\n'));
    expect(accepted(verifyEnvelope(signed.envelope, { keys })).keyId).toBe(old.signer.activeKey.keyId);
  });

  it('a co-signature by an untrusted key is ignored when a trusted one verifies; alone it is refused', async () => {
    const { signed } = await signedSample(ed.signer);
    const foreign = (await signedSample(stranger.signer)).signed.envelope.signatures[0]!;
    expect(accepted(verifyEnvelope({ ...signed.envelope, signatures: [foreign, ...signed.envelope.signatures] }, { keys: ed.trusted })).keyId)
      .toBe(ed.signer.activeKey.keyId);
    expect(refusalOf(verifyEnvelope({ ...signed.envelope, signatures: [foreign] }, { keys: ed.trusted })))
      .toEqual({ code: 'signature-untrusted', reason: expect.stringContaining(`signature 1 (key ${stranger.signer.activeKey.keyId})`) });
  });

  it('refuses every kind of damage with its own code and a reason that says what failed', async () => {
    const { signed } = await signedSample(ed.signer);
    const e = signed.envelope;
    const payload = Buffer.from(e.payload, 'base64');
    const flipped = Buffer.from(payload);
    flipped[40] = flipped[40]! ^ 0x01;
    const cases: Array<[string, unknown, RefusalCode, RegExp, string?]> = [
      ['flipped payload byte', { ...e, payload: flipped.toString('base64') }, 'signature-invalid',
        /signature 1 \(trusted key [a-f0-9]{64}\) does not verify over the payload/],
      ['truncated', JSON.stringify(e).slice(0, 90), 'envelope-malformed', /not a DSSE envelope/],
      ['payload type', { ...e, payloadType: 'application/json' }, 'payload-type-unsupported',
        /payloadType is 'application\/json', expected 'application\/vnd.in-toto\+json'/],
      ['no signature', { ...e, signatures: [] }, 'signature-missing', /no signature/],
      ['payload not base64', { ...e, payload: `${e.payload.slice(0, 10)}*${e.payload.slice(11)}` }, 'envelope-malformed', /payload is not base64/],
      ['wrong digest', e, 'subject-digest-mismatch', /subject digest is sha256:[a-f0-9]{64}, expected sha256:0{64}/, `sha256:${'0'.repeat(64)}`],
    ];
    for (const [name, input, code, reason, digest] of cases) {
      const refusal = refusalOf(verifyEnvelope(input, { keys: ed.trusted, ...(digest ? { expectedDigest: digest } : {}) }));
      expect({ name, ...refusal }).toEqual({ name, code, reason: expect.stringMatching(reason) });
    }
  });

  it('refuses statements the trusted key signed but that do not hold together', async () => {
    const cases: Array<[string, (s: Record<string, any>) => void, RefusalCode, RegExp]> = [
      ['dropped replica', (s) => { s.predicate.replicas.splice(2, 1); }, 'replicas-incomplete',
        /node 'node-b' has 1 attested replica, the plan requires 2 per node/],
      ['duplicated replica', (s) => { s.predicate.replicas[1] = s.predicate.replicas[0]; }, 'replicas-duplicated', /'node-a.1.g3' is listed more than once/],
      ['foreign node', (s) => { s.predicate.replicas[0].nodeName = 'node-x'; }, 'replica-outside-scope', /node 'node-x', which is not a target node/],
      ['repo digest', (s) => { s.predicate.replicas[3].repoDigests = ['registry.example.com/demo/demo-shop@sha256:' + 'a'.repeat(64)]; },
        'replica-evidence-mismatch', /replica 'node-b.2.g3' on node 'node-b': its repo digests .* do not contain registry.example.com/],
      ['predicate type', (s) => { s.predicateType = 'https://slsa.dev/provenance/v1'; }, 'predicate-type-unsupported', /'https:\/\/slsa.dev\/provenance\/v1' is not one accepted/],
      ['statement type', (s) => { s._type = 'https://in-toto.io/Statement/v0.1'; }, 'statement-malformed', /not an in-toto Statement v1: \/_type/],
      ['schema', (s) => { delete s.predicate.replicas[0].containerImageId; }, 'predicate-invalid',
        /\/predicate\/replicas\/0\/containerImageId: Expected required property/],
      ['unknown member', (s) => { s.predicate.extra = true; }, 'predicate-invalid', /\/predicate\/extra: Unexpected property/],
      ['outcome', (s) => { s.predicate.outcome = 'rolled-back'; }, 'predicate-inconsistent', /outcome 'rolled-back' does not go with rollout mode 'promotion'/],
      ['subject name', (s) => { s.subject[0].name = 'registry.example.com/demo/demo-shop:v7'; }, 'subject-inconsistent', /does not pin the subject digest/],
      ['two subjects', (s) => { s.subject.push(s.subject[0]); }, 'subject-malformed', /exactly one subject, found 2/],
      ['chain link', (s) => { s.predicate.chain.sequence = 2; }, 'chain-link-invalid', /chain sequence 2 with no previous attestation/],
    ];
    for (const [name, change, code, reason] of cases) {
      const refusal = refusalOf(verifyEnvelope(await resigned(ed, change), { keys: ed.trusted }));
      expect({ name, ...refusal }).toEqual({ name, code, reason: expect.stringMatching(reason) });
    }
  });

  it('a revocation verifies and names what it revokes; the chain of attestation and revocation holds', async () => {
    const first = await signedSample(ed.signer);
    const revocation = await signedRevocation(ed.signer, first.signed, { sequence: 1, envelopeDigest: first.signed.digest });
    const a = accepted(verifyEnvelope(first.signed.envelope, { keys: ed.trusted }));
    const r = accepted(verifyEnvelope(revocation.signed.envelope, { keys: ed.trusted }));
    expect(r.predicateType).toBe(REVOCATION_TYPE);
    expect(r.predicate).toMatchObject({ revokes: { envelopeDigest: { sha256: first.signed.digest } }, reason: { kind: 'replica-mismatched' } });
    const members = [a, r].map((m) => ({ envelopeDigest: m.envelopeDigest, chain: m.chain!, serviceId: m.serviceId! }));
    expect(verifyChain(members)).toEqual({ ok: true, value: true });
    expect(verifyChain(members.slice(1), first.signed.digest)).toEqual({ ok: true, value: true });
  });

  it('the chain refuses gaps, reorders, forks, broken links and a wrong start', async () => {
    const one = await signedSample(ed.signer);
    const two = await signedSample(ed.signer, { previous: { sequence: 1, envelopeDigest: one.signed.digest }, verifiedAt: 2e12 });
    const three = await signedSample(ed.signer, { previous: { sequence: 2, envelopeDigest: two.signed.digest }, verifiedAt: 3e12 });
    const fork = await signedSample(ed.signer, { previous: { sequence: 1, envelopeDigest: one.signed.digest }, verifiedAt: 4e12 });
    const liar = await signedSample(ed.signer, { previous: { sequence: 2, envelopeDigest: 'c'.repeat(64) }, verifiedAt: 5e12 });
    const m = (x: { signed: { envelope: DsseEnvelope } }) => {
      const v = accepted(verifyEnvelope(x.signed.envelope, { keys: ed.trusted }));
      return { envelopeDigest: v.envelopeDigest, chain: v.chain!, serviceId: v.serviceId! };
    };
    const code = (r: ReturnType<typeof verifyChain>) => (r.ok ? 'ok' : `${r.refusal.code}: ${r.refusal.reason}`);
    expect(code(verifyChain([m(one), m(two), m(three)]))).toBe('ok');
    expect(code(verifyChain([m(one), m(three)]))).toMatch(/^chain-gap: .*sequence 1 is followed by 3/);
    expect(code(verifyChain([m(one), m(three), m(two)]))).toMatch(/^chain-reordered: .*sequence 2 .* comes after sequence 3/);
    expect(code(verifyChain([m(one), m(two), m(fork)])))
      .toMatch(/^chain-forked: the chain forks: attestations [a-f0-9]{64} and [a-f0-9]{64} both claim sequence 2/);
    expect(code(verifyChain([m(two), m(liar)]))).toMatch(/^chain-broken: the chain is broken at sequence 3/);
    expect(code(verifyChain([m(two)], 'f'.repeat(64)))).toMatch(/^chain-start-mismatch: attestation [a-f0-9]{64} follows [a-f0-9]{64}, not f{64}/);
  });

  it('an attestation as the API lists it: the listing must agree with what is signed, and its SVR must verify', async () => {
    const { signed, summary } = await signedSample(ec.signer);
    const view: AttestationView = {
      id: attestationIdOf('svc_demo-shop', 'ro_0003-demo', 'runtime-verification'),
      serviceId: 'svc_demo-shop',
      rolloutId: 'ro_0003-demo',
      generation: 3,
      kind: 'runtime-verification',
      issuedAt: T0 + 35_000,
      keyId: signed.keyId,
      envelope: signed.envelope,
      summaryEnvelope: summary.envelope,
      digest: signed.digest,
    };
    expect(verifyAttestationView(view, { keys: ec.trusted }).ok).toBe(true);
    const reason = (v: unknown) => { const r = verifyAttestationView(v, { keys: ec.trusted }); return r.ok ? 'ok' : `${r.refusal.code}: ${r.refusal.reason}`; };
    expect(reason({ ...view, digest: 'a'.repeat(64) })).toMatch(/^view-inconsistent: the listing's digest is "a{64}"/);
    expect(reason({ ...view, rolloutId: 'ro_other' }))
      .toMatch(/^view-inconsistent: the listing's rolloutId is "ro_other", the signed envelope's is "ro_0003-demo"/);
    expect(reason({ ...view, summaryEnvelope: { ...summary.envelope, signatures: [] } })).toMatch(/^summary-invalid: .*signature-missing/);
    expect(reason({ ...view, envelope: summary.envelope, digest: summary.digest })).toMatch(/^predicate-type-unsupported/);
    // Not signed, but derived by the server from what is: the id and the issue time.
    expect(reason({ ...view, id: 'att_1' }))
      .toMatch(/^view-inconsistent: the listing's id is "att_1", the signed envelope's is "att_rv_svc_demo-shop_ro_0003-demo"/);
    expect(reason({ ...view, issuedAt: 1 })).toMatch(new RegExp(`^view-inconsistent: the listing's issuedAt is 1, the signed envelope's is ${T0 + 35_000}`));
    // The SVR comes with a runtime verification and restates it.
    const { summaryEnvelope: _, ...bare } = view;
    expect(reason(bare)).toMatch(/^summary-invalid: a runtime verification is listed with its SVR/);
    const rollbackSummary = await signStatement(svrStatement(sampleRuntimeStatement({ plan: samplePlan({ mode: 'rollback' }) })), ec.signer);
    expect(reason({ ...view, summaryEnvelope: rollbackSummary.envelope }))
      .toMatch(/^summary-invalid: the SVR's properties \[.*"CLOUDLY_RELEASE_ROLLBACK_RUNTIME_VERIFIED"\] are not what the runtime verification states/);
  });
});
