import { createHash } from 'node:crypto';
import type { OciDescriptor } from '../../domain/ports/registry.js';

/** OCI media types and the lenient reading of a manifest or index the client needs. */

export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
export const MANIFEST_ACCEPT = [
  OCI_MANIFEST, OCI_INDEX, 'application/vnd.docker.distribution.manifest.v2+json', 'application/vnd.docker.distribution.manifest.list.v2+json',
].join(', ');

/** The OCI empty descriptor: `{}`, the config of artifacts that have none. */
export const EMPTY_CONFIG = { mediaType: 'application/vnd.oci.empty.v1+json', bytes: Buffer.from('{}') } as const;

export const sha256Digest = (bytes: Uint8Array): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

export interface ParsedManifest {
  mediaType?: string;
  artifactType?: string;
  config?: OciDescriptor;
  layers?: OciDescriptor[];
  manifests?: OciDescriptor[];
  subject?: OciDescriptor;
  annotations?: Record<string, string>;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const DIGEST = /^sha256:[a-f0-9]{64}$/;

function descriptorOf (value: unknown): OciDescriptor | undefined {
  if (!isRecord(value) || typeof value['mediaType'] !== 'string' || typeof value['digest'] !== 'string' || !DIGEST.test(value['digest'])) return undefined;
  if (typeof value['size'] !== 'number' || !Number.isSafeInteger(value['size']) || value['size'] < 0) return undefined;
  const annotations = stringRecord(value['annotations']);
  return {
    mediaType: value['mediaType'],
    digest: value['digest'],
    size: value['size'],
    ...(typeof value['artifactType'] === 'string' ? { artifactType: value['artifactType'] } : {}),
    ...(annotations === undefined ? {} : { annotations }),
  };
}

function stringRecord (value: unknown): Record<string, string> | undefined {
  if (!isRecord(value)) return undefined;
  return Object.fromEntries(Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}

const descriptors = (value: unknown): OciDescriptor[] | undefined =>
  Array.isArray(value) ? value.map(descriptorOf).filter((d): d is OciDescriptor => d !== undefined) : undefined;

/** A manifest or index, keeping only well-formed descriptors (sha256 digests, sizes); undefined when not JSON. */
export function parseManifest (bytes: Uint8Array): ParsedManifest | undefined {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isRecord(json)) return undefined;
  const parsed: ParsedManifest = {};
  if (typeof json['mediaType'] === 'string') parsed.mediaType = json['mediaType'];
  if (typeof json['artifactType'] === 'string') parsed.artifactType = json['artifactType'];
  const config = descriptorOf(json['config']);
  if (config !== undefined) parsed.config = config;
  const subject = descriptorOf(json['subject']);
  if (subject !== undefined) parsed.subject = subject;
  const layers = descriptors(json['layers']);
  if (layers !== undefined) parsed.layers = layers;
  const manifests = descriptors(json['manifests']);
  if (manifests !== undefined) parsed.manifests = manifests;
  const annotations = stringRecord(json['annotations']);
  if (annotations !== undefined) parsed.annotations = annotations;
  return parsed;
}
