import type { HistoryPage, RolloutView, ServiceReply } from './api.js';
import type { CommandContext, CommandResult } from './context.js';
import { ExitCode } from './errors.js';
import { blockingLines, historyTable, holdText, rolloutLines } from './output.js';
import { historyRequest, rolloutViewRequest, serviceRequest } from './requests.js';

/** How many rollouts `describe service` shows (the whole history is `get rollouts`). */
export const DESCRIBE_HISTORY_LIMIT = 5;

const indent = (lines: string[]): string[] => lines.map((l) => `  ${l}`);

/** The service's own settings that decide where and how it rolls out; tolerant of fields a server leaves out. */
function serviceLines (reply: ServiceReply): string[] {
  const d = reply.service.data;
  const target = d.registryTarget;
  const placement = d.placement;
  return [
    `name      ${d.name}`,
    `id        ${reply.service.id}`,
    `registry  ${target ? `${target.protocol} ${target.registryHost}/${target.repository}` : '-'}`,
    `placement ${placement ? `clusters ${placement.clusterIds.join(', ')}; ${placement.replicasPerNode} per node` : '-'}`,
    `on push   ${d.deployOnPush === true ? 'promotes automatically' : 'waits for a promotion'}`,
    `trust     ${d.trustPolicy ? 'a trust policy applies (signatures checked before a rollout)' : 'no trust policy'}`,
    `hold      ${reply.automationHold ? holdText(reply.automationHold) : 'none'}`,
  ];
}

/**
 * `describe service ID|NAME`: the kubectl-style readable view of one service, from three reads
 * the other commands already make (GET /v1/services/:id, its rollout view, its newest rollouts).
 * json/yaml carry the three answers as the server sent them.
 */
export async function describeService (ctx: CommandContext, args: { serviceId: string }): Promise<CommandResult> {
  const [service, view, history] = await Promise.all([
    ctx.client.send<ServiceReply>(serviceRequest(args.serviceId)),
    ctx.client.send<RolloutView>(rolloutViewRequest(args.serviceId)),
    ctx.client.send<HistoryPage>(historyRequest({ serviceId: args.serviceId, limit: DESCRIBE_HISTORY_LIMIT })),
  ]);
  const v = view.body;
  const rollouts = history.body.rollouts;
  const text = [
    'Service',
    ...indent(serviceLines(service.body)),
    '',
    'Current rollout',
    ...indent(rolloutLines(v)),
    '',
    'Blocking',
    ...(v.blocking.length > 0 ? blockingLines(v.blocking) : [v.plan ? '  nothing: the rollout is not waiting for anything' : '  nothing (no rollout)']),
    '',
    `Recent history (newest ${DESCRIBE_HISTORY_LIMIT}; all of it: cloudly-release get rollouts --service ${args.serviceId})`,
    ...indent(rollouts.length > 0 ? historyTable(rollouts).split('\n') : ['no rollouts issued']),
  ].join('\n');
  return {
    exitCode: ExitCode.ok,
    json: { serviceId: args.serviceId, ...service.body, rollout: v, history: rollouts },
    text,
  };
}
