import { Type, type TLiteral, type TUnion } from '@sinclair/typebox';

type LiteralSchemas<T extends readonly string[]> = { [K in keyof T]: TLiteral<T[K]> };

/**
 * `Type.Union` of string literals built from a value list, so that the values are
 * also available at runtime (error catalogues, generators) without a second list.
 * JSON Schema: `anyOf` of `const`, which Ajv and TypeBox both handle.
 */
export const literalUnion = <const T extends readonly [string, string, ...string[]]>(
  values: T,
): TUnion<[...LiteralSchemas<T>]> =>
  // The mapped tuple type cannot be inferred through Array#map; the runtime value is exactly it.
    Type.Union(values.map((value) => Type.Literal(value))) as unknown as TUnion<[...LiteralSchemas<T>]>;
