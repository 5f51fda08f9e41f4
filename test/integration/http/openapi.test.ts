import { Ajv } from 'ajv';
import { Value } from '@sinclair/typebox/value';
import type { TSchema } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IImmutableRegistryPushEvent, TClusterWritableData, TServiceWritableData } from '../../../src/contracts/index.js';
import { ReportDeploymentSnapshotsInput } from '../../../src/contracts/reports.js';
import { errorCatalogue } from '../../../src/errors.js';
import { examples } from '../../../src/http/examples.js';
import { buildTestApp, type TestApp } from '../../support/app.js';

// The served OpenAPI document (/docs/json), read the way a client generator reads it.

interface Parameter { in: string, name: string, required?: boolean, schema?: Record<string, unknown>, example?: unknown }
interface Media { schema?: Record<string, unknown>, example?: unknown, examples?: unknown }
interface Operation {
  summary?: string;
  description?: string;
  security?: Array<Record<string, string[]>>;
  parameters?: Parameter[];
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, { description: string, content?: Record<string, Media> }>;
}
interface Document {
  openapi: string;
  security?: unknown;
  components: { securitySchemes: Record<string, unknown> };
  paths: Record<string, Record<string, Operation>>;
}

const rolloutWrites = [
  'post /v1/services/{serviceId}/image-releases/{releaseId}/promote',
  'post /v1/services/{serviceId}/image-releases/{releaseId}/rollback',
  'post /v1/services/{serviceId}/rollout/abort',
];

/** The 3.0.3 schema back in the JSON Schema form ajv reads: `minimum: n, exclusiveMinimum: true` is `exclusiveMinimum: n`. */
function toJsonSchema (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toJsonSchema);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toJsonSchema(v)]));
  for (const [exclusive, bound] of [['exclusiveMinimum', 'minimum'], ['exclusiveMaximum', 'maximum']] as const) {
    if (out[exclusive] !== true) continue;
    out[exclusive] = out[bound];
    delete out[bound];
  }
  return out;
}

/** Every node of the document with its JSON path. */
function * nodes (value: unknown, path = ''): Generator<[string, Record<string, unknown>]> {
  if (value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) yield * nodes(v, `${path}/${i}`);
    return;
  }
  yield [path, value as Record<string, unknown>];
  for (const [k, v] of Object.entries(value)) yield * nodes(v, `${path}/${k}`);
}

describe('the OpenAPI document a client generator can trust', () => {
  let t: TestApp;
  let doc: Document;
  let operations: Array<[string, Operation]>;

  beforeAll(async () => {
    t = await buildTestApp();
    const res = await t.app.inject({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    doc = res.json() as Document;
    operations = Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]): [string, Operation] => [`${method} ${path}`, op]));
  });
  afterAll(async () => { await t.close(); });

  it('is OpenAPI 3.0.3 and documents every API route', () => {
    expect(doc.openapi).toBe('3.0.3');
    expect(operations.length).toBeGreaterThanOrEqual(23);
    for (const route of [...rolloutWrites, 'get /healthz', 'get /readyz', 'get /metrics', 'post /typedrequest', 'post /v1/deployment-snapshots']) {
      expect(operations.map(([key]) => key), route).toContain(route);
    }
  });

  it('describes every route (summary and description)', () => {
    for (const [key, op] of operations) {
      expect(op.summary, `${key} summary`).toMatch(/\w/);
      expect(op.description, `${key} description`).toMatch(/\w{3}/);
    }
  });

  it('declares the Idempotency-Key header, required, on every rollout write', () => {
    for (const key of rolloutWrites) {
      const op = operations.find(([k]) => k === key)?.[1];
      const header = op?.parameters?.find((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key');
      expect(header, `${key} declares Idempotency-Key`).toMatchObject({ required: true, schema: { type: 'string' } });
      expect(typeof header?.example, key).toBe('string');
      // 400 idempotency-key-missing is among its documented answers.
      expect(op?.responses['400']?.content?.['application/problem+json']?.schema, key).toMatchObject({
        properties: { code: { enum: expect.arrayContaining(['idempotency-key-missing', 'validation-failed']) } },
      });
    }
  });

  it('puts the bearer lock only on routes that need it', () => {
    expect(doc.security).toEqual([{ bearer: [] }]);
    const open = ['get /healthz', 'get /readyz', 'get /metrics', 'post /typedrequest'];
    for (const [key, op] of operations) {
      if (open.includes(key)) expect(op.security, `${key} is open`).toEqual([]);
      else expect(op.security === undefined || op.security.some((s) => 'bearer' in s), `${key} needs a token`).toBe(true);
    }
    const stream = operations.find(([k]) => k === 'get /v1/services/{serviceId}/rollout/events')?.[1];
    expect(stream?.security).toEqual([{ bearer: [] }, { accessToken: [] }]);
    expect(doc.components.securitySchemes['accessToken']).toMatchObject({ type: 'apiKey', in: 'query', name: 'access_token' });
  });

  it('declares every error answer as application/problem+json with the codes of its status', () => {
    for (const [key, op] of operations) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (!/^[45]/.test(status)) continue;
        expect(status, `${key}: an exact status, not a range`).toMatch(/^\d{3}$/);
        expect(Object.keys(response.content ?? {}), `${key} ${status}`).toEqual(['application/problem+json']);
        const codes = (response.content?.['application/problem+json']?.schema?.['properties'] as { code?: { enum?: string[] } }).code?.enum ?? [];
        expect(codes.length, `${key} ${status} names its codes`).toBeGreaterThan(0);
        for (const code of codes) {
          expect(errorCatalogue[code as keyof typeof errorCatalogue]?.status, `${key}: ${code} is answered with ${status}`).toBe(Number(status));
          expect(response.description, `${key} ${status} describes ${code}`).toContain(code);
        }
      }
    }
    const authenticated = operations.filter(([key]) => key.includes(' /v1/'));
    for (const [key, op] of authenticated) expect(Object.keys(op.responses), key).toEqual(expect.arrayContaining(['401', '403', '500', '503']));
    const promote = operations.find(([k]) => k === rolloutWrites[0])?.[1];
    // 202: approval-required (a promotion request instead of a rollout); 423: a closed window or stop-the-line (docs/governance.md).
    expect(Object.keys(promote?.responses ?? {})).toEqual(['200', '202', '400', '401', '403', '404', '409', '413', '415', '422', '423', '500', '503']);
  });

  it('gives every request body a realistic example the route accepts', () => {
    const bodies = operations.filter(([, op]) => op.requestBody);
    expect(bodies.length).toBeGreaterThanOrEqual(9);
    for (const [key, op] of bodies) {
      const media = op.requestBody?.content['application/json'];
      expect(media?.example, `${key} has an example`).toBeDefined();
      // Not the schema's extreme values: what a person would send.
      expect(JSON.stringify(media?.example), key).not.toMatch(/9007199254740991|"string"/);
    }
    const accepted: Array<[string, TSchema, unknown]> = [
      ['service', TServiceWritableData, examples.serviceWritableData],
      ['cluster', TClusterWritableData, examples.clusterWritableData],
      ['push event', IImmutableRegistryPushEvent, examples.pushEvent],
      ['snapshot report', ReportDeploymentSnapshotsInput, examples.snapshotReport],
    ];
    for (const [name, schema, example] of accepted) expect([...Value.Errors(schema, example)].map((e) => `${e.path} ${e.message}`), name).toEqual([]);
  });

  it('gives every success answer a realistic example that its documented schema accepts', () => {
    // The served schema is the route's own (what the answer is serialized with), rewritten to 3.0.3;
    // ajv (fastify's validator) reads it after the one rewrite is undone (toJsonSchema).
    const ajv = new Ajv({ strict: false, allErrors: true });
    let answers = 0;
    for (const [key, op] of operations) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (!/^2/.test(status)) continue;
        for (const [type, media] of Object.entries(response.content ?? {})) {
          answers++;
          expect(media.example, `${key} ${status} ${type} has an example`).toBeDefined();
          expect(JSON.stringify(media.example), `${key} ${status}`).not.toMatch(/9007199254740991|"string"/);
          const validate = ajv.compile(toJsonSchema(media.schema ?? {}) as object);
          validate(media.example);
          expect(validate.errors?.map((e) => `${e.instancePath} ${e.message ?? ''} ${JSON.stringify(e.params)}`) ?? [], `${key} ${status}`).toEqual([]);
        }
      }
    }
    expect(answers).toBeGreaterThanOrEqual(operations.length);
  });

  it('is valid OpenAPI 3.0.3: no JSON-Schema-2019 number form of exclusiveMinimum/Maximum, no 3.1 keywords', () => {
    for (const [path, node] of nodes(doc.paths)) {
      for (const keyword of ['exclusiveMinimum', 'exclusiveMaximum']) {
        if (keyword in node) expect(typeof node[keyword], `${path}/${keyword}`).toBe('boolean');
      }
      for (const keyword of ['const', '$schema', 'examples', 'prefixItems', 'unevaluatedProperties']) {
        if (keyword in node && !path.endsWith('/properties')) expect.fail(`${path} uses ${keyword}`);
      }
      if ('type' in node && !path.endsWith('/properties')) expect(Array.isArray(node['type']) || node['type'] === 'null', `${path}/type`).toBe(false);
    }
    const cpus = (doc.paths['/v1/services']?.['post']?.requestBody?.content['application/json']?.schema as {
      properties: { resources: { properties: { cpus: unknown } } }
    }).properties.resources.properties.cpus;
    expect(cpus).toMatchObject({ type: 'number', minimum: 0, exclusiveMinimum: true, maximum: 1024 });
  });
});
