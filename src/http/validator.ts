import type { FastifySchemaCompiler } from 'fastify';
import type { TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import { problemsOf } from './schemaErrors.js';

/**
 * The validator of every route part (body, querystring, params, headers), from its TypeBox
 * schema. Bodies are checked as sent. Other parts arrive as strings and are converted to the
 * schema's types first — but a number is taken only when the string *is* one: TypeBox's own
 * conversion reads `1.5`, `1e1` or `12abc` as an integer by truncating, which would answer a
 * different request than the one asked (`windowDays=1.5` as one day). Those are refused, naming
 * the field, like any other mismatch.
 */
const INTEGER = /^-?(0|[1-9][0-9]*)$/;
const NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;

interface NumericField { name: string, integer: boolean }

/** One problem in the shape Fastify hands to the error handler (`validation` of the error). */
const problem = (instancePath: string, message: string) => ({ keyword: 'type', instancePath, schemaPath: '', params: {}, message });

/** The top-level number and integer properties of an object schema (query strings and params are flat). */
function numericFields (schema: TSchema): NumericField[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  return Object.entries(properties).flatMap(([name, s]): NumericField[] =>
    s.type === 'integer' ? [{ name, integer: true }] : s.type === 'number' ? [{ name, integer: false }] : []);
}

export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const check = TypeCompiler.Compile(schema);
  const numeric = httpPart === 'body' ? [] : numericFields(schema);
  return (value: unknown) => {
    const raw = value !== null && typeof value === 'object' ? value as Record<string, unknown> : {};
    const malformed = numeric.filter((f) => typeof raw[f.name] === 'string' && !(f.integer ? INTEGER : NUMBER).test(raw[f.name] as string));
    if (malformed.length > 0) {
      return { error: malformed.map((f) => problem(`/${f.name}`, f.integer ? 'Expected integer' : 'Expected number')) };
    }
    const converted = httpPart === 'body' ? value : Value.Convert(schema, value);
    if (check.Check(converted)) return { value: converted };
    return { error: problemsOf(check.Errors(converted)).map((p) => problem(p.field, p.message)) };
  };
};
