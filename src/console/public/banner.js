// The stop-the-line banner (docs/governance.md "Stop-the-line"), shown above every console page while
// an admin's global switch refuses every promotion: who switched it on, since when, and why. It is
// read from GET /v1/governance when a page opens (every navigation) and again every 15 s while the tab
// is visible, so an incident declared elsewhere reaches an open console without a reload.

import { call } from './api.js';
import { fill, formatTime, h, refreshAges, timeAgo } from './dom.js';

const REFRESH_MS = 15_000;

export const getGovernance = () => call('/v1/governance');

function bannerContent (stop) {
  return [
    h('strong', { text: 'Stop-the-line: every promotion of every service is refused.' }),
    ' Switched on by ', h('span', { class: 'who', text: stop.by ?? 'unknown' }),
    typeof stop.since === 'number' ? [` since ${formatTime(stop.since)} (`, timeAgo(stop.since), ')'] : [],
    ': ', h('q', { class: 'why', text: stop.reason ?? '' }),
    h('span', { class: 'still' }, ' Rollbacks and aborts still go through.'),
  ].flat();
}

/**
 * Drives the banner element: `refresh()` reads the switch now; `hide()` (signed out) clears it and
 * stops reading until the next `refresh()`. A failed read keeps what was shown: a banner must not
 * vanish because one read was lost (a 401 sends the page to the token form anyway).
 */
export function stopTheLineBanner (el) {
  let shown; // the switch as last drawn (JSON), to redraw only on change
  let active = false;
  let generation = 0; // a read started before hide() must not draw after it

  function draw (stop) {
    const on = stop?.active === true;
    const signature = on ? JSON.stringify([stop.by, stop.since, stop.reason]) : 'off';
    el.hidden = !on;
    el.dataset.active = String(on);
    if (signature === shown) return;
    shown = signature;
    if (on) fill(el, bannerContent(stop));
    else fill(el);
  }

  async function refresh () {
    active = true;
    const mine = generation;
    try {
      const answer = await getGovernance();
      if (active && mine === generation) draw(answer.governance?.stopTheLine);
    } catch {
      // Kept as shown; the next read tries again.
    }
  }

  function hide () {
    active = false;
    generation++;
    draw(undefined);
  }

  window.setInterval(() => {
    if (!active || document.hidden) return;
    void refresh();
  }, REFRESH_MS);
  // The "since" age moves with the clock, no network.
  window.setInterval(() => { if (!el.hidden) refreshAges(el); }, 1000);

  return { refresh, hide };
}
