import {
  findRollout, servicePath, type ImageReleasePage, type RolloutView, type ServiceReply,
} from './api.js';
import type { CommandArgs } from './args.js';
import { ApiError, CliError, ExitCode } from './errors.js';
import { followRollout, waitExitCode, type WaitResult } from './follow.js';
import type { ApiClient } from './http.js';
import { idempotencyKeyFor, idempotencyKeyHash, reasonFor } from './idempotency.js';
import { Progress, releaseRow, releaseTable, shortDigest, statusText, blockingLines, type Io } from './output.js';

export interface CommandContext {
  client: ApiClient;
  env: NodeJS.ProcessEnv;
  io: Io;
  json: boolean;
  log: (line: string) => void;
  /** Where the live progress line goes: stdout, or stderr with --json. */
  progress: Progress;
}

/** What a command hands back: its exit code, its JSON document and its text for humans. */
export interface CommandResult {
  exitCode: ExitCode;
  json: Record<string, unknown>;
  text: string;
}

export async function runCommand (ctx: CommandContext, args: CommandArgs): Promise<CommandResult> {
  switch (args.command) {
    case 'list': return await list(ctx, args);
    case 'status': return await status(ctx, args);
    case 'wait': return await wait(ctx, args);
    case 'promote':
    case 'rollback':
      return await issue(ctx, args);
  }
}

async function list (ctx: CommandContext, args: Extract<CommandArgs, { command: 'list' }>): Promise<CommandResult> {
  const query = `?limit=${args.limit}${args.cursor ? `&cursor=${encodeURIComponent(args.cursor)}` : ''}`;
  const { body } = await ctx.client.get<ImageReleasePage>(`${servicePath(args.serviceId)}/image-releases${query}`);
  const more = body.nextCursor
    ? `\nmore releases: cloudly-release list --service ${args.serviceId} --limit ${args.limit} --cursor ${body.nextCursor}`
    : '';
  return {
    exitCode: ExitCode.ok,
    json: { serviceId: args.serviceId, releases: body.releases.map(releaseRow), ...(body.nextCursor ? { nextCursor: body.nextCursor } : {}) },
    text: body.releases.length === 0 ? `no releases observed for service ${args.serviceId}` : `${releaseTable(body.releases)}${more}`,
  };
}

async function status (ctx: CommandContext, args: Extract<CommandArgs, { command: 'status' }>): Promise<CommandResult> {
  const { body } = await ctx.client.get<RolloutView>(`${servicePath(args.serviceId)}/rollout`);
  return { exitCode: ExitCode.ok, json: { ...body }, text: statusText(body) };
}

const waitText = (r: WaitResult): string =>
  [r.message, ...(r.blocking.length > 0 ? ['blocking', ...blockingLines(r.blocking)] : [])].join('\n');

async function wait (ctx: CommandContext, args: Extract<CommandArgs, { command: 'wait' }>): Promise<CommandResult> {
  const result = await followRollout(ctx.client, {
    serviceId: args.serviceId,
    ...(args.rolloutId ? { rolloutId: args.rolloutId } : {}),
    settings: args.follow,
    progress: ctx.progress,
    log: ctx.log,
  });
  return { exitCode: waitExitCode(result.outcome), json: { ...result }, text: waitText(result) };
}

/** A 409 compare-and-swap refusal, said so that a CI log explains what to do. */
function explainRefusal (err: ApiError, op: string, expectedGeneration: number | undefined, expectedRolloutId: string | undefined): ApiError {
  const p = err.problem;
  const current = `generation ${String(p['currentGeneration'] ?? '?')}, current rollout ${String(p['currentRolloutId'] ?? 'none')}`;
  let message: string;
  switch (err.code) {
    case 'rollout-generation-conflict':
      message = `rollout-generation-conflict: expected generation ${expectedGeneration ?? '?'} but the service is at ${current}. ` +
        `Not retried: another rollout happened in between; look at it (cloudly-release status) and run ${op} again to act on top of it`;
      break;
    case 'current-rollout-mismatch':
      message = `current-rollout-mismatch: expected current rollout ${expectedRolloutId ?? '?'} but the service is at ${current}. ` +
        `Not retried: another rollout happened in between; look at it (cloudly-release status) and run ${op} again to act on top of it`;
      break;
    case 'idempotency-key-reused':
      message = `idempotency-key-reused: this Idempotency-Key was already used for a different ${op} request of this service ` +
        '(an earlier run at another generation, or another reason). Re-run the CI job (a new attempt derives a new key) or pass a new --idempotency-key';
      break;
    default:
      return err;
  }
  return new ApiError(err.status, err.code, message, err.problem);
}

async function issue (ctx: CommandContext, args: Extract<CommandArgs, { command: 'promote' | 'rollback' }>): Promise<CommandResult> {
  const { client, log } = ctx;
  const op = args.command;
  const input = { serviceId: args.serviceId, releaseId: args.releaseId, operation: op };
  const key = idempotencyKeyFor(input, ctx.env, args.idempotencyKey);
  if (key.source === 'random') {
    log('no CI job detected (GitHub Actions, GitLab CI, Buildkite, Jenkins, CLOUDLY_RUN_ID): using a random Idempotency-Key; ' +
      'running this command again will issue another rollout');
  } else {
    log(`Idempotency-Key ${key.key} (${key.source === 'flag' ? '--idempotency-key' : `from ${key.run?.description ?? key.source}`})`);
  }
  const reason = reasonFor(input, key, args.reason);

  let expectedGeneration = args.expectGeneration;
  let expectedRolloutId = args.expectRolloutId;
  const readGeneration = expectedGeneration === undefined;
  const readRolloutId = op === 'rollback' && expectedRolloutId === undefined;
  if (readGeneration || readRolloutId) {
    const { body } = await client.get<ServiceReply>(servicePath(args.serviceId));
    const plan = body.service.data.imageDeployment;
    if (readGeneration) expectedGeneration = plan?.rolloutGeneration ?? 0;
    if (readRolloutId) {
      if (!plan) {
        throw new CliError(ExitCode.refused, 'no-current-rollout', `no-current-rollout: service ${args.serviceId} has no rollout to roll back`, {
          currentGeneration: 0, currentRolloutId: null,
        });
      }
      expectedRolloutId = plan.rolloutId;
    }
    log(`service ${args.serviceId} is at generation ${plan?.rolloutGeneration ?? 0}${plan ? ` (rollout ${plan.rolloutId}, release ${plan.releaseId})` : ''}`);
  }

  const path = `${servicePath(args.serviceId)}/image-releases/${encodeURIComponent(args.releaseId)}/${op}`;
  const send = async (generation: number, rolloutId: string | undefined) => await client.post<ServiceReply>(path, {
    headers: { 'idempotency-key': key.key },
    body: op === 'promote'
      ? { expectedRolloutGeneration: generation, ...(rolloutId ? { expectedCurrentRolloutId: rolloutId } : {}), enableImmutableImage: true, reason }
      : { expectedCurrentRolloutId: rolloutId, expectedRolloutGeneration: generation, reason },
  });

  let response;
  try {
    try {
      response = await send(expectedGeneration ?? 0, expectedRolloutId);
    } catch (err) {
      // The same command ran before with this key (a re-run of the step in the same job attempt)
      // when the service was at an earlier generation: the server keeps that request's outcome
      // under the key. Find the rollout it issued (by the key's hash in the history) and ask again with
      // that request's expectations, which replays the stored outcome. Only when the
      // expectations were read here, never when the caller gave them.
      if (!(err instanceof ApiError && err.code === 'idempotency-key-reused' && readGeneration)) throw err;
      const hash = idempotencyKeyHash(args.serviceId, key.key);
      const entry = await findRollout(client, args.serviceId, (e) => e.idempotencyKeyHash === hash);
      if (!entry || entry.releaseId !== args.releaseId || (op === 'rollback') !== (entry.mode === 'rollback')) throw err;
      log(`this Idempotency-Key already issued rollout ${entry.rolloutId} (generation ${entry.generation}): asking for its stored outcome`);
      expectedGeneration = entry.generation - 1;
      if (readRolloutId) expectedRolloutId = entry.rollbackOfRolloutId;
      response = await send(expectedGeneration, expectedRolloutId);
    }
  } catch (err) {
    if (err instanceof ApiError) throw explainRefusal(err, op, expectedGeneration, expectedRolloutId);
    throw err;
  }

  const plan = response.body.service.data.imageDeployment;
  if (!plan) throw new CliError(ExitCode.unreachable, 'bad-response', `${op} answered without a deployment plan`);
  const replayed = response.headers.get('idempotent-replayed') === 'true';
  const issued = {
    serviceId: args.serviceId,
    releaseId: plan.releaseId,
    operation: op,
    rolloutId: plan.rolloutId,
    generation: plan.rolloutGeneration,
    mode: plan.mode,
    requestedDigest: plan.requestedDigest,
    digestPinnedImageReference: plan.digestPinnedImageReference,
    requiredReplicaCount: plan.targetScope.requiredReplicaCount,
    replayed,
    expectedGeneration,
    idempotencyKey: key.key,
    idempotencyKeySource: key.source,
  };
  const verb = op === 'promote' ? 'promoted' : 'rolled back to';
  const text = `${verb} release ${plan.releaseId} (${shortDigest(plan.requestedDigest)}) on service ${args.serviceId}: ` +
    `rollout ${plan.rolloutId}, generation ${plan.rolloutGeneration}` +
    (replayed ? ' (replayed: this Idempotency-Key had already done it)' : '');

  if (!args.wait) return { exitCode: ExitCode.ok, json: issued, text };
  // Text mode: say what was issued now, before the progress lines of the wait.
  if (!ctx.json) ctx.io.stdout.write(`${text}\n`);
  let result: WaitResult;
  try {
    result = await followRollout(client, {
      serviceId: args.serviceId,
      rolloutId: plan.rolloutId,
      generation: plan.rolloutGeneration,
      settings: args.wait,
      progress: ctx.progress,
      log,
    });
  } catch (err) {
    // The rollout WAS issued: whatever ended the wait, the JSON still names it.
    if (err instanceof CliError) throw new CliError(err.exitCode, err.code, err.message, { ...err.details, issued });
    throw err;
  }
  return { exitCode: waitExitCode(result.outcome), json: { ...issued, wait: result }, text: waitText(result) };
}
