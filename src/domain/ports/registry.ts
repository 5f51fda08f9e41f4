/**
 * The OCI registry, as the trust chain needs it (issue 21): read the signature artifacts of a digest
 * (OCI 1.1 referrers first, then cosign's tag scheme) and attach an artifact to a digest. Implemented
 * by src/outbound/registry/. Every method either answers or throws `registry-unavailable` (503,
 * retryable) naming the host: a registry that does not answer, times out, answers 5xx, refuses the
 * configured credentials, or may not be reached (an unconfigured host on a private address).
 */

/** An image by digest in its repository. */
export interface ImageLocator {
  /** `host[:port]` as image references name it (e.g. `ghcr.io`); the configuration maps it to an endpoint. */
  registryHost: string;
  /** e.g. `acme/shop` */
  repository: string;
  /** `sha256:<64 hex>` */
  digest: string;
}

export interface OciDescriptor {
  mediaType: string;
  digest: string;
  size: number;
  artifactType?: string;
  annotations?: Record<string, string>;
}

/** A layer of an artifact with its bytes, already checked against the descriptor's digest and size. */
export interface FetchedLayer {
  descriptor: OciDescriptor;
  bytes: Uint8Array;
}

/**
 * Where an artifact was found: the referrers API, the OCI 1.1 referrers tag (`sha256-<hex>`, for
 * registries without the API), or cosign's tags (`sha256-<hex>.sig` / `.att`).
 */
export type ArtifactSource = 'referrers-api' | 'referrers-tag' | 'cosign-tag';

/** One artifact manifest that may carry signatures or attestations, with the layers a verifier reads. */
export interface SignatureArtifact {
  source: ArtifactSource;
  /** The cosign tag it was read from (source `cosign-tag`). */
  tag?: string;
  /** `sha256:<hex>` of the manifest's bytes. */
  digest: string;
  /** The manifest's `artifactType`, else its config's media type. */
  artifactType: string;
  annotations: Record<string, string>;
  /** The layers of a verifiable media type (simple signing, DSSE, Sigstore bundle); others are not fetched. */
  layers: FetchedLayer[];
}

/** Something the client did not read, and why: the verdict names it. */
export interface SkippedArtifact {
  reference: string;
  reason: 'too-large' | 'too-many' | 'invalid' | 'digest-mismatch';
}

export interface SignatureArtifacts {
  image: ImageLocator;
  artifacts: SignatureArtifact[];
  skipped: SkippedArtifact[];
  /** Whether the referrers API answered (false: the registry has none, the referrers tag was read instead). */
  referrersApi: boolean;
}

/** An artifact to attach: its layers (and optionally a config), pushed as blobs, then its manifest. */
export interface ArtifactToAttach {
  artifactType: string;
  layers: Array<{ mediaType: string, bytes: Uint8Array, annotations?: Record<string, string> }>;
  /** Manifest annotations (referrer layout only). */
  annotations?: Record<string, string>;
}

/**
 * `referrer`: an OCI 1.1 manifest whose `subject` is the image (the referrers tag is updated too
 * when the registry has no referrers API). `cosign-tag`: appended to the image's `sha256-<hex>.att`
 * (or `.sig`) manifest, the layout `cosign verify-attestation` / `cosign verify` read.
 */
export type AttachLayout = { kind: 'referrer' } | { kind: 'cosign-tag', suffix: 'att' | 'sig' };

export interface AttachResult {
  /** The digest of the manifest pushed. */
  digest: string;
  /** referrer: whether the registry indexed it itself (API) or the referrers tag was written. */
  indexedBy?: 'api' | 'referrers-tag';
  /** cosign-tag: the tag written. */
  tag?: string;
}

export interface ImageRegistry {
  /** The signature and attestation artifacts of the digest, read afresh on every call (never cached). */
  fetchSignatureArtifacts(image: ImageLocator): Promise<SignatureArtifacts>;
  attach(image: ImageLocator, artifact: ArtifactToAttach, layout: AttachLayout): Promise<AttachResult>;
}
