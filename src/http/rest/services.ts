import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { IService, TServiceWritableData } from '../../contracts/index.js';
import { permissions } from '../../domain/principal.js';
import { AutomationHold } from '../../domain/rollouts.js';
import { serverManagedFieldRefusal, ServiceListQuery, ServicePage } from '../../domain/services.js';
import type { ServiceOperations } from '../../operations/services.js';
import type { TokenVerifier } from '../auth.js';
import { authorize } from '../authorize.js';
import { valueOf } from '../replies.js';
import { ProblemResponses, ServiceParams, ServiceReply } from '../schemas.js';

export interface ServiceRoutesOptions {
  services: ServiceOperations;
  verifier: TokenVerifier;
}

/** REST: create, find, read and update services (body = `TServiceWritableData`). */
export const serviceRoutes: FastifyPluginAsyncTypebox<ServiceRoutesOptions> = async (app, { services, verifier }) => {
  const refuseServerManaged = async (request: { body: unknown }): Promise<void> => {
    const refused = serverManagedFieldRefusal(request.body, '/body');
    if (refused) throw refused;
  };

  app.post('/v1/services', {
    onRequest: authorize(verifier, permissions.createServices),
    preValidation: refuseServerManaged,
    schema: {
      tags: ['services'],
      summary: 'Create a service (admin)',
      body: TServiceWritableData,
      response: { 201: ServiceReply, ...ProblemResponses },
    },
  }, async (request, reply) => {
    const created = valueOf(await services.createService(request.body), reply, '/body');
    return reply.code(201).header('location', `/v1/services/${encodeURIComponent(created.service.id)}`).send(created);
  });

  app.get('/v1/services', {
    onRequest: authorize(verifier, permissions.readServices),
    schema: {
      tags: ['services'],
      summary: 'Find services again: sorted by name, `name` for one by its exact name, cursor pages (limit 1–200, default 50)',
      querystring: ServiceListQuery,
      response: { 200: ServicePage, ...ProblemResponses },
    },
  }, async (request, reply) => valueOf(await services.listServices(request.query), reply, '/querystring'));

  app.get('/v1/services/:serviceId', {
    onRequest: authorize(verifier, permissions.readServices),
    schema: {
      tags: ['services'],
      summary: 'Read a service (and whether automatic promotion is on hold)',
      params: ServiceParams,
      response: { 200: Type.Object({ service: IService, automationHold: Type.Optional(AutomationHold) }), ...ProblemResponses },
    },
  }, async (request, reply) => valueOf(await services.readService(request.params.serviceId), reply, '/params'));

  app.put('/v1/services/:serviceId', {
    onRequest: authorize(verifier, permissions.updateServices),
    preValidation: refuseServerManaged,
    schema: {
      tags: ['services'],
      summary: 'Replace the caller-writable data of a service (admin)',
      params: ServiceParams,
      body: TServiceWritableData,
      response: { 200: ServiceReply, ...ProblemResponses },
    },
  }, async (request, reply) => valueOf(await services.updateService(request.params.serviceId, request.body), reply, '/body'));
};
