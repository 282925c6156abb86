// rushline waiting room page: a session, a place in line, the seat map and
// the live events table. Plain ES module, no build step, no outside
// requests; it speaks the HTTP API described in API.md. Operators use the
// dashboard (dashboard.html). Korean and English: room-i18n.js.
import {
  $, api, enc, tab as store, friendly, el, setText, showAlert, hideAlert, fmtNum, fmtTime, fmtEta, fmtClock,
  eventState, cssVar, readSeats, dateFormat,
} from '/lib.js';
import { t, tr, live, initLang } from '/i18n.js';
import '/room-i18n.js';
import { proveWork as solveChallenge } from '/pow.js';

const POLL_MS = 1000;        // queue status
const SEATS_MS = 2000;       // seat map while ACTIVE
const EVENTS_MS = 2000;      // events table
const EVENTS_HIDDEN_MS = 10000;
const HEALTH_MS = 10000;
const SEAT_PAGE_LIMIT = 1500; // most seat buttons drawn at once
const MAX_SAMPLES = 600;
const MAX_STATS = 50;        // events whose stats the table refreshes

// baseTitle is the page's own title, in the page's language.
const baseTitle = () => tr('rushline — waiting room');

// ---------- session (this tab only) ----------

function session() {
  const s = store.get('session');
  if (!s || !s.access_token) return null;
  if (s.expires_at && Date.parse(s.expires_at) <= Date.now()) {
    store.del('session');
    return null;
  }
  return s;
}

// bearer is the session's access token, if there is a session.
function bearer() {
  const s = session();
  return s ? s.access_token : undefined;
}

function fmtEtaWords(s) {
  if (typeof s !== 'number' || !isFinite(s)) return '';
  if (s <= 0) return t('room.eta.soon');
  if (s < 60) return t('room.eta.s', { n: Math.round(s) });
  if (s < 3600) return t('room.eta.m', { n: Math.round(s / 60) });
  return t('room.eta.h', { n: Math.round(s / 360) / 10 });
}

// fmtWait is the wait shown beside the place: about so long.
function fmtWait(s) {
  return typeof s === 'number' && s > 0 ? t('room.wait', { eta: fmtEta(s) }) : fmtEta(s);
}

function fmtInterval(ms) {
  if (ms % 1000 === 0) return t('room.secs', { n: ms / 1000 });
  return t('room.ms', { n: ms });
}

// ---------- events data (shared by all panels) ----------

const events = {
  list: [],            // as GET /events answers, in its order
  byId: new Map(),     // id -> event with stats (GET /events/{id})
  loaded: false,
};

function eventLabel(ev) {
  return ev.name ? `${ev.name} (${ev.id})` : ev.id;
}

function policyText(ev) {
  const per = t('room.per', { n: ev.admit_batch, every: fmtInterval(ev.admit_interval_ms) });
  switch (ev.policy) {
    case 'batch': return t('room.policy.batch', { per });
    case 'adaptive': return t('room.policy.adaptive', { per, tps: ev.max_tps });
    default: return t('room.policy.capacity', { per, n: ev.capacity });
  }
}

let eventsTimer = 0;
let eventsBusy = false;

async function refreshEvents() {
  clearTimeout(eventsTimer);
  if (eventsBusy) return;
  eventsBusy = true;
  try {
    const r = await api('GET', '/events');
    // The server lists practice races to the admin key only (the dashboard).
    const list = Array.isArray(r && r.events) ? r.events : [];
    // Stats cost one request per event: fetch them for the first ones only.
    const details = await Promise.all(list.map((ev, i) => (i < MAX_STATS
      ? api('GET', '/events/' + enc(ev.id)).catch(() => null) : null)));
    events.list = list.map((ev, i) => details[i] || events.byId.get(ev.id) || ev);
    events.byId = new Map(events.list.map((ev) => [ev.id, ev]));
    events.loaded = true;
    hideAlert($('events-alert'));
    $('events-live').dataset.state = 'live';
    live($('events-live'), () => t('room.live'));
    renderEventsTable();
    renderEventSelect();
  } catch (err) {
    showAlert($('events-alert'), () => friendly(err, 'events'));
    $('events-live').dataset.state = 'stale';
    live($('events-live'), () => t('room.reconnecting'));
    if (!events.loaded) renderEventSelect();
  } finally {
    eventsBusy = false;
    eventsTimer = setTimeout(refreshEvents, document.hidden ? EVENTS_HIDDEN_MS : EVENTS_MS);
  }
}

document.addEventListener('visibilitychange', () => {
  if (!document.hidden) refreshEvents();
});

// keyedRows keeps one <tr> per event id, so a refresh does not rebuild
// rows (and does not steal keyboard focus from their buttons).
function keyedRows(tbody, ids, make) {
  const have = new Map();
  for (const tr of Array.from(tbody.rows)) have.set(tr.dataset.id, tr);
  const rows = ids.map((id) => have.get(id) || make(id));
  for (const [id, tr] of have) if (!ids.includes(id)) tr.remove();
  rows.forEach((tr, i) => {
    if (tbody.rows[i] !== tr) tbody.insertBefore(tr, tbody.rows[i] || null);
  });
  return rows;
}

function renderEventsTable() {
  const tbody = $('events-body');
  const ids = events.list.map((ev) => ev.id);
  $('events-empty').hidden = ids.length > 0;
  const rows = keyedRows(tbody, ids, (id) => {
    const row = el('tr', { dataset: { id } });
    const bar = el('div', { class: 'bar accent', role: 'progressbar', 'aria-valuemin': '0' }, [el('span')]);
    row.append(
      el('td', { class: 'cell-event' }, [el('div', { class: 'ev-name' }), el('div', { class: 'ev-meta' })]),
      el('td', null, [el('span', { class: 'pill' })]),
      el('td', { class: 'num', dataset: { k: 'waiting' } }),
      el('td', { class: 'num', dataset: { k: 'active' } }),
      el('td', { class: 'num', dataset: { k: 'admitted_total' } }),
      el('td', { class: 'sold-cell' }, [el('div', { class: 'sold-text' }), bar]),
      el('td', { class: 'num', dataset: { k: 'seats_left' } }),
    );
    return row;
  });
  // The column names, for the phone's layout of a row as a card.
  const labels = ['Event', 'State', 'Waiting', 'Active', 'Admitted', 'Sold', 'Seats left'].map(tr);
  rows.forEach((row, i) => {
    const ev = events.list[i];
    const st = ev.stats || {};
    const cells = row.cells;
    labels.forEach((l, k) => cells[k].setAttribute('data-label', l));
    setText(cells[0].children[0], ev.name || ev.id);
    setText(cells[0].children[1], `${ev.id} · ${policyText(ev)}`);
    const state = eventState(ev);
    const pill = cells[1].firstChild;
    pill.dataset.state = state.key;
    setText(pill, state.label);
    for (const td of row.querySelectorAll('td[data-k]')) setText(td, fmtNum(st[td.dataset.k]));
    const sold = typeof st.sold === 'number' ? st.sold : 0;
    const seats = ev.seats || 0;
    const pct = seats ? Math.min(100, (sold / seats) * 100) : 0;
    setText(cells[5].children[0], `${fmtNum(sold)} / ${fmtNum(seats)} · ${pct < 10 && pct > 0 ? pct.toFixed(1) : Math.round(pct)}%`);
    const bar = cells[5].children[1];
    bar.setAttribute('aria-valuemax', String(seats));
    bar.setAttribute('aria-valuenow', String(sold));
    bar.setAttribute('aria-label', t('room.soldFor', { name: ev.name || ev.id }));
    bar.firstChild.style.width = pct + '%';
  });
}

function renderEventSelect() {
  const sel = $('event-select');
  const keep = sel.value || (store.get('event') || '');
  if (!events.loaded) {
    if (sel.options.length !== 1 || sel.options[0].value !== '') sel.replaceChildren(el('option', { value: '' }));
    setText(sel.options[0], t('room.loading'));
    updateJoinState();
    return;
  }
  if (events.list.length === 0) {
    if (sel.options.length !== 1 || sel.options[0].value !== '') sel.replaceChildren(el('option', { value: '' }));
    setText(sel.options[0], t('room.noEvents'));
    updateJoinState();
    return;
  }
  // Update options in place: rebuilding would close an open drop-down.
  const want = events.list.map((ev) => {
    const st = eventState(ev);
    return { value: ev.id, text: eventLabel(ev) + (st.key === 'open' ? '' : ` · ${st.label.toLowerCase()}`) };
  });
  const opts = Array.from(sel.options);
  const same = opts.length === want.length && opts.every((o, i) => o.value === want[i].value);
  if (!same) {
    sel.replaceChildren(...want.map((w) => el('option', { value: w.value, text: w.text })));
  } else {
    opts.forEach((o, i) => setText(o, want[i].text));
  }
  if (keep && events.byId.has(keep)) sel.value = keep;
  else if (!sel.value) sel.selectedIndex = 0;
  updateJoinState();
}

// ---------- health ----------

async function refreshHealth() {
  const box = $('server-health');
  try {
    const res = await fetch('/readyz', { cache: 'no-store' });
    if (res.ok) {
      box.dataset.state = 'ok';
      live(box, () => t('room.health.ok'));
    } else {
      box.dataset.state = 'degraded';
      const body = await res.json().catch(() => null);
      const down = Array.isArray(body && body.down) ? body.down : [];
      const names = { redis: 'room.health.redis', database: 'room.health.database' };
      live(box, () => (down.length ? t('room.health.down', { what: down.map((d) => (names[d] ? t(names[d]) : d)).join(t('room.and')) })
        : t('room.health.storage')));
    }
  } catch (_) {
    box.dataset.state = 'down';
    live(box, () => t('room.health.unreachable'));
  }
  setTimeout(refreshHealth, HEALTH_MS);
}

// ---------- session ----------

function renderSession() {
  const s = session();
  $('session-form').hidden = !!s;
  $('nickname-hint').hidden = !!s;
  $('session-info').hidden = !s;
  $('step-session').dataset.done = String(!!s);
  if (s) {
    setText($('session-name'), s.nickname);
    setText($('session-avatar'), Array.from(s.nickname || '?')[0].toUpperCase());
  }
  $('sign-out').hidden = ticketIsLive();
  updateJoinState();
}

async function startSession(e) {
  e.preventDefault();
  const input = $('nickname');
  const nick = input.value.trim();
  const alertBox = $('try-alert');
  const chars = Array.from(nick).length;
  if (chars < 1 || chars > 32) {
    showAlert(alertBox, () => t('room.nickLength'));
    input.focus();
    return;
  }
  const btn = $('start-session');
  btn.disabled = true;
  live(btn, () => t('room.starting'));
  try {
    const r = await api('POST', '/sessions', { body: { nickname: nick } });
    store.set('session', r);
    store.set('nickname', nick);
    hideAlert(alertBox);
    renderSession();
    const sel = $('event-select');
    if (!sel.disabled) sel.focus();
  } catch (err) {
    showAlert(alertBox, () => friendly(err, 'user'));
  } finally {
    btn.disabled = false;
    live(btn, () => t('room.start'));
  }
}

function signOut() {
  if (ticketIsLive()) return;
  store.del('session');
  store.del('ticket');
  resetTicket();
  renderSession();
  $('nickname').focus();
}

// ---------- joining ----------

function updateJoinState() {
  const s = session();
  const sel = $('event-select');
  const join = $('join');
  const hint = $('event-hint');
  const ev = events.byId.get(sel.value);
  const live = ticketIsLive() || !!prequeue.eventId;
  sel.disabled = !events.loaded || events.list.length === 0 || live;
  join.disabled = !s || !ev || live || joining;
  $('step-join').dataset.done = String(live);
  let text;
  if (!s) text = t('room.hint.session');
  else if (prequeue.eventId) text = t('room.hint.prequeue');
  else if (live) text = t('room.hint.inLine', { name: ticket.eventName });
  else if (!events.loaded) text = t('room.loading');
  else if (!ev) text = t('room.hint.noEvent');
  else {
    const st = ev.stats || {};
    const bits = [];
    const state = eventState(ev);
    if (state.key === 'soon') bits.push(t('room.hint.opens', { at: fmtTime(ev.opens_at) }));
    else if (['closed', 'nojoin', 'soldout', 'paused'].includes(state.key)) bits.push(t('room.hint.' + state.key));
    if (typeof st.seats_left === 'number') bits.push(t('room.hint.seats', { left: st.seats_left, seats: ev.seats, waiting: st.waiting }));
    if (ev.closes_at && state.key !== 'closed') bits.push(t('room.hint.closes', { at: fmtTime(ev.closes_at) }));
    bits.push(t('room.hint.ttl', { n: ev.active_ttl_s }));
    text = bits.join(' ');
  }
  setText(hint, text);
}

let joining = false;

async function join(eventId) {
  const alertBox = $('try-alert');
  if (!session()) {
    showAlert(alertBox, () => t('room.needSession'));
    renderSession();
    $('nickname').focus();
    return;
  }
  if (!eventId) {
    showAlert(alertBox, () => t('room.needEvent'));
    return;
  }
  joining = true;
  const btns = [$('join'), $('join-again')];
  btns.forEach((b) => { b.disabled = true; });
  live($('join'), () => t('room.joining'));
  try {
    const body = { user_type: 'ACTUAL' };
    const ev = events.byId.get(eventId);
    if (ev && ev.challenge === 'pow') Object.assign(body, await proveWork(eventId));
    const r = await api('POST', `/events/${enc(eventId)}/queue`, { body, bearer: bearer() });
    hideAlert(alertBox);
    store.set('event', eventId);
    if (r.status === 'PREQUEUED') startPrequeue(eventId);
    else startTicket(eventId, r.token, r, true);
  } catch (err) {
    if (err.code === 'UNAUTHENTICATED') {
      store.del('session');
      renderSession();
    }
    const ev = events.byId.get(eventId);
    const text = err.code === 'EVENT_NOT_OPEN' && ev && ev.opens_at
      ? () => t('room.notOpen', { at: fmtTime(ev.opens_at) }) : () => friendly(err, 'join');
    const soft = err.code === 'NETWORK' || err.code === 'UNAVAILABLE' || err.code === 'RATE_LIMITED';
    showAlert(alertBox, text, soft ? 'warn' : 'error');
  } finally {
    joining = false;
    live($('join'), () => t('room.join'));
    btns.forEach((b) => { b.disabled = false; });
    updateJoinState();
  }
}

// ---------- proof of work (events with challenge: pow) ----------

// proveWork solves the event's challenge (pow.js), showing its progress.
async function proveWork(eventId) {
  const box = $('pow');
  const bar = $('pow-progress');
  box.hidden = false;
  try {
    return await solveChallenge(eventId, (pct) => {
      bar.value = pct;
      live($('pow-text'), () => (pct >= 100 ? t('room.powDone') : t('room.pow', { pct })));
    });
  } finally {
    setTimeout(() => { box.hidden = true; }, 1500);
  }
}

// ---------- the pre-queue (random_start events before their opening) ----------

const prequeue = { eventId: '', timer: 0 };

// startPrequeue shows that the user holds a pre-queue place and joins again
// from the opening, when the draw gives the place, until it does.
function startPrequeue(eventId) {
  clearTimeout(prequeue.timer);
  prequeue.eventId = eventId;
  store.set('prequeue', eventId);
  const ev = events.byId.get(eventId);
  const opens = ev && ev.opens_at ? new Date(ev.opens_at) : null;
  setText($('prequeue-event'), ev ? ev.name || ev.id : eventId);
  live($('prequeue-text'), () => (opens
    ? t('room.pre.at', { at: dateFormat({ hour: '2-digit', minute: '2-digit', second: '2-digit' }).format(opens) })
    : t('room.pre.opening')));
  live($('prequeue-note'), () => t('room.pre.note'));
  $('prequeue').hidden = false;
  updateJoinState();
  const wait = opens ? Math.max(1000, opens - Date.now() + 500 + Math.random() * 1500) : 2000;
  prequeue.timer = setTimeout(() => rejoinPrequeued(eventId), wait);
}

function stopPrequeue() {
  clearTimeout(prequeue.timer);
  prequeue.eventId = '';
  store.del('prequeue');
  $('prequeue').hidden = true;
}

// rejoinPrequeued asks for the place again (a pre-queued user needs no new
// challenge): PREQUEUED while the draw runs, the place once it is done.
async function rejoinPrequeued(eventId) {
  if (prequeue.eventId !== eventId) return;
  try {
    const r = await api('POST', `/events/${enc(eventId)}/queue`, { body: { user_type: 'ACTUAL' }, bearer: bearer() });
    if (r.status === 'PREQUEUED') {
      prequeue.timer = setTimeout(() => rejoinPrequeued(eventId), 2000);
      return;
    }
    stopPrequeue();
    startTicket(eventId, r.token, r, true);
  } catch (err) {
    showConnNote(() => friendly(err, 'join'));
    prequeue.timer = setTimeout(() => rejoinPrequeued(eventId), err.retryAfter ? err.retryAfter * 1000 : 3000);
  }
}

// ---------- the ticket (a place in line) ----------

const ticket = {
  eventId: '',
  eventName: '',
  token: '',
  status: '',
  samples: [],      // {t: ms since start, p: position}
  startedAt: 0,
  expiresAt: 0,
  ttlMs: 0,
  pollTimer: 0,
  seatTimer: 0,
  clockTimer: 0,
  lastAnnounce: 0,
  lastAnnounced: null,
  order: null,
  pollFailures: 0,
  warned: 0,
};

function ticketIsLive() {
  return !!ticket.token && (ticket.status === 'WAITING' || ticket.status === 'ACTIVE' || ticket.status === '');
}

function stopTimers() {
  clearTimeout(ticket.pollTimer);
  clearTimeout(ticket.seatTimer);
  clearInterval(ticket.clockTimer);
  ticket.pollTimer = ticket.seatTimer = ticket.clockTimer = 0;
}

function resetTicket() {
  stopTimers();
  Object.assign(ticket, {
    eventId: '', eventName: '', token: '', status: '', samples: [], startedAt: 0,
    expiresAt: 0, ttlMs: 0, lastAnnounce: 0, lastAnnounced: null, order: null, pollFailures: 0, warned: 0,
  });
  Object.assign(seatView, { key: '', section: null, map: null, zoomed: false });
  $('ticket').hidden = true;
  $('buy-result').replaceChildren();
  live(document.querySelector('title'), baseTitle);
}

function startTicket(eventId, token, entry, fresh) {
  const sameTicket = ticket.token === token && ticket.eventId === eventId;
  if (!sameTicket) {
    resetTicket();
    ticket.eventId = eventId;
    ticket.token = token;
    ticket.startedAt = Date.now();
    $('buy-result').replaceChildren();
  }
  const ev = events.byId.get(eventId);
  ticket.eventName = ev ? ev.name || ev.id : eventId;
  store.set('ticket', { event_id: eventId, token, started_at: ticket.startedAt });
  $('ticket').hidden = false;
  setText($('ticket-event'), ticket.eventName);
  setText($('ticket-token'), token.length > 14 ? token.slice(0, 8) + '…' + token.slice(-4) : token);
  $('ticket-token').title = token;
  if (entry) applyEntry(entry);
  else schedulePoll(0);
  if (fresh && $('ticket').scrollIntoView) $('ticket').scrollIntoView({ behavior: 'smooth', block: 'nearest' });
  renderSession();
}

function schedulePoll(ms) {
  clearTimeout(ticket.pollTimer);
  ticket.pollTimer = setTimeout(poll, ms);
}

async function poll() {
  const { eventId, token } = ticket;
  if (!token) return;
  try {
    const r = await api('GET', `/events/${enc(eventId)}/queue/${enc(token)}`);
    if (ticket.token !== token) return;
    ticket.pollFailures = 0;
    hideConnNote();
    applyEntry(r);
  } catch (err) {
    if (ticket.token !== token) return;
    if (err.code === 'TOKEN_NOT_FOUND' || err.code === 'EVENT_NOT_FOUND') {
      finish('LOST', friendly(err));
      return;
    }
    ticket.pollFailures++;
    showConnNote(() => friendly(err, 'user'));
    const wait = err.retryAfter ? err.retryAfter * 1000 : Math.min(10000, POLL_MS * (1 + ticket.pollFailures));
    schedulePoll(wait);
  }
}

function showConnNote(text) { showAlert($('try-alert'), text, 'warn'); }
function hideConnNote() {
  const box = $('try-alert');
  if (!box.hidden && box.dataset.kind === 'warn') hideAlert(box);
}

// statusText is a place's status for its badge: the API's word in English.
const statusText = (status) => t('room.status.' + status);

function applyEntry(r) {
  const status = r.status;
  const prev = ticket.status;
  ticket.status = status;
  const badge = $('status');
  badge.dataset.status = status;
  live(badge, () => statusText(status));
  if (typeof r.waiting === 'number') setText($('waiting'), fmtNum(r.waiting));
  if (typeof r.admitted_total === 'number') setText($('admitted'), fmtNum(r.admitted_total));

  if (status === 'WAITING') {
    live($('headline'), () => t('room.head.WAITING'));
    live($('position'), () => fmtNum(r.position));
    delete $('position').dataset.long;
    live($('eta'), () => fmtWait(r.eta_s));
    $('waiting-area').hidden = false;
    $('active-area').hidden = true;
    $('final-area').hidden = true;
    $('leave').hidden = false;
    addSample(r.position);
    announcePosition(r.position, r.eta_s, prev !== 'WAITING');
    live(document.querySelector('title'), () => t('room.title.place', { n: r.position, base: baseTitle() }));
    schedulePoll(POLL_MS);
  } else if (status === 'ACTIVE') {
    live($('headline'), () => t('room.head.ACTIVE'));
    live($('position'), () => t('room.yourTurn'));
    $('position').dataset.long = 'true';
    live($('eta'), () => t('room.now'));
    $('waiting-area').hidden = false;
    $('active-area').hidden = false;
    $('final-area').hidden = true;
    $('leave').hidden = false;
    if (prev !== 'ACTIVE' && ticket.samples.length) addSample(0);
    const exp = Date.parse(r.expires_at);
    if (!isNaN(exp)) ticket.expiresAt = exp;
    const ev = events.byId.get(ticket.eventId);
    ticket.ttlMs = ev && ev.active_ttl_s ? ev.active_ttl_s * 1000 : Math.max(ticket.ttlMs, ticket.expiresAt - Date.now());
    if (prev !== 'ACTIVE') {
      announce(t('room.say.turn', { left: fmtClock(ticket.expiresAt - Date.now()) }));
      live(document.querySelector('title'), () => t('room.title.turn', { base: baseTitle() }));
      startClock();
      refreshSeats();
    }
    schedulePoll(POLL_MS);
  } else {
    finish(status);
  }
  updateJoinState();
  $('sign-out').hidden = ticketIsLive();
}

const FINAL = ['EXPIRED', 'DONE', 'LEFT', 'LOST'];
const finalText = (status) => (FINAL.includes(status) ? t('room.final.' + status) : '');

function finish(status, extra) {
  stopTimers();
  ticket.status = status;
  const badge = $('status');
  badge.dataset.status = status === 'LOST' ? '' : status;
  live(badge, () => statusText(status === 'LOST' ? 'UNKNOWN' : status));
  const headline = () => (FINAL.includes(status) ? t('room.head.' + status) : status);
  live($('headline'), headline);
  live($('final-text'), () => (extra && status === 'LOST' ? extra + ' ' + t('room.joinAgainLost') : finalText(status)));
  $('final-area').hidden = false;
  $('active-area').hidden = true;
  $('leave').hidden = true;
  live($('position'), () => '—');
  delete $('position').dataset.long;
  live($('eta'), () => '—');
  if (status === 'DONE' && !ticket.order) {
    setResult('success', () => t('room.orderDone'), () => t('room.orderDoneText'));
  }
  announce(headline() + ' ' + finalText(status));
  live(document.querySelector('title'), baseTitle);
  updateJoinState();
  renderSession();
}

// ---------- announcements for screen readers ----------

function announce(text) {
  const live = $('live');
  live.textContent = '';
  // A fresh text node makes screen readers read the same text again.
  setTimeout(() => { live.textContent = text; }, 30);
  ticket.lastAnnounce = Date.now();
}

// announcePosition speaks the position now and then, not every second.
function announcePosition(pos, eta, force) {
  const now = Date.now();
  const last = ticket.lastAnnounced;
  const due = force || last === null || (now - ticket.lastAnnounce > 15000 && pos !== last) ||
    (pos <= 5 && pos !== last);
  if (!due) return;
  ticket.lastAnnounced = pos;
  const words = fmtEtaWords(eta);
  announce(words ? t('room.say.placeEta', { n: pos, eta: words }) : t('room.say.place', { n: pos }));
}

// ---------- position chart ----------

function addSample(pos) {
  if (typeof pos !== 'number' || !isFinite(pos)) return;
  const t = Date.now() - ticket.startedAt;
  const s = ticket.samples;
  s.push({ t, p: pos });
  if (s.length > MAX_SAMPLES) {
    // Keep the first point and thin out the rest.
    ticket.samples = [s[0]].concat(s.slice(1).filter((_, i) => i % 2 === 1));
  }
  drawChart();
}

function niceMax(v) {
  if (v <= 5) return 5;
  const mag = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * mag >= v) return m * mag;
  return 10 * mag;
}

function drawChart() {
  const canvas = $('position-chart');
  if (!canvas || $('ticket').hidden || $('waiting-area').hidden) return;
  const ctx = canvas.getContext && canvas.getContext('2d');
  if (!ctx) return;
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || 300;
  const h = canvas.clientHeight || 150;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);

  const font = getComputedStyle(document.body).fontFamily;
  const muted = cssVar('--muted', '#666');
  const grid = cssVar('--chart-grid', '#ddd');
  const line = cssVar('--chart-line', '#33c');
  const pad = { l: 46, r: 14, t: 18, b: 26 };
  const pw = Math.max(10, w - pad.l - pad.r);
  const ph = Math.max(10, h - pad.t - pad.b);
  const s = ticket.samples;

  ctx.font = `11px ${font}`;
  ctx.fillStyle = muted;
  ctx.textBaseline = 'middle';

  if (!s.length) {
    ctx.textAlign = 'center';
    ctx.fillText(t('room.chart.empty'), w / 2, h / 2);
    canvas.setAttribute('aria-label', t('room.chart.none'));
    return;
  }

  const maxP = niceMax(Math.max(...s.map((p) => p.p), 1));
  const maxT = Math.max(10000, s[s.length - 1].t);
  const x = (t) => pad.l + (t / maxT) * pw;
  const y = (p) => pad.t + ph - (p / maxP) * ph;

  // Grid and y labels.
  ctx.strokeStyle = grid;
  ctx.lineWidth = 1;
  ctx.textAlign = 'right';
  for (let i = 0; i <= 4; i++) {
    const v = (maxP / 4) * i;
    const yy = Math.round(y(v)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(pad.l, yy);
    ctx.lineTo(pad.l + pw, yy);
    ctx.stroke();
    ctx.fillText(fmtNum(Math.round(v)), pad.l - 6, yy);
  }
  // X labels.
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  const secs = maxT / 1000;
  const step = [5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600].find((st) => secs / st <= 5) || 7200;
  for (let v = 0; v <= secs + 0.001; v += step) {
    const label = v >= 120 ? t('room.chart.min', { n: Math.round(v / 60) }) : t('room.chart.sec', { n: v });
    ctx.fillText(label, x(v * 1000), pad.t + ph + 6);
  }
  // Axis titles.
  ctx.textAlign = 'left';
  ctx.textBaseline = 'alphabetic';
  ctx.fillText(t('room.chart.y'), 4, 11);
  ctx.textAlign = 'right';
  ctx.fillText(t('room.chart.x'), pad.l + pw, 11);

  // The line.
  ctx.strokeStyle = line;
  ctx.lineWidth = 2;
  ctx.lineJoin = 'round';
  ctx.lineCap = 'round';
  ctx.beginPath();
  s.forEach((pt, i) => {
    const px = x(pt.t);
    const py = y(pt.p);
    if (i === 0) ctx.moveTo(px, py);
    else ctx.lineTo(px, py);
  });
  ctx.stroke();
  const last = s[s.length - 1];
  ctx.fillStyle = line;
  ctx.beginPath();
  ctx.arc(x(last.t), y(last.p), 3.5, 0, Math.PI * 2);
  ctx.fill();

  canvas.setAttribute('aria-label', t('room.chart.aria', { from: s[0].p, to: last.p, secs: Math.round(last.t / 1000) }));
}

if (window.ResizeObserver) {
  new ResizeObserver(() => drawChart()).observe($('position-chart'));
} else {
  window.addEventListener('resize', drawChart);
}
if (window.matchMedia) {
  const mq = window.matchMedia('(prefers-color-scheme: dark)');
  if (mq.addEventListener) mq.addEventListener('change', drawChart);
}

// ---------- countdown ----------

function startClock() {
  clearInterval(ticket.clockTimer);
  tick();
  ticket.clockTimer = setInterval(tick, 250);
}

let expiryPolled = false;

function tick() {
  const left = ticket.expiresAt - Date.now();
  const box = $('countdown');
  setText($('time-left'), ticket.expiresAt ? fmtClock(left) : '—');
  const ttl = ticket.ttlMs || 1;
  $('time-bar').style.width = Math.max(0, Math.min(100, (left / ttl) * 100)) + '%';
  box.dataset.urgent = String(left < 30000);
  setText($('time-left-label'), t(left > 0 ? 'room.timeLeft' : 'room.timeUp'));
  // Warn screen reader users as the window closes, not every second.
  for (const mark of [60000, 30000, 10000]) {
    if (left <= mark && left > mark - 1000 && ticket.warned !== mark && ticket.ttlMs > mark) {
      ticket.warned = mark;
      announce(t('room.say.left', { n: mark / 1000 }));
    }
  }
  if (left <= 0 && !expiryPolled) {
    expiryPolled = true;
    schedulePoll(0);
  } else if (left > 0) {
    expiryPolled = false;
  }
}

// ---------- seats ----------

const seatView = {
  key: '',        // eventId + seat count: the layout drawn
  seats: [],      // latest [{id, taken}] (of the section shown)
  section: null,  // the section shown of a map answered by section
  map: null,      // the latest map read (readSeats)
  zoomed: false,  // on a phone: a section picked from the overview
  again: false,   // read the map again as soon as the read under way ends
  rows: [],       // [{name, start, end}] indexes into seats
  width: 1,
  page: 0,
  perPage: 0,     // rows per page
  buttons: new Map(), // seat id -> button
  busy: false,
  loading: false,
};

function layoutRows(seats) {
  const rows = [];
  let cur = null;
  seats.forEach((s, i) => {
    const name = String(s.id).split('-')[0];
    if (!cur || cur.name !== name) {
      cur = { name, start: i, end: i };
      rows.push(cur);
    }
    cur.end = i + 1;
  });
  return rows;
}

async function refreshSeats() {
  clearTimeout(ticket.seatTimer);
  if (ticket.status !== 'ACTIVE') return;
  const { eventId, token } = ticket;
  if (seatView.loading) {
    seatView.again = true;
    return;
  }
  seatView.loading = true;
  seatView.again = false;
  try {
    const asked = seatView.section;
    const m = await readSeats(eventId, token, asked);
    if (ticket.token !== token || ticket.status !== 'ACTIVE') return;
    // A section picked while this read ran wins over its answer: the read
    // again (seatView.again) asks for it.
    if (seatView.section !== asked) return;
    seatView.section = m.section;
    seatView.map = m;
    live($('seat-note'), () => '');
    renderOverview(m);
    renderSeats(m);
  } catch (err) {
    if (ticket.token !== token) return;
    if (err.code === 'NOT_ACTIVE' && err.status && err.status !== 'ACTIVE') {
      if (err.status === 'WAITING') schedulePoll(0);
      else finish(err.status);
      return;
    }
    live($('seat-note'), () => friendly(err, 'user'));
  } finally {
    seatView.loading = false;
    if (ticket.token === token && ticket.status === 'ACTIVE') {
      ticket.seatTimer = setTimeout(refreshSeats, seatView.again ? 0 : SEATS_MS);
    }
  }
}

// phone says whether the page is laid out for a phone: a map by section
// then opens on its overview, and a section is picked to zoom into it.
const phone = () => window.matchMedia('(max-width: 520px)').matches;

// rowsOf is a section's rows, as "A–K".
const rowsOf = (x) => `${x.first.split('-')[0]}–${x.last.split('-')[0]}`;

// renderOverview draws the sections of a map answered by section as tiles
// (their rows and free seats), the one shown pressed; on a phone the
// overview stands alone until a section is picked.
function renderOverview(m) {
  const area = $('active-area');
  live($('seat-help'), () => t(phone() ? 'room.seatHelp.tap' : 'room.seatHelp'));
  const { sections } = m;
  if (!sections) {
    area.dataset.view = 'seats';
    $('seat-overview').hidden = true;
    $('seat-zoom').hidden = true;
    return;
  }
  const alone = phone() && !seatView.zoomed;
  area.dataset.view = alone ? 'overview' : 'seats';
  $('seat-overview').hidden = phone() && seatView.zoomed;
  $('seat-zoom').hidden = !phone() || !seatView.zoomed;
  const grid = $('seat-sections');
  if (grid.children.length !== sections.length || sections.some((x, i) => grid.children[i].dataset.section !== x.id)) {
    grid.replaceChildren(...sections.map((x) => el('button', { type: 'button', class: 'sec-tile', dataset: { section: x.id } }, [
      el('span', { class: 'sec-name' }), el('span', { class: 'sec-free' }),
      el('span', { class: 'bar', 'aria-hidden': 'true' }, [el('span')]),
    ])));
  }
  sections.forEach((x, i) => {
    const b = grid.children[i];
    setText(b.children[0], t('room.sec.name', { rows: rowsOf(x) }));
    setText(b.children[1], t('room.sec.free', { free: x.free, seats: x.seats }));
    b.children[2].firstChild.style.width = (x.seats ? (x.free / x.seats) * 100 : 0) + '%';
    b.setAttribute('aria-pressed', String(!alone && x.id === m.section));
    b.dataset.full = String(x.free === 0);
  });
  const cur = sections.find((x) => x.id === m.section);
  if (cur) setText($('seat-zoom-label'), t('room.sec.zoom', { rows: rowsOf(cur), free: cur.free }));
}

$('seat-sections').addEventListener('click', (e) => {
  const b = e.target.closest('button.sec-tile');
  if (!b) return;
  seatView.section = b.dataset.section;
  seatView.zoomed = true;
  if (seatView.map) {
    // Zoom in at once; the section's seats follow from the server.
    seatView.map = Object.assign({}, seatView.map, { section: b.dataset.section });
    renderOverview(seatView.map);
  }
  refreshSeats();
  if (phone() && $('seat-zoom').scrollIntoView) $('seat-zoom').scrollIntoView({ block: 'start' });
});
$('seat-back').addEventListener('click', () => {
  seatView.zoomed = false;
  if (seatView.map) renderOverview(seatView.map);
  const pressed = $('seat-sections').querySelector(`button[data-section="${CSS.escape(seatView.section || '')}"]`);
  if (pressed) pressed.focus();
});

// renderSeats draws the seats of a map read by readSeats.
function renderSeats(m) {
  const { seats } = m;
  seatView.seats = seats;
  const key = `${ticket.eventId}:${m.section}:${seats.length}`;
  if (seatView.key !== key) {
    seatView.key = key;
    seatView.rows = layoutRows(seats);
    seatView.width = Math.max(1, ...seatView.rows.map((r) => r.end - r.start));
    seatView.perPage = Math.max(1, Math.floor(SEAT_PAGE_LIMIT / seatView.width));
    seatView.page = 0;
    drawSeatPage();
  } else {
    for (const s of seats) {
      const b = seatView.buttons.get(s.id);
      if (b) setSeatState(b, s);
    }
  }
  live($('seat-count'), () => t('room.seats.free', { free: m.free, total: m.total }));
  if (m.free === 0 && m.total) live($('seat-note'), () => t('room.seats.soldOut'));
}

function setSeatState(b, s) {
  if (b.getAttribute('aria-busy') === 'true') return;
  const taken = !!s.taken;
  if (b.disabled !== taken) {
    // Moving focus off a seat that just went away keeps keyboard users in the map.
    if (taken && document.activeElement === b) {
      const next = nearestFree(b, 1) || nearestFree(b, -1);
      if (next) next.focus();
    }
    b.disabled = taken;
  }
  b.setAttribute('aria-label', t(taken ? 'room.seat.taken' : 'room.seat', { s: s.id }));
}

function drawSeatPage() {
  const map = $('seat-map');
  const { rows, perPage, width } = seatView;
  const pages = Math.max(1, Math.ceil(rows.length / perPage));
  seatView.page = Math.min(Math.max(0, seatView.page), pages - 1);
  const from = seatView.page * perPage;
  const shown = rows.slice(from, from + perPage);
  seatView.buttons = new Map();
  map.style.setProperty('--cols', String(width));
  if (width > 16) map.dataset.dense = 'true';
  else delete map.dataset.dense;
  const frag = document.createDocumentFragment();
  for (const row of shown) {
    frag.append(el('span', { class: 'row-label', 'aria-hidden': 'true', text: row.name }));
    for (let i = row.start; i < row.end; i++) {
      const s = seatView.seats[i];
      const num = String(s.id).split('-').slice(1).join('-') || s.id;
      const b = el('button', { type: 'button', class: 'seat', dataset: { seat: s.id }, text: num });
      setSeatState(b, s);
      seatView.buttons.set(s.id, b);
      frag.append(b);
    }
    // Pad a short last row so the next page lines up.
    for (let i = row.end - row.start; i < width; i++) frag.append(el('span', { 'aria-hidden': 'true' }));
  }
  map.replaceChildren(frag);
  const pager = $('seat-pager');
  pager.hidden = pages <= 1;
  if (pages > 1) {
    const first = shown[0];
    const last = shown[shown.length - 1];
    live($('seat-page-label'), () => t('room.rows', { a: first.name, b: last.name, page: seatView.page + 1, pages }));
    $('seat-prev').disabled = seatView.page === 0;
    $('seat-next').disabled = seatView.page >= pages - 1;
  }
}

function seatButtons() {
  return Array.from($('seat-map').querySelectorAll('button.seat'));
}

function nearestFree(from, dir) {
  const all = seatButtons();
  let i = all.indexOf(from) + dir;
  while (i >= 0 && i < all.length) {
    if (!all[i].disabled) return all[i];
    i += dir;
  }
  return null;
}

$('seat-map').addEventListener('keydown', (e) => {
  const b = e.target.closest('button.seat');
  if (!b) return;
  const all = seatButtons();
  const idx = all.indexOf(b);
  const w = seatView.width;
  const moves = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: w, ArrowUp: -w };
  if (!(e.key in moves)) return;
  e.preventDefault();
  const step = moves[e.key];
  for (let i = idx + step; i >= 0 && i < all.length; i += step) {
    if (!all[i].disabled) { all[i].focus(); return; }
  }
});

$('seat-map').addEventListener('click', (e) => {
  const b = e.target.closest('button.seat');
  if (!b || b.disabled || seatView.busy) return;
  buy(b.dataset.seat, b);
});

$('seat-prev').addEventListener('click', () => { seatView.page--; drawSeatPage(); });
$('seat-next').addEventListener('click', () => { seatView.page++; drawSeatPage(); });
$('seat-first-free').addEventListener('click', () => {
  const i = seatView.seats.findIndex((s) => !s.taken);
  if (i < 0) return;
  const r = seatView.rows.findIndex((row) => i >= row.start && i < row.end);
  seatView.page = Math.floor(r / seatView.perPage);
  drawSeatPage();
  const b = seatView.buttons.get(seatView.seats[i].id);
  if (b) b.focus();
});

// setResult shows the order's answer: title and text are functions, so a
// change of language rewrites them.
function setResult(kind, title, text) {
  const box = $('buy-result');
  const head = el('p', { class: 'title' });
  const body = text ? el('p') : null;
  box.replaceChildren(el('div', { class: 'card ' + kind }, [head, body]));
  live(head, title);
  if (body) live(body, text);
}

async function buy(seat, button) {
  const { eventId, token } = ticket;
  seatView.busy = true;
  $('seat-map').dataset.busy = 'true';
  button.setAttribute('aria-busy', 'true');
  setResult('info', () => t('room.buying', { s: seat }), null);
  try {
    const r = await api('POST', `/events/${enc(eventId)}/orders`, { body: { token, seat }, bearer: bearer() });
    ticket.order = r;
    setResult('success', () => t('room.yours', { s: r.seat || seat }), () => t('room.order', { id: r.order_id }));
    finish('DONE');
    live($('headline'), () => t('room.gotSeat', { s: r.seat || seat }));
    refreshEvents();
  } catch (err) {
    button.removeAttribute('aria-busy');
    const why = () => friendly(err, err.code === 'UNAUTHENTICATED' ? 'user' : 'buy');
    const failed = () => t('room.buyFailed');
    switch (err.code) {
      case 'SEAT_TAKEN':
        setResult('error', () => t('room.justTaken', { s: seat }), why);
        setSeatState(button, { id: seat, taken: true });
        refreshSeats();
        break;
      case 'SOLD_OUT':
        setResult('error', () => t('state.soldout'), why);
        refreshSeats();
        break;
      case 'NOT_ACTIVE':
        setResult('error', failed, why);
        if (err.status && err.status !== 'ACTIVE' && err.status !== 'WAITING') finish(err.status);
        else schedulePoll(0);
        break;
      case 'UNAUTHENTICATED':
        setResult('error', failed, why);
        break;
      default:
        setResult('error', failed, why);
        refreshSeats();
    }
  } finally {
    seatView.busy = false;
    delete $('seat-map').dataset.busy;
  }
}

// ---------- leaving ----------

async function leave() {
  const { eventId, token } = ticket;
  if (!token) return;
  const btn = $('leave');
  btn.disabled = true;
  live(btn, () => t('room.leaving'));
  try {
    await api('DELETE', `/events/${enc(eventId)}/queue/${enc(token)}`, { bearer: bearer() });
    hideAlert($('try-alert'));
    finish('LEFT');
    $('join-again').focus();
  } catch (err) {
    showAlert($('try-alert'), () => friendly(err, 'user'));
  } finally {
    btn.disabled = false;
    live(btn, () => t('room.leave'));
  }
}

// ---------- wiring ----------

$('session-form').addEventListener('submit', startSession);
$('sign-out').addEventListener('click', signOut);
$('join-form').addEventListener('submit', (e) => {
  e.preventDefault();
  join($('event-select').value);
});
$('event-select').addEventListener('change', () => {
  store.set('event', $('event-select').value);
  updateJoinState();
});
$('join-again').addEventListener('click', () => join(ticket.eventId || $('event-select').value));
$('leave').addEventListener('click', leave);

const nick = store.get('nickname');
if (nick) $('nickname').value = nick;

// The language: static text now, and what the page drew itself on a switch.
live($('events-live'), () => t('room.live'));
initLang(() => {
  $('live').textContent = ''; // an announcement in the other language
  renderEventsTable();
  renderEventSelect();
  drawChart();
  if (seatView.map) renderOverview(seatView.map);
  for (const s of seatView.seats) {
    const b = seatView.buttons.get(s.id);
    if (b) setSeatState(b, s);
  }
});

renderSession();
renderEventSelect();

// Resume a place in line kept in this tab (a reload keeps your place).
const kept = store.get('ticket');
if (kept && kept.event_id && kept.token && session()) {
  ticket.startedAt = kept.started_at || Date.now();
  ticket.eventId = kept.event_id;
  ticket.token = kept.token;
  startTicket(kept.event_id, kept.token, null, false);
}

refreshEvents().then(() => {
  // Resume a pre-queue place kept in this tab.
  const pre = store.get('prequeue');
  if (pre && !ticket.token && session()) startPrequeue(pre);
  if (ticket.token) {
    const ev = events.byId.get(ticket.eventId);
    if (ev) {
      ticket.eventName = ev.name || ev.id;
      setText($('ticket-event'), ticket.eventName);
      if (!ticket.ttlMs && ev.active_ttl_s) ticket.ttlMs = ev.active_ttl_s * 1000;
    }
  }
});
refreshHealth();
