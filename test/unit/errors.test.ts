import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AppError, errorCatalogue, errors } from '../../src/errors.js';

// As fastify's test/internals/errors.test.js: the catalogue and its documentation, both ways.
const doc = await readFile(join(import.meta.dirname, '..', '..', 'docs', 'errors.md'), 'utf8');

/** code → status of every row of the documented table (`| <a id="code"></a>\`code\` | status | …`). */
const documented = new Map([...doc.matchAll(/^\| <a id="([a-z-]+)"><\/a>`([a-z-]+)` \| (\d{3}) \|/gm)].map((m) => {
  expect(m[1], 'anchor and code agree').toBe(m[2]);
  return [m[2] as string, Number(m[3])];
}));

describe('the error catalogue (src/errors.ts) and docs/errors.md', () => {
  it('documents every code of the catalogue with its status', () => {
    for (const [code, spec] of Object.entries(errorCatalogue)) {
      expect(documented.get(code), `docs/errors.md documents ${code}`).toBe(spec.status);
    }
  });

  it('documents no code that does not exist', () => {
    for (const code of documented.keys()) expect(Object.keys(errorCatalogue), code).toContain(code);
  });

  it('has one factory per code, and every factory builds an error of the catalogue', () => {
    const built = new Set<string>();
    const sample: Record<string, unknown[]> = {
      validationFailed: [[{ field: '/x', message: 'bad' }]],
      serverManagedField: [['/body/imageDeployment']],
      notFound: ['GET', '/nope'],
      nodeNameTaken: ['c1', [{ nodeName: 'n1', ownerClusterId: 'c2' }]],
      replayed: [{ code: 'release-not-found', message: 'gone', details: {} }],
      rolloutGenerationConflict: ['moved', { currentGeneration: 1, currentRolloutId: 'ro_1' }],
      currentRolloutMismatch: ['ro_0', { currentGeneration: 1, currentRolloutId: 'ro_1' }],
      rollbackTargetIsCurrent: ['rel', { currentGeneration: 1, currentRolloutId: 'ro_1' }],
      noCurrentRollout: ['svc', { currentGeneration: 0, currentRolloutId: null }],
      staleRolloutReport: ['stale', { currentGeneration: 1, currentRolloutId: 'ro_1' }],
      registryTargetMismatch: ['mismatch', { serviceId: 's', registryHost: 'h', repository: 'r' }],
      invalidDeploymentPlan: [['no nodes']],
      pushEventConflict: ['evt-1', { tag: '1.0.0', imageId: 'img-1' }, { tag: '1.0.1', imageId: 'img-1' }],
      payloadTooLarge: [1024],
      signatureMissing: [{ image: 'h/r@sha256:00', detail: 'no signature', found: {} }],
      signatureUntrusted: [{ image: 'h/r@sha256:00', detail: 'untrusted', found: { signatures: 1 } }],
      signatureDigestMismatch: [{ image: 'h/r@sha256:00', detail: 'another digest', found: {} }],
      attestationMissing: [{ image: 'h/r@sha256:00', detail: 'missing', found: { missing: ['x'] } }],
      registryUnavailable: ['registry.example.com', 'timeout', 'did not answer within 10000 ms'],
      promotionWindowClosed: [[{ kind: 'deny', scope: 'service', names: ['weekend-freeze'], endsAt: 1_800_000_000_000 }], 1_800_000_000_000, 1_900_000_000_000],
      stopTheLine: [{ reason: 'incident 42', by: 'alice', since: 1_800_000_000_000 }],
      pipelineStageNotSatisfied: [`sha256:${'a'.repeat(64)}`, { serviceId: 'staging', soakSeconds: 3600, missing: 'never-promoted' }],
      approvalRequired: [{ requestId: 'pr_1', serviceId: 's', releaseId: 'r', expectedRolloutGeneration: 3, required: 2, approvals: 0, expiresAt: 1 }],
      approvalNotAllowed: ['self-approval', 'alice', 'pr_1'],
      promotionRequestVoid: ['expired', { requestId: 'pr_1', expiresAt: 1_800_000_000_000, expectedRolloutGeneration: 3 }, 3],
      breakGlassNotAvailable: ['used', 'bg_1'],
    };
    for (const [name, factory] of Object.entries(errors)) {
      const error = (factory as (...args: unknown[]) => AppError)(...(sample[name] ?? ['x', 'y']));
      expect(error, name).toBeInstanceOf(AppError);
      expect(error.statusCode, name).toBe(errorCatalogue[error.code].status);
      if (name !== 'replayed') built.add(error.code);
    }
    expect([...built].sort()).toEqual(Object.keys(errorCatalogue).sort());
  });

  it('never echoes unbounded input', () => {
    const huge = 'x'.repeat(100_000);
    for (const error of [errors.serviceNotFound(huge), errors.methodNotFound(huge), errors.runtimeCapabilityMissing(huge),
      errors.validationFailed([{ field: huge, message: huge }]), errors.serviceAlreadyExists(huge, undefined),
      errors.pushEventConflict(huge, { tag: huge, imageId: 'a' }, { tag: `${huge}!`, imageId: 'b' })]) {
      expect(JSON.stringify({ detail: error.message, ...error.details }).length, error.code).toBeLessThan(2_000);
    }
    const deep = JSON.parse('['.repeat(5_000) + ']'.repeat(5_000)) as unknown;
    expect(errors.runtimeCapabilityMissing(deep).details['declared']).toBe('an array of 1');
  });

  it('governance refusals stay bounded and name what the caller needs (window and opening, stage and time left, request)', () => {
    const huge = 'x'.repeat(100_000);
    const many = Array.from({ length: 500 }, (_, i) => `w${i}${huge.slice(0, 200)}`);
    const bounded = [
      errors.promotionWindowClosed(many.map(() => ({ kind: 'deny' as const, scope: 'global' as const, names: many, description: huge })), 1, 2),
      errors.stopTheLine({ reason: huge, by: huge, since: 1 }),
      errors.pipelineStageNotSatisfied(huge, { serviceId: huge, serviceName: huge, soakSeconds: 1, missing: 'failed', reason: huge, rolloutId: huge }),
      errors.approvalRequired({ requestId: huge, serviceId: huge, releaseId: huge, expectedRolloutGeneration: 1, required: 2, approvals: 0, expiresAt: 1 }),
      errors.approvalNotAllowed('not-an-approver', huge, huge),
      errors.promotionRequestVoid('generation-moved', { requestId: huge, expiresAt: 1, expectedRolloutGeneration: 1 }, 2),
      errors.breakGlassNotAvailable('expired', huge),
    ];
    for (const error of bounded) expect(JSON.stringify({ detail: error.message, ...error.details }).length, error.code).toBeLessThan(8_000);

    const monday = Date.parse('2025-03-31T03:00:00Z');
    const closedError = errors.promotionWindowClosed([{ kind: 'deny', scope: 'service', names: ['weekend-freeze'], endsAt: monday }], monday, 0);
    expect(closedError.message).toBe("promotions are closed by the service deny window 'weekend-freeze' (until 2025-03-31T03:00:00.000Z);" +
      ' they open at 2025-03-31T03:00:00.000Z. Rollbacks and aborts are not blocked');
    expect(closedError.details).toMatchObject({ window: 'weekend-freeze', scope: 'service', kind: 'deny', opensAt: Date.parse('2025-03-31T03:00:00Z') });
    const soaking = errors.pipelineStageNotSatisfied('sha256:ab', {
      serviceId: 'svc-1', serviceName: 'shop-staging', soakSeconds: 3600, missing: 'not-soaked', ranSeconds: 1200, remainingSeconds: 2400, soakedAt: 0,
    });
    expect(soaking.message).toBe("sha256:ab has soaked 1200 s of 3600 s in stage 'shop-staging': 2400 s left (at 1970-01-01T00:00:00.000Z)");
    expect(soaking.details).toMatchObject({ stage: 'svc-1', missing: 'not-soaked', remainingSeconds: 2400 });
    expect(errors.approvalRequired({ requestId: 'pr_1', serviceId: 's', releaseId: 'r', expectedRolloutGeneration: 3, required: 2, approvals: 0, expiresAt: 0 })
      .statusCode).toBe(202);
  });

  it('push-event-conflict names the fields that differ, and the first one\'s two values', () => {
    const error = errors.pushEventConflict('evt-1', { tag: '1.0.0', imageId: 'img-1', observedAt: 1 }, { tag: '1.0.1', imageId: 'img-1', observedAt: 2 });
    expect(error.details['differingFields']).toEqual(['observedAt', 'tag']);
    expect(error.message).toBe("event 'evt-1' was already recorded with different content: observedAt, tag differ (observedAt: recorded 1, sent 2);" +
      ' a new event needs a new eventId');
    const added = errors.pushEventConflict('e', { tag: 'a' }, { tag: 'a', actorUserId: 'u' });
    expect(added.message).toContain("actorUserId differs (actorUserId: recorded absent, sent 'u')");
  });
});
