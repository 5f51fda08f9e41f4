import { createHash } from 'node:crypto';
import type { IImmutableImageDeploymentPlan } from '../../src/contracts/index.js';

/** A replica with complete, correct runtime evidence for the plan (what an honest Coreflow sends). */
export function verifiedReplica (plan: IImmutableImageDeploymentPlan, serviceId: string, nodeName: string, index: number, overrides: {
  status?: string, evidence?: Record<string, unknown> | null, deployment?: Record<string, unknown>
} = {}): Record<string, unknown> {
  const evidence = {
    verificationStatus: 'verified',
    rolloutId: plan.rolloutId,
    rolloutGeneration: plan.rolloutGeneration,
    expectedDigest: plan.requestedDigest,
    serviceImageReference: plan.digestPinnedImageReference,
    taskImageReference: plan.digestPinnedImageReference,
    taskReportedDigest: plan.requestedDigest,
    containerImageId: `sha256:${createHash('sha256').update(`${nodeName}/${index}`).digest('hex')}`,
    containerConfigImageReference: plan.digestPinnedImageReference,
    resolvedDigest: plan.requestedDigest,
    repoDigests: [plan.digestPinnedImageReference],
    evidenceSource: 'local-container-inspect',
    observedAt: Date.now(),
    ...(overrides.evidence ?? {}),
  };
  return {
    id: `${nodeName}-task-${index}`,
    serviceId,
    nodeName,
    status: overrides.status ?? 'running',
    deploymentLog: [],
    rolloutId: plan.rolloutId,
    rolloutGeneration: plan.rolloutGeneration,
    ...(overrides.evidence === null ? {} : { runtimeImageEvidence: evidence }),
    ...(overrides.deployment ?? {}),
  };
}

export interface ReportOptions {
  session?: string;
  sequence: number;
  nodeNames: string[];
  deployments: Record<string, unknown>[];
  rolloutId?: string;
  rolloutGeneration?: number;
  reportedAt?: number;
  envelope?: Record<string, unknown> | null;
}

/** A snapshot report body (REST; the TypedRequest request minus `identity`). */
export function reportBody (plan: IImmutableImageDeploymentPlan, serviceId: string, opts: ReportOptions): Record<string, unknown> {
  return {
    serviceId,
    deployments: opts.deployments,
    reporterNodeNames: opts.nodeNames,
    ...(opts.envelope === null
      ? {}
      : {
          immutableReport: {
            rolloutId: opts.rolloutId ?? plan.rolloutId,
            rolloutGeneration: opts.rolloutGeneration ?? plan.rolloutGeneration,
            reporterSessionId: opts.session ?? `session-${opts.nodeNames[0] ?? 'none'}`,
            reportSequence: opts.sequence,
            reporterCapabilities: { immutableImageDeploymentVersion: 1 },
            reporterNodeIds: opts.nodeNames.map((n) => `id-${n}`),
            reporterNodeNames: opts.nodeNames,
            ...(opts.envelope ?? {}),
          },
        }),
    reportedAt: opts.reportedAt ?? Date.now(),
  };
}

/** Every replica of every node, verified. */
export function fullReplicas (plan: IImmutableImageDeploymentPlan, serviceId: string, nodeNames: string[]): Record<string, unknown>[] {
  return nodeNames.flatMap((node) => Array.from({ length: plan.targetScope.replicasPerNode }, (_, i) => verifiedReplica(plan, serviceId, node, i)));
}

/** `reportBody`, `verifiedReplica` and `fullReplicas` bound to one plan and service. */
export function reportsFor (plan: IImmutableImageDeploymentPlan, serviceId: string) {
  return {
    report: (opts: ReportOptions) => reportBody(plan, serviceId, opts),
    replica: (nodeName: string, index: number, overrides?: Parameters<typeof verifiedReplica>[4]) =>
      verifiedReplica(plan, serviceId, nodeName, index, overrides),
    full: (nodeNames: string[]) => fullReplicas(plan, serviceId, nodeNames),
  };
}

/** The part of test/support/fixtures.ts `Caller` a report needs. */
export interface ReportCaller {
  inject(
    opts: { method: string, url: string, headers?: Record<string, string>, payload?: unknown },
  ): Promise<{ statusCode: number, body: string, json(): any }>;
}

/**
 * Reports every replica of these nodes running and verified for the plan, as their cluster's
 * Coreflow (a `cluster` token of that cluster): with the fixtures' stability window of 0, a
 * rollout whose target nodes these are succeeds. Throws unless answered 200.
 */
export async function reportVerified (
  app: ReportCaller, clusterToken: string, plan: IImmutableImageDeploymentPlan, serviceId: string, nodeNames: string[], sequence = 1
): Promise<{ status: Record<string, unknown> }> {
  const payload = reportBody(plan, serviceId, { sequence, nodeNames, deployments: fullReplicas(plan, serviceId, nodeNames) });
  const res = await app.inject({ method: 'POST', url: '/v1/deployment-snapshots', headers: { authorization: `Bearer ${clusterToken}` }, payload });
  if (res.statusCode !== 200) throw new Error(`report of ${nodeNames.join(',')}: ${res.statusCode} ${res.body}`);
  return res.json();
}
