import { execFile } from 'node:child_process';
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { dsse } from '@sigstore/core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ArtifactToAttach, ImageLocator } from '../../../src/domain/ports/registry.js';
import { compileTrustPolicy, verifyDigest } from '../../../src/domain/trust/index.js';
import { RegistryClient } from '../../../src/outbound/registry/index.js';
import { registrySettingsOf, type RegistryHostConfig } from '../../../src/registryConfig.js';
import { FIXTURE_HOST, fixtureBlob, fixtureDigest, fixtureIndex } from '../../support/cosignFixtures.js';
import { pushBlob, pushCosignFixtures, pushManifest } from '../../support/registryFixtures.js';
import { startRegistryProxy, type RegistryProxy } from '../../support/registryProxy.js';

// attach(): the server's own attestations onto an image, as a referrer and in cosign's tag layout,
// pushed to the real test registry, read back by the client, verified with real crypto — and, when a
// cosign binary is at hand (COSIGN, PATH, or $GOPATH/bin), accepted by `cosign verify-attestation`.
const registryUrl = inject('registryUrl');
const repository = `cloudly/attach-${process.pid}-${Date.now().toString(36)}`;
const PREDICATE = 'https://serve.zone/cloudly-release/runtime-verification/v1';
const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const publicKeyPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
const digest = fixtureDigest('unsigned');
const located: ImageLocator = { registryHost: FIXTURE_HOST, repository, digest };
const clients: RegistryClient[] = [];
const proxies: RegistryProxy[] = [];

function clientFor (endpoint: string, entry: Partial<RegistryHostConfig> = {}): RegistryClient {
  const client = new RegistryClient(registrySettingsOf({ registries: [{ host: FIXTURE_HOST, endpoint, allowHttp: true, ...entry }] }));
  clients.push(client);
  return client;
}

function envelopeLayer (key: KeyObject, predicateType: string, predicate: object): ArtifactToAttach['layers'][number] {
  const statement = { _type: 'https://in-toto.io/Statement/v1', subject: [{ name: `${FIXTURE_HOST}/${repository}`, digest: { sha256: digest.slice(7) } }], predicateType, predicate };
  const payload = Buffer.from(JSON.stringify(statement));
  const sig = sign('sha256', dsse.preAuthEncoding('application/vnd.in-toto+json', payload), key);
  const signatures = [{ keyid: '', sig: sig.toString('base64') }];
  const envelope = { payloadType: 'application/vnd.in-toto+json', payload: payload.toString('base64'), signatures };
  return {
    mediaType: 'application/vnd.dsse.envelope.v1+json',
    bytes: Buffer.from(JSON.stringify(envelope)),
    annotations: { 'dev.cosignproject.cosign/signature': '', predicateType },
  };
}

function simpleSignatureLayer (key: KeyObject): ArtifactToAttach['layers'][number] {
  const payload = Buffer.from(JSON.stringify({
    critical: {
      identity: { 'docker-reference': `${FIXTURE_HOST}/${repository}` },
      image: { 'docker-manifest-digest': digest },
      type: 'cosign container image signature',
    },
    optional: null,
  }));
  return {
    mediaType: 'application/vnd.dev.cosign.simplesigning.v1+json',
    bytes: payload,
    annotations: { 'dev.cosignproject.cosign/signature': sign('sha256', payload, key).toString('base64') },
  };
}

const verdict = async (client: RegistryClient, required: string[]) => verifyDigest({
  image: located,
  fetched: await client.fetchSignatureArtifacts(located),
  policy: compileTrustPolicy({ publicKeys: [{ keyId: 'server', publicKeyPem }], requiredAttestations: required }),
});

beforeAll(async () => {
  // The `unsigned` fixture image, copied into a repository of this file's own.
  await pushCosignFixtures(registryUrl);
  const manifest = fixtureIndex.manifests.find((m) => m.digest === digest);
  const bytes = fixtureBlob(digest);
  const parsed = JSON.parse(bytes.toString('utf8')) as { config: { digest: string }, layers: Array<{ digest: string }> };
  for (const blob of [parsed.config.digest, ...parsed.layers.map((l) => l.digest)]) await pushBlob(registryUrl, repository, fixtureBlob(blob), blob);
  await pushManifest(registryUrl, repository, digest, bytes, manifest?.mediaType ?? 'application/vnd.oci.image.manifest.v1+json');
});

afterAll(async () => {
  for (const client of clients) client.close();
  await Promise.all(proxies.map(async (p) => await p.stop()));
});

describe('attach', () => {
  it('appends a signature and an attestation to cosign\'s tags (through token-service auth), once each, and they verify', async () => {
    const front = await startRegistryProxy({ upstream: registryUrl, auth: { kind: 'token', username: 'server', password: 'push-secret' } });
    proxies.push(front);
    const client = clientFor(front.url, { auth: { kind: 'basic', username: 'server', password: 'push-secret' } });
    expect((await verdict(client, [PREDICATE])).outcome).toBe('refused');
    const signature = { artifactType: 'application/vnd.dev.cosign.artifact.sig.v1+json', layers: [simpleSignatureLayer(privateKey)] };
    const layers = [envelopeLayer(privateKey, PREDICATE, { rolloutId: 'ro_1' })];
    const attestation = { artifactType: 'application/vnd.dev.cosign.artifact.att.v1+json', layers };
    expect(await client.attach(located, signature, { kind: 'cosign-tag', suffix: 'sig' })).toMatchObject({ tag: `${digest.replace(':', '-')}.sig` });
    const first = await client.attach(located, attestation, { kind: 'cosign-tag', suffix: 'att' });
    expect(await client.attach(located, attestation, { kind: 'cosign-tag', suffix: 'att' })).toEqual(first);
    const passed = await verdict(client, [PREDICATE]);
    expect(passed).toMatchObject({ outcome: 'passed', signatures: [{ signer: { keyId: 'server' }, source: 'cosign-tag' }] });
    expect(front.requests.some((r) => r.startsWith('GET /token?') && r.includes('pull%2Cpush'))).toBe(true);
  });

  it('attaches an attestation as an OCI 1.1 referrer, indexed by the API or the referrers tag', async () => {
    const envelope = envelopeLayer(privateKey, 'https://serve.zone/cloudly-release/revocation/v1', { revokes: 'att_1' });
    const annotations = { 'org.opencontainers.image.created': '2026-12-04T00:00:00Z' };
    const artifact = { artifactType: 'application/vnd.dsse.envelope.v1+json', layers: [envelope], annotations };
    const direct = clientFor(registryUrl);
    const viaApi = await direct.attach(located, artifact, { kind: 'referrer' });
    const fetched = await direct.fetchSignatureArtifacts(located);
    const found = fetched.artifacts.find((a) => a.digest === viaApi.digest);
    expect(found?.source).toBe(viaApi.indexedBy === 'api' ? 'referrers-api' : 'referrers-tag');
    expect(found?.artifactType).toBe('application/vnd.dsse.envelope.v1+json');

    // A registry without the referrers API: the client writes the referrers tag, and reads it back.
    const front = await startRegistryProxy({ upstream: registryUrl, hideReferrersApi: true });
    proxies.push(front);
    const older = clientFor(front.url);
    const other = { ...artifact, layers: [envelopeLayer(privateKey, 'https://in-toto.io/attestation/svr/v0.2', { n: 1 })] };
    const viaTag = await older.attach(located, other, { kind: 'referrer' });
    expect(viaTag.indexedBy).toBe('referrers-tag');
    const read = await older.fetchSignatureArtifacts(located);
    expect(read.referrersApi).toBe(false);
    expect(read.artifacts.filter((a) => a.source === 'referrers-tag').map((a) => a.digest)).toContain(viaTag.digest);
    expect((await verdict(older, ['https://in-toto.io/attestation/svr/v0.2'])).outcome).toBe('passed');
  });

  const cosign = [process.env.COSIGN, path.join(process.env.GOPATH ?? path.join(homedir(), 'go'), 'bin', 'cosign')]
    .find((candidate) => candidate !== undefined && existsSync(candidate));
  it.runIf(cosign !== undefined)('cosign verify-attestation --key accepts the attestation attach wrote', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cosign-verify-'));
    writeFileSync(path.join(dir, 'server.pub'), publicKeyPem);
    const reference = `${new URL(registryUrl).host}/${repository}@${digest}`;
    const { stdout } = await promisify(execFile)(cosign as string, [
      'verify-attestation', '--key', path.join(dir, 'server.pub'), '--insecure-ignore-tlog', '--allow-http-registry', '--type', PREDICATE, reference,
    ], { env: { ...process.env, SIGSTORE_NO_CACHE: 'true', TUF_ROOT: dir }, timeout: 60_000 });
    const statement = JSON.parse(Buffer.from((JSON.parse(stdout.trim().split('\n')[0] ?? '{}') as { payload: string }).payload, 'base64').toString('utf8')) as {
      predicateType: string, subject: Array<{ digest: { sha256: string } }>,
    };
    expect(statement.predicateType).toBe(PREDICATE);
    expect(statement.subject[0]?.digest.sha256).toBe(createHash('sha256').update(fixtureBlob(digest)).digest('hex'));
  });
});
