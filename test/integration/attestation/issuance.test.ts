import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import {
  parsePublicKeyPems, verifyAttestationView, verifyChain, type AttestationView, type TrustedKey,
} from '../../../src/domain/attestation/index.js';
import { buildTestApp, type TestApp } from '../../support/app.js';
import { testSigner } from '../../support/attestations.js';
import {
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

  async function promoteAndSucceed (svc: FixtureService, release: PushedRelease, generation: number): Promise<IImmutableImageDeploymentPlan> {
    const res = await promote(t.app, api, svc.id, release.releaseId, { generation });
    expect(res.statusCode, res.body).toBe(200);
    const plan = res.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
    const { status } = await reportVerified(t.app, cluster, plan, svc.id, NODES, 1);
    expect(status['status']).toBe('succeeded');
    return plan;
  }

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
    expect(verified.value.summary?.predicateType).toBe('https://in-toto.io/attestation/svr/v0.2');
    const fetched = await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/attestations/${only!.id}`, headers: bearer(api) });
    expect(fetched.json().attestation).toEqual(only);
    const missing = await t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}/attestations/att_nope`, headers: bearer(api) });
    expect(missing.json().code).toBe('attestation-not-found');

    const keyFile = join(dir, 'server.pub');
    await writeFile(keyFile, ed.publicKeyPem);
    await writeFile(join(dir, 'real.json'), JSON.stringify(only));
    const accepted = await runCli(['attestation', 'verify', '--file', join(dir, 'real.json'), '--key', keyFile, '--digest', plan.requestedDigest]);
    expect(accepted.code, accepted.stderr).toBe(0);
    // Tampered copies of the real attestation, each refused (exit 1) with the reason of the check it fails.
    const payloadOf = (v: AttestationView) => JSON.parse(Buffer.from(v.envelope.payload, 'base64').toString('utf8'));
    const withPayload = (change: (statement: any) => void) => (v: AttestationView): void => {
      const statement = payloadOf(v);
      change(statement);
      v.envelope.payload = Buffer.from(JSON.stringify(statement)).toString('base64');
    };
    const variants: Array<[string, (v: AttestationView) => void, RegExp]> = [
      ['a dropped replica', withPayload((st) => { st.predicate.replicas.pop(); }), /signature/],
      ['a swapped subject digest', withPayload((st) => { st.subject[0].digest.sha256 = 'f'.repeat(64); }), /signature/],
      ['a flipped signature byte', (v) => {
        const sig = Buffer.from(v.envelope.signatures[0]!.sig, 'base64');
        sig[8] = sig[8]! ^ 0x01;
        v.envelope.signatures[0]!.sig = sig.toString('base64');
      }, /signature/],
      ['a listing that names another rollout', (v) => { v.rolloutId = 'ro_other'; }, /view-inconsistent|rolloutId/],
      ['a listing with another digest', (v) => { v.digest = 'a'.repeat(64); }, /view-inconsistent|digest/],
      ['another payload type', (v) => { v.envelope.payloadType = 'application/json'; }, /payload-type|payloadType/],
    ];
    for (const [what, change, reason] of variants) {
      const copy = JSON.parse(JSON.stringify(only)) as AttestationView;
      change(copy);
      await writeFile(join(dir, 'tampered.json'), JSON.stringify(copy));
      const refused = await runCli(['attestation', 'verify', '--file', join(dir, 'tampered.json'), '--key', keyFile, '--digest', plan.requestedDigest]);
      expect(refused.code, `${what}: ${refused.stdout}${refused.stderr}`).toBe(1);
      expect(refused.stderr, what).toMatch(reason);
    }
  }, 60_000);

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
