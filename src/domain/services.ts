import { randomBytes } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import {
  Id, Name, TImmutableImageMismatchReason, TImmutableImageRolloutMode, TImmutableImageRolloutStatus, TSha256Digest,
  TServiceWritableData, serverManagedServiceDataFields,
} from '../contracts/index.js';
import { errors, type AppError } from '../errors.js';
import { AutomationHold } from './rollouts.js';

/** Every caller-writable field of `IService['data']` (derived from the schema). */
export const writableServiceDataFields: readonly string[] = Object.keys(TServiceWritableData.properties);

/**
 * Caller input naming a server-managed field is refused outright (rather than silently
 * dropped) so that a client that believes it set one learns it did not. Adapters ask this
 * before schema validation, which would otherwise only say "unknown property".
 * `fieldPath` is where `serviceData` sits in the request.
 */
export function serverManagedFieldRefusal (serviceData: unknown, fieldPath: string): AppError | undefined {
  if (serviceData === null || typeof serviceData !== 'object') return undefined;
  const present = serverManagedServiceDataFields.filter((field) => Object.hasOwn(serviceData, field));
  return present.length > 0 ? errors.serverManagedField(present.map((f) => `${fieldPath}/${f}`)) : undefined;
}

export const newServiceId = (): string => `svc_${randomBytes(12).toString('base64url')}`;

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
  automationHold: Type.Optional(AutomationHold),
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

export const encodeNameCursor = (name: string): string => Buffer.from(name, 'utf8').toString('base64url');

/** The name a listing cursor names, or undefined when the cursor is not one of ours. */
export function decodeNameCursor (cursor: string): string | undefined {
  const name = Buffer.from(cursor, 'base64url').toString('utf8');
  return name.length > 0 && encodeNameCursor(name) === cursor ? name : undefined;
}
