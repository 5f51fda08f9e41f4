/**
 * Property-based abuse of every write route, REST and TypedRequest (docs/operations.md: "Bad input of any
 * kind gets a clear 4xx with the offending field, never a 500, and writes nothing").
 *
 * Bodies are random (`fc.anything`, `fc.json`, bare hostile values, text that is not JSON) or
 * mutations of a VALID body: one to three edits at random paths that replace a value, delete a key
 * or add a key, with wrong types, `$`/`.`-keys, `__proto__`/`constructor`/`prototype` keys (sent as
 * raw JSON text, so they are real own keys), strings up to 200 KB (and a 1.1 MB one: 413), 10 000-item
 * arrays, 1000 levels of nesting, -0, 1.5, 1e308, 1e309, 2^53+1, NaN-ish strings, unicode, lone
 * surrogates and NUL; odd content types; hostile path parameters and Idempotency-Keys.
 *
 * Every response: REST status < 500, a 4xx is problem+json with a known `code` matching its status;
 * TypedRequest is HTTP 200 with either a response or `error.data.code` (never `internal-error`),
 * and never echoes the token. After every request the whole database (every collection, every
 * document, as canonical EJSON) must equal the snapshot taken before the property: NEVER A WRITE.
 *
 * "Never a write" must hold for every request the property sends, so the state is chosen such that
 * the unmutated base bodies are refused for a reason that does not depend on their validity
 * (an existing service name, a missing service, a node of another cluster, an event id recorded with
 * other content, an Idempotency-Key already used for another request), and a request that COULD
 * legitimately write is not sent: `couldWrite` (the route's schema — the very TypeBox schema the
 * server validates with — plus the state rule) over-approximates it and `fc.pre` skips it. So the
 * property asserts "never a write" for all invalid input and for valid input refused by state.
 * The last test sends the same base bodies in a writable configuration and asserts that the
 * snapshot DOES change, so the comparison can fail.
 *
 * HOSTILE_RUNS=<n> changes the runs per property (default 300); HOSTILE_STATS=1 prints, per property,
 * how many requests were sent and skipped and the histogram of status × code.
 */
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { Type, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import type { LightMyRequestResponse } from 'fastify';
import { BSON } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Id, IImmutableRegistryPushEvent, NonNegativeSafeInteger, TClusterWritableData, TServiceWritableData,
  clusterContracts, releaseTypedRequestContracts, typedRequestContracts, type IRegistryTarget,
} from '../../../src/contracts/index.js';
import { pushEventFingerprint, pushEventProblems, registryTargetMatches } from '../../../src/domain/releases.js';
import { errorCatalogue } from '../../../src/errors.js';
import { TypedRequestEnvelope, withoutIdentity } from '../../../src/http/typedRequest/protocol.js';
import { buildTestApp, serviceData, typedRequest, type TestApp } from '../../support/app.js';
import { bearer, createFixtureService, pushEvent, registryHost, type FixtureService } from '../../support/fixtures.js';

/** Runs per property: 19 properties × 300 runs take about 20 s. */
const RUNS = Number(process.env['HOSTILE_RUNS'] ?? 300);
const PROPERTY_TIMEOUT = 180_000;

// ---- raw JSON text ---------------------------------------------------------------------------

/** A piece of JSON text inserted verbatim: -0, 1e309, 2^53+1, 1000 levels of nesting. */
class Raw {
  constructor (readonly text: string) {}
}
const raw = (text: string): Raw => new Raw(text);

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Raw);

/** An object whose keys are all own data properties, `__proto__` included. */
function own (entries: Array<[string, unknown]>): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  for (const [key, value] of entries) Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  return object;
}

/** JSON text of a value; Raw pieces verbatim, -0 as `-0`, ±Infinity as ±1e999 (parsed back as ±Infinity). */
function toJsonText (value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(',')}]`;
  if (isObject(value)) return `{${Object.keys(value).map((key) => `${JSON.stringify(key)}:${toJsonText(value[key])}`).join(',')}}`;
  if (typeof value === 'number') {
    if (Object.is(value, -0)) return '-0';
    if (value === Infinity) return '1e999';
    if (value === -Infinity) return '-1e999';
    if (Number.isNaN(value)) return 'null';
  }
  if (typeof value === 'bigint') return value.toString();
  return JSON.stringify(value) ?? 'null';
}

/** Deep copy that keeps own `__proto__` keys and Raw pieces. */
function copy (value: unknown): unknown {
  if (value instanceof Raw) return value;
  if (Array.isArray(value)) return value.map(copy);
  if (isObject(value)) return own(Object.keys(value).map((key) => [key, copy(value[key])]));
  return value;
}

const parse = (text: string): { ok: true, value: unknown } | { ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
};

/** What Fastify's JSON parser (secure-json-parse, protoAction/constructorAction 'error') refuses. */
function poisoned (value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) {
      stack.push(...node);
    } else if (node !== null && typeof node === 'object') {
      if (Object.hasOwn(node, '__proto__')) return true;
      const ctor = (node as Record<string, unknown>)['constructor'];
      if (Object.hasOwn(node, 'constructor') && ctor !== null && typeof ctor === 'object' && Object.hasOwn(ctor, 'prototype')) return true;
      stack.push(...Object.values(node));
    }
  }
  return false;
}

// ---- hostile values and mutations ------------------------------------------------------------

const protoBomb = (key: '__proto__' | 'constructor' | 'prototype'): Record<string, unknown> =>
  key === 'constructor'
    ? own([['constructor', own([['prototype', own([['polluted', 'yes']])]])]])
    : own([[key, own([['polluted', 'yes']])]]);

const deepArray = (depth: number): Raw => raw('['.repeat(depth) + ']'.repeat(depth));
const deepObject = (depth: number): Raw => raw('{"a":'.repeat(depth) + '{}' + '}'.repeat(depth));

const hostileKey: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      '$gt', '$where', '$set', '$', '$ref', 'a.b', '.', 'a.$b', '$.', '__proto__', 'constructor', 'prototype', '', '\u0000', 'a\u0000b', 'toString',
      'hasOwnProperty', 'valueOf', '_id', 'immutableImageRequired', 'imageDeployment', 'imageRolloutStatus', 'identity', 'polluted', 'LOG_LEVEL',
      'web', 'custom',
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom('K'.repeat(300), 'K'.repeat(50_000)) },
);

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  // wrong types
  fc.constantFrom<unknown>(null, true, false, 0, 1, -1, '', 'x', [], {}, [null], [[]], { a: 1 }, ['x']),
  // numbers: negative, -0, fractions, huge, unsafe, odd spellings
  fc.constantFrom<unknown>(raw('-0'), -0, -1, 1.5, -1.5, 0.1, raw('1e308'), raw('-1e308'), raw('1e309'), raw('1e-400'),
    raw('9007199254740993'), Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, -Number.MAX_SAFE_INTEGER, 2 ** 31, 2 ** 32, 65536,
    raw('1.0'), raw('1E2'), raw('0.1e1'), raw('-0.0')),
  fc.double(),
  fc.integer(),
  // NaN-ish strings
  fc.constantFrom<unknown>('NaN', 'Infinity', '-Infinity', '-0', '1e308', '0x10', ' 1', '1 ', 'null', 'undefined', 'true', '[object Object]'),
  // unicode, NUL, lone surrogates
  fc.constantFrom<unknown>(
    '\u0000', 'a\u0000b', '\ud800', '\udfff', 'x\ud83d', '\u202e', '\ufeff', '\u200b', '😀', 'e\u0301', '\u2028\u2029', 'İ', 'ß', 'Ａ',
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  // operator-shaped values and dotted keys
  fc.constantFrom<unknown>(
    { $ne: null }, { $gt: '' }, { $regex: '.*' }, { $where: 'sleep(100)' }, { $exists: true }, [{ $ne: 1 }], { 'a.b': 1 }, { $set: { x: 1 } },
  ),
  // prototype poisoning, as real own keys
  fc.constantFrom<'__proto__' | 'constructor' | 'prototype'>('__proto__', 'constructor', 'prototype').map(protoBomb),
  // huge: strings up to 200 KB (also multi-byte), 10k-item arrays, 1000 levels of nesting
  fc.integer({ min: 1_000, max: 200_000 }).map((n) => 'x'.repeat(n)),
  // over the 1 MiB body limit: 413
  fc.constant('y'.repeat(1_100_000)),
  fc.tuple(fc.integer({ min: 1_000, max: 50_000 }), fc.constantFrom('é', '😀', '\u0000', '$')).map(([n, c]) => c.repeat(n)),
  fc.constantFrom('names', 'numbers', 'objects')
    .map((kind) => Array.from({ length: 10_000 }, (_, i) => (kind === 'names' ? `n${i}` : kind === 'numbers' ? i : {}))),
  fc.integer({ min: 900, max: 1000 }).map(deepArray),
  fc.integer({ min: 900, max: 1000 }).map(deepObject),
  // plausible values in the wrong place
  fc.constantFrom<unknown>('svc_missing', 'rel_missing', 'n1', 'c1', 'm1', 'latest', `sha256:${'a'.repeat(64)}`, `sha256:${'A'.repeat(64)}`,
    registryHost, 'Registry.Example.Com', 'application/vnd.oci.image.index.v1+json', 'immutable-digest', 'oci'),
  fc.object({ maxDepth: 2 }),
);

type PathKey = string | number;
type Path = PathKey[];

/** Odd values of the same type as the one they replace: they keep many bodies valid, so the odd value travels on to the database. */
const oddString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('$gt', '$where', '$', '$$ROOT', 'a.b', '.', '__proto__', 'constructor', 'prototype', '\u0000', 'a\u0000b', '\ud800', '😀', 'İ', ' ', '',
    '{"$ne":null}', '/.*/', 'x'.repeat(128), 'x'.repeat(129), 'x'.repeat(256), 'x'.repeat(257), `sha256:${'0'.repeat(64)}`),
  fc.string({ unit: 'binary', maxLength: 30 }),
);
const oddNumber: fc.Arbitrary<unknown> = fc.constantFrom(
  raw('-0'), 0, 1, -1, 1.5, Number.MAX_SAFE_INTEGER, raw('9007199254740993'), raw('1e308'), 65535, 65536, 1024, 1025, 4096,
);

interface Mutation { kind: 'replace' | 'same-type' | 'delete' | 'add', pick: number, key: string, value: unknown, oddString: string, oddNumber: unknown }

const mutation: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constantFrom<Mutation['kind']>('replace', 'replace', 'same-type', 'same-type', 'delete', 'add'),
  pick: fc.nat(),
  key: hostileKey,
  value: hostileValue,
  oddString,
  oddNumber,
});

function pathsOf (value: unknown, prefix: Path = [], out: Path[] = []): Path[] {
  out.push(prefix);
  if (Array.isArray(value)) value.forEach((item, i) => pathsOf(item, [...prefix, i], out));
  else if (isObject(value)) for (const key of Object.keys(value)) pathsOf(value[key], [...prefix, key], out);
  return out;
}

const child = (container: unknown, key: PathKey): unknown =>
  Array.isArray(container) ? container[key as number] : isObject(container) ? container[key as string] : undefined;

function setChild (container: unknown, key: PathKey, value: unknown): void {
  if (Array.isArray(container)) container[key as number] = value;
  else if (isObject(container)) Object.defineProperty(container, key as string, { value, enumerable: true, writable: true, configurable: true });
}

/** Applies one edit at the `pick`-th path of the tree (paths are enumerated on the current tree). */
function mutate (root: unknown, m: Mutation): unknown {
  const paths = pathsOf(root);
  const path = paths[m.pick % paths.length] ?? [];
  const current = path.reduce<unknown>(child, root);
  const value = m.kind !== 'same-type' ? copy(m.value) : typeof current === 'string' ? m.oddString : typeof current === 'number' ? m.oddNumber : copy(m.value);
  if (path.length === 0) {
    if (m.kind === 'add' && isObject(root)) {
      setChild(root, m.key, value);
      return root;
    }
    return value;
  }
  const parent = path.slice(0, -1).reduce<unknown>(child, root);
  const last = path[path.length - 1] as PathKey;
  if (m.kind === 'delete') {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else if (isObject(parent)) delete parent[last as string];
  } else if (m.kind === 'add') {
    const target = child(parent, last);
    if (isObject(target)) setChild(target, m.key, value);
    else if (Array.isArray(target)) target.push(value);
    else setChild(parent, last, value);
  } else {
    setChild(parent, last, value);
  }
  return root;
}

/** Text that is not (or not only) one JSON value. */
const notJson = fc.constantFrom('', ' ', '{', '}', '[', '{"a":1,}', "{'a':1}", 'NaN', 'undefined', '\ufeff{}', '{"a":1}{"b":2}',
  '{"a":1} x', '\u0000', '{"a":"\\ud800"}', '{"a":"\\u0000"}', '{"__proto__":{"polluted":1}}', '{"\\u005f_proto__":{"polluted":1}}',
  '{"constructor":{"prototype":{"polluted":1}}}', '[' + '{"a":'.repeat(5) + ']', '"' + 'x'.repeat(1000));

/** A body as JSON text: mostly edits of `base`, sometimes anything at all. */
function bodyText (base: unknown): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 14, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 3 }).map((ms) => toJsonText(ms.reduce(mutate, copy(base)))) },
    { weight: 1, arbitrary: fc.anything().map(toJsonText) },
    { weight: 1, arbitrary: fc.json() },
    { weight: 1, arbitrary: hostileValue.map(toJsonText) },
    { weight: 1, arbitrary: notJson },
  );
}

const contentType = fc.oneof(
  { weight: 20, arbitrary: fc.constant<string | undefined>('application/json') },
  {
    weight: 1,
    arbitrary: fc.constantFrom<string | undefined>('application/json; charset=utf-8', 'application/json; charset=utf-16', 'APPLICATION/JSON',
      'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx', 'application/problem+json', undefined)
  },
);

/**
 * Path parameters: mostly the given id, sometimes a hostile one (URL-encoded by the caller). Over 256
 * characters (maxParamLength) or with a malformed %-escape the router answers before the error
 * handler: see the KNOWN BUG test at the end.
 */
const hostileId = fc.constantFrom(
  'svc_missing', '$gt', '$where', 'a.b', '__proto__', 'constructor', '\u0000', '😀', '..', ' ', 'x'.repeat(129), 'x'.repeat(256), '%', '{"$ne":null}',
);
const idParam = (id: string): fc.Arbitrary<string> => fc.oneof({ weight: 8, arbitrary: fc.constant(id) }, { weight: 1, arbitrary: hostileId });

/** Idempotency keys: mostly the given one, sometimes invalid ones or valid-but-odd ones. */
const keyHeader = (key: string): fc.Arbitrary<string | undefined> => fc.oneof(
  { weight: 6, arbitrary: fc.constant<string | undefined>(key) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<string | undefined>(
      undefined, '', ' ', 'has space', 'é', '\t', 'x'.repeat(256), 'x'.repeat(10_000), '$gt', 'a.b', '__proto__', '{"$ne":null}',
    ),
  },
);
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

// ---- oracles ---------------------------------------------------------------------------------

const compile = <T extends TSchema>(schema: T): TypeCheck<T> => TypeCompiler.Compile(schema);
const checks = {
  serviceData: compile(TServiceWritableData),
  clusterData: compile(TClusterWritableData),
  pushEvent: compile(IImmutableRegistryPushEvent),
  // The REST promote/rollback bodies (src/http/lifecycleRoutes.ts), restated.
  promoteBody: compile(Type.Object({
    expectedRolloutGeneration: NonNegativeSafeInteger,
    expectedCurrentRolloutId: Type.Optional(Id),
    enableImmutableImage: Type.Literal(true),
    reason: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  }, { additionalProperties: false })),
  rollbackBody: compile(Type.Object({
    expectedCurrentRolloutId: Id,
    expectedRolloutGeneration: NonNegativeSafeInteger,
    reason: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  }, { additionalProperties: false })),
  envelope: compile(TypedRequestEnvelope),
  identityJwt: compile(Type.Object({ identity: Type.Object({ jwt: Type.String() }) })),
};
/** method → payload check (a Map: method names such as `hasOwnProperty` must not hit Object.prototype). */
const payloadChecks = new Map<string, TypeCheck<TSchema>>(
  Object.entries({ ...typedRequestContracts, ...releaseTypedRequestContracts, ...clusterContracts })
    .map(([method, c]) => [method, compile(c.payload as TSchema)])
);

/**
 * The body as the server's JSON parser would see it, or undefined when it certainly refuses it.
 * Over-approximates (any content type mentioning json counts), as `couldWrite` must.
 */
function accepted (text: string, type: string | undefined): { value: unknown } | undefined {
  if (type === undefined || !/json/i.test(type)) return undefined;
  const parsed = parse(text);
  if (!parsed.ok || poisoned(parsed.value)) return undefined;
  return { value: parsed.value };
}

// ---- the database snapshot -------------------------------------------------------------------

let t: TestApp;
let admin: string;
const errorLog: string[] = [];

/** Every document of every collection, canonical EJSON, collections and documents in a stable order. */
async function snapshot (): Promise<string> {
  const db = t.db;
  const names = (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).filter((n) => !n.startsWith('system.')).sort();
  const contents = await Promise.all(names.map(async (name) => [name, await db.collection(name).find({}).sort({ _id: 1 }).toArray()] as const));
  return BSON.EJSON.stringify(Object.fromEntries(contents), { relaxed: false });
}

const objectPrototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort();
const arrayPrototypeKeys = Object.getOwnPropertyNames(Array.prototype).sort();
function assertNoPollution (): void {
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(objectPrototypeKeys);
  expect(Object.getOwnPropertyNames(Array.prototype).sort()).toEqual(arrayPrototypeKeys);
  expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
}

// ---- sending and judging ---------------------------------------------------------------------

interface Sent { method: 'POST' | 'PUT', url: string, headers: Record<string, string>, text: string }

const summary = (sent: Sent, res?: LightMyRequestResponse): string => [
  `${sent.method} ${sent.url.slice(0, 300)}`,
  `headers: ${JSON.stringify(sent.headers, (k, v: unknown) => (k === 'authorization' ? '[token]' : v)).slice(0, 400)}`,
  `body (${sent.text.length} chars): ${sent.text.slice(0, 400)}`,
  ...(res ? [`→ ${res.statusCode} ${String(res.headers['content-type'])} ${res.body.slice(0, 1000)}`] : []),
  ...(errorLog.length > 0 ? ['server error log:', ...errorLog.slice(-5).map((line) => line.slice(0, 3000))] : []),
].join('\n');

async function send (sent: Sent): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: sent.method, url: sent.url, headers: sent.headers, payload: sent.text });
}

/** Status < 500; a 4xx is problem+json whose `code` is a known one with that status. */
function judgeRest (sent: Sent, res: LightMyRequestResponse): void {
  const context = summary(sent, res);
  expect(res.statusCode, context).toBeLessThan(500);
  if (res.statusCode >= 400) {
    expect(String(res.headers['content-type']), context).toMatch(/^application\/problem\+json/);
    const problem = res.json() as { code?: unknown, status?: unknown };
    expect(typeof problem.code, context).toBe('string');
    expect(errorCatalogue[problem.code as keyof typeof errorCatalogue].status, context).toBe(res.statusCode);
    expect(problem.status, context).toBe(res.statusCode);
    assertProblems(problem, context);
  }
}

/** `validation-failed` names every offending field: `problems: [{ field: '/body…' | '/params…' | '/headers…', message }]`. */
function assertProblems (data: { code?: unknown, problems?: unknown }, context: string): void {
  if (data.code !== 'validation-failed') return;
  expect(Array.isArray(data.problems), `${context}\nvalidation-failed without problems`).toBe(true);
  const problems = data.problems as Array<{ field?: unknown, message?: unknown }>;
  expect(problems.length, context).toBeGreaterThan(0);
  for (const p of problems) {
    expect(String(p.field), context).toMatch(/^\/(body|params|headers|querystring|request)(\/|$)/);
    expect(typeof p.message, context).toBe('string');
  }
}

/** HTTP 200; an error envelope with a known code that is not internal-error, or a response; no token echoed. */
function judgeTyped (sent: Sent, res: LightMyRequestResponse): void {
  const context = summary(sent, res);
  expect(res.statusCode, context).toBe(200);
  const reply = res.json() as { response?: unknown, error?: { text?: unknown, data?: { code?: unknown, problems?: unknown } }, retry?: unknown };
  expect(reply.retry, context).toBeUndefined();
  if (reply.error !== undefined) {
    const code = reply.error.data?.code;
    expect(typeof code, context).toBe('string');
    expect(code, context).not.toBe('internal-error');
    expect(Object.keys(errorCatalogue), context).toContain(code);
    expect(typeof reply.error.text, context).toBe('string');
    assertProblems(reply.error.data ?? {}, context);
  } else {
    expect(reply.response, context).toBeTypeOf('object');
    expect(reply.response, context).not.toBeNull();
  }
  expect(res.body.includes(admin), `${context}\nthe reply echoes the token`).toBe(false);
}

/** `code` of a problem document, `error.data.code` of a TypedRequest error, or `ok`. */
function outcomeCode (res: LightMyRequestResponse): string {
  try {
    const body = res.json() as { code?: unknown, error?: { data?: { code?: unknown } } };
    return String(body.code ?? body.error?.data?.code ?? 'ok');
  } catch {
    return 'not-json';
  }
}

/** The property: skip what could legitimately write, send, judge, and compare the database. */
async function hostileProperty<T> (
  arbitrary: fc.Arbitrary<T>,
  build: (input: T) => Sent,
  couldWrite: (sent: Sent) => boolean,
  judge: (sent: Sent, res: LightMyRequestResponse) => void,
): Promise<void> {
  const before = await snapshot();
  let sentCount = 0;
  let skipped = 0;
  const outcomes = new Map<string, number>();
  await fc.assert(fc.asyncProperty(arbitrary, async (input) => {
    const sent = build(input);
    const could = couldWrite(sent);
    if (could) skipped++;
    fc.pre(!could);
    sentCount++;
    errorLog.length = 0;
    const res = await send(sent);
    judge(sent, res);
    const outcome = `${res.statusCode} ${outcomeCode(res)}`;
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    const after = await snapshot();
    if (after !== before) expect(after, `a refused request wrote to the database:\n${summary(sent, res)}`).toBe(before);
    assertNoPollution();
  }), { numRuns: RUNS });
  expect(sentCount).toBeGreaterThanOrEqual(RUNS);
  if (process.env['HOSTILE_STATS']) {
    console.log(`sent ${sentCount}, skipped ${skipped} (could write):`, [...outcomes].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k}×${n}`).join(', '));
  }
  const health = await t.app.inject({ method: 'GET', url: '/healthz' });
  expect(health.statusCode).toBe(200);
  expect(await snapshot()).toBe(before);
}

// ---- the state the properties run against ----------------------------------------------------

const KEY = 'hostile-fixed-key';
const identity = (jwt: string) => ({ name: 'ui-user', userId: 'user-1', expiresAt: 4_102_444_800_000, jwt });

interface State {
  svc: FixtureService;
  other: FixtureService;
  name: string;
  writable: Record<string, unknown>;
  releaseA: string;
  releaseB: string;
  rolloutA: string;
  eventA: Record<string, unknown>;
  /** id → registry target of every service. */
  services: Map<string, IRegistryTarget | undefined>;
  names: Set<string>;
  /** node → cluster, cluster → { name, nodes } */
  nodeOwners: Map<string, string>;
  clusters: Map<string, { name?: string, nodes: string[] }>;
  /** eventId → fingerprint */
  events: Map<string, string>;
}
let s: State;
/** The TypedRequest methods the dispatcher serves (from its OpenAPI description). */
let advertised: string[] = [];

/** A rich valid service body (every optional member present) under an existing name. */
const serviceBase = (): Record<string, unknown> => serviceData({
  name: s.name,
  environment: { LOG_LEVEL: 'info', _X: '' },
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
  placement: { clusterIds: ['c1'], replicasPerNode: 2 },
});

const pushBases = (): Array<Record<string, unknown>> => [
  // A recorded event id with other content: push-event-conflict.
  { ...s.eventA, tag: 'other', actorUserId: 'ci' },
  // No such service: service-not-found.
  pushEvent({ id: 'svc_missing', repository: s.svc.repository }, { tag: 'v9' }),
  // A service whose registry target is another repository: registry-target-mismatch.
  pushEvent({ id: s.other.id, repository: s.svc.repository }, { tag: 'v9' }),
];

// ---- could a request legitimately write? (over-approximations) -------------------------------

function couldCreateService (data: unknown): boolean {
  return checks.serviceData.Check(data) && !s.names.has((data as { name: string }).name);
}
function couldUpdateService (serviceId: string, data: unknown): boolean {
  return checks.serviceData.Check(data) && s.services.has(serviceId);
}
function couldRegisterCluster (clusterId: string, data: unknown): boolean {
  if (!checks.clusterData.Check(data)) return false;
  const { name, nodeNames } = data as { name?: string, nodeNames: string[] };
  const nodes = [...new Set(nodeNames)].sort();
  if (nodes.some((node) => { const owner = s.nodeOwners.get(node); return owner !== undefined && owner !== clusterId; })) return false;
  const current = s.clusters.get(clusterId);
  const inEffect = current !== undefined && current.name === name && current.nodes.length === nodes.length && current.nodes.every((n, i) => n === nodes[i]);
  return !inEffect;
}
function couldRecordPushEvent (event: unknown): boolean {
  if (!checks.pushEvent.Check(event)) return false;
  if (pushEventProblems(event, Date.now()).length > 0) return false;
  const target = s.services.get(event.serviceId);
  if (!target || !registryTargetMatches(target, event)) return false;
  const recorded = s.events.get(event.eventId);
  // Same event id, other content: push-event-conflict. Same content: a replay, which may complete a write.
  return recorded === undefined || recorded === pushEventFingerprint(event);
}
/** With the fixed, already used key on the fixed service, any promote/rollback is a replay or key-reused. */
const couldRollout = (serviceId: unknown, key: unknown): boolean => !(serviceId === s.svc.id && key === KEY);

function couldWriteTyped (sent: Sent): boolean {
  const body = accepted(sent.text, sent.headers['content-type']);
  if (!body || !checks.envelope.Check(body.value)) return false;
  const envelope = body.value as { method: string, request: unknown };
  if (!checks.identityJwt.Check(envelope.request) || (envelope.request as { identity: { jwt: string } }).identity.jwt !== admin) return false;
  const payload = withoutIdentity(envelope.request);
  const check = payloadChecks.get(envelope.method);
  // Not served: method-not-found. Served but unknown to this file: assume it may write.
  if (!check) return advertised.includes(envelope.method);
  if (!check.Check(payload)) return false;
  const p = payload as Record<string, unknown>;
  switch (envelope.method) {
    case 'createService': return couldCreateService(p['serviceData']);
    case 'updateService': return couldUpdateService(p['serviceId'] as string, p['serviceData']);
    case 'registerCluster': {
      const { clusterId, ...data } = p;
      return couldRegisterCluster(clusterId as string, data);
    }
    case 'reportImmutableRegistryPushEvent': return couldRecordPushEvent(p['event']);
    case 'promoteServiceImageRelease':
    case 'rollbackServiceImageRelease': return couldRollout(p['serviceId'], p['idempotencyKey']);
    case 'getServiceById': case 'getServiceImageReleases': case 'getServiceImageReleasesPage': case 'getServiceImageTagHistory':
    case 'getCluster': case 'listClusters': return false;
    default: return true; // a method this file does not know: assume it may write
  }
}

// ---- the tests -------------------------------------------------------------------------------

describe('hostile bodies: never a 500, never a write', () => {
  beforeAll(async () => {
    const sink = new Writable({
      write (chunk: Buffer, _encoding, done) {
        errorLog.push(chunk.toString('utf8'));
        if (errorLog.length > 20) errorLog.shift();
        done();
      },
    });
    t = await buildTestApp({}, { logger: { level: 'error', stream: sink } });
    admin = await t.token('admin');
    const ok = async (res: Promise<LightMyRequestResponse>, status = 200) => {
      const r = await res;
      expect(r.statusCode, r.body).toBe(status);
      return r.json();
    };
    await ok(t.app.inject({ method: 'PUT', url: '/v1/clusters/c1', headers: bearer(admin), payload: { name: 'cluster one', nodeNames: ['n2', 'n1'] } }));
    await ok(t.app.inject({ method: 'PUT', url: '/v1/clusters/c2', headers: bearer(admin), payload: { nodeNames: ['m1'] } }));
    const svc = await createFixtureService(t.app, admin, { clusterIds: ['c1'] });
    const other = await createFixtureService(t.app, admin, { clusterIds: ['c2'] });
    const view = (await ok(t.app.inject({ method: 'GET', url: `/v1/services/${svc.id}`, headers: bearer(admin) }))).service;
    const otherView = (await ok(t.app.inject({ method: 'GET', url: `/v1/services/${other.id}`, headers: bearer(admin) }))).service;
    const eventA = pushEvent(svc, { tag: 'v1', eventId: 'evt-a' });
    const eventB = pushEvent(svc, { tag: 'v2', eventId: 'evt-b' });
    await ok(t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(admin), payload: eventA }), 201);
    await ok(t.app.inject({ method: 'POST', url: '/v1/registry/push-events', headers: bearer(admin), payload: eventB }), 201);
    const releaseA = eventA['releaseId'] as string;
    const releaseB = eventB['releaseId'] as string;
    const promoted = await ok(t.app.inject({
      method: 'POST',
      url: `/v1/services/${svc.id}/image-releases/${releaseA}/promote`,
      headers: { ...bearer(admin), 'idempotency-key': 'setup-1' },
      payload: { expectedRolloutGeneration: 0, enableImmutableImage: true },
    }));
    // The fixed key: a stale promotion of B, whose deterministic error is stored.
    const seeded = await t.app.inject({
      method: 'POST',
      url: `/v1/services/${svc.id}/image-releases/${releaseB}/promote`,
      headers: { ...bearer(admin), 'idempotency-key': KEY },
      payload: { expectedRolloutGeneration: 0, enableImmutableImage: true },
    });
    expect(seeded.json().code).toBe('rollout-generation-conflict');
    const docs = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json() as { paths: Record<string, { post?: { description?: string } }> };
    advertised = (docs.paths['/typedrequest']?.post?.description ?? '').replace(/^Methods: /, '').split(', ').filter(Boolean);
    const { immutableImageRequired: _i, imageDeployment: _d, imageRolloutStatus: _r, ...writable } = view.data;
    s = {
      svc,
      other,
      name: view.data.name,
      writable,
      releaseA,
      releaseB,
      rolloutA: promoted.service.data.imageDeployment.rolloutId,
      eventA,
      services: new Map([[svc.id, view.data.registryTarget], [other.id, otherView.data.registryTarget]]),
      names: new Set([view.data.name, otherView.data.name]),
      nodeOwners: new Map([['n1', 'c1'], ['n2', 'c1'], ['m1', 'c2']]),
      clusters: new Map([['c1', { name: 'cluster one', nodes: ['n1', 'n2'] }], ['c2', { nodes: ['m1'] }]]),
      events: new Map([
        [eventA['eventId'] as string, pushEventFingerprint(eventA as never)],
        [eventB['eventId'] as string, pushEventFingerprint(eventB as never)],
      ]),
    };
  });
  afterAll(async () => {
    assertNoPollution();
    await t?.close();
  });

  it('the unmutated base bodies are refused for the intended reason, without a write', async () => {
    const before = await snapshot();
    const json = { ...bearer(admin), 'content-type': 'application/json' };
    /** A promotion or rollback with the already used Idempotency-Key. */
    const keyed = (action: 'promote' | 'rollback', releaseId: string, body: Record<string, unknown>): Sent => ({
      method: 'POST',
      url: `/v1/services/${s.svc.id}/image-releases/${releaseId}/${action}`,
      headers: { ...json, 'idempotency-key': KEY },
      text: JSON.stringify(body),
    });
    const expectations: Array<[Sent, number, string | undefined]> = [
      [{ method: 'POST', url: '/v1/services', headers: json, text: JSON.stringify(serviceBase()) }, 409, 'service-already-exists'],
      [{ method: 'PUT', url: '/v1/services/svc_missing', headers: json, text: JSON.stringify(serviceBase()) }, 404, 'service-not-found'],
      [{ method: 'PUT', url: '/v1/clusters/c1', headers: json, text: JSON.stringify({ name: 'cluster one', nodeNames: ['n1', 'n2'] }) }, 200, undefined],
      [{ method: 'PUT', url: '/v1/clusters/c-new', headers: json, text: JSON.stringify({ name: 'new', nodeNames: ['n1', 'x1'] }) }, 409, 'node-name-taken'],
      ...pushBases().map((event, i): [Sent, number, string] => [
        { method: 'POST', url: '/v1/registry/push-events', headers: json, text: JSON.stringify(event) },
        [409, 404, 422][i] as number,
        ['push-event-conflict', 'service-not-found', 'registry-target-mismatch'][i] as string,
      ]),
      [keyed('promote', s.releaseB, { expectedRolloutGeneration: 0, enableImmutableImage: true }), 409, 'rollout-generation-conflict'],
      [keyed('promote', s.releaseA, { expectedRolloutGeneration: 1, enableImmutableImage: true }), 422, 'idempotency-key-reused'],
      [keyed('rollback', s.releaseA, { expectedRolloutGeneration: 1, expectedCurrentRolloutId: s.rolloutA }), 422, 'idempotency-key-reused'],
    ];
    for (const [sent, status, code] of expectations) {
      const res = await send(sent);
      expect(res.statusCode, summary(sent, res)).toBe(status);
      if (code) expect(res.json().code, summary(sent, res)).toBe(code);
      expect(await snapshot(), summary(sent, res)).toBe(before);
    }
  });

  // ---- REST ----

  it(`POST /v1/services (${RUNS} runs)`, async () => {
    await hostileProperty(
      fc.tuple(bodyText(serviceBase()), contentType),
      ([text, type]): Sent => ({ method: 'POST', url: '/v1/services', headers: { ...bearer(admin), ...(type ? { 'content-type': type } : {}) }, text }),
      (sent) => { const b = accepted(sent.text, sent.headers['content-type']); return b !== undefined && couldCreateService(b.value); },
      judgeRest,
    );
  }, PROPERTY_TIMEOUT);

  it(`PUT /v1/services/:serviceId (${RUNS} runs; an existing service gets only bodies its schema refuses, a missing one anything)`, async () => {
    await hostileProperty(
      fc.tuple(bodyText(serviceBase()), contentType, fc.constantFrom('existing', 'missing'), hostileId),
      ([text, type, which, hostile]): Sent => ({
        method: 'PUT',
        url: `/v1/services/${encodeURIComponent(which === 'existing' ? s.svc.id : hostile)}`,
        headers: { ...bearer(admin), ...(type ? { 'content-type': type } : {}) },
        text,
      }),
      (sent) => {
        const b = accepted(sent.text, sent.headers['content-type']);
        return b !== undefined && couldUpdateService(decodeURIComponent(sent.url.slice('/v1/services/'.length)), b.value);
      },
      judgeRest,
    );
  }, PROPERTY_TIMEOUT);

  it(`PUT /v1/clusters/:clusterId (${RUNS} runs)`, async () => {
    const bases = [
      { clusterId: 'c1', body: { name: 'cluster one', nodeNames: ['n1', 'n2'] } },
      { clusterId: 'c-new', body: { name: 'new', nodeNames: ['n1', 'x1'] } },
    ];
    await hostileProperty(
      fc.constantFrom(...bases).chain((base) => fc.tuple(fc.constant(base.clusterId), bodyText(base.body), contentType, idParam(base.clusterId))),
      ([, text, type, id]): Sent => ({
        method: 'PUT',
        url: `/v1/clusters/${encodeURIComponent(id)}`,
        headers: { ...bearer(admin), ...(type ? { 'content-type': type } : {}) },
        text,
      }),
      (sent) => {
        const b = accepted(sent.text, sent.headers['content-type']);
        return b !== undefined && couldRegisterCluster(decodeURIComponent(sent.url.slice('/v1/clusters/'.length)), b.value);
      },
      judgeRest,
    );
  }, PROPERTY_TIMEOUT);

  it(`POST /v1/registry/push-events (${RUNS} runs)`, async () => {
    await hostileProperty(
      fc.constantFrom(...pushBases()).chain((base) => fc.tuple(bodyText(base), contentType)),
      ([text, type]): Sent => ({
        method: 'POST',
        url: '/v1/registry/push-events',
        headers: { ...bearer(admin), ...(type ? { 'content-type': type } : {}) },
        text,
      }),
      (sent) => { const b = accepted(sent.text, sent.headers['content-type']); return b !== undefined && couldRecordPushEvent(b.value); },
      judgeRest,
    );
  }, PROPERTY_TIMEOUT);

  for (const action of ['promote', 'rollback'] as const) {
    it(`POST /v1/services/:serviceId/image-releases/:releaseId/${action} ` +
      `(${RUNS} runs; Idempotency-Key valid and already used, sometimes hostile)`, async () => {
      const base = action === 'promote'
        ? { expectedRolloutGeneration: 0, expectedCurrentRolloutId: s.rolloutA, enableImmutableImage: true, reason: 'hostile' }
        : { expectedRolloutGeneration: 1, expectedCurrentRolloutId: s.rolloutA, reason: 'hostile' };
      const bodyCheck = action === 'promote' ? checks.promoteBody : checks.rollbackBody;
      await hostileProperty(
        fc.tuple(bodyText(base), contentType, idParam(s.svc.id), idParam(action === 'promote' ? s.releaseB : s.releaseA), keyHeader(KEY)),
        ([text, type, serviceId, releaseId, key]): Sent => ({
          method: 'POST',
          url: `/v1/services/${encodeURIComponent(serviceId)}/image-releases/${encodeURIComponent(releaseId)}/${action}`,
          headers: { ...bearer(admin), ...(type ? { 'content-type': type } : {}), ...(key === undefined ? {} : { 'idempotency-key': key }) },
          text,
        }),
        (sent) => {
          const key = sent.headers['idempotency-key'];
          if (key === undefined || !IDEMPOTENCY_KEY.test(key)) return false;
          const b = accepted(sent.text, sent.headers['content-type']);
          const serviceId = decodeURIComponent(sent.url.split('/')[3] ?? '');
          return b !== undefined && bodyCheck.Check(b.value) && couldRollout(serviceId, key);
        },
        judgeRest,
      );
    }, PROPERTY_TIMEOUT);
  }

  // ---- TypedRequest ----

  const typedBases = (): Record<string, Array<Record<string, unknown>>> => ({
    createService: [{ serviceData: serviceBase() }],
    updateService: [{ serviceId: 'svc_missing', serviceData: serviceBase() }, { serviceId: s.svc.id, serviceData: { ...s.writable, scaleFactor: 'x' } }],
    registerCluster: [{ clusterId: 'c1', name: 'cluster one', nodeNames: ['n1', 'n2'] }, { clusterId: 'c-new', nodeNames: ['n1', 'x1'] }],
    reportImmutableRegistryPushEvent: pushBases().map((event) => ({ event })),
    promoteServiceImageRelease: [{ serviceId: s.svc.id, releaseId: s.releaseB, idempotencyKey: KEY, expectedRolloutGeneration: 0, enableImmutableImage: true }],
    rollbackServiceImageRelease: [{
      serviceId: s.svc.id,
      releaseId: s.releaseA,
      idempotencyKey: KEY,
      expectedCurrentRolloutId: s.rolloutA,
      expectedRolloutGeneration: 1,
    }],
    getServiceById: [{ serviceId: s.svc.id }],
    getServiceImageReleases: [{ serviceId: s.svc.id }],
    getServiceImageReleasesPage: [{ serviceId: s.svc.id, limit: 10 }],
    getServiceImageTagHistory: [{ serviceId: s.svc.id, tag: 'v1', limit: 5 }],
    getCluster: [{ clusterId: 'c1' }],
    listClusters: [{ limit: 10, after: 'a' }],
  });
  const typedMethods = ['createService', 'updateService', 'registerCluster', 'reportImmutableRegistryPushEvent', 'promoteServiceImageRelease',
    'rollbackServiceImageRelease', 'getServiceById', 'getServiceImageReleases', 'getServiceImageReleasesPage', 'getServiceImageTagHistory',
    'getCluster', 'listClusters'] as const;

  const typedSent = (text: string, type: string | undefined): Sent =>
    ({ method: 'POST', url: '/typedrequest', headers: type ? { 'content-type': type } : {}, text });

  for (const method of typedMethods) {
    it(`POST /typedrequest ${method} (${RUNS} runs)`, async () => {
      const envelopes = (typedBases()[method] ?? []).map((payload) => typedRequest(method, { identity: identity(admin), ...payload }, 'corr-1'));
      await hostileProperty(
        fc.constantFrom(...envelopes).chain((envelope) => fc.tuple(bodyText(envelope), contentType)),
        ([text, type]) => typedSent(text, type),
        couldWriteTyped,
        judgeTyped,
      );
    }, PROPERTY_TIMEOUT);
  }

  it(`POST /typedrequest: any envelope, any method the server advertises, any payload (${RUNS} runs)`, async () => {
    // Every method the dispatcher serves has its own property above, or at least this one.
    expect(advertised).toEqual(expect.arrayContaining([...typedMethods]));
    const methodName = fc.oneof(
      fc.constantFrom(...advertised, 'reportDeploymentSnapshots', 'noSuchMethod', 'constructor', '__proto__', 'toString', 'hasOwnProperty'),
      fc.string({ maxLength: 200 }),
    );
    const request = fc.oneof(
      fc.anything(),
      fc.dictionary(fc.string({ maxLength: 20 }), fc.anything()).map((payload) => ({ ...payload, identity: identity(admin) })),
      hostileValue.map((value) => ({ identity: identity(admin), serviceId: value, clusterId: value, event: value, serviceData: value })),
    );
    const envelope = fc.record(
      {
        method: methodName,
        request,
        response: fc.constantFrom(null, undefined, {}),
        correlation: fc.option(fc.record({ id: fc.string({ maxLength: 300 }), phase: fc.constantFrom('request', 'response', 'x') }), { nil: undefined }),
      },
      { requiredKeys: ['method', 'request'] },
    );
    await hostileProperty(
      fc.tuple(
        fc.oneof(
          { weight: 4, arbitrary: envelope.map(toJsonText) },
          { weight: 1, arbitrary: fc.anything().map(toJsonText) },
          { weight: 1, arbitrary: notJson },
        ),
        contentType,
      ),
      ([text, type]) => typedSent(text, type),
      couldWriteTyped,
      judgeTyped,
    );
  }, PROPERTY_TIMEOUT);

  // Fastify's router answers these itself unless `frameworkErrors` is set (src/app.ts does).
  it('an over-long path parameter or a malformed %-escape is problem+json with a code', async () => {
    const urls = [
      `/v1/services/${'x'.repeat(257)}`, '/v1/services/%', '/v1/clusters/%E0%A4%A',
      `/v1/services/${s.svc.id}/image-releases/${'r'.repeat(300)}/promote`,
    ];
    for (const url of urls) {
      const sent: Sent = {
        method: url.endsWith('promote') ? 'POST' : 'PUT',
        url,
        headers: { ...bearer(admin), 'content-type': 'application/json', 'idempotency-key': 'k' },
        text: '{}',
      };
      const res = await send(sent);
      judgeRest(sent, res);
      expect(res.headers['x-request-id'], summary(sent, res)).toBeDefined();
    }
  });

  it('afterwards the process is healthy and serves normal requests', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    const read = await t.app.inject({ method: 'GET', url: `/v1/services/${s.svc.id}`, headers: bearer(admin) });
    expect(read.statusCode).toBe(200);
    expect(read.json().service.data.imageDeployment.rolloutId).toBe(s.rolloutA);
    assertNoPollution();
  });

  it('odd but legal Idempotency-Keys ($-operators, dots, __proto__, JSON) are plain keys: one record each, replayed, reuse detected', async () => {
    const oddKeys = ['$gt', '$where', 'a.b', '__proto__', 'constructor', '{"$ne":null}', '*', '%00', 'x'.repeat(255)];
    const json = { ...bearer(admin), 'content-type': 'application/json' };
    const call = (key: string, generation: number): Sent => ({
      method: 'POST',
      url: `/v1/services/${s.other.id}/image-releases/rel_missing/promote`,
      headers: { ...json, 'idempotency-key': key },
      text: JSON.stringify({ expectedRolloutGeneration: generation, enableImmutableImage: true }),
    });
    const records = () => t.db.collection('idempotency').countDocuments({ serviceId: s.other.id });
    const before = await records();
    for (const key of oddKeys) {
      const first = await send(call(key, 7));
      judgeRest(call(key, 7), first);
      expect(first.json().code, summary(call(key, 7), first)).toBe('rollout-generation-conflict');
      const replay = await send(call(key, 7));
      expect(replay.headers['idempotent-replayed'], summary(call(key, 7), replay)).toBe('true');
      expect(replay.json().code).toBe('rollout-generation-conflict');
      const reused = await send(call(key, 8));
      expect(reused.json().code, summary(call(key, 8), reused)).toBe('idempotency-key-reused');
    }
    expect(await records()).toBe(before + oddKeys.length);
    assertNoPollution();
  });

  it('the same base bodies in a writable configuration DO write (the snapshot comparison can fail)', async () => {
    const json = { ...bearer(admin), 'content-type': 'application/json' };
    const writes = async (sent: Sent, status: number): Promise<LightMyRequestResponse> => {
      const before = await snapshot();
      const res = await send(sent);
      expect(res.statusCode, summary(sent, res)).toBe(status);
      expect(await snapshot(), summary(sent, res)).not.toBe(before);
      return res;
    };
    const typed = (method: string, payload: Record<string, unknown>): Sent =>
      typedSent(JSON.stringify(typedRequest(method, { identity: identity(admin), ...payload })), 'application/json');

    await writes({ method: 'POST', url: '/v1/services', headers: json, text: JSON.stringify({ ...serviceBase(), name: 'fresh-rest' }) }, 201);
    await writes(typed('createService', { serviceData: { ...serviceBase(), name: 'fresh-typed' } }), 200);
    await writes({ method: 'PUT', url: `/v1/services/${s.svc.id}`, headers: json, text: JSON.stringify(serviceBase()) }, 200);
    await writes(typed('updateService', { serviceId: s.svc.id, serviceData: { ...serviceBase(), description: 'typed' } }), 200);
    await writes({ method: 'PUT', url: '/v1/clusters/c1', headers: json, text: JSON.stringify({ name: 'cluster one', nodeNames: ['n1', 'n2', 'n3'] }) }, 200);
    await writes(typed('registerCluster', { clusterId: 'c-new', nodeNames: ['x1'] }), 200);
    const [conflicting] = pushBases();
    await writes({ method: 'POST', url: '/v1/registry/push-events', headers: json, text: JSON.stringify({ ...conflicting, eventId: 'evt-fresh-rest' }) }, 201);
    await writes(typed('reportImmutableRegistryPushEvent', { event: { ...conflicting, eventId: 'evt-fresh-typed' } }), 200);
    const promoted = await writes({
      method: 'POST',
      url: `/v1/services/${s.svc.id}/image-releases/${s.releaseB}/promote`,
      headers: { ...json, 'idempotency-key': 'fresh-1' },
      text: JSON.stringify({ expectedRolloutGeneration: 1, expectedCurrentRolloutId: s.rolloutA, enableImmutableImage: true, reason: 'hostile' }),
    }, 200);
    const rolloutB = promoted.json().service.data.imageDeployment.rolloutId as string;
    await writes({
      method: 'POST',
      url: `/v1/services/${s.svc.id}/image-releases/${s.releaseA}/rollback`,
      headers: { ...json, 'idempotency-key': 'fresh-2' },
      text: JSON.stringify({ expectedRolloutGeneration: 2, expectedCurrentRolloutId: rolloutB, reason: 'hostile' }),
    }, 200);
    const rolledBack = (await t.app.inject({ method: 'GET', url: `/v1/services/${s.svc.id}`, headers: bearer(admin) })).json().service.data.imageDeployment;
    const promoteB = { serviceId: s.svc.id, releaseId: s.releaseB, idempotencyKey: 'fresh-3', expectedRolloutGeneration: 3, enableImmutableImage: true };
    await writes(typed('promoteServiceImageRelease', promoteB), 200);
    const current = (await t.app.inject({ method: 'GET', url: `/v1/services/${s.svc.id}`, headers: bearer(admin) })).json().service.data.imageDeployment;
    expect(current.rolloutGeneration).toBe(4);
    const rollBackToA = {
      serviceId: s.svc.id, releaseId: s.releaseA, idempotencyKey: 'fresh-4', expectedCurrentRolloutId: current.rolloutId, expectedRolloutGeneration: 4,
    };
    await writes(typed('rollbackServiceImageRelease', rollBackToA), 200);
    expect(rolledBack.mode).toBe('rollback');
  });
});
