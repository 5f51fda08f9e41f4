// Pushes the cosign fixtures (test/fixtures/cosign) into a real registry over its plain HTTP API, as
// they were when cosign made them: blobs, then the images, then the signature tags and referrers. A
// registry without the referrers API gets the OCI 1.1 referrers tag (`sha256-<hex>` index) instead.
import { request } from 'node:http';
import { fixtureBlob, fixtureIndex, type FixtureManifest } from './cosignFixtures.js';

export interface Reply { status: number, headers: Record<string, string | string[] | undefined>, body: Buffer }

export function send (base: string, method: string, path: string, body?: Uint8Array, headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, base);
    const req = request(url, { method, headers: { ...headers, ...(body === undefined ? {} : { 'content-length': String(body.length) }) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : Buffer.from(body));
  });
}

export async function pushBlob (base: string, repository: string, bytes: Uint8Array, digest: string): Promise<void> {
  if ((await send(base, 'HEAD', `/v2/${repository}/blobs/${digest}`)).status === 200) return;
  const started = await send(base, 'POST', `/v2/${repository}/blobs/uploads/`);
  const location = started.headers['location'];
  if (started.status !== 202 || typeof location !== 'string') throw new Error(`blob upload start answered ${started.status}`);
  const upload = new URL(location, base);
  upload.searchParams.set('digest', digest);
  const done = await send(base, 'PUT', `${upload.pathname}${upload.search}`, bytes, { 'content-type': 'application/octet-stream' });
  if (done.status !== 201) throw new Error(`blob upload answered ${done.status}: ${done.body.toString('utf8')}`);
}

export async function pushManifest (base: string, repository: string, reference: string, bytes: Uint8Array, mediaType: string): Promise<Reply> {
  const reply = await send(base, 'PUT', `/v2/${repository}/manifests/${reference}`, bytes, { 'content-type': mediaType });
  if (reply.status !== 201) throw new Error(`manifest ${reference} answered ${reply.status}: ${reply.body.toString('utf8')}`);
  return reply;
}

const blobsOf = (manifest: FixtureManifest): string[] => {
  const parsed = JSON.parse(fixtureBlob(manifest.digest).toString('utf8')) as { config?: { digest: string }, layers?: Array<{ digest: string }> };
  return [parsed.config?.digest, ...(parsed.layers ?? []).map((l) => l.digest)].filter((d): d is string => d !== undefined);
};

export async function registryHasReferrersApi (base: string, repository: string, digest: string): Promise<boolean> {
  return (await send(base, 'GET', `/v2/${repository}/referrers/${digest}`, undefined, { accept: 'application/vnd.oci.image.index.v1+json' })).status === 200;
}

/** Every fixture into `base` (repository `cloudly/fixture`); idempotent, so test files may push concurrently. */
export async function pushCosignFixtures (base: string): Promise<void> {
  const repository = fixtureIndex.repository;
  const manifests = fixtureIndex.manifests;
  const blobs = new Set(manifests.flatMap(blobsOf));
  for (const digest of blobs) await pushBlob(base, repository, fixtureBlob(digest), digest);
  const images = new Set(Object.values(fixtureIndex.images));
  const ordered = [...manifests.filter((m) => images.has(m.digest)), ...manifests.filter((m) => !images.has(m.digest))];
  const referrers = new Map<string, FixtureManifest[]>();
  for (const manifest of ordered) {
    await pushManifest(base, repository, manifest.tag ?? manifest.digest, fixtureBlob(manifest.digest), manifest.mediaType);
    if (manifest.subject !== undefined) referrers.set(manifest.subject, [...(referrers.get(manifest.subject) ?? []), manifest]);
  }
  for (const [subject, listed] of referrers) {
    if (await registryHasReferrersApi(base, repository, subject)) continue;
    const index = {
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: listed.map((m) => {
        const bytes = fixtureBlob(m.digest);
        const parsed = JSON.parse(bytes.toString('utf8')) as { artifactType?: string };
        const artifactType = parsed.artifactType === undefined ? {} : { artifactType: parsed.artifactType };
        return { mediaType: m.mediaType, digest: m.digest, size: bytes.length, ...artifactType };
      }),
    };
    await pushManifest(base, repository, subject.replace(':', '-'), Buffer.from(JSON.stringify(index)), index.mediaType);
  }
}
