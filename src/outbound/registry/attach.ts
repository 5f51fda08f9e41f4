import type { ArtifactToAttach, AttachLayout, AttachResult, ImageLocator, OciDescriptor } from '../../domain/ports/registry.js';
import { errors } from '../../errors.js';
import type { RegistryHostSettings } from '../../registryConfig.js';
import { EMPTY_CONFIG, MANIFEST_ACCEPT, OCI_INDEX, OCI_MANIFEST, parseManifest, sha256Digest, type ParsedManifest } from './manifests.js';
import type { RegistrySession } from './session.js';

/**
 * Attaching an artifact to an image: its blobs pushed (skipped when the registry has them), then
 * its manifest — as an OCI 1.1 referrer (`subject` = the image; the referrers tag `sha256-<hex>` is
 * updated when the registry does not index referrers itself), or appended to cosign's
 * `sha256-<hex>.att` / `.sig` manifest, the layout `cosign verify-attestation` reads. The cosign
 * tag is read, extended and written back: two writers at once can lose one layer (cosign has the
 * same race); the caller re-attaches what it cannot find.
 */

interface Target { session: RegistrySession, host: RegistryHostSettings, repository: string }

const write = (target: Target, request: { method: 'HEAD' | 'POST' | 'PUT', path: string, body?: Uint8Array, headers?: Record<string, string> }) =>
  target.session.request(target.host, { ...request, maxBytes: 64 * 1024, scope: `repository:${target.repository}:pull,push` });

const refused = (target: Target, what: string, status: number): Error =>
  errors.registryUnavailable(target.host.host, status === 401 || status === 403 ? 'denied' : 'invalid-response', `${what} answered HTTP ${status}`);

/** A monolithic upload in two steps (POST, then PUT with the digest): what every registry supports. */
async function pushBlob (target: Target, bytes: Uint8Array): Promise<string> {
  const digest = sha256Digest(bytes);
  const present = await write(target, { method: 'HEAD', path: `/v2/${target.repository}/blobs/${digest}` });
  if (present.status === 200) return digest;
  const started = await write(target, { method: 'POST', path: `/v2/${target.repository}/blobs/uploads/` });
  const location = started.headers.location;
  if (started.status !== 202 || location === undefined) throw refused(target, 'starting a blob upload', started.status);
  const upload = new URL(location, target.host.endpoint);
  if (upload.origin !== target.host.endpoint.origin) throw errors.registryUnavailable(target.host.host, 'not-allowed', `sent the upload to ${upload.origin}`);
  upload.searchParams.set('digest', digest);
  const done = await write(target, {
    method: 'PUT', path: `${upload.pathname}${upload.search}`, body: bytes, headers: { 'content-type': 'application/octet-stream' },
  });
  if (done.status !== 201) throw refused(target, 'uploading a blob', done.status);
  return digest;
}

async function pushManifest (target: Target, reference: string, manifest: object, mediaType: string): Promise<{ digest: string, subjectIndexed: boolean }> {
  const bytes = Buffer.from(JSON.stringify(manifest));
  const path = `/v2/${target.repository}/manifests/${reference}`;
  const answer = await write(target, { method: 'PUT', path, body: bytes, headers: { 'content-type': mediaType } });
  if (answer.status !== 201) throw refused(target, `pushing manifest ${reference}`, answer.status);
  return { digest: sha256Digest(bytes), subjectIndexed: answer.headers['oci-subject'] !== undefined };
}

const READ_LIMIT = 4 * 1024 * 1024;

const read = (target: Target, path: string, accept: string) => target.session.request(target.host, {
  method: 'GET', path: `/v2/${target.repository}/${path}`, headers: { accept }, maxBytes: READ_LIMIT, scope: `repository:${target.repository}:pull`,
});

interface ReadManifest { bytes: Buffer, parsed: ParsedManifest, mediaType: string }

async function readManifest (target: Target, reference: string, accept: string): Promise<ReadManifest | undefined> {
  const answer = await read(target, `manifests/${reference}`, accept);
  if (answer.status === 404) return undefined;
  const parsed = answer.status === 200 ? parseManifest(answer.body) : undefined;
  if (parsed === undefined) throw refused(target, `reading manifest ${reference}`, answer.status);
  const mediaType = parsed.mediaType ?? String(answer.headers['content-type'] ?? OCI_MANIFEST).split(';')[0] ?? OCI_MANIFEST;
  return { bytes: answer.body, parsed, mediaType };
}

async function pushLayers (target: Target, artifact: ArtifactToAttach): Promise<OciDescriptor[]> {
  const layers: OciDescriptor[] = [];
  for (const layer of artifact.layers) {
    const digest = await pushBlob(target, layer.bytes);
    const annotations = layer.annotations === undefined ? {} : { annotations: layer.annotations };
    layers.push({ mediaType: layer.mediaType, digest, size: layer.bytes.length, ...annotations });
  }
  return layers;
}

async function attachReferrer (target: Target, image: ImageLocator, artifact: ArtifactToAttach): Promise<AttachResult> {
  const subject = await readManifest(target, image.digest, MANIFEST_ACCEPT);
  if (subject === undefined) throw errors.registryUnavailable(target.host.host, 'invalid-response', `has no manifest ${image.digest} in ${target.repository}`);
  const layers = await pushLayers(target, artifact);
  const config = { mediaType: EMPTY_CONFIG.mediaType, digest: await pushBlob(target, EMPTY_CONFIG.bytes), size: EMPTY_CONFIG.bytes.length };
  const manifest = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    artifactType: artifact.artifactType,
    config,
    layers,
    subject: { mediaType: subject.mediaType, digest: image.digest, size: subject.bytes.length },
    ...(artifact.annotations === undefined ? {} : { annotations: artifact.annotations }),
  };
  const pushed = await pushManifest(target, sha256Digest(Buffer.from(JSON.stringify(manifest))), manifest, OCI_MANIFEST);
  if (pushed.subjectIndexed) return { digest: pushed.digest, indexedBy: 'api' };
  const api = await read(target, `referrers/${image.digest}`, OCI_INDEX);
  if (api.status === 200) return { digest: pushed.digest, indexedBy: 'api' };
  const size = Buffer.byteLength(JSON.stringify(manifest));
  await addToReferrersTag(target, image, { mediaType: OCI_MANIFEST, digest: pushed.digest, size, artifactType: artifact.artifactType });
  return { digest: pushed.digest, indexedBy: 'referrers-tag' };
}

/** The OCI 1.1 fallback: the index tagged `sha256-<hex>` lists the referrers of a registry without the API. */
async function addToReferrersTag (target: Target, image: ImageLocator, descriptor: OciDescriptor): Promise<void> {
  const tag = image.digest.replace(':', '-');
  const current = await readManifest(target, tag, OCI_INDEX);
  const listed = current?.parsed.manifests ?? [];
  if (listed.some((d) => d.digest === descriptor.digest)) return;
  await pushManifest(target, tag, { schemaVersion: 2, mediaType: OCI_INDEX, manifests: [...listed, descriptor] }, OCI_INDEX);
}

async function attachCosignTag (target: Target, image: ImageLocator, artifact: ArtifactToAttach, suffix: 'att' | 'sig'): Promise<AttachResult> {
  const tag = `${image.digest.replace(':', '-')}.${suffix}`;
  const current = await readManifest(target, tag, OCI_MANIFEST);
  const added = await pushLayers(target, artifact);
  const existing = current?.parsed.layers ?? [];
  const layers = [...existing, ...added.filter((layer) => !existing.some((e) => e.digest === layer.digest && sameAnnotations(e, layer)))];
  // cosign's signature image config: an image config whose rootfs lists the layers (what `cosign` writes and reads).
  const configBytes = Buffer.from(JSON.stringify({
    architecture: '',
    created: '0001-01-01T00:00:00Z',
    history: [{ created: '0001-01-01T00:00:00Z' }],
    os: '',
    rootfs: { type: 'layers', diff_ids: layers.map((l) => l.digest) },
    config: {},
  }));
  const config = { mediaType: 'application/vnd.oci.image.config.v1+json', digest: await pushBlob(target, configBytes), size: configBytes.length };
  const pushed = await pushManifest(target, tag, { schemaVersion: 2, mediaType: OCI_MANIFEST, config, layers }, OCI_MANIFEST);
  return { digest: pushed.digest, tag };
}

const sameAnnotations = (a: OciDescriptor, b: OciDescriptor): boolean => JSON.stringify(a.annotations ?? {}) === JSON.stringify(b.annotations ?? {});

export async function attachArtifact (
  session: RegistrySession, host: RegistryHostSettings, image: ImageLocator, artifact: ArtifactToAttach, layout: AttachLayout,
): Promise<AttachResult> {
  const target: Target = { session, host, repository: image.repository };
  return layout.kind === 'referrer' ? await attachReferrer(target, image, artifact) : await attachCosignTag(target, image, artifact, layout.suffix);
}
