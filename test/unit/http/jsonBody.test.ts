import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/errors.js';
import { MAX_BODY_DEPTH, parseJsonBody, refusedKeyIn, tooDeepIn } from '../../../src/http/jsonBody.js';

/** How deep a parsed value nests (arrays and objects count a level). */
const depthOf = (value: unknown): number =>
  value !== null && typeof value === 'object' ? 1 + Math.max(0, ...Object.values(value).map(depthOf)) : 0;

/** The value at a path of keys and indexes. */
const at = (value: unknown, path: readonly string[]): unknown => path.reduce<unknown>((v, key) => (v as Record<string, unknown>)[key], value);

const refusalOf = (text: string) => {
  try {
    parseJsonBody(text);
  } catch (err) {
    if (isAppError(err)) return { code: err.code, problems: err.details['problems'] as Array<{ field: string, message: string }> };
    throw err;
  }
  throw new Error('expected a refusal');
};

describe('the JSON body parser: depth', () => {
  it('names the path to the first container past the limit, in document order', () => {
    expect(tooDeepIn('{"a":{"b":{"c":1}}}', 2)).toEqual(['a', 'b']);
    expect(tooDeepIn('[[[1]]]', 2)).toEqual(['0', '0']);
    expect(tooDeepIn('[1, 2, [3, [4]]]', 2)).toEqual(['2', '1']);
    expect(tooDeepIn('{"a":{"b":1}}', 2)).toBeUndefined();
    expect(tooDeepIn('"text"', 0)).toBeUndefined();
    expect(tooDeepIn('{}', 0)).toEqual([]);
    expect(tooDeepIn('{"x":1,"y":{"z":{}}}', 2)).toEqual(['y', 'z']);
    // Brackets inside strings (escaped quotes included) are text, not nesting.
    expect(tooDeepIn('{"a":"[[[[\\"{{{{","b":[1]}', 2)).toBeUndefined();
    // A string that ends in an escaped backslash ends at its quote: what follows is nesting again.
    expect(tooDeepIn('{"a":"x\\\\","b":[[1]]}', 2)).toEqual(['b', '0']);
    expect(tooDeepIn('{"a":"x\\\\\\"[[","b":[1]}', 2)).toBeUndefined();
    expect(tooDeepIn('["unterminated [[[[', 2)).toBeUndefined();
  });

  it('finds a too-deep container exactly when the value nests too deep, and its path leads to one', () => {
    fc.assert(fc.property(fc.jsonValue({ maxDepth: 7 }), fc.integer({ min: 0, max: 7 }), (value, limit) => {
      const text = JSON.stringify(value);
      const path = tooDeepIn(text, limit);
      expect(path !== undefined, text).toBe(depthOf(value) > limit);
      if (path) {
        expect(path).toHaveLength(limit);
        const found = at(value, path);
        expect(found !== null && typeof found === 'object').toBe(true);
      }
    }), { numRuns: 2000 });
  });

  it('scans 100 000 levels without recursion, and refuses them naming the field', () => {
    const text = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000);
    expect(tooDeepIn(text, MAX_BODY_DEPTH)).toHaveLength(MAX_BODY_DEPTH);
    const refused = refusalOf(text);
    expect(refused.code).toBe('validation-failed');
    expect(refused.problems[0]?.field).toMatch(/^\/body\/a\/a\/.*\/…$/);
    expect(refused.problems[0]?.message).toBe(`nested more than ${MAX_BODY_DEPTH} levels deep`);
  });

  it('accepts what JSON.parse accepts at a reasonable depth (but the prototype-poisoning keys refused below)', () => {
    // fast-check's JSON values include the keys `__proto__` and `constructor` (it found `[{"__proto__":0}]`):
    // those are refused on purpose ("the prototype-poisoning keys" below), so they are not generated here.
    const poisoning = (text: string): boolean => text.includes('"__proto__"') || text.includes('"constructor"');
    const values = fc.jsonValue({ maxDepth: 10 }).filter((value) => !poisoning(JSON.stringify(value)));
    fc.assert(fc.property(values, (value) => {
      expect(parseJsonBody(JSON.stringify(value))).toEqual(JSON.parse(JSON.stringify(value)));
    }), { numRuns: 500 });
  });
});

describe('the JSON body parser: prototype-poisoning keys', () => {
  it('names the refused key and where it is', () => {
    expect(refusalOf('{"__proto__":{"admin":true}}').problems).toEqual([
      { field: '/body/__proto__', message: "the key '__proto__' is not accepted (prototype poisoning)" },
    ]);
    expect(refusalOf('{"a":[{"b":{"__proto__":1}}]}').problems[0]?.field).toBe('/body/a/0/b/__proto__');
    expect(refusalOf('{"constructor":{"prototype":{"x":1}}}').problems).toEqual([
      { field: '/body/constructor/prototype', message: "the key 'constructor.prototype' is not accepted (prototype poisoning)" },
    ]);
    expect(refusalOf('{"\\u005f_proto__":1}').problems[0]?.field).toBe('/body/__proto__');
    expect(refusalOf('{"a":{"constructo\\u0072":{"prototype":{}}}}').problems[0]?.field).toBe('/body/a/constructor/prototype');
  });

  it('lets harmless look-alikes through', () => {
    expect(parseJsonBody('{"constructor":"x","proto":{"__proto":1},"note":"__proto__"}'))
      .toEqual({ constructor: 'x', proto: { __proto: 1 }, note: '__proto__' });
    expect(refusedKeyIn({ constructor: { notPrototype: 1 } })).toBeUndefined();
  });

  it('says what is wrong with JSON that does not parse', () => {
    expect(refusalOf('{"a":').problems[0]).toMatchObject({ field: '/body', message: expect.stringMatching(/^is not valid JSON/) });
  });
});

describe('the JSON body parser: repeated member names', () => {
  it('refuses a member name repeated in one object, naming where (JSON.parse would keep the last one silently)', () => {
    expect(refusalOf('{"expectedRolloutGeneration":7,"reason":"x","expectedRolloutGeneration":0}').problems).toEqual([
      { field: '/body/expectedRolloutGeneration', message: 'is repeated in its object (a member name may appear once)' },
    ]);
    expect(refusalOf('{"a":[{"b":1},{"c":{"d":1, "d" :2}}]}').problems[0]?.field).toBe('/body/a/1/c/d');
    // The same name written once plainly and once escaped is the same member.
    expect(refusalOf('{"ab":1,"\\u0061b":2}').problems[0]?.field).toBe('/body/ab');
  });

  it('accepts the same name in different objects, and names that only look alike', () => {
    expect(parseJsonBody('{"a":{"x":1},"b":{"x":2},"c":[{"x":3},{"x":4}]}')).toEqual({ a: { x: 1 }, b: { x: 2 }, c: [{ x: 3 }, { x: 4 }] });
    expect(parseJsonBody('{"a":"\\"a\\":1","A":2, "a\\\\":3}')).toEqual({ a: '"a":1', A: 2, 'a\\': 3 });
    expect(parseJsonBody('["x", "x", {"x": "x:"}]')).toEqual(['x', 'x', { x: 'x:' }]);
  });

  it('refuses a body exactly when its text repeats a member name (generated objects with names drawn from a few)', () => {
    const names = fc.constantFrom('a', 'b', 'c', 'a\\"', 'b\\u0062');
    const objectText = fc.array(fc.tuple(names, fc.integer()), { maxLength: 6 })
      .map((members) => `{${members.map(([name, value]) => `"${name}" : ${value}`).join(',')}}`);
    fc.assert(fc.property(fc.array(objectText, { maxLength: 4 }), (objects) => {
      const text = `[${objects.join(',')}]`;
      const repeats = objects.some((o) => {
        const keys = Object.keys(JSON.parse(o) as object).length;
        return keys !== (o.match(/" : /g) ?? []).length;
      });
      if (repeats) expect(refusalOf(text).problems[0]?.message).toMatch(/is repeated/);
      else expect(parseJsonBody(text)).toEqual(JSON.parse(text));
    }), { numRuns: 500 });
  });
});

describe('the JSON body parser: the TypedRequest stream marker', () => {
  it('refuses the key _isVirtualStream anywhere, naming where (the real TypedRequest client would read the object as a stream)', () => {
    expect(refusalOf('{"data":{"environment":{"_isVirtualStream":"enabled","streamId":"x"}}}').problems).toEqual([
      {
        field: '/body/data/environment/_isVirtualStream',
        message: "the key '_isVirtualStream' is not accepted (the TypedRequest client reads it as a stream marker)",
      },
    ]);
    expect(refusalOf('[{"\\u005fisVirtualStream":true}]').problems[0]?.field).toBe('/body/0/_isVirtualStream');
    expect(parseJsonBody('{"note":"_isVirtualStream","isVirtualStream":1}')).toEqual({ note: '_isVirtualStream', isVirtualStream: 1 });
  });
});
