import type { IRolloutPolicy } from '../../contracts/index.js';
import type { AttestationDue, AttestationRecord } from '../attestation/issuance.js';
import type { DomainEvent } from '../events.js';
import type { ImageRegistry } from './registry.js';

/**
 * The attestations a server issued (src/store/attestationStore.ts, the `attestations` collection) and
 * the ones it owes (the dues on the service document, written with the milestones that decide them).
 * Exactly once: one attestation per (service, rollout, kind) — its `_id` — and one per place in the
 * service's chain — the unique (serviceId, sequence) index — whichever processes issue at once.
 */

/** inserted; `exists`: this (service, rollout, kind) is issued already; `sequence-taken`: another attestation holds that place of the chain. */
export type AttestationInsert = 'inserted' | 'exists' | 'sequence-taken';

export interface AttestationLog {
  insert(record: AttestationRecord): Promise<AttestationInsert>;
  /** The service's latest attestation (the head of its chain); null: none yet. */
  head(serviceId: string): Promise<AttestationRecord | null>;
  find(serviceId: string, id: string): Promise<AttestationRecord | null>;
  /** The service's attestations in chain order after `afterSequence` (0: from the first), at most `limit`; with `rolloutId`, that rollout's only. */
  list(serviceId: string, query: { limit: number, afterSequence: number, rolloutId?: string }): Promise<AttestationRecord[]>;
  /** Attestations whose registry attachment is pending and due again at `now`, at most `limit`. */
  pendingAttachments(limit: number, now: number): Promise<AttestationRecord[]>;
  markAttached(id: string): Promise<void>;
  /** An attachment failed: counted, and tried again after `retryAt`. */
  attachFailed(id: string, retryAt: number): Promise<void>;
}

/** What issuing reads of the service with its dues: its name and the policies in force. */
export interface DueAttestations {
  serviceId: string;
  name: string;
  rolloutPolicy?: IRolloutPolicy;
  /** The trust policy as stored (absent: none). */
  trustPolicy?: unknown;
  dues: AttestationDue[];
}

export interface AttestationDues {
  /** Services that owe attestations, by id after `after` (the sweeper works them off). */
  servicesWithDues(limit: number, after?: string): Promise<string[]>;
  /** The service's dues in the order they were decided; null: no such service. */
  findDues(serviceId: string): Promise<DueAttestations | null>;
  /** Takes the due off with its event (when one was issued), once: false when another process did. */
  completeDue(serviceId: string, key: string, event: DomainEvent | undefined): Promise<boolean>;
}

/** The registry as issuing needs it: attach (src/outbound/registry), and whether a host's configuration allows writes (`attachAttestations`). */
export interface AttestationRegistry {
  attach: ImageRegistry['attach'];
  allowsWrites(registryHost: string): boolean;
}
