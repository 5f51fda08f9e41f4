import { randomBytes } from 'node:crypto';
import { TServiceWritableData, serverManagedServiceDataFields } from '../contracts/index.js';
import { errors, type AppError } from '../errors.js';

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

export const encodeNameCursor = (name: string): string => Buffer.from(name, 'utf8').toString('base64url');

/** The name a listing cursor names, or undefined when the cursor is not one of ours. */
export function decodeNameCursor (cursor: string): string | undefined {
  const name = Buffer.from(cursor, 'base64url').toString('utf8');
  return name.length > 0 && encodeNameCursor(name) === cursor ? name : undefined;
}
