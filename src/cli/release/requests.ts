/**
 * Every request the CLI sends, each built by one small pure function (unit-tested in
 * test/unit/cli/requests.test.ts): method, path with its query, headers, body.
 */

export interface ApiRequest {
  method: 'GET' | 'POST' | 'PUT';
  /** Path and query, appended to the base URL. */
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}

export const servicePath = (serviceId: string): string => `/v1/services/${encodeURIComponent(serviceId)}`;

/** `?a=1&b=x` from the defined values, in the given order; '' when none is. */
export function queryString (params: Record<string, string | number | undefined>): string {
  const parts = Object.entries(params)
    .filter((entry): entry is [string, string | number] => entry[1] !== undefined)
    .map(([name, value]) => `${name}=${encodeURIComponent(String(value))}`);
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}

export interface PageQuery {
  limit: number;
  cursor?: string | undefined;
}

/** GET /v1/services/:id */
export const serviceRequest = (serviceId: string): ApiRequest => ({ method: 'GET', path: servicePath(serviceId) });

/** GET /v1/services/:id/rollout */
export const rolloutViewRequest = (serviceId: string): ApiRequest => ({ method: 'GET', path: `${servicePath(serviceId)}/rollout` });

/** GET /v1/services/:id/image-releases?limit&cursor */
export const releasesRequest = ({ serviceId, limit, cursor }: PageQuery & { serviceId: string }): ApiRequest =>
  ({ method: 'GET', path: `${servicePath(serviceId)}/image-releases${queryString({ limit, cursor })}` });

/** GET /v1/services/:id/rollouts?limit&cursor (the rollout history, newest first) */
export const historyRequest = ({ serviceId, limit, cursor }: PageQuery & { serviceId: string }): ApiRequest =>
  ({ method: 'GET', path: `${servicePath(serviceId)}/rollouts${queryString({ limit, cursor })}` });

/** GET /v1/services?name&limit&cursor */
export const servicesRequest = ({ name, limit, cursor }: PageQuery & { name?: string | undefined }): ApiRequest =>
  ({ method: 'GET', path: `/v1/services${queryString({ name, limit, cursor })}` });

/** What every write carries: the compare-and-swap expectations, the key and the reason. */
export interface IssueInput {
  serviceId: string;
  idempotencyKey: string;
  expectedGeneration: number;
  /** The current rollout; promote sends it only when given. */
  expectedRolloutId?: string | undefined;
  reason: string;
}

/** POST /v1/services/:id/image-releases/:releaseId/promote (with `Break-Glass-Grant` when given) */
export const promoteRequest = (input: IssueInput & { releaseId: string, breakGlassGrant?: string | undefined }): ApiRequest => ({
  method: 'POST',
  path: `${servicePath(input.serviceId)}/image-releases/${encodeURIComponent(input.releaseId)}/promote`,
  headers: { 'idempotency-key': input.idempotencyKey, ...(input.breakGlassGrant ? { 'break-glass-grant': input.breakGlassGrant } : {}) },
  body: {
    expectedRolloutGeneration: input.expectedGeneration,
    ...(input.expectedRolloutId ? { expectedCurrentRolloutId: input.expectedRolloutId } : {}),
    enableImmutableImage: true,
    reason: input.reason,
  },
});

/** POST /v1/services/:id/image-releases/:releaseId/rollback */
export const rollbackRequest = (input: IssueInput & { releaseId: string }): ApiRequest => ({
  method: 'POST',
  path: `${servicePath(input.serviceId)}/image-releases/${encodeURIComponent(input.releaseId)}/rollback`,
  headers: { 'idempotency-key': input.idempotencyKey },
  body: { expectedCurrentRolloutId: input.expectedRolloutId, expectedRolloutGeneration: input.expectedGeneration, reason: input.reason },
});

/** POST /v1/services/:id/rollout/abort: roll back to the last verified release. */
export const abortRequest = (input: IssueInput): ApiRequest => ({
  method: 'POST',
  path: `${servicePath(input.serviceId)}/rollout/abort`,
  headers: { 'idempotency-key': input.idempotencyKey },
  body: { expectedRolloutGeneration: input.expectedGeneration, expectedCurrentRolloutId: input.expectedRolloutId, reason: input.reason },
});

/** GET /v1/services/:id/attestations?rolloutId= (the attestations of one rollout) */
export const attestationsRequest = (serviceId: string, rolloutId: string): ApiRequest =>
  ({ method: 'GET', path: `${servicePath(serviceId)}/attestations${queryString({ rolloutId })}` });

/** GET /v1/attestation-keys (the public keys attestations are signed with, retired ones included) */
export const attestationKeysRequest = (): ApiRequest => ({ method: 'GET', path: '/v1/attestation-keys' });

/** GET /v1/services/:id/promotion-requests (the newest 50) */
export const promotionRequestsRequest = (serviceId: string): ApiRequest => ({ method: 'GET', path: `${servicePath(serviceId)}/promotion-requests` });

/** POST /v1/services/:id/promotion-requests/:requestId/approve (no body) */
export const approveRequest = (serviceId: string, requestId: string): ApiRequest =>
  ({ method: 'POST', path: `${servicePath(serviceId)}/promotion-requests/${encodeURIComponent(requestId)}/approve` });

/** POST /v1/services/:id/break-glass: ask for a grant for one promotion of a release */
export const breakGlassRequest = (input: { serviceId: string, releaseId: string, reason: string }): ApiRequest =>
  ({ method: 'POST', path: `${servicePath(input.serviceId)}/break-glass`, body: { releaseId: input.releaseId, reason: input.reason } });

/** GET /v1/services/:id/break-glass/:grantId */
export const grantRequest = (serviceId: string, grantId: string): ApiRequest =>
  ({ method: 'GET', path: `${servicePath(serviceId)}/break-glass/${encodeURIComponent(grantId)}` });

/** POST /v1/services/:id/break-glass/:grantId/approve (no body) */
export const grantApproveRequest = (serviceId: string, grantId: string): ApiRequest =>
  ({ method: 'POST', path: `${servicePath(serviceId)}/break-glass/${encodeURIComponent(grantId)}/approve` });

/** GET /v1/governance */
export const governanceRequest = (): ApiRequest => ({ method: 'GET', path: '/v1/governance' });

/** PUT /v1/governance: replaces the whole global policy (read it first and send it back changed). */
export const governanceWriteRequest = (governance: Record<string, unknown>): ApiRequest =>
  ({ method: 'PUT', path: '/v1/governance', body: { governance } });

/** GET /v1/services/:id/pipeline?digest */
export const pipelineRequest = (serviceId: string, digest?: string): ApiRequest =>
  ({ method: 'GET', path: `${servicePath(serviceId)}/pipeline${queryString({ digest })}` });
