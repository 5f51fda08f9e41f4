import { Type } from '@sinclair/typebox';
import { Id, IService } from '../contracts/index.js';

/**
 * Schemas the REST routes share. Problem documents: RFC 9457 as this service writes it
 * (src/http/errorHandler.ts `problemDocument`), for OpenAPI.
 */

/** `:serviceId` of the service routes. */
export const ServiceParams = Type.Object({ serviceId: Id }, { additionalProperties: false });

/** `{ service }`: what a service read, write, promotion and rollback answer. */
export const ServiceReply = Type.Object({ service: IService });

export const ProblemDocument = Type.Object({
  type: Type.String(),
  title: Type.String(),
  status: Type.Integer(),
  detail: Type.String(),
  code: Type.String({ description: 'stable machine-readable error code (docs/errors.md)' }),
  instance: Type.String(),
  requestId: Type.String(),
}, { additionalProperties: true, description: 'application/problem+json' });

export const ProblemResponses = {
  '4xx': ProblemDocument,
  '5xx': ProblemDocument,
} as const;
