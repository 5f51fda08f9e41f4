import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { IService } from '../../src/contracts/index.js';
import { pushBlob, putManifest } from '../../test/support/ociRegistry.js';
import { startLocalRegistry } from '../../tools/oci-registry/launcher.js';
import type { BenchContext } from '../lib/context.js';
import { bearer, seedClusters } from '../lib/fixtures.js';
import { expectStatus, HttpClient } from '../lib/load.js';
import { projectDir } from '../lib/processes.js';
import { emptySamples, merge, summarize, type Samples, type Summary } from '../lib/stats.js';

/**
 * Promotion with verification before promotion (issue 21, docs/trust.md) next to promotion without a
 * trust policy, in one run, on one server process: the real registry (tools/oci-registry, the
 * integration tests' go-containerregistry registry, on loopback) holding the real cosign fixtures (test/fixtures/cosign), two services on the same
 * repository — one with a trust policy (two cosign keys, SLSA provenance required), one without —
 * each promoting its two signed releases in turn, one writer, blocks alternating between them.
 * Every trusted promotion asks the registry (referrers, `.sig`, `.att`) and signs a Verification
 * Summary; the verdict of a digest already verified is cached per (digest, policy digest, artifacts).
 */

const fixtures = path.join(projectDir, 'test', 'fixtures', 'cosign');
const PROVENANCE = 'https://slsa.dev/provenance/v1';

interface FixtureIndex {
  registryHost: string;
  repository: string;
  images: Record<string, string>;
  manifests: Array<{ digest: string, mediaType: string, tag?: string, subject?: string }>;
}

export interface TrustResult {
  plain: Summary;
  trusted: Summary;
  rounds: Array<{ plain: Summary, trusted: Summary }>;
}

const blob = (digest: string): Buffer => readFileSync(path.join(fixtures, 'blobs', 'sha256', digest.replace(/^sha256:/, '')));

/** The fixture images and their cosign tags, pushed into the registry at `host` (blobs, then images, then tags). */
async function pushFixtures (host: string, index: FixtureIndex): Promise<void> {
  const tagged = index.manifests.filter((m) => m.subject === undefined);
  for (const manifest of tagged) {
    const parsed = JSON.parse(blob(manifest.digest).toString('utf8')) as { config?: { digest: string }, layers?: Array<{ digest: string }> };
    for (const digest of [parsed.config?.digest, ...(parsed.layers ?? []).map((l) => l.digest)]) {
      if (digest !== undefined) await pushBlob(host, index.repository, blob(digest));
    }
  }
  const images = new Set(Object.values(index.images));
  for (const manifest of [...tagged.filter((m) => images.has(m.digest)), ...tagged.filter((m) => !images.has(m.digest))]) {
    await putManifest(host, index.repository, manifest.tag ?? manifest.digest, blob(manifest.digest), manifest.mediaType);
  }
}

interface Subject { serviceId: string, releaseIds: string[], generation: number }

async function createSubject (baseUrl: string, token: string, index: FixtureIndex, trustPolicy?: object): Promise<Subject> {
  const name = `trust-${trustPolicy ? 'policy' : 'none'}-${randomBytes(3).toString('hex')}`;
  const created = await expectStatus<{ service: IService }>([201], baseUrl, 'POST', '/v1/services', bearer(token), {
    name,
    description: 'benchmark service',
    imageId: 'img-bench',
    imageVersion: '1.0.0',
    environment: {},
    scaleFactor: 1,
    balancingStrategy: 'round-robin',
    ports: { web: 8080 },
    domains: [],
    deploymentIds: [],
    registryTarget: { protocol: 'oci', registryHost: index.registryHost, repository: index.repository },
    placement: { clusterIds: ['trust-c1'], replicasPerNode: 1 },
    ...(trustPolicy ? { trustPolicy } : {}),
  });
  const serviceId = created.service.id;
  const releaseIds: string[] = [];
  for (const image of ['signed', 'signed-ed25519']) {
    const digest = index.images[image] as string;
    const releaseId = `rel_${name}_${image}`;
    await expectStatus([201], baseUrl, 'POST', '/v1/registry/push-events', bearer(token), {
      deploymentPolicy: 'immutable-digest',
      eventId: `evt_${randomUUID()}`,
      releaseId,
      protocol: 'oci',
      registryHost: index.registryHost,
      repository: index.repository,
      tag: image,
      registryRootDigest: digest,
      digestPinnedImageReference: `${index.registryHost}/${index.repository}@${digest}`,
      imageUrl: `${index.registryHost}/${index.repository}:${image}`,
      observedAt: Date.now(),
      serviceId,
      imageId: 'img-bench',
      manifestMediaType: 'application/vnd.oci.image.manifest.v1+json',
    });
    releaseIds.push(releaseId);
  }
  return { serviceId, releaseIds, generation: 0 };
}

/** `count` promotions one after the other, alternating the two releases; each must answer 200. */
async function block (baseUrl: string, token: string, subject: Subject, count: number): Promise<Samples> {
  const client = new HttpClient(baseUrl, 1);
  const samples = emptySamples();
  const started = performance.now();
  try {
    for (let i = 0; i < count; i++) {
      const releaseId = subject.releaseIds[(subject.generation + 1) % 2] as string;
      const body = JSON.stringify({ expectedRolloutGeneration: subject.generation, enableImmutableImage: true });
      const t0 = performance.now();
      const answer = await client.request('POST', `/v1/services/${subject.serviceId}/image-releases/${releaseId}/promote`,
        { ...bearer(token), 'idempotency-key': randomUUID() }, body);
      samples.latenciesMs.push(performance.now() - t0);
      if (answer.status !== 200) throw new Error(`promotion answered ${answer.status}: ${answer.body.slice(0, 300)}`);
      subject.generation += 1;
      samples.outcomes['200'] = (samples.outcomes['200'] ?? 0) + 1;
    }
  } finally {
    client.close();
  }
  samples.ops = count;
  samples.elapsedMs = performance.now() - started;
  return samples;
}

export async function runTrustPromotion (ctx: BenchContext, perBlock: number, rounds: number): Promise<TrustResult> {
  const index = JSON.parse(readFileSync(path.join(fixtures, 'registry.json'), 'utf8')) as FixtureIndex;
  // The registry the integration tests use (tools/oci-registry: go-containerregistry's, built once with go and cached).
  const local = await startLocalRegistry({ log: (line) => ctx.opts.log(`trust: ${line}`) });
  const registry = { host: new URL(local.url).host, stop: local.stop };
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-trust-'));
  try {
    await pushFixtures(registry.host, index);
    const configFile = path.join(dir, 'registries.json');
    writeFileSync(configFile, JSON.stringify({ registries: [{ host: index.registryHost, endpoint: `http://${registry.host}`, allowHttp: true }] }));
    const signingKey = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const env = { REGISTRY_CONFIG_FILE: configFile, ATTESTATION_SIGNING_KEY: signingKey, DATA_DIR: dir };
    const server = await ctx.startServer('trust server', ctx.mongoUri, env);
    try {
      await seedClusters(ctx, [{ id: 'trust-c1', nodeNames: ['trust-n1', 'trust-n2'] }]);
      const token = await ctx.token({ subject: 'bench-trust', role: 'admin' });
      const key = (name: string): string => readFileSync(path.join(fixtures, 'keys', `${name}.pub`), 'utf8');
      const policy = {
        publicKeys: [{ keyId: 'ci', publicKeyPem: key('trusted') }, { keyId: 'release', publicKeyPem: key('ed25519') }],
        requiredAttestations: [PROVENANCE],
      };
      const plain = await createSubject(server.url, token, index);
      const trusted = await createSubject(server.url, token, index, policy);
      // Warm-up: both paths (JIT, connections, the verdicts of both digests).
      await block(server.url, token, plain, 20);
      await block(server.url, token, trusted, 20);
      const all = { plain: emptySamples(), trusted: emptySamples() };
      const perRound: TrustResult['rounds'] = [];
      for (let round = 0; round < rounds; round++) {
        // Alternate which goes first, so that a drift of the machine does not favour one side.
        const order = round % 2 === 0 ? (['plain', 'trusted'] as const) : (['trusted', 'plain'] as const);
        const got: Partial<Record<'plain' | 'trusted', Samples>> = {};
        for (const side of order) got[side] = await block(server.url, token, side === 'plain' ? plain : trusted, perBlock);
        perRound.push({ plain: summarize(got.plain as Samples), trusted: summarize(got.trusted as Samples) });
        merge(all.plain, got.plain as Samples);
        merge(all.trusted, got.trusted as Samples);
      }
      return { plain: summarize(all.plain), trusted: summarize(all.trusted), rounds: perRound };
    } finally {
      await server.stop();
    }
  } finally {
    await registry.stop();
  }
}
