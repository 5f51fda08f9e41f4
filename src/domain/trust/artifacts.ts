import { createHash } from 'node:crypto';
import { bundleFromJSON, type Bundle } from '@sigstore/bundle';
import { COSIGN_SIGN_PREDICATE_TYPE } from '../../contracts/trustPolicy.js';
import type { SignatureArtifact, SignatureArtifacts } from '../ports/registry.js';

/**
 * What the registry's artifacts hold, read without trusting anything yet: cosign simple-signing
 * signatures (a layer whose annotation carries the signature over the layer's bytes), DSSE
 * envelopes (cosign's `.att` layers), and Sigstore bundles (cosign's `--new-bundle-format`, whose
 * DSSE statement is a signature when its predicate type is cosign's sign type, else an attestation).
 */

export const MEDIA_TYPE = {
  simpleSigning: 'application/vnd.dev.cosign.simplesigning.v1+json',
  dsse: 'application/vnd.dsse.envelope.v1+json',
} as const;
const BUNDLE_MEDIA_TYPE = /^application\/vnd\.dev\.sigstore\.bundle(?:\.v0\.3\+json|\+json;version=0\.[1-3])$/;
export const isVerifiableMediaType = (mediaType: string): boolean =>
  mediaType === MEDIA_TYPE.simpleSigning || mediaType === MEDIA_TYPE.dsse || BUNDLE_MEDIA_TYPE.test(mediaType);

const SIGNATURE_ANNOTATION = 'dev.cosignproject.cosign/signature';
const CERTIFICATE_ANNOTATION = 'dev.sigstore.cosign/certificate';

export interface DsseEnvelope {
  payloadType: string;
  payload: Buffer;
  signatures: Array<{ keyid: string, sig: Buffer }>;
}

/** A simple-signing signature: `signature` over exactly `payload`. */
export interface SimpleSignature {
  kind: 'simple-signing';
  artifact: SignatureArtifact;
  payload: Buffer;
  signature: Buffer;
  /** Set on keyless signatures in the legacy layout (not verified: see docs/trust.md). */
  certificatePem?: string;
  /** sha256 over what the crypto check covers (payload and signature): the cache key with the key. */
  contentDigest: string;
}

/** A DSSE envelope over an in-toto statement, bare (`.att`) or inside a Sigstore bundle. */
export interface Envelope {
  kind: 'dsse';
  artifact: SignatureArtifact;
  envelope: DsseEnvelope;
  /** The bundle it came in: keyless bundles are verified by @sigstore/verify from it. */
  bundle?: Bundle;
  /** The bundle's public-key hint (base64 sha256 of the signer's SPKI). */
  keyHint?: string;
  statement?: Statement;
  contentDigest: string;
}

export interface Statement {
  predicateType: string;
  subjectDigests: string[];
}

export interface ReadArtifacts {
  signatures: Array<SimpleSignature | Envelope>;
  attestations: Envelope[];
  /** Layers that could not be read (invalid JSON, a bundle that is not one, no signature annotation). */
  unreadable: number;
}

const sha256 = (...parts: Array<string | Uint8Array>): string => {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part).update('\0');
  return hash.digest('hex');
};

export function readArtifacts (fetched: SignatureArtifacts): ReadArtifacts {
  const read: ReadArtifacts = { signatures: [], attestations: [], unreadable: 0 };
  for (const artifact of fetched.artifacts) {
    for (const layer of artifact.layers) {
      const entry = readLayer(artifact, layer.descriptor.mediaType, Buffer.from(layer.bytes), layer.descriptor.annotations ?? {});
      if (entry === undefined) read.unreadable += 1;
      else if (entry.kind === 'simple-signing' || entry.statement?.predicateType === COSIGN_SIGN_PREDICATE_TYPE) read.signatures.push(entry);
      else read.attestations.push(entry);
    }
  }
  return read;
}

type Entry = SimpleSignature | Envelope;

function readLayer (artifact: SignatureArtifact, mediaType: string, bytes: Buffer, annotations: Record<string, string>): Entry | undefined {
  if (mediaType === MEDIA_TYPE.simpleSigning) {
    const encoded = annotations[SIGNATURE_ANNOTATION];
    if (encoded === undefined || encoded === '') return undefined;
    const signature = Buffer.from(encoded, 'base64');
    const certificatePem = annotations[CERTIFICATE_ANNOTATION];
    return {
      kind: 'simple-signing',
      artifact,
      payload: bytes,
      signature,
      contentDigest: sha256('simple-signing', bytes, signature),
      ...(certificatePem === undefined || certificatePem === '' ? {} : { certificatePem }),
    };
  }
  const json = parseJson(bytes);
  if (json === undefined) return undefined;
  if (mediaType === MEDIA_TYPE.dsse) {
    const envelope = envelopeOf(json);
    return envelope === undefined ? undefined : withStatement({ kind: 'dsse', artifact, envelope, contentDigest: sha256('dsse', bytes) });
  }
  return bundleEntry(artifact, json, bytes);
}

function bundleEntry (artifact: SignatureArtifact, json: unknown, bytes: Buffer): Envelope | undefined {
  let bundle: Bundle;
  try {
    bundle = bundleFromJSON(json);
  } catch {
    return undefined;
  }
  const content = bundle.content;
  // A message-signature bundle signs a blob digest, not an image statement: nothing this verifier can bind to the image.
  if (content.$case !== 'dsseEnvelope') return undefined;
  const envelope: DsseEnvelope = {
    payloadType: content.dsseEnvelope.payloadType,
    payload: content.dsseEnvelope.payload,
    signatures: content.dsseEnvelope.signatures.map((s) => ({ keyid: s.keyid, sig: s.sig })),
  };
  const material = bundle.verificationMaterial.content;
  const keyHint = material.$case === 'publicKey' ? material.publicKey.hint : undefined;
  return withStatement({
    kind: 'dsse', artifact, envelope, bundle, contentDigest: sha256('bundle', bytes), ...(keyHint === undefined ? {} : { keyHint }),
  });
}

function parseJson (bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A DSSE envelope (https://github.com/secure-systems-lab/dsse): base64 payload and signatures. */
function envelopeOf (json: unknown): DsseEnvelope | undefined {
  if (!isRecord(json) || typeof json['payloadType'] !== 'string' || typeof json['payload'] !== 'string' || !Array.isArray(json['signatures'])) return undefined;
  const signatures = json['signatures'].filter(isRecord).flatMap((s) => typeof s['sig'] === 'string'
    ? [{ keyid: typeof s['keyid'] === 'string' ? s['keyid'] : '', sig: Buffer.from(s['sig'], 'base64') }]
    : []);
  return { payloadType: json['payloadType'], payload: Buffer.from(json['payload'], 'base64'), signatures };
}

const STATEMENT_TYPES = new Set(['https://in-toto.io/Statement/v0.1', 'https://in-toto.io/Statement/v1']);
export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';

/** The in-toto statement of the envelope (Statement v0.1 or v1), when it is one. */
function withStatement (entry: Envelope): Envelope {
  if (entry.envelope.payloadType !== IN_TOTO_PAYLOAD_TYPE) return entry;
  const json = parseJson(entry.envelope.payload);
  if (!isRecord(json) || typeof json['_type'] !== 'string' || !STATEMENT_TYPES.has(json['_type'])) return entry;
  if (typeof json['predicateType'] !== 'string' || !Array.isArray(json['subject'])) return entry;
  const subjectDigests = json['subject'].filter(isRecord).flatMap((subject) => {
    const digest = subject['digest'];
    return isRecord(digest) && typeof digest['sha256'] === 'string' ? [`sha256:${digest['sha256'].toLowerCase()}`] : [];
  });
  return { ...entry, statement: { predicateType: json['predicateType'], subjectDigests } };
}
