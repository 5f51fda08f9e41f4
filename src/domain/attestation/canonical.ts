import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/**
 * Canonical JSON (RFC 8785, JCS) and the digests this project computes over it: the plan digest,
 * the policy digests and the envelope digest. Two parties that hold the same JSON value compute the
 * same bytes (keys sorted by UTF-16 code units, ECMAScript number form, no whitespace), so a digest
 * can be recomputed by anyone with `canonicalize` (or any JCS implementation) and `sha256sum`.
 */

/** The JCS text of a JSON value. Throws on what JSON cannot carry (NaN, Infinity, lone surrogates, cycles, undefined at the top). */
export function canonicalJson (value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('canonical JSON: the value has no JSON form');
  return text;
}

/** Lower-case hex SHA-256 of bytes (a string is taken as UTF-8). */
export const sha256Hex = (data: string | Uint8Array): string => createHash('sha256').update(data).digest('hex');

/** Lower-case hex SHA-256 of a JSON value's canonical form: the digest of a plan, a policy or an envelope. */
export const canonicalDigest = (value: unknown): string => sha256Hex(canonicalJson(value));

/** An in-toto DigestSet with one sha256 entry. */
export interface Sha256DigestSet {
  sha256: string;
}

export const digestSetOf = (value: unknown): Sha256DigestSet => ({ sha256: canonicalDigest(value) });
