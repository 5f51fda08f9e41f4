import { createHash } from 'node:crypto';
import {
  buildDigestPinnedImageReference,
  type IDeployment, type IImmutableImageDeploymentPlan, type IRuntimeImageEvidence, type TSha256Digest,
} from '../contracts/index.js';

/**
 * One simulated Docker Swarm task per replica slot, and the evidence Coreflow would take
 * from Docker for it. A task appears as `starting` after a random delay; until its
 * container exists there is nothing to inspect, so its evidence is the upstream `pending`
 * shape read from the task spec. Later it is `running` (or `failed`), and the evidence
 * comes from inspecting the container and its local image (`local-container-inspect`).
 */

/** What a switch does to the first replica of a node. */
export type Fault = 'mismatch' | 'fail';
export type Phase = 'absent' | 'starting' | 'running' | 'failed';

export interface ReplicaScript {
  nodeName: string;
  /** Swarm task slot, 1-based. */
  slot: number;
  fault?: Fault;
  /** Milliseconds after the agent started: the task is scheduled and starting. */
  startsAt: number;
  /** Milliseconds after the agent started: the container runs (or has failed). */
  settlesAt: number;
}

/** Random per-replica delays in units of the report interval, so the grid fills in over a few intervals. */
export function scriptReplicas (opts: {
  nodeNames: string[]
  replicasPerNode: number
  faults: ReadonlyMap<string, Fault>
  intervalMs: number
  random?: () => number
}): ReplicaScript[] {
  const random = opts.random ?? Math.random;
  return opts.nodeNames.flatMap((nodeName) => Array.from({ length: opts.replicasPerNode }, (_, i) => {
    const startsAt = Math.round(random() * opts.intervalMs);
    const fault = i === 0 ? opts.faults.get(nodeName) : undefined;
    return {
      nodeName,
      slot: i + 1,
      ...(fault ? { fault } : {}),
      startsAt,
      settlesAt: startsAt + Math.round(opts.intervalMs * (0.5 + random() * 1.5)),
    };
  }));
}

export function phaseAt (script: ReplicaScript, elapsedMs: number): Phase {
  if (elapsedMs < script.startsAt) return 'absent';
  if (elapsedMs < script.settlesAt) return 'starting';
  return script.fault === 'fail' ? 'failed' : 'running';
}

export const isSettled = (phase: Phase): boolean => phase === 'running' || phase === 'failed';

const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Docker node ids are opaque; derived from the name so that every run reports the same one. */
export const nodeIdOf = (nodeName: string): string => sha256Hex(`node:${nodeName}`).slice(0, 25);

/** Before the container exists: what the task spec says, nothing inspected. */
function pendingEvidence (plan: IImmutableImageDeploymentPlan, observedAt: number): IRuntimeImageEvidence {
  return {
    verificationStatus: 'pending',
    rolloutId: plan.rolloutId,
    rolloutGeneration: plan.rolloutGeneration,
    expectedDigest: plan.requestedDigest,
    serviceImageReference: plan.digestPinnedImageReference,
    taskImageReference: plan.digestPinnedImageReference,
    evidenceSource: 'task-spec',
    observedAt,
  };
}

/**
 * After `docker inspect` of the container and its image. Swarm was told the planned
 * reference (service and task spec); `runningDigest` is what the engine actually pulled.
 * The image id is the config digest, the same for one image on every node.
 */
function inspectedEvidence (plan: IImmutableImageDeploymentPlan, runningDigest: TSha256Digest, observedAt: number): IRuntimeImageEvidence {
  const facts = {
    rolloutId: plan.rolloutId,
    rolloutGeneration: plan.rolloutGeneration,
    expectedDigest: plan.requestedDigest,
    serviceImageReference: plan.digestPinnedImageReference,
    taskImageReference: plan.digestPinnedImageReference,
    taskReportedDigest: runningDigest,
    containerImageId: `sha256:${sha256Hex(`config:${runningDigest}`)}`,
    containerConfigImageReference: plan.digestPinnedImageReference,
    resolvedDigest: runningDigest,
    repoDigests: [buildDigestPinnedImageReference(plan.registryHost, plan.repository, runningDigest)],
    evidenceSource: 'local-container-inspect' as const,
    observedAt,
  };
  // Coreflow's own verdict; the server recomputes it from the facts above and never reads it.
  return runningDigest === plan.requestedDigest
    ? { ...facts, verificationStatus: 'verified' }
    : { ...facts, verificationStatus: 'mismatched', mismatchReason: 'pulled-digest-mismatch' };
}

const LOG_OF: Record<Exclude<Phase, 'absent'>, string[]> = {
  starting: ['task scheduled', 'pulling image'],
  running: ['task scheduled', 'image pulled', 'container started'],
  failed: ['task scheduled', 'image pulled', 'container started', 'task: non-zero exit (1)'],
};

/** The deployment (Swarm task) Coreflow reports for a replica in `phase` (not `absent`). */
export interface DeploymentInput {
  plan: IImmutableImageDeploymentPlan;
  serviceId: string;
  script: ReplicaScript;
  phase: Exclude<Phase, 'absent'>;
  rogueDigest: TSha256Digest;
  /** When the agent started (the script's times are relative to it). */
  startedAt: number;
}

export function deploymentOf (opts: DeploymentInput): IDeployment {
  const { plan, script, phase } = opts;
  const now = Date.now();
  const taskId = `${script.nodeName}.${script.slot}.g${plan.rolloutGeneration}`;
  const runningDigest = script.fault === 'mismatch' ? opts.rogueDigest : plan.requestedDigest;
  return {
    id: taskId,
    serviceId: opts.serviceId,
    nodeName: script.nodeName,
    nodeId: nodeIdOf(script.nodeName),
    slot: script.slot,
    desiredState: phase === 'failed' ? 'shutdown' : 'running',
    rolloutId: plan.rolloutId,
    rolloutGeneration: plan.rolloutGeneration,
    deploymentLog: LOG_OF[phase],
    status: phase,
    ...(phase === 'starting'
      ? { runtimeImageEvidence: pendingEvidence(plan, now) }
      : {
          containerId: sha256Hex(`container:${plan.rolloutId}:${taskId}`).slice(0, 12),
          deployedAt: opts.startedAt + script.settlesAt,
          runtimeImageEvidence: inspectedEvidence(plan, runningDigest, now),
        }),
  };
}
