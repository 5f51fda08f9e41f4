import { Type, type Static } from '@sinclair/typebox';
import type { AutomationHold } from '../domain/rollouts.js';
import { serviceNotFound } from '../errors.js';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { IService, TServiceWritableData } from '../contracts/index.js';
import { rejectServerManagedFields, ServiceListQuery, ServicePage } from '../domain/services.js';
import type { TokenVerifier } from './auth.js';
import type { Operations } from './operations.js';
import { ProblemResponses } from './problemSchema.js';
import { authorize, operationContext } from './restAuth.js';
import { AutomationHoldSchema, ServiceParams, ServiceReply } from './routeSchemas.js';

export interface ServiceRoutesOptions {
  operations: Operations;
  /** The listing, with REST field names in its errors. */
  services: { listServices(query: ServiceListQuery, fieldPrefix: string): Promise<ServicePage> };
  verifier: TokenVerifier;
  /** The service plus what REST shows beside it (the automation hold). */
  serviceView: (serviceId: string) => Promise<{ service: Static<typeof IService>, automationHold?: AutomationHold } | null>;
}

/** REST: create, read and update services (body = `TServiceWritableData`). */
export const serviceRoutes: FastifyPluginAsyncTypebox<ServiceRoutesOptions> = async (app, { operations, verifier, serviceView, services }) => {
  const ctx = operationContext;
  const refuseServerManaged = async (request: { body: unknown }) => rejectServerManagedFields(request.body, '/body');

  app.post('/v1/services', {
    onRequest: authorize(verifier, operations.createService.roles, operations.createService.action),
    preValidation: refuseServerManaged,
    schema: {
      tags: ['services'],
      summary: 'Create a service (admin)',
      body: TServiceWritableData,
      response: { 201: ServiceReply, ...ProblemResponses },
    },
  }, async (request, reply) => {
    const result = await operations.createService.handle({ serviceData: request.body }, ctx(request));
    return reply.code(201).header('location', `/v1/services/${encodeURIComponent(result.service.id)}`).send(result);
  });

  app.get('/v1/services', {
    onRequest: authorize(verifier, operations.listServices.roles, operations.listServices.action),
    schema: {
      tags: ['services'],
      summary: 'Find services again: sorted by name, `name` for one by its exact name, cursor pages (limit 1–200, default 50)',
      querystring: ServiceListQuery,
      response: { 200: ServicePage, ...ProblemResponses },
    },
  }, async (request) => {
    const page = await services.listServices(request.query, '/querystring');
    return page;
  });

  app.get('/v1/services/:serviceId', {
    onRequest: authorize(verifier, operations.getServiceById.roles, operations.getServiceById.action),
    schema: {
      tags: ['services'],
      summary: 'Read a service (and whether automatic promotion is on hold)',
      params: ServiceParams,
      response: { 200: Type.Object({ service: IService, automationHold: Type.Optional(AutomationHoldSchema) }), ...ProblemResponses },
    },
  }, async (request) => {
    const view = await serviceView(request.params.serviceId);
    if (!view) throw serviceNotFound(request.params.serviceId);
    return view;
  });

  app.put('/v1/services/:serviceId', {
    onRequest: authorize(verifier, operations.updateService.roles, operations.updateService.action),
    preValidation: refuseServerManaged,
    schema: {
      tags: ['services'],
      summary: 'Replace the caller-writable data of a service (admin)',
      params: ServiceParams,
      body: TServiceWritableData,
      response: { 200: ServiceReply, ...ProblemResponses },
    },
  }, async (request) => operations.updateService.handle({ serviceId: request.params.serviceId, serviceData: request.body }, ctx(request)));
};
