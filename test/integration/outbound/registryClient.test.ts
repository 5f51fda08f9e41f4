import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { AppError } from '../../../src/errors.js';
import type { ImageLocator, SignatureArtifacts } from '../../../src/domain/ports/registry.js';
import { compileTrustPolicy, verifyDigest, type TrustVerdict } from '../../../src/domain/trust/index.js';
import { RegistryClient } from '../../../src/outbound/registry/index.js';
import { registrySettingsOf, type RegistryHostConfig } from '../../../src/registryConfig.js';
import { FIXTURE_HOST, FIXTURE_REPOSITORY, fixtureDigest, fixtureIndex, fixtureKeyPem, type FixtureCase } from '../../support/cosignFixtures.js';
import { pushBlob, pushCosignFixtures, pushManifest, registryHasReferrersApi, send } from '../../support/registryFixtures.js';
import { closedPort, startRegistryProxy, startSilentServer, type RegistryProxy } from '../../support/registryProxy.js';

// The registry client against the real test registry (globalSetup: REGISTRY_URL, registry:2, or
// tools/oci-registry), with the real cosign fixtures, real HTTP fronts for auth and TLS, real crypto.
const registryUrl = inject('registryUrl');
const tls = path.join(import.meta.dirname, '..', '..', 'fixtures', 'tls');
const policy = compileTrustPolicy({
  publicKeys: [{ keyId: 'ci', publicKeyPem: fixtureKeyPem('trusted') }, { keyId: 'release-ed25519', publicKeyPem: fixtureKeyPem('ed25519') }],
  requiredAttestations: ['https://slsa.dev/provenance/v1'],
});
const clients: RegistryClient[] = [];
const proxies: Array<{ stop(): Promise<void> }> = [];
let referrersApi = false;

const image = (name: FixtureCase): ImageLocator => ({ registryHost: FIXTURE_HOST, repository: FIXTURE_REPOSITORY, digest: fixtureDigest(name) });

/** A client that reaches registry.cloudly.test at `endpoint`. */
function clientFor (endpoint: string, entry: Partial<RegistryHostConfig> = {}, limits: object = {}): RegistryClient {
  const client = new RegistryClient(registrySettingsOf({ registries: [{ host: FIXTURE_HOST, endpoint, allowHttp: true, ...entry }], limits }));
  clients.push(client);
  return client;
}

async function proxy (options: Omit<Parameters<typeof startRegistryProxy>[0], 'upstream'>): Promise<RegistryProxy> {
  const started = await startRegistryProxy({ upstream: registryUrl, ...options });
  proxies.push(started);
  return started;
}

async function verdictOf (client: RegistryClient, name: FixtureCase): Promise<TrustVerdict> {
  return verifyDigest({ image: image(name), fetched: await client.fetchSignatureArtifacts(image(name)), policy });
}

async function unavailable (promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(() => undefined, (err: unknown) => err as AppError);
  expect(error?.code, String(error)).toBe('registry-unavailable');
  return error as AppError;
}

beforeAll(async () => {
  await pushCosignFixtures(registryUrl);
  referrersApi = await registryHasReferrersApi(registryUrl, FIXTURE_REPOSITORY, fixtureDigest('signed-bundle'));
});

afterAll(async () => {
  for (const client of clients) client.close();
  await Promise.all(proxies.map(async (p) => await p.stop()));
});

describe('reading signatures from the real registry', () => {
  it('reads cosign\'s .sig and .att tags, and the verdict passes', async () => {
    const fetched = await clientFor(registryUrl).fetchSignatureArtifacts(image('signed'));
    const tag = fixtureDigest('signed').replace(':', '-');
    expect(fetched.artifacts.map((a) => a.tag)).toEqual([`${tag}.sig`, `${tag}.att`]);
    expect(verifyDigest({ image: image('signed'), fetched, policy }).outcome).toBe('passed');
  });

  it('reads OCI 1.1 referrers (the API where the registry has it, else the referrers tag), and the verdicts pass', async () => {
    const client = clientFor(registryUrl);
    for (const name of ['signed-bundle', 'signed-referrer'] as const) {
      const fetched = await client.fetchSignatureArtifacts(image(name));
      expect(fetched.referrersApi).toBe(referrersApi);
      const source = referrersApi ? 'referrers-api' : 'referrers-tag';
      expect(fetched.artifacts.map((a) => a.source)).toEqual([source, source]);
      expect(verifyDigest({ image: image(name), fetched, policy }).outcome).toBe('passed');
    }
  });

  it('falls back to the referrers tag when the registry has no referrers API', async () => {
    const subject = fixtureDigest('signed-bundle');
    const listed = fixtureIndex.manifests.filter((m) => m.subject === subject).map((m) => ({ mediaType: m.mediaType, digest: m.digest, size: 0 }));
    for (const entry of listed) {
      entry.size = (await send(registryUrl, 'GET', `/v2/${FIXTURE_REPOSITORY}/manifests/${entry.digest}`, undefined, { accept: entry.mediaType })).body.length;
    }
    const index = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests: listed }));
    await pushManifest(registryUrl, FIXTURE_REPOSITORY, subject.replace(':', '-'), index, 'application/vnd.oci.image.index.v1+json');
    const front = await proxy({ hideReferrersApi: true });
    const fetched = await clientFor(front.url).fetchSignatureArtifacts(image('signed-bundle'));
    expect(fetched.referrersApi).toBe(false);
    expect(fetched.artifacts.map((a) => a.source)).toEqual(['referrers-tag', 'referrers-tag']);
    expect(verifyDigest({ image: image('signed-bundle'), fetched, policy }).outcome).toBe('passed');
  });

  it('asks again only what can change (the referrers list, the cosign tags); what it read by digest is kept', async () => {
    const front = await proxy({});
    const client = clientFor(front.url);
    const names = ['signed', 'signed-bundle'] as const;
    const first = await Promise.all(names.map(async (name) => await client.fetchSignatureArtifacts(image(name))));
    const firstRequests = front.requests.splice(0);
    expect(firstRequests.filter((r) => r.includes('/blobs/')).length).toBeGreaterThan(0);
    const again = await Promise.all(names.map(async (name) => await client.fetchSignatureArtifacts(image(name))));
    const asked = front.requests.splice(0);
    // By digest: nothing again. By tag or list: every time (a signature removed or added is seen at once).
    expect(asked.filter((r) => r.includes('/blobs/') || r.includes('/manifests/sha256:'))).toEqual([]);
    for (const name of names) {
      const tag = fixtureDigest(name).replace(':', '-');
      expect(asked).toContain(`GET /v2/${FIXTURE_REPOSITORY}/manifests/${tag}.sig`);
      expect(asked).toContain(`GET /v2/${FIXTURE_REPOSITORY}/manifests/${tag}.att`);
      expect(asked.some((r) => r.includes(`/referrers/${fixtureDigest(name)}`) || r.endsWith(`/manifests/${tag}`))).toBe(true);
    }
    expect(asked.length).toBeLessThan(firstRequests.length);
    // (The registry lists referrers in no fixed order.)
    const byDigest = (fetched: SignatureArtifacts[]) =>
      fetched.map((f) => ({ ...f, artifacts: [...f.artifacts].sort((a, b) => a.digest.localeCompare(b.digest)) }));
    expect(byDigest(again)).toEqual(byDigest(first));
    names.forEach((name, i) => expect(verifyDigest({ image: image(name), fetched: again[i] as SignatureArtifacts, policy }).outcome).toBe('passed'));
  });

  it('refuses each negative fixture with its own code', async () => {
    const client = clientFor(registryUrl);
    const codes: Record<string, string | undefined> = {};
    for (const name of ['unsigned', 'untrusted', 'wrong-digest', 'no-attestation'] as const) {
      const verdict = await verdictOf(client, name);
      codes[name] = verdict.outcome === 'refused' ? verdict.code : 'passed';
    }
    expect(codes).toEqual({
      unsigned: 'signature-missing', untrusted: 'signature-untrusted', 'wrong-digest': 'signature-digest-mismatch', 'no-attestation': 'attestation-missing',
    });
  });
});

describe('registry authentication', () => {
  it('answers a Basic challenge with the configured credentials, and is denied with wrong ones', async () => {
    const front = await proxy({ auth: { kind: 'basic', username: 'ci', password: 's3cret' } });
    expect((await verdictOf(clientFor(front.url, { auth: { kind: 'basic', username: 'ci', password: 's3cret' } }), 'signed')).outcome).toBe('passed');
    const wrongClient = clientFor(front.url, { auth: { kind: 'basic', username: 'ci', password: 'nope' } });
    const wrong = await unavailable(wrongClient.fetchSignatureArtifacts(image('signed')));
    expect(wrong.details).toMatchObject({ registryHost: FIXTURE_HOST, reason: 'denied', retryAfterSeconds: 5 });
    expect(wrong.headers['retry-after']).toBe('5');
    expect((await unavailable(clientFor(front.url).fetchSignatureArtifacts(image('signed')))).details['reason']).toBe('denied');
  });

  it('follows the token-service flow with credentials from a file, and reuses the token', async () => {
    const front = await proxy({ auth: { kind: 'token', username: 'robot', password: 'token-pass' } });
    const secret = path.join(mkdtempSync(path.join(tmpdir(), 'registry-secret-')), 'password');
    writeFileSync(secret, 'token-pass\n');
    const client = clientFor(front.url, { auth: { kind: 'basic', username: 'robot', passwordFile: secret } });
    expect((await verdictOf(client, 'signed')).outcome).toBe('passed');
    expect((await verdictOf(client, 'signed-bundle')).outcome).toBe('passed');
    expect(front.tokensIssued, front.requests.join('\n')).toBe(1);
    expect(front.requests.filter((r) => r.startsWith('GET /token?'))[0]).toContain(`scope=repository%3A${encodeURIComponent(FIXTURE_REPOSITORY)}%3Apull`);
    const wrongClient = clientFor(front.url, { auth: { kind: 'basic', username: 'robot', password: 'wrong' } });
    const denied = await unavailable(wrongClient.fetchSignatureArtifacts(image('signed')));
    expect(denied.details['reason']).toBe('denied');
  });

  it('trusts a registry\'s TLS certificate only with its CA configured', async () => {
    const front = await proxy({ tls: { key: readFileSync(path.join(tls, 'server.key')), cert: readFileSync(path.join(tls, 'server.pem')) } });
    expect((await verdictOf(clientFor(front.url, { caFile: path.join(tls, 'ca.pem') }), 'signed')).outcome).toBe('passed');
    expect((await unavailable(clientFor(front.url).fetchSignatureArtifacts(image('signed')))).details['reason']).toBe('unreachable');
  });
});

describe('a registry that cannot be used refuses, never hangs', () => {
  it('a registry that is down: registry-unavailable (unreachable), naming the host', async () => {
    const error = await unavailable(clientFor(`http://127.0.0.1:${await closedPort()}`).fetchSignatureArtifacts(image('signed')));
    expect(error.details).toMatchObject({ registryHost: FIXTURE_HOST, reason: 'unreachable' });
    expect(error.statusCode).toBe(503);
  });

  it('a registry that never answers: registry-unavailable (timeout) after the configured time', async () => {
    const silent = await startSilentServer();
    proxies.push(silent);
    const error = await unavailable(clientFor(silent.url, { timeoutMs: 300, connectTimeoutMs: 200 }).fetchSignatureArtifacts(image('signed')));
    expect(error.details['reason']).toBe('timeout');
    expect(error.message).toContain('no complete answer within 300 ms');
  });

  it('an oversize signature manifest is not read; the verdict says what was skipped', async () => {
    const repository = `cloudly/oversize-${process.pid}`;
    const digest = fixtureDigest('unsigned');
    const manifestType = 'application/vnd.oci.image.manifest.v1+json';
    const source = await send(registryUrl, 'GET', `/v2/${FIXTURE_REPOSITORY}/manifests/${digest}`, undefined, { accept: manifestType });
    const parsed = JSON.parse(source.body.toString('utf8')) as { config: { digest: string }, layers: Array<{ digest: string }> };
    for (const d of [parsed.config.digest, ...parsed.layers.map((l) => l.digest)]) {
      await pushBlob(registryUrl, repository, (await send(registryUrl, 'GET', `/v2/${FIXTURE_REPOSITORY}/blobs/${d}`)).body, d);
    }
    await pushManifest(registryUrl, repository, digest, source.body, manifestType);
    const huge = { ...parsed, annotations: { padding: 'x'.repeat(600 * 1024) } };
    await pushManifest(registryUrl, repository, `${digest.replace(':', '-')}.sig`, Buffer.from(JSON.stringify(huge)), manifestType);
    const located = { registryHost: FIXTURE_HOST, repository, digest };
    const fetched = await clientFor(registryUrl).fetchSignatureArtifacts(located);
    expect(fetched.skipped).toEqual([{ reference: `${digest.replace(':', '-')}.sig`, reason: 'too-large' }]);
    const verdict = verifyDigest({ image: located, fetched, policy });
    expect(verdict).toMatchObject({ outcome: 'refused', code: 'signature-missing', found: { skipped: fetched.skipped } });
  });

  it('a host that is not configured may not be on a loopback address (SSRF)', async () => {
    const port = new URL(registryUrl).port;
    const client = new RegistryClient(registrySettingsOf({}));
    clients.push(client);
    for (const registryHost of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      const error = await unavailable(client.fetchSignatureArtifacts({ registryHost, repository: FIXTURE_REPOSITORY, digest: fixtureDigest('signed') }));
      expect(error.details['reason'], registryHost).toBe('not-allowed');
    }
  });
});
