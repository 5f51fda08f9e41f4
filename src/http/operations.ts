import { typedRequestContracts } from '../contracts/index.js';
import { can } from '../domain/principal.js';
import { rejectServerManagedFields, serviceOperations } from '../domain/services.js';
import type { Stores } from '../store/index.js';
import { defineOperation } from './operation.js';

/**
 * Every operation of the API, defined once. The TypedRequest dispatcher exposes
 * each by its method name; the REST routes call the same definitions.
 */
export function createOperations (stores: Stores, now: () => number = Date.now) {
  const services = serviceOperations({ services: stores.services, now });
  const c = typedRequestContracts;

  return {
    getServiceById: defineOperation({
      method: c.getServiceById.method,
      action: 'read services',
      roles: can.read,
      request: c.getServiceById.payload,
      response: c.getServiceById.response,
      handle: async (input) => ({ service: await services.getServiceById(input.serviceId) }),
    }),
    createService: defineOperation({
      method: c.createService.method,
      action: 'create services',
      roles: can.administer,
      request: c.createService.payload,
      response: c.createService.response,
      precheck: (input) => rejectServerManagedFields(field(input, 'serviceData'), '/request/serviceData'),
      handle: async (input) => ({ service: await services.createService(input.serviceData) }),
    }),
    updateService: defineOperation({
      method: c.updateService.method,
      action: 'update services',
      roles: can.administer,
      request: c.updateService.payload,
      response: c.updateService.response,
      precheck: (input) => rejectServerManagedFields(field(input, 'serviceData'), '/request/serviceData'),
      handle: async (input) => ({ service: await services.updateService(input.serviceId, input.serviceData) }),
    }),
  };
}

export type Operations = ReturnType<typeof createOperations>;

const field = (value: unknown, name: string): unknown =>
  value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[name] : undefined;
