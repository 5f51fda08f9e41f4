import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { RUNTIME_VERIFICATION_TYPE, SVR_TYPE, type AttestationView } from '../../../src/domain/attestation/index.js';
import { RegistryClient } from '../../../src/outbound/registry/index.js';
import { registrySettingsOf } from '../../../src/registryConfig.js';
import { buildTestApp, serviceData, type TestApp } from '../../support/app.js';
import { testSigner } from '../../support/attestations.js';
import { FIXTURE_HOST, fixtureBlob, fixtureDigest, fixtureIndex } from '../../support/cosignFixtures.js';
import { bearer, registerCluster } from '../../support/fixtures.js';
import { goTool } from '../../support/ociRegistry.js';
import { pushBlob, pushCosignFixtures, pushManifest } from '../../support/registryFixtures.js';
import { fullReplicas, reportBody } from '../../support/reports.js';
import { eventually } from '../../support/wait.js';

/**
 * A registry that allows writes (`attachAttestations: true` in REGISTRY_CONFIG_FILE): the server's
 * attestation of a success is attached to the image — in cosign's `.att` tag and as an OCI referrer —
 * in the real test registry, and `cosign verify-attestation --key` (the real cosign v2, when found)
 * accepts it. A registry the configuration does not open for writes gets nothing.
 */

const registryUrl = inject('registryUrl');
const repository = `cloudly/attest-${process.pid}-${Date.now().toString(36)}`;
const digest = fixtureDigest('unsigned');
const signer = testSigner('ecdsa-p256');
const NODES = ['n1', 'n2'];
const cosign = goTool('cosign');
const DOWN_HOST = 'down.registry.test';

describe('attestations attached to the image', () => {
  let t: TestApp;
  let dir: string;
  let admin: string;
  let api: string;
  let client: RegistryClient;

  beforeAll(async () => {
    await pushCosignFixtures(registryUrl);
    const manifest = fixtureIndex.manifests.find((m) => m.digest === digest);
    const bytes = fixtureBlob(digest);
    const parsed = JSON.parse(bytes.toString('utf8')) as { config: { digest: string }, layers: Array<{ digest: string }> };
    for (const blob of [parsed.config.digest, ...parsed.layers.map((l) => l.digest)]) await pushBlob(registryUrl, repository, fixtureBlob(blob), blob);
    await pushManifest(registryUrl, repository, digest, bytes, manifest?.mediaType ?? 'application/vnd.oci.image.manifest.v1+json');
    dir = await mkdtemp(join(tmpdir(), 'attest-attach-'));
    const registries = {
      registries: [
        { host: FIXTURE_HOST, endpoint: registryUrl, allowHttp: true, attachAttestations: true },
        // A registry that is away (nothing listens on the discard port).
        { host: DOWN_HOST, endpoint: 'http://127.0.0.1:9', allowHttp: true, attachAttestations: true, connectTimeoutMs: 200, timeoutMs: 500 },
      ],
    };
    await writeFile(join(dir, 'registries.json'), JSON.stringify(registries));
    t = await buildTestApp({ ATTESTATION_SIGNING_KEY: signer.privateKeyPem, REGISTRY_CONFIG_FILE: join(dir, 'registries.json') });
    [admin, api] = await Promise.all([t.token('admin'), t.token('api')]);
    await registerCluster(t.app, admin, 'c1', NODES);
    client = new RegistryClient(registrySettingsOf(registries));
  }, 60_000);
  afterAll(async () => {
    client?.close();
    await t?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A service on `host`/`repository`, its release of `digest` promoted and made to succeed; its attestation. */
  async function attested (host: string, repo: string, image: string): Promise<{ attestation: AttestationView, reportStatus: number }> {
    const created = await t.app.inject({
      method: 'POST',
      url: '/v1/services',
      headers: bearer(admin),
      payload: serviceData({
        registryTarget: { protocol: 'oci', registryHost: host, repository: repo },
        placement: { clusterIds: ['c1'], replicasPerNode: 1 },
      }),
    });
    expect(created.statusCode, created.body).toBe(201);
    const serviceId = created.json().service.id as string;
    const event = {
      deploymentPolicy: 'immutable-digest',
      eventId: `evt-${serviceId}`,
      releaseId: `rel-${serviceId}`,
      protocol: 'oci',
      registryHost: host,
      repository: repo,
      tag: 'v1',
      registryRootDigest: image,
      digestPinnedImageReference: `${host}/${repo}@${image}`,
      imageUrl: `${host}/${repo}:v1`,
      observedAt: Date.now(),
      serviceId,
      imageId: 'img-1',
      manifestMediaType: manifest(),
    };
    const pushed = await t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(api), payload: event });
    expect(pushed.statusCode, pushed.body).toBe(201);
    const promoted = await t.app.inject({
      method: 'POST',
      url: `/v1/services/${serviceId}/image-releases/rel-${serviceId}/promote`,
      headers: { ...bearer(api), 'idempotency-key': `attach-${serviceId}` },
      payload: { expectedRolloutGeneration: 0, enableImmutableImage: true },
    });
    expect(promoted.statusCode, promoted.body).toBe(200);
    const plan = promoted.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
    const report = await t.app.inject({
      method: 'POST',
      url: '/v1/deployment-snapshots',
      headers: bearer(await t.token('cluster')),
      payload: reportBody(plan, serviceId, { sequence: 1, nodeNames: NODES, deployments: fullReplicas(plan, serviceId, NODES) }),
    });
    const [attestation] = (await t.app.inject({ method: 'GET', url: `/v1/services/${serviceId}/attestations`, headers: bearer(api) })).json()
      .attestations as AttestationView[];
    expect(attestation?.kind).toBe('runtime-verification');
    return { attestation: attestation!, reportStatus: report.statusCode };
  }

  it('a registry that is away never holds up the report: the attachment stays pending and is retried with a growing delay', async () => {
    const { attestation, reportStatus } = await attested(DOWN_HOST, 'team/away', `sha256:${'d'.repeat(64)}`);
    expect(reportStatus).toBe(200);
    const stored = async () => await t.db.collection('attestations').findOne({ _id: attestation.id as never });
    await eventually('a failed attachment recorded', async () => ((await stored())?.['attachFailures'] ?? 0) >= 1);
    const doc = await stored();
    expect(doc?.['attach']).toBe('pending');
    expect(doc?.['attachAfter']).toBeGreaterThan(Date.now());
    // The sweeper does not try it again before then.
    await t.app.inject({ method: 'GET', url: '/healthz' });
    expect((await stored())?.['attachFailures']).toBe(1);
  }, 60_000);

  it('a success\'s attestation is attached to its image; cosign verify-attestation --key accepts it', async () => {
    const { attestation } = await attested(FIXTURE_HOST, repository, digest);

    const located = { registryHost: FIXTURE_HOST, repository, digest };
    await eventually('the attestation in the registry', async () => {
      const fetched = await client.fetchSignatureArtifacts(located);
      const layers = fetched.artifacts.flatMap((a) => a.layers.map((l) => l.descriptor.digest));
      return fetched.artifacts.some((a) => a.source === 'cosign-tag') && layers.includes(`sha256:${attestation!.digest}`);
    });
    await eventually('marked attached', async () => (await t.db.collection('attestations').findOne({ _id: attestation!.id as never }))?.['attach'] === 'done');

    if (cosign === undefined) return;
    await writeFile(join(dir, 'server.pub'), signer.publicKeyPem);
    const reference = `${new URL(registryUrl).host}/${repository}@${digest}`;
    for (const type of [RUNTIME_VERIFICATION_TYPE, SVR_TYPE]) {
      const { stdout } = await promisify(execFile)(cosign, [
        'verify-attestation', '--key', join(dir, 'server.pub'), '--insecure-ignore-tlog', '--allow-http-registry', '--type', type, reference,
      ], { env: { ...process.env, SIGSTORE_NO_CACHE: 'true', TUF_ROOT: dir, HOME: dir }, timeout: 60_000 });
      const decode = (line: string): { predicateType: string } =>
        JSON.parse(Buffer.from((JSON.parse(line) as { payload: string }).payload, 'base64').toString('utf8'));
      const payloads = stdout.trim().split('\n').map(decode);
      expect(payloads.map((p) => p.predicateType)).toContain(type);
      console.log(`[attach] ${cosign} verify-attestation --key --type ${type} ${reference}: accepted`);
    }
    // A key that did not sign it is refused.
    await writeFile(join(dir, 'other.pub'), testSigner('ecdsa-p256').publicKeyPem);
    await expect(promisify(execFile)(cosign, [
      'verify-attestation', '--key', join(dir, 'other.pub'), '--insecure-ignore-tlog', '--allow-http-registry', '--type', RUNTIME_VERIFICATION_TYPE, reference,
    ], { env: { ...process.env, SIGSTORE_NO_CACHE: 'true', TUF_ROOT: dir, HOME: dir }, timeout: 60_000 })).rejects.toThrow();
  }, 120_000);
});

const manifest = (): string => fixtureIndex.manifests.find((m) => m.digest === digest)?.mediaType ?? 'application/vnd.oci.image.manifest.v1+json';
