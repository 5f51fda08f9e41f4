import { remember } from '../../domain/objects.js';
import type { AppError } from '../../errors.js';
import type { RegistryHostSettings, RegistrySettings } from '../../registryConfig.js';
import type {
  ArtifactSource, FetchedLayer, ImageLocator, ImageRegistry, OciDescriptor, SignatureArtifact, SignatureArtifacts, SkippedArtifact,
} from '../../domain/ports/registry.js';
import { isVerifiableMediaType } from '../../domain/trust/artifacts.js';
import { attachArtifact } from './attach.js';
import { RegistrySession } from './session.js';
import { MANIFEST_ACCEPT, OCI_INDEX, parseManifest, sha256Digest, type ParsedManifest } from './manifests.js';

/**
 * The OCI registry client of the trust chain (port: src/domain/ports/registry.ts). Reads a digest's
 * signature artifacts from three places at once — the OCI 1.1 referrers API (else the referrers
 * tag `sha256-<hex>` of registries without it) and cosign's `sha256-<hex>.sig` / `.att` tags —
 * because signers mix them (cosign's default writes tags even where the API exists, and its bundles
 * are referrers); asking in parallel costs one round trip. Every manifest and blob is bounded,
 * checked against its digest, and only the layers a verifier reads are fetched.
 *
 * What is addressed by its digest never changes, so a manifest asked for by digest and a layer, once
 * read and checked against that digest, are kept (per host and repository, small ones, a bounded
 * number): a promotion of a digest verified before asks only what can change — the referrers list
 * and the two cosign tags — and the registry sees three requests instead of every artifact again.
 */

/** Referrers worth reading: cosign's and Sigstore's types, and none/empty (some registries list the config type). */
const RELEVANT_ARTIFACT_TYPE = /cosign|sigstore|dsse|in-toto|^application\/vnd\.oci\.empty\.v1\+json$|^$/;

interface Found { artifacts: SignatureArtifact[], skipped: SkippedArtifact[] }

const isTooLarge = (err: unknown): boolean => (err as AppError | undefined)?.details?.['reason'] === 'too-large';

/** Content kept by digest (`cached`): at most this many entries, each at most this many bytes (≤ 32 MiB in all). */
const CONTENT_KEPT = 512;
const CONTENT_BYTES_KEPT = 64 * 1024;

export class RegistryClient implements ImageRegistry {
  private readonly session: RegistrySession;
  /** Manifests and layers read by digest and checked against it, per `<host>/<repository>@<digest>`. */
  private readonly content = new Map<string, Buffer>();

  constructor (settings: RegistrySettings) {
    this.session = new RegistrySession(settings);
  }

  async fetchSignatureArtifacts (image: ImageLocator): Promise<SignatureArtifacts> {
    const host = this.session.hostFor(image.registryHost);
    const tag = image.digest.replace(':', '-');
    const [referrers, signatures, attestations] = await Promise.all([
      this.referrers(host, image),
      this.artifact(host, image.repository, `${tag}.sig`, 'cosign-tag'),
      this.artifact(host, image.repository, `${tag}.att`, 'cosign-tag'),
    ]);
    return {
      image,
      artifacts: [...referrers.found.artifacts, ...signatures.artifacts, ...attestations.artifacts],
      skipped: [...referrers.found.skipped, ...signatures.skipped, ...attestations.skipped],
      referrersApi: referrers.api,
    };
  }

  attach: ImageRegistry['attach'] = async (image, artifact, layout) =>
    await attachArtifact(this.session, this.session.hostFor(image.registryHost), image, artifact, layout);

  close (): void {
    this.session.close();
  }

  private async get (host: RegistryHostSettings, repository: string, path: string, accept: string, maxBytes: number) {
    const scope = `repository:${repository}:pull`;
    return await this.session.request(host, { method: 'GET', path: `/v2/${repository}/${path}`, headers: { accept }, maxBytes, scope });
  }

  /**
   * A manifest or blob by digest, and whether the body is that digest's (and `size` bytes long, when
   * given): kept once read and so checked, else asked for; any other answer is the registry's as given.
   */
  private async byDigest (
    host: RegistryHostSettings, repository: string, kind: 'manifests' | 'blobs', digest: string, accept: string, maxBytes: number, size?: number,
  ): Promise<{ status: number, body: Buffer, matches: boolean }> {
    const key = `${host.endpoint.origin} ${host.host}/${repository}@${digest}`;
    const kept = this.content.get(key);
    if (kept) return { status: 200, body: kept, matches: true };
    const answer = await this.get(host, repository, `${kind}/${digest}`, accept, maxBytes);
    const matches = answer.status === 200 && (size === undefined || answer.body.length === size) && sha256Digest(answer.body) === digest;
    if (matches && answer.body.length <= CONTENT_BYTES_KEPT) remember(this.content, key, answer.body, CONTENT_KEPT);
    return { ...answer, matches };
  }

  /** The referrers API's index, else the referrers tag's; then each relevant referrer. */
  private async referrers (host: RegistryHostSettings, image: ImageLocator): Promise<{ api: boolean, found: Found }> {
    const limit = this.session.settings.limits.maxManifestBytes;
    let api = false;
    let source: ArtifactSource = 'referrers-api';
    let index: ParsedManifest | undefined;
    try {
      const answer = await this.get(host, image.repository, `referrers/${image.digest}`, OCI_INDEX, limit);
      api = answer.status === 200;
      index = api ? parseManifest(answer.body) : undefined;
      if (!api) {
        source = 'referrers-tag';
        const tagged = await this.get(host, image.repository, `manifests/${image.digest.replace(':', '-')}`, OCI_INDEX, limit);
        index = tagged.status === 200 ? parseManifest(tagged.body) : undefined;
      }
    } catch (err) {
      if (!isTooLarge(err)) throw err;
      return { api, found: { artifacts: [], skipped: [{ reference: `referrers of ${image.digest}`, reason: 'too-large' }] } };
    }
    const relevant = (index?.manifests ?? []).filter((d) => RELEVANT_ARTIFACT_TYPE.test(d.artifactType ?? ''));
    const max = this.session.settings.limits.maxArtifacts;
    const found = await Promise.all(relevant.slice(0, max).map(async (d) => await this.artifact(host, image.repository, d.digest, source)));
    const skipped = relevant.slice(max).map((d): SkippedArtifact => ({ reference: d.digest, reason: 'too-many' }));
    return { api, found: { artifacts: found.flatMap((f) => f.artifacts), skipped: [...found.flatMap((f) => f.skipped), ...skipped] } };
  }

  /** One artifact manifest (by digest or cosign tag) and its verifiable layers; absent → nothing found. */
  private async artifact (host: RegistryHostSettings, repository: string, reference: string, source: ArtifactSource): Promise<Found> {
    const byDigest = reference.startsWith('sha256:');
    let body: Buffer;
    try {
      const limit = this.session.settings.limits.maxManifestBytes;
      const answer = byDigest
        ? await this.byDigest(host, repository, 'manifests', reference, MANIFEST_ACCEPT, limit)
        : { ...(await this.get(host, repository, `manifests/${reference}`, MANIFEST_ACCEPT, limit)), matches: true };
      if (answer.status === 404) return { artifacts: [], skipped: [] };
      if (answer.status !== 200) return { artifacts: [], skipped: [{ reference, reason: 'invalid' }] };
      if (!answer.matches) return { artifacts: [], skipped: [{ reference, reason: 'digest-mismatch' }] };
      body = answer.body;
    } catch (err) {
      if (isTooLarge(err)) return { artifacts: [], skipped: [{ reference, reason: 'too-large' }] };
      throw err;
    }
    const digest = byDigest ? reference : sha256Digest(body);
    const manifest = parseManifest(body);
    if (manifest === undefined) return { artifacts: [], skipped: [{ reference, reason: 'invalid' }] };
    const skipped: SkippedArtifact[] = [];
    const layers = await Promise.all((manifest.layers ?? []).filter((d) => isVerifiableMediaType(d.mediaType))
      .map(async (d) => await this.layer(host, repository, d, skipped)));
    const artifact: SignatureArtifact = {
      source,
      ...(source === 'cosign-tag' ? { tag: reference } : {}),
      digest,
      artifactType: manifest.artifactType ?? manifest.config?.mediaType ?? '',
      annotations: manifest.annotations ?? {},
      layers: layers.filter((l): l is FetchedLayer => l !== undefined),
    };
    return { artifacts: [artifact], skipped };
  }

  private async layer (
    host: RegistryHostSettings, repository: string, descriptor: OciDescriptor, skipped: SkippedArtifact[],
  ): Promise<FetchedLayer | undefined> {
    const limit = this.session.settings.limits.maxBlobBytes;
    if (descriptor.size > limit) {
      skipped.push({ reference: descriptor.digest, reason: 'too-large' });
      return undefined;
    }
    try {
      const answer = await this.byDigest(host, repository, 'blobs', descriptor.digest, '*/*', limit, descriptor.size);
      if (answer.matches) {
        return { descriptor, bytes: answer.body };
      }
      skipped.push({ reference: descriptor.digest, reason: answer.status === 200 ? 'digest-mismatch' : 'invalid' });
    } catch (err) {
      if (!isTooLarge(err)) throw err;
      skipped.push({ reference: descriptor.digest, reason: 'too-large' });
    }
    return undefined;
  }
}
