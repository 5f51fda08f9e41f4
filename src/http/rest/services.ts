import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { IService, ServiceListQuery, ServicePage, TServiceWritableData } from '../../contracts/index.js';
import { permissions } from '../../domain/principal.js';
import { AutomationHold } from '../../domain/rollouts.js';
import { serverManagedFieldRefusal } from '../../domain/services.js';
import type { ClusterOperations } from '../../operations/clusters.js';
import type { ServiceOperations } from '../../operations/services.js';
import type { TokenVerifier } from '../auth.js';
import { valueOf } from '../replies.js';
import { examples, withExample } from '../examples.js';
import { authenticated, problemResponses, ServiceParams, stored, withBody, withInput } from '../schemas.js';
import { guardWith, replies } from './guard.js';
import { responseExamples as answers } from '../responseExamples.js';

export interface ServiceRoutesOptions {
  services: ServiceOperations;
  /** Looked at after a write whose placement names clusters: the answer warns of those not registered. */
  clusters?: Pick<ClusterOperations, 'readCluster'>;
  verifier: TokenVerifier;
}

/**
 * A write is not refused for a placement on clusters not registered yet (services are often created
 * before their clusters), but the answer says so: a promotion refuses until they are registered.
 */
const PlacementWarning = Type.Object({
  code: Type.Literal('placement-clusters-unregistered'),
  message: Type.String(),
  clusterIds: Type.Array(Type.String()),
}, { description: 'the placement names clusters that are not registered: promotion refuses (422 invalid-deployment-plan) until they are' });
const WriteReply = Type.Object({ service: IService, warnings: Type.Optional(Type.Array(PlacementWarning)) });
type WriteReply = Static<typeof WriteReply>;

const tags = ['services'];
const ServiceBody = withExample(TServiceWritableData, examples.serviceWritableData);
const created = {
  201: {
    ...withExample(WriteReply, answers.serviceCreated),
    description: 'created; header `Location` is the new service\'s URL; `warnings` when the placement names unregistered clusters'
  },
  ...problemResponses(authenticated, stored, withBody, ['server-managed-field', 'service-already-exists']),
};
const ServiceView = Type.Object({ service: IService, automationHold: Type.Optional(AutomationHold) });
const createSummary = 'Create a service (admin)';
const createDescription = 'The body is the caller-writable `TServiceWritableData`; `immutableImageRequired`, `imageDeployment` and' +
  ' `imageRolloutStatus` are managed by the server (400 `server-managed-field`). A taken name is 409 `service-already-exists`' +
  ' with the id of the service that holds it. A `placement` may name clusters registered later: saved, with `warnings` naming' +
  ' them; a promotion needs them registered with nodes (422 `invalid-deployment-plan` names the missing ones).';
const listSummary = 'Find services again';
const listDescription = 'Sorted by name; `name` finds one by its exact name; cursor pages (`limit` 1–200, default 50; pass `nextCursor` back as `cursor`).';

/** Refused before schema validation, which would only say "unknown property". */
const refuseServerManaged = async (request: { body: unknown }): Promise<void> => {
  const refused = serverManagedFieldRefusal(request.body, '/body');
  if (refused) throw refused;
};

/** REST: create, find, read and update services (body = `TServiceWritableData`). */
export const serviceRoutes: FastifyPluginAsyncTypebox<ServiceRoutesOptions> = async (app, { services, clusters, verifier }) => {
  const guard = guardWith(verifier);

  /** The written service, with a warning when its placement names clusters that are not registered. */
  const withWarnings = async (written: { service: IService }): Promise<WriteReply> => {
    const placed = written.service.data.placement?.clusterIds ?? [];
    if (!clusters || placed.length === 0) return written;
    const found = await Promise.all(placed.map(async (id) => ({ id, read: await clusters.readCluster(id) })));
    const missing = found.filter(({ read }) => !read.ok && read.error.code === 'cluster-not-found').map(({ id }) => id);
    if (missing.length === 0) return written;
    const listed = missing.slice(0, 10).map((id) => `'${id}'`).join(', ') + (missing.length > 10 ? ` (+${missing.length - 10} more)` : '');
    const message = `saved, but the placement names ${missing.length === 1 ? 'a cluster that is' : 'clusters that are'} not registered: ${listed};` +
      ' a promotion is refused (422 invalid-deployment-plan) until each is registered with PUT /v1/clusters/:clusterId and its node names';
    return { ...written, warnings: [{ code: 'placement-clusters-unregistered', message, clusterIds: missing }] };
  };

  app.post('/v1/services', {
    ...guard(permissions.createServices, { tags, summary: createSummary, description: createDescription, body: ServiceBody, response: created }),
    preValidation: refuseServerManaged,
  }, async (request, reply) => {
    const created = valueOf(await services.createService(request.body), reply, '/body');
    return reply.code(201).header('location', `/v1/services/${encodeURIComponent(created.service.id)}`).send(await withWarnings(created));
  });

  app.get('/v1/services', guard(permissions.readServices, {
    tags,
    summary: listSummary,
    description: listDescription,
    querystring: ServiceListQuery,
    response: replies(withExample(ServicePage, answers.serviceList), withInput),
  }),
  async (request, reply) => valueOf(await services.listServices(request.query), reply, '/querystring'));

  const readSummary = 'Read a service (and whether automatic promotion is on hold)';
  const readDescription = 'The service with its server-managed rollout fields; `automationHold` is present while an operator\'s rollback' +
    ' or abort holds automatic promotion (until the next explicit promotion).';
  app.get('/v1/services/:serviceId', guard(permissions.readServices, {
    tags,
    summary: readSummary,
    description: readDescription,
    params: ServiceParams,
    response: replies(withExample(ServiceView, answers.service), withInput, ['service-not-found']),
  }),
  async (request, reply) => valueOf(await services.readService(request.params.serviceId), reply, '/params'));

  const updateSummary = 'Replace the caller-writable data of a service (admin)';
  const updateDescription = 'The whole `TServiceWritableData` (a field left out is removed); the server-managed rollout fields are kept.' +
    ' A `placement` may name clusters not registered yet: saved, with `warnings` naming them (`placement-clusters-unregistered`);' +
    ' a promotion refuses with 422 `invalid-deployment-plan` naming them until they are registered with nodes (docs/errors.md).';
  const updateReplies = replies(withExample(WriteReply, answers.serviceUpdated), withInput, withBody, ['server-managed-field', 'service-not-found',
    'service-already-exists']);
  app.put('/v1/services/:serviceId', {
    ...guard(permissions.updateServices, {
      tags, summary: updateSummary, description: updateDescription, params: ServiceParams, body: ServiceBody, response: updateReplies,
    }),
    preValidation: refuseServerManaged,
  }, async (request, reply) => withWarnings(valueOf(await services.updateService(request.params.serviceId, request.body), reply, '/body')));
};
