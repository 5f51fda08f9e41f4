/**
 * Hostile JSON bodies that the property suite (hostileBodies.test.ts, ≤ 1000 levels, ≤ 200 KB) does
 * not reach, found by an independent acceptance run (docs/operations.md: "Bad input of any kind gets a clear
 * 4xx with the offending field, never a 500, and writes nothing"; "`__proto__` is harmless"):
 *
 * - arrays nested 8 000 deep inside a `uniqueItems` array (cluster node names, placement cluster ids);
 * - a deep object or a 500 KB string as the declared reporter capability, which the
 *   runtime-capability-missing answer echoes;
 * - prototype-poisoning keys in otherwise valid JSON, answered as "Body is not valid JSON";
 * - the acceptance check: 10 000 levels of nesting in EVERY field of EVERY route with a JSON body,
 *   REST and TypedRequest. The routes come from the server's own OpenAPI document and the fields
 *   from the very schemas it validates with (REST: the document; TypedRequest: the method contracts),
 *   so a new route or field is covered without editing this file — a new route without a base body
 *   here fails the first test.
 *
 * Every refused request is checked against a snapshot of the whole database: nothing written. The
 * last test sends the base bodies unmodified and expects them to be accepted, so every refusal
 * above is due to the hostile value and not to a base body that was invalid anyway.
 */
import { randomBytes } from 'node:crypto';
import { Type, type TSchema } from '@sinclair/typebox';
import type { LightMyRequestResponse } from 'fastify';
import { BSON } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clusterContracts, IIdentity, releaseTypedRequestContracts, serviceTypedRequestContracts, typedRequestContracts, type IImmutableImageDeploymentPlan,
} from '../../../src/contracts/index.js';
import { typedRequestMethods } from '../../../src/http/typedRequest/methods.js';
import { TypedRequestEnvelope } from '../../../src/http/typedRequest/protocol.js';
import type { Operations } from '../../../src/operations/index.js';
import { attestationTypedRequestContracts } from '../../../src/domain/attestation/index.js';
import { buildTestApp, serviceData, type TestApp } from '../../support/app.js';
import { testSigner } from '../../support/attestations.js';
import { bearer, createFixtureService, pushEvent, pushRelease, registerCluster, registryHost, type FixtureService } from '../../support/fixtures.js';
import { fullReplicas, reportBody } from '../../support/reports.js';

/** "A few KB at most": no error answer may echo unbounded input. */
const MAX_ANSWER_BYTES = 4096;
const ACCEPTANCE_DEPTH = 10_000;

// ---- raw JSON text with a hostile piece at a path -------------------------------------------------

type PathKey = string | number;
type Path = PathKey[];

const deepArray = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);
const deepObject = (depth: number): string => '{"a":'.repeat(depth) + '{}' + '}'.repeat(depth);

const MARKER = 'HOSTILE-VALUE-MARKER-7f3a';

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A deep copy of `body` with `path` set to the marker, creating missing containers on the way. */
function withMarkerAt (body: unknown, path: Path): unknown {
  // A JSON round trip, not structuredClone: shared arrays (reportBody names its nodes twice) must become two.
  const root = JSON.parse(JSON.stringify(body)) as unknown;
  if (path.length === 0) return MARKER;
  let node: unknown = root;
  path.forEach((key, i) => {
    const last = i === path.length - 1;
    const container = node as Record<PathKey, unknown>;
    if (last) {
      container[key] = MARKER;
      return;
    }
    const next = path[i + 1];
    const existing = container[key];
    const fits = typeof next === 'number' ? Array.isArray(existing) : isRecord(existing);
    if (!fits) container[key] = typeof next === 'number' ? [] : {};
    node = container[key];
  });
  return root;
}

/** JSON text of `body` with the raw JSON `piece` at `path`. */
function textWith (body: unknown, path: Path, piece: string): string {
  const text = JSON.stringify(withMarkerAt(body, path));
  const quoted = JSON.stringify(MARKER);
  const at = text.indexOf(quoted);
  if (at < 0 || text.indexOf(quoted, at + 1) >= 0) throw new Error(`marker not placed exactly once at ${path.join('/')}`);
  return text.slice(0, at) + piece + text.slice(at + quoted.length);
}

/** JSON text of `body` with an own key `key` (raw JSON text) added to the object at `path`. */
function textWithOwnKey (body: unknown, path: Path, keyAndValue: string): string {
  const text = JSON.stringify(withMarkerAt(body, [...path, MARKER]));
  const member = `${JSON.stringify(MARKER)}:${JSON.stringify(MARKER)}`;
  const at = text.indexOf(member);
  if (at < 0) throw new Error(`could not add a key at ${path.join('/')}`);
  return text.slice(0, at) + keyAndValue + text.slice(at + member.length);
}

// ---- fields of a schema -----------------------------------------------------------------------------

type JsonSchema = Record<string, unknown>;

/**
 * Every field path a schema names: object properties, record entries (for the keys the base body
 * has), array items (index 0), through anyOf/oneOf/allOf branches; `$ref`s into the OpenAPI
 * document's components are followed.
 */
function fieldPaths (schema: unknown, base: unknown, components: Record<string, JsonSchema> = {}): Path[] {
  const seen = new Set<string>();
  const out: Path[] = [];
  const visit = (node: unknown, value: unknown, path: Path, depth: number): void => {
    if (!isRecord(node) || depth > 20) return;
    const ref = node['$ref'];
    if (typeof ref === 'string') {
      const name = ref.split('/').pop() ?? '';
      visit(components[name], value, path, depth + 1);
      return;
    }
    const key = JSON.stringify(path);
    if (path.length > 0 && !seen.has(key)) {
      seen.add(key);
      out.push(path);
    }
    for (const branch of ['anyOf', 'oneOf', 'allOf'] as const) {
      const list = node[branch];
      if (Array.isArray(list)) for (const b of list) visit(b, value, path, depth + 1);
    }
    const properties = node['properties'];
    if (isRecord(properties)) {
      for (const [name, sub] of Object.entries(properties)) visit(sub, isRecord(value) ? value[name] : undefined, [...path, name], depth + 1);
    }
    const patterns = node['patternProperties'];
    const additional = node['additionalProperties'];
    const entrySchemas = [...(isRecord(patterns) ? Object.values(patterns) : []), ...(isRecord(additional) ? [additional] : [])];
    if (entrySchemas.length > 0 && isRecord(value)) {
      for (const entry of Object.keys(value)) for (const sub of entrySchemas) visit(sub, value[entry], [...path, entry], depth + 1);
    }
    const items = node['items'];
    if (isRecord(items)) visit(items, Array.isArray(value) ? value[0] : undefined, [...path, 0], depth + 1);
  };
  visit(schema, base, [], 0);
  return out;
}

// ---- the app and its state ----------------------------------------------------------------------------

interface OpenApiOperation { requestBody?: { content?: Record<string, { schema?: JsonSchema }> }, description?: string }
interface OpenApiDocument { paths: Record<string, Record<string, OpenApiOperation>>, components?: { schemas?: Record<string, JsonSchema> } }

interface RestBase {
  url: () => string;
  token: () => string;
  headers?: () => Record<string, string>;
  body: () => Record<string, unknown>;
  /** What the unmodified base body is answered with (the control test). */
  ok: number;
}

interface TypedBase {
  token: () => string;
  payload: () => Record<string, unknown>;
}

describe('hostile REST and TypedRequest bodies beyond the property suite', () => {
  let t: TestApp;
  let admin: string;
  let api: string;
  let cluster: string;
  let doc: OpenApiDocument;
  const s = {} as {
    svc: FixtureService;
    name: string;
    releases: [string, string];
    plan: IImmutableImageDeploymentPlan;
    sequence: number;
    /** The service's first attestation, once a report made a rollout succeed (the app signs with a test key). */
    attestationId?: string;
    subscriptionId?: string;
    /** A promotion request of another service whose policy needs one admin's approval (approvePromotionRequest's base). */
    approval?: { serviceId: string, requestId: string };
  };

  const serviceBody = (name: string): Record<string, unknown> => serviceData({
    name,
    environment: { LOG_LEVEL: 'info' },
    secretBundleId: 'sb-1',
    ports: { web: 8080, custom: { metrics: '9090' } },
    resources: { memorySizeMB: 256, cpus: 0.5 },
    domains: [{ name: 'shop.example.com' }],
    deploymentIds: ['d-1'],
    registryTarget: {
      protocol: 'oci',
      registryHost,
      repository: s.svc.repository,
      tag: 'latest',
      imageUrl: `${registryHost}/${s.svc.repository}:latest`,
      imageId: 'img-1',
    },
    deployOnPush: false,
    placement: { clusterIds: ['c1'], replicasPerNode: 1 },
    promotionPolicy: { breakGlass: { allowed: true, maxSeconds: 600 } },
  });
  const other = (): string => (s.plan.releaseId === s.releases[0] ? s.releases[1] : s.releases[0]);
  const key = (): string => `hostile-${randomBytes(8).toString('hex')}`;
  const report = (): Record<string, unknown> => reportBody(s.plan, s.svc.id, {
    session: 'hostile-session', sequence: ++s.sequence, nodeNames: ['n1', 'n2'], deployments: fullReplicas(s.plan, s.svc.id, ['n1', 'n2']),
  });
  const identity = (jwt: string) => ({ name: 'ui-user', userId: 'user-1', expiresAt: 4_102_444_800_000, jwt });

  /** One valid body per REST route with a JSON body, keyed like the OpenAPI document (`METHOD /path/{param}`). */
  const restBases: Record<string, RestBase> = {
    'POST /v1/services': { url: () => '/v1/services', token: () => admin, body: () => serviceBody(`svc-${randomBytes(4).toString('hex')}`), ok: 201 },
    'PUT /v1/services/{serviceId}': { url: () => `/v1/services/${s.svc.id}`, token: () => admin, body: () => serviceBody(s.name), ok: 200 },
    'PUT /v1/clusters/{clusterId}': {
      url: () => '/v1/clusters/c1',
      token: () => admin,
      body: () => ({ name: 'cluster one', nodeNames: ['n1', 'n2'] }),
      ok: 200,
    },
    'POST /v1/registry/push-events': {
      url: () => '/v1/registry/push-events',
      token: () => api,
      body: () => ({ ...pushEvent(s.svc, { tag: 'hostile' }), actorUserId: 'ci' }),
      ok: 201,
    },
    'POST /v1/deployment-snapshots': { url: () => '/v1/deployment-snapshots', token: () => cluster, body: report, ok: 200 },
    // Webhook subscriptions (docs/webhooks.md): a receiver on loopback, allowed by WEBHOOK_ALLOWED_HOSTS in this app.
    'POST /v1/webhooks/subscriptions': { url: () => '/v1/webhooks/subscriptions', token: () => admin, body: () => ({ url: 'http://127.0.0.1:9/hook' }), ok: 201 },
    'PATCH /v1/webhooks/subscriptions/{subscriptionId}': {
      url: () => `/v1/webhooks/subscriptions/${s.subscriptionId ?? 'whsub_none'}`, token: () => admin, body: () => ({ enabled: false }), ok: 200,
    },
    'POST /v1/webhooks/subscriptions/{subscriptionId}/rotate-secret': {
      url: () => `/v1/webhooks/subscriptions/${s.subscriptionId ?? 'whsub_none'}/rotate-secret`,
      token: () => admin,
      body: () => ({ overlapSeconds: 60 }),
      ok: 200,
    },
    'POST /v1/services/{serviceId}/break-glass': {
      url: () => `/v1/services/${s.svc.id}/break-glass`, token: () => api, body: () => ({ releaseId: other(), reason: 'hostile hotfix' }), ok: 201,
    },
    // The global governance policy (docs/governance.md): a window far in the past, so that promotions stay open.
    'PUT /v1/governance': {
      url: () => '/v1/governance',
      token: () => admin,
      body: () => ({ governance: { windows: [{ name: 'past', kind: 'deny', start: '2001-01-01T00:00', timeZone: 'UTC', durationSeconds: 60 }] } }),
      ok: 200,
    },
    'POST /v1/services/{serviceId}/image-releases/{releaseId}/promote': {
      url: () => `/v1/services/${s.svc.id}/image-releases/${other()}/promote`,
      token: () => api,
      headers: () => ({ 'idempotency-key': key() }),
      body: () => ({
        expectedRolloutGeneration: s.plan.rolloutGeneration, expectedCurrentRolloutId: s.plan.rolloutId, enableImmutableImage: true, reason: 'hostile',
      }),
      ok: 200,
    },
    'POST /v1/services/{serviceId}/image-releases/{releaseId}/rollback': {
      url: () => `/v1/services/${s.svc.id}/image-releases/${other()}/rollback`,
      token: () => api,
      headers: () => ({ 'idempotency-key': key() }),
      body: () => ({ expectedCurrentRolloutId: s.plan.rolloutId, expectedRolloutGeneration: s.plan.rolloutGeneration, reason: 'hostile' }),
      ok: 200,
    },
    // Accepted once a release other than the current one has succeeded (the base bodies run in an order that makes it so).
    'POST /v1/services/{serviceId}/rollout/abort': {
      url: () => `/v1/services/${s.svc.id}/rollout/abort`,
      token: () => api,
      headers: () => ({ 'idempotency-key': key() }),
      body: () => ({ expectedCurrentRolloutId: s.plan.rolloutId, expectedRolloutGeneration: s.plan.rolloutGeneration, reason: 'hostile' }),
      ok: 200,
    },
  };

  /** One valid payload (the request without identity) per TypedRequest method. */
  const typedBases: Record<string, TypedBase> = {
    createService: { token: () => admin, payload: () => ({ serviceData: serviceBody(`svc-${randomBytes(4).toString('hex')}`) }) },
    updateService: { token: () => admin, payload: () => ({ serviceId: s.svc.id, serviceData: serviceBody(s.name) }) },
    registerCluster: { token: () => admin, payload: () => ({ clusterId: 'c1', name: 'cluster one', nodeNames: ['n1', 'n2'] }) },
    reportImmutableRegistryPushEvent: { token: () => api, payload: () => ({ event: pushEvent(s.svc, { tag: 'hostile-typed' }) }) },
    reportDeploymentSnapshots: { token: () => cluster, payload: report },
    promoteServiceImageRelease: {
      token: () => api,
      payload: () => ({
        serviceId: s.svc.id,
        releaseId: other(),
        idempotencyKey: key(),
        expectedRolloutGeneration: s.plan.rolloutGeneration,
        expectedCurrentRolloutId: s.plan.rolloutId,
        enableImmutableImage: true,
      }),
    },
    rollbackServiceImageRelease: {
      token: () => api,
      payload: () => ({
        serviceId: s.svc.id,
        releaseId: other(),
        idempotencyKey: key(),
        expectedCurrentRolloutId: s.plan.rolloutId,
        expectedRolloutGeneration: s.plan.rolloutGeneration,
      }),
    },
    getServiceById: { token: () => admin, payload: () => ({ serviceId: s.svc.id }) },
    getServiceImageReleases: { token: () => admin, payload: () => ({ serviceId: s.svc.id }) },
    getServiceImageReleasesPage: { token: () => admin, payload: () => ({ serviceId: s.svc.id, limit: 10 }) },
    getServiceImageTagHistory: { token: () => admin, payload: () => ({ serviceId: s.svc.id, tag: 'a', limit: 5 }) },
    getImageReleaseVerification: { token: () => admin, payload: () => ({ serviceId: s.svc.id, releaseId: s.plan.releaseId }) },
    getServiceAttestations: { token: () => admin, payload: () => ({ serviceId: s.svc.id, limit: 5 }) },
    getServiceAttestation: { token: () => admin, payload: () => ({ serviceId: s.svc.id, attestationId: s.attestationId ?? 'att_none' }) },
    getGovernance: { token: () => admin, payload: () => ({}) },
    getPromotionRequests: { token: () => admin, payload: () => ({ serviceId: s.svc.id }) },
    approvePromotionRequest: { token: () => admin, payload: () => ({ ...s.approval }) },
    getAttestationKeys: { token: () => admin, payload: () => ({}) },
    getCluster: { token: () => admin, payload: () => ({ clusterId: 'c1' }) },
    listClusters: { token: () => admin, payload: () => ({ limit: 10 }) },
    listServices: { token: () => admin, payload: () => ({ limit: 10 }) },
    abortServiceRollout: {
      token: () => api,
      payload: () => ({
        serviceId: s.svc.id, idempotencyKey: key(), expectedCurrentRolloutId: s.plan.rolloutId, expectedRolloutGeneration: s.plan.rolloutGeneration,
      }),
    },
  };

  /** The request schema of every TypedRequest method (identity included), from the contracts. */
  const typedContracts: Record<string, { request: TSchema }> = {
    ...typedRequestContracts,
    ...releaseTypedRequestContracts,
    ...clusterContracts,
    ...serviceTypedRequestContracts,
    ...attestationTypedRequestContracts,
    // This project's (docs/trust.md): its payload is declared with the method.
    getImageReleaseVerification: { request: Type.Object({ identity: IIdentity, serviceId: Type.String(), releaseId: Type.String() }) },
    // Governance (docs/governance.md): declared with the methods too.
    getGovernance: { request: Type.Object({ identity: IIdentity }) },
    getPromotionRequests: { request: Type.Object({ identity: IIdentity, serviceId: Type.String() }) },
    approvePromotionRequest: { request: Type.Object({ identity: IIdentity, serviceId: Type.String(), requestId: Type.String() }) },
  };
  const typedEnvelope = (method: string): TSchema => {
    const contract = typedContracts[method];
    if (!contract) throw new Error(`no contract for ${method}`);
    return Type.Object({ ...TypedRequestEnvelope.properties, request: contract.request });
  };
  const typedBody = (method: string): Record<string, unknown> => {
    const base = typedBases[method];
    if (!base) throw new Error(`no base payload for ${method}`);
    return { method, request: { identity: identity(base.token()), ...base.payload() }, response: null, correlation: { id: 'corr-hostile', phase: 'request' } };
  };

  const refresh = async (): Promise<void> => {
    const res = await t.app.inject({ method: 'GET', url: `/v1/services/${s.svc.id}`, headers: bearer(admin) });
    s.plan = res.json().service.data.imageDeployment as IImmutableImageDeploymentPlan;
    const listed = await t.app.inject({ method: 'GET', url: `/v1/services/${s.svc.id}/attestations?limit=1`, headers: bearer(admin) });
    s.attestationId = (listed.json() as { attestations: Array<{ id: string }> }).attestations[0]?.id;
  };

  beforeAll(async () => {
    t = await buildTestApp({ ATTESTATION_SIGNING_KEY: testSigner('ed25519').privateKeyPem, WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' });
    [admin, api, cluster] = await Promise.all([t.token('admin'), t.token('api'), t.token('cluster', { clusterId: 'c1', subject: 'coreflow-c1' })]);
    await registerCluster(t.app, admin, 'c1', ['n1', 'n2']);
    s.svc = { id: '', repository: `team/hostile-${randomBytes(4).toString('hex')}` };
    s.name = `svc-hostile-${randomBytes(4).toString('hex')}`;
    const created = await t.app.inject({ method: 'POST', url: '/v1/services', headers: bearer(admin), payload: serviceBody(s.name) });
    expect(created.statusCode, created.body).toBe(201);
    s.svc.id = created.json().service.id as string;
    const a = await pushRelease(t.app, api, s.svc, { tag: 'a' });
    const b = await pushRelease(t.app, api, s.svc, { tag: 'b' });
    s.releases = [a.releaseId, b.releaseId];
    s.sequence = 0;
    for (const [i, release] of s.releases.entries()) {
      const promoted = await t.app.inject({
        method: 'POST',
        url: `/v1/services/${s.svc.id}/image-releases/${release}/promote`,
        headers: { ...bearer(api), 'idempotency-key': key() },
        payload: { expectedRolloutGeneration: i, enableImmutableImage: true },
      });
      expect(promoted.statusCode, promoted.body).toBe(200);
    }
    await refresh();
    const subscription = await t.app.inject({
      method: 'POST', url: '/v1/webhooks/subscriptions', headers: bearer(admin), payload: { url: 'http://127.0.0.1:9/hook', enabled: false },
    });
    expect(subscription.statusCode, subscription.body).toBe(201);
    s.subscriptionId = subscription.json().subscription.id as string;
    const gated = await createFixtureService(t.app, admin, { promotionPolicy: { approvals: { required: 1, approvers: [{ role: 'admin' }] } } });
    const asked = await t.app.inject({
      method: 'POST',
      url: `/v1/services/${gated.id}/image-releases/${(await pushRelease(t.app, api, gated)).releaseId}/promote`,
      headers: { ...bearer(api), 'idempotency-key': key() },
      payload: { expectedRolloutGeneration: 0, enableImmutableImage: true },
    });
    expect(asked.statusCode, asked.body).toBe(202);
    s.approval = { serviceId: gated.id, requestId: asked.json().promotionRequest.requestId as string };
    doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json() as OpenApiDocument;
  });
  afterAll(async () => { await t.close(); });

  /** Every document of every collection, canonical EJSON, in a stable order. */
  const snapshot = async (): Promise<string> => {
    const db = t.db;
    const names = (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).filter((n) => !n.startsWith('system.')).sort();
    const contents = await Promise.all(names.map(async (name) => [name, await db.collection(name).find({}).sort({ _id: 1 }).toArray()] as const));
    return BSON.EJSON.stringify(Object.fromEntries(contents), { relaxed: false });
  };

  const restSend = (routeKey: string, text: string): Promise<LightMyRequestResponse> => {
    const base = restBases[routeKey];
    if (!base) throw new Error(`no base body for ${routeKey}`);
    const method = routeKey.split(' ')[0] as 'POST' | 'PUT' | 'PATCH';
    return t.app.inject({
      method,
      url: base.url(),
      headers: { ...bearer(base.token()), ...base.headers?.(), 'content-type': 'application/json' },
      payload: text,
    });
  };
  const typedSend = (text: string): Promise<LightMyRequestResponse> =>
    t.app.inject({ method: 'POST', url: '/typedrequest', headers: { 'content-type': 'application/json' }, payload: text });

  const brief = (res: LightMyRequestResponse): string =>
    `${res.statusCode} ${String(res.headers['content-type'])} ${res.body.length} bytes: ${res.body.slice(0, 300)}`;

  /** Why a REST answer breaks "4xx problem+json with a code, a few KB at most"; undefined when it does not. */
  const restVerdict = (res: LightMyRequestResponse): string | undefined => {
    if (res.statusCode < 400 || res.statusCode >= 500) return `answered ${res.statusCode}`;
    if (!/^application\/problem\+json/.test(String(res.headers['content-type']))) return `answered ${res.statusCode} as ${String(res.headers['content-type'])}`;
    if (res.body.length > MAX_ANSWER_BYTES) return `answered ${res.statusCode} with ${res.body.length} bytes`;
    let problem: { code?: unknown, status?: unknown } = {};
    try {
      problem = JSON.parse(res.body) as typeof problem;
    } catch {
      return `answered ${res.statusCode} with a body that is not JSON`;
    }
    if (typeof problem.code !== 'string' || problem.status !== res.statusCode) return `answered ${res.statusCode} without a code: ${res.body.slice(0, 200)}`;
    return undefined;
  };
  /** Why a TypedRequest answer breaks "HTTP 200 error envelope with a code other than internal-error, a few KB at most". */
  const typedVerdict = (res: LightMyRequestResponse): string | undefined => {
    if (res.statusCode !== 200) return `answered HTTP ${res.statusCode}`;
    if (res.body.length > MAX_ANSWER_BYTES) return `answered with ${res.body.length} bytes`;
    let reply: { response?: unknown, error?: { data?: { code?: unknown } } } = {};
    try {
      reply = JSON.parse(res.body) as typeof reply;
    } catch {
      return 'answered with a body that is not JSON';
    }
    const code = reply.error?.data?.code;
    if (typeof code !== 'string') return `answered without an error code: ${res.body.slice(0, 200)}`;
    if (code === 'internal-error') return 'answered internal-error';
    if (reply.response !== null && reply.response !== undefined) return 'answered with a response';
    return undefined;
  };

  /** The problems of a REST problem document or a TypedRequest error, as text (fields and messages). */
  const problemText = (res: LightMyRequestResponse): string => {
    const body = JSON.parse(res.body) as { detail?: unknown, problems?: unknown, error?: { text?: unknown, data?: { problems?: unknown } } };
    return JSON.stringify({ detail: body.detail ?? body.error?.text, problems: body.problems ?? body.error?.data?.problems });
  };

  describe('arrays nested 8 000 deep in unique-item arrays are a 4xx naming the field', () => {
    const deep8000 = `[${deepArray(8_000)}]`;
    const cases: Array<[string, string, Path, string]> = [
      ['PUT /v1/clusters/:clusterId nodeNames', 'PUT /v1/clusters/{clusterId}', ['nodeNames'], '/body/nodeNames'],
      ['POST /v1/services placement.clusterIds', 'POST /v1/services', ['placement', 'clusterIds'], '/body/placement/clusterIds'],
      ['PUT /v1/services/:serviceId placement.clusterIds', 'PUT /v1/services/{serviceId}', ['placement', 'clusterIds'], '/body/placement/clusterIds'],
    ];
    for (const [name, routeKey, path, field] of cases) {
      it(name, async () => {
        const before = await snapshot();
        const text = textWith(restBases[routeKey]!.body(), path, deep8000);
        expect(text.length).toBeGreaterThan(16_000);
        const res = await restSend(routeKey, text);
        expect(restVerdict(res), brief(res)).toBeUndefined();
        const problem = res.json() as { code: string, problems?: Array<{ field: string }> };
        expect(problem.code, brief(res)).toBe('validation-failed');
        expect(problem.problems?.map((p) => p.field).some((f) => f.startsWith(field)), brief(res)).toBe(true);
        expect(await snapshot()).toBe(before);
      });
    }
  });

  describe('the runtime-capability-missing answer never echoes unbounded input', () => {
    const capabilityPath: Path = ['immutableReport', 'reporterCapabilities', 'immutableImageDeploymentVersion'];
    const cases: Array<[string, string]> = [
      ['an object nested 8 000 levels deep', deepObject(8_000)],
      ['a 500 KB string', JSON.stringify('x'.repeat(500_000))],
    ];
    for (const [name, piece] of cases) {
      it(`POST /v1/deployment-snapshots with ${name} as immutableImageDeploymentVersion: 4xx problem+json of a few KB`, async () => {
        const before = await snapshot();
        const res = await restSend('POST /v1/deployment-snapshots', textWith(report(), capabilityPath, piece));
        expect(restVerdict(res), brief(res)).toBeUndefined();
        expect(await snapshot()).toBe(before);
      });
    }
  });

  describe('prototype-poisoning keys in valid JSON are refused by name, not as "not valid JSON"', () => {
    const keys: Array<[string, string, RegExp]> = [
      ['__proto__', '"__proto__":{"polluted":"yes"}', /__proto__/],
      ['constructor.prototype', '"constructor":{"prototype":{"polluted":"yes"}}', /constructor/],
    ];
    const where = (body: Record<string, unknown>): Array<[string, Path]> => {
      const nested = Object.keys(body).find((k) => isRecord(body[k]));
      return [['at the top level', []], ...(nested ? [[`inside '${nested}'`, [nested]] as [string, Path]] : [])];
    };

    for (const routeKey of Object.keys(restBases)) {
      it(`${routeKey}: 400 validation-failed naming the key, nothing written`, async () => {
        const before = await snapshot();
        const failures: string[] = [];
        for (const [keyName, member, named] of keys) {
          for (const [place, path] of where(restBases[routeKey]!.body())) {
            const res = await restSend(routeKey, textWithOwnKey(restBases[routeKey]!.body(), path, member));
            const code = res.statusCode < 500 && res.body.startsWith('{') ? (res.json() as { code?: string }).code : undefined;
            const text = code === undefined ? '' : problemText(res);
            if (res.statusCode !== 400 || code !== 'validation-failed' || !named.test(text) || /not valid JSON/i.test(text)) {
              failures.push(`${keyName} ${place}: ${brief(res)}`);
            }
            if (await snapshot() !== before) failures.push(`${keyName} ${place}: wrote to the database`);
          }
        }
        expect(failures, `${failures.length} refusals do not name the key`).toEqual([]);
      });
    }

    it('POST /typedrequest: a validation-failed error naming the key, nothing written', async () => {
      const before = await snapshot();
      const failures: string[] = [];
      for (const method of ['createService', 'registerCluster', 'reportDeploymentSnapshots']) {
        for (const [keyName, member, named] of keys) {
          for (const [place, path] of [['in the envelope', []], ['in the request', ['request']]] as Array<[string, Path]>) {
            const res = await typedSend(textWithOwnKey(typedBody(method), path, member));
            const reply = res.statusCode === 200 ? (res.json() as { error?: { data?: { code?: string } } }) : {};
            const text = reply.error ? problemText(res) : '';
            if (reply.error?.data?.code !== 'validation-failed' || !named.test(text) || /not valid JSON/i.test(text)) {
              failures.push(`${method} ${keyName} ${place}: ${brief(res)}`);
            }
            if (await snapshot() !== before) failures.push(`${method} ${keyName} ${place}: wrote to the database`);
          }
        }
      }
      expect(failures, `${failures.length} refusals do not name the key`).toEqual([]);
    });
  });

  describe(`acceptance: ${ACCEPTANCE_DEPTH} levels of nesting in every field of every route with a JSON body`, () => {
    it('every REST route with a JSON body in the OpenAPI document has a base body here, and every advertised TypedRequest method too', () => {
      const withBody = Object.entries(doc.paths).flatMap(([path, operations]) => Object.entries(operations)
        .filter(([, op]) => op.requestBody?.content?.['application/json'] !== undefined)
        .map(([method]) => `${method.toUpperCase()} ${path}`))
        .filter((route) => route !== 'POST /typedrequest');
      expect(withBody.sort()).toEqual(Object.keys(restBases).sort());
      const description = doc.paths['/typedrequest']?.['post']?.description ?? '';
      // The methods the route serves (only their names: no use case is called), each advertised in the description.
      const methods = typedRequestMethods(new Proxy({}, { get: () => ({}) }) as Operations).map((m) => m.method);
      expect(methods.length).toBeGreaterThan(10);
      expect([...methods].sort()).toEqual(Object.keys(typedBases).sort());
      for (const method of methods) expect(description, method).toContain(method);
    });

    const pieces: Array<[string, string]> = [['an array', deepArray(ACCEPTANCE_DEPTH)], ['an object', deepObject(ACCEPTANCE_DEPTH)]];

    for (const routeKey of Object.keys(restBases)) {
      it(`${routeKey}: 4xx problem+json of at most ${MAX_ANSWER_BYTES} bytes, nothing written`, async () => {
        const [method, path] = routeKey.split(' ') as [string, string];
        const schema = doc.paths[path]?.[method.toLowerCase()]?.requestBody?.content?.['application/json']?.schema;
        expect(schema, `${routeKey} has no JSON body schema in /docs/json`).toBeDefined();
        const base = restBases[routeKey]!.body();
        const fields = fieldPaths(schema, base, doc.components?.schemas);
        expect(fields.length).toBeGreaterThan(0);
        const before = await snapshot();
        const failures: string[] = [];
        for (const field of fields) {
          for (const [kind, piece] of pieces) {
            const res = await restSend(routeKey, textWith(restBases[routeKey]!.body(), field, piece));
            const verdict = restVerdict(res);
            if (verdict) failures.push(`/${field.join('/')} = ${kind} ${ACCEPTANCE_DEPTH} deep: ${verdict}`);
            if (await snapshot() !== before) failures.push(`/${field.join('/')} = ${kind}: wrote to the database`);
          }
        }
        expect(failures, `${failures.length} of ${fields.length * pieces.length} hostile bodies (${fields.length} fields) broke the promise`).toEqual([]);
      }, 120_000);
    }

    for (const method of Object.keys(typedBases)) {
      it(`POST /typedrequest ${method}: a coded error (not internal-error) of at most ${MAX_ANSWER_BYTES} bytes, nothing written`, async () => {
        const fields = fieldPaths(typedEnvelope(method), typedBody(method));
        expect(fields.length).toBeGreaterThan(0);
        const before = await snapshot();
        const failures: string[] = [];
        for (const field of fields) {
          for (const [kind, piece] of pieces) {
            const res = await typedSend(textWith(typedBody(method), field, piece));
            const verdict = typedVerdict(res);
            if (verdict) failures.push(`/${field.join('/')} = ${kind} ${ACCEPTANCE_DEPTH} deep: ${verdict}`);
            if (await snapshot() !== before) failures.push(`/${field.join('/')} = ${kind}: wrote to the database`);
          }
        }
        expect(failures, `${failures.length} of ${fields.length * pieces.length} hostile bodies (${fields.length} fields) broke the promise`).toEqual([]);
      }, 120_000);
    }
  });

  // Last: writes. Proves every refusal above is due to the hostile value, not to a base body refused anyway.
  it('the base bodies unmodified are accepted (REST and TypedRequest)', async () => {
    // The report verifies the current release; after the promotion, the abort returns to it.
    const order = ['POST /v1/deployment-snapshots', 'POST /v1/services', 'PUT /v1/services/{serviceId}', 'PUT /v1/clusters/{clusterId}',
      'POST /v1/registry/push-events',
      'POST /v1/services/{serviceId}/image-releases/{releaseId}/promote', 'POST /v1/services/{serviceId}/rollout/abort',
      'POST /v1/services/{serviceId}/image-releases/{releaseId}/rollback',
      'POST /v1/webhooks/subscriptions', 'PATCH /v1/webhooks/subscriptions/{subscriptionId}',
      'POST /v1/webhooks/subscriptions/{subscriptionId}/rotate-secret', 'PUT /v1/governance', 'POST /v1/services/{serviceId}/break-glass'];
    expect([...order].sort()).toEqual(Object.keys(restBases).sort());
    for (const routeKey of order) {
      const res = await restSend(routeKey, JSON.stringify(restBases[routeKey]!.body()));
      expect(res.statusCode, `${routeKey}: ${brief(res)}`).toBe(restBases[routeKey]!.ok);
      await refresh();
    }
    for (const method of Object.keys(typedBases)) {
      const res = await typedSend(JSON.stringify(typedBody(method)));
      const reply = res.json() as { response?: unknown, error?: unknown };
      expect({ error: reply.error, hasResponse: reply.response !== undefined && reply.response !== null }, `${method}: ${brief(res)}`)
        .toEqual({ error: undefined, hasResponse: true });
      await refresh();
    }
  });
});
