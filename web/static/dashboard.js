// rushline operator dashboard: the events list, live charts of one event
// (#/event/{id}) from its stats stream, pause/resume, live PATCH of the
// admission settings, recent admissions, and creating events. Korean and
// English: dashboard-i18n.js.
import {
  $, api, enc, tab, friendly, el, setText, showAlert, hideAlert, fmtNum, fmtTime, eventState, chart, chartsReady,
} from '/lib.js';
import { t, tr, live, initLang } from '/i18n.js';
import '/dashboard-i18n.js';

const EVENTS_MS = 2000;
const ADMISSIONS_MS = 2000;
const MAX_STATS = 50;
const CHART_POINTS = 900;

const alertBox = $('dash-alert');
const adminKey = () => tab.get('adminKey') || '';

// ---------- admin key ----------

$('d-admin-key').value = adminKey();
$('d-key-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const v = $('d-admin-key').value.trim();
  if (!v) {
    showAlert(alertBox, () => t('dash.keyFirst'));
    $('d-admin-key').focus();
    return;
  }
  tab.set('adminKey', v);
  showAlert(alertBox, () => t('dash.keySaved'), 'success');
  route();
});
$('d-key-clear').addEventListener('click', () => {
  tab.del('adminKey');
  $('d-admin-key').value = '';
  $('d-admin-key').focus();
});

function needKey() {
  if (adminKey()) return true;
  showAlert(alertBox, () => t('err.UNAUTHENTICATED.admin'));
  $('d-admin-key').focus();
  return false;
}

// ---------- events list ----------

let events = [];
let eventsTimer = 0;

async function refreshEvents() {
  clearTimeout(eventsTimer);
  try {
    // With the admin key the list includes the practice races.
    const r = await api('GET', '/events', { admin: adminKey() });
    const list = Array.isArray(r && r.events) ? r.events : [];
    const shown = list.filter((ev) => $('d-show-practice').checked || !ev.practice);
    const details = await Promise.all(shown.slice(0, MAX_STATS).map((ev) =>
      api('GET', `/events/${enc(ev.id)}`).catch(() => ev)));
    events = details.concat(shown.slice(MAX_STATS));
    $('d-events-live').dataset.state = 'live';
    live($('d-events-live'), () => t('dash.live'));
    renderEvents();
  } catch (err) {
    $('d-events-live').dataset.state = 'stale';
    const refused = err.code === 'UNAUTHENTICATED' || err.code === 'FORBIDDEN';
    live($('d-events-live'), () => t(refused ? 'dash.refused' : 'dash.reconnecting'));
  } finally {
    eventsTimer = setTimeout(refreshEvents, EVENTS_MS);
  }
}

$('d-show-practice').addEventListener('change', refreshEvents);

const rows = new Map();

function renderEvents() {
  const tbody = $('d-events').querySelector('tbody');
  $('d-events-empty').hidden = events.length > 0;
  const keep = new Set();
  for (const ev of events) {
    keep.add(ev.id);
    let tr = rows.get(ev.id);
    if (!tr) {
      const watch = el('a', { class: 'btn secondary small', href: `#/event/${enc(ev.id)}` });
      live(watch, () => t('dash.watch'));
      live(watch, () => t('dash.watchId', { id: ev.id }), 'aria-label');
      const toggle = el('button', { type: 'button', class: 'btn small', dataset: { id: ev.id, action: 'toggle' } });
      tr = el('tr', { dataset: { id: ev.id } }, [
        el('td', { class: 'cell-event' }, [el('span', { class: 'ev-name' }), el('span', { class: 'ev-meta' })]),
        el('td', null, el('span', { class: 'pill' })),
        el('td', { class: 'num' }), el('td', { class: 'num' }), el('td', { class: 'num' }),
        el('td', { class: 'num' }), el('td', { class: 'num' }),
        el('td', null, el('div', { class: 'row-actions' }, [watch, toggle])),
      ]);
      rows.set(ev.id, tr);
    }
    const c = tr.children;
    setText(c[0].firstChild, ev.name || ev.id);
    setText(c[0].lastChild, ev.practice ? t('dash.practiceId', { id: ev.id }) : ev.id);
    const state = eventState(ev);
    const pill = c[1].firstChild;
    pill.dataset.state = state.key;
    setText(pill, state.label);
    const st = ev.stats || {};
    setText(c[2], fmtNum(st.waiting));
    setText(c[3], fmtNum(st.active));
    setText(c[4], fmtNum(st.admitted_total));
    setText(c[5], `${fmtNum(st.sold)} / ${fmtNum(ev.seats)}`);
    setText(c[6], fmtNum(st.seats_left));
    const toggle = c[7].firstChild.lastChild;
    // Nothing to pause once the seats are gone or the line has closed.
    toggle.hidden = state.key === 'soldout' || state.key === 'closed';
    toggle.dataset.paused = String(!!ev.paused);
    toggle.className = ev.paused ? 'btn small' : 'btn danger small';
    setText(toggle, t(ev.paused ? 'dash.resume' : 'dash.pause'));
    toggle.setAttribute('aria-label', t(ev.paused ? 'dash.resumeId' : 'dash.pauseId', { id: ev.id }));
    tr.setAttribute('aria-current', String(ev.id === current.id));
    tbody.append(tr);
  }
  for (const [id, tr] of rows) {
    if (!keep.has(id)) {
      tr.remove();
      rows.delete(id);
    }
  }
  if (current.id) {
    const ev = events.find((x) => x.id === current.id);
    if (ev) renderDetail(ev);
  }
}

$('d-events').addEventListener('click', (e) => {
  const b = e.target.closest('button[data-action="toggle"]');
  if (b) setPaused(b.dataset.id, b.dataset.paused !== 'true', b);
});

async function setPaused(id, pause, button) {
  if (!needKey()) return;
  if (button) button.disabled = true;
  try {
    await api('POST', `/admin/events/${enc(id)}/${pause ? 'pause' : 'resume'}`, { admin: adminKey() });
    showAlert(alertBox, () => t(pause ? 'dash.paused' : 'dash.resumed', { id }), 'success');
    await refreshEvents();
  } catch (err) {
    showAlert(alertBox, () => friendly(err, 'admin'));
  } finally {
    if (button) button.disabled = false;
  }
}

// ---------- one event, live ----------

const current = { id: null, stop: () => {}, filled: null, relabel: null };

function route() {
  const m = location.hash.match(/^#\/event\/([^/]+)/);
  const id = m ? decodeURIComponent(m[1]) : null;
  if (id === current.id) return;
  current.stop();
  current.stop = () => {};
  current.id = id;
  current.filled = null;
  current.relabel = null;
  $('d-detail').hidden = !id;
  for (const [rid, tr] of rows) tr.setAttribute('aria-current', String(rid === id));
  const title = document.querySelector('title');
  if (!id) {
    live(title, () => tr('rushline — operator dashboard'));
    return;
  }
  live(title, () => t('dash.title', { id }));
  watch(id);
}

window.addEventListener('hashchange', route);

function renderDetail(ev) {
  setText($('d-detail-title'), ev.name ? `${ev.name} (${ev.id})` : ev.id);
  const state = eventState(ev);
  $('d-state').dataset.state = state.key;
  setText($('d-state'), state.label);
  const extra = [];
  if (ev.practice) extra.push(t('dash.practiceRace'));
  if (ev.queue_mode && ev.queue_mode !== 'fifo') extra.push(t('dash.mode.' + ev.queue_mode));
  if (ev.challenge === 'pow') extra.push(t('dash.pow', { n: ev.pow_bits }));
  setText($('d-policy'), t('dash.policyLine', {
    policy: t('dash.policy.' + ev.policy), capacity: ev.capacity, batch: ev.admit_batch,
    ms: ev.admit_interval_ms, ttl: ev.active_ttl_s, seats: ev.seats,
  }) + extra.map((x) => ' · ' + x).join(''));
  const over = state.key === 'soldout' || state.key === 'closed';
  $('d-pause').hidden = !!ev.paused || over;
  $('d-resume').hidden = !ev.paused || over;
  if (current.filled !== ev.id) {
    current.filled = ev.id;
    $('d-p-capacity').value = ev.capacity;
    $('d-p-batch').value = ev.admit_batch;
    $('d-p-interval').value = ev.admit_interval_ms;
    $('d-p-ttl').value = ev.active_ttl_s;
    $('d-p-policy').value = ev.policy;
    $('d-p-max-tps').value = ev.max_tps || 0;
    $('d-p-mode').value = ev.queue_mode || 'fifo';
    $('d-p-challenge').value = ev.challenge || 'none';
    $('d-p-pow-bits').value = ev.pow_bits || 20;
    current.event = ev;
  }
}

// RATE_WINDOW is the span (s) the per-minute rates are measured over.
const RATE_WINDOW = 60;

// perMinute turns running totals sampled at times t (s) into per-minute
// rates over the last RATE_WINDOW seconds at each sample (null until 5 s of
// samples exist).
function perMinute(t, totals) {
  const out = totals.map(() => new Array(t.length).fill(null));
  let j = 0;
  for (let i = 0; i < t.length; i++) {
    while (t[i] - t[j] > RATE_WINDOW) j++;
    const span = t[i] - t[j];
    if (span < 5) continue;
    totals.forEach((x, k) => { out[k][i] = Math.max(0, Math.round((x[i] - x[j]) * 60 / span)); });
  }
  return out;
}

function renderRates(r) {
  const last = (a) => a[a.length - 1];
  setText($('d-inflow'), last(r[0]) === null || last(r[0]) === undefined ? '—' : fmtNum(last(r[0])));
  setText($('d-outflow'), last(r[1]) === null || last(r[1]) === undefined ? '—' : fmtNum(last(r[1])));
  setText($('d-noshows'), last(r[2]) === null || last(r[2]) === undefined ? '—' : fmtNum(last(r[2])));
}

function renderStats(s) {
  setText($('d-waiting'), fmtNum(s.waiting));
  setText($('d-active'), fmtNum(s.active));
  setText($('d-admitted'), fmtNum(s.admitted_total));
  setText($('d-sold'), fmtNum(s.sold));
}

async function watch(id) {
  let stopped = false;
  const timers = {}; // the latest timer of each loop
  const stops = [() => { stopped = true; Object.values(timers).forEach(clearTimeout); }];
  current.stop = () => stops.forEach((f) => f());

  try {
    renderDetail(await api('GET', `/events/${enc(id)}`));
  } catch (err) {
    showAlert(alertBox, () => friendly(err, 'admin'));
    return;
  }
  if (stopped) return;

  // time, waiting, active, admitted, sold, joined, expired
  const data = [[], [], [], [], [], [], []];
  const boxQ = $('d-chart-queue');
  const boxF = $('d-chart-flow');
  const boxR = $('d-chart-rates');
  boxQ.replaceChildren();
  boxF.replaceChildren();
  boxR.replaceChildren();
  let uq = null;
  let uf = null;
  let ur = null;
  if (chartsReady()) {
    const o = { xTime: true, height: 220, xLabel: t('dash.chart.time') };
    uq = chart(boxQ, [{ label: t('dash.chart.waiting') }, { label: t('dash.chart.active') }], [[], [], []],
      Object.assign({ yLabel: t('dash.chart.people') }, o));
    uf = chart(boxF, [{ label: t('dash.chart.admitted') }, { label: t('dash.chart.sold') }], [[], [], []],
      Object.assign({ yLabel: t('dash.chart.total') }, o));
    ur = chart(boxR, [{ label: t('dash.chart.joins') }, { label: t('dash.chart.admits') }, { label: t('dash.chart.noshows') }],
      [[], [], [], []], Object.assign({ yLabel: t('dash.chart.perMin') }, o));
    stops.push(() => { uq.destroy(); uf.destroy(); ur.destroy(); });
    // A change of language names the series and axes anew; the data stays.
    current.relabel = () => {
      for (const [u, keys, y] of [[uq, ['waiting', 'active'], 'people'], [uf, ['admitted', 'sold'], 'total'],
        [ur, ['joins', 'admits', 'noshows'], 'perMin']]) {
        u.series[0].label = t('dash.chart.time');
        keys.forEach((k, i) => { u.series[i + 1].label = t('dash.chart.' + k); });
        u.axes[0].label = t('dash.chart.time');
        u.axes[1].label = t('dash.chart.' + y);
        const names = u.root.querySelectorAll('.u-legend .u-label');
        names.forEach((n, i) => { if (u.series[i]) n.textContent = u.series[i].label; });
        u.redraw(false, true);
      }
    };
  }
  let latest = null;
  const add = (s) => {
    latest = s;
    const t = (Date.parse(s.at) || Date.now()) / 1000;
    const last = data[0][data[0].length - 1];
    if (last !== undefined && t <= last) return;
    data[0].push(t);
    data[1].push(s.waiting);
    data[2].push(s.active);
    data[3].push(s.admitted_total);
    data[4].push(s.sold);
    data[5].push(s.joined || 0);
    data[6].push(s.expired || 0);
    if (data[0].length > CHART_POINTS) data.forEach((a) => a.shift());
    renderStats(s);
    if (uq) uq.setData([data[0], data[1], data[2]]);
    if (uf) uf.setData([data[0], data[3], data[4]]);
    const r = perMinute(data[0], [data[5], data[3], data[6]]);
    renderRates(r);
    if (ur) ur.setData([data[0], ...r]);
  };

  // A quiet stream still moves the time axis on: repeat the last figures each second.
  const hold = () => {
    if (stopped) return;
    if (latest && Date.now() / 1000 - data[0][data[0].length - 1] > 1.5) {
      add(Object.assign({}, latest, { at: new Date().toISOString() }));
    }
    timers.hold = setTimeout(hold, 1000);
  };
  hold();

  // The public stats stream; when it is missing, poll the event instead.
  let streamed = false;
  const es = new EventSource(`/api/v1/events/${enc(id)}/stats/stream`);
  stops.push(() => es.close());
  es.addEventListener('stats', (e) => {
    streamed = true;
    try { add(JSON.parse(e.data)); } catch (_) { /* a bad message is skipped */ }
  });
  es.onerror = () => {
    if (streamed || stopped) return;
    es.close();
    const poll = async () => {
      if (stopped) return;
      try {
        const ev = await api('GET', `/events/${enc(id)}`);
        add(Object.assign({ at: new Date().toISOString() }, ev.stats || {}));
      } catch (_) { /* the events list shows connection trouble */ }
      timers.poll = setTimeout(poll, 1000);
    };
    poll();
  };

  const admissions = async () => {
    if (stopped) return;
    const tbody = $('d-admissions').querySelector('tbody');
    if (adminKey()) {
      try {
        const r = await api('GET', `/admin/events/${enc(id)}/admissions?limit=50`, { admin: adminKey() });
        const list = Array.isArray(r && r.admissions) ? r.admissions : [];
        $('d-admissions-empty').hidden = list.length > 0;
        live($('d-admissions-empty'), () => t('dash.nobody'));
        tbody.replaceChildren(...list.map((a) => el('tr', null, [
          el('td', { class: 'num', text: fmtNum(a.admission_no) }),
          el('td', { class: 'mono', text: a.user_id }),
          el('td', { text: t('dash.type.' + a.user_type) }),
          el('td', { class: 'num', text: fmtNum(a.seq) }),
          el('td', { text: fmtTime(a.admitted_at) }),
        ])));
      } catch (err) {
        $('d-admissions-empty').hidden = false;
        live($('d-admissions-empty'), () => friendly(err, 'admin'));
      }
    } else {
      tbody.replaceChildren();
      $('d-admissions-empty').hidden = false;
      live($('d-admissions-empty'), () => t('dash.admissionsKey'));
    }
    if (!stopped) timers.admissions = setTimeout(admissions, ADMISSIONS_MS);
  };
  admissions();

  const grants = async () => {
    if (stopped) return;
    await refreshGrants(id);
    if (!stopped) timers.grants = setTimeout(grants, ADMISSIONS_MS);
  };
  grants();
}

// ---------- FAST TRACK (priority grants and codes) ----------

async function refreshGrants(id) {
  const tbody = $('d-ft-table').querySelector('tbody');
  if (!adminKey()) {
    tbody.replaceChildren();
    $('d-ft-empty').hidden = false;
    live($('d-ft-empty'), () => t('dash.grantsKey'));
    return;
  }
  try {
    const r = await api('GET', `/admin/events/${enc(id)}/priority`, { admin: adminKey() });
    const users = Array.isArray(r && r.users) ? r.users : [];
    const codes = Array.isArray(r && r.codes) ? r.codes : [];
    const revoke = (kind, value) => {
      const b = el('button', { type: 'button', class: 'link-btn', text: t('dash.revoke'), dataset: { kind, value } });
      b.setAttribute('aria-label', t('dash.revokeId', { id: value }));
      return b;
    };
    tbody.replaceChildren(
      ...users.map((u) => el('tr', null, [el('td', { text: t('dash.kind.user') }), el('td', { class: 'mono', text: u }),
        el('td', { text: '—' }), el('td', null, revoke('users', u))])),
      ...codes.map((c) => el('tr', null, [el('td', { text: t('dash.kind.code') }), el('td', { class: 'mono', text: c.code }),
        el('td', { class: c.redeemed_by ? 'mono' : '', text: c.redeemed_by || t('dash.unused') }), el('td', null, c.redeemed_by ? null : revoke('codes', c.code))])),
    );
    $('d-ft-empty').hidden = users.length + codes.length > 0;
    live($('d-ft-empty'), () => t('dash.noGrants'));
  } catch (err) {
    $('d-ft-empty').hidden = false;
    live($('d-ft-empty'), () => friendly(err, 'admin'));
  }
}

// newCode is a random single-use FAST TRACK code.
function newCode() {
  const b = new Uint8Array(6);
  crypto.getRandomValues(b);
  return 'FT-' + [...b].map((x) => 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789'[x % 32]).join('');
}

$('d-ft-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  if (!current.id || !needKey()) return;
  const users = $('d-ft-users').value.split(/[\s,]+/).filter(Boolean);
  const n = Number($('d-ft-codes').value || 0);
  if (!Number.isInteger(n) || n < 0 || n > 1000) {
    showAlert(alertBox, () => t('dash.codesRange'));
    $('d-ft-codes').focus();
    return;
  }
  const codes = Array.from({ length: n }, newCode);
  if (!users.length && !codes.length) {
    showAlert(alertBox, () => t('dash.nothingToGrant'), 'info');
    return;
  }
  $('d-ft-grant').disabled = true;
  try {
    const r = await api('POST', `/admin/events/${enc(current.id)}/priority`, { admin: adminKey(), body: { user_ids: users, codes } });
    showAlert(alertBox, () => (codes.length ? t('dash.granted.codes', { id: current.id, users: r.users, codes: r.codes, list: codes.join(' ') })
      : t('dash.granted', { id: current.id, users: r.users })), 'success');
    $('d-ft-users').value = '';
    $('d-ft-codes').value = '0';
    await refreshGrants(current.id);
  } catch (err) {
    showAlert(alertBox, () => friendly(err, 'admin'));
  } finally {
    $('d-ft-grant').disabled = false;
  }
});

$('d-ft-table').addEventListener('click', async (e) => {
  const b = e.target.closest('button[data-kind]');
  if (!b || !current.id || !needKey()) return;
  b.disabled = true;
  try {
    await api('DELETE', `/admin/events/${enc(current.id)}/priority/${b.dataset.kind}/${enc(b.dataset.value)}`, { admin: adminKey() });
    showAlert(alertBox, () => t('dash.revoked', { id: current.id, what: b.dataset.value }), 'success');
    await refreshGrants(current.id);
  } catch (err) {
    b.disabled = false;
    showAlert(alertBox, () => friendly(err, 'admin'));
  }
});

$('d-pause').addEventListener('click', (e) => setPaused(current.id, true, e.currentTarget));
$('d-resume').addEventListener('click', (e) => setPaused(current.id, false, e.currentTarget));

$('d-patch-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  if (!current.id || !needKey()) return;
  const ev = current.event || {};
  const body = {};
  const nums = [['capacity', 'd-p-capacity'], ['admit_batch', 'd-p-batch'], ['admit_interval_ms', 'd-p-interval'],
    ['active_ttl_s', 'd-p-ttl'], ['max_tps', 'd-p-max-tps']];
  for (const [field, id] of nums) {
    const raw = $(id).value.trim();
    if (raw === '') continue;
    const n = Number(raw);
    if (!Number.isInteger(n)) {
      showAlert(alertBox, () => t('dash.whole', { field: $(id).labels[0].textContent }));
      $(id).focus();
      return;
    }
    if (n !== ev[field]) body[field] = n;
  }
  if ($('d-p-policy').value !== ev.policy) body.policy = $('d-p-policy').value;
  if ($('d-p-mode').value !== (ev.queue_mode || 'fifo')) body.queue_mode = $('d-p-mode').value;
  if ($('d-p-challenge').value !== (ev.challenge || 'none')) body.challenge = $('d-p-challenge').value;
  const bits = Number($('d-p-pow-bits').value);
  if ($('d-p-challenge').value === 'pow' && bits !== ev.pow_bits) {
    if (!Number.isInteger(bits)) {
      showAlert(alertBox, () => t('dash.bitsRange'));
      $('d-p-pow-bits').focus();
      return;
    }
    body.pow_bits = bits;
  }
  if (!Object.keys(body).length) {
    showAlert(alertBox, () => t('dash.nothingToChange'), 'info');
    return;
  }
  $('d-patch').disabled = true;
  try {
    const updated = await api('PATCH', `/admin/events/${enc(current.id)}`, { admin: adminKey(), body });
    current.filled = null;
    renderDetail(updated);
    showAlert(alertBox, () => t('dash.changed', { id: current.id, fields: Object.keys(body).join(', ') }), 'success');
  } catch (err) {
    showAlert(alertBox, () => friendly(err, 'admin'));
  } finally {
    $('d-patch').disabled = false;
  }
});

// ---------- create ----------

function localToISO(v) {
  if (!v) return undefined;
  const d = new Date(v);
  return isNaN(d) ? null : d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

$('d-create-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  if (!needKey()) return;
  const id = $('d-id').value.trim();
  if (!/^[a-z0-9-]{1,64}$/.test(id)) {
    showAlert(alertBox, () => t('dash.idRule'));
    $('d-id').focus();
    return;
  }
  const body = { id, name: $('d-name').value.trim() || id, policy: $('d-policy-in').value };
  for (const [field, inputId] of [['seats', 'd-seats'], ['capacity', 'd-capacity'], ['admit_batch', 'd-batch'],
    ['admit_interval_ms', 'd-interval'], ['active_ttl_s', 'd-ttl'], ['max_tps', 'd-max-tps']]) {
    const n = Number($(inputId).value);
    if ($(inputId).value.trim() === '' || !Number.isInteger(n)) {
      showAlert(alertBox, () => t('dash.whole', { field: $(inputId).labels[0].textContent }));
      $(inputId).focus();
      return;
    }
    body[field] = n;
  }
  for (const [field, inputId] of [['opens_at', 'd-opens'], ['closes_at', 'd-closes']]) {
    const v = localToISO($(inputId).value);
    if (v === null) {
      showAlert(alertBox, () => t('dash.badDate', { field: $(inputId).labels[0].textContent }));
      $(inputId).focus();
      return;
    }
    if (v) body[field] = v;
  }
  $('d-create').disabled = true;
  try {
    const ev = await api('POST', '/admin/events', { admin: adminKey(), body });
    showAlert(alertBox, () => t('dash.created', { id: ev.id }), 'success');
    await refreshEvents();
    location.hash = `#/event/${enc(ev.id)}`;
  } catch (err) {
    showAlert(alertBox, () => friendly(err, 'admin'));
  } finally {
    $('d-create').disabled = false;
  }
});

hideAlert(alertBox);
live($('d-events-live'), () => t('dash.live'));
initLang(() => {
  renderEvents();
  if (current.relabel) current.relabel();
});
refreshEvents();
route();
