/**
 * Issue 24 item 5: the sharding plan (src/store/shardPlan.ts) against the index plan the servers
 * create (src/store/indexPlan.ts). MongoDB refuses a unique index on a sharded collection unless the
 * shard key's fields are its prefix (`createIndexes` answers CannotCreateIndex, `shardCollection`
 * refuses a collection that holds one) — and a refused unique index keeps every server unready. So a
 * unique index added to a sharded collection without the key, or a collection the plan forgot, fails here.
 * (The queries are checked on the wire: test/integration/store/shardTargeting.test.ts.)
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { collections, indexPlan, type IndexPlanEntry } from '../../../src/store/indexPlan.js';
import { MIGRATIONS_COLLECTION } from '../../../src/store/migrations.js';
import { describeShardKey, scatterGathers, shardPlan, type ShardKey } from '../../../src/store/shardPlan.js';

const shardKeyOf = (collection: string): ShardKey | undefined => {
  const key = shardPlan[collection]?.shardKey;
  return key === undefined || key === 'unsharded' ? undefined : key;
};

/** MongoDB's rule (ShardKeyPattern::isUniqueIndexCompatible), without its `_id`-leading exemption: the key's field names are the index's first fields. */
const containsShardKeyAsPrefix = (shardKey: ShardKey, index: IndexPlanEntry['key']): boolean => {
  const keyFields = Object.keys(shardKey);
  const indexFields = Object.keys(index);
  return keyFields.length <= indexFields.length && keyFields.every((field, i) => indexFields[i] === field);
};

describe('the sharding plan against the index plan', () => {
  it('names every collection of the index plan and every collection the store uses, and nothing else', () => {
    const used = new Set<string>([...Object.values(collections), ...indexPlan.map((entry) => entry.collection), MIGRATIONS_COLLECTION]);
    expect([...used].filter((collection) => shardPlan[collection] === undefined)).toEqual([]);
    expect(Object.keys(shardPlan).filter((collection) => !used.has(collection))).toEqual([]);
  });

  it('every unique index of a sharded collection has the shard key as its prefix', () => {
    const refused = indexPlan.flatMap((entry) => {
      const shardKey = shardKeyOf(entry.collection);
      return entry.unique === true && shardKey !== undefined && !containsShardKeyAsPrefix(shardKey, entry.key)
        ? [`${entry.collection}.${entry.name} ${JSON.stringify(entry.key)} lacks the shard key ${JSON.stringify(shardKey)}`]
        : [];
    });
    expect(refused).toEqual([]);
  });

  it('the rule itself: a unique index without the key as its prefix is caught', () => {
    expect(containsShardKeyAsPrefix({ serviceId: 1 }, { idempotencyRecordId: 1 })).toBe(false);
    expect(containsShardKeyAsPrefix({ serviceId: 1 }, { idempotencyRecordId: 1, serviceId: 1 })).toBe(false);
    expect(containsShardKeyAsPrefix({ _id: 'hashed' }, { fence: 1 })).toBe(false);
    expect(containsShardKeyAsPrefix({ serviceId: 1 }, { serviceId: 1, generation: -1 })).toBe(true);
    expect(containsShardKeyAsPrefix({ _id: 'hashed' }, { _id: 1, fence: 1 })).toBe(true);
  });

  it('a ranged shard key is served by an index of the plan (sh.shardCollection needs one on a collection that holds documents)', () => {
    const unserved = Object.entries(shardPlan).flatMap(([collection, { shardKey }]) => {
      if (shardKey === 'unsharded' || Object.values(shardKey).includes('hashed') || Object.keys(shardKey).join() === '_id') return [];
      return indexPlan.some((entry) => entry.collection === collection && containsShardKeyAsPrefix(shardKey, entry.key)) ? [] : [collection];
    });
    expect(unserved).toEqual([]);
  });

  it('documents scatter-gathers only on sharded collections, each with its reason and sender', () => {
    for (const entry of scatterGathers) {
      expect(shardKeyOf(entry.collection), entry.collection).toBeDefined();
      expect(entry.filter, entry.sentBy).toEqual([...entry.filter].sort());
      expect(entry.why.length, entry.sentBy).toBeGreaterThan(20);
    }
  });

  it('docs/operations.md "Sharding" names every collection with its shard key', () => {
    const doc = readFileSync(new URL('../../../docs/operations.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('## Sharding'));
    expect(section.length).toBeLessThan(doc.length);
    const missing = Object.entries(shardPlan).filter(([collection, { shardKey }]) =>
      !section.includes(`| \`${collection}\` | ${shardKey === 'unsharded' ? 'unsharded' : `\`${describeShardKey(shardKey)}\``} |`));
    expect(missing.map(([collection]) => collection)).toEqual([]);
  });
});
