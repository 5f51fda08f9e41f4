import type { HistoryPage, ImageReleasePage, RolloutView, ServicesPage } from './api.js';
import type { CommandArgs, FollowSettings } from './args.js';
import type { CommandContext, CommandResult } from './context.js';
import { ApiError, CliError, ExitCode } from './errors.js';
import { followRollout, type FollowOutcome } from './follow.js';
import { issue } from './issue.js';
import { describeService } from './describe.js';
import { approve, breakGlass, promotionRequests } from './approvals.js';
import { governance, pipeline } from './governance.js';
import { listingText } from './listing.js';
import { historyTable, releaseRow, releaseTable, servicesTable, statusText, waitText } from './output.js';
import { historyRequest, releasesRequest, rolloutViewRequest, servicesRequest } from './requests.js';
import { packageVersion } from '../../packageVersion.js';
import { waitExitCode } from './waitResult.js';

export type { CommandContext, CommandResult };

type Args<C extends CommandArgs['command']> = Extract<CommandArgs, { command: C }>;

export async function runCommand (ctx: CommandContext, given: CommandArgs): Promise<CommandResult> {
  const args = await withServiceId(ctx, given);
  switch (args.command) {
    case 'list': return await list(ctx, args);
    case 'history': return await history(ctx, args);
    case 'services': return await services(ctx, args);
    case 'status': return args.watch ? await watchStatus(ctx, { serviceId: args.serviceId, watch: args.watch }) : await status(ctx, args);
    case 'wait': return await wait(ctx, args);
    case 'promote':
    case 'rollback':
    case 'abort':
      return await issue(ctx, args);
    case 'describe': return await describeService(ctx, args);
    case 'requests': return await promotionRequests(ctx, args);
    case 'approve': return await approve(ctx, args);
    case 'break-glass': return await breakGlass(ctx, args);
    case 'governance': return await governance(ctx, args);
    case 'pipeline': return await pipeline(ctx, args);
    case 'version': return await version(ctx);
  }
}

/** Service ids are `svc_…`; anything else given as --service is taken as the service's name. */
const looksLikeServiceId = (value: string): boolean => value.startsWith('svc_');

/**
 * `--service` takes a service's id or its name: a name is looked up (`GET /v1/services?name=`, names
 * are unique) and the command goes on with that service's id; no service of that name is an error naming it.
 */
async function withServiceId (ctx: CommandContext, args: CommandArgs): Promise<CommandArgs> {
  if (!('serviceId' in args) || looksLikeServiceId(args.serviceId)) return args;
  const { body } = await ctx.client.send<ServicesPage>(servicesRequest({ name: args.serviceId, limit: 1 }));
  const found = body.services.find((s) => s.name === args.serviceId);
  if (found === undefined) {
    const message = `no service with the id or name '${args.serviceId}' (cloudly-release services lists them)`;
    throw new ApiError({ status: 404, code: 'service-not-found', message, problem: { code: 'service-not-found', detail: message, name: args.serviceId } });
  }
  return { ...args, serviceId: found.id };
}

/** `cloudly-release version`: this CLI's version beside the server's. */
async function version (ctx: CommandContext): Promise<CommandResult> {
  const { body } = await ctx.client.send<{ name: string, version: string }>({ method: 'GET', path: '/v1/version' });
  const client = packageVersion() ?? 'unknown';
  return {
    exitCode: ExitCode.ok,
    json: { client: { version: client }, server: { name: body.name, version: body.version } },
    text: `client  ${client}\nserver  ${body.version} (${body.name})`,
  };
}

/** The command line of the next page, or undefined on the last page. */
const nextPage = (command: string, nextCursor: string | undefined, limit: number): string | undefined =>
  (nextCursor ? `cloudly-release ${command} --limit ${limit} --cursor ${nextCursor}` : undefined);

async function list (ctx: CommandContext, args: Args<'list'>): Promise<CommandResult> {
  const { body } = await ctx.client.send<ImageReleasePage>(releasesRequest(args));
  return {
    exitCode: ExitCode.ok,
    json: {
      serviceId: args.serviceId,
      releases: body.releases.map((r) => releaseRow(r, body.verifications?.[r.id])),
      ...(body.nextCursor ? { nextCursor: body.nextCursor } : {}),
    },
    text: listingText(ctx, {
      ids: body.releases.map((r) => r.id),
      table: (wide) => releaseTable(body.releases, body.verifications, wide),
      empty: `no releases observed for service ${args.serviceId}`,
      more: nextPage(`list --service ${args.serviceId}`, body.nextCursor, args.limit),
      label: 'more releases',
    }),
  };
}

/** The rollout history; entries go to json/yaml as the server sent them (fields it adds included). */
async function history (ctx: CommandContext, args: Args<'history'>): Promise<CommandResult> {
  const { body } = await ctx.client.send<HistoryPage>(historyRequest(args));
  return {
    exitCode: ExitCode.ok,
    json: { serviceId: args.serviceId, ...body },
    text: listingText(ctx, {
      ids: body.rollouts.map((r) => r.rolloutId),
      table: (wide) => historyTable(body.rollouts, wide),
      empty: `no rollouts issued for service ${args.serviceId}`,
      more: nextPage(`history --service ${args.serviceId}`, body.nextCursor, args.limit),
    }),
  };
}

async function services (ctx: CommandContext, args: Args<'services'>): Promise<CommandResult> {
  const { body } = await ctx.client.send<ServicesPage>(servicesRequest(args));
  const filter = args.name === undefined ? '' : ` --name ${JSON.stringify(args.name)}`;
  return {
    exitCode: ExitCode.ok,
    json: { ...body },
    text: listingText(ctx, {
      ids: body.services.map((s) => s.name),
      table: (wide) => servicesTable(body.services, wide),
      empty: `no services${args.name === undefined ? '' : ` named ${JSON.stringify(args.name)}`}`,
      more: nextPage(`services${filter}`, body.nextCursor, args.limit),
    }),
  };
}

async function status (ctx: CommandContext, args: Args<'status'>): Promise<CommandResult> {
  const { body } = await ctx.client.send<RolloutView>(rolloutViewRequest(args.serviceId));
  return { exitCode: ExitCode.ok, json: { ...body }, text: statusText(body) };
}

async function wait (ctx: CommandContext, args: Args<'wait'>): Promise<CommandResult> {
  const { result, view } = await followRollout(ctx.client, {
    serviceId: args.serviceId,
    ...(args.rolloutId ? { rolloutId: args.rolloutId } : {}),
    settings: args.follow,
    sink: ctx.sink,
    log: ctx.log,
  });
  const text = waitText(result);
  ctx.sink.finish(text, view);
  return { exitCode: waitExitCode(result.outcome), json: { ...result }, text, shown: true };
}

/**
 * `status --watch`: follows the service's current rollout like `wait` does (SSE, polling
 * fallback) and shows it as it moves; a newer rollout that replaces it is followed in turn.
 * Ends when the rollout reaches a terminal state (exit 0: like status, whatever the state) or
 * `--timeout` runs out (exit 2). The final state is shown once: the live view's last frame, or
 * (plain output) the full status text.
 */
async function watchStatus (ctx: CommandContext, args: { serviceId: string, watch: FollowSettings }): Promise<CommandResult> {
  const deadline = args.watch.timeoutMs === undefined ? undefined : AbortSignal.timeout(args.watch.timeoutMs);
  let followed: FollowOutcome;
  for (;;) {
    try {
      followed = await followRollout(ctx.client, {
        serviceId: args.serviceId,
        settings: args.watch,
        ...(deadline ? { deadline } : {}),
        sink: ctx.sink,
        log: ctx.log,
        finalView: true,
      });
    } catch (err) {
      // Nothing was ever promoted: nothing to follow, the status says so.
      if (err instanceof CliError && err.code === 'no-current-rollout') return await status(ctx, { command: 'status', ...args });
      throw err;
    }
    if (followed.result.outcome !== 'superseded') break;
    ctx.log(`${followed.result.message}; following it`);
  }
  const { result, view } = followed;
  const timedOut = result.outcome === 'timeout';
  const fullText = ctx.output.format === 'table' && !ctx.sink.wantsViews && view !== undefined;
  const text = fullText ? `${statusText(view)}${timedOut ? `\n${result.message}` : ''}` : result.message;
  ctx.sink.finish(text, view);
  return {
    exitCode: timedOut ? ExitCode.timeout : ExitCode.ok,
    json: { ...view, watch: { outcome: result.outcome, rolloutId: result.rolloutId, via: result.via, elapsedMs: result.elapsedMs } },
    text,
    shown: true,
  };
}
