import type { ClaimRefusal, ReportHead, ReportRecord } from '../reports.js';

export interface ReportRepository {
  findRecord(id: string): Promise<ReportRecord | null>;
  /** The record without its deployments (what the report path decides from). */
  findHead(id: string): Promise<ReportHead | null>;
  /**
   * The head of a rollout record as this process last wrote or read it, if it still knows it —
   * a guess, possibly overtaken by another process: only to decide a write whose compare-and-swap
   * (`writeRecord`) proves the guess right; never to refuse or answer a report.
   */
  knownHead(id: string): ReportHead | undefined;
  findRecords(ids: readonly string[]): Promise<ReportRecord[]>;
  /** Every record of a rollout by the reporters that claimed its target nodes (its attestation's evidence; a drift's), by `_id` only. */
  findRolloutRecords(rolloutId: string, targetNodeNames: readonly string[]): Promise<ReportRecord[]>;
  /** The reports of a service without the immutable policy (one per reporting cluster; a few per reporter, from before: src/store/migrations.ts). */
  listServiceRecords(serviceId: string): Promise<ReportRecord[]>;
  /** The size limit the record would pass as stored (the database's document limit), or undefined when it fits. */
  oversized(record: ReportRecord): number | undefined;
  /** Writes the record if it is still at `expectedVersion` (0: if there is none). False: a concurrent report won. */
  writeRecord(record: ReportRecord, expectedVersion: number): Promise<boolean>;
  /**
   * Claims the rollout's nodes and sessions for the reporter (unique per rollout: the first
   * reporter to claim one keeps it) and answers those another reporter holds.
   */
  claim(rolloutId: string, reporterId: string, claims: ReadonlyArray<{ kind: 'node' | 'session', name: string }>, now: number): Promise<ClaimRefusal[]>;
  /** Removes a rollout's reports and claims (a rollout long superseded). */
  removeRollout(rolloutId: string): Promise<void>;
}
