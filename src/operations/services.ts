import type { IService, IServiceData, ServiceListQuery, ServicePage, TServiceWritableData } from '../contracts/index.js';
import type { Clock, Repositories, ServiceWithHold } from '../domain/ports/index.js';
import { promotionPolicyProblems } from '../domain/governance/policy.js';
import { rolloutPolicyProblems } from '../domain/lifecycle.js';
import { trustPolicyProblems, type PolicyContext } from '../domain/trust/policy.js';
import { decodeNameCursor, encodeNameCursor, newServiceId } from '../domain/services.js';
import { errors } from '../errors.js';
import { invalid, refusal, success, type Result } from '../domain/result.js';

/**
 * Create, read, update and find services (docs/api.md). Updates replace the caller-writable
 * fields only: they never touch the plan, the status or the generation.
 */
export interface ServiceDeps {
  repos: Pick<Repositories, 'catalogue'>;
  now: Clock;
  /** What a trust policy may name on this server (keyless identities need a trusted root); default: no trusted root. */
  trust?: PolicyContext;
}

/** The writable data's problems the schema cannot see: the rollout, trust and promotion policies' (paths relative to the service data). */
const dataProblems = (serviceData: TServiceWritableData, trust: PolicyContext, serviceId?: string) => [
  ...rolloutPolicyProblems(serviceData.rolloutPolicy, '/rolloutPolicy'),
  ...trustPolicyProblems(serviceData.trustPolicy, '/trustPolicy', trust),
  ...promotionPolicyProblems(serviceData.promotionPolicy, '/promotionPolicy', serviceId),
];

export function serviceOperations ({ repos, now, trust = { trustedRootConfigured: false } }: ServiceDeps) {
  return {
    /** Problem paths are relative to the service data (the adapters say where that is in their request). */
    async createService (serviceData: TServiceWritableData): Promise<Result<{ service: IService }>> {
      const problems = dataProblems(serviceData, trust);
      if (problems.length > 0) return invalid(problems);
      const service: IService = { id: newServiceId(), data: serviceData as IServiceData };
      const inserted = await repos.catalogue.insert(service, now());
      if (inserted.kind === 'name-taken') return refusal(errors.serviceAlreadyExists(serviceData.name, inserted.serviceId));
      return success({ service });
    },

    /** The service and whether automatic promotion is on hold. */
    async readService (serviceId: string): Promise<Result<ServiceWithHold>> {
      const found = await repos.catalogue.findServiceView(serviceId);
      return found ? success(found) : refusal(errors.serviceNotFound(serviceId));
    },

    async updateService (serviceId: string, serviceData: TServiceWritableData): Promise<Result<{ service: IService }>> {
      const problems = dataProblems(serviceData, trust, serviceId);
      if (problems.length > 0) return invalid(problems);
      const replaced = await repos.catalogue.replaceWritableData(serviceId, serviceData, now());
      if (replaced.kind === 'missing') return refusal(errors.serviceNotFound(serviceId));
      if (replaced.kind === 'name-taken') return refusal(errors.serviceAlreadyExists(serviceData.name, replaced.serviceId));
      return success({ service: replaced.service });
    },

    /** Sorted by name; `name` finds one service again (names are unique). */
    async listServices (query: ServiceListQuery): Promise<Result<ServicePage>> {
      const afterName = query.cursor === undefined ? undefined : decodeNameCursor(query.cursor);
      if (query.cursor !== undefined && afterName === undefined) return invalid([{ field: '/cursor', message: 'is not a cursor returned by this API' }]);
      const limit = query.limit ?? 50;
      const rows = await repos.catalogue.list({ name: query.name, afterName, limit: limit + 1 });
      const services = rows.slice(0, limit);
      const last = services.at(-1);
      return success(rows.length > limit && last ? { services, nextCursor: encodeNameCursor(last.name) } : { services });
    },
  };
}

export type ServiceOperations = ReturnType<typeof serviceOperations>;
