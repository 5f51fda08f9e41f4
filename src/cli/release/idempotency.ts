import { createHash, randomUUID } from 'node:crypto';
import { MAX_REASON_LENGTH } from './args.js';

/**
 * Idempotency keys for promote / rollback / abort.
 *
 * Rule: one key per (CI job attempt, service, release, operation). Everything that repeats
 * the same job attempt — the CLI's own retries, the step run again by a retry wrapper or a
 * `retry {}` block, the whole command run twice in one job — sends the same key, so the
 * server answers with the stored outcome instead of issuing a second rollout. A deliberate
 * re-run (a new attempt of the workflow/job, a new build) gets a new key, so it re-reads
 * the generation and really promotes again (a redeploy when the release is already current).
 *
 * The job attempt comes from the CI system's variables (first match wins):
 *
 * | CI | variables | a re-run changes |
 * | --- | --- | --- |
 * | any (explicit) | `CLOUDLY_RUN_ID` | whatever you put in it |
 * | GitHub Actions | `GITHUB_REPOSITORY`, `GITHUB_RUN_ID`, `GITHUB_RUN_ATTEMPT`, `GITHUB_JOB` | `GITHUB_RUN_ATTEMPT` |
 * | GitLab CI | `CI_SERVER_URL`, `CI_PROJECT_ID`, `CI_JOB_ID` | `CI_JOB_ID` (a retried job is a new job) |
 * | Buildkite | `BUILDKITE_ORGANIZATION_SLUG`, `BUILDKITE_PIPELINE_SLUG`, `BUILDKITE_JOB_ID` | `BUILDKITE_JOB_ID` (a retried job is a new job) |
 * | Jenkins | `JENKINS_URL`, `JOB_NAME`, `BUILD_NUMBER` | `BUILD_NUMBER` (a rebuild/replay is a new build) |
 *
 * Outside CI there is no job attempt: the key is random per invocation (still reused by
 * the CLI's own retries).
 */

export type KeySource = 'flag' | 'cloudly-run-id' | 'github-actions' | 'gitlab-ci' | 'buildkite' | 'jenkins' | 'random';

export interface CiRun {
  source: Exclude<KeySource, 'flag' | 'random'>;
  /** The variables that identify the job attempt (name → value), in a fixed order. */
  parts: Array<[string, string]>;
  /** For humans (kept in the rollout history's reason). */
  description: string;
}

const SHORT: Record<CiRun['source'], string> = {
  'cloudly-run-id': 'run',
  'github-actions': 'gha',
  'gitlab-ci': 'gitlab',
  buildkite: 'buildkite',
  jenkins: 'jenkins',
};

const present = (env: NodeJS.ProcessEnv, name: string): string | undefined => {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
};

function collect (env: NodeJS.ProcessEnv, names: string[]): Array<[string, string]> {
  return names.flatMap((name): Array<[string, string]> => {
    const v = present(env, name);
    return v === undefined ? [] : [[name, v]];
  });
}

/** The CI job attempt this process runs in, or undefined outside a known CI. */
export function detectCiRun (env: NodeJS.ProcessEnv): CiRun | undefined {
  const custom = present(env, 'CLOUDLY_RUN_ID');
  if (custom !== undefined) return { source: 'cloudly-run-id', parts: [['CLOUDLY_RUN_ID', custom]], description: `run ${custom}` };

  const ghRun = present(env, 'GITHUB_RUN_ID');
  if (ghRun !== undefined) {
    const attempt = present(env, 'GITHUB_RUN_ATTEMPT') ?? '1';
    const parts = collect(env, ['GITHUB_REPOSITORY', 'GITHUB_RUN_ID']);
    parts.push(['GITHUB_RUN_ATTEMPT', attempt], ...collect(env, ['GITHUB_JOB']));
    const repo = present(env, 'GITHUB_REPOSITORY');
    const job = present(env, 'GITHUB_JOB');
    return {
      source: 'github-actions',
      parts,
      description: `GitHub Actions${repo ? ` ${repo}` : ''} run ${ghRun} attempt ${attempt}${job ? ` job ${job}` : ''}`,
    };
  }

  const glJob = present(env, 'CI_JOB_ID');
  if (glJob !== undefined && (present(env, 'GITLAB_CI') !== undefined || present(env, 'CI_SERVER_URL') !== undefined)) {
    const project = present(env, 'CI_PROJECT_PATH') ?? present(env, 'CI_PROJECT_ID');
    return {
      source: 'gitlab-ci',
      parts: collect(env, ['CI_SERVER_URL', 'CI_PROJECT_ID', 'CI_JOB_ID']),
      description: `GitLab CI${project ? ` ${project}` : ''} job ${glJob}${present(env, 'CI_JOB_NAME') ? ` (${present(env, 'CI_JOB_NAME')})` : ''}`,
    };
  }

  const bkJob = present(env, 'BUILDKITE_JOB_ID');
  if (bkJob !== undefined) {
    const pipeline = present(env, 'BUILDKITE_PIPELINE_SLUG');
    const build = present(env, 'BUILDKITE_BUILD_NUMBER');
    return {
      source: 'buildkite',
      parts: collect(env, ['BUILDKITE_ORGANIZATION_SLUG', 'BUILDKITE_PIPELINE_SLUG', 'BUILDKITE_JOB_ID']),
      description: `Buildkite${pipeline ? ` ${pipeline}` : ''}${build ? ` build ${build}` : ''} job ${bkJob}`,
    };
  }

  const buildNumber = present(env, 'BUILD_NUMBER');
  const jobName = present(env, 'JOB_NAME');
  if (buildNumber !== undefined && jobName !== undefined && (present(env, 'JENKINS_URL') !== undefined || present(env, 'JENKINS_HOME') !== undefined)) {
    return {
      source: 'jenkins',
      parts: collect(env, ['JENKINS_URL', 'JOB_NAME', 'BUILD_NUMBER']),
      description: `Jenkins ${jobName} build ${buildNumber}`,
    };
  }
  return undefined;
}

export interface KeyInput {
  serviceId: string;
  /** Promote and rollback name a release; abort does not (the server picks the last verified one). */
  releaseId?: string;
  operation: 'promote' | 'rollback' | 'abort';
  /**
   * promote --break-glass-grant: part of the key, so that the promotion with the grant is a new request
   * and not the replay of the same job's promotion the window refused a moment before.
   */
  breakGlassGrant?: string;
}

export interface IdempotencyKey {
  key: string;
  source: KeySource;
  /** The CI job attempt, when the key was derived from one. */
  run?: CiRun;
}

/**
 * The key of this request: `--idempotency-key`, else derived from the CI job attempt,
 * else random. A derived key is `cr1-<ci>-<operation>-<32 hex>`: the hash covers the CI
 * variables, the service, the release (none for abort), the operation and a break-glass grant (if any), so it contains no characters an
 * Idempotency-Key may not carry (Jenkins job names have spaces) and reveals nothing.
 */
export function idempotencyKeyFor (input: KeyInput, env: NodeJS.ProcessEnv, flag?: string): IdempotencyKey {
  const run = detectCiRun(env);
  if (flag !== undefined) return { key: flag, source: 'flag', ...(run ? { run } : {}) };
  if (!run) return { key: `cr1-local-${input.operation}-${randomUUID()}`, source: 'random' };
  const digest = createHash('sha256')
    // `grant` is left out of the JSON when undefined: the keys of every other command are the same as before.
    .update(JSON.stringify({
      v: 1, ci: run.source, run: run.parts, service: input.serviceId, release: input.releaseId, operation: input.operation, grant: input.breakGlassGrant,
    }))
    .digest('hex')
    .slice(0, 32);
  return { key: `cr1-${SHORT[run.source]}-${input.operation}-${digest}`, source: run.source, run };
}

/**
 * How the server names the request an Idempotency-Key made (the rollout history's
 * `idempotencyKeyHash`): hex sha256 of `<serviceId>\u0000<key>`, so a re-run of a step can find
 * the rollout its key issued without the key ever being stored in clear.
 */
export const idempotencyKeyHash = (serviceId: string, key: string): string =>
  createHash('sha256').update(`${serviceId}\u0000${key}`).digest('hex');

/**
 * The reason sent with the request (kept in the rollout history): the caller's text, or a
 * description of the CI run. It must be the same on every attempt with the same key (the
 * server's request fingerprint includes it), so it is built only from the command line and
 * the environment — never from a clock.
 */
export function reasonFor (input: KeyInput, key: IdempotencyKey, given?: string): string {
  const what = input.releaseId === undefined ? input.operation : `${input.operation} ${input.releaseId}`;
  return (given ?? `cloudly-release ${what}${key.run ? ` (${key.run.description})` : ''}`).slice(0, MAX_REASON_LENGTH);
}
