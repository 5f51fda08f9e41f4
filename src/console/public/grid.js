// The live grid: target nodes (rows) × replica slots 1..replicasPerNode (columns), each
// cell coloured AND marked by its state, with the upstream reason, the deployment id and the
// evidence age in its label and tooltip. Replicas that do not count sit beside the slots.

import { formatDuration, h } from './dom.js';

/** Every cell state: its mark (never the only signal: the label says it in words) and its legend text. */
export const cellStates = {
  verified: { mark: '✓', legend: 'verified and healthy: runs the planned digest, proven by runtime evidence' },
  progress: { mark: '…', legend: 'healthy, not verified yet, or verified but not yet stable' },
  pending: { mark: '○', legend: 'not healthy yet (scheduled, starting, unhealthy)' },
  failed: { mark: '✕', legend: 'failed' },
  mismatched: { mark: '≠', legend: 'mismatched: its evidence does not match the plan (hatched)' },
  missing: { mark: '', legend: 'missing: no replica reported for this slot (outline)' },
};

/** What a replica's state is, in words; `stability` (when the server sends it) can hold a verified replica back. */
function describeReplica (replica, now) {
  if (!replica) return { state: 'missing', words: 'missing, no replica reported' };
  if (replica.verification === 'mismatched') return { state: 'mismatched', words: 'mismatched, does not run the planned digest' };
  if (replica.health === 'failed') return { state: 'failed', words: 'failed' };
  if (replica.health !== 'healthy') return { state: 'pending', words: `not healthy yet (${replica.deploymentStatus})` };
  if (replica.verification !== 'verified') return { state: 'progress', words: 'healthy, not verified yet' };
  // The counter moves with this browser's clock between reads, from the server's runningVerifiedSince.
  const stability = replica.stability;
  const since = typeof stability?.runningVerifiedSince === 'number' ? Math.max(0, now - stability.runningVerifiedSince) : 0;
  if (stability?.state === 'not-yet-stable' && since < stability.windowMs) {
    const held = `${formatDuration(Math.floor(since / 1000) * 1000)} of ${formatDuration(stability.windowMs)}`;
    return { state: 'progress', words: `healthy and verified, not yet stable, ${held}` };
  }
  if (stability && stability.state !== 'stable') return { state: 'progress', words: 'healthy and verified, not yet stable, waiting for the next report' };
  return { state: 'verified', words: 'verified and healthy' };
}

/** When the evidence behind a node's cells arrived: the server's receipt time when it has one, else the reporter's time. */
const evidenceAt = (reporter) => reporter?.lastReceivedAt ?? reporter?.lastReportAt;

/** One cell: its key (stable across redraws), state, mark and the sentence that labels it. */
export function cellModel ({ node, place, replica, reporter, now }) {
  const { state, words } = describeReplica(replica, now);
  const parts = [`${node}, ${place}: ${words}`];
  if (replica?.mismatchReason) parts.push(`reason ${replica.mismatchReason}`);
  if (replica?.runningDigest) parts.push(`runs ${replica.runningDigest}`);
  if (replica) parts.push(`deployment ${replica.deploymentId} (${replica.deploymentStatus})`);
  if (replica && !replica.counted) {
    parts.push(replica.verification === 'other-rollout' ? 'not counted: of another rollout' : 'not counted: beyond the replicas per node');
  }
  const at = evidenceAt(reporter);
  if (reporter && typeof at === 'number') parts.push(`evidence ${formatDuration(now - at)} old (reporter ${reporter.reporterId})`);
  else if (!reporter) parts.push('no reporter covers this node');
  return { state, mark: cellStates[state].mark, label: parts.join('; ') };
}

/** The replicas of each node, with the reporter that covers it. */
function replicasByNode (reporters) {
  const byNode = new Map();
  const entry = (node, reporter) => {
    if (!byNode.has(node)) byNode.set(node, { reporter, replicas: [] });
    return byNode.get(node);
  };
  for (const reporter of reporters) for (const node of reporter.nodeNames) entry(node, reporter);
  for (const reporter of reporters) for (const replica of reporter.replicas) entry(replica.nodeName, reporter).replicas.push(replica);
  return byNode;
}

/** The whole grid of a rollout view, or undefined without a plan. */
export function gridModel (view, now = Date.now()) {
  if (!view.plan) return undefined;
  const perNode = view.plan.targetScope.replicasPerNode;
  const byNode = replicasByNode(view.reporters);
  const rows = view.plan.targetScope.targetNodeNames.map((node) => {
    const { reporter, replicas } = byNode.get(node) ?? { reporter: undefined, replicas: [] };
    const counted = replicas.filter((r) => r.counted);
    const extra = replicas.filter((r) => !r.counted);
    const slots = Array.from({ length: perNode }, (_, i) => ({
      key: `${node}#${i + 1}`, ...cellModel({ node, place: `slot ${i + 1}`, replica: counted[i], reporter, now }),
    }));
    const extras = extra.map((replica, i) => ({
      key: `${node}+${replica.deploymentId}`, ...cellModel({ node, place: `extra replica ${i + 1}`, replica, reporter, now }),
    }));
    return { node, slots, extras };
  });
  return { perNode, rows };
}

const plural = (n, noun) => `${n} ${noun}${n === 1 ? '' : 's'}`;

const shapeOf = (model) => `${model.perNode}|${model.rows.map((r) => `${r.node}:${r.extras.map((e) => e.key).join(',')}`).join('|')}`;

function cellButton (cell) {
  return h('button', { type: 'button', class: 'cell', tabindex: '-1', 'data-key': cell.key }, h('span', { class: 'mark', 'aria-hidden': 'true' }));
}

function updateCell (button, cell) {
  button.className = `cell state-${cell.state}`;
  button.dataset.state = cell.state;
  button.setAttribute('aria-label', cell.label);
  button.title = cell.label;
  button.firstChild.textContent = cell.mark;
}

function buildTable (model) {
  const head = h('tr', {}, h('th', { scope: 'col', text: 'Node' }),
    model.rows.length === 0 ? [] : Array.from({ length: model.perNode }, (_, i) => h('th', { scope: 'col', text: `Slot ${i + 1}` })),
    h('th', { scope: 'col', text: 'Not counted' }));
  const body = model.rows.map((row) => h('tr', { 'data-node': row.node },
    h('th', { scope: 'row', text: row.node }),
    row.slots.map((cell) => h('td', {}, cellButton(cell))),
    h('td', { class: 'extras' }, row.extras.map(cellButton))));
  return h('table', { class: 'grid' },
    h('caption', { text: `${plural(model.rows.length, 'target node')} × ${plural(model.perNode, 'replica slot')}` }),
    h('thead', {}, head), h('tbody', {}, body));
}

/** Arrow keys move between cells (one tab stop for the whole grid: a roving tabindex). */
function moveFocus (table, from, key) {
  const rows = [...table.tBodies[0].rows].map((tr) => [...tr.querySelectorAll('button.cell')]);
  const r = rows.findIndex((cells) => cells.includes(from));
  if (r < 0) return false;
  const c = rows[r].indexOf(from);
  const target = {
    ArrowRight: () => rows[r][c + 1],
    ArrowLeft: () => rows[r][c - 1],
    ArrowDown: () => rows[r + 1]?.[Math.min(c, rows[r + 1].length - 1)],
    ArrowUp: () => rows[r - 1]?.[Math.min(c, rows[r - 1].length - 1)],
    Home: () => rows[r][0],
    End: () => rows[r].at(-1),
  }[key]?.();
  if (!target) return key in { ArrowRight: 1, ArrowLeft: 1, ArrowDown: 1, ArrowUp: 1, Home: 1, End: 1 };
  from.tabIndex = -1;
  target.tabIndex = 0;
  target.focus();
  return true;
}

/**
 * Draws (or redraws) the grid into `container`. Same shape: the cells are updated in place,
 * so focus and the selected cell survive live updates. `onSelect(label)` shows a cell's text.
 */
export function renderGrid (container, model, onSelect) {
  let table = container.querySelector('table.grid');
  if (!table || table.dataset.shape !== shapeOf(model)) {
    const focusedKey = container.contains(document.activeElement) ? document.activeElement.dataset.key : undefined;
    const selectedKey = table?.dataset.selected;
    table = buildTable(model);
    table.dataset.shape = shapeOf(model);
    table.addEventListener('keydown', (event) => {
      if (event.target instanceof window.HTMLButtonElement && moveFocus(table, event.target, event.key)) event.preventDefault();
    });
    const select = (button) => {
      table.dataset.selected = button.dataset.key;
      onSelect(button.getAttribute('aria-label'));
    };
    table.addEventListener('focusin', (event) => { if (event.target.matches('button.cell')) select(event.target); });
    table.addEventListener('click', (event) => { const b = event.target.closest('button.cell'); if (b) select(b); });
    container.replaceChildren(table);
    const keep = table.querySelector(`button.cell[data-key="${window.CSS.escape(selectedKey ?? focusedKey ?? '')}"]`) ?? table.querySelector('button.cell');
    if (keep) keep.tabIndex = 0;
    if (keep && keep.dataset.key === selectedKey) table.dataset.selected = selectedKey;
    if (focusedKey && keep) keep.focus();
  }
  const cells = new Map(model.rows.flatMap((row) => [...row.slots, ...row.extras]).map((cell) => [cell.key, cell]));
  for (const button of table.querySelectorAll('button.cell')) updateCell(button, cells.get(button.dataset.key));
  const selected = table.dataset.selected && cells.get(table.dataset.selected);
  if (selected) onSelect(selected.label);
}

/** The legend: each state's swatch and meaning. */
export function gridLegend () {
  return h('ul', { class: 'legend', id: 'grid-legend', 'aria-label': 'What the cells mean' },
    Object.entries(cellStates).map(([state, { mark, legend }]) =>
      h('li', {}, h('span', { class: `cell swatch state-${state}`, 'aria-hidden': 'true' }, h('span', { class: 'mark', text: mark })), ` ${legend}`)));
}
