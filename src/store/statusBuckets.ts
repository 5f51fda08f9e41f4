import type { Collection } from 'mongodb';
import {
  bucketId, reporterIdOfKey, type BucketSums, type EntryDelta, type MismatchCounts, type StatusSummary, type StatusTotals, type SummaryEntry,
} from '../domain/rolloutStatus.js';

/**
 * A bucket of a rollout's status (docs/api.md "How reports are stored"): the contributions of the
 * reporters whose key `bucketOf` puts in it, and their sums at the bucket's version. A report whose
 * contribution changes writes its bucket (guarded by its own contribution's version, the sums by
 * `$inc`), then the bucket's sums into the service document (guarded by the version the service
 * holds). The service document so never holds a contribution per reporter.
 */
export interface BucketDocument {
  /** `<rolloutId>:<bucket>` (`bucketId`). */
  _id: string;
  serviceId: string;
  rolloutId: string;
  /** +1 on every contribution written. */
  v: number;
  /** The sums of the contributions (a field is absent until a contribution moved it). */
  t?: Partial<StatusTotals>;
  m?: MismatchCounts;
  /** reporter key → its contribution (`reporterKeyOf`). */
  entries?: Record<string, SummaryEntry>;
}

/** The key of a bucket in the summary's `buckets` (a field name that is never an array index). */
export const bucketKey = (bucket: number): string => `b${bucket}`;

/** A bucket's sums as the service document holds them: the four totals, the mismatch reasons some reporter names. */
export function sumsOf (doc: Pick<BucketDocument, 'v' | 't' | 'm'>): BucketSums {
  const t = doc.t ?? {};
  const m: MismatchCounts = {};
  for (const [reason, count] of Object.entries(doc.m ?? {})) if (count) m[reason as keyof MismatchCounts] = count;
  const c: BucketSums['c'] = [t.observed ?? 0, t.healthy ?? 0, t.verified ?? 0, t.failed ?? 0];
  return Object.keys(m).length === 0 ? { v: doc.v, c } : { v: doc.v, c, m };
}

/** The `$inc` of a delta: each total that moves under `totals.<name>`, each mismatch reason under `mismatched.<reason>`. */
export function deltaInc (delta: EntryDelta, totals: string, mismatched: string): Record<string, number> {
  const inc: Record<string, number> = {};
  for (const [name, value] of Object.entries(delta.totals)) if (value !== 0) inc[`${totals}.${name}`] = value;
  for (const [reason, value] of Object.entries(delta.mismatched)) if (value) inc[`${mismatched}.${reason}`] = value;
  return inc;
}

/** The reporters a summary counts: the keys of the contributions in its buckets (read by `_id` `$in`). */
export async function countedReporterIds (
  buckets: Collection<BucketDocument>, rolloutId: string, summary: Pick<StatusSummary, 'buckets'>
): Promise<string[]> {
  const ids = Object.keys(summary.buckets ?? {}).map((key) => bucketId(rolloutId, key.slice(1)));
  if (ids.length === 0) return [];
  const docs = await buckets.find({ _id: { $in: ids } }, { projection: { entries: 1 } }).toArray();
  return docs.flatMap((doc) => Object.keys(doc.entries ?? {}).map(reporterIdOfKey));
}
