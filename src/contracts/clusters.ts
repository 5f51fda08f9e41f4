/**
 * Cluster registration: this project's own API (not upstream). A cluster is one
 * Coreflow installation; its node names are what rollout target scopes list
 * (`IImmutableImageTargetScope.targetNodeNames`, unqualified), so a node name
 * belongs to at most one cluster at a time.
 *
 * Patterns: a cluster id is exactly what a `cluster` token's `clusterId` claim may
 * carry (src/http/auth.ts); a node name is a Docker/DNS-style host name. Both are
 * used only as values in queries (`_id`, `clusterId`), never as document keys.
 */
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { Name, Timestamp, contractLimits, strictObject } from './common.js';
import { IIdentity } from './identity.js';
import type { TypedRequestContract, TypedRequestShape } from './requests.js';

/** `Id`, restricted to the JWT `clusterId` claim pattern. */
export const ClusterId = Type.String({
  minLength: 1,
  maxLength: contractLimits.idLength,
  pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$',
});
export type ClusterId = Static<typeof ClusterId>;

/** A node (Docker swarm node / host) name: at most 253 characters, as a DNS name. */
export const NodeName = Type.String({
  minLength: 1,
  maxLength: 253,
  pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$',
});
export type NodeName = Static<typeof NodeName>;

/** The full node set of one cluster: unique names, at most `contractLimits.nodes`. */
export const ClusterNodeNames = Type.Array(NodeName, { maxItems: contractLimits.nodes, uniqueItems: true });
export type ClusterNodeNames = Static<typeof ClusterNodeNames>;

/** Node names one cluster of a listing carries at most (the first ones, sorted); `GET /v1/clusters/:clusterId` has them all. */
export const LISTED_NODE_NAMES = 32;

/**
 * A registered cluster as the API returns it; `nodeNames` sorted. Read alone (and as a registration's
 * answer) it carries every node name; in a listing only the first `LISTED_NODE_NAMES` of them, and
 * `nodeCount` says how many there are (a page of 4,096-node clusters would otherwise be megabytes).
 */
export const ICluster = strictObject({
  id: ClusterId,
  name: Type.Optional(Name),
  nodeNames: ClusterNodeNames,
  nodeCount: Type.Integer({
    minimum: 0,
    maximum: contractLimits.nodes,
    description: `how many nodes the cluster has; in a listing \`nodeNames\` holds only the first ${LISTED_NODE_NAMES} of them`,
  }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type ICluster = Static<typeof ICluster>;

/** What a registration declares (REST `PUT /v1/clusters/:clusterId` body). */
export const TClusterWritableData = strictObject({
  name: Type.Optional(Name),
  nodeNames: ClusterNodeNames,
});
export type TClusterWritableData = Static<typeof TClusterWritableData>;

/** Upper bound (and default) of one cluster listing. */
export const clusterListLimits = { default: 100, max: contractLimits.clusters } as const;

export const ClusterListLimit = Type.Integer({ minimum: 1, maximum: clusterListLimits.max });

// registerCluster --------------------------------------------------------------

export const RegisterClusterRequest = strictObject({
  identity: IIdentity,
  clusterId: ClusterId,
  name: Type.Optional(Name),
  nodeNames: ClusterNodeNames,
});
export type RegisterClusterRequest = Static<typeof RegisterClusterRequest>;

export const RegisterClusterResponse = strictObject({ cluster: ICluster });
export type RegisterClusterResponse = Static<typeof RegisterClusterResponse>;

// getCluster -------------------------------------------------------------------

export const GetClusterRequest = strictObject({
  identity: IIdentity,
  clusterId: ClusterId,
});
export type GetClusterRequest = Static<typeof GetClusterRequest>;

export const GetClusterResponse = strictObject({ cluster: ICluster });
export type GetClusterResponse = Static<typeof GetClusterResponse>;

// listClusters -----------------------------------------------------------------

export const ListClustersRequest = strictObject({
  identity: IIdentity,
  /** At most this many clusters (default `clusterListLimits.default`). */
  limit: Type.Optional(ClusterListLimit),
  /** Keyset cursor: only clusters whose id sorts after this one. */
  after: Type.Optional(ClusterId),
});
export type ListClustersRequest = Static<typeof ListClustersRequest>;

export const ListClustersResponse = strictObject({
  clusters: Type.Array(ICluster, { maxItems: clusterListLimits.max }),
});
export type ListClustersResponse = Static<typeof ListClustersResponse>;

// Contracts by method ----------------------------------------------------------

/** Same shape as the upstream method contracts in requests.ts. */
const clusterContract = <M extends string, Req extends TObject, Res extends TSchema>(
  method: M,
  request: Req,
  response: Res,
) => ({
  method,
  request,
  payload: Type.Omit(request, ['identity']),
  response,
}) satisfies TypedRequestContract<M, Req, TSchema, Res>;

export const IRequest_Admin_Cloudly_RegisterCluster = clusterContract('registerCluster', RegisterClusterRequest, RegisterClusterResponse);
export const IRequest_Any_Cloudly_GetCluster = clusterContract('getCluster', GetClusterRequest, GetClusterResponse);
export const IRequest_Any_Cloudly_ListClusters = clusterContract('listClusters', ListClustersRequest, ListClustersResponse);

export type IRequest_Admin_Cloudly_RegisterCluster = TypedRequestShape<typeof IRequest_Admin_Cloudly_RegisterCluster>;
export type IRequest_Any_Cloudly_GetCluster = TypedRequestShape<typeof IRequest_Any_Cloudly_GetCluster>;
export type IRequest_Any_Cloudly_ListClusters = TypedRequestShape<typeof IRequest_Any_Cloudly_ListClusters>;

/** method → `{ method, request, payload, response }` of the cluster methods. */
export const clusterContracts = {
  registerCluster: IRequest_Admin_Cloudly_RegisterCluster,
  getCluster: IRequest_Any_Cloudly_GetCluster,
  listClusters: IRequest_Any_Cloudly_ListClusters,
} as const;
