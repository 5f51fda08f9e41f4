import { randomBytes } from 'node:crypto';
import {
  TServiceWritableData, serverManagedServiceDataFields,
  type IService, type IServiceData,
} from '../contracts/index.js';
import { AppError, serviceNotFound } from '../errors.js';

/** What the service domain needs from persistence (implemented in src/store). */
export interface ServiceRepository {
  /** Throws AppError `service-already-exists` when the name is taken. */
  insert(service: IService, now: number): Promise<void>;
  findById(id: string): Promise<IService | null>;
  /**
   * Replaces the caller-writable fields of `data` in one atomic update; never
   * touches server-managed fields, so it cannot undo a concurrent promotion.
   * Resolves to the updated service, or null when there is none.
   */
  replaceWritableData(id: string, data: TServiceWritableData, writableFields: readonly string[], now: number): Promise<IService | null>;
}

/** Every caller-writable field of `IService['data']` (derived from the schema). */
export const writableServiceDataFields: readonly string[] = Object.keys(TServiceWritableData.properties);

/**
 * Caller input naming a server-managed field is refused outright (rather than
 * silently dropped) so that a client that believes it set one learns it did not.
 * Runs before schema validation, which would otherwise only say "unknown property".
 */
export function rejectServerManagedFields (serviceData: unknown, fieldPath: string): void {
  if (serviceData === null || typeof serviceData !== 'object') return;
  const present = serverManagedServiceDataFields.filter((field) => Object.hasOwn(serviceData, field));
  if (present.length > 0) {
    throw new AppError('server-managed-field', `${present.map((f) => `${fieldPath}/${f}`).join(', ')} ${present.length === 1 ? 'is' : 'are'} managed by the server; use the promotion and rollback APIs`, {
      details: { fields: present.map((f) => `${fieldPath}/${f}`) },
    });
  }
}

export const newServiceId = (): string => `svc_${randomBytes(12).toString('base64url')}`;

export interface ServiceDeps {
  services: ServiceRepository;
  now: () => number;
}

export function serviceOperations (deps: ServiceDeps) {
  return {
    async createService (serviceData: TServiceWritableData): Promise<IService> {
      const service: IService = { id: newServiceId(), data: serviceData as IServiceData };
      await deps.services.insert(service, deps.now());
      return service;
    },

    async getServiceById (serviceId: string): Promise<IService> {
      const service = await deps.services.findById(serviceId);
      if (!service) throw serviceNotFound(serviceId);
      return service;
    },

    async updateService (serviceId: string, serviceData: TServiceWritableData): Promise<IService> {
      const service = await deps.services.replaceWritableData(serviceId, serviceData, writableServiceDataFields, deps.now());
      if (!service) throw serviceNotFound(serviceId);
      return service;
    },
  };
}
