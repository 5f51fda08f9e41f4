import { canonicalJson, sha256Hex } from './canonical.js';
import type { DsseEnvelope } from './dsse.js';

/**
 * The OCI artifact `cosign verify-attestation` reads (cosign v2, its tag scheme): an image manifest
 * tagged `sha256-<image digest hex>.att` in the image's repository, one layer per attestation —
 * media type `application/vnd.dsse.envelope.v1+json`, the DSSE envelope as its bytes, annotated with
 * `dev.cosignproject.cosign/signature: ""` (an attestation's signature is inside the envelope) and
 * `predicateType` — and the config go-containerregistry derives for such an image. Checked against
 * what `cosign attest` itself pushes (test/fixtures/cosign-attest/: byte-identical manifest and
 * config). Pure: the registry client pushes the blobs, then the manifest under the tag.
 */

export const DSSE_LAYER_MEDIA_TYPE = 'application/vnd.dsse.envelope.v1+json';
export const OCI_MANIFEST_MEDIA_TYPE = 'application/vnd.oci.image.manifest.v1+json';
export const OCI_CONFIG_MEDIA_TYPE = 'application/vnd.oci.image.config.v1+json';
export const COSIGN_SIGNATURE_ANNOTATION = 'dev.cosignproject.cosign/signature';

export interface OciDescriptor {
  mediaType: string;
  size: number;
  digest: string;
  annotations?: Record<string, string>;
}

export interface OciBlob {
  descriptor: OciDescriptor;
  bytes: Buffer;
}

/** JSON as Go's encoding/json writes it: JSON.stringify's text with <, >, & and U+2028/9 escaped. */
const goJson = (value: unknown): Buffer => Buffer.from(JSON.stringify(value)
  .replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`), 'utf8');

const blobOf = (mediaType: string, bytes: Buffer, annotations?: Record<string, string>): OciBlob => ({
  descriptor: { mediaType, size: bytes.length, digest: `sha256:${sha256Hex(bytes)}`, ...(annotations ? { annotations } : {}) },
  bytes,
});

/** The tag cosign looks for an image's attestations under. */
export const cosignAttestationTag = (imageDigest: string): string => `${imageDigest.replace(':', '-')}.att`;

/**
 * One attestation as a layer. Its bytes are the envelope's canonical JSON, so the layer digest is
 * `sha256:` + the attestation's digest (AttestationView.digest).
 */
export const attestationLayer = (envelope: DsseEnvelope, predicateType: string): OciBlob =>
  blobOf(DSSE_LAYER_MEDIA_TYPE, Buffer.from(canonicalJson(envelope), 'utf8'), { [COSIGN_SIGNATURE_ANNOTATION]: '', predicateType });

/**
 * The manifest and config of the `.att` image with these layers, in order (the layers already under
 * the tag first — cosign appends — then the new ones). Member order and spacing are Go's, as
 * go-containerregistry writes them: the bytes, and so the digests, are those cosign would push.
 */
export function cosignAttestationImage (layers: readonly OciDescriptor[]): { manifest: OciBlob, config: OciBlob } {
  const config = goJson({
    architecture: '',
    created: '0001-01-01T00:00:00Z',
    history: layers.map(() => ({ created: '0001-01-01T00:00:00Z' })),
    os: '',
    rootfs: { type: 'layers', diff_ids: layers.map((l) => l.digest) },
    config: {},
  });
  const configBlob = blobOf(OCI_CONFIG_MEDIA_TYPE, config);
  const descriptor = (d: OciDescriptor) => ({
    mediaType: d.mediaType,
    size: d.size,
    digest: d.digest,
    // Go marshals map keys sorted.
    ...(d.annotations ? { annotations: Object.fromEntries(Object.entries(d.annotations).sort(([a], [b]) => (a < b ? -1 : 1))) } : {}),
  });
  const manifest = goJson({
    schemaVersion: 2,
    mediaType: OCI_MANIFEST_MEDIA_TYPE,
    config: { mediaType: OCI_CONFIG_MEDIA_TYPE, size: configBlob.descriptor.size, digest: configBlob.descriptor.digest },
    layers: layers.map(descriptor),
  });
  return { manifest: blobOf(OCI_MANIFEST_MEDIA_TYPE, manifest), config: configBlob };
}
