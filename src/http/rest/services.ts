import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { IService, ServiceListQuery, ServicePage, TServiceWritableData } from '../../contracts/index.js';
import { permissions } from '../../domain/principal.js';
import { AutomationHold } from '../../domain/rollouts.js';
import { serverManagedFieldRefusal } from '../../domain/services.js';
import type { ServiceOperations } from '../../operations/services.js';
import type { TokenVerifier } from '../auth.js';
import { valueOf } from '../replies.js';
import { ProblemResponses, ServiceParams, ServiceReply } from '../schemas.js';
import { guardWith, replies } from './guard.js';

export interface ServiceRoutesOptions {
  services: ServiceOperations;
  verifier: TokenVerifier;
}

const tags = ['services'];
const created = { 201: ServiceReply, ...ProblemResponses };
const ServiceView = Type.Object({ service: IService, automationHold: Type.Optional(AutomationHold) });
const listSummary = 'Find services again: sorted by name, `name` for one by its exact name, cursor pages (limit 1–200, default 50)';

/** Refused before schema validation, which would only say "unknown property". */
const refuseServerManaged = async (request: { body: unknown }): Promise<void> => {
  const refused = serverManagedFieldRefusal(request.body, '/body');
  if (refused) throw refused;
};

/** REST: create, find, read and update services (body = `TServiceWritableData`). */
export const serviceRoutes: FastifyPluginAsyncTypebox<ServiceRoutesOptions> = async (app, { services, verifier }) => {
  const guard = guardWith(verifier);

  app.post('/v1/services', {
    ...guard(permissions.createServices, { tags, summary: 'Create a service (admin)', body: TServiceWritableData, response: created }),
    preValidation: refuseServerManaged,
  }, async (request, reply) => {
    const created = valueOf(await services.createService(request.body), reply, '/body');
    return reply.code(201).header('location', `/v1/services/${encodeURIComponent(created.service.id)}`).send(created);
  });

  app.get('/v1/services', guard(permissions.readServices, { tags, summary: listSummary, querystring: ServiceListQuery, response: replies(ServicePage) }),
    async (request, reply) => valueOf(await services.listServices(request.query), reply, '/querystring'));

  const readSummary = 'Read a service (and whether automatic promotion is on hold)';
  app.get('/v1/services/:serviceId', guard(permissions.readServices, { tags, summary: readSummary, params: ServiceParams, response: replies(ServiceView) }),
    async (request, reply) => valueOf(await services.readService(request.params.serviceId), reply, '/params'));

  const updateSummary = 'Replace the caller-writable data of a service (admin)';
  app.put('/v1/services/:serviceId', {
    ...guard(permissions.updateServices, { tags, summary: updateSummary, params: ServiceParams, body: TServiceWritableData, response: replies(ServiceReply) }),
    preValidation: refuseServerManaged,
  }, async (request, reply) => valueOf(await services.updateService(request.params.serviceId, request.body), reply, '/body'));
};
