import type { TSchema } from '@sinclair/typebox';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import { excerpt, type Problem } from '../errors.js';

/** At most this many problems are worked out (the refusal lists at most 20). */
const MAX_PROBLEMS = 20;

/** The values a union accepts, when every member is a literal (TypeBox writes literals as `const`). */
function literalsOf (schema: TSchema): unknown[] | undefined {
  const members = (schema as { anyOf?: unknown }).anyOf;
  if (!Array.isArray(members) || members.length === 0) return undefined;
  const values: unknown[] = [];
  for (const member of members as Array<Record<string, unknown>>) {
    if (!Object.hasOwn(member, 'const')) return undefined;
    values.push(member['const']);
  }
  return values;
}

const shown = (value: unknown): string => (typeof value === 'string' ? `'${excerpt(value, 64)}'` : excerpt(value, 64));

/** One TypeBox error as a person can act on it: what is allowed, not the validator's vocabulary. */
function messageOf (error: ValueError): string {
  if (error.type === ValueErrorType.ObjectRequiredProperty) return 'is required';
  if (error.type === ValueErrorType.ObjectAdditionalProperties) return 'is not an accepted property';
  if (error.type === ValueErrorType.Union) {
    const allowed = literalsOf(error.schema);
    if (allowed) return `must be one of ${allowed.map(shown).join(', ')} (got ${shown(error.value)})`;
    return 'matches none of the accepted forms';
  }
  return error.message;
}

/**
 * The problems of a value that failed its schema, `at` prefixed to each path. A missing field is
 * reported once ("is required"), not again with the type it would have had; a wrong enum value
 * names the accepted values.
 */
export function problemsOf (found: Iterable<ValueError>, at = ''): Problem[] {
  const problems: Problem[] = [];
  const missing = new Set<string>();
  for (const error of found) {
    if (missing.has(error.path)) continue;
    if (error.type === ValueErrorType.ObjectRequiredProperty) missing.add(error.path);
    problems.push({ field: `${at}${error.path}`, message: messageOf(error) });
    if (problems.length >= MAX_PROBLEMS) break;
  }
  return problems;
}
