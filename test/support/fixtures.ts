import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../src/contracts/index.js';
import type { RolloutHistoryItem, RolloutHistoryPage } from '../../src/domain/history.js';
import { serviceData } from './app.js';
import { reportVerified } from './reports.js';

/** The registry every fixture service pulls from. */
export const registryHost = 'registry.example.com';

export const digestOf = (seed: string): `sha256:${string}` => `sha256:${createHash('sha256').update(seed).digest('hex')}`;

export interface FixtureService {
  id: string;
  repository: string;
}

/** What the fixtures need of a server: `app.inject` in-process, or `httpCaller(url)` over a real port. */
export interface CallerResponse {
  statusCode: number;
  body: string;
  headers: Record<string, string | string[] | number | undefined>;
  json(): any; // light-my-request types json() the same way: tests read fields freely
}
export interface Caller {
  inject(opts: { method: 'GET' | 'POST' | 'PUT', url: string, headers?: Record<string, string>, payload?: object }): Promise<CallerResponse>;
}

/** A Caller over real HTTP (several server processes). */
export function httpCaller (baseUrl: string): Caller {
  return {
    async inject ({ method, url, headers = {}, payload }) {
      const res = await fetch(`${baseUrl}${url}`, {
        method,
        headers: { ...headers, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
        signal: AbortSignal.timeout(30_000),
      });
      const body = await res.text();
      return { statusCode: res.status, body, headers: Object.fromEntries(res.headers), json: () => JSON.parse(body) };
    },
  };
}

export const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

/** Registers a cluster with its nodes (PUT semantics). */
export async function registerCluster (app: Caller, admin: string, clusterId: string, nodeNames: string[]): Promise<void> {
  const res = await app.inject({ method: 'PUT', url: `/v1/clusters/${clusterId}`, headers: bearer(admin), payload: { nodeNames } });
  if (res.statusCode !== 200) throw new Error(`registerCluster ${clusterId}: ${res.statusCode} ${res.body}`);
}

/** A service placed on the given clusters, pulling from registry.example.com/<repository>. */
export async function createFixtureService (app: Caller, admin: string, opts: {
  clusterIds?: string[],
  replicasPerNode?: number,
  deployOnPush?: boolean,
  withPlacement?: boolean,
  rolloutPolicy?: Record<string, unknown>,
  promotionPolicy?: Record<string, unknown>,
} = {}): Promise<FixtureService> {
  const repository = `team/app-${randomBytes(4).toString('hex')}`;
  const res = await app.inject({
    method: 'POST',
    url: '/v1/services',
    headers: bearer(admin),
    payload: serviceData({
      registryTarget: { protocol: 'oci', registryHost, repository },
      ...(opts.deployOnPush ? { deployOnPush: true } : {}),
      ...(opts.rolloutPolicy ? { rolloutPolicy: opts.rolloutPolicy } : {}),
      ...(opts.promotionPolicy ? { promotionPolicy: opts.promotionPolicy } : {}),
      ...(opts.withPlacement === false ? {} : { placement: { clusterIds: opts.clusterIds ?? ['c1'], replicasPerNode: opts.replicasPerNode ?? 2 } }),
    }),
  });
  if (res.statusCode !== 201) throw new Error(`createService: ${res.statusCode} ${res.body}`);
  return { id: res.json().service.id, repository };
}

export interface PushOptions { tag?: string, seed?: string, observedAt?: number, eventId?: string, releaseId?: string }

/** An IImmutableRegistryPushEvent for the service's registry target. */
export function pushEvent (service: FixtureService, opts: PushOptions = {}): Record<string, unknown> {
  const seed = opts.seed ?? randomBytes(8).toString('hex');
  const digest = digestOf(seed);
  const tag = opts.tag ?? 'latest';
  return {
    deploymentPolicy: 'immutable-digest',
    eventId: opts.eventId ?? `evt_${randomBytes(8).toString('hex')}`,
    releaseId: opts.releaseId ?? `rel_${createHash('sha256').update(`${service.id}/${digest}`).digest('hex').slice(0, 24)}`,
    protocol: 'oci',
    registryHost,
    repository: service.repository,
    tag,
    registryRootDigest: digest,
    digestPinnedImageReference: `${registryHost}/${service.repository}@${digest}`,
    imageUrl: `${registryHost}/${service.repository}:${tag}`,
    observedAt: opts.observedAt ?? Date.now(),
    serviceId: service.id,
    imageId: 'img-1',
    manifestMediaType: 'application/vnd.oci.image.index.v1+json',
  };
}

export interface PushedRelease { releaseId: string, digest: string, body: Record<string, unknown> }

/** Pushes an event and returns the release id. */
export async function pushRelease (app: Caller, token: string, service: FixtureService, opts: PushOptions = {}): Promise<PushedRelease> {
  const event = pushEvent(service, opts);
  const res = await app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(token), payload: event });
  if (res.statusCode !== 201 && res.statusCode !== 200) throw new Error(`push: ${res.statusCode} ${res.body}`);
  return { releaseId: event['releaseId'] as string, digest: event['registryRootDigest'] as string, body: res.json() };
}

export interface RolloutCall { generation: number, currentRolloutId?: string, key?: string, reason?: string }

/** POST …/promote or …/rollback with the call's Idempotency-Key (a fresh one unless given). */
function rolloutRequest (app: Caller, token: string, path: string, key: string | undefined, payload: Record<string, unknown>) {
  return app.inject({ method: 'POST', url: path, headers: { ...bearer(token), 'idempotency-key': key ?? randomBytes(12).toString('hex') }, payload });
}

export function promote (app: Caller, token: string, serviceId: string, releaseId: string, call: RolloutCall) {
  return rolloutRequest(app, token, `/v1/services/${serviceId}/image-releases/${releaseId}/promote`, call.key, {
    expectedRolloutGeneration: call.generation,
    ...(call.currentRolloutId ? { expectedCurrentRolloutId: call.currentRolloutId } : {}),
    enableImmutableImage: true,
    ...(call.reason ? { reason: call.reason } : {}),
  });
}

export function rollback (app: Caller, token: string, serviceId: string, releaseId: string, call: RolloutCall & { currentRolloutId: string }) {
  return rolloutRequest(app, token, `/v1/services/${serviceId}/image-releases/${releaseId}/rollback`, call.key, {
    expectedRolloutGeneration: call.generation,
    expectedCurrentRolloutId: call.currentRolloutId,
    ...(call.reason ? { reason: call.reason } : {}),
  });
}

export interface PromotedService {
  svc: FixtureService;
  /** The first promotion's plan (generation 1, release `a`). */
  plan: IImmutableImageDeploymentPlan;
  releases: { a: string, b: string };
}

/** A service placed on `clusterIds` (default c1 and c2, 2 replicas per node) with releases a and b pushed and a promoted. */
export async function promotedService (app: Caller, tokens: { admin: string, api: string }, opts: {
  clusterIds?: string[], replicasPerNode?: number, rolloutPolicy?: Record<string, unknown>
} = {}): Promise<PromotedService> {
  const svc = await createFixtureService(app, tokens.admin, {
    clusterIds: opts.clusterIds ?? ['c1', 'c2'],
    replicasPerNode: opts.replicasPerNode ?? 2,
    ...(opts.rolloutPolicy ? { rolloutPolicy: opts.rolloutPolicy } : {}),
  });
  const a = await pushRelease(app, tokens.api, svc, { tag: 'a' });
  const b = await pushRelease(app, tokens.api, svc, { tag: 'b' });
  const res = await promote(app, tokens.api, svc.id, a.releaseId, { generation: 0 });
  if (res.statusCode !== 200) throw new Error(`promotedService: ${res.statusCode} ${res.body}`);
  const plan = res.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
  return { svc, plan, releases: { a: a.releaseId, b: b.releaseId } };
}

/** One page of GET /v1/services/:serviceId/rollouts (newest first); throws unless 200. */
export async function rolloutHistoryPage (app: Caller, token: string, serviceId: string, page: {
  limit?: number, cursor?: string
} = {}): Promise<RolloutHistoryPage> {
  const query = new URLSearchParams();
  if (page.limit !== undefined) query.set('limit', String(page.limit));
  if (page.cursor !== undefined) query.set('cursor', page.cursor);
  const search = query.toString();
  const url = `/v1/services/${serviceId}/rollouts${search === '' ? '' : `?${search}`}`;
  const res = await app.inject({ method: 'GET', url, headers: bearer(token) });
  if (res.statusCode !== 200) throw new Error(`rollout history of ${serviceId}: ${res.statusCode} ${res.body}`);
  return res.json() as RolloutHistoryPage;
}

/** The rollouts of the history's first page (the server's default page size unless `limit`). */
export async function rolloutHistory (app: Caller, token: string, serviceId: string, page: { limit?: number } = {}): Promise<RolloutHistoryItem[]> {
  return (await rolloutHistoryPage(app, token, serviceId, page)).rollouts;
}

/** The whole rollout history, following the keyset cursor (500 a page). */
export async function fullRolloutHistory (app: Caller, token: string, serviceId: string): Promise<RolloutHistoryItem[]> {
  const items: RolloutHistoryItem[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const res = await rolloutHistoryPage(app, token, serviceId, { limit: 500, ...(cursor === undefined ? {} : { cursor }) });
    items.push(...res.rollouts);
    cursor = res.nextCursor;
    if (!cursor) return items;
  }
  throw new Error('the rollout history has more than 100 pages');
}

/**
 * (Kept out of reports.ts, which the benchmarks compile without vitest.) Promotes the release (expecting 200) and
 * reports every replica of `nodeNames` verified for it (expecting `succeeded`, with the fixtures' stability window
 * of 0): the rollout's plan.
 */
export async function promoteAndSucceed (
  app: Caller, tokens: { api: string, cluster: string }, svc: FixtureService, release: PushedRelease, generation: number,
  nodeNames: string[],
): Promise<IImmutableImageDeploymentPlan> {
  const res = await promote(app, tokens.api, svc.id, release.releaseId, { generation });
  expect(res.statusCode, res.body).toBe(200);
  const plan = res.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
  const { status } = await reportVerified(app, tokens.cluster, plan, svc.id, nodeNames, 1);
  expect(status['status']).toBe('succeeded');
  return plan;
}
