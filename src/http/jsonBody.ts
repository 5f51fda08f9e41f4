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

interface Frame { kind: '{' | '[', key: string, index: number, expectKey: boolean }

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

/** Whether the raw text nests arrays and objects deeper than `limit` (a tight scan: string contents are skipped, nothing is built). */
function nestsDeeperThan (text: string, limit: number): boolean {
  const n = text.length;
  let depth = 0;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Skip the string literal: jump (indexOf) to the next quote not escaped, i.e. not after an odd run of backslashes.
      for (;;) {
        const quote = text.indexOf('"', i + 1);
        if (quote < 0) return false;
        let before = quote - 1;
        while (text.charCodeAt(before) === 0x5C) before--;
        i = quote;
        if ((quote - 1 - before) % 2 === 0) break;
      }
    } else if (c === 0x7B || c === 0x5B) {
      if (++depth > limit) return true;
    } else if (c === 0x7D || c === 0x5D) {
      depth--;
    }
  }
  return false;
}

/** The path to the first array or object nested deeper than `limit`, from the raw text (no parse, no recursion). */
export function tooDeepIn (text: string, limit: number): string[] | undefined {
  if (!nestsDeeperThan(text, limit)) return undefined;
  const stack: Frame[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const top = stack.at(-1);
    if (c === '"') {
      const { value, end } = readString(text, i);
      if (top?.kind === '{' && top.expectKey) top.key = value;
      i = end - 1;
    } else if (c === '{' || c === '[') {
      if (stack.length >= limit) return stack.map((f) => (f.kind === '[' ? String(f.index) : f.key));
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

/** The path to the first prototype-poisoning key of a parsed body (depth already bounded). */
export function poisonedKeyIn (value: unknown, path: string[] = []): string[] | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  for (const [key, child] of Object.entries(value)) {
    if (key === '__proto__') return [...path, key];
    if (key === 'constructor' && child !== null && typeof child === 'object' && Object.hasOwn(child, 'prototype')) return [...path, key, 'prototype'];
    const found = poisonedKeyIn(child, [...path, key]);
    if (found) return found;
  }
  return undefined;
}

/** Parses a JSON body, or answers the refusal that names the field. */
export function parseJsonBody (text: string): unknown {
  const tooDeep = tooDeepIn(text, MAX_BODY_DEPTH);
  if (tooDeep) throw errors.validationFailed([{ field: pointer(tooDeep), message: `nested more than ${MAX_BODY_DEPTH} levels deep` }]);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text.charCodeAt(0) === 0xFEFF ? text.slice(1) : text);
  } catch (err) {
    throw errors.validationFailed([{ field: '/body', message: `is not valid JSON (${(err as Error).message.slice(0, 200)})` }]);
  }
  // A key can only be `__proto__` or `constructor` if the text spells it, or escapes it with `\u`.
  const mayPoison = text.includes('__proto__') || text.includes('constructor') || text.includes('\\u');
  const poisoned = mayPoison ? poisonedKeyIn(parsed) : undefined;
  if (poisoned) {
    const key = poisoned.at(-1) === 'prototype' ? 'constructor.prototype' : '__proto__';
    throw errors.validationFailed([{ field: pointer(poisoned), message: `the key '${key}' is not accepted (prototype poisoning)` }]);
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
