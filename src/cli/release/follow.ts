import type { RolloutSnapshot, RolloutView, StatusEvent } from './api.js';
import type { FollowSettings } from './args.js';
import { CliError, ExitCode } from './errors.js';
import { findRollout } from './history.js';
import { DeadlineError, sleep, type ApiClient } from './http.js';
import { judgeHistoryEntry, judgeSnapshot, judgeView, type Judgement, type RolloutRef, type Verdict } from './judge.js';
import type { FollowSink } from './output.js';
import { rolloutViewRequest } from './requests.js';
import { readEventStream, type SseMessage, type StreamEnd } from './sse.js';
import { formatMs, waitResultOf, type Via, type WaitResult } from './waitResult.js';

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
 *    the last revision seen; after 5 quick drops in a row that brought no change (no new
 *    revision; the opening event alone does not count), poll only.
 * 4. Outages while following are ridden out until `--timeout`; a 4xx ends the wait (exit 1).
 *
 * Judging: events of older generations are ignored (the stream starts with the latest
 * stored event, which may still be the previous rollout's); a different rollout at the
 * same or a newer generation means the expected one was superseded — it can never finish,
 * so the wait ends (exit 1). `succeeded` / `rolled-back` → exit 0; `failed` / `mismatched`
 * → exit 1 with the reason and the view's blocking reasons.
 *
 * The follower is a small state machine: `Mode` says what it does next (stream, poll while
 * waiting to reconnect, or poll only), each step returns the next `Transition`, and
 * `Tracking` holds everything the steps know about the rollout.
 */

export interface FollowOptions {
  serviceId: string;
  /** The rollout to wait for; default the current one. */
  rolloutId?: string;
  /** Its generation when known (promote --wait). */
  generation?: number;
  settings: FollowSettings;
  /** Ends the follow with `timeout`; default: `settings.timeoutMs` from now (none: no limit). */
  deadline?: AbortSignal;
  sink: FollowSink;
  log: (line: string) => void;
  /** Read the view once more at the end, whatever the outcome (status --watch shows it). */
  finalView?: boolean;
}

/** The result, and the last rollout view read (for a final drawing). */
export interface FollowOutcome {
  result: WaitResult;
  view?: RolloutView;
}

const MAX_RECONNECT_DELAY_MS = 30_000;
const MAX_QUICK_DROPS = 5;
/** A stream that lived this long before dropping did not drop "quickly". */
const QUICK_DROP_MS = 10_000;
const ANSWER_TIMEOUT_MS = 10_000;

type Mode =
  /** Open (or re-open) the event stream. */
  | { kind: 'stream' }
  /** The stream dropped: poll at once and every poll interval, then stream again after `delayMs`. */
  | { kind: 'reconnect', delayMs: number }
  /** No stream (unavailable, --no-sse, or it keeps dropping): poll, wait a poll interval, again. */
  | { kind: 'poll' };

type Transition = { kind: 'next', mode: Mode } | { kind: 'end', verdict: Verdict };

/** Everything the follower knows about the rollout it follows. */
interface Tracking {
  expected: RolloutRef;
  /** The last status revision seen: where a reconnected stream resumes. */
  revision: number;
  /** The last status of the expected rollout. */
  last?: RolloutSnapshot;
  lastView: RolloutView;
  via: Via;
  /** Set while the control plane does not answer polls: the last failure. */
  outage?: string;
  /** Quick stream drops in a row that brought no new revision. */
  drops: number;
}

export async function followRollout (client: ApiClient, opts: FollowOptions): Promise<FollowOutcome> {
  return await new RolloutFollower(client, opts).run();
}

class RolloutFollower {
  private readonly started = Date.now();
  private readonly deadline: AbortSignal;
  private readonly viewPath: string;
  private tracking?: Tracking;

  constructor (private readonly client: ApiClient, private readonly opts: FollowOptions) {
    const { timeoutMs } = opts.settings;
    this.deadline = opts.deadline ?? (timeoutMs === undefined ? new AbortController().signal : AbortSignal.timeout(timeoutMs));
    this.viewPath = rolloutViewRequest(opts.serviceId).path;
  }

  async run (): Promise<FollowOutcome> {
    try {
      const t = await this.start();
      const first = this.observeView(t.lastView);
      if (first) return await this.finish(first);
      let mode: Mode = this.opts.settings.sse ? { kind: 'stream' } : { kind: 'poll' };
      for (;;) {
        const next = await this.step(mode);
        if (next.kind === 'end') return await this.finish(next.verdict);
        mode = next.mode;
      }
    } catch (err) {
      if (err instanceof DeadlineError || (this.deadline.aborted && !(err instanceof CliError))) {
        if (this.tracking) return await this.finish({ kind: 'timeout' });
        const limit = this.opts.settings.timeoutMs;
        throw new CliError({
          exitCode: ExitCode.timeout,
          code: 'timeout',
          message: `timed out after ${formatMs(limit ?? Date.now() - this.started)} before the rollout of service ${this.opts.serviceId} could be read`,
        });
      }
      throw err;
    }
  }

  private async step (mode: Mode): Promise<Transition> {
    switch (mode.kind) {
      case 'stream': return await this.streamStep();
      case 'reconnect': return await this.reconnectStep(mode.delayMs);
      case 'poll': return await this.pollStep();
    }
  }

  /** Step 1: where are we, and which rollout do we wait for? */
  private async start (): Promise<Tracking> {
    const { body: view } = await this.client.get<RolloutView>(this.viewPath, { signal: this.deadline });
    const expected = await resolveExpected(this.client, view, this.opts, this.deadline);
    const limit = this.opts.settings.timeoutMs;
    this.opts.log(`waiting for rollout ${expected.rolloutId} (generation ${expected.generation}) of service ${this.opts.serviceId}, ` +
      (limit === undefined ? 'until it ends' : `at most ${formatMs(limit)}`));
    this.tracking = { expected, revision: view.revision, lastView: view, via: this.opts.settings.sse ? 'sse' : 'polling', drops: 0 };
    return this.tracking;
  }

  private get t (): Tracking {
    if (!this.tracking) throw new Error('the follower has not started');
    return this.tracking;
  }

  /** Step 2: stream until a verdict, or decide how to go on when the stream ends. */
  private async streamStep (): Promise<Transition> {
    const t = this.t;
    const opened = Date.now();
    const from = t.revision;
    const end: StreamEnd<Verdict> = await readEventStream({
      client: this.client,
      path: `${this.viewPath}/events`,
      lastEventId: t.revision,
      deadline: this.deadline,
      answerTimeoutMs: Math.max(this.opts.settings.pollIntervalMs, ANSWER_TIMEOUT_MS),
      onMessages: async (messages) => await this.observeMessages(messages),
    });
    const every = formatMs(this.opts.settings.pollIntervalMs);
    switch (end.kind) {
      case 'stopped':
        t.via = 'sse';
        return { kind: 'end', verdict: end.value };
      case 'unavailable':
        t.via = 'polling';
        this.opts.log(`event stream unavailable (${end.reason}); polling every ${every}`);
        return { kind: 'next', mode: { kind: 'poll' } };
      case 'dropped':
        // A stream that moved the revision was worth it. Its opening event alone is not: the server
        // always sends one (the current state: a reset up-to-date when nothing is new), so a stream
        // cut right after it told nothing new.
        t.drops = t.revision !== from || Date.now() - opened > QUICK_DROP_MS ? 1 : t.drops + 1;
        if (t.drops >= MAX_QUICK_DROPS) {
          t.via = 'polling';
          this.opts.log(`event stream keeps dropping (${end.reason}); polling every ${every} from now on`);
          return { kind: 'next', mode: { kind: 'poll' } };
        }
        this.opts.log(`event stream dropped (${end.reason}); polling until it reconnects`);
        return {
          kind: 'next',
          mode: { kind: 'reconnect', delayMs: Math.min(this.opts.settings.pollIntervalMs * 2 ** (t.drops - 1), MAX_RECONNECT_DELAY_MS) },
        };
    }
  }

  /** Step 3a: the stream dropped — poll at once and while waiting to reconnect. */
  private async reconnectStep (delayMs: number): Promise<Transition> {
    const interval = this.opts.settings.pollIntervalMs;
    let verdict = await this.poll();
    const reconnectAt = Date.now() + delayMs;
    while (!verdict && Date.now() + interval < reconnectAt) {
      await sleep(interval, this.deadline);
      verdict = await this.poll();
    }
    if (verdict) return this.endByPolling(verdict);
    await sleep(Math.max(0, reconnectAt - Date.now()), this.deadline);
    return { kind: 'next', mode: { kind: 'stream' } };
  }

  /** Step 3b: no stream — poll, then wait one poll interval. */
  private async pollStep (): Promise<Transition> {
    const verdict = await this.poll();
    if (verdict) return this.endByPolling(verdict);
    await sleep(this.opts.settings.pollIntervalMs, this.deadline);
    return { kind: 'next', mode: { kind: 'poll' } };
  }

  private endByPolling (verdict: Verdict): Transition {
    this.t.via = 'polling';
    return { kind: 'end', verdict };
  }

  /** One poll while following: outages are logged once and ridden out; a 4xx ends the wait. */
  private async poll (): Promise<Verdict | undefined> {
    const t = this.t;
    try {
      const { body } = await this.client.get<RolloutView>(this.viewPath, { signal: this.deadline, retries: 0 });
      if (t.outage !== undefined) this.opts.log(`control plane answers again (after: ${t.outage})`);
      delete t.outage;
      return this.observeView(body);
    } catch (err) {
      if (err instanceof CliError && err.exitCode === ExitCode.unreachable) {
        const failure = String(err.details['lastFailure']);
        if (t.outage === undefined) this.opts.log(`cannot read the rollout (${failure}); still trying until the timeout`);
        t.outage = failure;
        return undefined;
      }
      throw err;
    }
  }

  /** A rollout view (start, polls, refreshes for the sink): remembered, shown, judged. */
  private observeView (view: RolloutView): Verdict | undefined {
    const t = this.t;
    t.lastView = view;
    t.revision = view.revision;
    if (this.opts.sink.wantsViews) this.opts.sink.view(view);
    return this.apply(judgeView(view, t.expected));
  }

  /** The messages of one stream chunk; the view is re-read once per chunk when the sink draws replicas. */
  private async observeMessages (messages: SseMessage[]): Promise<Verdict | undefined> {
    const t = this.t;
    let moved = false;
    for (const message of messages) {
      const snapshot = this.snapshotOfMessage(message);
      if (!snapshot) continue;
      const judgement = judgeSnapshot(snapshot, t.expected);
      const verdict = this.apply(judgement);
      if (verdict) return verdict;
      moved ||= judgement.kind === 'progress';
    }
    if (moved && this.opts.sink.wantsViews) await this.refreshView();
    return undefined;
  }

  /** The status a `status` or `reset` event carries (advancing the revision), or undefined. */
  private snapshotOfMessage (message: SseMessage): RolloutSnapshot | undefined {
    const t = this.t;
    let data: unknown;
    try {
      data = JSON.parse(message.data);
    } catch {
      return undefined;
    }
    if (message.event === 'status') {
      const e = data as StatusEvent;
      if (typeof e.revision === 'number') t.revision = Math.max(t.revision, e.revision);
      return e;
    }
    if (message.event === 'reset') {
      // The server could not replay every change: it sends the current state instead.
      const reset = data as { revision?: number, latest?: StatusEvent | null };
      if (typeof reset.revision === 'number') t.revision = reset.revision;
      return reset.latest ?? undefined;
    }
    return undefined;
  }

  /** Records a judgement: progress is remembered and shown; a terminal state is remembered, shown by finish. */
  private apply (judgement: Judgement): Verdict | undefined {
    switch (judgement.kind) {
      case 'ignore':
        return undefined;
      case 'progress':
        this.t.last = judgement.snapshot;
        this.opts.sink.update(judgement.snapshot);
        return undefined;
      case 'terminal':
        this.t.last = judgement.snapshot;
        return judgement;
      case 'superseded':
        return judgement;
    }
  }

  /** The expected rollout's history entry, when it says the rollout succeeded once: that is its verdict. */
  private async succeededBefore (superseded: Verdict): Promise<Verdict | undefined> {
    const { expected, last } = this.t;
    try {
      const entry = await findRollout({ client: this.client, serviceId: this.opts.serviceId, predicate: (e) => e.rolloutId === expected.rolloutId });
      return entry ? judgeHistoryEntry(entry, last) : undefined;
    } catch {
      // The history cannot be read: the rollout was superseded, as far as this wait can tell.
      return superseded.kind === 'superseded' ? undefined : superseded;
    }
  }

  /** The view for the sink only: it does not move the stream's revision or judge anything. */
  private async refreshView (): Promise<void> {
    try {
      const { body } = await this.client.get<RolloutView>(this.viewPath, { signal: this.deadline, retries: 0 });
      this.t.lastView = body;
      this.opts.sink.view(body);
    } catch {
      // best effort: the next change tries again
    }
  }

  /** Step 4: the result, with the view's blocking reasons when the rollout did not succeed. */
  private async finish (ending: Verdict | { kind: 'timeout' }): Promise<FollowOutcome> {
    const t = this.t;
    // Superseded: it may have succeeded before it was (the wait started late, or missed the moment).
    const verdict = ending.kind === 'superseded' ? (await this.succeededBefore(ending)) ?? ending : ending;
    const succeeded = verdict.kind === 'terminal' && (verdict.snapshot.status === 'succeeded' || verdict.snapshot.status === 'rolled-back');
    const explain = !succeeded && verdict.kind !== 'superseded';
    if (explain || this.opts.sink.wantsViews || this.opts.finalView === true) {
      // One quick read (not bounded by the deadline, which may be what ended the wait).
      try {
        const { body } = await this.client.get<RolloutView>(this.viewPath, { retries: 0 });
        t.lastView = body;
      } catch {
        // keep the last view we had
      }
    }
    const own = t.lastView.status?.rolloutId === t.expected.rolloutId;
    const blocking = explain && own ? t.lastView.blocking : [];
    const deadline = explain && own && t.lastView.plan?.rolloutId === t.expected.rolloutId ? t.lastView.lifecycle?.deadlineExceeded : undefined;
    const result = waitResultOf({
      serviceId: this.opts.serviceId,
      expected: t.expected,
      verdict,
      last: t.last,
      blocking,
      deadline,
      via: t.via,
      elapsedMs: Date.now() - this.started,
      timeoutMs: this.opts.settings.timeoutMs,
      outage: t.outage,
    });
    return { result, view: t.lastView };
  }
}

/** The rollout to wait for: the given one (checked against the history), else the current plan's. */
async function resolveExpected (client: ApiClient, view: RolloutView, opts: FollowOptions, signal: AbortSignal): Promise<RolloutRef> {
  const plan = view.plan;
  if (opts.rolloutId === undefined) {
    if (!plan) {
      throw new CliError({
        exitCode: ExitCode.refused,
        code: 'no-current-rollout',
        message: `service ${opts.serviceId} has no rollout to wait for (nothing was ever promoted)`,
        details: { currentGeneration: 0 },
      });
    }
    return { rolloutId: plan.rolloutId, generation: plan.rolloutGeneration };
  }
  if (plan?.rolloutId === opts.rolloutId) return { rolloutId: plan.rolloutId, generation: plan.rolloutGeneration };
  if (opts.generation !== undefined) return { rolloutId: opts.rolloutId, generation: opts.generation };
  const wanted = opts.rolloutId;
  const entry = await findRollout({ client, serviceId: opts.serviceId, predicate: (e) => e.rolloutId === wanted, signal });
  if (!entry) {
    throw new CliError({
      exitCode: ExitCode.refused,
      code: 'rollout-not-found',
      message: `service ${opts.serviceId} has no rollout '${wanted}' (current: ${plan?.rolloutId ?? 'none'})`,
      details: { currentRolloutId: plan?.rolloutId ?? null, currentGeneration: plan?.rolloutGeneration ?? 0 },
    });
  }
  return { rolloutId: entry.rolloutId, generation: entry.generation };
}
