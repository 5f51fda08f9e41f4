import { EventLogStore } from '../../../src/store/eventLogStore.js';
import { createHash, createPublicKey, generateKeyPairSync, randomBytes, verify } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import canonicalize from 'canonicalize';
import {
  keyIdOf, pae, parsePublicKeyPems, verifyAttestationView, type AttestationView, type VerifiedView,
} from '../../../src/domain/attestation/index.js';
import type { RolloutHistoryItem } from '../../../src/domain/history.js';
import { trustPolicyDigest, type ReleaseVerification } from '../../../src/domain/trust/index.js';
import { buildTestApp, callTypedRequest, identity, serviceData, type TestApp } from '../../support/app.js';
import { FIXTURE_HOST, FIXTURE_REPOSITORY, fixtureDigest, fixtureKeyPem, type FixtureCase } from '../../support/cosignFixtures.js';
import { bearer, promote, registerCluster, rollback, rolloutHistory } from '../../support/fixtures.js';
import { pushCosignFixtures } from '../../support/registryFixtures.js';
import { reportVerified } from '../../support/reports.js';
import { startSwitchableRegistry, type SwitchableRegistry } from '../../support/switchableRegistry.js';
import { runCli } from '../cli/harness.js';

// Verification before promotion (docs/trust.md) against the real test registry (globalSetup) holding the
// real cosign fixtures (test/fixtures/cosign), through a real HTTP front that can be taken down; the real
// app, database and crypto. Every refusal must leave the service, its history, its releases and its
// status exactly as they were.
const registryUrl = inject('registryUrl');
const PROVENANCE = 'https://slsa.dev/provenance/v1';
const trustedPolicy = {
  publicKeys: [{ keyId: 'ci', publicKeyPem: fixtureKeyPem('trusted') }, { keyId: 'release-ed25519', publicKeyPem: fixtureKeyPem('ed25519') }],
  requiredAttestations: [PROVENANCE],
};

let t: TestApp;
let front: SwitchableRegistry;
let admin: string;
let api: string;
let cluster: string;
const signing = generateKeyPairSync('ed25519');

beforeAll(async () => {
  await pushCosignFixtures(registryUrl);
  front = await startSwitchableRegistry(registryUrl);
  const dir = mkdtempSync(path.join(tmpdir(), 'trust-'));
  const configFile = path.join(dir, 'registries.json');
  writeFileSync(configFile, JSON.stringify({ registries: [{ host: FIXTURE_HOST, endpoint: front.url, allowHttp: true }] }));
  t = await buildTestApp({
    REGISTRY_CONFIG_FILE: configFile,
    ATTESTATION_SIGNING_KEY: signing.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  });
  [admin, api, cluster] = await Promise.all([t.token('admin'), t.token('api'), t.token('cluster')]);
  await registerCluster(t.app, admin, 'c1', ['n1', 'n2']);
});
afterAll(async () => {
  await t.close();
  await front.stop();
});

async function createService (extra: Record<string, unknown> = {}): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/v1/services',
    headers: bearer(admin),
    payload: serviceData({
      registryTarget: { protocol: 'oci', registryHost: FIXTURE_HOST, repository: FIXTURE_REPOSITORY },
      placement: { clusterIds: ['c1'], replicasPerNode: 1 },
      trustPolicy: trustedPolicy,
      ...extra,
    }),
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().service.id as string;
}

/** The push event of a fixture image for the service; answers the push-event reply. */
async function push (serviceId: string, name: FixtureCase) {
  const { res, releaseId, digest } = await sendPush(serviceId, name, `evt_${randomBytes(8).toString('hex')}`);
  expect([200, 201], res.body).toContain(res.statusCode);
  return { releaseId, digest, body: res.json() as { autoPromotion?: { outcome: string, reason?: string } } };
}

async function sendPush (serviceId: string, name: FixtureCase, eventId: string, observedAt = Date.now()) {
  const digest = fixtureDigest(name);
  const releaseId = `rel_${createHash('sha256').update(`${serviceId}/${digest}`).digest('hex').slice(0, 24)}`;
  const res = await t.app.inject({
    method: 'POST',
    url: '/v1/registry/push-events',
    headers: bearer(api),
    payload: {
      deploymentPolicy: 'immutable-digest',
      eventId,
      releaseId,
      protocol: 'oci',
      registryHost: FIXTURE_HOST,
      repository: FIXTURE_REPOSITORY,
      tag: name,
      registryRootDigest: digest,
      digestPinnedImageReference: `${FIXTURE_HOST}/${FIXTURE_REPOSITORY}@${digest}`,
      imageUrl: `${FIXTURE_HOST}/${FIXTURE_REPOSITORY}:${name}`,
      observedAt,
      serviceId,
      imageId: 'img-1',
      manifestMediaType: 'application/vnd.oci.image.manifest.v1+json',
    },
  });
  return { res, releaseId, digest };
}

/**
 * Everything a refusal must leave as it was: the stored documents and what the API answers about them.
 * The one write a refusal makes is an event of the service's log (`promotion.refused`, docs/webhooks.md):
 * the log's bookkeeping in the service document (`eventSeq`, `outbox`) is left out; the event is checked. So are the
 * attestations the previous success left due (`attestationsDue`): issued in the background, whenever it happens.
 */
async function snapshot (serviceId: string): Promise<string> {
  const [service, rollouts, releases] = await Promise.all([
    t.db.collection('services').findOne({ _id: serviceId as never }, { projection: { eventSeq: 0, outbox: 0 } }),
    t.db.collection('rollouts').find({ serviceId }).sort({ generation: 1 }).toArray(),
    t.db.collection('releases').find({ 'data.serviceId': serviceId }).sort({ _id: 1 }).toArray(),
  ]);
  const answers = await Promise.all(['', '/rollouts', '/rollout'].map(async (suffix) =>
    (await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}${suffix}`, headers: bearer(admin) })).body));
  return JSON.stringify({ service, rollouts, releases, answers });
}

/** The current rollout succeeds (a rollback: is rolled back): every replica on n1 and n2 reported running and verified (stability window 0). */
async function succeed (serviceId: string, outcome: 'succeeded' | 'rolled-back' = 'succeeded'): Promise<void> {
  const res = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(admin) });
  const { status } = await reportVerified(t.app, cluster, res.json().service.data.imageDeployment, serviceId, ['n1', 'n2'], Date.now());
  expect(status['status']).toBe(outcome);
}

const generationOf = async (serviceId: string): Promise<{ generation: number, rolloutId?: string }> => {
  const res = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(admin) });
  const plan = res.json().service.data.imageDeployment as { rolloutGeneration: number, rolloutId: string } | undefined;
  return plan ? { generation: plan.rolloutGeneration, rolloutId: plan.rolloutId } : { generation: 0 };
};

/**
 * The rollout's runtime-verification attestation as the API lists it, verified offline (the domain's verifier and
 * the built CLI) with the server's public key; and the sha256 of the canonical JSON of the VSA envelope the
 * verification route serves for the release (docs/attestations.md "Digests": the recipe anyone can run).
 */
async function attestedWithSummary (serviceId: string, rolloutId: string, releaseId: string, digest: string) {
  const res = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}/attestations?rolloutId=${rolloutId}`, headers: bearer(api) });
  expect(res.statusCode, res.body).toBe(200);
  const [view, ...more] = res.json().attestations as AttestationView[];
  expect(more).toHaveLength(0);
  const publicKeyPem = signing.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const keys = parsePublicKeyPems(publicKeyPem);
  if (!keys.ok) throw new Error(keys.problem);
  const verified = verifyAttestationView(view, { keys: keys.value, expectedDigest: digest });
  expect(verified.ok, JSON.stringify(verified)).toBe(true);
  const dir = mkdtempSync(path.join(tmpdir(), 'trust-attestation-'));
  writeFileSync(path.join(dir, 'server.pub'), publicKeyPem);
  writeFileSync(path.join(dir, 'attestation.json'), JSON.stringify(view));
  const cli = await runCli(['attestation', 'verify', '--file', path.join(dir, 'attestation.json'), '--key', path.join(dir, 'server.pub'), '--digest', digest]);
  expect(cli.code, cli.stderr).toBe(0);
  const stored = (await verificationOf(serviceId, releaseId))?.summary;
  expect(stored).toBeDefined();
  const vsaDigest = createHash('sha256').update(canonicalize(stored!.envelope)!).digest('hex');
  return { ...(verified as { value: VerifiedView }).value, vsaDigest, storedDigest: stored!.digest };
}

async function verificationOf (serviceId: string, releaseId: string): Promise<ReleaseVerification | undefined> {
  const res = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}/image-releases/${releaseId}/verification`, headers: bearer(api) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().verification as ReleaseVerification | undefined;
}

describe('the trust policy on a service', () => {
  it('is stored and answered; a policy with a key that is no key is refused naming the field, nothing written', async () => {
    const serviceId = await createService();
    const read = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(admin) });
    expect(read.json().service.data.trustPolicy).toEqual(trustedPolicy);
    const before = await snapshot(serviceId);
    const bad = { publicKeys: [{ keyId: 'ci', publicKeyPem: '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n' }] };
    const payload = serviceData({ name: read.json().service.data.name, trustPolicy: bad });
    const res = await t.app.inject({ method: 'PUT', url: `/v1/services/${serviceId}`, headers: bearer(admin), payload });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().code).toBe('validation-failed');
    expect(JSON.stringify(res.json().problems)).toContain('/body/trustPolicy/publicKeys/0/publicKeyPem');
    expect(await snapshot(serviceId)).toBe(before);
    const created = await t.app.inject({ method: 'POST', url: '/v1/services', headers: bearer(admin), payload: serviceData({ trustPolicy: {} }) });
    expect(created.statusCode, created.body).toBe(400);
    expect(JSON.stringify(created.json().problems)).toContain('/body/trustPolicy');
  });

  it('is written and read over TypedRequest too; a bad policy is refused there naming the field', async () => {
    const created = await callTypedRequest(t.app, 'createService', { identity: identity(admin), serviceData: serviceData({ trustPolicy: trustedPolicy }) });
    expect(created.statusCode, created.body).toBe(200);
    const serviceId = created.json().response.service.id as string;
    const read = await callTypedRequest(t.app, 'getServiceById', { identity: identity(admin), serviceId });
    expect(read.json().response.service.data.trustPolicy).toEqual(trustedPolicy);
    const policy = { publicKeys: [trustedPolicy.publicKeys[0], { keyId: 'again', publicKeyPem: fixtureKeyPem('trusted') }] };
    const data = serviceData({ name: read.json().response.service.data.name, trustPolicy: policy });
    const refused = await callTypedRequest(t.app, 'updateService', { identity: identity(admin), serviceId, serviceData: data });
    expect(refused.json().error?.data?.code, refused.body).toBe('validation-failed');
    expect(JSON.stringify(refused.json().error.data)).toContain('/request/serviceData/trustPolicy/publicKeys/1/publicKeyPem');
  });
});

describe('promotion of a service with a trust policy', () => {
  it('promotes a digest cosign signed with a trusted key; its stored verification summary verifies offline', async () => {
    const serviceId = await createService();
    const { releaseId, digest } = await push(serviceId, 'signed');
    const res = await promote(t.app, api, serviceId, releaseId, { generation: 0 });
    expect(res.statusCode, res.body).toBe(200);
    const [item] = await rolloutHistory(t.app, api, serviceId);
    expect(item?.trust).toMatchObject({ basis: 'registry', policyDigest: trustPolicyDigest(trustedPolicy) });

    const verification = await verificationOf(serviceId, releaseId);
    expect(verification).toMatchObject({
      verdict: 'passed',
      policyDigest: trustPolicyDigest(trustedPolicy),
      signers: [{ keyId: 'ci' }],
      attestations: [{ predicateType: PROVENANCE, signer: { keyId: 'ci' } }],
    });
    const { envelope, keyId, digest: summaryDigest } = verification!.summary;
    expect(item?.trust?.summaryDigest).toBe(summaryDigest);
    // Offline: the server's public key, node:crypto, the DSSE PAE — nothing of the server.
    expect(keyId).toBe(keyIdOf(signing.publicKey));
    const payload = Buffer.from(envelope.payload, 'base64');
    const signature = Buffer.from(envelope.signatures[0]!.sig, 'base64');
    expect(verify(null, pae(envelope.payloadType, payload), createPublicKey(signing.publicKey.export({ type: 'spki', format: 'pem' })), signature)).toBe(true);
    const flipped = Buffer.from(payload);
    flipped.writeUInt8(flipped.readUInt8(flipped.length - 2) ^ 1, flipped.length - 2);
    expect(verify(null, pae(envelope.payloadType, flipped), signing.publicKey, signature)).toBe(false);
    const statement = JSON.parse(payload.toString('utf8'));
    expect(statement).toMatchObject({
      _type: 'https://in-toto.io/Statement/v1',
      subject: [{ name: `${FIXTURE_HOST}/${FIXTURE_REPOSITORY}@${digest}`, digest: { sha256: digest.slice(7) } }],
      predicateType: 'https://slsa.dev/verification_summary/v1',
      predicate: { verificationResult: 'PASSED', policy: { digest: { sha256: trustPolicyDigest(trustedPolicy) } }, verifiedLevels: ['SLSA_BUILD_LEVEL_1'] },
    });
    expect(statement.predicate.inputAttestations.length).toBeGreaterThanOrEqual(2);
    // In brief with the release listing (the console's and the CLI's Signature column).
    const page = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}/image-releases`, headers: bearer(api) });
    expect(page.json().verifications).toEqual({
      [releaseId]: {
        verdict: 'passed',
        verifiedAt: verification!.verifiedAt,
        policyDigest: trustPolicyDigest(trustedPolicy),
        signers: [{ keyId: 'ci' }],
        attestations: [PROVENANCE],
        summaryDigest,
      },
    });
    // The same over TypedRequest.
    const typed = await callTypedRequest(t.app, 'getImageReleaseVerification', { identity: identity(api), serviceId, releaseId });
    expect(typed.json().response).toEqual({ releaseId, verification });
  });

  const refusals: Array<[string, FixtureCase, string]> = [
    ['an unsigned digest', 'unsigned', 'signature-missing'],
    ['a digest signed by an untrusted key', 'untrusted', 'signature-untrusted'],
    ['a digest whose signature names another digest', 'wrong-digest', 'signature-digest-mismatch'],
    ['a digest without the required attestation', 'no-attestation', 'attestation-missing'],
  ];
  for (const [what, name, code] of refusals) {
    it(`refuses ${what} (${code}); the service, its history, releases and status are byte-identical`, async () => {
      const serviceId = await createService();
      const signed = await push(serviceId, 'signed');
      expect((await promote(t.app, api, serviceId, signed.releaseId, { generation: 0 })).statusCode).toBe(200);
      const { releaseId } = await push(serviceId, name);
      const before = await snapshot(serviceId);
      const res = await promote(t.app, api, serviceId, releaseId, { generation: 1 });
      expect(res.statusCode, res.body).toBe(422);
      expect(res.json().code).toBe(code);
      expect(res.json().image).toBe(`${FIXTURE_HOST}/${FIXTURE_REPOSITORY}@${fixtureDigest(name)}`);
      expect(await snapshot(serviceId)).toBe(before);
      expect(await verificationOf(serviceId, releaseId)).toBeUndefined();
      const refusals = (await new EventLogStore(t.database).eventsAfter(serviceId, 0, 100)).filter((e) => e.type === 'promotion.refused');
      expect(refusals.map((e) => e.data)).toEqual([expect.objectContaining({ code, releaseId, mode: 'promotion' })]);
    });
  }

  it('refuses over TypedRequest too, with the same code and details', async () => {
    const serviceId = await createService();
    const { releaseId } = await push(serviceId, 'untrusted');
    const res = await callTypedRequest(t.app, 'promoteServiceImageRelease', {
      identity: identity(api), serviceId, releaseId, idempotencyKey: randomBytes(8).toString('hex'), expectedRolloutGeneration: 0, enableImmutableImage: true,
    });
    expect(res.json().error?.data, res.body).toMatchObject({ code: 'signature-untrusted', signatures: 1, trustedKeyIds: ['ci', 'release-ed25519'] });
    expect((await generationOf(serviceId)).generation).toBe(0);
  });

  it('refuses while the registry is down (503 registry-unavailable, Retry-After), nothing written; promotes once it is back', async () => {
    const serviceId = await createService();
    const signed = await push(serviceId, 'signed');
    expect((await promote(t.app, api, serviceId, signed.releaseId, { generation: 0 })).statusCode).toBe(200);
    const { releaseId } = await push(serviceId, 'signed-ed25519');
    const before = await snapshot(serviceId);
    await front.down();
    let res;
    try {
      res = await promote(t.app, api, serviceId, releaseId, { generation: 1, key: 'retry-me' });
    } finally {
      await front.up();
    }
    expect(res.statusCode, res.body).toBe(503);
    expect(res.json().code).toBe('registry-unavailable');
    expect(res.headers['retry-after']).toBe('5');
    expect(await snapshot(serviceId)).toBe(before);
    // Not stored with the key: the retry under the same key verifies afresh.
    const retried = await promote(t.app, api, serviceId, releaseId, { generation: 1, key: 'retry-me' });
    expect(retried.statusCode, retried.body).toBe(200);
    expect((await verificationOf(serviceId, releaseId))?.signers).toEqual([{ keyId: 'release-ed25519' }]);
  });

  it('fails closed on a server without an attestation signing key: a verified digest is not promoted (500), nothing written', async () => {
    const unsigning = await buildTestApp({ REGISTRY_CONFIG_FILE: t.config.REGISTRY_CONFIG_FILE });
    try {
      const [owner, ci] = await Promise.all([unsigning.token('admin'), unsigning.token('api')]);
      await registerCluster(unsigning.app, owner, 'c1', ['n1']);
      const created = await unsigning.app.inject({
        method: 'POST',
        url: '/v1/services',
        headers: bearer(owner),
        payload: serviceData({
          registryTarget: { protocol: 'oci', registryHost: FIXTURE_HOST, repository: FIXTURE_REPOSITORY },
          placement: { clusterIds: ['c1'], replicasPerNode: 1 },
          trustPolicy: trustedPolicy,
        }),
      });
      const serviceId = created.json().service.id as string;
      const digest = fixtureDigest('signed');
      const releaseId = 'rel_unsigning';
      const pushed = await unsigning.app.inject({
        method: 'POST',
        url: '/v1/registry/push-events',
        headers: bearer(ci),
        payload: {
          deploymentPolicy: 'immutable-digest',
          eventId: 'evt_unsigning',
          releaseId,
          protocol: 'oci',
          registryHost: FIXTURE_HOST,
          repository: FIXTURE_REPOSITORY,
          tag: 'signed',
          registryRootDigest: digest,
          digestPinnedImageReference: `${FIXTURE_HOST}/${FIXTURE_REPOSITORY}@${digest}`,
          imageUrl: `${FIXTURE_HOST}/${FIXTURE_REPOSITORY}:signed`,
          observedAt: Date.now(),
          serviceId,
          imageId: 'img-1',
          manifestMediaType: 'application/vnd.oci.image.manifest.v1+json',
        },
      });
      expect(pushed.statusCode, pushed.body).toBe(201);
      const res = await promote(unsigning.app, ci, serviceId, releaseId, { generation: 0 });
      expect(res.statusCode, res.body).toBe(500);
      expect(res.json().code).toBe('internal-error');
      expect(await unsigning.db.collection('rollouts').countDocuments({ serviceId })).toBe(0);
      const read = await unsigning.app.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(owner) });
      expect(read.json().service.data.imageDeployment).toBeUndefined();
    } finally {
      await unsigning.close();
    }
  });

  it('a service without a trust policy promotes an unsigned digest without asking the registry (the behaviour before)', async () => {
    const serviceId = await createService({ trustPolicy: undefined });
    const { releaseId } = await push(serviceId, 'unsigned');
    const asked = front.requests.length;
    const res = await promote(t.app, api, serviceId, releaseId, { generation: 0 });
    expect(res.statusCode, res.body).toBe(200);
    expect(front.requests.length).toBe(asked);
    expect((await rolloutHistory(t.app, api, serviceId))[0]?.trust).toBeUndefined();
  });
});

describe('automatic promotion of a service with a trust policy', () => {
  it('an unsigned push promotes nothing and says why; a signed push promotes', async () => {
    const serviceId = await createService({ deployOnPush: true });
    const first = await push(serviceId, 'signed');
    expect(first.body.autoPromotion).toMatchObject({ outcome: 'skipped', reason: 'not-enabled' });
    // Automatic promotion starts after a first explicit promotion; a push waits while a rollout is in progress.
    expect((await promote(t.app, api, serviceId, first.releaseId, { generation: 0 })).statusCode).toBe(200);
    await succeed(serviceId);
    const before = JSON.parse(await snapshot(serviceId));
    const unsigned = await push(serviceId, 'unsigned');
    expect(unsigned.body.autoPromotion).toMatchObject({ outcome: 'skipped' });
    expect(unsigned.body.autoPromotion?.reason).toMatch(/^signature-missing: .*has no signature/);
    const after = JSON.parse(await snapshot(serviceId));
    // The push itself is recorded (its release is new); the service, its history and its status are as they were.
    expect(after.service).toEqual(before.service);
    expect(after.rollouts).toEqual(before.rollouts);
    expect(after.answers).toEqual(before.answers);
    const signed = await push(serviceId, 'signed-ed25519');
    expect(signed.body.autoPromotion).toMatchObject({ outcome: 'promoted', rolloutGeneration: 2 });
    expect((await rolloutHistory(t.app, api, serviceId))[0]?.trust?.basis).toBe('registry');
  });

  it('an unsigned push that waited for a rollout to settle is not promoted then: the lifecycle says why', async () => {
    const serviceId = await createService({ deployOnPush: true });
    const first = await push(serviceId, 'signed');
    expect((await promote(t.app, api, serviceId, first.releaseId, { generation: 0 })).statusCode).toBe(200);
    const waiting = await push(serviceId, 'unsigned');
    expect(waiting.body.autoPromotion).toMatchObject({ outcome: 'queued' });
    // The rollout succeeds; the report's follow-up tries the waiting push, which the trust policy refuses.
    await succeed(serviceId);
    let view: { lifecycle?: { deferredPromotion?: { outcome: string } } } = {};
    for (let attempt = 0; attempt < 40 && view.lifecycle?.deferredPromotion === undefined; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 250));
      view = (await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}/rollout`, headers: bearer(api) })).json();
    }
    expect(view.lifecycle?.deferredPromotion?.outcome).toBe('refused: signature-missing');
    expect((await generationOf(serviceId)).generation).toBe(1);
    expect(await t.db.collection('rollouts').countDocuments({ serviceId })).toBe(1);
  });

  it('a push while the registry is down answers 503 and promotes nothing; its redelivery once the registry is back promotes', async () => {
    const serviceId = await createService({ deployOnPush: true });
    const first = await push(serviceId, 'signed');
    expect((await promote(t.app, api, serviceId, first.releaseId, { generation: 0 })).statusCode).toBe(200);
    await succeed(serviceId);
    const before = JSON.parse(await snapshot(serviceId));
    const eventId = `evt_${randomBytes(8).toString('hex')}`;
    const observedAt = Date.now();
    await front.down();
    let res;
    try {
      ({ res } = await sendPush(serviceId, 'signed-ed25519', eventId, observedAt));
    } finally {
      await front.up();
    }
    expect(res.statusCode, res.body).toBe(503);
    expect(res.json().code).toBe('registry-unavailable');
    const after = JSON.parse(await snapshot(serviceId));
    expect(after.service).toEqual(before.service);
    expect(after.rollouts).toEqual(before.rollouts);
    const again = await sendPush(serviceId, 'signed-ed25519', eventId, observedAt);
    expect(again.res.statusCode, again.res.body).toBe(200);
    expect(again.res.json()).toMatchObject({ duplicate: true, autoPromotion: { outcome: 'promoted', rolloutGeneration: 2 } });
  });
});

describe('the runtime-verification attestation of a rollout admitted under the trust policy', () => {
  it('links the verification summary the promotion stored (the envelope the verification route serves); its SVR says signatures verified', async () => {
    const serviceId = await createService();
    const { releaseId, digest } = await push(serviceId, 'signed');
    expect((await promote(t.app, api, serviceId, releaseId, { generation: 0 })).statusCode).toBe(200);
    await succeed(serviceId);
    const { rolloutId } = await generationOf(serviceId);
    const { attestation, summary, vsaDigest, storedDigest } = await attestedWithSummary(serviceId, rolloutId!, releaseId, digest);
    expect(vsaDigest).toBe(storedDigest);
    expect(attestation.predicate).toMatchObject({
      signatureVerification: { predicateType: 'https://slsa.dev/verification_summary/v1', envelopeDigest: { sha256: vsaDigest } },
      policyDigests: { trustPolicy: { sha256: trustPolicyDigest(trustedPolicy) } },
    });
    expect(summary?.predicate).toMatchObject({ properties: expect.arrayContaining(['CLOUDLY_RELEASE_SIGNATURES_VERIFIED_BEFORE_PROMOTION']) });
  });
});

describe('rollback and abort rely on the stored verification', () => {
  /** A service with releases A (signed) and B (signed-ed25519) promoted in turn, A's rollout succeeded: B is current. */
  async function twoPromoted () {
    const serviceId = await createService();
    const a = await push(serviceId, 'signed');
    const b = await push(serviceId, 'signed-ed25519');
    expect((await promote(t.app, api, serviceId, a.releaseId, { generation: 0 })).statusCode).toBe(200);
    await succeed(serviceId);
    expect((await promote(t.app, api, serviceId, b.releaseId, { generation: 1 })).statusCode).toBe(200);
    return { serviceId, a, b, current: await generationOf(serviceId) };
  }

  it('rolls back to a release verified under the policy in force while the registry is down; the history says so', async () => {
    const { serviceId, a, current } = await twoPromoted();
    await front.down();
    let res;
    try {
      res = await rollback(t.app, api, serviceId, a.releaseId, { generation: current.generation, currentRolloutId: current.rolloutId! });
    } finally {
      await front.up();
    }
    expect(res.statusCode, res.body).toBe(200);
    const [item] = await rolloutHistory(t.app, api, serviceId);
    const stored = await verificationOf(serviceId, a.releaseId);
    expect(item?.trust).toEqual({ basis: 'stored-summary', policyDigest: trustPolicyDigest(trustedPolicy), summaryDigest: stored?.summary.digest });
    // The rollback's attestation links the stored summary it relied on.
    await succeed(serviceId, 'rolled-back');
    const { attestation, vsaDigest } = await attestedWithSummary(serviceId, item!.rolloutId, a.releaseId, a.digest);
    expect(attestation.predicate).toMatchObject({
      outcome: 'rolled-back', signatureVerification: { predicateType: 'https://slsa.dev/verification_summary/v1', envelopeDigest: { sha256: vsaDigest } },
    });
  });

  it('re-checks a rollback target once the policy changed: refused while the registry is down, then re-verified (history names both policies)', async () => {
    const { serviceId, a, current } = await twoPromoted();
    const read = await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}`, headers: bearer(admin) });
    const changed = { ...trustedPolicy, requiredAttestations: [] };
    const payload = serviceData({
      name: read.json().service.data.name,
      trustPolicy: changed,
      registryTarget: { protocol: 'oci', registryHost: FIXTURE_HOST, repository: FIXTURE_REPOSITORY },
      placement: { clusterIds: ['c1'], replicasPerNode: 1 },
    });
    const updated = await t.app.inject({ method: 'PUT', url: `/v1/services/${serviceId}`, headers: bearer(admin), payload });
    expect(updated.statusCode, updated.body).toBe(200);
    const before = await snapshot(serviceId);
    await front.down();
    let refused;
    try {
      refused = await rollback(t.app, api, serviceId, a.releaseId, { generation: current.generation, currentRolloutId: current.rolloutId! });
    } finally {
      await front.up();
    }
    expect(refused.statusCode, refused.body).toBe(503);
    expect(refused.json().code).toBe('registry-unavailable');
    expect(await snapshot(serviceId)).toBe(before);
    const res = await rollback(t.app, api, serviceId, a.releaseId, { generation: current.generation, currentRolloutId: current.rolloutId! });
    expect(res.statusCode, res.body).toBe(200);
    const [item] = await rolloutHistory(t.app, api, serviceId) as RolloutHistoryItem[];
    expect(item?.trust).toMatchObject({
      basis: 'registry', policyDigest: trustPolicyDigest(changed), storedPolicyDigest: trustPolicyDigest(trustedPolicy),
    });
    expect((await verificationOf(serviceId, a.releaseId))?.policyDigest).toBe(trustPolicyDigest(changed));
  });

  it('aborts to the last verified release while the registry is down (its stored summary is the evidence)', async () => {
    const { serviceId, a, current } = await twoPromoted();
    const asked = front.requests.length;
    await front.down();
    let res;
    try {
      res = await t.app.inject({
        method: 'POST',
        url: `/v1/services/${serviceId}/rollout/abort`,
        headers: { ...bearer(api), 'idempotency-key': randomBytes(8).toString('hex') },
        payload: { expectedCurrentRolloutId: current.rolloutId, expectedRolloutGeneration: current.generation },
      });
    } finally {
      await front.up();
    }
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().service.data.imageDeployment).toMatchObject({ mode: 'rollback', releaseId: a.releaseId });
    expect(front.requests.length).toBe(asked);
    const [item] = await rolloutHistory(t.app, api, serviceId);
    expect(item).toMatchObject({ trigger: { kind: 'abort' }, trust: { basis: 'stored-summary', policyDigest: trustPolicyDigest(trustedPolicy) } });
  });
});
