// Keeps a service page current: the SSE stream first (every `status` or `reset` event means
// "re-read the rollout view"), polling the view every 2 s only when the stream keeps failing.

import { eventsUrl } from './api.js';

const POLL_INTERVAL_MS = 2000;
/** Stream errors in a row (no successful open between them) before polling takes over. */
const FAILURES_BEFORE_POLLING = 3;
/** While polling, try the stream again every this many polls (30 s). */
const POLLS_BEFORE_STREAM_RETRY = 15;

/**
 * Follows one service. `onChange()` is called whenever the view may have changed (it re-reads
 * the view); `onMode(mode)` with `connecting`, `live`, `reconnecting` or `polling`.
 * Returns `stop()`.
 */
export function followService (serviceId, { onChange, onMode }) {
  let source;
  let failures = 0;
  let timer;
  let polls = 0;
  let mode;
  let stopped = false;

  const setMode = (next) => {
    if (next === mode) return;
    mode = next;
    onMode(next);
  };

  const closeStream = () => {
    if (!source) return;
    source.close();
    source = undefined;
  };

  function openStream ({ probing = false } = {}) {
    closeStream();
    const es = new window.EventSource(eventsUrl(serviceId));
    source = es;
    let probe = probing;
    es.addEventListener('open', () => {
      if (source !== es) return;
      probe = false;
      failures = 0;
      window.clearTimeout(timer);
      timer = undefined;
      setMode('live');
      onChange();
    });
    es.addEventListener('status', () => { if (source === es) onChange(); });
    es.addEventListener('reset', () => { if (source === es) onChange(); });
    es.addEventListener('error', () => {
      if (source !== es) return;
      closeStream();
      if (probe) return; // still polling: the next probe comes with a later poll
      failures++;
      onChange(); // the stream is down: re-read once (this is also how a 401 reaches the token form)
      if (failures >= FAILURES_BEFORE_POLLING) startPolling();
      else reconnectLater();
    });
  }

  function reconnectLater () {
    setMode('reconnecting');
    window.clearTimeout(timer);
    timer = window.setTimeout(() => { if (!stopped) openStream(); }, 1000 * failures);
  }

  function startPolling () {
    setMode('polling');
    polls = 0;
    const poll = () => {
      if (stopped || mode !== 'polling') return;
      polls++;
      onChange();
      if (polls % POLLS_BEFORE_STREAM_RETRY === 0) openStream({ probing: true });
      timer = window.setTimeout(poll, POLL_INTERVAL_MS);
    };
    timer = window.setTimeout(poll, POLL_INTERVAL_MS);
  }

  setMode('connecting');
  openStream();

  return function stop () {
    stopped = true;
    window.clearTimeout(timer);
    closeStream();
  };
}
