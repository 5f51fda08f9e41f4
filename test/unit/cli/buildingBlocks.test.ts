import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../../src/cli/release/args.js';
import { backoffMs, retryAfterMs } from '../../../src/cli/release/http.js';
import { idempotencyKeyFor, reasonFor, type KeyInput } from '../../../src/cli/release/idempotency.js';
import type { RolloutHistoryEntry } from '../../../src/cli/release/api.js';
import { historyTable, outcomeText, Progress, releaseRow, releaseTable, triggerText } from '../../../src/cli/release/output.js';
import type { IImageRelease } from '../../../src/contracts/index.js';

/** The variables of one GitHub Actions job attempt. */
const github = (runId: string, attempt = '1'): Record<string, string> => ({
  GITHUB_ACTIONS: 'true',
  GITHUB_REPOSITORY: 'acme/shop',
  GITHUB_RUN_ID: runId,
  GITHUB_RUN_ATTEMPT: attempt,
  GITHUB_JOB: 'deploy',
});

describe('cloudly-release building blocks (in process)', () => {
  it('list: a SIGNATURE column (who signed) only when the page carries signature verdicts', () => {
    const release = (id: string): IImageRelease => ({
      id,
      data: {
        serviceId: 'svc',
        imageId: 'img',
        registryHost: 'registry.example.com',
        repository: 'team/app',
        registryRootDigest: `sha256:${'a'.repeat(64)}`,
        digestPinnedImageReference: `registry.example.com/team/app@sha256:${'a'.repeat(64)}`,
        manifestMediaType: 'application/vnd.oci.image.manifest.v1+json',
        observedTags: ['v1'],
        firstObservedAt: 0,
        lastObservedAt: 0,
        observationCount: 1,
      },
    });
    const verdict = {
      verdict: 'passed' as const,
      verifiedAt: 1,
      policyDigest: 'b'.repeat(64),
      signers: [{ keyId: 'ci' }, { issuer: 'https://issuer.example', subject: 'me@example.com' }],
      attestations: [],
      summaryDigest: 'c'.repeat(64),
    };
    const plain = releaseTable([release('rel_a')]).split('\n');
    expect(plain[0]).toMatch(/^RELEASE\s+TAGS\s+DIGEST\s+FIRST OBSERVED\s+ACCEPTED$/);
    const signed = releaseTable([release('rel_a'), release('rel_b')], { rel_a: verdict }).split('\n');
    expect(signed[0]).toMatch(/ACCEPTED\s+SIGNATURE$/);
    expect(signed[1]).toMatch(/verified: key ci, me@example.com \(https:\/\/issuer.example\)$/);
    expect(signed[2]).toMatch(/\s-$/);
    expect(releaseRow(release('rel_a'), verdict)).toMatchObject({ id: 'rel_a', signature: verdict });
    expect(releaseRow(release('rel_a'))).not.toHaveProperty('signature');
  });

  it('durations: 90s, 10m, 1h30m, 500ms, a bare number is seconds; anything else is refused', () => {
    expect(['90s', '10m', '1h30m', '500ms', '2', '1.5s'].map(parseDuration)).toEqual([90_000, 600_000, 5_400_000, 500, 2_000, 1_500]);
    expect(['soon', '10x', '', 'm', '-1s', '1m 30s'].map(parseDuration)).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
  });

  it('backoff doubles from 500 ms up to 15 s with jitter in [d/2, d]; Retry-After in seconds or as a date', () => {
    expect([0, 1, 2, 3, 4, 5, 10].map((n) => [backoffMs(n, () => 0), backoffMs(n, () => 1)])).toEqual([
      [250, 500], [500, 1_000], [1_000, 2_000], [2_000, 4_000], [4_000, 8_000], [7_500, 15_000], [7_500, 15_000],
    ]);
    expect(retryAfterMs('2')).toBe(2_000);
    expect(retryAfterMs(null)).toBeUndefined();
    expect(retryAfterMs('soon')).toBeUndefined();
    expect(retryAfterMs(new Date(10_000).toUTCString(), 7_000)).toBe(3_000);
    expect(retryAfterMs('3600')).toBe(60_000); // capped
  });

  describe('idempotency keys: one per CI job attempt, service, release and operation', () => {
    const input: KeyInput = { serviceId: 'svc_1', releaseId: 'rel_1', operation: 'promote' };
    const key = (env: Record<string, string>, over: Partial<KeyInput> = {}) => idempotencyKeyFor({ ...input, ...over }, env).key;

    it('GitHub Actions: the same attempt gives the same key, a re-run attempt, another job, release or operation another', () => {
      const base = github('42');
      expect(key(base)).toBe(key({ ...base }));
      expect(key(base)).toMatch(/^cr1-gha-promote-[0-9a-f]{32}$/);
      const others = [
        key(github('42', '2')), key({ ...base, GITHUB_JOB: 'other' }), key({ ...base, GITHUB_REPOSITORY: 'acme/other' }),
        key(base, { releaseId: 'rel_2' }), key(base, { serviceId: 'svc_2' }), key(base, { operation: 'rollback' }),
      ];
      expect(new Set([key(base), ...others]).size).toBe(others.length + 1);
    });

    it('keys of promote and rollback are the ones earlier versions derived (a CLI upgrade mid-job still replays)', () => {
      expect(key(github('42'))).toBe('cr1-gha-promote-b503d4b4ef62db5c3cccd2f690c4282d');
      expect(key(github('42'), { operation: 'rollback' })).toBe('cr1-gha-rollback-db26847877fb0d21c1429a2939b6da78');
    });

    it('abort: a key of its own without a release; the reason names the operation and the CI run', () => {
      const abort = idempotencyKeyFor({ serviceId: 'svc_1', operation: 'abort' }, github('42'));
      expect(abort.key).toMatch(/^cr1-gha-abort-[0-9a-f]{32}$/);
      expect(abort.key).not.toBe(idempotencyKeyFor({ serviceId: 'svc_2', operation: 'abort' }, github('42')).key);
      expect(abort.key).toBe(idempotencyKeyFor({ serviceId: 'svc_1', operation: 'abort' }, github('42')).key);
      expect(reasonFor({ serviceId: 'svc_1', operation: 'abort' }, abort)).toBe('cloudly-release abort (GitHub Actions acme/shop run 42 attempt 1 job deploy)');
      expect(reasonFor(input, idempotencyKeyFor(input, {}))).toBe('cloudly-release promote rel_1');
      expect(reasonFor(input, idempotencyKeyFor(input, {}), 'hotfix')).toBe('hotfix');
    });

    it('GitLab CI, Buildkite, Jenkins (names with spaces), CLOUDLY_RUN_ID; a flag wins; no CI: random', () => {
      const gitlab = { GITLAB_CI: 'true', CI_SERVER_URL: 'https://gitlab.example.com', CI_PROJECT_ID: '7', CI_JOB_ID: '1001' };
      expect(idempotencyKeyFor(input, gitlab)).toMatchObject({ source: 'gitlab-ci', key: key(gitlab) });
      expect(key({ ...gitlab, CI_JOB_ID: '1002' })).not.toBe(key(gitlab));
      const buildkite = { BUILDKITE: 'true', BUILDKITE_ORGANIZATION_SLUG: 'acme', BUILDKITE_PIPELINE_SLUG: 'shop', BUILDKITE_JOB_ID: '0190-aa' };
      expect(idempotencyKeyFor(input, buildkite).source).toBe('buildkite');
      const jenkins = { JENKINS_URL: 'https://ci.example.com/', JOB_NAME: 'shop deploy/main', BUILD_NUMBER: '17' };
      const jk = idempotencyKeyFor(input, jenkins);
      expect(jk.source).toBe('jenkins');
      expect(jk.key).toMatch(/^[\x21-\x7e]{1,255}$/);
      expect(key({ ...jenkins, BUILD_NUMBER: '18' })).not.toBe(jk.key);
      expect(idempotencyKeyFor(input, { ...github('1'), CLOUDLY_RUN_ID: 'deploy-9' }).source).toBe('cloudly-run-id');
      expect(idempotencyKeyFor(input, github('1'), 'my-key')).toMatchObject({ key: 'my-key', source: 'flag' });
      const a = idempotencyKeyFor(input, {});
      expect(a.source).toBe('random');
      expect(idempotencyKeyFor(input, {}).key).not.toBe(a.key);
    });
  });

  it('progress: one line rewritten with \\r on a TTY, plain lines otherwise, only on change', () => {
    const sink = (isTTY: boolean) => {
      const chunks: string[] = [];
      return { chunks, stream: Object.assign(new Writable({ write (c, _e, cb) { chunks.push(String(c)); cb(); } }), { isTTY }) };
    };
    const counts = { requiredReplicaCount: 4, verifiedReplicaCount: 0, failedReplicaCount: 0 };
    const snap = (status: 'pending' | 'deploying', observed: number) =>
      ({ rolloutId: 'ro_1', rolloutGeneration: 3, status, observedReplicaCount: observed, healthyReplicaCount: observed, ...counts });
    for (const tty of [true, false]) {
      const out = sink(tty);
      const progress = new Progress(out.stream);
      progress.update(snap('pending', 0));
      progress.update(snap('pending', 0));
      progress.update(snap('deploying', 2));
      progress.break();
      const lines = [
        'rollout ro_1 (generation 3) pending: observed 0/4, healthy 0/4, verified 0/4',
        'rollout ro_1 (generation 3) deploying: observed 2/4, healthy 2/4, verified 0/4',
      ];
      expect(out.chunks).toEqual(tty ? [`\r\x1b[2K${lines[0]}`, `\r\x1b[2K${lines[1]}`, '\n'] : lines.map((l) => `${l}\n`));
    }
  });
});

describe('progress: the final state is shown once, by finish', () => {
  const sink = (isTTY: boolean) => {
    const chunks: string[] = [];
    return { chunks, stream: Object.assign(new Writable({ write (c, _e, cb) { chunks.push(String(c)); cb(); } }), { isTTY }) };
  };
  const snap = {
    rolloutId: 'ro_1',
    rolloutGeneration: 3,
    status: 'deploying',
    requiredReplicaCount: 2,
    observedReplicaCount: 1,
    healthyReplicaCount: 1,
    verifiedReplicaCount: 1,
    failedReplicaCount: 0
  };
  const summary = 'rollout ro_1 (generation 3) succeeded: observed 2/2, healthy 2/2, verified 2/2';

  it('on a terminal the progress line is replaced by the summary', () => {
    const out = sink(true);
    const progress = new Progress(out.stream);
    progress.update(snap);
    progress.finish(summary);
    expect(out.chunks).toEqual(['\r\x1b[2Krollout ro_1 (generation 3) deploying: observed 1/2, healthy 1/2, verified 1/2', '\r\x1b[2K', `${summary}\n`]);
  });

  it('in a CI log the summary follows the progress lines, once', () => {
    const out = sink(false);
    const progress = new Progress(out.stream);
    progress.update(snap);
    progress.finish(`${summary}\nblocking\n  x: y`);
    expect(out.chunks.join('').split('\n')).toEqual([
      'rollout ro_1 (generation 3) deploying: observed 1/2, healthy 1/2, verified 1/2', summary, 'blocking', '  x: y', '',
    ]);
  });

  it('rewrite can be turned off on a terminal (TERM=dumb)', () => {
    const out = sink(true);
    const progress = new Progress(out.stream, { rewrite: false });
    progress.update(snap);
    progress.finish(summary);
    expect(out.chunks.join('')).not.toContain('\x1b');
  });
});

describe('the rollout history as a table', () => {
  const entry = (over: Partial<RolloutHistoryEntry>): RolloutHistoryEntry => ({
    rolloutId: 'ro_1',
    generation: 1,
    mode: 'promotion',
    releaseId: 'rel_1',
    requestedDigest: `sha256:${'a'.repeat(64)}`,
    digestPinnedImageReference: 'r/x@sha256:…',
    targetScope: { targetClusterIds: ['c1'], targetNodeNames: ['n1'], replicasPerNode: 1, requiredReplicaCount: 1 },
    issuedBy: { subject: 'ci-bot', role: 'api', type: 'machine' },
    reason: 'ship it',
    automationHold: 'unchanged',
    state: 'applied',
    idempotencyKeyHash: 'h',
    createdAt: 1_700_000_000_000,
    ...over,
  });

  it('the outcome in words: why it failed, what ended it; the trigger of a rollout the server issued', () => {
    expect(outcomeText(entry({ outcome: 'succeeded', succeededAt: 1, endedBy: { kind: 'superseded', rolloutId: 'ro_2' } }))).toBe('succeeded');
    expect(outcomeText(entry({ outcome: 'failed', failedAt: 1, failureReason: 'required-replica-missing', failedBy: 'deadline' })))
      .toBe('failed: required-replica-missing (progress deadline exceeded)');
    expect(outcomeText(entry({ outcome: 'mismatched', failedAt: 1, failureReason: 'pulled-digest-mismatch', failedBy: 'report' })))
      .toBe('mismatched: pulled-digest-mismatch');
    expect(outcomeText(entry({ outcome: 'aborted', endedAt: 2, endedBy: { kind: 'aborted', rolloutId: 'ro_3' } }))).toBe('aborted by ro_3');
    expect(outcomeText(entry({ outcome: 'in-progress' }))).toBe('in-progress');
    expect(triggerText(entry({}))).toBe('-');
    expect(triggerText(entry({ trigger: { kind: 'abort' } }))).toBe('abort');
    expect(triggerText(entry({ trigger: { kind: 'automatic-rollback', cause: 'deadline', ofRolloutId: 'ro_1' } }))).toBe('automatic rollback (deadline)');
    expect(triggerText(entry({ trigger: { kind: 'deferred-promotion', afterRolloutId: 'ro_1' } }))).toBe('push queued behind ro_1');
    expect(triggerText(entry({ trigger: { kind: 'something-new' } }))).toBe('something-new');
  });

  it('an older server (no outcomes): the columns it had, nothing invented', () => {
    expect(historyTable([entry({})]).split('\n')[0]).toMatch(/^GEN\s+ROLLOUT\s+MODE\s+RELEASE\s+DIGEST\s+CREATED\s+BY\s+REASON$/);
    const lines = historyTable([entry({ outcome: 'succeeded', succeededAt: 1_700_000_060_000 })]).split('\n');
    expect(lines[0]).toMatch(/^GEN\s+ROLLOUT\s+MODE\s+TRIGGER\s+RELEASE\s+DIGEST\s+CREATED\s+OUTCOME\s+OUTCOME AT\s+BY\s+REASON$/);
    expect(lines[1]).toMatch(/^1\s+ro_1\s+promotion\s+-\s+rel_1\s+sha256:a{12}\s+2023-11-14T22:13:20Z\s+succeeded\s+2023-11-14T22:14:20Z\s+ci-bot\s+ship it$/);
  });
});
