import type { ApprovalRequiredAnswer, IImmutableImageDeploymentPlan, RolloutHistoryEntry, ServiceReply } from './api.js';
import { pendingApproval } from './approvals.js';
import type { FollowSettings, IssueArgs } from './args.js';
import type { CommandContext, CommandResult } from './context.js';
import { ApiError, CliError, ExitCode } from './errors.js';
import { followRollout } from './follow.js';
import { findRollout } from './history.js';
import type { ApiResponse } from './http.js';
import { idempotencyKeyFor, idempotencyKeyHash, reasonFor, type IdempotencyKey, type KeyInput } from './idempotency.js';
import { shortDigest, waitText } from './output.js';
import {
  abortRequest, promoteRequest, rollbackRequest, serviceRequest, type ApiRequest, type IssueInput,
} from './requests.js';
import { waitExitCode } from './waitResult.js';

/**
 * promote, rollback and abort: the writes. Each is the same five steps —
 *
 * 1. `chooseKey`: the Idempotency-Key (flag, CI job attempt, else random), said on stderr;
 * 2. `readExpectations`: the compare-and-swap values the caller did not give, read from the service;
 * 3. `send` (with `replayEarlierAttempt` when the key already served an earlier generation);
 * 4. `issuedOf`: what was issued, as a document and a line;
 * 5. with `--wait`, `followIssued`: follow the rollout just issued.
 */
export async function issue (ctx: CommandContext, args: IssueArgs): Promise<CommandResult> {
  const keyInput: KeyInput = {
    serviceId: args.serviceId,
    operation: args.command,
    ...('releaseId' in args ? { releaseId: args.releaseId } : {}),
    ...(args.breakGlassGrant ? { breakGlassGrant: args.breakGlassGrant } : {}),
  };
  const key = chooseKey(ctx, keyInput, args.idempotencyKey);
  const reason = reasonFor(keyInput, key, args.reason);
  const expected = await readExpectations(ctx, args);
  const { response, expectations } = await send(ctx, { args, key, reason, expected });
  const replayed = response.headers.get('idempotent-replayed') === 'true';
  if (response.status === 202) {
    // 202 approval-required: a promotion request instead of a rollout (docs/governance.md "Approvals").
    const answer = response.body as unknown as ApprovalRequiredAnswer;
    return pendingApproval({ serviceId: args.serviceId, operation: args.command, answer, replayed, wait: args.wait !== undefined, idempotencyKey: key });
  }
  const plan = response.body.service.data.imageDeployment;
  if (!plan) {
    throw new CliError({ exitCode: ExitCode.unreachable, code: 'bad-response', message: `${args.command} answered without a deployment plan` });
  }
  const issued = issuedOf({ args, plan, key, replayed, expectations });
  if (!args.wait) return { exitCode: ExitCode.ok, json: issued.json, text: issued.text };
  return await followIssued(ctx, { args, plan, issued, wait: args.wait });
}

function chooseKey (ctx: CommandContext, input: KeyInput, flag: string | undefined): IdempotencyKey {
  const key = idempotencyKeyFor(input, ctx.env, flag);
  if (key.source === 'random') {
    ctx.log('no CI job detected (GitHub Actions, GitLab CI, Buildkite, Jenkins, CLOUDLY_RUN_ID): using a random Idempotency-Key; ' +
      'running this command again will issue another rollout');
  } else {
    ctx.log(`Idempotency-Key ${key.key} (${key.source === 'flag' ? '--idempotency-key' : `from ${key.run?.description ?? key.source}`})`);
  }
  return key;
}

/** The compare-and-swap values of the request, and whether the CLI read them itself. */
interface Expectations {
  generation: number;
  rolloutId?: string | undefined;
  /** Read here (not given): only then may a key-reused answer be resolved by replaying. */
  readGeneration: boolean;
  readRolloutId: boolean;
}

/** Rollback and abort act on the current rollout; promote names it only when given. */
const needsCurrentRollout = (args: IssueArgs): boolean => args.command !== 'promote';

async function readExpectations (ctx: CommandContext, args: IssueArgs): Promise<Expectations> {
  const readGeneration = args.expectGeneration === undefined;
  const readRolloutId = needsCurrentRollout(args) && args.expectRolloutId === undefined;
  const given: Expectations = { generation: args.expectGeneration ?? 0, rolloutId: args.expectRolloutId, readGeneration, readRolloutId };
  if (!readGeneration && !readRolloutId) return given;
  const { body } = await ctx.client.send<ServiceReply>(serviceRequest(args.serviceId));
  const plan = body.service.data.imageDeployment;
  if (readRolloutId && !plan) {
    throw new CliError({
      exitCode: ExitCode.refused,
      code: 'no-current-rollout',
      message: `no-current-rollout: service ${args.serviceId} has no rollout to ${args.command === 'abort' ? 'abort' : 'roll back'}`,
      details: { currentGeneration: 0, currentRolloutId: null },
    });
  }
  ctx.log(`service ${args.serviceId} is at generation ${plan?.rolloutGeneration ?? 0}${plan ? ` (rollout ${plan.rolloutId}, release ${plan.releaseId})` : ''}`);
  return {
    ...given,
    ...(readGeneration ? { generation: plan?.rolloutGeneration ?? 0 } : {}),
    ...(readRolloutId ? { rolloutId: plan?.rolloutId } : {}),
  };
}

/** The request of this command with these expectations. */
function requestOf (args: IssueArgs, input: IssueInput): ApiRequest {
  switch (args.command) {
    case 'promote': return promoteRequest({ ...input, releaseId: args.releaseId, breakGlassGrant: args.breakGlassGrant });
    case 'rollback': return rollbackRequest({ ...input, releaseId: args.releaseId });
    case 'abort': return abortRequest(input);
  }
}

interface SendInput {
  args: IssueArgs;
  key: IdempotencyKey;
  reason: string;
  expected: Expectations;
}

async function send (ctx: CommandContext, input: SendInput): Promise<{ response: ApiResponse<ServiceReply>, expectations: Expectations }> {
  const { args, key, reason } = input;
  const attempt = async (e: Expectations): Promise<ApiResponse<ServiceReply>> => await ctx.client.send<ServiceReply>(requestOf(args, {
    serviceId: args.serviceId, idempotencyKey: key.key, expectedGeneration: e.generation, expectedRolloutId: e.rolloutId, reason,
  }));
  let expectations = input.expected;
  try {
    try {
      return { response: await attempt(expectations), expectations };
    } catch (err) {
      const earlier = await replayEarlierAttempt(ctx, { err, args, key, expectations });
      expectations = earlier;
      return { response: await attempt(expectations), expectations };
    }
  } catch (err) {
    if (err instanceof ApiError) throw explainRefusal({ err, op: args.command, expectations });
    throw err;
  }
}

/**
 * The same command ran before with this key (a re-run of the step in the same job attempt) when
 * the service was at an earlier generation: the server keeps that request's outcome under the
 * key. Find the rollout it issued (by the key's hash in the history) and return that request's
 * expectations, which replay the stored outcome. Only when the expectations were read here,
 * never when the caller gave them; anything else rethrows `err`.
 */
async function replayEarlierAttempt (
  ctx: CommandContext,
  { err, args, key, expectations }: { err: unknown, args: IssueArgs, key: IdempotencyKey, expectations: Expectations }
): Promise<Expectations> {
  if (!(err instanceof ApiError && err.code === 'idempotency-key-reused' && expectations.readGeneration)) throw err;
  const hash = idempotencyKeyHash(args.serviceId, key.key);
  const entry = await findRollout({ client: ctx.client, serviceId: args.serviceId, predicate: (e) => e.idempotencyKeyHash === hash });
  if (!entry || !isEarlierAttempt(entry, args)) throw err;
  ctx.log(`this Idempotency-Key already issued rollout ${entry.rolloutId} (generation ${entry.generation}): asking for its stored outcome`);
  return {
    ...expectations,
    generation: entry.generation - 1,
    ...(expectations.readRolloutId ? { rolloutId: entry.rollbackOfRolloutId } : {}),
  };
}

/** Whether a history entry is what this command would have issued (same release, same kind of plan). */
function isEarlierAttempt (entry: RolloutHistoryEntry, args: IssueArgs): boolean {
  switch (args.command) {
    case 'promote': return entry.releaseId === args.releaseId && entry.mode !== 'rollback';
    case 'rollback': return entry.releaseId === args.releaseId && entry.mode === 'rollback';
    // An abort is a rollback the history names so (a manual rollback with this key would be another request).
    case 'abort': return entry.mode === 'rollback' && (entry.trigger === undefined || entry.trigger.kind === 'abort');
  }
}

/** A refusal said so that a CI log explains what to do. */
function explainRefusal ({ err, op, expectations }: { err: ApiError, op: IssueArgs['command'], expectations: Expectations }): ApiError {
  const p = err.problem;
  const current = `generation ${String(p['currentGeneration'] ?? '?')}, current rollout ${String(p['currentRolloutId'] ?? 'none')}`;
  const rerun = `Not retried: another rollout happened in between; look at it (cloudly-release status) and run ${op} again to act on top of it`;
  let message: string;
  switch (err.code) {
    case 'rollout-generation-conflict':
      message = `rollout-generation-conflict: expected generation ${expectations.generation} but the service is at ${current}. ${rerun}`;
      break;
    case 'current-rollout-mismatch':
      message = `current-rollout-mismatch: expected current rollout ${expectations.rolloutId ?? '?'} but the service is at ${current}. ${rerun}`;
      break;
    case 'idempotency-key-reused':
      message = `idempotency-key-reused: this Idempotency-Key was already used for a different ${op} request of this service ` +
        '(an earlier run at another generation, or another reason). Re-run the CI job (a new attempt derives a new key) or pass a new --idempotency-key';
      break;
    case 'no-verified-release':
      message = 'no-verified-release: nothing to abort to — no release of this service other than the one deployed now was ever verified ' +
        'by the fleet (abort returns to the last verified one). Nothing was changed; ' +
        `rollout ${String(p['currentRolloutId'] ?? expectations.rolloutId ?? '?')} goes on. ` +
        'To return to a release of your choice: cloudly-release rollback --service ID --release ID';
      break;
    default:
      return err;
  }
  return new ApiError({ status: err.status, code: err.code, message, problem: err.problem });
}

interface Issued {
  json: Record<string, unknown>;
  text: string;
}

function issuedOf ({ args, plan, key, replayed, expectations }: {
  args: IssueArgs, plan: IImmutableImageDeploymentPlan, key: IdempotencyKey, replayed: boolean, expectations: Expectations
}): Issued {
  const json = {
    serviceId: args.serviceId,
    releaseId: plan.releaseId,
    operation: args.command,
    rolloutId: plan.rolloutId,
    generation: plan.rolloutGeneration,
    mode: plan.mode,
    requestedDigest: plan.requestedDigest,
    digestPinnedImageReference: plan.digestPinnedImageReference,
    requiredReplicaCount: plan.targetScope.requiredReplicaCount,
    replayed,
    expectedGeneration: expectations.generation,
    ...(args.command === 'abort' ? { abortedRolloutId: expectations.rolloutId } : {}),
    idempotencyKey: key.key,
    idempotencyKeySource: key.source,
    ...(args.breakGlassGrant ? { breakGlassGrant: args.breakGlassGrant } : {}),
  };
  const release = `release ${plan.releaseId} (${shortDigest(plan.requestedDigest)})`;
  const head = args.command === 'promote'
    ? `promoted ${release} on service ${args.serviceId}`
    : args.command === 'rollback'
      ? `rolled back to ${release} on service ${args.serviceId}`
      : `aborted rollout ${expectations.rolloutId ?? '?'} of service ${args.serviceId}: rolling back to ${release}`;
  const text = `${head}: rollout ${plan.rolloutId}, generation ${plan.rolloutGeneration}` +
    (args.breakGlassGrant ? ` (through a closed window with break-glass grant ${args.breakGlassGrant})` : '') +
    (replayed ? ' (replayed: this Idempotency-Key had already done it)' : '');
  return { json, text };
}

async function followIssued (
  ctx: CommandContext,
  { args, plan, issued, wait }: { args: IssueArgs, plan: IImmutableImageDeploymentPlan, issued: Issued, wait: FollowSettings }
): Promise<CommandResult> {
  // Table output: say what was issued now, before the progress of the wait.
  if (ctx.output.format === 'table') ctx.io.stdout.write(`${issued.text}\n`);
  try {
    const { result, view } = await followRollout(ctx.client, {
      serviceId: args.serviceId,
      rolloutId: plan.rolloutId,
      generation: plan.rolloutGeneration,
      settings: wait,
      sink: ctx.sink,
      log: ctx.log,
    });
    const text = waitText(result);
    ctx.sink.finish(text, view);
    return { exitCode: waitExitCode(result.outcome), json: { ...issued.json, wait: result }, text, shown: true };
  } catch (err) {
    // The rollout WAS issued: whatever ended the wait, the document still names it.
    if (err instanceof CliError) {
      throw new CliError({ exitCode: err.exitCode, code: err.code, message: err.message, details: { ...err.details, issued: issued.json } });
    }
    throw err;
  }
}
