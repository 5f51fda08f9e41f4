import type { FastifyInstance } from 'fastify';
import { errors, type AppError } from '../errors.js';

/**
 * The JSON body parser of every route, in place of Fastify's: the same JSON, with two refusals
 * that name where in the body they are (a 4xx, never a 500, whatever the input):
 * - nesting deeper than MAX_BODY_DEPTH (found by a scan of the raw text, before anything recurses
 *   over it — schema validators and serializers do, and overflowed the stack at some thousands of
 *   levels);
 * - prototype-poisoning keys (`__proto__`, and `constructor` holding `prototype`), as
 *   secure-json-parse refuses them, but saying which key instead of "not valid JSON".
 * Real bodies nest less than 10 levels.
 */
export const MAX_BODY_DEPTH = 64;

/** At most this many path segments, each at most this long, are named in a refusal. */
const SHOWN_SEGMENTS = 12;
const SEGMENT_LENGTH = 48;

const pointer = (segments: readonly string[]): string =>
  `/body${segments.slice(0, SHOWN_SEGMENTS).map((s) => `/${s.slice(0, SEGMENT_LENGTH)}`).join('')}${segments.length > SHOWN_SEGMENTS ? '/…' : ''}`;

/** Reads a JSON string literal starting at the quote at `start`; answers its (roughly unescaped) text and the index after it. */
function readString (text: string, start: number): { value: string, end: number } {
  let value = '';
  for (let i = start + 1; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') {
      value += text[i + 1] ?? '';
      i++;
    } else if (c === '"') {
      return { value, end: i + 1 };
    } else if (value.length < SEGMENT_LENGTH + 1) {
      value += c;
    }
  }
  return { value, end: text.length };
}

const isJsonSpace = (c: number): boolean => c === 0x20 || c === 0x0A || c === 0x0D || c === 0x09;

/**
 * One tight scan of the raw text (string contents are skipped, nothing is built): whether arrays
 * and objects nest deeper than `limit` (-1), else how many object members the text writes (a
 * string followed by `:`), which JSON.parse folds when a name repeats.
 */
function scanText (text: string, limit: number): number {
  const n = text.length;
  let depth = 0;
  let members = 0;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Skip the string literal: jump (indexOf) to the next quote not escaped, i.e. not after an odd run of backslashes.
      for (;;) {
        const quote = text.indexOf('"', i + 1);
        if (quote < 0) return members;
        let before = quote - 1;
        while (text.charCodeAt(before) === 0x5C) before--;
        i = quote;
        if ((quote - 1 - before) % 2 === 0) break;
      }
      let next = i + 1;
      while (next < n && isJsonSpace(text.charCodeAt(next))) next++;
      if (text.charCodeAt(next) === 0x3A) members++;
    } else if (c === 0x7B || c === 0x5B) {
      if (++depth > limit) return -1;
    } else if (c === 0x7D || c === 0x5D) {
      depth--;
    }
  }
  return members;
}

/** The members of a parsed value's objects, at every depth (the depth is bounded before). */
function membersIn (value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  let count = 0;
  if (Array.isArray(value)) {
    for (const item of value) count += membersIn(item);
    return count;
  }
  for (const key in value) {
    count += 1 + membersIn((value as Record<string, unknown>)[key]);
  }
  return count;
}

/** A container open at some point of the text: its kind, the member or index being read, and the names seen (objects). */
interface Frame { kind: '{' | '[', key: string, index: number, expectKey: boolean, names?: Set<string> }

const pathOf = (stack: readonly Frame[]): string[] => stack.map((f) => (f.kind === '[' ? String(f.index) : f.key));

/**
 * Walks the raw text keeping the path to where it is (no parse, no recursion). `atContainer` is
 * told before each array or object opens, `atMember` at each member name; either may stop the
 * walk by answering a path.
 */
function walkPaths (text: string, visit: {
  readName: (text: string, start: number) => { value: string, end: number },
  atContainer?: (stack: readonly Frame[]) => string[] | undefined,
  atMember?: (top: Frame, name: string, stack: readonly Frame[]) => string[] | undefined,
}): string[] | undefined {
  const stack: Frame[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const top = stack.at(-1);
    if (c === '"') {
      const { value, end } = visit.readName(text, i);
      if (top?.kind === '{' && top.expectKey) {
        const stop = visit.atMember?.(top, value, stack);
        if (stop) return stop;
        top.key = value;
      }
      i = end - 1;
    } else if (c === '{' || c === '[') {
      const stop = visit.atContainer?.(stack);
      if (stop) return stop;
      stack.push({ kind: c, key: '', index: 0, expectKey: c === '{' });
    } else if (c === '}' || c === ']') {
      stack.pop();
    } else if (c === ',' && top) {
      if (top.kind === '[') top.index++;
      else top.expectKey = true;
    } else if (c === ':' && top?.kind === '{') {
      top.expectKey = false;
    }
  }
  return undefined;
}

/** A JSON string literal starting at the quote at `start`, unescaped (the text parsed as JSON already). */
function readFullString (text: string, start: number): { value: string, end: number } {
  let end = start + 1;
  for (;;) {
    const quote = text.indexOf('"', end);
    if (quote < 0) return { value: text.slice(start + 1), end: text.length };
    let before = quote - 1;
    while (text.charCodeAt(before) === 0x5C) before--;
    end = quote + 1;
    if ((quote - 1 - before) % 2 === 0) break;
  }
  return { value: JSON.parse(text.slice(start, end)) as string, end };
}

/** The path to the first member whose name its object already has (a text JSON.parse accepted). */
export function duplicateMemberIn (text: string): string[] | undefined {
  return walkPaths(text, {
    readName: readFullString,
    atMember: (top, name, stack) => {
      top.names ??= new Set();
      if (top.names.has(name)) return [...pathOf(stack.slice(0, -1)), name];
      top.names.add(name);
      return undefined;
    },
  });
}

/** The path to the first array or object nested deeper than `limit`, from the raw text (no parse, no recursion). */
export function tooDeepIn (text: string, limit: number): string[] | undefined {
  if (scanText(text, limit) >= 0) return undefined;
  return walkPaths(text, { readName: readString, atContainer: (stack) => (stack.length >= limit ? pathOf(stack) : undefined) });
}

/**
 * A key the TypedRequest client (@api.global/typedrequest, through smartjson) reads as a stream
 * marker in any answer: an object holding it — a service's environment, say — would reach a
 * TypedRequest caller as a VirtualStream, not as data. Refused on the way in, on every route.
 */
export const STREAM_MARKER_KEY = '_isVirtualStream';

/** The path to the first refused key of a parsed body — prototype poisoning, the stream marker — and which (depth already bounded). */
export function refusedKeyIn (value: unknown, path: string[] = []): string[] | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  for (const [key, child] of Object.entries(value)) {
    if (key === '__proto__' || key === STREAM_MARKER_KEY) return [...path, key];
    if (key === 'constructor' && child !== null && typeof child === 'object' && Object.hasOwn(child, 'prototype')) return [...path, key, 'prototype'];
    const found = refusedKeyIn(child, [...path, key]);
    if (found) return found;
  }
  return undefined;
}

const refusedKeyMessage = (path: readonly string[]): string => {
  if (path.at(-1) === STREAM_MARKER_KEY) return `the key '${STREAM_MARKER_KEY}' is not accepted (the TypedRequest client reads it as a stream marker)`;
  const key = path.at(-1) === 'prototype' ? 'constructor.prototype' : '__proto__';
  return `the key '${key}' is not accepted (prototype poisoning)`;
};

/** Parses a JSON body, or answers the refusal that names the field. */
export function parseJsonBody (text: string): unknown {
  const members = scanText(text, MAX_BODY_DEPTH);
  if (members < 0) {
    const tooDeep = tooDeepIn(text, MAX_BODY_DEPTH) ?? [];
    throw errors.validationFailed([{ field: pointer(tooDeep), message: `nested more than ${MAX_BODY_DEPTH} levels deep` }]);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text.charCodeAt(0) === 0xFEFF ? text.slice(1) : text);
  } catch (err) {
    throw errors.validationFailed([{ field: '/body', message: `is not valid JSON (${(err as Error).message.slice(0, 200)})` }]);
  }
  // A key can only be one of the refused ones if the text spells it, or escapes it with `\u`.
  const mayRefuse = text.includes('__proto__') || text.includes('constructor') || text.includes(STREAM_MARKER_KEY) || text.includes('\\u');
  const refused = mayRefuse ? refusedKeyIn(parsed) : undefined;
  if (refused) throw errors.validationFailed([{ field: pointer(refused), message: refusedKeyMessage(refused) }]);
  // JSON.parse keeps the last of repeated member names: a body that repeats one says two things
  // (a proxy or a log reading the first sees another request), so it is refused.
  if (membersIn(parsed) !== members) {
    const repeated = duplicateMemberIn(text) ?? [];
    throw errors.validationFailed([{ field: pointer(repeated), message: 'is repeated in its object (a member name may appear once)' }]);
  }
  return parsed;
}

/** Installs the parser for `application/json` (and `+json` types) on the app. */
export function registerJsonBody (app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(/^application\/([\w.+-]+\+)?json(\s*;.*)?$/i, { parseAs: 'string' }, (_request, body, done) => {
    if (body === '') {
      done(errors.validationFailed([{ field: '/body', message: 'is empty; send a JSON document' }]), undefined);
      return;
    }
    try {
      done(null, parseJsonBody(body as string));
    } catch (err) {
      done(err as AppError, undefined);
    }
  });
}
