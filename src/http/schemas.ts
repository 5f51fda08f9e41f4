import { Type, type TSchema } from '@sinclair/typebox';
import { Id, IService } from '../contracts/index.js';
import { errorCatalogue, type ErrorCode } from '../errors.js';

/**
 * Schemas the REST routes share. Problem documents: RFC 9457 as this service writes it
 * (src/http/errorHandler.ts `problemDocument`), for OpenAPI.
 */

/** `:serviceId` of the service routes. */
export const ServiceParams = Type.Object({ serviceId: Id }, { additionalProperties: false });

/** `{ service }`: what a service read, write, promotion and rollback answer. */
export const ServiceReply = Type.Object({ service: IService });

export const ProblemDocument = Type.Object({
  type: Type.String({ description: '`urn:cloudly-release:error:<code>`' }),
  title: Type.String(),
  status: Type.Integer(),
  detail: Type.String({ description: 'what went wrong and what to do, for a person; clients match on `code`' }),
  code: Type.String({ description: 'stable machine-readable error code (docs/errors.md)' }),
  instance: Type.String(),
  requestId: Type.String({ description: 'finds the server\'s log lines of this request' }),
}, { additionalProperties: true, description: 'application/problem+json' });

/** Every answer of the service may be a bug (500). */
export const anyRoute: readonly ErrorCode[] = ['internal-error'];
/** Routes that read or write the database. */
export const stored: readonly ErrorCode[] = ['database-unavailable'];
/** Routes behind a bearer token. */
export const authenticated: readonly ErrorCode[] = ['unauthenticated', 'forbidden'];
/** Routes with path parameters or a query string (malformed, too long, out of range). */
export const withInput: readonly ErrorCode[] = ['validation-failed'];
/** Routes that take a JSON body. */
export const withBody: readonly ErrorCode[] = ['validation-failed', 'payload-too-large', 'unsupported-media-type'];

const problemContentType = 'application/problem+json';

/**
 * The problem responses of a route, one per status, each naming the codes the route answers
 * with it: a client generator gets the real statuses, and the `code` enum says which codes
 * a client must be ready for. `codes` lists the route's own; the shared groups above add the rest.
 */
/** What a promotion that needs approvals answers (docs/governance.md "Approvals"). */
const approvalRequiredExample = {
  type: 'urn:cloudly-release:error:approval-required',
  title: 'The promotion needs approvals: a promotion request was created',
  status: 202,
  detail: "this promotion needs 2 approvals from principals other than the requester: promotion request 'pr_5b1d0c7e9a2f4c6e8d0b1a3c'" +
    ' was created and expires at 2025-12-02T10:00:00.000Z; nothing was issued yet',
  code: 'approval-required',
  instance: '/v1/services/svc_UGF5bWVudHMx/image-releases/rel_payments_2_0_0/promote',
  requestId: '5f0c2f5e-3c1a-4c1e-9b7e-2a4d6e8f0a1b',
  promotionRequest: {
    requestId: 'pr_5b1d0c7e9a2f4c6e8d0b1a3c',
    serviceId: 'svc_UGF5bWVudHMx',
    releaseId: 'rel_payments_2_0_0',
    expectedRolloutGeneration: 3,
    required: 2,
    approvals: 0,
    expiresAt: 1_764_669_600_000,
  },
};

export function problemResponses (...groups: ReadonlyArray<readonly ErrorCode[]>) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set([...groups.flat(), ...anyRoute])) {
    const status = errorCatalogue[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<string, { description: string, content: Record<string, { schema: TSchema, example?: unknown }> }> = {};
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    codes.sort();
    const retry = codes.some((code) => code === 'database-unavailable' || code === 'registry-unavailable' || code === 'idempotency-request-in-progress');
    responses[String(status)] = {
      description: codes.map((code) => `\`${code}\`: ${errorCatalogue[code].title}`).join('; ') +
        (retry ? ' (with a `Retry-After` header: retry then)' : ''),
      content: {
        [problemContentType]: {
          schema: Type.Object({
            ...ProblemDocument.properties,
            status: Type.Literal(status),
            code: Type.Unsafe<ErrorCode>({ type: 'string', enum: codes, description: 'the stable codes this route answers with this status (docs/errors.md)' }),
          }, { additionalProperties: true, description: 'application/problem+json (RFC 9457); more members per code: docs/errors.md' }),
          // A success answered as a problem document (202 approval-required): a client generator gets what it looks like.
          ...(status < 300 && codes.includes('approval-required') ? { example: approvalRequiredExample } : {}),
        },
      },
    };
  }
  return responses;
}
