import type { GovernanceReply, PipelineReply, StageVerdict } from './api.js';
import type { CommandArgs } from './args.js';
import type { CommandContext, CommandResult } from './context.js';
import { ExitCode } from './errors.js';
import { durationText, isoTime, table } from './output.js';
import { governanceRequest, governanceWriteRequest, pipelineRequest } from './requests.js';

/**
 * The global governance policy (`governance`, `governance stop-the-line on|off`) and a service's
 * pipeline (`pipeline`), docs/governance.md.
 */

type Args<C extends CommandArgs['command']> = Extract<CommandArgs, { command: C }>;

/** `on since … by alice: incident 4711` | `off` */
function stopTheLineText (reply: GovernanceReply): string {
  const s = reply.governance.stopTheLine;
  if (s?.active !== true) return 'off: promotions are open (windows permitting)';
  return `ON since ${isoTime(s.since)} by ${s.by ?? '?'}: ${s.reason ?? '-'} — every promotion of every service is refused; rollbacks and aborts pass`;
}

function windowsText (reply: GovernanceReply): string[] {
  const windows = reply.governance.windows ?? [];
  if (windows.length === 0) return ['windows        none (services may have their own: cloudly-release describe service)'];
  return [
    'windows (every service)',
    ...table(
      ['NAME', 'KIND', 'START', 'TIME ZONE', 'DURATION', 'REPEATS'],
      windows.map((w) => [
        w.name, w.kind, w.start, w.timeZone, w.durationSeconds === undefined ? w.duration ?? '-' : durationText(w.durationSeconds * 1_000), w.rrule ?? 'once',
      ])
    ).split('\n').map((l) => `  ${l}`),
  ];
}

const governanceText = (reply: GovernanceReply): string => [
  `stop-the-line  ${stopTheLineText(reply)}`,
  ...windowsText(reply),
  `updated        ${reply.updatedAt === undefined ? 'never written' : `${isoTime(reply.updatedAt)} by ${reply.updatedBy ?? '?'}`}`,
].join('\n');

/**
 * `governance`: read the global policy. `governance stop-the-line on|off`: PUT replaces the whole
 * policy, so the CLI reads it, changes only `stopTheLine` and writes the rest back as it read it
 * (the windows untouched). The server stamps who and since; switching it on again keeps the first stamp.
 */
export async function governance (ctx: CommandContext, args: Args<'governance'>): Promise<CommandResult> {
  const { body: current } = await ctx.client.send<GovernanceReply>(governanceRequest());
  if (args.action === 'show') return { exitCode: ExitCode.ok, json: { ...current }, text: governanceText(current) };
  const was = current.governance.stopTheLine?.active === true;
  const stopTheLine = { active: args.active, ...(args.reason === undefined ? {} : { reason: args.reason }) };
  const { body: written } = await ctx.client.send<GovernanceReply>(governanceWriteRequest({ ...current.governance, stopTheLine }));
  const change = args.active
    ? (was ? 'stop-the-line was already on (its first stamp is kept)' : 'stop-the-line switched ON')
    : (was ? 'stop-the-line switched off' : 'stop-the-line was already off');
  return { exitCode: ExitCode.ok, json: { ...written, changed: was !== args.active }, text: `${change}\n${governanceText(written)}` };
}

/** What a stage still lacks for the digest, in words. */
function stageState (s: StageVerdict): string {
  if (s.satisfied) return `satisfied${s.soakedAt === undefined ? '' : ` (soaked ${isoTime(s.soakedAt)})`}`;
  switch (s.missing) {
    case 'never-promoted': return 'never promoted there';
    case 'not-succeeded': return 'promoted, not succeeded yet';
    case 'not-soaked': return s.remainingSeconds === undefined
      ? 'succeeded, replaced before it soaked'
      : `soaking: ${durationText(s.remainingSeconds * 1_000)} left${s.soakedAt === undefined ? '' : ` (until ${isoTime(s.soakedAt)})`}`;
    case 'failed': return `failed${typeof s.reason === 'string' ? `: ${s.reason}` : ''}`;
    default: return s.missing ?? 'not satisfied';
  }
}

/** `pipeline --service S [--digest D]`: each upstream stage's verdict for the digest, and whether a promotion passes now. */
export async function pipeline (ctx: CommandContext, args: Args<'pipeline'>): Promise<CommandResult> {
  const { body } = await ctx.client.send<PipelineReply>(pipelineRequest(args.serviceId, args.digest));
  const allowed = body.allowed
    ? 'yes: a promotion of this digest passes the pipeline now'
    : `no${body.eligibleAt === undefined ? '' : `: eligible at ${isoTime(body.eligibleAt)} if nothing changes`}`;
  const lines = [
    `service   ${body.serviceId}`,
    `digest    ${body.digest ?? 'none (no release observed yet)'}${args.digest === undefined && body.digest !== null ? ' (the newest release)' : ''}`,
    `allowed   ${allowed}`,
    ...(body.stages.length === 0
      ? ['stages    none: the service has no pipeline (promotions need no upstream stage)']
      : table(
        ['STAGE', 'SOAK', 'STATE', 'ROLLOUT'],
        body.stages.map((s) => [s.serviceId, durationText(s.soakSeconds * 1_000), stageState(s), s.rolloutId ?? '-'])
      ).split('\n')),
  ];
  return { exitCode: ExitCode.ok, json: { ...body }, text: lines.join('\n') };
}
