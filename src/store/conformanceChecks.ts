import { MongoBulkWriteError, MongoServerError, type Collection, type Db } from 'mongodb';
import type { ConformanceCheck } from '../domain/ports/database.js';
import { DUPLICATE_KEY, isDatabaseUnavailableError, isDuplicateKeyError } from './driverErrors.js';
import { indexOptions, indexPlan } from './indexPlan.js';

/**
 * The checks of the database conformance check (./conformance.ts), each against scratch collections
 * and each answering one line of the report. The concurrency checks send `concurrency` operations on
 * as many connections at once, `rounds` times: a server that is not atomic loses some races and wins
 * others, so one round can pass by luck.
 */

/** The documents of the scratch collections: every field any check writes. */
export interface ScratchDoc {
  _id: string;
  v?: number;
  by?: number;
  n?: number;
  k?: string;
  a?: number;
  b?: string;
  list?: number[];
  fence?: string;
}

export interface ProbeContext {
  db: Db;
  /** A scratch collection (created on first write, dropped by the probe): `suffix` tells them apart. */
  scratch(suffix: string): Collection<ScratchDoc>;
  concurrency: number;
  rounds: number;
}

export type Check = (ctx: ProbeContext) => Promise<ConformanceCheck>;

const REASON_CHARS = 200;

/** A server's refusal in one bounded line: `NotImplemented (238): Index option "expireAfterSeconds" is not implemented yet`. */
export function serverAnswer (err: unknown): string {
  const message = (err instanceof Error ? err.message : String(err)).replace(/\s+/g, ' ').trim();
  const bounded = message.length > REASON_CHARS ? `${message.slice(0, REASON_CHARS)}…` : message;
  if (!(err instanceof MongoServerError)) return bounded;
  return `${err.codeName ?? 'error'} (${String(err.code ?? '?')}): ${bounded}`;
}

/** A server error that says "not now" about an operation without effect (write conflict, lock timeout): the store retries those. */
const isTransient = (err: unknown): boolean => err instanceof MongoServerError && isDatabaseUnavailableError(err);

interface Settled<T> {
  values: T[];
  /** Operations the server turned away for now (no effect). */
  transient: number;
  /** The first error that is neither transient nor the database being away. */
  refusal?: unknown;
}

/** Runs `concurrency` operations at once; an unreachable database rejects (the check cannot conclude). */
async function concurrently<T> (concurrency: number, operation: (i: number) => Promise<T>): Promise<Settled<T>> {
  const settled = await Promise.allSettled(Array.from({ length: concurrency }, async (_, i) => await operation(i)));
  const out: Settled<T> = { values: [], transient: 0 };
  for (const result of settled) {
    if (result.status === 'fulfilled') out.values.push(result.value);
    else if (isTransient(result.reason)) out.transient++;
    else if (isDatabaseUnavailableError(result.reason)) throw result.reason;
    else out.refusal ??= result.reason;
  }
  return out;
}

const passed = (guarantee: string, check: string, detail: string): ConformanceCheck => ({ guarantee, check, outcome: 'passed', detail });
const refused = (guarantee: string, check: string, detail: string): ConformanceCheck => ({ guarantee, check, outcome: 'refused', detail });
const degraded = (guarantee: string, check: string, detail: string): ConformanceCheck => ({ guarantee, check, outcome: 'degraded', detail });

const ATOMICITY = 'single-document atomicity';
const times = (rounds: number): string => (rounds === 1 ? 'once' : `${rounds} times`);

/** findOneAndUpdate on `{ _id, v: 0 }`: exactly one of the concurrent updates finds the document still at 0. */
export const compareAndSwap: Check = async ({ scratch, concurrency, rounds }) => {
  const check = 'compare-and-swap findOneAndUpdate';
  const collection = scratch('cas');
  for (let round = 0; round < rounds; round++) {
    const _id = `cas-${round}`;
    await collection.insertOne({ _id, v: 0 });
    const outcome = await concurrently(concurrency, async (i) =>
      await collection.findOneAndUpdate({ _id, v: 0 }, { $set: { v: 1, by: i } }, { returnDocument: 'after' }));
    if (outcome.refusal !== undefined) return refused(ATOMICITY, check, `findOneAndUpdate: the server answered ${serverAnswer(outcome.refusal)}`);
    const winners = outcome.values.filter((doc) => doc !== null);
    if (winners.length > 1 || (winners.length === 0 && outcome.transient === 0)) {
      return refused(ATOMICITY, check, `${concurrency} concurrent compare-and-swap updates of one document had ${winners.length} winners (expected 1)`);
    }
    const stored = await collection.findOne({ _id });
    if (winners[0] !== undefined && stored?.by !== winners[0].by) {
      return refused(ATOMICITY, check, `the winner of ${concurrency} concurrent compare-and-swap updates was overwritten by a loser`);
    }
  }
  return passed(ATOMICITY, check, `${concurrency} concurrent compare-and-swap updates of one document had 1 winner (${times(rounds)})`);
};

/** updateOne on `{ _id, v: 0 }` setting v to 1: the concurrent updates modify the document once in all. */
export const guardedUpdates: Check = async ({ scratch, concurrency, rounds }) => {
  const check = 'guarded updateOne';
  const collection = scratch('guarded');
  for (let round = 0; round < rounds; round++) {
    const _id = `guarded-${round}`;
    await collection.insertOne({ _id, v: 0 });
    const outcome = await concurrently(concurrency, async () => await collection.updateOne({ _id, v: 0 }, { $set: { v: 1 } }));
    if (outcome.refusal !== undefined) return refused(ATOMICITY, check, `updateOne: the server answered ${serverAnswer(outcome.refusal)}`);
    const modified = outcome.values.reduce((sum, result) => sum + result.modifiedCount, 0);
    if (modified > 1 || (modified === 0 && outcome.transient === 0)) {
      return refused(ATOMICITY, check, `${concurrency} concurrent guarded updates of one document reported ${modified} modifications (expected 1)`);
    }
  }
  return passed(ATOMICITY, check, `${concurrency} concurrent guarded updates of one document reported 1 modification (${times(rounds)})`);
};

/** `$inc` by 1 from many connections at once: every acknowledged increment counts. */
export const increments: Check = async ({ scratch, concurrency, rounds }) => {
  const check = 'concurrent $inc';
  const collection = scratch('inc');
  for (let round = 0; round < rounds; round++) {
    const _id = `inc-${round}`;
    await collection.insertOne({ _id, n: 0 });
    const outcome = await concurrently(concurrency, async () => await collection.updateOne({ _id }, { $inc: { n: 1 } }));
    if (outcome.refusal !== undefined) return refused(ATOMICITY, check, `$inc: the server answered ${serverAnswer(outcome.refusal)}`);
    const acknowledged = outcome.values.filter((result) => result.modifiedCount === 1).length;
    const n = (await collection.findOne({ _id }))?.n;
    if (n !== acknowledged || acknowledged !== concurrency - outcome.transient) {
      return refused(ATOMICITY, check, `${concurrency} concurrent $inc of one field left it at ${String(n)} (expected ${concurrency - outcome.transient})`);
    }
  }
  return passed(ATOMICITY, check, `${concurrency} concurrent $inc of one field left it at ${concurrency} (${times(rounds)})`);
};

const UNIQUE = 'unique indexes';

/** Concurrent inserts of one key under a unique index: one is stored, every other is refused as a duplicate. */
export const uniqueInserts: Check = async ({ scratch, concurrency, rounds }) => {
  const check = 'concurrent inserts of one unique key';
  const collection = scratch('unique');
  try {
    await collection.createIndex({ k: 1 }, { unique: true, name: 'k_unique' });
  } catch (err) {
    if (isDatabaseUnavailableError(err) && !isTransient(err)) throw err;
    return refused(UNIQUE, check, `createIndexes with unique: true: the server answered ${serverAnswer(err)}`);
  }
  for (let round = 0; round < rounds; round++) {
    const k = `key-${round}`;
    const outcome = await concurrently(concurrency, async (i) => {
      try {
        await collection.insertOne({ _id: `${k}-${i}`, k });
        return 'stored' as const;
      } catch (err) {
        if (isDuplicateKeyError(err)) return 'duplicate' as const;
        throw err;
      }
    });
    if (outcome.refusal !== undefined) return refused(UNIQUE, check, `insert: the server answered ${serverAnswer(outcome.refusal)}`);
    const stored = await collection.countDocuments({ k });
    if (stored !== 1) return refused(UNIQUE, check, `${concurrency} concurrent inserts of one unique key stored ${stored} documents (expected 1)`);
  }
  return passed(UNIQUE, check, `${concurrency} concurrent inserts of one unique key stored 1 document, refused the others (${times(rounds)})`);
};

const COMMANDS = 'commands the store uses';

/** findOneAndUpdate with a projection (the report and cluster writes read back only what they need). */
export const projectedFindOneAndUpdate: Check = async ({ scratch }) => {
  const check = 'findOneAndUpdate with a projection';
  const collection = scratch('commands');
  await collection.insertOne({ _id: 'projection', a: 1, b: 'not asked for' });
  try {
    const doc = await collection.findOneAndUpdate({ _id: 'projection' }, { $set: { a: 2 } }, { projection: { a: 1 }, returnDocument: 'after' });
    if (doc?.a !== 2 || 'b' in doc) return refused(COMMANDS, check, `findOneAndUpdate with a projection returned ${JSON.stringify(doc).slice(0, 120)}`);
  } catch (err) {
    if (isDatabaseUnavailableError(err) && !isTransient(err)) throw err;
    return refused(COMMANDS, check, `findOneAndUpdate with a projection: the server answered ${serverAnswer(err)}`);
  }
  return passed(COMMANDS, check, 'returned the projected fields of the updated document');
};

/** `$push` with `$each` and `$slice`: the lists the store bounds (status events, observed tags) stay bounded. */
export const boundedPush: Check = async ({ scratch }) => {
  const guarantee = 'bounded documents';
  const check = '$push with $slice';
  const collection = scratch('commands');
  await collection.insertOne({ _id: 'slice', list: [1] });
  try {
    await collection.updateOne({ _id: 'slice' }, { $push: { list: { $each: [2, 3], $slice: -2 } } });
  } catch (err) {
    if (isDatabaseUnavailableError(err) && !isTransient(err)) throw err;
    return refused(guarantee, check, `$push with $slice: the server answered ${serverAnswer(err)}`);
  }
  const list = (await collection.findOne({ _id: 'slice' }))?.list;
  if (JSON.stringify(list) !== '[2,3]') {
    return refused(guarantee, check,
      `$push of 2 elements with $slice -2 onto [1] left ${JSON.stringify(list)} (expected [2,3]): the lists the store bounds would grow without limit`);
  }
  return passed(guarantee, check, 'kept the last 2 elements');
};

/** An unordered bulk write goes on past a refused operation and names the refused ones (node registration, report writes). */
export const unorderedBulkWrite: Check = async ({ scratch }) => {
  const guarantee = 'unordered bulk writes';
  const check = 'insertMany with ordered: false';
  const collection = scratch('bulk');
  await collection.insertOne({ _id: 'taken' });
  let refusedIndexes: number[] = [];
  try {
    await collection.insertMany([{ _id: 'taken' }, { _id: 'after-1' }, { _id: 'after-2' }], { ordered: false });
  } catch (err) {
    if (!(err instanceof MongoBulkWriteError)) {
      if (isDatabaseUnavailableError(err) && !isTransient(err)) throw err;
      return refused(guarantee, check, `insertMany with ordered: false: the server answered ${serverAnswer(err)}`);
    }
    refusedIndexes = writeErrorIndexes(err);
  }
  const written = (await collection.find({ _id: { $in: ['after-1', 'after-2'] } }).toArray()).length;
  if (JSON.stringify(refusedIndexes) !== '[0]' || written !== 2) {
    return refused(guarantee, check, `an unordered bulk write of a duplicate and 2 new documents refused operations [${refusedIndexes.join(', ')}] ` +
      `and wrote ${written} of the 2 (expected [0] and 2): the store would lose the writes after a refused one`);
  }
  return passed(guarantee, check, 'refused the duplicate (operation 0) and wrote the 2 after it');
};

/** The write errors of a bulk write, by operation index (only duplicate keys count as refusals the store expects). */
function writeErrorIndexes (err: MongoBulkWriteError): number[] {
  const writeErrors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
  return writeErrors.filter((writeError) => writeError.code === DUPLICATE_KEY).map((writeError) => writeError.index);
}

/**
 * The report records' group commit (src/store/reportStore.ts): replacements by `_id` and fence (the
 * unique index `{ _id, fence }`), upserting, unordered, one of them stale. The server must name exactly the refused operation:
 * the store tells each writer from the write errors' indexes whether its compare-and-swap won.
 */
export const unorderedReplacements: Check = async ({ scratch }) => {
  const guarantee = 'unordered bulk writes';
  const check = 'bulkWrite of fenced replacements, ordered: false';
  const collection = scratch('fenced');
  try {
    await collection.createIndex({ _id: 1, fence: 1 }, { unique: true, name: 'id_fence_unique' });
    await collection.insertMany(['r0', 'r1', 'r2'].map((_id) => ({ _id, fence: `${_id}@1` })));
    // r1's replacement names a version it is not at: no match, the upsert collides with r1's _id (refused).
    await collection.bulkWrite(['r0@1', 'r1@0', 'r2@1'].map((fence, i) => ({
      replaceOne: { filter: { _id: `r${i}`, fence }, replacement: { _id: `r${i}`, fence: `r${i}@2` }, upsert: true },
    })), { ordered: false });
    return refused(guarantee, check, 'a replacement whose upsert duplicates an _id was not refused');
  } catch (err) {
    if (!(err instanceof MongoBulkWriteError)) {
      if (isDatabaseUnavailableError(err) && !isTransient(err)) throw err;
      return refused(guarantee, check, `bulkWrite with ordered: false: the server answered ${serverAnswer(err)}`);
    }
    const named = writeErrorIndexes(err);
    const fences = (await collection.find({}, { sort: { _id: 1 } }).toArray()).map((doc) => doc.fence).join(', ');
    if (JSON.stringify(named) !== '[1]' || fences !== 'r0@2, r1@1, r2@2') {
      return refused(guarantee, check, `of 3 fenced replacements (the second stale) the server named [${named.join(', ')}] as refused and left ` +
        `${fences} (expected [1] and r0@2, r1@1, r2@2): the store would tell writers the wrong outcome of their compare-and-swap`);
    }
  }
  return passed(guarantee, check, 'named exactly the stale replacement (operation 1) as refused and wrote the 2 others');
};

/** Every index of the plan, created on scratch collections: unique ones are required, the TTL index and the others optional. */
export const indexPlanCreation = async ({ scratch }: ProbeContext): Promise<ConformanceCheck[]> => {
  const refusals: Array<{ name: string, unique: boolean, ttl: boolean, reason: string }> = [];
  for (const entry of indexPlan) {
    try {
      await scratch(`plan_${entry.collection}`).createIndex(entry.key, indexOptions(entry));
    } catch (err) {
      if (isDatabaseUnavailableError(err) && !isTransient(err)) throw err;
      refusals.push({ name: entry.name, unique: entry.unique === true, ttl: entry.expireAfterSeconds !== undefined, reason: serverAnswer(err) });
    }
  }
  const ttlEntry = indexPlan.find((entry) => entry.expireAfterSeconds !== undefined);
  const ttlRefusal = refusals.find((refusal) => refusal.ttl);
  const lines: ConformanceCheck[] = [];
  const firstUnique = refusals.find((refusal) => refusal.unique);
  const unique = indexPlan.filter((entry) => entry.unique).length;
  lines.push(firstUnique !== undefined
    ? refused(UNIQUE, 'the index plan\'s unique indexes', `the server refused the unique index ${firstUnique.name}: ${firstUnique.reason}`)
    : passed(UNIQUE, 'the index plan\'s unique indexes', `created all ${unique} (src/store/indexPlan.ts)`));
  if (ttlEntry !== undefined) {
    lines.push(ttlRefusal === undefined
      ? passed('TTL expiry', `TTL index ${ttlEntry.name}`, 'accepted; expired idempotency records are also removed by the periodic sweep')
      : degraded('TTL expiry', `TTL index ${ttlEntry.name}`,
        `refused (${ttlRefusal.reason}): expired idempotency records are removed by the periodic sweep only`));
  }
  const others = refusals.filter((refusal) => !refusal.unique && !refusal.ttl);
  const plain = indexPlan.length - unique - (ttlEntry === undefined ? 0 : 1);
  lines.push(others.length === 0
    ? passed('index plan', 'the other indexes of the plan', `created all ${plain}`)
    : degraded('index plan', 'the other indexes of the plan',
      `refused ${others.map((refusal) => `${refusal.name} (${refusal.reason})`).join(', ')}: the queries they serve scan their collection`));
  return lines;
};
