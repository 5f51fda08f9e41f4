import type { ApprovalReply, ApprovalRequiredAnswer, BreakGlassGrant, PromotionRequest } from './api.js';
import type { CommandArgs } from './args.js';
import type { CommandContext, CommandResult } from './context.js';
import { ExitCode } from './errors.js';
import { listingText } from './listing.js';
import { clip, isoTime, table } from './output.js';
import { approveRequest, breakGlassRequest, grantApproveRequest, grantRequest, promotionRequestsRequest } from './requests.js';

/**
 * Approvals and break-glass (docs/governance.md "Approvals", "Break-glass"): what a promote that
 * needs approvals prints, `requests`, `approve`, and `break-glass request|approve|show`.
 */

type Args<C extends CommandArgs['command']> = Extract<CommandArgs, { command: C }>;

/** The command line that approves a request (another principal runs it). */
export const approveCommand = (serviceId: string, requestId: string): string =>
  `cloudly-release approve --service ${serviceId} --request ${requestId}`;

export interface PendingInput {
  serviceId: string;
  operation: string;
  answer: ApprovalRequiredAnswer;
  replayed: boolean;
  /** --wait was given: say why nothing is followed. */
  wait: boolean;
  idempotencyKey: { key: string, source: string };
}

/**
 * A write answered 202 `approval-required`: nothing was issued, a promotion request was made.
 * Exit 5 (ExitCode.approvalRequired). `--wait` does not wait for approvers (that may take hours):
 * it says so and names the command that follows the rollout once the last approval issued it.
 */
export function pendingApproval ({ serviceId, operation, answer, replayed, wait, idempotencyKey }: PendingInput): CommandResult {
  const r = answer.promotionRequest;
  const lines = [
    `promotion request ${r.requestId} created: ${operation} of release ${r.releaseId} on service ${serviceId} needs ${r.required} ` +
      `approval${r.required === 1 ? '' : 's'} from principals other than the requester (${r.approvals} so far); nothing was issued yet` +
      (replayed ? ' (replayed: this Idempotency-Key had already made it)' : ''),
    `state     pending approval (expires ${isoTime(r.expiresAt)}; the rollout is issued under generation ${r.expectedRolloutGeneration})`,
    `approve   ${approveCommand(serviceId, r.requestId)}`,
    ...(wait
      ? [`not waiting: nothing is issued before the last approval; then follow it with: cloudly-release wait --service ${serviceId}`]
      : []),
  ];
  return {
    exitCode: ExitCode.approvalRequired,
    json: {
      serviceId,
      releaseId: r.releaseId,
      operation,
      state: 'pending-approval',
      promotionRequest: r,
      approveCommand: approveCommand(serviceId, r.requestId),
      replayed,
      idempotencyKey: idempotencyKey.key,
      idempotencyKeySource: idempotencyKey.source,
    },
    text: lines.join('\n'),
  };
}

/** `2/2 (alice, bob)` */
const approvalsText = (r: PromotionRequest): string =>
  `${r.approvals.length}/${r.required}${r.approvals.length > 0 ? ` (${r.approvals.map((a) => a.subject).join(', ')})` : ''}`;

const requestState = (r: PromotionRequest): string =>
  (r.state === 'issued' && r.rolloutId ? `issued (${r.rolloutId})` : r.state === 'void' && r.voidReason ? `void (${r.voidReason})` : r.state);

function requestsTable (requests: PromotionRequest[], wide: boolean): string {
  return table(
    ['REQUEST', 'RELEASE', 'REQUESTER', 'APPROVALS', 'STATE', 'EXPIRES', ...(wide ? ['INTENT', 'GEN', 'CREATED', 'REASON'] : [])],
    requests.map((r) => [
      r.requestId,
      r.releaseId,
      r.requester.subject,
      approvalsText(r),
      requestState(r),
      isoTime(r.expiresAt),
      ...(wide ? [r.intent, String(r.expectedRolloutGeneration), isoTime(r.createdAt), r.reason] : []),
    ])
  );
}

/** `requests --service S`: the service's promotion requests, newest first (the server keeps the last 50). */
export async function promotionRequests (ctx: CommandContext, args: Args<'requests'>): Promise<CommandResult> {
  const { body } = await ctx.client.send<{ promotionRequests: PromotionRequest[] }>(promotionRequestsRequest(args.serviceId));
  const pending = body.promotionRequests.filter((r) => r.state === 'pending');
  const hint = pending.length === 1 && pending[0] ? `\napprove: ${approveCommand(args.serviceId, pending[0].requestId)}` : '';
  return {
    exitCode: ExitCode.ok,
    json: { serviceId: args.serviceId, ...body },
    text: listingText(ctx, {
      ids: body.promotionRequests.map((r) => r.requestId),
      table: (wide) => `${requestsTable(body.promotionRequests, wide)}${hint}`,
      empty: `no promotion requests for service ${args.serviceId}`,
      more: undefined,
    }),
  };
}

/**
 * `approve --service S --request ID`. The approval that completes the quorum issues the rollout:
 * the answer then carries the service, and the text names the rollout and its generation. A refusal
 * (self-approval, not an approver, already approved, a void request, stop-the-line…) is the server's
 * problem document: exit 1 with its detail.
 */
export async function approve (ctx: CommandContext, args: Args<'approve'>): Promise<CommandResult> {
  const { body } = await ctx.client.send<ApprovalReply>(approveRequest(args.serviceId, args.requestId));
  const r = body.promotionRequest;
  const plan = body.service?.data.imageDeployment;
  const head = `approved promotion request ${r.requestId} (release ${r.releaseId}): approvals ${approvalsText(r)}`;
  let text: string;
  if (r.state === 'issued' && plan) {
    text = `${head}\nquorum reached: rollout ${plan.rolloutId} issued, generation ${plan.rolloutGeneration} (release ${plan.releaseId})\n` +
      `follow it: cloudly-release wait --service ${args.serviceId} --rollout-id ${plan.rolloutId}`;
  } else if (r.state === 'issued') {
    text = `${head}\nthe request had already issued rollout ${r.rolloutId ?? '?'}`;
  } else {
    const left = Math.max(0, r.required - r.approvals.length);
    text = `${head}\nstate     ${r.state}: ${left} more approval${left === 1 ? '' : 's'} needed (expires ${isoTime(r.expiresAt)})`;
  }
  return {
    exitCode: ExitCode.ok,
    json: {
      serviceId: args.serviceId,
      promotionRequest: r,
      issued: plan ? { rolloutId: plan.rolloutId, generation: plan.rolloutGeneration, releaseId: plan.releaseId } : null,
    },
    text,
  };
}

/** A grant for people, one `label  value` line each. */
function grantLines (g: BreakGlassGrant): string[] {
  const label = ({ 'awaiting-approval': 'approve by', active: 'until', expired: 'since' } as Record<string, string | undefined>)[g.state];
  const until = g.until === undefined || label === undefined ? '' : ` (${label} ${isoTime(g.until)})`;
  return [
    `grant     ${g.grantId}`,
    `service   ${g.serviceId}`,
    `release   ${g.releaseId}`,
    `state     ${g.state}${until}`,
    `reason    ${clip(g.reason, 200)}`,
    `requested ${isoTime(g.createdAt)} by ${g.requestedBy.subject} (${g.requestedBy.role})`,
    ...(g.approvedBy ? [`approved  ${isoTime(g.approvedBy.at)} by ${g.approvedBy.subject} (${g.approvedBy.role})`] : []),
    ...(g.usedBy ? [`used      ${isoTime(g.usedBy.at)} by rollout ${g.usedBy.rolloutId}`] : []),
  ];
}

const promoteWithGrant = (g: BreakGlassGrant): string =>
  `cloudly-release promote --service ${g.serviceId} --release ${g.releaseId} --break-glass-grant ${g.grantId}`;

/** `break-glass request|approve|show`. */
export async function breakGlass (ctx: CommandContext, args: Args<'break-glass'>): Promise<CommandResult> {
  let grant: BreakGlassGrant;
  let next: string[] = [];
  if (args.action === 'request') {
    grant = (await ctx.client.send<{ grant: BreakGlassGrant }>(breakGlassRequest(args))).body.grant;
    next = [`approve (another principal): cloudly-release break-glass approve --service ${args.serviceId} --grant ${grant.grantId}`];
  } else if (args.action === 'approve') {
    grant = (await ctx.client.send<{ grant: BreakGlassGrant }>(grantApproveRequest(args.serviceId, args.grantId))).body.grant;
    next = grant.state === 'active' ? [`promote   ${promoteWithGrant(grant)}`] : [];
  } else {
    grant = (await ctx.client.send<{ grant: BreakGlassGrant }>(grantRequest(args.serviceId, args.grantId))).body.grant;
    next = grant.state === 'active' ? [`promote   ${promoteWithGrant(grant)}`] : [];
  }
  const head = { request: 'break-glass grant requested', approve: 'break-glass grant approved', show: 'break-glass grant' }[args.action];
  return {
    exitCode: ExitCode.ok,
    json: { serviceId: args.serviceId, action: args.action, grant },
    text: [head, ...grantLines(grant), ...next].join('\n'),
  };
}
