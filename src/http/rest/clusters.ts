import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  ClusterId, ClusterListLimit, clusterListLimits, ICluster, LISTED_NODE_NAMES, ListClustersResponse, TClusterWritableData,
} from '../../contracts/index.js';
import { duplicateNodeNamesRefusal } from '../../domain/clusters.js';
import { permissions } from '../../domain/principal.js';
import type { ClusterOperations } from '../../operations/clusters.js';
import type { TokenVerifier } from '../auth.js';
import { valueOf } from '../replies.js';
import { examples, withExample } from '../examples.js';
import { withBody, withInput } from '../schemas.js';
import { guardWith, replies } from './guard.js';
import { responseExamples as answers } from '../responseExamples.js';

export interface ClusterRoutesOptions {
  clusters: ClusterOperations;
  verifier: TokenVerifier;
}

const tags = ['clusters'];
const ClusterParams = Type.Object({ clusterId: ClusterId }, { additionalProperties: false });
const ClusterReply = Type.Object({ cluster: ICluster });
const ClusterBody = withExample(TClusterWritableData, examples.clusterWritableData);
const registerSummary = 'Register a cluster with its full node set (admin)';
const registerDescription = 'Idempotent: the body is the whole node set and replaces the one registered before. A node name registered' +
  ' to another cluster is 409 `node-name-taken` (naming the node and its cluster); a name listed twice is 400.';
const readSummary = 'Read a cluster and its node names';
const readDescription = 'The registered node names, which promotions target (a service\'s `placement.clusterIds`).';
const listSummary = 'List clusters sorted by id';
const listDescription = 'At most `limit` (default 100, max 256); `after` = the last id of the previous page. Each cluster carries' +
  ` \`nodeCount\` and its first ${LISTED_NODE_NAMES} node names (sorted); \`GET /v1/clusters/{clusterId}\` answers all of them.`;
const ListQuery = Type.Object({ limit: Type.Optional(ClusterListLimit), after: Type.Optional(ClusterId) }, { additionalProperties: false });

/** REST: register (admin), read and list clusters and their node names. */
export const clusterRoutes: FastifyPluginAsyncTypebox<ClusterRoutesOptions> = async (app, { clusters, verifier }) => {
  const guard = guardWith(verifier);

  app.put('/v1/clusters/:clusterId', {
    ...guard(permissions.registerClusters, {
      tags,
      summary: registerSummary,
      description: registerDescription,
      params: ClusterParams,
      body: ClusterBody,
      response: replies(withExample(ClusterReply, answers.cluster), withInput, withBody, ['node-name-taken']),
    }),
    preValidation: async (request) => {
      const refused = duplicateNodeNamesRefusal(request.body, '/body');
      if (refused) throw refused;
    },
  }, async (request, reply) => valueOf(await clusters.registerCluster(request.params.clusterId, request.body), reply, '/body'));

  app.get('/v1/clusters/:clusterId', guard(permissions.readClusters, {
    tags,
    summary: readSummary,
    description: readDescription,
    params: ClusterParams,
    response: replies(withExample(ClusterReply, answers.cluster), withInput, ['cluster-not-found']),
  }),
  async (request, reply) => valueOf(await clusters.readCluster(request.params.clusterId), reply, '/params'));

  app.get('/v1/clusters', guard(permissions.readClusters, {
    tags,
    summary: listSummary,
    description: listDescription,
    querystring: ListQuery,
    response: replies(withExample(ListClustersResponse, answers.clusterList), withInput),
  }),
  async ({ query }, reply) => {
    const listed = await clusters.listClusters({ limit: query.limit ?? clusterListLimits.default, after: query.after });
    return valueOf(listed, reply, '/querystring');
  });
};
