import type { GlobalGovernance } from '../contracts/promotionPolicy.js';
import type { IImageRelease, IService } from '../contracts/index.js';
import type { GovernanceFacts } from '../domain/admission.js';
import { effectivePromotionPolicy, globalGovernanceProblems } from '../domain/governance/policy.js';
import { pipelineVerdict, type PipelineVerdict, type StageFacts, type StageRollout } from '../domain/governance/pipelines.js';
import type { Clock, LifecycleView, Repositories, StoredGovernance } from '../domain/ports/index.js';
import type { RolloutIntent } from '../domain/rollouts.js';
import { invalid, refusal, success, type Result } from '../domain/result.js';
import { errors } from '../errors.js';

/**
 * Governance (docs/governance.md): the global policy an admin writes (windows for every service,
 * stop-the-line), and the facts promotion admission reads for the governance rules — the global
 * policy, the service's promotion policy with its defaults, and each upstream stage's rollouts of
 * the digest. Rollbacks and aborts read none of it: no window, stop-the-line or pipeline holds them.
 */

/** What reading a stage's facts needs. */
type StageReads = { repos: Pick<Repositories, 'rollouts' | 'lifecycles'> };
/** What the governance facts of a promotion need. */
type FactReads = { repos: Pick<Repositories, 'breakGlassGrants' | 'governance' | 'rollouts' | 'lifecycles'>, now: Clock };

export interface GovernanceDeps {
  repos: Pick<Repositories, 'breakGlassGrants' | 'catalogue' | 'governance' | 'releases' | 'rollouts' | 'lifecycles'>;
  now: Clock;
}

/** How many of a stage's rollouts of one digest pipelines look at (newest first): far more than a stage ever holds. */
const STAGE_ROLLOUTS = 200;

/** The stage's current rollout as its lifecycle holds it right now (the history copies it a moment later). */
function withLiveMilestones (rollouts: StageRollout[], view: LifecycleView | null): StageRollout[] {
  const lifecycle = view?.state?.summary.lifecycle;
  const rolloutId = view?.plan?.rolloutId;
  if (!lifecycle || rolloutId === undefined) return rollouts;
  return rollouts.map((r) => (r.rolloutId !== rolloutId
    ? r
    : {
        ...r,
        ...(r.succeededAt === undefined && lifecycle.succeededAt !== undefined ? { succeededAt: lifecycle.succeededAt } : {}),
        ...(r.failure === undefined && lifecycle.failure !== undefined ? { failure: { at: lifecycle.failure.at, reason: lifecycle.failure.reason } } : {}),
        ...(r.revokedAt === undefined && lifecycle.drift !== undefined ? { revokedAt: lifecycle.drift.at } : {}),
      }));
}

/**
 * A stage's rollouts of `digest` (undefined: its newest of any digest) as pipelines read them: the history,
 * with the current rollout's milestones as its lifecycle holds them right now.
 */
export async function stageFacts (deps: StageReads, serviceId: string, digest: string | undefined, limit: number): Promise<StageFacts> {
  const [rollouts, view] = await Promise.all([
    deps.repos.rollouts.stageRollouts(serviceId, digest, limit),
    deps.repos.lifecycles.findLifecycle(serviceId),
  ]);
  return { serviceId, rollouts: withLiveMilestones(rollouts, view) };
}

/** Each stage's rollouts of the digest. */
const stageFactsOf = (deps: StageReads, stages: ReadonlyArray<{ serviceId: string }>, digest: string): Promise<StageFacts[]> =>
  Promise.all(stages.map(({ serviceId }) => stageFacts(deps, serviceId, digest, STAGE_ROLLOUTS)));

/** What the governance rules look at for a promotion; undefined for a rollback (exempt) or a target that is not there. */
export async function governanceFactsOf (
  deps: FactReads, service: IService, release: IImageRelease | null, intent: RolloutIntent,
): Promise<GovernanceFacts | undefined> {
  if (intent.kind !== 'promotion' || release === null) return undefined;
  const policy = effectivePromotionPolicy(service.data.promotionPolicy);
  const digest = release.data.registryRootDigest;
  const grantId = intent.breakGlassGrantId;
  const [stored, stages, grant] = await Promise.all([
    deps.repos.governance.readGlobal(),
    policy.pipeline ? stageFactsOf(deps, policy.pipeline.requires, digest) : Promise.resolve([]),
    grantId === undefined ? Promise.resolve(undefined) : deps.repos.breakGlassGrants.find(service.id, grantId),
  ]);
  const breakGlass = grant === undefined ? {} : { breakGlass: grant ?? 'missing' as const };
  return { at: deps.now(), policy, stages, digest, ...(stored ? { global: stored.governance } : {}), ...breakGlass };
}

/** The global policy as the API answers it: never written reads as empty, without a stamp. */
export type GovernanceView = Pick<StoredGovernance, 'governance'> & Partial<Omit<StoredGovernance, 'governance'>>;

/** The pipeline view: where a digest stands in each upstream stage of a service. */
export interface PipelineView extends Omit<PipelineVerdict, 'refusedBy'> {
  serviceId: string;
  /** The digest looked at (the one asked for, else the service's newest release's); null: no release yet. */
  digest: string | null;
}

export function governanceOperations (deps: GovernanceDeps) {
  return {
    /** The digest's verdict in each stage (docs/governance.md "Pipelines"): what a promotion of it would be told now. */
    async pipeline (serviceId: string, digest?: string): Promise<Result<PipelineView>> {
      const service = await deps.repos.catalogue.findById(serviceId);
      if (!service) return refusal(errors.serviceNotFound(serviceId));
      const policy = effectivePromotionPolicy(service.data.promotionPolicy);
      const subject = digest ?? (await deps.repos.releases.listByService(serviceId, { limit: 1 }))[0]?.data.registryRootDigest;
      if (subject === undefined) return success({ serviceId, digest: null, allowed: policy.pipeline === undefined, stages: [] });
      const facts = policy.pipeline ? await stageFactsOf(deps, policy.pipeline.requires, subject) : [];
      const { refusedBy: _first, ...verdict } = pipelineVerdict(subject, policy.pipeline, facts, deps.now());
      return success({ serviceId, digest: subject, ...verdict });
    },

    async readGlobal (): Promise<Result<GovernanceView>> {
      return success((await deps.repos.governance.readGlobal()) ?? { governance: {} });
    },

    /**
     * Replaces the global policy. Stop-the-line switched on is stamped with who and when (the caller
     * cannot say someone else did it); left on, it keeps its first stamp.
     */
    async writeGlobal (governance: GlobalGovernance, subject: string): Promise<Result<GovernanceView>> {
      const at = deps.now();
      const previous = (await deps.repos.governance.readGlobal())?.governance.stopTheLine;
      const stop = governance.stopTheLine;
      const kept = previous?.active === true ? { by: previous.by ?? subject, since: previous.since ?? at } : { by: subject, since: at };
      const stamped: GlobalGovernance = stop?.active === true ? { ...governance, stopTheLine: { ...stop, ...kept } } : governance;
      const problems = globalGovernanceProblems(stamped, '');
      if (problems.length > 0) return invalid(problems);
      const stored: StoredGovernance = { governance: stamped, updatedAt: at, updatedBy: subject };
      await deps.repos.governance.writeGlobal(stored);
      return success(stored);
    },
  };
}

export type GovernanceOperations = ReturnType<typeof governanceOperations>;
