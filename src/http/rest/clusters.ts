import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ClusterId, ClusterListLimit, clusterListLimits, ICluster, ListClustersResponse, TClusterWritableData } from '../../contracts/index.js';
import { duplicateNodeNamesRefusal } from '../../domain/clusters.js';
import { permissions } from '../../domain/principal.js';
import type { ClusterOperations } from '../../operations/clusters.js';
import type { TokenVerifier } from '../auth.js';
import { authorize } from '../authorize.js';
import { valueOf } from '../replies.js';
import { ProblemResponses } from '../schemas.js';

export interface ClusterRoutesOptions {
  clusters: ClusterOperations;
  verifier: TokenVerifier;
}

const ClusterParams = Type.Object({ clusterId: ClusterId }, { additionalProperties: false });
const ClusterReply = Type.Object({ cluster: ICluster });
const ListQuery = Type.Object({
  limit: Type.Optional(ClusterListLimit),
  after: Type.Optional(ClusterId),
}, { additionalProperties: false });

/** REST: register (admin), read and list clusters and their node names. */
export const clusterRoutes: FastifyPluginAsyncTypebox<ClusterRoutesOptions> = async (app, { clusters, verifier }) => {
  app.put('/v1/clusters/:clusterId', {
    onRequest: authorize(verifier, permissions.registerClusters),
    preValidation: async (request) => {
      const refused = duplicateNodeNamesRefusal(request.body, '/body');
      if (refused) throw refused;
    },
    schema: {
      tags: ['clusters'],
      summary: 'Register a cluster with its full node set (admin; idempotent, replaces the node set)',
      params: ClusterParams,
      body: TClusterWritableData,
      response: { 200: ClusterReply, ...ProblemResponses },
    },
  }, async (request, reply) => valueOf(await clusters.registerCluster(request.params.clusterId, request.body), reply, '/body'));

  app.get('/v1/clusters/:clusterId', {
    onRequest: authorize(verifier, permissions.readClusters),
    schema: {
      tags: ['clusters'],
      summary: 'Read a cluster and its node names',
      params: ClusterParams,
      response: { 200: ClusterReply, ...ProblemResponses },
    },
  }, async (request, reply) => valueOf(await clusters.readCluster(request.params.clusterId), reply, '/params'));

  app.get('/v1/clusters', {
    onRequest: authorize(verifier, permissions.readClusters),
    schema: {
      tags: ['clusters'],
      summary: 'List clusters sorted by id (at most `limit`, default 100, max 256; `after` = last id of the previous page)',
      querystring: ListQuery,
      response: { 200: ListClustersResponse, ...ProblemResponses },
    },
  }, async (request, reply) => {
    const { limit, after } = request.query;
    return valueOf(await clusters.listClusters({ limit: limit ?? clusterListLimits.default, after }), reply, '/querystring');
  });
};
