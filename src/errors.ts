/**
 * Every error the service reports, in one place (DESIGN §3). The domain and the
 * store throw `AppError`s built by the factories below; one error handler turns
 * them into RFC 9457 problem+json (REST) or the TypedRequest error envelope.
 * Clients match on `code`, never on the message text.
 */

export const errorStatus = {
  'validation-failed': 400,
  'idempotency-key-missing': 400,
  'server-managed-field': 400,
  unauthenticated: 401,
  forbidden: 403,
  'not-found': 404,
  'service-not-found': 404,
  'release-not-found': 404,
  'cluster-not-found': 404,
  'method-not-found': 404,
  'rollout-generation-conflict': 409,
  'current-rollout-mismatch': 409,
  'idempotency-request-in-progress': 409,
  'rollback-target-not-accepted': 409,
  'rollback-target-is-current': 409,
  'no-current-rollout': 409,
  'service-already-exists': 409,
  'node-name-taken': 409,
  'release-identity-conflict': 409,
  'push-event-conflict': 409,
  'registry-target-mismatch': 422,
  'automatic-promotion-skipped': 409,
  'idempotency-key-reused': 422,
  'invalid-deployment-plan': 422,
  'payload-too-large': 413,
  'unsupported-media-type': 415,
  'internal-error': 500,
  'database-unavailable': 503,
  // Snapshot report rejections reuse the upstream TImmutableImageMismatchReason.
  'stale-rollout-report': 409,
  'immutable-plan-missing': 409,
  'runtime-capability-missing': 422,
  'runtime-attestation-missing': 422,
} as const;

export type ErrorCode = keyof typeof errorStatus;

const titles: Record<ErrorCode, string> = {
  'validation-failed': 'The request is not valid',
  'idempotency-key-missing': 'An Idempotency-Key is required',
  'server-managed-field': 'The field is managed by the server',
  unauthenticated: 'Authentication required',
  forbidden: 'Not allowed',
  'not-found': 'Not found',
  'service-not-found': 'Service not found',
  'release-not-found': 'Image release not found',
  'cluster-not-found': 'Cluster not found',
  'method-not-found': 'Unknown TypedRequest method',
  'rollout-generation-conflict': 'The rollout generation changed',
  'current-rollout-mismatch': 'The current rollout is not the expected one',
  'idempotency-request-in-progress': 'A request with this Idempotency-Key is still in progress',
  'rollback-target-not-accepted': 'The rollback target was never accepted',
  'rollback-target-is-current': 'The rollback target is the digest deployed now',
  'no-current-rollout': 'The service has no rollout to roll back',
  'service-already-exists': 'A service with this name already exists',
  'node-name-taken': 'The node name is registered to another cluster',
  'release-identity-conflict': 'The release id and the release identity disagree',
  'push-event-conflict': 'The push event id was used for a different event',
  'automatic-promotion-skipped': 'The push event did not promote automatically',
  'registry-target-mismatch': "The event's registry host or repository is not the service's registry target",
  'idempotency-key-reused': 'The Idempotency-Key was used for a different request',
  'invalid-deployment-plan': 'The deployment plan is not valid',
  'payload-too-large': 'The request body is too large',
  'unsupported-media-type': 'Unsupported media type',
  'internal-error': 'Internal error',
  'database-unavailable': 'The database is unavailable',
  'stale-rollout-report': 'The report is for a rollout that is not current',
  'immutable-plan-missing': 'The service has no immutable deployment plan',
  'runtime-capability-missing': 'The reporter lacks the immutable image capability',
  'runtime-attestation-missing': 'The immutable rollout report envelope is missing',
};

/** A problem detail: where in the input, and what is wrong there. */
export interface Problem {
  /** JSON pointer or dotted path of the offending field, e.g. `/body/serviceData/name`. */
  field: string;
  message: string;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly title: string;
  /** Extra members of the problem document / TypedRequest `error.data`. */
  readonly details: Record<string, unknown>;
  /** Response headers that go with the error (e.g. Retry-After). */
  readonly headers: Record<string, string>;

  constructor (
    code: ErrorCode,
    detail?: string,
    opts: { details?: Record<string, unknown>, headers?: Record<string, string>, cause?: unknown } = {}
  ) {
    super(detail ?? titles[code], opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'AppError';
    this.code = code;
    this.statusCode = errorStatus[code];
    this.title = titles[code];
    this.details = opts.details ?? {};
    this.headers = opts.headers ?? {};
  }
}

export const isAppError = (value: unknown): value is AppError => value instanceof AppError;

export const validationFailed = (problems: Problem[], detail?: string): AppError =>
  new AppError('validation-failed', detail ?? describeProblems(problems), { details: { problems } });

export const describeProblems = (problems: Problem[]): string =>
  problems.length === 0
    ? titles['validation-failed']
    : problems.slice(0, 3).map((p) => `${p.field}: ${p.message}`).join('; ') +
      (problems.length > 3 ? ` (+${problems.length - 3} more)` : '');

export const unauthenticated = (detail: string): AppError => new AppError('unauthenticated', detail);

export const serviceNotFound = (serviceId: string): AppError =>
  new AppError('service-not-found', `service '${serviceId}' does not exist`, { details: { serviceId } });

export const forbidden = (detail: string): AppError => new AppError('forbidden', detail);

export const databaseUnavailable = (cause?: unknown): AppError =>
  new AppError('database-unavailable', 'The database did not answer; try again shortly', {
    headers: { 'retry-after': '2' },
    details: { retryAfterSeconds: 2 },
    cause,
  });
