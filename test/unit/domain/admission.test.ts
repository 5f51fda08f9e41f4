import { describe, expect, it } from 'vitest';
import type { IImageRelease, IService, TSha256Digest } from '../../../src/contracts/index.js';
import {
  admissionRules, admit, isSkip, rulesBeforeVerification, type AdmissionFacts, type AdmissionRule, type GovernanceFacts,
} from '../../../src/domain/admission.js';
import { effectivePromotionPolicy } from '../../../src/domain/governance/policy.js';
import type { RolloutIntent } from '../../../src/domain/rollouts.js';
import { errors, rolloutRefusalOf, type AppError, type ErrorCode } from '../../../src/errors.js';

const digestOf = (byte: string): TSha256Digest => `sha256:${byte.repeat(32)}`;

const releaseOf = (id: string, byte: string, extra: Partial<IImageRelease['data']> = {}): IImageRelease => ({
  id,
  data: {
    serviceId: 'svc',
    imageId: 'image-1',
    registryHost: 'registry.example.com',
    repository: 'team/app',
    registryRootDigest: digestOf(byte),
    digestPinnedImageReference: `registry.example.com/team/app@${digestOf(byte)}`,
    manifestMediaType: 'application/vnd.oci.image.index.v1+json',
    observedTags: [],
    firstObservedAt: 1_000,
    lastObservedAt: 1_000,
    observationCount: 1,
    ...extra,
  },
});

const current = releaseOf('rel-current', 'c1', { acceptedAt: 2_000 });
const older = releaseOf('rel-older', 'b1', { acceptedAt: 1_500 });
const newer = releaseOf('rel-newer', 'd1', { firstObservedAt: 3_000 });

const service = (deployed: boolean, extra: Partial<IService['data']> = {}): IService => ({
  id: 'svc',
  data: {
    name: 'app',
    description: 'the app',
    imageId: 'image-1',
    imageVersion: '1',
    environment: {},
    scaleFactor: 1,
    balancingStrategy: 'round-robin',
    ports: { web: 3000 },
    resources: { memorySizeMB: 512, cpus: 0.5 },
    domains: [],
    deploymentIds: [],
    placement: { clusterIds: ['c1'], replicasPerNode: 1 },
    ...(deployed
      ? {
          imageDeployment: {
            rolloutId: 'ro_1',
            rolloutGeneration: 1,
            releaseId: current.id,
            requestedDigest: current.data.registryRootDigest,
            registryHost: current.data.registryHost,
            repository: current.data.repository,
          } as NonNullable<IService['data']['imageDeployment']>,
        }
      : {}),
    ...extra,
  },
});

/** No global policy, no promotion policy: governance lets everything through. */
const open: GovernanceFacts = { at: Date.UTC(2025, 2, 29, 12), policy: effectivePromotionPolicy(undefined), stages: [], digest: older.data.registryRootDigest };

const facts = (over: Partial<AdmissionFacts> = {}): AdmissionFacts => ({
  service: service(true),
  verifiedReleases: [],
  releaseId: older.id,
  release: older,
  currentRelease: current,
  clusters: [{ id: 'c1', nodeNames: ['n1'] }],
  expectedRolloutGeneration: 1,
  governance: open,
  ...over,
});

const promotion: RolloutIntent = { kind: 'promotion', mode: 'promotion' };
const automatic: RolloutIntent = { kind: 'promotion', mode: 'automatic' };
const rollback: RolloutIntent = { kind: 'rollback', expectedCurrentRolloutId: 'ro_1' };
const abort: RolloutIntent = { kind: 'rollback', expectedCurrentRolloutId: 'ro_1', toLastVerified: true };

const codeOf = (verdict: ReturnType<typeof admit>): string | undefined => (verdict && !isSkip(verdict) ? (verdict as AppError).code : undefined);

describe('admission: one ordered list of rules for every kind of rollout', () => {
  it('admits a promotion and a rollback whose facts hold', () => {
    expect(admit(promotion, facts())).toBeUndefined();
    expect(admit(rollback, facts())).toBeUndefined();
  });

  it('the first rule that refuses decides: a stale generation before an unknown release before an unregistered placement', () => {
    const everythingWrong = facts({ expectedRolloutGeneration: 7, release: null, clusters: [] });
    expect(codeOf(admit(promotion, everythingWrong))).toBe('rollout-generation-conflict');
    expect(codeOf(admit(promotion, { ...everythingWrong, expectedRolloutGeneration: 1 }))).toBe('release-not-found');
    expect(codeOf(admit(promotion, facts({ clusters: [] })))).toBe('invalid-deployment-plan');
  });

  it('rules apply to their intents only: a rollback target must have been accepted, a promotion target need not', () => {
    const unaccepted = releaseOf('rel-new', 'd1');
    expect(admit(promotion, facts({ release: unaccepted, releaseId: unaccepted.id }))).toBeUndefined();
    expect(codeOf(admit(rollback, facts({ release: unaccepted, releaseId: unaccepted.id })))).toBe('rollback-target-not-accepted');
    expect(codeOf(admit(rollback, facts({ release: current, releaseId: current.id })))).toBe('rollback-target-is-current');
    expect(codeOf(admit(rollback, facts({ service: service(false) })))).toBe('no-current-rollout');
  });

  it('an abort with no verified release to return to is refused after the compare-and-swap holds', () => {
    expect(codeOf(admit(abort, facts({ releaseId: '', release: null })))).toBe('no-verified-release');
    expect(codeOf(admit(abort, facts({ releaseId: '', release: null, expectedRolloutGeneration: 0 })))).toBe('rollout-generation-conflict');
  });

  it('an automatic promotion that does not apply is a skip, not an error, and comes first', () => {
    const verdict = admit(automatic, facts({ service: service(true, { deployOnPush: false }), expectedRolloutGeneration: 9 }));
    expect(isSkip(verdict) && verdict.skip).toBe('not-enabled');
  });

  it('adding a rule is one function: a rule placed in the list refuses every intent it applies to', () => {
    const frozen: AdmissionRule = { name: 'frozen', appliesTo: (intent) => intent.kind === 'promotion', check: () => errors.forbidden('frozen') };
    const rules = [...admissionRules, frozen];
    expect(codeOf(admit(promotion, facts(), rules))).toBe('forbidden');
    expect(admit(rollback, facts(), rules)).toBeUndefined();
  });
});

describe('the signature rule (services with a trust policy)', () => {
  const trusted = service(true, { trustPolicy: { publicKeys: [{ keyId: 'ci', publicKeyPem: '-----BEGIN PUBLIC KEY-----' }] } });
  const passed = { kind: 'passed', check: { basis: 'registry', policyDigest: 'a'.repeat(64), summaryDigest: 'b'.repeat(64) } } as const;
  const unsigned = errors.signatureMissing({ image: 'registry.example.com/team/app@sha256:…', detail: 'no signature', found: {} });

  it('admits without a policy (no fact needed), with a passed fact; refuses with the fact\'s error; fails closed without a fact', () => {
    expect(admit(promotion, facts())).toBeUndefined();
    expect(admit(promotion, facts({ service: trusted, trust: passed }))).toBeUndefined();
    expect(codeOf(admit(promotion, facts({ service: trusted, trust: { kind: 'refused', error: unsigned } })))).toBe('signature-missing');
    expect(codeOf(admit(rollback, facts({ service: trusted, trust: { kind: 'refused', error: unsigned } })))).toBe('signature-missing');
    expect(codeOf(admit(promotion, facts({ service: trusted })))).toBe('internal-error');
  });

  it('comes last: the registry is asked only once every other rule admitted (a stale generation is a conflict, not a signature refusal)', () => {
    expect(admissionRules.at(-1)?.name).toBe('signature-verified');
    expect(rulesBeforeVerification.map((r) => r.name)).toEqual(admissionRules.slice(0, -1).map((r) => r.name));
    const stale = facts({ service: trusted, trust: { kind: 'refused', error: unsigned }, expectedRolloutGeneration: 5 });
    expect(codeOf(admit(promotion, stale))).toBe('rollout-generation-conflict');
  });

  it('a trust refusal is replayed and skips an automatic promotion; registry-unavailable is retryable and keeps a waiting push waiting', () => {
    for (const code of ['signature-missing', 'signature-untrusted', 'signature-digest-mismatch', 'attestation-missing'] as const) {
      expect(rolloutRefusalOf(code), code).toEqual({ replay: true, automatic: 'skipped', waiting: 'forget' });
    }
    expect(rolloutRefusalOf('registry-unavailable')).toEqual({ replay: false, automatic: 'error', waiting: 'keep-waiting' });
  });
});

describe('what a refusal does is catalogue data', () => {
  it('every code a rule can return says what it does for each kind of rollout (replayed, automatic meaning, waiting)', () => {
    const ruleCodes: ErrorCode[] = [
      'rollout-generation-conflict', 'current-rollout-mismatch', 'no-current-rollout', 'no-verified-release', 'release-not-found',
      'rollback-target-not-accepted', 'rollback-target-is-current',
    ];
    for (const code of ruleCodes) expect(rolloutRefusalOf(code).replay, code).toBe(true);
    expect(rolloutRefusalOf('rollout-generation-conflict')).toMatchObject({ automatic: 'conflict', waiting: 'keep-waiting', casConflict: true });
    expect(rolloutRefusalOf('invalid-deployment-plan')).toMatchObject({ replay: true, automatic: 'skipped' });
    expect(rolloutRefusalOf('idempotency-key-reused')).toMatchObject({ replay: false, waiting: 'keep-waiting' });
    expect(rolloutRefusalOf('database-unavailable')).toMatchObject({ replay: false, automatic: 'error', waiting: 'forget' });
  });
});

describe('the governance rules (docs/governance.md)', () => {
  const stopped: GovernanceFacts = { ...open, global: { stopTheLine: { active: true, reason: 'incident', by: 'alice', since: open.at - 1 } } };
  const frozen: GovernanceFacts = {
    ...open,
    policy: effectivePromotionPolicy({
      windows: [{ name: 'weekend', kind: 'deny', start: '2025-01-03T16:00', timeZone: 'Europe/Berlin', rrule: 'FREQ=WEEKLY;BYDAY=FR', duration: 'P2DT12H' }],
    }),
  };
  const piped: GovernanceFacts = { ...open, policy: effectivePromotionPolicy({ pipeline: { requires: [{ serviceId: 'svc_staging', soakSeconds: 60 }] } }) };

  it('stop-the-line and a closed window refuse promotions of both kinds; rollbacks and aborts pass', () => {
    for (const governance of [stopped, frozen]) {
      const code = governance === stopped ? 'stop-the-line' : 'promotion-window-closed';
      expect(codeOf(admit(promotion, facts({ governance })))).toBe(code);
      const pushed = { governance, service: service(true, { deployOnPush: true, immutableImageRequired: true }), release: newer, releaseId: newer.id };
      expect(codeOf(admit(automatic, facts(pushed)))).toBe(code);
      expect(admit(rollback, facts({ governance }))).toBeUndefined();
      expect(admit(abort, facts({ governance }))).toBeUndefined();
    }
  });

  it('the pipeline refuses a digest its stage never saw; a promotion whose governance was not read fails closed', () => {
    expect(codeOf(admit(promotion, facts({ governance: piped })))).toBe('pipeline-stage-not-satisfied');
    expect(admit(rollback, facts({ governance: piped }))).toBeUndefined();
    expect(codeOf(admit(promotion, facts({ governance: undefined })))).toBe('internal-error');
  });

  it('runs before the signature rule: a closed window answers without asking the registry', () => {
    const names = admissionRules.map((r) => r.name);
    expect(names.indexOf('promotions-open')).toBeLessThan(names.indexOf('signature-verified'));
    expect(rulesBeforeVerification.map((r) => r.name)).toContain('pipeline');
  });

  it('a governance refusal is not stored (the retry is asked again) and skips an automatic promotion', () => {
    for (const code of ['promotion-window-closed', 'stop-the-line', 'pipeline-stage-not-satisfied'] as const) {
      expect(rolloutRefusalOf(code), code).toEqual({ replay: false, automatic: 'skipped', waiting: 'forget' });
    }
  });
});
