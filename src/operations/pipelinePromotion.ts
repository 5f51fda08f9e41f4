import { digestsEligibleAt } from '../domain/governance/pipelines.js';
import { effectivePromotionPolicy } from '../domain/governance/policy.js';
import type { Clock, Log, PipelineService, Repositories } from '../domain/ports/index.js';
import { stageFacts } from './governance.js';
import type { RolloutIssuer } from './issueRollout.js';

/**
 * Automatic promotion downstream (docs/governance.md "Pipelines"): a pass of the sweeper, in every
 * process. For each service whose pipeline has `automaticPromotion` on, the newest digest that every
 * upstream stage now allows — and that was never rolled out here — is promoted, as a
 * `pipeline-promotion`, under the idempotency key of that digest: whichever processes sweep at the same
 * time, one rollout per digest. It meets every rule an automatic promotion meets (hold, never an older
 * release, the windows, stop-the-line, approvals): a refusal that may pass later (a closed window) is
 * not stored, so a later sweep tries again and it goes out when the window opens.
 */

export interface PipelinePromotionDeps {
  repos: Pick<Repositories, 'catalogue' | 'rollouts' | 'lifecycles' | 'releases'>;
  rollouts: Pick<RolloutIssuer, 'issueRollout'>;
  now: Clock;
  log: Pick<Log, 'info' | 'warn'>;
}

/** How far back a stage's and the service's own history is looked at (newest rollouts first). */
const STAGE_HISTORY = 50;
const OWN_HISTORY = 200;
const SERVICES_PER_SWEEP = 100;

/** One service: promotes its newest eligible digest, if any; true when a rollout was issued. */
async function promoteOne (deps: PipelinePromotionDeps, service: PipelineService): Promise<boolean> {
  const pipeline = effectivePromotionPolicy(service.data.promotionPolicy).pipeline;
  const target = service.data.registryTarget;
  if (!pipeline || !target) return false;
  const [facts, own, here] = await Promise.all([
    Promise.all(pipeline.requires.map((stage) => stageFacts(deps, stage.serviceId, undefined, STAGE_HISTORY))),
    deps.repos.rollouts.stageRollouts(service.id, undefined, OWN_HISTORY),
    deps.repos.lifecycles.findLifecycle(service.id),
  ]);
  // A rollout in progress here is not overtaken: the next candidate waits until it succeeded or failed.
  const lifecycle = here?.plan ? here.state?.summary.lifecycle : undefined;
  if (here?.plan && (lifecycle === undefined || (lifecycle.succeededAt ?? lifecycle.failure ?? lifecycle.deadline) === undefined)) return false;
  const exclude = new Set(own.map((r) => r.digest));
  const newest = digestsEligibleAt(pipeline, facts, deps.now(), { exclude }).at(-1);
  if (!newest) return false;
  const release = await deps.repos.releases.findByTuple({
    serviceId: service.id, registryHost: target.registryHost, repository: target.repository, registryRootDigest: newest.digest as `sha256:${string}`,
  });
  // Not pushed to this service's repository (yet): nothing to promote; a later sweep looks again.
  if (!release) return false;
  const stages = pipeline.requires.map((s) => s.serviceId);
  const result = await deps.rollouts.issueRollout({
    serviceId: service.id,
    releaseId: release.id,
    idempotencyKey: `\u0001pipeline:${newest.digest}`,
    intent: { kind: 'promotion', mode: 'automatic', pipeline: true },
    issuer: { subject: 'pipeline:automatic-promotion', role: 'system', type: 'machine' },
    reason: `pipeline promotion: ${newest.digest} passed ${stages.join(', ')}`,
    trigger: { kind: 'pipeline-promotion', stages },
  });
  if (!result.ok) {
    deps.log.info({ serviceId: service.id, digest: newest.digest, code: result.error.code }, 'pipeline promotion refused; a later sweep tries again');
    return false;
  }
  if (!result.value.issued) return false;
  if (!result.replayed) {
    deps.log.info({ serviceId: service.id, digest: newest.digest, rolloutId: result.value.rolloutId }, 'promoted downstream by the pipeline');
  }
  return !result.replayed;
}

/** The sweeper's pipeline pass over (up to SERVICES_PER_SWEEP of) the services that promote downstream; returns how many rollouts it issued. */
export async function promoteDownstream (deps: PipelinePromotionDeps, stopping: () => boolean): Promise<number> {
  let issued = 0;
  for (const service of await deps.repos.catalogue.withPipelinePromotion(SERVICES_PER_SWEEP)) {
    if (stopping()) break;
    try {
      if (await promoteOne(deps, service)) issued++;
    } catch (err) {
      deps.log.warn({ serviceId: service.id, err }, 'pipeline promotion failed; the next sweep takes it up');
    }
  }
  return issued;
}
