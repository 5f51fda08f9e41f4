import { findRollout, servicePath, type BlockingReason, type RolloutSnapshot, type RolloutView, type StatusEvent } from './api.js';
import type { FollowSettings } from './args.js';
import { CliError, ExitCode } from './errors.js';
import { ApiClient, DeadlineError, describeNetworkError, safeFetch, sleep } from './http.js';
import type { Progress } from './output.js';

/**
 * `wait`: follows ONE rollout (the expected one) until it reaches a terminal state.
 *
 * 1. Read the rollout view (normal retries; unreachable → exit 4). Without `--rollout-id`
 *    the expected rollout is the current plan's.
 * 2. Open the SSE stream (`GET …/rollout/events`, `Last-Event-ID` = the view's revision, so
 *    nothing between the read and the stream is missed) and judge every event.
 * 3. When the stream is unavailable (no such route, not an event stream, a 4xx) poll the
 *    view every `--poll-interval`. When it drops (network, server restart, 45 s without a
 *    byte — the server sends a keep-alive every 15 s) poll at once, keep polling while
 *    waiting to reconnect (after 1, 2, 4 … poll intervals, at most 30 s), and resume from
 *    the last revision seen; after 5 drops in a row without an event, poll only.
 * 4. Outages while following are ridden out until `--timeout`; a 4xx ends the wait (exit 1).
 *
 * Judging: events of older generations are ignored (the stream starts with the latest
 * stored event, which may still be the previous rollout's); a different rollout at the
 * same or a newer generation means the expected one was superseded — it can never finish,
 * so the wait ends (exit 1). `succeeded` / `rolled-back` → exit 0; `failed` / `mismatched`
 * → exit 1 with the reason and the view's blocking reasons.
 */

export type WaitOutcome = 'succeeded' | 'rolled-back' | 'failed' | 'mismatched' | 'superseded' | 'timeout';

export interface WaitResult {
  serviceId: string;
  rolloutId: string;
  generation: number;
  outcome: WaitOutcome;
  /** The last status seen of the expected rollout (null: none seen). */
  status: string | null;
  requiredReplicaCount: number | null;
  observedReplicaCount: number | null;
  healthyReplicaCount: number | null;
  verifiedReplicaCount: number | null;
  failedReplicaCount: number | null;
  mismatchReason?: string;
  /** Why the rollout had not succeeded (from the rollout view; empty on success). */
  blocking: BlockingReason[];
  supersededBy?: { rolloutId: string, generation: number };
  /** How the end was observed. */
  via: 'sse' | 'polling';
  elapsedMs: number;
  /** One line for humans. */
  message: string;
}

export const waitExitCode = (outcome: WaitOutcome): ExitCode =>
  outcome === 'succeeded' || outcome === 'rolled-back' ? ExitCode.ok : outcome === 'timeout' ? ExitCode.timeout : ExitCode.refused;

export interface FollowOptions {
  serviceId: string;
  /** The rollout to wait for; default the current one. */
  rolloutId?: string;
  /** Its generation when known (promote --wait). */
  generation?: number;
  settings: FollowSettings;
  progress: Progress;
  log: (line: string) => void;
}

interface Expected { rolloutId: string, generation: number }

type Verdict =
  | { kind: 'terminal', snapshot: RolloutSnapshot }
  | { kind: 'superseded', by: { rolloutId: string, generation: number } };

const TERMINAL = new Set(['succeeded', 'rolled-back', 'failed', 'mismatched']);
const INACTIVITY_MS = 45_000;
const MAX_RECONNECT_DELAY_MS = 30_000;
const MAX_QUICK_DROPS = 5;

const snapshotOf = (s: RolloutSnapshot): RolloutSnapshot => ({
  rolloutId: s.rolloutId,
  rolloutGeneration: s.rolloutGeneration,
  status: s.status,
  requiredReplicaCount: s.requiredReplicaCount,
  observedReplicaCount: s.observedReplicaCount,
  healthyReplicaCount: s.healthyReplicaCount,
  verifiedReplicaCount: s.verifiedReplicaCount,
  failedReplicaCount: s.failedReplicaCount,
  ...(s.mismatchReason ? { mismatchReason: s.mismatchReason } : {}),
});

type StreamEnd =
  | { kind: 'stopped', verdict: Verdict }
  | { kind: 'unavailable', reason: string }
  | { kind: 'dropped', reason: string, events: number };

export async function followRollout (client: ApiClient, opts: FollowOptions): Promise<WaitResult> {
  const { serviceId, settings, progress, log } = opts;
  const started = Date.now();
  const deadline = AbortSignal.timeout(settings.timeoutMs);
  const viewPath = `${servicePath(serviceId)}/rollout`;
  let expected: Expected | undefined;
  let last: RolloutSnapshot | undefined;
  let lastView: RolloutView | undefined;
  let revision = 0;
  let via: 'sse' | 'polling' = settings.sse ? 'sse' : 'polling';
  let outage: string | undefined;

  const judge = (s: RolloutSnapshot, exp: Expected): Verdict | undefined => {
    if (s.rolloutGeneration < exp.generation) return undefined;
    if (s.rolloutId !== exp.rolloutId) return { kind: 'superseded', by: { rolloutId: s.rolloutId, generation: s.rolloutGeneration } };
    last = snapshotOf(s);
    progress.update(last);
    return TERMINAL.has(s.status) ? { kind: 'terminal', snapshot: last } : undefined;
  };

  const judgeView = (view: RolloutView, exp: Expected): Verdict | undefined => {
    lastView = view;
    revision = view.revision;
    if (view.plan && view.plan.rolloutGeneration > exp.generation) {
      return { kind: 'superseded', by: { rolloutId: view.plan.rolloutId, generation: view.plan.rolloutGeneration } };
    }
    return view.status ? judge(view.status, exp) : undefined;
  };

  const say = (line: string): void => {
    progress.break();
    log(line);
  };

  /** One poll while following: outages are logged once and ridden out; a 4xx ends the wait. */
  const poll = async (exp: Expected): Promise<Verdict | undefined> => {
    try {
      const { body } = await client.get<RolloutView>(viewPath, { signal: deadline, retries: 0 });
      if (outage !== undefined) say(`control plane answers again (after: ${outage})`);
      outage = undefined;
      return judgeView(body, exp);
    } catch (err) {
      if (err instanceof CliError && err.exitCode === ExitCode.unreachable) {
        if (outage === undefined) say(`cannot read the rollout (${err.details['lastFailure'] as string}); still trying until the timeout`);
        outage = String(err.details['lastFailure']);
        return undefined;
      }
      throw err;
    }
  };

  const stream = async (exp: Expected): Promise<StreamEnd> => {
    const local = new AbortController();
    const signal = AbortSignal.any([deadline, local.signal]);
    let timer: NodeJS.Timeout | undefined;
    const arm = (ms: number, why: string): void => {
      clearTimeout(timer);
      timer = setTimeout(() => { local.abort(new Error(why)); }, ms);
    };
    let events = 0;
    try {
      arm(Math.max(settings.pollIntervalMs, 10_000), 'no answer');
      let res: Response;
      try {
        res = await safeFetch(client.url(`${viewPath}/events`), {
          headers: { ...client.authHeaders(), accept: 'text/event-stream', 'last-event-id': String(revision) },
          signal,
          redirect: 'manual',
        });
      } catch (err) {
        if (deadline.aborted) throw new DeadlineError();
        return { kind: 'dropped', reason: local.signal.aborted ? 'no answer' : describeNetworkError(err), events };
      }
      if (res.status >= 500) {
        await res.body?.cancel().catch(() => undefined);
        return { kind: 'dropped', reason: `HTTP ${res.status}`, events };
      }
      const type = res.headers.get('content-type') ?? '';
      if (!res.ok || !type.startsWith('text/event-stream') || !res.body) {
        await res.body?.cancel().catch(() => undefined);
        return { kind: 'unavailable', reason: res.ok ? `answered ${type || 'no content type'}` : `HTTP ${res.status}` };
      }
      arm(INACTIVITY_MS, `no data for ${INACTIVITY_MS / 1000} s`);
      const decoder = new TextDecoder();
      let buffer = '';
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          arm(INACTIVITY_MS, `no data for ${INACTIVITY_MS / 1000} s`);
          buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n/g, '\n');
          let cut: number;
          while ((cut = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            const message = parseSseBlock(block);
            if (!message) continue;
            events++;
            const verdict = onMessage(message, exp);
            if (verdict) return { kind: 'stopped', verdict };
          }
        }
      } catch (err) {
        if (deadline.aborted) throw new DeadlineError();
        const why = local.signal.reason instanceof Error ? local.signal.reason.message : describeNetworkError(err);
        return { kind: 'dropped', reason: why, events };
      }
      return { kind: 'dropped', reason: 'closed by the server', events };
    } finally {
      clearTimeout(timer);
      local.abort();
    }
  };

  const onMessage = (message: { event: string, data: string }, exp: Expected): Verdict | undefined => {
    let data: unknown;
    try {
      data = JSON.parse(message.data);
    } catch {
      return undefined;
    }
    if (message.event === 'status') {
      const e = data as StatusEvent;
      if (typeof e.revision === 'number') revision = Math.max(revision, e.revision);
      return judge(e, exp);
    }
    if (message.event === 'reset') {
      // The server could not replay every change: it sends the current state instead.
      const reset = data as { revision?: number, latest?: StatusEvent | null };
      if (typeof reset.revision === 'number') revision = reset.revision;
      return reset.latest ? judge(reset.latest, exp) : undefined;
    }
    return undefined;
  };

  const finish = async (verdict: Verdict | { kind: 'timeout' }, exp: Expected): Promise<WaitResult> => {
    progress.break();
    let blocking: BlockingReason[] = [];
    const outcome: WaitOutcome = verdict.kind === 'terminal' ? verdict.snapshot.status as WaitOutcome : verdict.kind;
    if (outcome !== 'succeeded' && outcome !== 'rolled-back' && outcome !== 'superseded') {
      // Why it did not succeed: the view's blocking reasons (best effort, one quick read).
      try {
        const { body } = await client.get<RolloutView>(viewPath, { retries: 0 });
        lastView = body;
      } catch {
        // keep the last view we had
      }
      if (lastView?.status?.rolloutId === exp.rolloutId) blocking = lastView.blocking;
    }
    const s = last;
    const base = {
      serviceId,
      rolloutId: exp.rolloutId,
      generation: exp.generation,
      outcome,
      status: s?.status ?? null,
      requiredReplicaCount: s?.requiredReplicaCount ?? null,
      observedReplicaCount: s?.observedReplicaCount ?? null,
      healthyReplicaCount: s?.healthyReplicaCount ?? null,
      verifiedReplicaCount: s?.verifiedReplicaCount ?? null,
      failedReplicaCount: s?.failedReplicaCount ?? null,
      ...(s?.mismatchReason ? { mismatchReason: s.mismatchReason } : {}),
      blocking,
      ...(verdict.kind === 'superseded' ? { supersededBy: verdict.by } : {}),
      via,
      elapsedMs: Date.now() - started,
    };
    const counts = s ? `observed ${s.observedReplicaCount}/${s.requiredReplicaCount}, healthy ${s.healthyReplicaCount}/${s.requiredReplicaCount}, verified ${s.verifiedReplicaCount}/${s.requiredReplicaCount}` : 'no status seen';
    let message: string;
    switch (outcome) {
      case 'succeeded':
      case 'rolled-back':
        message = `rollout ${exp.rolloutId} (generation ${exp.generation}) ${outcome}: ${counts}`;
        break;
      case 'failed':
      case 'mismatched':
        message = `rollout ${exp.rolloutId} (generation ${exp.generation}) ${outcome}: ${s?.mismatchReason ?? 'no reason given'} (${counts})`;
        break;
      case 'superseded':
        message = verdict.kind === 'superseded'
          ? `rollout ${exp.rolloutId} (generation ${exp.generation}) was superseded by rollout ${verdict.by.rolloutId} (generation ${verdict.by.generation}) before it finished`
          : '';
        break;
      case 'timeout':
        message = `timed out after ${formatMs(settings.timeoutMs)} waiting for rollout ${exp.rolloutId} (generation ${exp.generation}): ` +
          `${s ? `${s.status}, ${counts}` : counts}${outage !== undefined ? `; the control plane was unreachable at the end (${outage})` : ''}`;
        break;
    }
    return { ...base, message };
  };

  try {
    // 1. Where are we, and which rollout do we wait for?
    const { body: view } = await client.get<RolloutView>(viewPath, { signal: deadline });
    revision = view.revision;
    expected = await resolveExpected(client, view, opts, deadline);
    const exp = expected;
    log(`waiting for rollout ${exp.rolloutId} (generation ${exp.generation}) of service ${serviceId}, at most ${formatMs(settings.timeoutMs)}`);
    let verdict = judgeView(view, exp);
    if (verdict) return await finish(verdict, exp);

    // 2./3. Stream, or poll.
    let sse = settings.sse;
    let drops = 0;
    for (;;) {
      if (sse) {
        const opened = Date.now();
        const end = await stream(exp);
        if (end.kind === 'stopped') {
          via = 'sse';
          return await finish(end.verdict, exp);
        }
        if (end.kind === 'unavailable') {
          sse = false;
          via = 'polling';
          say(`event stream unavailable (${end.reason}); polling every ${formatMs(settings.pollIntervalMs)}`);
        } else {
          drops = end.events > 0 || Date.now() - opened > 10_000 ? 1 : drops + 1;
          if (drops >= MAX_QUICK_DROPS) {
            sse = false;
            via = 'polling';
            say(`event stream keeps dropping (${end.reason}); polling every ${formatMs(settings.pollIntervalMs)} from now on`);
          } else {
            say(`event stream dropped (${end.reason}); polling until it reconnects`);
          }
        }
      }
      verdict = await poll(exp);
      if (verdict) {
        via = 'polling';
        return await finish(verdict, exp);
      }
      if (!sse) {
        await sleep(settings.pollIntervalMs, deadline);
        continue;
      }
      const reconnectAt = Date.now() + Math.min(settings.pollIntervalMs * 2 ** (drops - 1), MAX_RECONNECT_DELAY_MS);
      while (Date.now() + settings.pollIntervalMs < reconnectAt) {
        await sleep(settings.pollIntervalMs, deadline);
        verdict = await poll(exp);
        if (verdict) {
          via = 'polling';
          return await finish(verdict, exp);
        }
      }
      await sleep(Math.max(0, reconnectAt - Date.now()), deadline);
    }
  } catch (err) {
    if (err instanceof DeadlineError || (deadline.aborted && !(err instanceof CliError))) {
      if (expected) return await finish({ kind: 'timeout' }, expected);
      throw new CliError(ExitCode.timeout, 'timeout', `timed out after ${formatMs(settings.timeoutMs)} before the rollout of service ${serviceId} could be read`);
    }
    throw err;
  }
}

/** The rollout to wait for: the given one (checked against the history), else the current plan's. */
async function resolveExpected (client: ApiClient, view: RolloutView, opts: FollowOptions, signal: AbortSignal): Promise<Expected> {
  const plan = view.plan;
  if (opts.rolloutId === undefined) {
    if (!plan) {
      throw new CliError(ExitCode.refused, 'no-current-rollout', `service ${opts.serviceId} has no rollout to wait for (nothing was ever promoted)`, { currentGeneration: 0 });
    }
    return { rolloutId: plan.rolloutId, generation: plan.rolloutGeneration };
  }
  if (plan?.rolloutId === opts.rolloutId) return { rolloutId: plan.rolloutId, generation: plan.rolloutGeneration };
  if (opts.generation !== undefined) return { rolloutId: opts.rolloutId, generation: opts.generation };
  const wanted = opts.rolloutId;
  const entry = await findRollout(client, opts.serviceId, (e) => e.rolloutId === wanted, signal);
  if (!entry) {
    throw new CliError(ExitCode.refused, 'rollout-not-found', `service ${opts.serviceId} has no rollout '${wanted}' (current: ${plan?.rolloutId ?? 'none'})`, {
      currentRolloutId: plan?.rolloutId ?? null,
      currentGeneration: plan?.rolloutGeneration ?? 0,
    });
  }
  return { rolloutId: entry.rolloutId, generation: entry.generation };
}

/** One SSE block → its event name and data; undefined for comments-only blocks. */
export function parseSseBlock (block: string): { event: string, data: string, id?: string } | undefined {
  let event = 'message';
  let id: string | undefined;
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id') id = value;
  }
  if (data.length === 0) return undefined;
  return { event, data: data.join('\n'), ...(id !== undefined ? { id } : {}) };
}

export function formatMs (ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1_000 === 0) return `${ms / 1_000}s`;
  return `${ms}ms`;
}
