/**
 * The outcomes of signature checks, per (signed content, key fingerprint): the crypto of a digest
 * already verified is not done again on a re-promotion; the registry is still asked every time
 * (its answer decides what is checked). A bounded LRU in memory: a Map keeps insertion order, and
 * a hit moves its entry to the end.
 */
export interface VerificationCache {
  get(key: string): boolean | undefined;
  set(key: string, valid: boolean): void;
}

export class LruVerificationCache implements VerificationCache {
  private readonly entries = new Map<string, boolean>();

  constructor (private readonly capacity = 10_000) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('capacity must be a positive integer');
  }

  get size (): number {
    return this.entries.size;
  }

  get (key: string): boolean | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  set (key: string, valid: boolean): void {
    this.entries.delete(key);
    this.entries.set(key, valid);
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
  }
}
