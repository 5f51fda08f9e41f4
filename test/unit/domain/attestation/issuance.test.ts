import { describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../../src/contracts/index.js';
import {
  driftOf, requiredReplicaEvidence, runtimeVerificationStatement, signStatement, verifyEnvelope,
} from '../../../../src/domain/attestation/index.js';
import type { ReportRecord } from '../../../../src/domain/reports.js';
import type { ReplicaDetail } from '../../../../src/domain/rolloutStatus.js';
import { samplePlan, testSigner } from '../../../support/attestations.js';
import { verifiedReplica } from '../../../support/reports.js';

/**
 * What an attestation is made from (src/domain/attestation/issuance.ts): the required replicas'
 * evidence from a rollout's report records — complete, or nothing (fail closed) — and what a drift shows.
 */

const plan: IImmutableImageDeploymentPlan = samplePlan();
const signer = testSigner('ed25519');

const detail = (nodeName: string, i: number, overrides: Partial<ReplicaDetail> = {}): ReplicaDetail => ({
  nodeName,
  deploymentId: `${nodeName}-task-${i}`,
  deploymentStatus: 'running',
  health: 'healthy',
  verification: 'verified',
  counted: true,
  runningSince: 1_000,
  verifiedSince: 2_000 + i,
  runningStable: true,
  stable: true,
  ...overrides,
});

/** One reporter's record of every target node × 2 replicas, verified; `change` alters one replica. */
function record (change: (d: ReplicaDetail, dep: Record<string, any>) => void = () => {}): ReportRecord {
  const replicas: ReplicaDetail[] = [];
  const deployments: Array<Record<string, any>> = [];
  for (const node of plan.targetScope.targetNodeNames) {
    for (const i of [0, 1]) {
      const d = detail(node, i);
      const dep = verifiedReplica(plan, 'svc_demo-shop', node, i, { deployment: { slot: i + 1 } });
      change(d, dep);
      replicas.push(d);
      deployments.push(dep);
    }
  }
  return {
    id: `rollout:${plan.rolloutId}:c1/coreflow`,
    serviceId: 'svc_demo-shop',
    rolloutId: plan.rolloutId,
    reporterId: 'c1/coreflow',
    clusterId: 'c1',
    version: 3,
    position: { sessionId: 'session-1', sequence: 3, reportedAt: 5_000, receivedAt: 5_001 },
    retiredSessions: [],
    nodeNames: [],
    replicas,
    deployments: deployments as ReportRecord['deployments'],
  };
}

describe('the evidence of a runtime verification', () => {
  it('takes every required replica, verified and stable, with its reporter\'s raw evidence; the statement verifies', async () => {
    const replicas = requiredReplicaEvidence(plan, [record()]);
    expect(replicas).toHaveLength(plan.targetScope.requiredReplicaCount);
    expect(replicas?.[0]).toMatchObject({ nodeName: 'node-a', slot: 1, reporterId: 'c1/coreflow', reporterSessionId: 'session-1', verifiedSince: 2_000 });
    const statement = runtimeVerificationStatement({
      service: { id: 'svc_demo-shop', name: 'demo-shop' },
      plan,
      outcome: 'succeeded',
      rolloutPolicy: {},
      trustPolicy: undefined,
      replicas: replicas!,
      verificationSummaryDigest: null,
      verifiedAt: 9_000,
      previous: null,
    });
    const signed = await signStatement(statement, signer.signer);
    expect(verifyEnvelope(signed.envelope, { keys: signer.trusted, expectedDigest: plan.requestedDigest }).ok).toBe(true);
  });

  it.each([
    ['a replica not stable yet', (d: ReplicaDetail) => { if (d.deploymentId === 'node-b-task-1') d.stable = false; }],
    ['a replica mismatched', (d: ReplicaDetail) => { if (d.deploymentId === 'node-c-task-0') d.verification = 'mismatched'; }],
    ['a replica not counted', (d: ReplicaDetail) => { if (d.deploymentId === 'node-a-task-0') d.counted = false; }],
    ['a replica without verified raw evidence', (d: ReplicaDetail, dep: Record<string, any>) => {
      if (d.deploymentId === 'node-a-task-1') dep['runtimeImageEvidence'] = { ...dep['runtimeImageEvidence'], verificationStatus: 'pending' };
    }],
  ])('is nothing (fail closed) with %s', (_, change) => {
    expect(requiredReplicaEvidence(plan, [record(change)])).toBeUndefined();
  });

  it('is nothing without records, or with another rollout\'s', () => {
    expect(requiredReplicaEvidence(plan, [])).toBeUndefined();
    expect(requiredReplicaEvidence(plan, [{ ...record(), rolloutId: 'ro_other' }])).toBeUndefined();
  });
});

describe('a drift', () => {
  it('is none while every replica verifies', () => {
    expect(driftOf(plan, [record()])).toBeUndefined();
  });

  it('names a mismatched replica first, with what its reporter stated', () => {
    const other = `${plan.digestPinnedImageReference.split('@')[0]}@sha256:${'e'.repeat(64)}`;
    const drifted = driftOf(plan, [record((d, dep) => {
      if (d.deploymentId === 'node-a-task-0') Object.assign(d, { health: 'failed', deploymentStatus: 'failed' });
      if (d.deploymentId === 'node-b-task-1') {
        Object.assign(d, { verification: 'mismatched', mismatchReason: 'pulled-digest-mismatch' });
        dep['runtimeImageEvidence'] = { ...dep['runtimeImageEvidence'], repoDigests: [other] };
      }
    })]);
    expect(drifted?.reason).toMatchObject({ kind: 'replica-mismatched', mismatchReason: 'pulled-digest-mismatch' });
    expect(drifted?.evidence.map((e) => [e.deploymentId, e.state])).toEqual([['node-a-task-0', 'failed'], ['node-b-task-1', 'mismatched']]);
    expect(drifted?.evidence[1]).toMatchObject({ repoDigests: [other], observedAt: 5_001, reporter: { id: 'c1/coreflow', sessionId: 'session-1' } });
  });

  it('is a failed replica when none mismatches', () => {
    const drifted = driftOf(plan, [record((d) => { if (d.deploymentId === 'node-c-task-1') d.health = 'failed'; })]);
    expect(drifted?.reason.kind).toBe('replica-failed');
  });
});
