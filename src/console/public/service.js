// A service page: the current rollout (summary, live grid, blocking reasons), its releases
// with promote / roll back, abort, and the rollout history. Live over the SSE stream.

import { openActionDialog } from './actions.js';
import { getHistory, getReleases, getRollout, getService } from './api.js';
import { announce, fill, fillIfChanged, h, refreshAges, shortDigest, statusBadge, timeAgo } from './dom.js';
import { gridLegend, gridModel, renderGrid } from './grid.js';
import { followService } from './live.js';
import { historyTable, releasesTable } from './tables.js';

const LIVE_TEXT = {
  connecting: 'Connecting to the live stream…',
  live: 'Live: updates as reports arrive.',
  reconnecting: 'Live stream interrupted: reconnecting…',
  polling: 'Live stream unavailable: checking every 2 s.',
};

const enc = encodeURIComponent;

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

function summary (view, onAbort) {
  const plan = view.plan;
  if (!plan) return h('p', { class: 'muted', text: 'No rollout yet: promote a release below.' });
  const st = currentStatus(view);
  const counts = st
    ? `${st.verifiedReplicaCount} verified, ${st.healthyReplicaCount} healthy, ${st.observedReplicaCount} observed, ` +
      `${st.failedReplicaCount} failed of ${st.requiredReplicaCount} required`
    : `${plan.targetScope.requiredReplicaCount} required`;
  const hold = view.automationHold;
  return h('div', {},
    h('dl', { class: 'facts inline' },
      fact('Status', statusBadge(st?.status ?? 'pending')),
      fact('Mode', plan.mode),
      fact('Release', h('span', { class: 'mono', text: plan.releaseId })),
      fact('Digest', h('span', { class: 'mono', title: plan.requestedDigest, text: shortDigest(plan.requestedDigest) })),
      fact('Generation', String(plan.rolloutGeneration), h('span', { class: 'muted mono', text: ` ${plan.rolloutId}` })),
      fact('Replicas', h('span', { id: 'replica-counts', text: counts })),
      st?.mismatchReason ? fact('Reason', h('code', { text: st.mismatchReason })) : [],
      fact('Updated', timeAgo(st?.updatedAt ?? plan.createdAt)),
      hold ? fact('Automation', `on hold since a rollback by ${hold.by} `, timeAgo(hold.since)) : []),
    h('button', { type: 'button', class: 'danger', id: 'abort', 'data-focus-key': 'abort', text: 'Abort rollout…', onclick: onAbort }));
}

function blockingList (view) {
  if (!view.plan) return h('p', { class: 'muted', text: 'Nothing: there is no rollout.' });
  if (view.blocking.length === 0) return h('p', { class: 'muted', text: 'Nothing blocks this rollout.' });
  return h('ul', { class: 'blocking' }, view.blocking.map((b) =>
    h('li', { 'data-kind': b.kind }, h('code', { text: b.reason }), ' ', b.detail)));
}

/** Draws the service page into `root`; returns `dispose()`. */
export function servicePage (root, serviceId) {
  const state = { view: undefined, releases: [], releasesCursor: undefined, history: [], rolloutId: null, status: undefined };
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
  fill(root,
    h('p', {}, h('a', { href: '#/', text: '← All services' })),
    el.title, el.ident, el.error,
    section('rollout', 'Current rollout', el.live, el.summary),
    section('replicas', 'Replicas by node', gridLegend(), el.grid, el.detail),
    section('blocking', 'What blocks success', el.blocking),
    section('releases', 'Releases', el.releases),
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

  function drawView () {
    const view = state.view;
    fillIfChanged(el.summary, JSON.stringify([view.plan, currentStatus(view), view.automationHold]), () => summary(view, openAbort));
    drawGrid();
    fillIfChanged(el.blocking, JSON.stringify([view.plan?.rolloutId, view.blocking]), () => blockingList(view));
    const status = currentStatus(view)?.status;
    if (state.status !== undefined && status !== state.status) {
      const st = currentStatus(view);
      announce(`Rollout ${status ?? 'none'}${st ? `: ${st.verifiedReplicaCount} of ${st.requiredReplicaCount} replicas verified` : ''}.`);
    }
    state.status = status ?? null;
  }

  const releaseActions = { promote: openPromote, rollback: openRollback };
  function drawLists () {
    const more = state.releasesCursor ? () => { void loadReleases(true); } : undefined;
    const plan = state.view?.plan;
    const status = currentStatus(state.view ?? {})?.status;
    fillIfChanged(el.releases, JSON.stringify([state.releases, plan?.rolloutId, state.releasesCursor]),
      () => releasesTable(state.releases, plan, releaseActions, more));
    fillIfChanged(el.history, JSON.stringify([state.history, plan?.rolloutId, status]), () => historyTable(state.history, plan, status));
  }

  async function loadReleases (append = false) {
    const page = await getReleases(serviceId, append ? state.releasesCursor : undefined);
    state.releases = append ? [...state.releases, ...page.releases] : page.releases;
    state.releasesCursor = page.nextCursor;
    drawLists();
  }

  async function loadLists () {
    const [releases, history] = await Promise.all([getReleases(serviceId), getHistory(serviceId)]);
    state.releases = releases.releases;
    state.releasesCursor = releases.nextCursor;
    state.history = history.rollouts;
    drawLists();
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
          if (rolloutId !== state.rolloutId) {
            state.rolloutId = rolloutId;
            await loadLists(); // a new rollout: the releases' counters and the history changed
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
      announce(`${what}: rollout ${plan?.rolloutId ?? ''} (generation ${plan?.rolloutGeneration ?? '?'}) issued.`);
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
      onDone: done(`Promoted ${release.id}`),
      onReload: () => { void reloadView(); },
    });
  }

  function openRollback (release) {
    const expected = expectationOf(state.view);
    openActionDialog({
      title: `Roll back to ${release.data.observedTags.join(', ') || release.id}`,
      summary: `Replaces the current rollout with ${release.data.digestPinnedImageReference}, and holds automatic promotion until the next explicit promotion.`,
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
  const tick = window.setInterval(() => { refreshAges(root); if (state.view) drawGrid(); }, 1000);
  return () => {
    disposed = true;
    stopLive?.();
    window.clearInterval(tick);
  };
}
