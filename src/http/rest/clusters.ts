import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ClusterId, ClusterListLimit, clusterListLimits, ICluster, ListClustersResponse, TClusterWritableData } from '../../contracts/index.js';
import { duplicateNodeNamesRefusal } from '../../domain/clusters.js';
import { permissions } from '../../domain/principal.js';
import type { ClusterOperations } from '../../operations/clusters.js';
import type { TokenVerifier } from '../auth.js';
import { valueOf } from '../replies.js';
import { guardWith, replies } from './guard.js';

export interface ClusterRoutesOptions {
  clusters: ClusterOperations;
  verifier: TokenVerifier;
}

const tags = ['clusters'];
const ClusterParams = Type.Object({ clusterId: ClusterId }, { additionalProperties: false });
const ClusterReply = Type.Object({ cluster: ICluster });
const clusterReplies = replies(ClusterReply);
const registerSummary = 'Register a cluster with its full node set (admin; idempotent, replaces the node set)';
const readSummary = 'Read a cluster and its node names';
const listSummary = 'List clusters sorted by id (at most `limit`, default 100, max 256; `after` = last id of the previous page)';
const ListQuery = Type.Object({ limit: Type.Optional(ClusterListLimit), after: Type.Optional(ClusterId) }, { additionalProperties: false });

/** REST: register (admin), read and list clusters and their node names. */
export const clusterRoutes: FastifyPluginAsyncTypebox<ClusterRoutesOptions> = async (app, { clusters, verifier }) => {
  const guard = guardWith(verifier);

  app.put('/v1/clusters/:clusterId', {
    ...guard(permissions.registerClusters, { tags, summary: registerSummary, params: ClusterParams, body: TClusterWritableData, response: clusterReplies }),
    preValidation: async (request) => {
      const refused = duplicateNodeNamesRefusal(request.body, '/body');
      if (refused) throw refused;
    },
  }, async (request, reply) => valueOf(await clusters.registerCluster(request.params.clusterId, request.body), reply, '/body'));

  app.get('/v1/clusters/:clusterId', guard(permissions.readClusters, { tags, summary: readSummary, params: ClusterParams, response: clusterReplies }),
    async (request, reply) => valueOf(await clusters.readCluster(request.params.clusterId), reply, '/params'));

  app.get('/v1/clusters', guard(permissions.readClusters, { tags, summary: listSummary, querystring: ListQuery, response: replies(ListClustersResponse) }),
    async ({ query }, reply) => {
      const listed = await clusters.listClusters({ limit: query.limit ?? clusterListLimits.default, after: query.after });
      return valueOf(listed, reply, '/querystring');
    });
};
