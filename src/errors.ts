/**
 * The error catalogue (docs/errors.md): every error the service answers, one entry per stable
 * code with its HTTP status and title, and ONE factory per code below, so that a code always
 * has one body shape. Documented code by code in docs/errors.md; test/unit/errors.test.ts
 * checks catalogue and documentation against each other in both directions.
 *
 * Use cases return these errors inside their results for expected refusals; only the
 * unexpected (a bug, the database away) is thrown. One error handler (src/http/errorHandler.ts)
 * turns them into RFC 9457 problem+json (REST) or the TypedRequest error envelope. Clients
 * match on `code`, never on the message text. No message or member echoes unbounded input:
 * everything taken from a request is cut with `excerpt`.
 */

interface ErrorSpec {
  status: number;
  title: string;
  /** What this refusal means when it refuses a rollout (absent: `rolloutRefusalDefault`). */
  rollout?: RolloutRefusal;
}

/**
 * What a refusal means for each kind of rollout (src/domain/admission.ts): the data the use cases derive
 * their handling from, instead of lists of codes kept by hand in each of them.
 */
export interface RolloutRefusal {
  /** Deterministic for the request and the state it met: stored with the Idempotency-Key and replayed to its retries. */
  replay: boolean;
  /** An automatic promotion refused so: lost to another rollout (`conflict`), will not apply (`skipped`), or the push event's answer (`error`). */
  automatic: 'conflict' | 'skipped' | 'error';
  /** A push that waited for the current rollout to settle, refused so when its turn came: it keeps waiting for the next, or is forgotten. */
  waiting: 'keep-waiting' | 'forget';
  /** A lost compare-and-swap (counted in cloudly_release_cas_conflicts_total). */
  casConflict?: true;
}

/** Transient or unexpected: not stored (the retry runs again), the push event's answer, a waiting push forgotten. */
export const rolloutRefusalDefault: RolloutRefusal = { replay: false, automatic: 'error', waiting: 'forget' };

/** A refusal that follows from the request and the state it met. */
const deterministic: RolloutRefusal = { replay: true, automatic: 'error', waiting: 'forget' };
/** Lost to a concurrent rollout. */
const lostRace: RolloutRefusal = { replay: true, automatic: 'conflict', waiting: 'keep-waiting', casConflict: true };

/**
 * The digest does not pass the service's trust policy: stored and replayed like any deterministic
 * refusal; an automatic promotion of it promotes nothing and says why (skipped, reason `<code>: …`).
 */
const trustRefused: RolloutRefusal = { replay: true, automatic: 'skipped', waiting: 'forget' };
/**
 * Governance said not now (a closed window, stop-the-line, a stage not soaked yet): not stored — the
 * same request may pass later, so its retry is asked again; an automatic promotion promotes nothing
 * and says why (skipped, reason `<code>: …`); a waiting push is forgotten (docs/governance.md).
 */
const governanceRefused: RolloutRefusal = { replay: false, automatic: 'skipped', waiting: 'forget' };
/**
 * A promotion request was made instead of a rollout: the answer is stored with the key (its retry names
 * the same request); an automatic promotion promotes nothing now and says so (skipped, `approval-required: …`).
 */
const approvalAwaited: RolloutRefusal = { replay: true, automatic: 'skipped', waiting: 'forget' };
/** The registry could not be asked: transient (not stored, the push event answers 503 so that it is redelivered), a waiting push keeps waiting. */
const registryAway: RolloutRefusal = { replay: false, automatic: 'error', waiting: 'keep-waiting' };

export const errorCatalogue = {
  // Not a failure: nothing was issued, a promotion request waits for its approvals (docs/governance.md).
  'approval-required': { status: 202, title: 'The promotion needs approvals: a promotion request was created', rollout: approvalAwaited },
  'validation-failed': { status: 400, title: 'The request is not valid' },
  'idempotency-key-missing': { status: 400, title: 'An Idempotency-Key is required' },
  'server-managed-field': { status: 400, title: 'The field is managed by the server' },
  unauthenticated: { status: 401, title: 'Authentication required' },
  forbidden: { status: 403, title: 'Not allowed' },
  'approval-not-allowed': { status: 403, title: 'This principal may not approve this request' },
  'not-found': { status: 404, title: 'Not found' },
  'service-not-found': { status: 404, title: 'Service not found', rollout: deterministic },
  'release-not-found': { status: 404, title: 'Image release not found', rollout: deterministic },
  'cluster-not-found': { status: 404, title: 'Cluster not found' },
  'attestation-not-found': { status: 404, title: 'Attestation not found' },
  'promotion-request-not-found': { status: 404, title: 'Promotion request not found' },
  'method-not-found': { status: 404, title: 'Unknown TypedRequest method' },
  'webhook-subscription-not-found': { status: 404, title: 'Webhook subscription not found' },
  'dead-letter-not-found': { status: 404, title: 'No such dead letter of this subscription' },
  'rollout-generation-conflict': { status: 409, title: 'The rollout generation changed', rollout: lostRace },
  'current-rollout-mismatch': { status: 409, title: 'The current rollout is not the expected one', rollout: lostRace },
  'idempotency-request-in-progress': { status: 409, title: 'A request with this Idempotency-Key is still in progress' },
  'rollback-target-not-accepted': { status: 409, title: 'The rollback target was never accepted', rollout: deterministic },
  'rollback-target-is-current': { status: 409, title: 'The rollback target is the digest deployed now', rollout: deterministic },
  'no-current-rollout': { status: 409, title: 'The service has no rollout to roll back', rollout: deterministic },
  'no-verified-release': { status: 409, title: 'There is no verified release to return to', rollout: deterministic },
  'service-already-exists': { status: 409, title: 'A service with this name already exists' },
  'node-name-taken': { status: 409, title: 'The node name is registered to another cluster' },
  'release-identity-conflict': { status: 409, title: 'The release id and the release identity disagree' },
  'push-event-conflict': { status: 409, title: 'The push event id was used for a different event' },
  'stale-rollout-report': { status: 409, title: 'The report is for a rollout that is not current' },
  'immutable-plan-missing': { status: 409, title: 'The service has no immutable deployment plan' },
  'pipeline-stage-not-satisfied': { status: 409, title: 'The digest has not passed an upstream stage', rollout: governanceRefused },
  'promotion-request-void': { status: 409, title: 'The promotion request is void' },
  'break-glass-not-available': { status: 409, title: 'Break-glass cannot be used' },
  'request-timeout': { status: 408, title: 'The request did not arrive in time' },
  'payload-too-large': { status: 413, title: 'The request body is too large' },
  'unsupported-media-type': { status: 415, title: 'Unsupported media type' },
  'idempotency-key-reused': {
    status: 422, title: 'The Idempotency-Key was used for a different request', rollout: { replay: false, automatic: 'error', waiting: 'keep-waiting' },
  },
  'invalid-deployment-plan': { status: 422, title: 'The deployment plan is not valid', rollout: { replay: true, automatic: 'skipped', waiting: 'forget' } },
  'registry-target-mismatch': { status: 422, title: "The event's registry host or repository is not the service's registry target" },
  'runtime-capability-missing': { status: 422, title: 'The reporter lacks the immutable image capability' },
  'runtime-attestation-missing': { status: 422, title: 'The immutable rollout report envelope is missing' },
  'signature-missing': { status: 422, title: 'The digest has no signature', rollout: trustRefused },
  'signature-untrusted': { status: 422, title: 'The digest is signed, but by no signer the trust policy trusts', rollout: trustRefused },
  'signature-digest-mismatch': { status: 422, title: 'The trusted signature names another digest or repository', rollout: trustRefused },
  'attestation-missing': { status: 422, title: 'A required attestation is missing', rollout: trustRefused },
  'webhook-target-not-allowed': { status: 422, title: 'Webhooks may not be sent to this address' },
  'promotion-window-closed': { status: 423, title: 'Promotions are closed by a window', rollout: governanceRefused },
  'stop-the-line': { status: 423, title: 'Promotions are stopped', rollout: governanceRefused },
  'request-header-too-large': { status: 431, title: 'The request head is too large' },
  'internal-error': { status: 500, title: 'Internal error' },
  'database-unavailable': { status: 503, title: 'The database is unavailable' },
  'registry-unavailable': { status: 503, title: 'The image registry is unavailable', rollout: registryAway },
  'database-refused': { status: 503, title: 'The database refused what the service needs' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof errorCatalogue;

/** What a refusal with this code means for a rollout. */
export const rolloutRefusalOf = (code: ErrorCode): RolloutRefusal => (errorCatalogue[code] as ErrorSpec).rollout ?? rolloutRefusalDefault;

const isErrorCode = (value: unknown): value is ErrorCode => typeof value === 'string' && Object.hasOwn(errorCatalogue, value);

/** A problem detail: where in the input, and what is wrong there. */
export interface Problem {
  /** JSON pointer of the offending field, e.g. `/body/serviceData/name`. */
  field: string;
  message: string;
}

interface ErrorParts {
  detail?: string;
  /** Extra members of the problem document / TypedRequest `error.data`. */
  details?: Record<string, unknown>;
  /** Response headers that go with the error (e.g. Retry-After). */
  headers?: Record<string, string>;
  cause?: unknown;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly title: string;
  readonly details: Readonly<Record<string, unknown>>;
  readonly headers: Readonly<Record<string, string>>;

  constructor (code: ErrorCode, parts: ErrorParts = {}) {
    const spec: ErrorSpec = errorCatalogue[code];
    super(parts.detail ?? spec.title, parts.cause === undefined ? undefined : { cause: parts.cause });
    this.name = 'AppError';
    this.code = code;
    this.statusCode = spec.status;
    this.title = spec.title;
    this.details = parts.details ?? {};
    this.headers = parts.headers ?? {};
  }
}

export const isAppError = (value: unknown): value is AppError => value instanceof AppError;

/** At most `max` characters of a value taken from a request, for messages and members. */
export function excerpt (value: unknown, max = 128): string {
  if (typeof value === 'string') return value.length <= max ? value : `${value.slice(0, max)}…`;
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return typeof value === 'object' ? 'an object' : typeof value;
}

/** A value of a request in a message: strings quoted, everything cut with `excerpt`; `absent` for undefined. */
const shownValue = (value: unknown): string => (value === undefined ? 'absent' : typeof value === 'string' ? `'${excerpt(value, 64)}'` : excerpt(value, 64));

/** The values a rollout conflict names: the service's generation and current rollout. */
export interface CurrentRollout {
  currentGeneration: number;
  currentRolloutId: string | null;
}

const MAX_PROBLEMS = 20;

/** Why a service's placement gives no target scope (`invalid-deployment-plan`). */
export interface PlacementProblem {
  kind: 'no-placement' | 'unregistered-clusters' | 'clusters-without-nodes';
  detail: string;
  clusterIds?: readonly string[];
}

/** A window that closes promotions, as a refusal names it (src/domain/governance/windows.ts, WindowClosure). */
export interface ClosingWindow {
  kind: 'deny' | 'outside-allow' | 'invalid';
  scope: 'global' | 'service';
  names: readonly string[];
  /** When this deny occurrence ends. */
  endsAt?: number;
  description?: string;
}

/** A pipeline stage a digest has not passed (src/domain/governance/pipelines.ts, StageVerdict when not satisfied). */
export interface UnsatisfiedStage {
  serviceId: string;
  serviceName?: string;
  soakSeconds: number;
  missing: 'never-promoted' | 'not-succeeded' | 'not-soaked' | 'failed' | 'revoked' | 'rolled-back';
  rolloutId?: string;
  inProgress?: boolean;
  ranSeconds?: number;
  remainingSeconds?: number;
  soakedAt?: number;
  failedAt?: number;
  reason?: string;
  revokedAt?: number;
  endedAt?: number;
  by?: string;
}

/** A promotion request as refusals and the approval-required answer name it. */
export interface PromotionRequestRef {
  requestId: string;
  serviceId: string;
  releaseId: string;
  expectedRolloutGeneration: number;
  required: number;
  approvals: number;
  expiresAt: number;
}

/** Why a break-glass grant cannot be used, requested or approved. */
export type BreakGlassUnavailable =
  'not-found' | 'not-allowed' | 'awaiting-approval' | 'expired' | 'used' | 'other-release' | 'not-a-promotion' | 'stop-the-line';

const isoTime = (ms: number): string => new Date(ms).toISOString();

const describeClosure = (c: ClosingWindow): string => {
  const names = c.names.slice(0, 5).map((n) => `'${excerpt(n, 64)}'`).join(', ') + (c.names.length > 5 ? ` (+${c.names.length - 5} more)` : '');
  if (c.kind === 'deny') return `the ${c.scope} deny window ${names}${c.endsAt === undefined ? '' : ` (until ${isoTime(c.endsAt)})`}`;
  if (c.kind === 'outside-allow') return `being outside the ${c.scope} allow window${c.names.length === 1 ? '' : 's'} ${names}`;
  return `the ${c.scope} window ${names}, which cannot be evaluated (fix its rule; a freeze fails closed)`;
};

/** What is missing in a stage, in words. */
const describeStage = (stage: UnsatisfiedStage, digest: string): string => {
  const where = `stage '${excerpt(stage.serviceName ?? stage.serviceId, 64)}'`;
  const what = `${excerpt(digest, 80)}`;
  switch (stage.missing) {
    case 'never-promoted': return `${what} was never promoted to ${where}`;
    case 'not-succeeded':
      return `${what} has not succeeded in ${where}${stage.inProgress === true ? ' yet (its rollout is in progress)' : ' (it was replaced first)'}`;
    case 'not-soaked': return stage.remainingSeconds !== undefined
      ? `${what} has soaked ${stage.ranSeconds ?? 0} s of ${stage.soakSeconds} s in ${where}: ${stage.remainingSeconds} s left` +
        (stage.soakedAt === undefined ? '' : ` (at ${isoTime(stage.soakedAt)})`)
      : `${what} ran ${stage.ranSeconds ?? 0} s of the ${stage.soakSeconds} s soak in ${where} before it was replaced: promote it there again`;
    case 'failed': return `${what} failed in ${where}${stage.reason === undefined ? '' : ` (${excerpt(stage.reason, 64)})`}`;
    case 'revoked': return `the success of ${what} in ${where} was revoked${stage.revokedAt === undefined ? '' : ` at ${isoTime(stage.revokedAt)}`}`;
    case 'rolled-back': return `${what} was ${stage.by === 'aborted' ? 'aborted' : 'rolled back'} in ${where}`;
  }
};

const describeProblems = (problems: readonly Problem[]): string =>
  problems.length === 0
    ? errorCatalogue['validation-failed'].title
    : problems.slice(0, 3).map((p) => `${p.field}: ${p.message}`).join('; ') +
      (problems.length > 3 ? ` (+${problems.length - 3} more)` : '');

/** What a trust-chain refusal names (src/domain/trust/verify.ts): the image and what was found there. */
export interface TrustRefusalParts {
  /** The digest-pinned reference verified. */
  image: string;
  detail: string;
  found: Readonly<Record<string, unknown>>;
}

/** Why a registry could not be used (`registry-unavailable`). */
export type RegistryUnavailableReason =
  'unreachable' | 'timeout' | 'server-error' | 'denied' | 'not-allowed' | 'invalid-response' | 'too-large';

const REGISTRY_RETRY_AFTER_SECONDS = 5;

const trustRefusal = (code: 'signature-missing' | 'signature-untrusted' | 'signature-digest-mismatch' | 'attestation-missing') =>
  (parts: TrustRefusalParts): AppError => new AppError(code, { detail: parts.detail, details: { image: parts.image, ...parts.found } });

/** One factory per code: the only way errors are built. */
/** What a caller who named a missing release most likely meant: a digest where a release id goes, or an image not pushed yet. */
const releaseHint = (releaseId: string): string => /^sha256:[a-f0-9]{64}$/.test(releaseId)
  ? 'a release is named by its id, not its digest: GET /v1/services/{serviceId}/image-releases lists them with their digests'
  : 'releases are listed by GET /v1/services/{serviceId}/image-releases; a release exists once a push event for its image was received';

export const errors = {
  validationFailed: (problems: readonly Problem[]): AppError => {
    const listed = problems.slice(0, MAX_PROBLEMS).map((p) => ({ field: excerpt(p.field, 256), message: excerpt(p.message, 512) }));
    return new AppError('validation-failed', { detail: describeProblems(listed), details: { problems: listed } });
  },
  idempotencyKeyMissing: (where = 'an Idempotency-Key header'): AppError => new AppError('idempotency-key-missing', {
    detail: `promotion, rollback and abort need ${where} (e.g. a UUID, reused on every retry)`,
  }),
  serverManagedField: (fields: readonly string[]): AppError => new AppError('server-managed-field', {
    detail: `${fields.join(', ')} ${fields.length === 1 ? 'is' : 'are'} managed by the server; use the promotion and rollback APIs`,
    details: { fields },
  }),
  unauthenticated: (detail: string): AppError => new AppError('unauthenticated', { detail }),
  forbidden: (detail: string): AppError => new AppError('forbidden', { detail }),
  notFound: (method: string, path: string): AppError => new AppError('not-found', { detail: `no route ${method} ${excerpt(path, 512)}` }),
  serviceNotFound: (serviceId: string): AppError => new AppError('service-not-found', {
    // A name where an id goes is the usual mistake: say how to find a service by its name (an id-shaped value gets the plain text).
    detail: `service '${excerpt(serviceId)}' does not exist` +
      (serviceId.startsWith('svc_') ? '' : ` (services are addressed by id; to find one by name: GET /v1/services?name=${excerpt(serviceId, 64)})`),
    details: { serviceId: excerpt(serviceId) },
  }),
  releaseNotFound: (serviceId: string, releaseId: string): AppError => new AppError('release-not-found', {
    detail: `release '${excerpt(releaseId)}' does not exist for service '${excerpt(serviceId)}' (${releaseHint(releaseId)})`,
    details: { serviceId: excerpt(serviceId), releaseId: excerpt(releaseId) },
  }),
  promotionRequestNotFound: (serviceId: string, requestId: string): AppError => new AppError('promotion-request-not-found', {
    detail: `service '${excerpt(serviceId)}' has no promotion request '${excerpt(requestId)}'`,
    details: { serviceId: excerpt(serviceId), requestId: excerpt(requestId) },
  }),
  attestationNotFound: (serviceId: string, attestationId: string): AppError => new AppError('attestation-not-found', {
    detail: `attestation '${excerpt(attestationId)}' does not exist for service '${excerpt(serviceId)}'`,
    details: { serviceId: excerpt(serviceId), attestationId: excerpt(attestationId) },
  }),
  clusterNotFound: (clusterId: string): AppError => new AppError('cluster-not-found', {
    detail: `cluster '${excerpt(clusterId)}' is not registered`,
    details: { clusterId: excerpt(clusterId) },
  }),
  webhookSubscriptionNotFound: (subscriptionId: string): AppError => new AppError('webhook-subscription-not-found', {
    detail: `webhook subscription '${excerpt(subscriptionId)}' does not exist`,
    details: { subscriptionId: excerpt(subscriptionId) },
  }),
  deadLetterNotFound: (subscriptionId: string, eventId: string): AppError => new AppError('dead-letter-not-found', {
    detail: `subscription '${excerpt(subscriptionId)}' has no dead letter for event '${excerpt(eventId)}'`,
    details: { subscriptionId: excerpt(subscriptionId), eventId: excerpt(eventId) },
  }),
  webhookTargetNotAllowed: (field: string, reason: string): AppError => new AppError('webhook-target-not-allowed', {
    detail: `${field}: ${excerpt(reason, 300)}`,
    details: { field, reason: excerpt(reason, 300) },
  }),
  methodNotFound: (method: string): AppError => new AppError('method-not-found', {
    detail: `unknown method '${excerpt(method)}'`,
    details: { method: excerpt(method) },
  }),
  rolloutGenerationConflict: (detail: string, current: CurrentRollout): AppError =>
    new AppError('rollout-generation-conflict', { detail, details: { ...current } }),
  currentRolloutMismatch: (expected: string, current: CurrentRollout): AppError => new AppError('current-rollout-mismatch', {
    detail: `expected current rollout '${excerpt(expected)}' but it is '${current.currentRolloutId ?? 'none'}'`,
    details: { ...current },
  }),
  idempotencyRequestInProgress: (retryAfterMs: number): AppError => new AppError('idempotency-request-in-progress', {
    detail: 'a request with this Idempotency-Key is still being processed; retry shortly',
    details: { retryAfterMs },
    headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) },
  }),
  rollbackTargetNotAccepted: (releaseId: string): AppError => new AppError('rollback-target-not-accepted', {
    detail: `release '${releaseId}' was never promoted, so it is no known-good target`,
    details: { releaseId },
  }),
  rollbackTargetIsCurrent: (releaseId: string, current: CurrentRollout): AppError => new AppError('rollback-target-is-current', {
    detail: `release '${releaseId}' is the digest deployed now`,
    details: { releaseId, ...current },
  }),
  noCurrentRollout: (serviceId: string, current: CurrentRollout): AppError => new AppError('no-current-rollout', {
    detail: `service '${serviceId}' has no rollout to roll back`,
    details: { ...current },
  }),
  noVerifiedRelease: (serviceId: string, current: CurrentRollout): AppError => new AppError('no-verified-release', {
    detail: `service '${serviceId}' has no release that succeeded before, other than the one deployed now: nothing to abort to`,
    details: { ...current },
  }),
  serviceAlreadyExists: (name: string, serviceId: string | undefined): AppError => new AppError('service-already-exists', {
    detail: `a service named '${excerpt(name, 256)}' already exists${serviceId === undefined ? '' : ` (id '${serviceId}')`}`,
    details: { name: excerpt(name, 256), ...(serviceId === undefined ? {} : { serviceId }) },
  }),
  nodeNameTaken: (clusterId: string, taken: ReadonlyArray<{ nodeName: string, ownerClusterId: string }>): AppError => {
    const [first] = taken;
    const more = taken.length > 1 ? ` (+${taken.length - 1} more)` : '';
    return new AppError('node-name-taken', {
      detail: `node '${first?.nodeName ?? ''}' is registered to cluster '${first?.ownerClusterId ?? ''}'${more}`,
      details: { clusterId, nodeName: first?.nodeName, ownerClusterId: first?.ownerClusterId, takenNodes: taken.slice(0, MAX_PROBLEMS) },
    });
  },
  releaseIdentityConflict: (detail: string, releaseId: string, existingReleaseId: string | undefined): AppError =>
    new AppError('release-identity-conflict', {
      detail,
      details: { releaseId, ...(existingReleaseId === undefined ? {} : { existingReleaseId }) },
    }),
  /** Names the fields whose values differ from the recorded event's, and the first one's two values. */
  pushEventConflict: (eventId: string, recorded: Readonly<Record<string, unknown>>, sent: Readonly<Record<string, unknown>>): AppError => {
    const differingFields = [...new Set([...Object.keys(recorded), ...Object.keys(sent)])].sort()
      .filter((field) => JSON.stringify(recorded[field]) !== JSON.stringify(sent[field]));
    const [first] = differingFields;
    const values = (field: string): string => `recorded ${shownValue(recorded[field])}, sent ${shownValue(sent[field])}`;
    const verb = differingFields.length === 1 ? 'differs' : 'differ';
    const which = first === undefined ? '' : `: ${differingFields.join(', ')} ${verb} (${first}: ${values(first)})`;
    return new AppError('push-event-conflict', {
      detail: `event '${excerpt(eventId)}' was already recorded with different content${which}; a new event needs a new eventId`,
      details: { eventId: excerpt(eventId), differingFields: differingFields.slice(0, MAX_PROBLEMS) },
    });
  },
  staleRolloutReport: (detail: string, current: CurrentRollout): AppError => new AppError('stale-rollout-report', {
    detail,
    details: { currentRolloutId: current.currentRolloutId, currentGeneration: current.currentGeneration },
  }),
  immutablePlanMissing: (serviceId: string): AppError => new AppError('immutable-plan-missing', {
    detail: `service '${serviceId}' has no immutable deployment plan`,
  }),
  requestTimeout: (): AppError => new AppError('request-timeout', {
    detail: 'the request (its head and body) did not arrive within REQUEST_TIMEOUT_MS; the connection is closed',
  }),
  requestHeaderTooLarge: (): AppError => new AppError('request-header-too-large', {
    detail: 'the request line and headers together are larger than the server accepts (16 KiB): a long query string, cookie or header',
  }),
  payloadTooLarge: (limitBytes: number | undefined, what = 'the request body'): AppError => new AppError('payload-too-large', {
    detail: limitBytes === undefined ? `${what} is too large` : `${what} is larger than the limit of ${limitBytes} bytes`,
    details: limitBytes === undefined ? {} : { limitBytes },
  }),
  unsupportedMediaType: (contentType: string | undefined): AppError => new AppError('unsupported-media-type', {
    detail: `${contentType === undefined ? 'a request body without a content type' : `content type '${excerpt(contentType, 64)}'`} is not accepted:` +
      " send the body as JSON with 'content-type: application/json'",
  }),
  idempotencyKeyReused: (operation: string): AppError => new AppError('idempotency-key-reused', {
    detail: `this Idempotency-Key was used for a different ${operation} request of this service`,
  }),
  /**
   * `problems` are the upstream validator's messages; `placement` says, when the target scope is
   * empty, why: no placement, or the placed clusters (named) that are not registered or have no nodes.
   */
  invalidDeploymentPlan: (problems: readonly string[], placement?: PlacementProblem): AppError => new AppError('invalid-deployment-plan', {
    detail: [...(placement ? [placement.detail] : []), ...problems].join('; '),
    details: {
      problems,
      ...(placement ? { placementProblem: placement.kind, ...(placement.clusterIds ? { clusterIds: placement.clusterIds.slice(0, MAX_PROBLEMS) } : {}) } : {}),
    },
  }),
  registryTargetMismatch: (detail: string, event: { serviceId: string, registryHost: string, repository: string }): AppError =>
    new AppError('registry-target-mismatch', { detail, details: { ...event } }),
  runtimeCapabilityMissing: (declared: unknown): AppError => new AppError('runtime-capability-missing', {
    detail: 'the reporter does not declare immutableImageDeploymentVersion 1',
    details: { declared: declared === undefined ? null : typeof declared === 'number' ? declared : excerpt(declared, 32) },
  }),
  runtimeAttestationMissing: (serviceId: string): AppError => new AppError('runtime-attestation-missing', {
    detail: `service '${serviceId}' requires immutable deployment: the immutableReport envelope is missing`,
  }),
  signatureMissing: trustRefusal('signature-missing'),
  signatureUntrusted: trustRefusal('signature-untrusted'),
  signatureDigestMismatch: trustRefusal('signature-digest-mismatch'),
  attestationMissing: trustRefusal('attestation-missing'),
  registryUnavailable: (registryHost: string, reason: RegistryUnavailableReason, detail: string, cause?: unknown): AppError =>
    new AppError('registry-unavailable', {
      detail: `registry ${excerpt(registryHost)}: ${detail}; nothing was changed, try again shortly`,
      details: { registryHost: excerpt(registryHost), reason, retryAfterSeconds: REGISTRY_RETRY_AFTER_SECONDS },
      headers: { 'retry-after': String(REGISTRY_RETRY_AFTER_SECONDS) },
      cause,
    }),
  promotionWindowClosed: (closedBy: readonly ClosingWindow[], opensAt: number | undefined, searchedUntil: number): AppError => {
    const [first] = closedBy;
    const more = closedBy.length > 1 ? ` and ${closedBy.length - 1} more` : '';
    const when = opensAt === undefined ? `no opening before ${isoTime(searchedUntil)}` : `they open at ${isoTime(opensAt)}`;
    return new AppError('promotion-window-closed', {
      detail: `promotions are closed by ${first === undefined ? 'a window' : describeClosure(first)}${more}; ${when}. Rollbacks and aborts are not blocked`,
      details: {
        window: first?.names[0] === undefined ? null : excerpt(first.names[0], 64),
        scope: first?.scope ?? null,
        kind: first?.kind ?? null,
        ...(opensAt === undefined ? { searchedUntil } : { opensAt }),
        // At most 10 closures of 5 names each: a few kilobytes whatever the policies hold.
        closedBy: closedBy.slice(0, 10).map((c) => ({
          kind: c.kind,
          scope: c.scope,
          names: c.names.slice(0, 5).map((n) => excerpt(n, 64)),
          ...(c.endsAt === undefined ? {} : { endsAt: c.endsAt }),
        })),
      },
    });
  },
  stopTheLine: (stop: { reason?: string, by?: string, since?: number }): AppError => new AppError('stop-the-line', {
    detail: `promotions of every service are stopped${stop.by === undefined ? '' : ` by ${excerpt(stop.by, 64)}`}` +
      `${stop.since === undefined ? '' : ` since ${isoTime(stop.since)}`}: ${excerpt(stop.reason ?? 'no reason given', 256)}.` +
      ' Rollbacks and aborts are not blocked',
    details: { reason: excerpt(stop.reason ?? '', 512), by: stop.by === undefined ? null : excerpt(stop.by, 256), since: stop.since ?? null },
  }),
  pipelineStageNotSatisfied: (digest: string, stage: UnsatisfiedStage): AppError => new AppError('pipeline-stage-not-satisfied', {
    detail: describeStage(stage, digest),
    details: {
      stage: excerpt(stage.serviceId),
      ...(stage.serviceName === undefined ? {} : { stageName: excerpt(stage.serviceName, 256) }),
      missing: stage.missing,
      digest: excerpt(digest, 80),
      soakSeconds: stage.soakSeconds,
      ...Object.fromEntries((['rolloutId', 'remainingSeconds', 'soakedAt', 'ranSeconds', 'failedAt', 'revokedAt', 'endedAt'] as const)
        .flatMap((k) => (stage[k] === undefined ? [] : [[k, typeof stage[k] === 'string' ? excerpt(stage[k]) : stage[k]]]))),
      ...(stage.reason === undefined ? {} : { reason: excerpt(stage.reason, 64) }),
    },
  }),
  approvalRequired: (request: PromotionRequestRef): AppError => new AppError('approval-required', {
    detail: `this promotion needs ${request.required} approval${request.required === 1 ? '' : 's'} from principals other than the requester:` +
      ` promotion request '${excerpt(request.requestId)}' was created and expires at ${isoTime(request.expiresAt)}; nothing was issued yet`,
    details: {
      promotionRequest: { ...request, requestId: excerpt(request.requestId), serviceId: excerpt(request.serviceId), releaseId: excerpt(request.releaseId) },
    },
  }),
  approvalNotAllowed: (reason: 'self-approval' | 'not-an-approver' | 'already-approved', subject: string, requestId: string): AppError => {
    const why = {
      'self-approval': 'the requester can never approve their own request',
      'not-an-approver': "is not among the policy's approvers (roles and subjects)",
      'already-approved': 'has already approved this request: approvers must be distinct principals',
    }[reason];
    return new AppError('approval-not-allowed', {
      detail: reason === 'self-approval' ? `${why} ('${excerpt(subject, 64)}', request '${excerpt(requestId)}')` : `'${excerpt(subject, 64)}' ${why}`,
      details: { reason, subject: excerpt(subject, 256), requestId: excerpt(requestId) },
    });
  },
  promotionRequestVoid: (reason: 'expired' | 'generation-moved', request: { requestId: string, expiresAt: number, expectedRolloutGeneration: number },
    currentGeneration: number): AppError => new AppError('promotion-request-void', {
    detail: reason === 'expired'
      ? `promotion request '${excerpt(request.requestId)}' expired at ${isoTime(request.expiresAt)}: promote again to make a new one`
      : `promotion request '${excerpt(request.requestId)}' named generation ${request.expectedRolloutGeneration} but the service is at ${currentGeneration}:` +
        ' another rollout came first; promote again to make a new request',
    details: {
      reason,
      requestId: excerpt(request.requestId),
      expiresAt: request.expiresAt,
      expectedRolloutGeneration: request.expectedRolloutGeneration,
      currentGeneration,
    },
  }),
  breakGlassNotAvailable: (reason: BreakGlassUnavailable, grantId?: string): AppError => {
    const why = {
      'not-found': 'the service has no break-glass grant of this id',
      'not-allowed': "the service's promotion policy does not allow break-glass (breakGlass.allowed)",
      'awaiting-approval': 'the break-glass grant has not been approved by a second principal yet',
      expired: 'the break-glass grant has expired (its time box is over, or it was not approved in time)',
      used: 'the break-glass grant was used already: it allows one promotion',
      'other-release': 'the break-glass grant is for another release',
      'not-a-promotion': 'break-glass is for promotions by hand; rollbacks and aborts need none',
      'stop-the-line': 'stop-the-line is on: break-glass does not pass it (an admin lifts it)',
    }[reason];
    return new AppError('break-glass-not-available', { detail: why, details: { reason, ...(grantId === undefined ? {} : { grantId: excerpt(grantId) }) } });
  },
  internalError: (cause: unknown): AppError => new AppError('internal-error', {
    detail: 'An internal error occurred; the request id identifies it in the server log',
    cause,
  }),
  /** An error answered before, replayed verbatim from its stored record (the same Idempotency-Key). */
  replayed: (stored: { code: string, message: string, details: Record<string, unknown> }): AppError =>
    isErrorCode(stored.code)
      ? new AppError(stored.code, { detail: stored.message, details: stored.details })
      : new AppError('internal-error', { detail: `a stored outcome has the unknown code '${excerpt(stored.code)}'` }),
  databaseUnavailable: (cause?: unknown): AppError => new AppError('database-unavailable', {
    detail: 'The database did not answer; try again shortly',
    headers: { 'retry-after': '2' },
    details: { retryAfterSeconds: 2 },
    cause,
  }),
  /**
   * The database answered, but refused a command the service needs (`refused`: `createIndexes <index> on
   * <collection>`) or breaks a guarantee the design rests on (`refused`: the guarantee, from the conformance
   * check); `reason` is the server's answer or what it did, bounded. Not retryable as it is: an operator acts.
   */
  databaseRefused: (refused: string, reason: string): AppError => new AppError('database-refused', {
    detail: `the database refused: ${excerpt(refused, 120)}: ${excerpt(reason, 400)}`,
    details: { refused: excerpt(refused, 120), reason: excerpt(reason, 400) },
  }),
} as const;
