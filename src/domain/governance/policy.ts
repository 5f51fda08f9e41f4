import {
  promotionPolicyDefaults,
  type GlobalGovernance, type IApprovalPolicy, type IApprover, type IPromotionPolicy, type IPromotionWindow, type TApprovalIntent,
} from '../../contracts/promotionPolicy.js';
import type { Problem } from '../../errors.js';
import { compileWindow, type WindowScope } from './recurrence.js';

/**
 * A service's promotion policy with every default filled in, and the checks of a policy that its
 * schema cannot express. Pure; the contract is src/contracts/promotionPolicy.ts.
 */

export interface EffectiveApprovals {
  required: number;
  approvers: IApprover[];
  appliesTo: TApprovalIntent[];
  requestTtlSeconds: number;
}

export interface EffectivePromotionPolicy {
  pipeline?: { requires: Array<{ serviceId: string, soakSeconds: number }>, automaticPromotion: boolean };
  approvals?: EffectiveApprovals;
  windows: IPromotionWindow[];
  breakGlass: { allowed: boolean, maxSeconds: number };
}

export function effectiveApprovals (approvals: IApprovalPolicy): EffectiveApprovals {
  return {
    required: approvals.required,
    approvers: [...approvals.approvers],
    appliesTo: [...(approvals.appliesTo ?? promotionPolicyDefaults.approvalsAppliesTo)],
    requestTtlSeconds: approvals.requestTtlSeconds ?? promotionPolicyDefaults.requestTtlSeconds,
  };
}

export function effectivePromotionPolicy (policy: IPromotionPolicy | undefined): EffectivePromotionPolicy {
  const pipeline = policy?.pipeline;
  return {
    ...(pipeline === undefined
      ? {}
      : {
          pipeline: {
            requires: pipeline.requires.map((s) => ({ serviceId: s.serviceId, soakSeconds: s.soakSeconds ?? promotionPolicyDefaults.soakSeconds })),
            automaticPromotion: pipeline.automaticPromotion?.enabled ?? promotionPolicyDefaults.automaticPromotion,
          },
        }),
    ...(policy?.approvals === undefined ? {} : { approvals: effectiveApprovals(policy.approvals) }),
    windows: [...(policy?.windows ?? [])],
    breakGlass: {
      allowed: policy?.breakGlass?.allowed ?? promotionPolicyDefaults.breakGlassAllowed,
      maxSeconds: policy?.breakGlass?.maxSeconds ?? promotionPolicyDefaults.breakGlassMaxSeconds,
    },
  };
}

// Checks the schema cannot express ---------------------------------------------

/** Each window compiles (its rule parses and occurs, its zone exists, its length is positive), and names are unique. */
export function windowProblems (windows: readonly IPromotionWindow[] | undefined, scope: WindowScope, fieldPath: string): Problem[] {
  const problems: Problem[] = [];
  const seen = new Set<string>();
  (windows ?? []).forEach((window, i) => {
    const field = `${fieldPath}/${i}`;
    const compiled = compileWindow(window, scope, field);
    if (!compiled.ok) problems.push(...compiled.problems);
    if (seen.has(window.name)) problems.push({ field: `${field}/name`, message: `another window is named '${window.name}': names must be unique` });
    seen.add(window.name);
  });
  return problems;
}

const approverKey = (a: IApprover): string => JSON.stringify([a.role ?? null, a.subject ?? null]);

function approvalProblems (approvals: IApprovalPolicy | undefined, fieldPath: string): Problem[] {
  if (approvals === undefined) return [];
  const problems: Problem[] = [];
  const seen = new Set<string>();
  approvals.approvers.forEach((approver, i) => {
    if (seen.has(approverKey(approver))) problems.push({ field: `${fieldPath}/approvers/${i}`, message: 'is listed twice' });
    seen.add(approverKey(approver));
  });
  // A role admits any number of principals; named subjects only themselves.
  if (approvals.approvers.every((a) => a.subject !== undefined)) {
    const subjects = new Set(approvals.approvers.map((a) => a.subject)).size;
    if (approvals.required > subjects) {
      problems.push({
        field: `${fieldPath}/required`,
        message: `needs ${approvals.required} approvals from distinct principals but only ${subjects} ${subjects === 1 ? 'subject is' : 'subjects are'} listed`,
      });
    }
  }
  return problems;
}

/**
 * Problems of a policy the schema cannot see, with JSON pointers under `fieldPath` (e.g.
 * `/body/serviceData/promotionPolicy`). `serviceId`, when known, is the service the policy is
 * for: it cannot be its own stage.
 */
export function promotionPolicyProblems (policy: IPromotionPolicy | undefined, fieldPath: string, serviceId?: string): Problem[] {
  if (policy === undefined) return [];
  const problems: Problem[] = [];
  const stages = new Set<string>();
  (policy.pipeline?.requires ?? []).forEach((stage, i) => {
    const field = `${fieldPath}/pipeline/requires/${i}/serviceId`;
    if (stage.serviceId === serviceId) problems.push({ field, message: 'a service cannot be its own upstream stage' });
    if (stages.has(stage.serviceId)) problems.push({ field, message: 'is listed twice' });
    stages.add(stage.serviceId);
  });
  problems.push(...approvalProblems(policy.approvals, `${fieldPath}/approvals`));
  problems.push(...windowProblems(policy.windows, 'service', `${fieldPath}/windows`));
  return problems;
}

/** Problems of the global policy: its windows, and a stop-the-line that is on must say why, who and since when. */
export function globalGovernanceProblems (governance: GlobalGovernance, fieldPath: string): Problem[] {
  const problems = windowProblems(governance.windows, 'global', `${fieldPath}/windows`);
  const stop = governance.stopTheLine;
  if (stop?.active === true) {
    for (const member of ['reason', 'by', 'since'] as const) {
      if (stop[member] === undefined) problems.push({ field: `${fieldPath}/stopTheLine/${member}`, message: 'is required while stop-the-line is active' });
    }
  }
  return problems;
}
