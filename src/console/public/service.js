// A service page: the current rollout (summary, live grid, blocking reasons), its releases
// with promote / roll back, abort, and the rollout history. Live over the SSE stream.

import { openActionDialog } from './actions.js';
import { getHistory, getReleases, getRollout, getService } from './api.js';
import { announce, fill, fillIfChanged, h, refreshAges, shortDigest, statusBadge, timeAgo, timeUntil } from './dom.js';
import { gridLegend, gridModel, renderGrid } from './grid.js';
import { serviceGovernance } from './governance.js';
import { followService } from './live.js';
import { historyTable, releasesTable, triggerText } from './tables.js';

const LIVE_TEXT = {
  connecting: 'Connecting to the live stream…',
  live: 'Live: updates as reports arrive.',
  reconnecting: 'Live stream interrupted: reconnecting…',
  polling: 'Live stream unavailable: checking every 2 s.',
};

const enc = encodeURIComponent;

/** Statuses after which the server may still add a follow-up to the view, and how long after the event to look for it. */
const SETTLED = new Set(['succeeded', 'rolled-back', 'failed', 'mismatched']);
const FOLLOW_UP_MS = 1500;

/**
 * A report that changes no count sends no status event, yet it is fresh evidence: once the newest
 * evidence on screen is this old the page re-reads the rollout view (at most once per this period),
 * so "evidence N s old" stays true while the agent keeps reporting. No reporter, no re-read.
 */
const EVIDENCE_STALE_MS = 4000;

/** When the newest evidence of the view arrived (the server's receipt time, else the reporter's); 0 without any. */
const newestEvidence = (view) => Math.max(0, ...(view?.reporters ?? []).map((r) => r.lastReceivedAt ?? r.lastReportAt ?? 0));

/** What a rollback to a release that never verified must be confirmed with. */
const NEVER_VERIFIED_ACK = 'I know this release never verified';

function section (id, title, ...children) {
  return h('section', { 'aria-labelledby': `${id}-title`, id },
    h('h2', { id: `${id}-title`, text: title }), ...children);
}

/** The status of the current plan (a status of an older rollout does not describe it). */
const currentStatus = (view) => (view.plan && view.status?.rolloutId === view.plan.rolloutId ? view.status : undefined);

/** What the user is looking at: the basis of every action's compare-and-swap. */
const expectationOf = (view) => ({ generation: view.plan?.rolloutGeneration ?? 0, rolloutId: view.plan?.rolloutId });

function fact (term, ...value) {
  return h('div', {}, h('dt', { text: term }), h('dd', {}, ...value));
}

/** A fact with an id (the lifecycle's, which tests and people look for by name). */
function namedFact (id, term, ...value) {
  return h('div', { id }, h('dt', { text: term }), h('dd', {}, ...value));
}

const seconds = (n) => `${n} s`;

/**
 * The current rollout's lifecycle (servers with lifecycle control): the deadline counting down
 * while it is in progress, when it succeeded, how it failed (and whether the deadline decided it),
 * what its automatic rollback came to, a push waiting for it, and the settings in force.
 */
function lifecycleFacts (view) {
  const l = view.lifecycle;
  if (!l) return [];
  const p = l.policy ?? {};
  const rollback = view.plan?.mode === 'rollback';
  const failure = l.failure;
  const deadline = l.deadlineExceeded;
  return [
    typeof l.deadlineAt === 'number'
      ? namedFact('lifecycle-deadline', 'Deadline', timeUntil(l.deadlineAt),
        h('span', { class: 'muted', text: ` — fails unless it progresses (${seconds(p.progressDeadlineSeconds ?? '?')} allowed without progress)` }))
      : [],
    typeof l.succeededAt === 'number' ? namedFact('lifecycle-succeeded', rollback ? 'Rolled back' : 'Succeeded', timeAgo(l.succeededAt)) : [],
    failure
      ? namedFact('lifecycle-failure', 'Failed', h('code', { text: failure.reason }),
        failure.by === 'deadline' && deadline
          ? ` — progress deadline exceeded: no progress for ${seconds(deadline.deadlineSeconds)} `
          : ` — ${failure.status} by a report `,
        timeAgo(failure.at))
      : [],
    !failure && deadline
      ? namedFact('lifecycle-failure', 'Failed', h('code', { text: deadline.reason }),
        ` — progress deadline exceeded: no progress for ${seconds(deadline.deadlineSeconds)} `, timeAgo(deadline.at))
      : [],
    l.automaticRollback ? namedFact('lifecycle-auto-rollback', 'Automatic rollback', `${l.automaticRollback.outcome} `, timeAgo(l.automaticRollback.at)) : [],
    l.queuedPromotion
      ? namedFact('lifecycle-queued', 'Queued push',
        h('span', { class: 'mono', text: l.queuedPromotion.tag }),
        ` (${l.queuedPromotion.releaseId}) promotes automatically once this rollout settles; queued `,
        timeAgo(l.queuedPromotion.queuedAt))
      : [],
    l.deferredPromotion ? namedFact('lifecycle-deferred', 'Queued push', `${l.deferredPromotion.outcome} `, timeAgo(l.deferredPromotion.at)) : [],
    namedFact('lifecycle-policy', 'Settings',
      `progress deadline ${seconds(p.progressDeadlineSeconds ?? '?')}, stability window ${seconds(p.stabilityWindowSeconds ?? '?')}, automatic rollback ` +
      (p.autoRollback?.enabled ? `on (${(p.autoRollback.triggers ?? []).join(', ')})` : 'off')),
  ];
}

function summary (view, entry, onAbort) {
  const plan = view.plan;
  if (!plan) return h('p', { class: 'muted', text: 'No rollout yet: promote a release below.' });
  const st = currentStatus(view);
  const counts = st
    ? `${st.verifiedReplicaCount} verified, ${st.healthyReplicaCount} healthy, ${st.observedReplicaCount} observed, ` +
      `${st.failedReplicaCount} failed of ${st.requiredReplicaCount} required`
    : `${plan.targetScope.requiredReplicaCount} required`;
  const hold = view.automationHold;
  const trigger = triggerText(entry);
  return h('div', {},
    h('dl', { class: 'facts inline' },
      fact('Status', statusBadge(st?.status ?? 'pending')),
      fact('Mode', plan.mode),
      trigger ? namedFact('rollout-trigger', 'Issued by the server', trigger) : [],
      fact('Release', h('span', { class: 'mono', text: plan.releaseId })),
      fact('Digest', h('span', { class: 'mono', title: plan.requestedDigest, text: shortDigest(plan.requestedDigest) })),
      fact('Generation', String(plan.rolloutGeneration), h('span', { class: 'muted mono', text: ` ${plan.rolloutId}` })),
      fact('Replicas', h('span', { id: 'replica-counts', text: counts })),
      st?.mismatchReason ? fact('Reason', h('code', { text: st.mismatchReason })) : [],
      fact('Updated', timeAgo(st?.updatedAt ?? plan.createdAt)),
      hold ? fact('Automation', `on hold since a rollback by ${hold.by} `, timeAgo(hold.since)) : [],
      lifecycleFacts(view)),
    abortButton(st?.status === 'succeeded' && st.rolloutId === plan.rolloutId, onAbort));
}

/**
 * Abort acts on a rollout in progress; on one that succeeded it is a rollback to the release verified
 * before it (docs/decisions.md "Abort after success"), and the button says so.
 */
function abortButton (succeeded, onAbort) {
  return succeeded
    ? h('button', {
      type: 'button',
      class: 'danger',
      id: 'abort',
      'data-focus-key': 'abort',
      text: 'Roll back to the last verified release…',
      title: 'This rollout succeeded: an abort now rolls it back to the newest other release whose rollout succeeded.',
      onclick: onAbort,
    })
    : h('button', { type: 'button', class: 'danger', id: 'abort', 'data-focus-key': 'abort', text: 'Abort rollout…', onclick: onAbort });
}

function blockingList (view) {
  if (!view.plan) return h('p', { class: 'muted', text: 'Nothing: there is no rollout.' });
  if (view.blocking.length === 0) return h('p', { class: 'muted', text: 'Nothing blocks this rollout.' });
  return h('ul', { class: 'blocking' }, view.blocking.map((b) =>
    h('li', { 'data-kind': b.kind }, h('code', { text: b.reason }), ' ', b.detail)));
}

/** Draws the service page into `root`; returns `dispose()`. */
export function servicePage (root, serviceId) {
  const state = {
    view: undefined,
    releases: [],
    releasesCursor: undefined,
    verifications: {}, // by release id: the signature verdict a trust policy gave (docs/trust.md)
    succeeded: {}, // by release id: when a rollout of it last succeeded (absent: it never verified)
    history: [],
    rolloutId: null,
    status: undefined,
    historyKey: undefined,
    followUp: undefined,
    note: undefined, // { rolloutId, text }: what an action just did, said again with the status change it causes
  };
  const el = {
    title: h('h1', { tabindex: '-1', text: 'Service' }),
    ident: h('p', { class: 'muted mono', text: serviceId }),
    error: h('p', { class: 'error', role: 'alert', hidden: true }),
    live: h('p', { class: 'live', id: 'live-mode', 'data-live': 'connecting', text: LIVE_TEXT.connecting }),
    summary: h('div', { id: 'rollout-summary' }),
    grid: h('div', { id: 'grid', class: 'grid-wrap' }),
    detail: h('p', { id: 'cell-detail', class: 'cell-detail', text: 'Select a cell (click it, or Tab into the grid and use the arrow keys) to read it here.' }),
    blocking: h('div', { id: 'blocking-list' }),
    releases: h('div', { id: 'releases-list' }),
    history: h('div', { id: 'history-list' }),
  };
  // Promotion requests and the pipeline (governance.js); an approval that issues a rollout is shown like a promotion.
  const governance = serviceGovernance(serviceId, { onIssued: (answer) => done(`Approved ${answer.promotionRequest.requestId}`)(answer) });
  fill(root,
    h('p', {}, h('a', { href: '#/', text: '← All services' })),
    el.title, el.ident, el.error,
    section('rollout', 'Current rollout', el.live, el.summary),
    section('replicas', 'Replicas by node', gridLegend(), el.grid, el.detail),
    section('blocking', 'What blocks success', el.blocking),
    section('releases', 'Releases', el.releases),
    governance.sections,
    section('history', 'Rollout history', el.history));

  const showError = (err) => {
    if (err.status === 401) return;
    el.error.textContent = err.code === 'service-not-found' ? `Service ${serviceId} does not exist.` : `Could not load: ${err.message} (${err.code})`;
    el.error.hidden = false;
  };

  function drawGrid () {
    const model = state.view && gridModel(state.view);
    if (!model) fill(el.grid, h('p', { class: 'muted', text: 'No rollout, so no target nodes yet.' }));
    else renderGrid(el.grid, model, (label) => { el.detail.textContent = label; });
  }

  /** The history's entry of the current rollout (its trigger), once the history is read. */
  const currentEntry = () => state.history.find((e) => e.rolloutId === state.view?.plan?.rolloutId);

  function drawSummary () {
    const view = state.view;
    const entry = currentEntry();
    fillIfChanged(el.summary, JSON.stringify([view.plan, currentStatus(view), view.automationHold, view.lifecycle, entry?.trigger]),
      () => summary(view, entry, openAbort));
  }

  function drawView () {
    const view = state.view;
    drawSummary();
    drawGrid();
    fillIfChanged(el.blocking, JSON.stringify([view.plan?.rolloutId, view.blocking]), () => blockingList(view));
    const status = currentStatus(view)?.status;
    const note = state.note && state.note.rolloutId === view.plan?.rolloutId ? state.note.text : undefined;
    if (note) state.note = undefined;
    if (state.status !== undefined && status !== state.status) {
      const st = currentStatus(view);
      // One message, not two in a row: the second would replace the first before a screen reader says it.
      const counts = st ? `: ${st.verifiedReplicaCount} of ${st.requiredReplicaCount} replicas verified` : '';
      announce(`${note ? `${note} ` : ''}Rollout ${status ?? 'none'}${counts}.`);
      // What the server does once a rollout settles (an automatic rollback refused, a queued push's outcome)
      // changes the view just after the status event, with no event of its own: look once more.
      if (SETTLED.has(status)) {
        window.clearTimeout(state.followUp);
        state.followUp = window.setTimeout(() => { void reloadView(); }, FOLLOW_UP_MS);
      }
    }
    state.status = status ?? null;
  }

  const releaseActions = { promote: openPromote, rollback: openRollback };
  function drawLists () {
    const more = state.releasesCursor ? () => { void loadReleases(true); } : undefined;
    const plan = state.view?.plan;
    const status = currentStatus(state.view ?? {})?.status;
    fillIfChanged(el.releases, JSON.stringify([state.releases, plan?.rolloutId, state.releasesCursor, state.verifications, state.succeeded]),
      () => releasesTable(state.releases, plan, releaseActions, more, state.verifications, state.succeeded));
    const lifecycle = state.view?.lifecycle;
    fillIfChanged(el.history, JSON.stringify([state.history, plan?.rolloutId, status, lifecycle?.succeededAt, lifecycle?.failure]),
      () => historyTable(state.history, plan, status, lifecycle));
    if (state.view) drawSummary(); // the current rollout's trigger comes with the history
  }

  /** What the history says of the current rollout changes with its status and milestones: re-read it then (one read per change). */
  const historyKey = (view) => JSON.stringify([view.plan?.rolloutId, currentStatus(view)?.status, view.lifecycle?.succeededAt, view.lifecycle?.failure?.at,
    view.lifecycle?.deadlineExceeded?.at, view.lifecycle?.automaticRollback?.at]);

  async function loadHistory () {
    state.history = (await getHistory(serviceId)).rollouts;
    drawLists();
  }

  async function loadReleases (append = false) {
    const page = await getReleases(serviceId, append ? state.releasesCursor : undefined);
    state.releases = append ? [...state.releases, ...page.releases] : page.releases;
    state.releasesCursor = page.nextCursor;
    state.verifications = { ...(append ? state.verifications : {}), ...page.verifications };
    state.succeeded = { ...(append ? state.succeeded : {}), ...page.lastSucceededAt };
    drawLists();
  }

  async function loadLists () {
    const [releases, history] = await Promise.all([getReleases(serviceId), getHistory(serviceId)]);
    state.releases = releases.releases;
    state.releasesCursor = releases.nextCursor;
    state.verifications = { ...releases.verifications };
    state.succeeded = { ...releases.lastSucceededAt };
    state.history = history.rollouts;
    drawLists();
    void governance.reload(); // a new rollout may have issued a request, or voided one
  }

  // One read at a time; a change that arrives during a read triggers exactly one more.
  let reading;
  let again = false;
  async function reloadView () {
    if (reading) {
      again = true;
      return reading;
    }
    reading = (async () => {
      do {
        again = false;
        try {
          state.view = await getRollout(serviceId);
          el.error.hidden = true;
          drawView();
          const rolloutId = state.view.plan?.rolloutId ?? '';
          const historyWas = state.historyKey;
          state.historyKey = historyKey(state.view);
          if (rolloutId !== state.rolloutId) {
            state.rolloutId = rolloutId;
            await loadLists(); // a new rollout: the releases' counters and the history changed
          } else if (state.historyKey !== historyWas) {
            await loadHistory(); // its outcome moved on
          } else drawLists();
        } catch (err) {
          showError(err);
        }
      } while (again);
    })();
    try {
      await reading;
    } finally {
      reading = undefined;
    }
  }

  function done (what) {
    return ({ service }) => {
      const plan = service.data.imageDeployment;
      const text = `${what}: rollout ${plan?.rolloutId ?? ''} (generation ${plan?.rolloutGeneration ?? '?'}) issued.`;
      state.note = { rolloutId: plan?.rolloutId, text };
      announce(text);
      void reloadView();
    };
  }

  function openPromote (release) {
    const expected = expectationOf(state.view);
    openActionDialog({
      title: `Promote ${release.data.observedTags.join(', ') || release.id}`,
      summary: `Issues a new rollout of ${release.data.digestPinnedImageReference} to every target node.`,
      confirmLabel: 'Promote',
      path: `/v1/services/${enc(serviceId)}/image-releases/${enc(release.id)}/promote`,
      expected,
      body: (reason) => ({
        expectedRolloutGeneration: expected.generation,
        ...(expected.rolloutId ? { expectedCurrentRolloutId: expected.rolloutId } : {}),
        enableImmutableImage: true,
        ...(reason ? { reason } : {}),
      }),
      // 202 approval-required: a promotion request was made, nothing issued (governance.js lists it).
      onDone: (answer) => (answer.code === 'approval-required' ? governance.requested(answer) : done(`Promoted ${release.id}`)(answer)),
      onReload: () => { void reloadView(); },
    });
  }

  function openRollback (release) {
    const expected = expectationOf(state.view);
    const verified = state.succeeded[release.id] !== undefined;
    openActionDialog({
      title: `Roll back to ${release.data.observedTags.join(', ') || release.id}`,
      summary: `Replaces the current rollout with ${release.data.digestPinnedImageReference}, and holds automatic promotion until the next ` +
        `explicit promotion.${verified ? '' : ' No rollout of this release ever succeeded: it was never verified on the target nodes.'}`,
      ...(verified ? {} : { acknowledge: NEVER_VERIFIED_ACK }),
      confirmLabel: 'Roll back',
      path: `/v1/services/${enc(serviceId)}/image-releases/${enc(release.id)}/rollback`,
      expected,
      body: (reason) => ({ expectedRolloutGeneration: expected.generation, expectedCurrentRolloutId: expected.rolloutId, ...(reason ? { reason } : {}) }),
      onDone: done(`Rolled back to ${release.id}`),
      onReload: () => { void reloadView(); },
    });
  }

  function openAbort () {
    const expected = expectationOf(state.view);
    openActionDialog({
      title: 'Abort the current rollout',
      summary: `Rolls back rollout ${expected.rolloutId} to the last release that was verified on every target node.`,
      confirmLabel: 'Abort rollout',
      path: `/v1/services/${enc(serviceId)}/rollout/abort`,
      expected,
      body: (reason) => ({ expectedRolloutGeneration: expected.generation, expectedCurrentRolloutId: expected.rolloutId, ...(reason ? { reason } : {}) }),
      onDone: done('Aborted'),
      onReload: () => { void reloadView(); },
    });
  }

  let stopLive;
  let disposed = false;
  (async () => {
    try {
      const { service } = await getService(serviceId);
      el.title.textContent = service.data.name;
      document.title = `${service.data.name} · Cloudly release console`;
      void governance.showPipeline(service);
    } catch (err) {
      showError(err);
      return;
    }
    await reloadView();
    if (!disposed) {
      stopLive = followService(serviceId, {
        onChange: () => { void reloadView(); },
        onMode: (mode) => { el.live.dataset.live = mode; el.live.textContent = LIVE_TEXT[mode]; },
      });
    }
  })();
  // Ages and "not yet stable" counters move with the clock; no network.
  let lastReread = 0;
  function rereadIfStale (now = Date.now()) {
    const newest = newestEvidence(state.view);
    if (newest === 0 || document.hidden || now - newest < EVIDENCE_STALE_MS || now - lastReread < EVIDENCE_STALE_MS) return;
    lastReread = now;
    void reloadView();
  }
  const tick = window.setInterval(() => { refreshAges(root); if (state.view) drawGrid(); rereadIfStale(); }, 1000);
  return () => {
    disposed = true;
    governance.dispose();
    stopLive?.();
    window.clearInterval(tick);
    window.clearTimeout(state.followUp);
  };
}
