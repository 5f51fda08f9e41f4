import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ClusterId, ClusterListLimit, ICluster, ListClustersResponse, TClusterWritableData } from '../contracts/index.js';
import { rejectDuplicateNodeNames } from '../domain/clusters.js';
import type { TokenVerifier } from './auth.js';
import type { Operations } from './operations.js';
import { ProblemResponses } from './problemSchema.js';
import { authorize, operationContext } from './restAuth.js';

export interface ClusterRoutesOptions {
  operations: Operations;
  verifier: TokenVerifier;
}

const ClusterParams = Type.Object({ clusterId: ClusterId }, { additionalProperties: false });
const ClusterReply = Type.Object({ cluster: ICluster });
const ListQuery = Type.Object({
  limit: Type.Optional(ClusterListLimit),
  after: Type.Optional(ClusterId),
}, { additionalProperties: false });

/** REST: register (admin), read and list clusters and their node names. */
export const clusterRoutes: FastifyPluginAsyncTypebox<ClusterRoutesOptions> = async (app, { operations, verifier }) => {
  const ctx = operationContext;

  app.put('/v1/clusters/:clusterId', {
    onRequest: authorize(verifier, operations.registerCluster.roles, operations.registerCluster.action),
    preValidation: async (request) => rejectDuplicateNodeNames(request.body, '/body'),
    schema: {
      tags: ['clusters'],
      summary: 'Register a cluster with its full node set (admin; idempotent, replaces the node set)',
      params: ClusterParams,
      body: TClusterWritableData,
      response: { 200: ClusterReply, ...ProblemResponses },
    },
  }, async (request) => operations.registerCluster.handle({ clusterId: request.params.clusterId, ...request.body }, ctx(request)));

  app.get('/v1/clusters/:clusterId', {
    onRequest: authorize(verifier, operations.getCluster.roles, operations.getCluster.action),
    schema: {
      tags: ['clusters'],
      summary: 'Read a cluster and its node names',
      params: ClusterParams,
      response: { 200: ClusterReply, ...ProblemResponses },
    },
  }, async (request) => operations.getCluster.handle({ clusterId: request.params.clusterId }, ctx(request)));

  app.get('/v1/clusters', {
    onRequest: authorize(verifier, operations.listClusters.roles, operations.listClusters.action),
    schema: {
      tags: ['clusters'],
      summary: 'List clusters sorted by id (at most `limit`, default 100, max 256; `after` = last id of the previous page)',
      querystring: ListQuery,
      response: { 200: ListClustersResponse, ...ProblemResponses },
    },
  }, async (request) => operations.listClusters.handle(request.query, ctx(request)));
};
