import { accept, refuse, type Checked } from './refusal.js';
import type { ChainLink } from './schemas.js';

/** A verified attestation's place in its service's chain. */
export interface ChainMember {
  envelopeDigest: string;
  chain: ChainLink;
  serviceId: string;
}

const previousOf = (m: ChainMember): string | null => m.chain.previousEnvelopeDigest?.sha256 ?? null;

/** Two different attestations that claim the same place (the same sequence or the same predecessor). */
function findFork (members: readonly ChainMember[]): Checked<true> {
  const bySequence = new Map<number, ChainMember>();
  const byPrevious = new Map<string, ChainMember>();
  for (const m of members) {
    const previous = previousOf(m) ?? '(none)';
    const other = bySequence.get(m.chain.sequence) ?? byPrevious.get(previous);
    if (other !== undefined && other.envelopeDigest !== m.envelopeDigest) {
      return refuse('chain-forked', `the chain forks: attestations ${other.envelopeDigest} and ${m.envelopeDigest} both claim ` +
        `sequence ${m.chain.sequence} after ${previous}`);
    }
    bySequence.set(m.chain.sequence, m);
    byPrevious.set(previous, m);
  }
  return accept(true);
}

/**
 * Verifies that `members` (oldest first) form one unbroken stretch of a service's hash chain: one
 * service; no fork; sequences strictly increasing (else reordered) by exactly one (else a gap); each
 * attestation's previous digest is the digest of the one before it (else broken). `after`: the
 * digest of the attestation the first member must follow (`--after`).
 */
export function verifyChain (members: readonly ChainMember[], after?: string): Checked<true> {
  const [first] = members;
  if (first === undefined) return accept(true);
  const stranger = members.find((m) => m.serviceId !== first.serviceId);
  if (stranger !== undefined) {
    return refuse('chain-service-mismatch', `attestation ${stranger.envelopeDigest} is of service '${stranger.serviceId}', not '${first.serviceId}'`);
  }
  if (after !== undefined && previousOf(first) !== after.toLowerCase().replace(/^sha256:/, '')) {
    return refuse('chain-start-mismatch', `attestation ${first.envelopeDigest} follows ${previousOf(first) ?? 'nothing (it is the first)'}, not ${after}`);
  }
  const fork = findFork(members);
  if (!fork.ok) return fork;
  // Order first: a list put out of order also shows a gap where it jumps, and "reordered" is what happened.
  for (let i = 1; i < members.length; i++) {
    const before = members[i - 1] as ChainMember;
    const m = members[i] as ChainMember;
    if (m.chain.sequence <= before.chain.sequence) {
      return refuse('chain-reordered', `the chain is out of order: sequence ${m.chain.sequence} (${m.envelopeDigest}) ` +
        `comes after sequence ${before.chain.sequence}`);
    }
  }
  for (let i = 1; i < members.length; i++) {
    const before = members[i - 1] as ChainMember;
    const m = members[i] as ChainMember;
    if (m.chain.sequence !== before.chain.sequence + 1) {
      return refuse('chain-gap', `the chain has a gap: sequence ${before.chain.sequence} is followed by ${m.chain.sequence}`);
    }
    if (previousOf(m) !== before.envelopeDigest) {
      return refuse('chain-broken', `the chain is broken at sequence ${m.chain.sequence}: it names ${previousOf(m) ?? 'no'} previous attestation, ` +
        `but sequence ${before.chain.sequence} is ${before.envelopeDigest}`);
    }
  }
  return accept(true);
}
