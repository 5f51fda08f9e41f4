// The overview: every service with its rollout state, filterable by name and state.

import { listAllServices } from './api.js';
import { fill, h, refreshAges, statusBadge, timeAgo } from './dom.js';

/** Refresh while the overview is open and the tab visible (the stream is per service; the list is one cheap read). */
const REFRESH_MS = 15_000;

const STATE_FILTERS = [
  ['', 'any state'],
  ['attention', 'needs attention (failed, mismatched)'],
  ['active', 'in progress (pending, deploying, verifying, rolling back)'],
  ['done', 'done (succeeded, rolled back)'],
  ['succeeded', 'succeeded'], ['failed', 'failed'], ['mismatched', 'mismatched'], ['pending', 'pending'],
  ['deploying', 'deploying'], ['verifying', 'verifying'], ['rolling-back', 'rolling back'], ['rolled-back', 'rolled back'],
  ['none', 'no rollout'],
];

const GROUPS = {
  attention: ['failed', 'mismatched'],
  active: ['pending', 'deploying', 'verifying', 'rolling-back'],
  done: ['succeeded', 'rolled-back'],
};

const statusOf = (service) => service.rollout?.status ?? (service.rollout ? 'pending' : 'none');

function matches (service, { name, state }) {
  if (name && !service.name.toLowerCase().includes(name.toLowerCase())) return false;
  if (!state) return true;
  return (GROUPS[state] ?? [state]).includes(statusOf(service));
}

function replicaSummary (rollout) {
  if (!rollout || rollout.requiredReplicaCount === undefined) return '—';
  const required = rollout.requiredReplicaCount;
  const { verifiedReplicaCount: verified = 0, healthyReplicaCount: healthy = 0, observedReplicaCount: observed = 0 } = rollout;
  return `${verified}/${required} verified · ${healthy} healthy · ${observed} observed`;
}

function serviceRow (service) {
  const r = service.rollout;
  return h('tr', { 'data-service-id': service.id, 'data-status': statusOf(service) },
    h('th', { scope: 'row' }, h('a', { href: `#/services/${encodeURIComponent(service.id)}`, 'data-focus-key': `service:${service.id}`, text: service.name })),
    h('td', {}, r ? statusBadge(r.status ?? 'pending') : statusBadge(undefined)),
    h('td', { class: 'mono', text: r ? r.releaseId : '—' }),
    h('td', { class: 'num', text: r ? String(r.rolloutGeneration) : '—' }),
    h('td', { text: replicaSummary(r) }),
    h('td', { class: 'num', text: r?.failedReplicaCount ? String(r.failedReplicaCount) : '0' }),
    h('td', {}, r?.mismatchReason ? h('code', { text: r.mismatchReason }) : '—'),
    h('td', {}, timeAgo(r?.updatedAt)),
    h('td', { text: service.automationHold ? 'on hold' : '' }));
}

/** Reads `#/?name=…&state=…` so a filtered view can be bookmarked and survives a reload. */
function filterFromHash () {
  const query = window.location.hash.split('?')[1] ?? '';
  const params = new URLSearchParams(query);
  return { name: params.get('name') ?? '', state: params.get('state') ?? '' };
}

function filterToHash (filter) {
  const params = new URLSearchParams();
  if (filter.name) params.set('name', filter.name);
  if (filter.state) params.set('state', filter.state);
  const query = params.toString();
  window.history.replaceState(null, '', `#/${query ? `?${query}` : ''}`);
}

function filterForm (filter, onInput) {
  const name = h('input', { id: 'filter-name', type: 'search', value: filter.name, autocomplete: 'off', spellcheck: 'false', 'aria-keyshortcuts': '/' });
  const state = h('select', { id: 'filter-state' }, STATE_FILTERS.map(([value, text]) => h('option', { value, text, selected: value === filter.state })));
  name.addEventListener('input', onInput);
  state.addEventListener('change', onInput);
  const form = h('form', { class: 'filters', role: 'search', onsubmit: (e) => e.preventDefault() },
    h('label', { for: 'filter-name', text: 'Name contains' }), name,
    h('label', { for: 'filter-state', text: 'State' }), state);
  return { form, read: () => ({ name: name.value.trim(), state: state.value }), focus: () => name.focus() };
}

const TABLE_HEAD = ['Service', 'State', 'Release', 'Generation', 'Replicas', 'Failed', 'Reason', 'Updated', 'Automation'];

/** Draws the overview into `root`; returns `dispose()`. */
export function overviewPage (root) {
  let services = [];
  let complete = true;
  const count = h('p', { id: 'service-count', 'aria-live': 'polite' });
  const body = h('tbody');
  const updated = h('p', { class: 'muted' });
  const error = h('p', { class: 'error', role: 'alert', hidden: true });
  const filters = filterForm(filterFromHash(), () => { filterToHash(filters.read()); draw(); });
  const refresh = h('button', { type: 'button', class: 'secondary', text: 'Refresh', onclick: () => { void load(); } });

  function draw () {
    const filter = filters.read();
    const shown = services.filter((s) => matches(s, filter));
    const empty = h('tr', {}, h('td', { colspan: TABLE_HEAD.length, text: services.length ? 'No service matches the filter.' : 'No services yet.' }));
    fill(body, shown.length > 0 ? shown.map(serviceRow) : empty);
    count.textContent = `${shown.length} of ${services.length}${complete ? '' : '+'} services`;
  }

  async function load () {
    try {
      ({ services, complete } = await listAllServices());
      error.hidden = true;
      fill(updated, 'Updated ', timeAgo(Date.now()));
      draw();
    } catch (err) {
      if (err.status === 401) return;
      fill(error, `Could not load the services: ${err.message} (${err.code})`);
      error.hidden = false;
    }
  }

  fill(root,
    h('h1', { tabindex: '-1', text: 'Services' }),
    filters.form,
    h('div', { class: 'toolbar' }, count, refresh, updated),
    error,
    h('table', { class: 'services' },
      h('caption', { class: 'sr-only', text: 'Services and their current rollout' }),
      h('thead', {}, h('tr', {}, TABLE_HEAD.map((text) => h('th', { scope: 'col', text })))),
      body));
  const onKey = (event) => {
    if (event.key === '/' && !(event.target instanceof window.HTMLInputElement || event.target instanceof window.HTMLSelectElement)) {
      event.preventDefault();
      filters.focus();
    }
  };
  document.addEventListener('keydown', onKey);
  const timer = window.setInterval(() => {
    if (document.visibilityState === 'visible') void load();
  }, REFRESH_MS);
  const ages = window.setInterval(() => refreshAges(root), 1000);
  void load();
  return () => {
    document.removeEventListener('keydown', onKey);
    window.clearInterval(timer);
    window.clearInterval(ages);
  };
}
