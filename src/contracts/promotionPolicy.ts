/**
 * Project extension (not upstream): `data.promotionPolicy`, who may change a service and when
 * (docs/lifecycle.md "Governance"): the upstream stages a digest must have succeeded and soaked in
 * (`pipeline`), the approvals a promotion needs (`approvals`), the times promotions are closed or
 * open (`windows`), and whether a freeze may be broken (`breakGlass`). Caller-writable like
 * `data.rolloutPolicy`; every member is optional and `effectivePromotionPolicy`
 * (src/domain/governance/policy.ts) fills in the defaults stated here. `promotionPolicyProblems`
 * checks what a schema cannot (a recurrence rule that does not parse, an unknown time zone, …).
 *
 * The global policy (windows for every service, and the stop-the-line switch) lives in the
 * database, not in a service: `GlobalGovernance`.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Name, Timestamp, contractLimits, strictObject } from './common.js';
import { literalUnion } from './literals.js';

/**
 * What a rule is asked about. Promotions of every kind can be governed; returns to a known-good
 * release (rollback, abort, automatic rollback) are never blocked by a window, and an automatic
 * rollback never waits for an approval: it is the server's own safety action.
 */
export const governanceIntents = ['promotion', 'automatic-promotion', 'pipeline-promotion', 'rollback', 'abort', 'automatic-rollback'] as const;
export const TGovernanceIntent = literalUnion(governanceIntents);
export type TGovernanceIntent = Static<typeof TGovernanceIntent>;

/** Free text shown to people (names, reasons): bounded, without control characters or bidirectional overrides. */
const text = (maxLength: number, description: string) => Type.String({ minLength: 1, maxLength, pattern: Name.pattern, description });

/** The intents an approval policy may cover (`appliesTo`). */
export const approvalIntents = ['promotion', 'automatic-promotion', 'pipeline-promotion', 'rollback', 'abort'] as const;
export const TApprovalIntent = literalUnion(approvalIntents);
export type TApprovalIntent = Static<typeof TApprovalIntent>;

export const promotionPolicyDefaults = {
  soakSeconds: 0,
  automaticPromotion: false,
  approvalsAppliesTo: ['promotion', 'automatic-promotion', 'pipeline-promotion'] as readonly TApprovalIntent[],
  requestTtlSeconds: 24 * 3600,
  breakGlassAllowed: false,
  breakGlassMaxSeconds: 3600,
} as const;

export const promotionPolicyLimits = {
  stages: 8,
  soakSeconds: { minimum: 0, maximum: 30 * 24 * 3600 },
  requiredApprovals: { minimum: 1, maximum: 10 },
  approvers: 50,
  requestTtlSeconds: { minimum: 60, maximum: 14 * 24 * 3600 },
  serviceWindows: 32,
  globalWindows: 64,
  windowName: 64,
  descriptionLength: 256,
  rruleLength: 512,
  durationSeconds: { minimum: 1, maximum: 366 * 24 * 3600 },
  durationLength: 32,
  timeZoneLength: 64,
  breakGlassMaxSeconds: { minimum: 60, maximum: 24 * 3600 },
  reasonLength: 512,
} as const;

// Pipelines --------------------------------------------------------------------

export const IPipelineStage = strictObject({
  serviceId: Type.String({ minLength: 1, maxLength: contractLimits.idLength, description: 'the upstream service (stage) the digest must have succeeded in' }),
  soakSeconds: Type.Optional(Type.Integer({
    ...promotionPolicyLimits.soakSeconds,
    description: 'how long the digest must have stayed there, succeeded and not revoked, counted from its success' +
      ` (default ${promotionPolicyDefaults.soakSeconds}: the success suffices)`,
  })),
});
export type IPipelineStage = Static<typeof IPipelineStage>;

export const IPipelinePolicy = strictObject({
  requires: Type.Array(IPipelineStage, {
    minItems: 1,
    maxItems: promotionPolicyLimits.stages,
    description: 'every stage must be satisfied (all of them, in any order) before a digest may be promoted here',
  }),
  automaticPromotion: Type.Optional(strictObject({
    enabled: Type.Boolean({
      description: 'promote a digest here by itself once every stage is satisfied, once per digest (default off)',
    }),
  })),
});
export type IPipelinePolicy = Static<typeof IPipelinePolicy>;

// Approvals --------------------------------------------------------------------

export const IApprover = Type.Object({
  role: Type.Optional(literalUnion(['admin', 'user', 'api'])),
  subject: Type.Optional(text(contractLimits.nameLength, "a principal's `sub`")),
}, {
  additionalProperties: false,
  minProperties: 1,
  description: 'who may approve: anyone of the role, the named subject, or the named subject when it holds the role',
});
export type IApprover = Static<typeof IApprover>;

export const IApprovalPolicy = strictObject({
  required: Type.Integer({ ...promotionPolicyLimits.requiredApprovals, description: 'approvals from distinct principals, never the requester' }),
  approvers: Type.Array(IApprover, { minItems: 1, maxItems: promotionPolicyLimits.approvers }),
  appliesTo: Type.Optional(Type.Array(TApprovalIntent, {
    minItems: 1,
    maxItems: approvalIntents.length,
    uniqueItems: true,
    description: `which operations need the approvals (default: ${promotionPolicyDefaults.approvalsAppliesTo.join(', ')};` +
      ' rollbacks and aborts only when listed; an automatic rollback never waits)',
  })),
  requestTtlSeconds: Type.Optional(Type.Integer({
    ...promotionPolicyLimits.requestTtlSeconds,
    description: `how long a promotion request waits for its approvals before it is void (default ${promotionPolicyDefaults.requestTtlSeconds})`,
  })),
});
export type IApprovalPolicy = Static<typeof IApprovalPolicy>;

// Windows ----------------------------------------------------------------------

export const IPromotionWindow = strictObject({
  name: Type.String({
    minLength: 1,
    maxLength: promotionPolicyLimits.windowName,
    pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$',
    description: 'unique within its policy; refusals name it (letters, digits, `.`, `_`, `-`)',
  }),
  kind: literalUnion(['deny', 'allow']),
  description: Type.Optional(text(promotionPolicyLimits.descriptionLength, 'what the window is for (shown with refusals)')),
  start: Type.String({
    pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2})?$',
    description: 'the first occurrence, as a local date-time in `timeZone` (RFC 5545 DTSTART;TZID), e.g. `2025-01-03T16:00`',
  }),
  timeZone: Type.String({
    minLength: 1,
    maxLength: promotionPolicyLimits.timeZoneLength,
    description: 'an IANA time zone (`Europe/Berlin`, `UTC`): occurrences keep their wall-clock time across daylight-saving changes',
  }),
  rrule: Type.Optional(Type.String({
    minLength: 1,
    maxLength: promotionPolicyLimits.rruleLength,
    description: 'an RFC 5545 RRULE value, e.g. `FREQ=WEEKLY;BYDAY=FR;BYHOUR=16` (FREQ=HOURLY or coarser; UNTIL in UTC);' +
      ' absent: the window occurs once, at `start`',
  })),
  durationSeconds: Type.Optional(Type.Integer({
    ...promotionPolicyLimits.durationSeconds,
    description: 'how long each occurrence lasts, in elapsed seconds (as DTEND − DTSTART would): 60 h is 60 h even across a' +
      ' daylight-saving change. Exactly one of durationSeconds and duration',
  })),
  duration: Type.Optional(Type.String({
    minLength: 2,
    maxLength: promotionPolicyLimits.durationLength,
    description: 'how long each occurrence lasts, as an RFC 5545 DURATION (`P2DT12H`, `PT4H`, `P1W`): days and weeks are calendar' +
      ' days, so Friday 16:00 + P2DT12H ends Monday 04:00 local time whatever the clocks did. Exactly one of durationSeconds and duration',
  })),
});
export type IPromotionWindow = Static<typeof IPromotionWindow>;

// Break-glass ------------------------------------------------------------------

export const IBreakGlassPolicy = strictObject({
  allowed: Type.Boolean({
    description: 'a promotion may pass a closed window with a reason and one approval from another principal (default off)',
  }),
  maxSeconds: Type.Optional(Type.Integer({
    ...promotionPolicyLimits.breakGlassMaxSeconds,
    description: `how long a break-glass grant waits for its approval, and how long it then lasts (default ${promotionPolicyDefaults.breakGlassMaxSeconds})`,
  })),
});
export type IBreakGlassPolicy = Static<typeof IBreakGlassPolicy>;

// The policy -------------------------------------------------------------------

export const IPromotionPolicy = strictObject({
  pipeline: Type.Optional(IPipelinePolicy),
  approvals: Type.Optional(IApprovalPolicy),
  windows: Type.Optional(Type.Array(IPromotionWindow, {
    maxItems: promotionPolicyLimits.serviceWindows,
    description: 'deny windows close promotions; allow windows, if any, are the only times they are open. Rollbacks and aborts pass',
  })),
  breakGlass: Type.Optional(IBreakGlassPolicy),
});
export type IPromotionPolicy = Static<typeof IPromotionPolicy>;

// The global policy (in the database) ------------------------------------------

export const IStopTheLine = strictObject({
  active: Type.Boolean({ description: 'closes every promotion of every service; rollbacks and aborts pass' }),
  reason: Type.Optional(text(promotionPolicyLimits.reasonLength, 'why (required while active)')),
  by: Type.Optional(text(contractLimits.nameLength, 'the subject who set it (required while active)')),
  since: Type.Optional(Type.Integer({
    minimum: Timestamp.minimum,
    maximum: Timestamp.maximum,
    description: 'when it was set, ms since the epoch (required while active)',
  })),
});
export type IStopTheLine = Static<typeof IStopTheLine>;

export const GlobalGovernance = strictObject({
  windows: Type.Optional(Type.Array(IPromotionWindow, {
    maxItems: promotionPolicyLimits.globalWindows,
    description: 'windows for every service, on top of each service\'s own',
  })),
  stopTheLine: Type.Optional(IStopTheLine),
});
export type GlobalGovernance = Static<typeof GlobalGovernance>;
