/**
 * The REST shapes the CLI reads, as a client sees them.
 *
 * The CLI is an HTTP client of the control plane and loads none of its code (not even types
 * from src/domain or src/http, which move as the server evolves): it declares here what it
 * reads. The shapes are tolerant — reasons, kinds and states are plain strings, and fields may
 * be added — so a newer server does not break an older CLI. Upstream contract types
 * (src/contracts, published as `./contracts`) are used where the answer embeds them.
 * test/unit/cli/wireShapes.typecheck.ts checks that every server answer fits these types.
 */
import type {
  IImageRelease, IImageRolloutStatus, IImmutableImageDeploymentPlan, IImmutableImageTargetScope, IReleaseSignatureVerdict, IService, ImageReleasePage,
} from '../../contracts/index.js';

export type { IImageRelease, IImmutableImageDeploymentPlan, IReleaseSignatureVerdict, ImageReleasePage };

export interface AutomationHold {
  since: number;
  rolloutId: string;
  by: string;
}

export interface ServiceReply {
  service: IService;
  automationHold?: AutomationHold;
}

/** Counters of a rollout (or of one reporter's share of it). */
export interface ReplicaCounts {
  requiredReplicaCount: number;
  observedReplicaCount: number;
  healthyReplicaCount: number;
  verifiedReplicaCount: number;
  failedReplicaCount: number;
  mismatchReason?: string;
}

/** One `status` event of GET /v1/services/:id/rollout/events. */
export interface StatusEvent extends ReplicaCounts {
  revision: number;
  rolloutId: string;
  rolloutGeneration: number;
  status: string;
  at: number;
}

/** What the rollout counters look like, whether from the rollout view's status or an SSE event. */
export interface RolloutSnapshot extends ReplicaCounts {
  rolloutId: string;
  rolloutGeneration: number;
  status: string;
}

export interface BlockingReason {
  /** progress-deadline-exceeded | node-not-reported | replicas-missing | replica-unhealthy | replica-unverified | replica-not-stable (more may come). */
  kind: string;
  reason: string;
  nodeName?: string;
  deploymentId?: string;
  reporterId?: string;
  missingReplicaCount?: number;
  detail: string;
}

/** A replica must stay running and verified for `windowMs` before it counts. */
export interface ReplicaStability {
  state: string; // stable | not-yet-stable | waiting-for-report
  windowMs: number;
  runningVerifiedSince?: number;
  stableAt?: number;
}

export interface ReplicaDetail {
  nodeName: string;
  deploymentId: string;
  deploymentStatus: string;
  /** healthy | unhealthy | failed */
  health: string;
  /** verified | mismatched | missing | other-rollout */
  verification: string;
  mismatchReason?: string;
  counted: boolean;
  stability?: ReplicaStability;
}

export interface RolloutReporterView extends ReplicaCounts {
  reporterId: string;
  clusterId: string;
  reporterSessionId: string;
  lastSequence: number;
  lastReportAt: number;
  /** When the server received that report (its clock): the evidence age. */
  lastReceivedAt?: number;
  observedGeneration: number;
  nodeNames: string[];
  replicas: ReplicaDetail[];
}

/** The first time a rollout was failed or mismatched; `by`: report | deadline. */
export interface FailureMilestone {
  status: string;
  reason: string;
  at: number;
  by: string;
}

/** The progress deadline's verdict: the rollout became `failed` at `at`. */
export interface DeadlineExceeded {
  at: number;
  reason: string;
  lastProgressAt: number;
  deadlineSeconds: number;
}

/** What a follow-up (automatic rollback, deferred promotion) came to: `issued rollout '…'`, `refused: <code>`, … */
export interface FollowUp {
  at: number;
  outcome: string;
}

/** The current rollout's lifecycle (servers with lifecycle control); every part is optional to the CLI. */
export interface RolloutLifecycle {
  /** The service's rolloutPolicy with the defaults filled in. */
  policy?: {
    progressDeadlineSeconds?: number;
    stabilityWindowSeconds?: number;
    clockToleranceSeconds?: number;
    autoRollback?: { enabled?: boolean, triggers?: string[] };
  };
  lastProgressAt?: number;
  /** While in progress: when it fails unless it progresses first. */
  deadlineAt?: number;
  succeededAt?: number;
  failure?: FailureMilestone;
  deadlineExceeded?: DeadlineExceeded;
  automaticRollback?: FollowUp;
  deferredPromotion?: FollowUp;
  /** A push waiting for this rollout to settle before it promotes automatically. */
  queuedPromotion?: { releaseId: string, tag: string, queuedAt?: number };
}

/** GET /v1/services/:id/rollout */
export interface RolloutView {
  serviceId: string;
  plan?: IImmutableImageDeploymentPlan;
  status?: IImageRolloutStatus;
  /** The status revision (`id` of the SSE events): +1 on every status change. */
  revision: number;
  reporters: RolloutReporterView[];
  blocking: BlockingReason[];
  automationHold?: AutomationHold;
  lifecycle?: RolloutLifecycle;
}

/** Why the server issued a rollout by itself. */
export interface RolloutTrigger {
  /** abort | automatic-rollback | deferred-promotion (more may come) */
  kind: string;
  /** automatic-rollback: failed | mismatched | deadline */
  cause?: string;
  ofRolloutId?: string;
  afterRolloutId?: string;
  reason?: string;
}

/** One entry of GET /v1/services/:id/rollouts; the lifecycle fields come from servers with lifecycle control. */
export interface RolloutHistoryEntry {
  rolloutId: string;
  generation: number;
  mode: string;
  releaseId: string;
  requestedDigest: string;
  digestPinnedImageReference: string;
  rollbackOfRolloutId?: string;
  previous?: { rolloutId: string, releaseId: string, requestedDigest: string };
  targetScope: IImmutableImageTargetScope;
  issuedBy: { subject: string, role: string, type: string };
  reason: string;
  automationHold: string;
  state: string;
  idempotencyKeyHash: string;
  createdAt: number;
  /** in-progress | succeeded | rolled-back | failed | mismatched | superseded | aborted (more may come) */
  outcome?: string;
  succeededAt?: number;
  failedAt?: number;
  failureReason?: string;
  /** report | deadline */
  failedBy?: string;
  /** When the next rollout replaced it, and how (superseded | rolled-back | aborted). */
  endedAt?: number;
  endedBy?: { kind: string, rolloutId: string };
  trigger?: RolloutTrigger;
  [field: string]: unknown;
}

export interface HistoryPage {
  rollouts: RolloutHistoryEntry[];
  nextCursor?: string;
}

/** One service of GET /v1/services (the route is new: the CLI reads it tolerantly). */
export interface ServiceSummary {
  id: string;
  name: string;
  rollout?: ReplicaCounts & {
    rolloutId: string;
    rolloutGeneration: number;
    mode: string;
    releaseId: string;
    requestedDigest: string;
    status: string;
    updatedAt: number;
  };
  automationHold?: AutomationHold;
  [field: string]: unknown;
}

export interface ServicesPage {
  services: ServiceSummary[];
  nextCursor?: string;
}

/** Who asked or approved (governance). */
export interface Principal {
  subject: string;
  role: string;
}

/** One promotion request of GET /v1/services/:id/promotion-requests (docs/governance.md "Approvals"). */
export interface PromotionRequest {
  requestId: string;
  serviceId: string;
  releaseId: string;
  /** promotion | automatic-promotion | pipeline-promotion | rollback | abort */
  intent: string;
  requester: Principal;
  reason: string;
  expectedRolloutGeneration: number;
  createdAt: number;
  expiresAt: number;
  required: number;
  approvals: Array<Principal & { at: number }>;
  /** pending | approved | issued | void (more may come) */
  state: string;
  /** expired | generation-moved */
  voidReason?: string;
  rolloutId?: string;
}

/** The answer to POST …/promotion-requests/:id/approve: `service` when this approval issued the rollout. */
export interface ApprovalReply {
  promotionRequest: PromotionRequest;
  service?: ServiceReply['service'];
}

/**
 * What a promotion that needs approvals answers: 202, a problem document (`code: approval-required`)
 * naming the promotion request it made instead of a rollout.
 */
export interface ApprovalRequiredAnswer {
  code: string;
  detail?: string;
  promotionRequest: {
    requestId: string;
    serviceId: string;
    releaseId: string;
    expectedRolloutGeneration: number;
    required: number;
    approvals: number;
    expiresAt: number;
  };
}

/** GET /v1/services/:id/break-glass/:grantId (docs/governance.md "Break-glass"). */
export interface BreakGlassGrant {
  grantId: string;
  serviceId: string;
  releaseId: string;
  reason: string;
  requestedBy: Principal;
  createdAt: number;
  approvedBy?: Principal & { at: number };
  /** awaiting-approval | active | used | expired */
  state: string;
  until?: number;
  usedBy?: { rolloutId: string, at: number };
}

/** One window of a governance policy; the CLI shows these fields and passes the rest back untouched. */
export interface PromotionWindow {
  name: string;
  kind: string;
  start: string;
  timeZone: string;
  rrule?: string;
  durationSeconds?: number;
  /** An RFC 5545 duration (`P2DT12H`), instead of durationSeconds. */
  duration?: string;
  description?: string;
  [field: string]: unknown;
}

export interface StopTheLine {
  active: boolean;
  reason?: string;
  by?: string;
  since?: number;
}

/** GET /v1/governance (and what PUT answers). */
export interface GovernanceReply {
  governance: {
    windows?: PromotionWindow[];
    stopTheLine?: StopTheLine;
    [field: string]: unknown;
  };
  updatedAt?: number;
  updatedBy?: string;
}

/** One upstream stage's verdict in GET /v1/services/:id/pipeline. */
export interface StageVerdict {
  serviceId: string;
  soakSeconds: number;
  satisfied: boolean;
  /** never-promoted | not-succeeded | not-soaked | failed | revoked | rolled-back */
  missing?: string;
  rolloutId?: string;
  succeededAt?: number;
  soakedAt?: number;
  remainingSeconds?: number;
  /** failed: why */
  reason?: string;
}

export interface PipelineReply {
  serviceId: string;
  digest: string | null;
  allowed: boolean;
  eligibleAt?: number;
  stages: StageVerdict[];
}
