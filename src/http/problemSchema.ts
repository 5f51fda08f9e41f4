import { Type } from '@sinclair/typebox';

/** RFC 9457 problem document as this service writes it (documentation for OpenAPI). */
export const ProblemDocument = Type.Object({
  type: Type.String(),
  title: Type.String(),
  status: Type.Integer(),
  detail: Type.String(),
  code: Type.String({ description: 'stable machine-readable error code' }),
  instance: Type.String(),
  requestId: Type.String(),
}, { additionalProperties: true, description: 'application/problem+json' });

export const ProblemResponses = {
  '4xx': ProblemDocument,
  '5xx': ProblemDocument,
} as const;
