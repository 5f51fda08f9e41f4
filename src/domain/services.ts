import { randomBytes } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import {
  Id, Name, TImmutableImageMismatchReason, TImmutableImageRolloutMode, TImmutableImageRolloutStatus, TSha256Digest,
  TServiceWritableData, serverManagedServiceDataFields,
  type IService, type IServiceData,
} from '../contracts/index.js';
import { AppError, serviceNotFound, validationFailed } from '../errors.js';

/** One row of the service listing: who it is and where its current rollout stands. */
export const ServiceSummary = Type.Object({
  id: Id,
  name: Name,
  rollout: Type.Optional(Type.Object({
    rolloutId: Id,
    rolloutGeneration: Type.Integer(),
    mode: TImmutableImageRolloutMode,
    releaseId: Id,
    requestedDigest: TSha256Digest,
    status: Type.Optional(TImmutableImageRolloutStatus),
    requiredReplicaCount: Type.Optional(Type.Integer()),
    observedReplicaCount: Type.Optional(Type.Integer()),
    healthyReplicaCount: Type.Optional(Type.Integer()),
    verifiedReplicaCount: Type.Optional(Type.Integer()),
    failedReplicaCount: Type.Optional(Type.Integer()),
    mismatchReason: Type.Optional(TImmutableImageMismatchReason),
    updatedAt: Type.Optional(Type.Integer()),
  })),
  automationHold: Type.Optional(Type.Object({ since: Type.Integer(), rolloutId: Type.String(), by: Type.String() })),
});
export type ServiceSummary = Static<typeof ServiceSummary>;

export const ServiceListQuery = Type.Object({
  name: Type.Optional(Name),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, description: 'page size (default 50)' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'nextCursor of the previous page' })),
}, { additionalProperties: false });
export type ServiceListQuery = Static<typeof ServiceListQuery>;

export const ServicePage = Type.Object({
  services: Type.Array(ServiceSummary),
  nextCursor: Type.Optional(Type.String()),
});
export type ServicePage = Static<typeof ServicePage>;

const encodeNameCursor = (name: string): string => Buffer.from(name, 'utf8').toString('base64url');
const decodeNameCursor = (cursor: string, field: string): string => {
  const name = Buffer.from(cursor, 'base64url').toString('utf8');
  if (name.length === 0 || encodeNameCursor(name) !== cursor) throw validationFailed([{ field, message: 'is not a cursor returned by this API' }]);
  return name;
};

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
  /** Services sorted by name, strictly after `afterName`; with `name`, only the service of that name. */
  list(query: { name?: string, afterName?: string, limit: number }): Promise<ServiceSummary[]>;
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

    /** Sorted by name; `name` finds one service again (names are unique). */
    async listServices (query: ServiceListQuery, fieldPrefix: string): Promise<ServicePage> {
      const afterName = query.cursor === undefined ? undefined : decodeNameCursor(query.cursor, `${fieldPrefix}/cursor`);
      const limit = query.limit ?? 50;
      const rows = await deps.services.list({ ...(query.name === undefined ? {} : { name: query.name }), ...(afterName === undefined ? {} : { afterName }), limit: limit + 1 });
      const services = rows.slice(0, limit);
      const last = services.at(-1);
      return rows.length > limit && last ? { services, nextCursor: encodeNameCursor(last.name) } : { services };
    },

    async updateService (serviceId: string, serviceData: TServiceWritableData): Promise<IService> {
      const service = await deps.services.replaceWritableData(serviceId, serviceData, writableServiceDataFields, deps.now());
      if (!service) throw serviceNotFound(serviceId);
      return service;
    },
  };
}
