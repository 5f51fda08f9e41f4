import { createHash, randomUUID } from 'node:crypto';
import {
  buildDigestPinnedImageReference,
  type IImmutableRegistryPushEvent, type TServiceWritableData, type TSha256Digest,
} from '../contracts/index.js';
import type { ReleaseLabel } from './args.js';

/**
 * What the demo creates, all named after the demo name so that several demos share a server:
 * clusters `<name>-a` and `<name>-b` with nodes `<name>-a1` … `<name>-b3`, a service `<name>`
 * placed on both with 2 replicas per node (12 replicas), pulling from
 * `registry.example.com/demo/<name>`, and two releases whose digests are derived from the
 * name — so a re-run pushes the same releases again (a new observation, not a new release).
 */

export interface ClusterSpec {
  id: string;
  nodeNames: string[];
}

export interface ReleaseSpec {
  label: ReleaseLabel;
  releaseId: string;
  digest: TSha256Digest;
}

export interface FleetSpec {
  name: string;
  clusters: ClusterSpec[];
  replicasPerNode: number;
  registryHost: string;
  repository: string;
  releases: Record<ReleaseLabel, ReleaseSpec>;
  /** The digest a `--mismatch` node runs instead of the planned one. */
  rogueDigest: TSha256Digest;
  /** The service's stability window (`--stability-window`): short, so that the demo settles in seconds. */
  stabilityWindowSeconds: number;
}

const CLUSTER_SUFFIXES = ['a', 'b'];
const NODES_PER_CLUSTER = 3;
const REGISTRY_HOST = 'registry.example.com';

export const digestOf = (seed: string): TSha256Digest => `sha256:${createHash('sha256').update(seed).digest('hex')}`;

export function fleetSpec (name: string, stabilityWindowSeconds: number): FleetSpec {
  const releaseOf = (label: ReleaseLabel): ReleaseSpec => ({ label, releaseId: `${name}-${label}`, digest: digestOf(`${name}:${label}`) });
  return {
    name,
    clusters: CLUSTER_SUFFIXES.map((suffix) => ({
      id: `${name}-${suffix}`,
      nodeNames: Array.from({ length: NODES_PER_CLUSTER }, (_, i) => `${name}-${suffix}${i + 1}`),
    })),
    replicasPerNode: 2,
    registryHost: REGISTRY_HOST,
    repository: `demo/${name}`,
    releases: { v1: releaseOf('v1'), v2: releaseOf('v2') },
    rogueDigest: digestOf(`${name}:rogue`),
    stabilityWindowSeconds,
  };
}

export const allNodeNames = (spec: FleetSpec): string[] => spec.clusters.flatMap((c) => c.nodeNames);

/** A node named on the command line: its short name (`b2`) or its full name (`demo-shop-b2`). */
export function resolveNodeName (spec: FleetSpec, input: string): string | undefined {
  const nodes = allNodeNames(spec);
  return nodes.find((n) => n === input) ?? nodes.find((n) => n === `${spec.name}-${input}`);
}

export function serviceDataOf (spec: FleetSpec): TServiceWritableData {
  return {
    name: spec.name,
    description: 'Cloudly demo fleet (npm run demo)',
    imageId: `img-${spec.name}`,
    imageVersion: '1.0.0',
    environment: {},
    scaleFactor: spec.replicasPerNode,
    balancingStrategy: 'round-robin',
    ports: { web: 8080 },
    domains: [],
    deploymentIds: [],
    registryTarget: { protocol: 'oci', registryHost: spec.registryHost, repository: spec.repository },
    placement: { clusterIds: spec.clusters.map((c) => c.id), replicasPerNode: spec.replicasPerNode },
    // The other lifecycle settings keep the server's defaults (progress deadline 600 s, no automatic rollback).
    rolloutPolicy: { stabilityWindowSeconds: spec.stabilityWindowSeconds },
  };
}

/** The registry's report of a push of `release` (a fresh eventId: every run is a new observation). */
export function pushEventOf (spec: FleetSpec, release: ReleaseSpec, serviceId: string): IImmutableRegistryPushEvent {
  return {
    deploymentPolicy: 'immutable-digest',
    eventId: `${release.releaseId}-${randomUUID()}`,
    releaseId: release.releaseId,
    protocol: 'oci',
    registryHost: spec.registryHost,
    repository: spec.repository,
    tag: release.label,
    registryRootDigest: release.digest,
    digestPinnedImageReference: buildDigestPinnedImageReference(spec.registryHost, spec.repository, release.digest),
    imageUrl: `${spec.registryHost}/${spec.repository}:${release.label}`,
    observedAt: Date.now(),
    serviceId,
    imageId: `img-${spec.name}`,
    // A single-platform image: the engine resolves exactly the root digest (no multi-arch rule involved).
    manifestMediaType: 'application/vnd.oci.image.manifest.v1+json',
  };
}
