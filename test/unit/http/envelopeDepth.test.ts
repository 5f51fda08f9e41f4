import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pathNestedDeeperThan } from '../../../src/http/typedRequest/protocol.js';

/** The walk as first written (a path copied for every child): the reference for the order and the path. */
function reference (value: unknown, limit: number): string[] | undefined {
  const stack: Array<[unknown, string[]]> = [[value, []]];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const [node, path] = item;
    if (node === null || typeof node !== 'object') continue;
    if (path.length >= limit) return path;
    for (const [key, child] of Object.entries(node)) stack.push([child, [...path, key]]);
  }
  return undefined;
}

describe('pathNestedDeeperThan: the TypedRequest envelope depth limit', () => {
  it('names the path to the first container past the limit, or nothing', () => {
    expect(pathNestedDeeperThan({ a: { b: { c: 1 } } }, 2)).toEqual(['a', 'b']);
    expect(pathNestedDeeperThan([[[1]]], 2)).toEqual(['0', '0']);
    expect(pathNestedDeeperThan({ a: { b: 1 } }, 2)).toBeUndefined();
    expect(pathNestedDeeperThan('text', 0)).toBeUndefined();
    expect(pathNestedDeeperThan({}, 0)).toEqual([]);
    // Siblings: the last one is walked first.
    expect(pathNestedDeeperThan({ x: { y: {} }, z: { w: {} } }, 2)).toEqual(['z', 'w']);
  });

  it('finds what the reference walk finds, on any JSON value and limit', () => {
    fc.assert(fc.property(fc.jsonValue({ maxDepth: 6 }), fc.integer({ min: 0, max: 6 }), (value, limit) => {
      expect(pathNestedDeeperThan(value, limit)).toEqual(reference(value, limit));
    }), { numRuns: 2000 });
  });

  it('walks 100 000 levels without recursion', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    expect(pathNestedDeeperThan(deep, 64)).toHaveLength(64);
  });
});
