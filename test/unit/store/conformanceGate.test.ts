import { describe, expect, it } from 'vitest';
import { errors } from '../../../src/errors.js';
import { ClusterStore } from '../../../src/store/clusterStore.js';
import { IdempotencyStore } from '../../../src/store/idempotencyStore.js';
import { withDomainErrors } from '../../../src/store/driverErrors.js';
import { gatedByConformance } from '../../../src/store/index.js';
import { PushEventStore } from '../../../src/store/pushEventStore.js';
import { ReleaseStore } from '../../../src/store/releaseStore.js';
import { ReportStore } from '../../../src/store/reportStore.js';
import { RolloutStore } from '../../../src/store/rolloutStore.js';
import { ServiceCatalogueStore } from '../../../src/store/catalogueStore.js';
import { LifecycleStore } from '../../../src/store/lifecycleStore.js';
import { ServicePlanStore } from '../../../src/store/planStore.js';
import { StatusStore } from '../../../src/store/statusStore.js';
import { EventLogStore } from '../../../src/store/eventLogStore.js';

/**
 * Fail closed (issue 24): until the database passed the conformance check, the repositories' methods
 * that reach the database wait for it and fail with it. The gate tells those methods by their being
 * `async`; a method that returns a promise without being `async` would slip past it, so every method
 * of every store is either `async` or one of the few that only compute.
 */
const AsyncFunction = (async () => {}).constructor;
const computeOnly = new Set(['ReportStore.knownHead', 'ReportStore.oversized']);

describe('the conformance gate of the repositories', () => {
  it('every method of every store is async (gated), or computes without the database', () => {
    const slipping: string[] = [];
    const stores = [ClusterStore, IdempotencyStore, PushEventStore, ReleaseStore, ReportStore, RolloutStore]
      .concat([ServiceCatalogueStore, ServicePlanStore, StatusStore, LifecycleStore, EventLogStore] as never[]);
    for (const store of stores) {
      for (const name of Object.getOwnPropertyNames(store.prototype)) {
        const method: unknown = Object.getOwnPropertyDescriptor(store.prototype, name)?.value;
        if (name === 'constructor' || typeof method !== 'function') continue;
        if (!(method instanceof AsyncFunction) && !computeOnly.has(`${store.name}.${name}`)) slipping.push(`${store.name}.${name}`);
      }
    }
    expect(slipping).toEqual([]);
  });

  // Private fields, as the stores have: a method called on a proxy instead of the repository fails on them.
  class Repository {
    readonly #calls: string[] = [];
    get calls (): string[] {
      return this.#calls;
    }

    async write (value: string): Promise<string> {
      this.#calls.push(value);
      return value;
    }

    size (value: string): number {
      return value.length + this.#calls.length * 0;
    }
  }

  it('calls through at once when the check passed (or is off), and leaves plain methods alone', async () => {
    // Wrapped as the store wraps them (withDomainErrors around the gate): both proxies call the repository itself.
    const repository = withDomainErrors(gatedByConformance(new Repository(), { conformanceGate: () => undefined }));
    expect(await repository.write('a')).toBe('a');
    expect(repository.size('abc')).toBe(3);
    expect(repository.calls).toEqual(['a']);
  });

  it('waits for the check under way, then calls', async () => {
    let pass: () => void = () => {};
    const check = new Promise<void>((resolve) => { pass = resolve; });
    const inner = new Repository();
    const repository = withDomainErrors(gatedByConformance(inner, { conformanceGate: () => check }));
    const written = repository.write('b');
    await Promise.resolve();
    expect(inner.calls).toEqual([]);
    expect(repository.size('ab')).toBe(2);
    pass();
    expect(await written).toBe('b');
    expect(inner.calls).toEqual(['b']);
  });

  it('fails with the refusal and never calls the method', async () => {
    const inner = new Repository();
    const refusal = errors.databaseRefused('single-document atomicity', '20 concurrent compare-and-swap updates of one document had 3 winners (expected 1)');
    const repository = gatedByConformance(inner, { conformanceGate: () => Promise.reject(refusal) });
    await expect(repository.write('c')).rejects.toBe(refusal);
    expect(inner.calls).toEqual([]);
  });
});
