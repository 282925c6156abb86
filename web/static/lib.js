// Shared helpers of the waiting room, practice and dashboard pages: the API
// client, error sentences, server-clock sync, formatting, event states and
// uPlot charts. Plain ES module, no build step, no outside requests. uPlot
// comes from /vendor as a global.

const API = '/api/v1';
export const $ = (id) => document.getElementById(id);
export const enc = encodeURIComponent;

// ---------- storage ----------

// local keeps the practice session across visits, so the history persists.
export const local = storage(() => window.localStorage);
// tab keeps the admin key and the waiting room's session for this tab only.
export const tab = storage(() => window.sessionStorage);

function storage(get) {
  return {
    get(key) {
      try { return JSON.parse(get().getItem('rushline.' + key)); } catch (_) { return null; }
    },
    set(key, value) {
      try { get().setItem('rushline.' + key, JSON.stringify(value)); } catch (_) { /* private mode */ }
    },
    del(key) {
      try { get().removeItem('rushline.' + key); } catch (_) { /* private mode */ }
    },
  };
}

// ---------- API ----------

class ApiError extends Error {
  constructor(httpStatus, code, message, extra) {
    super(message || code);
    this.httpStatus = httpStatus;
    this.code = code;
    this.serverMessage = message || '';
    this.status = extra && extra.status;
    this.retryAfter = (extra && extra.retryAfter) || 0;
  }
}

// api calls the JSON API. opts: body, bearer (access token), admin (key),
// headers.
export async function api(method, path, opts) {
  const o = opts || {};
  const headers = Object.assign({ Accept: 'application/json' }, o.headers || {});
  if (o.body !== undefined) headers['Content-Type'] = 'application/json';
  if (o.bearer) headers.Authorization = 'Bearer ' + o.bearer;
  if (o.admin) headers['X-Admin-Key'] = o.admin;
  let res;
  try {
    res = await fetch(API + path, {
      method,
      headers,
      body: o.body === undefined ? undefined : JSON.stringify(o.body),
      cache: 'no-store',
      credentials: 'same-origin',
    });
  } catch (_) {
    throw new ApiError(0, 'NETWORK', '');
  }
  if (res.status === 204) return null;
  let data = null;
  try {
    const text = await res.text();
    data = text ? JSON.parse(text) : null;
  } catch (_) {
    data = null;
  }
  if (!res.ok) {
    const e = (data && typeof data === 'object' && data.error) || {};
    throw new ApiError(res.status, typeof e.code === 'string' ? e.code : 'HTTP_' + res.status,
      typeof e.message === 'string' ? e.message : '',
      { status: e.status, retryAfter: parseInt(res.headers.get('Retry-After') || '0', 10) || 0 });
  }
  return data;
}

// friendly turns an API error into a sentence for people; where is 'admin'
// for the dashboard's wording.
export function friendly(err, where) {
  if (!(err instanceof ApiError)) return 'Something went wrong in this page. Reload it and try again.';
  const wait = err.retryAfter ? `${err.retryAfter} s` : 'a moment';
  switch (err.code) {
    case 'NETWORK':
      return 'Can\'t reach the rushline server. Check that it is still running; this page keeps trying.';
    case 'RATE_LIMITED':
      return `Too many requests from this address. Wait ${wait} and try again.`;
    case 'UNAVAILABLE':
      return `The server's storage isn't answering right now. Nothing was half-done; try again in ${wait}.`;
    case 'SOLD_OUT':
      return 'Sold out: every seat is gone.';
    case 'SEAT_TAKEN':
      return 'Someone else just took that seat. The map has been refreshed, pick another one.';
    case 'EVENT_NOT_OPEN':
      return 'Too early: the line isn\'t open yet.';
    case 'EVENT_CLOSED':
      return 'The line has closed: it takes no more joins.';
    case 'EVENT_EXISTS':
      return 'An event with that id already exists. Choose another id.';
    case 'EVENT_NOT_FOUND':
      return 'That event doesn\'t exist (any more).';
    case 'TOKEN_NOT_FOUND':
      return 'The server no longer knows this place in line.';
    case 'SEAT_NOT_FOUND':
      return 'That seat isn\'t on this event\'s map.';
    case 'NOT_ACTIVE':
      return notActiveText(err.status);
    case 'TOKEN_OWNER_MISMATCH':
      return 'That place in line belongs to another session.';
    case 'RACE_NOT_FINISHED':
      return 'Your race isn\'t over yet: the result comes once your attempt has ended.';
    case 'UNAUTHENTICATED':
      if (where === 'admin') return 'This needs the admin key. Paste it into the Admin key field.';
      return 'Your session has expired or isn\'t valid any more. Pick a nickname again.';
    case 'FORBIDDEN':
      if (where === 'admin') return 'That admin key is wrong. Copy admin_key from the server\'s keys.json.';
      return 'You aren\'t allowed to do that' + (err.serverMessage ? `: ${err.serverMessage}.` : '.');
    case 'BAD_REQUEST':
      return 'The server didn\'t accept that' + (err.serverMessage ? `: ${err.serverMessage}.` : '.');
    case 'BODY_TOO_LARGE':
      return 'That request was too large for the server.';
    default:
      if (err.serverMessage) return capitalize(err.serverMessage) + '.';
      return `The server answered with an error (HTTP ${err.httpStatus}). Try again in a moment.`;
  }
}

export function notActiveText(status) {
  switch (status) {
    case 'WAITING': return 'It isn\'t your turn yet: you are still in line.';
    case 'EXPIRED': return 'Your time to buy ran out.';
    case 'DONE': return 'This turn was already used for an order.';
    case 'LEFT': return 'You left the line, so this turn can\'t be used.';
    default: return 'Your place in line isn\'t active right now.';
  }
}

function capitalize(s) {
  s = String(s).replace(/[.\s]+$/, '');
  return s.charAt(0).toUpperCase() + s.slice(1);
}

// ---------- server clock ----------

// clock estimates the offset of the server's clock NTP-style: over a few
// samples of GET /time, offset = server_now - (t0 + t1) / 2, keeping the
// sample with the shortest round trip.
export const clock = {
  offset: 0,
  rtt: Infinity,
  synced: false,
  now() { return Date.now() + this.offset; },
  async sync(samples) {
    const n = samples || 5;
    for (let i = 0; i < n; i++) {
      const t0 = Date.now();
      let r;
      try { r = await api('GET', '/time'); } catch (_) { continue; }
      const t1 = Date.now();
      const server = Date.parse(r && r.now);
      if (isNaN(server)) continue;
      if (t1 - t0 < this.rtt) {
        this.rtt = t1 - t0;
        this.offset = server - (t0 + t1) / 2;
        this.synced = true;
      }
    }
    return this.synced;
  },
};

// ---------- seat maps ----------

// readSeats reads an event's seat map for an active token. A map of more
// than 10,000 seats comes by section (API.md): the overview, then the seats
// of section want (else the first with a free seat). It returns the seats to
// draw, the sections (null for a map of one list), the section drawn, and
// the whole map's free and total seats.
export async function readSeats(eventId, token, want) {
  const path = `/events/${enc(eventId)}/seats`;
  const headers = { 'X-Queue-Token': token };
  const r = await api('GET', path, { headers });
  if (!Array.isArray(r && r.sections)) {
    const seats = Array.isArray(r && r.seats) ? r.seats : [];
    const free = seats.reduce((n, x) => n + (x.taken ? 0 : 1), 0);
    return { seats, sections: null, section: null, free, total: seats.length };
  }
  const sections = r.sections;
  const free = sections.reduce((n, x) => n + x.free, 0);
  const total = sections.reduce((n, x) => n + x.seats, 0);
  const pick = sections.find((x) => x.id === want) || sections.find((x) => x.free > 0) || sections[0];
  if (!pick) return { seats: [], sections, section: null, free, total };
  const s = await api('GET', `${path}?section=${enc(pick.id)}`, { headers });
  return { seats: Array.isArray(s && s.seats) ? s.seats : [], sections, section: pick.id, free, total };
}

// showSections fills the section chooser select (in box, hidden for a map
// of one list) with sections and their free seats, current selected.
export function showSections(box, select, sections, current) {
  box.hidden = !sections;
  if (!sections) return;
  if (select.options.length !== sections.length) {
    select.replaceChildren(...sections.map((x) => el('option', { value: x.id })));
  }
  sections.forEach((x, i) => {
    const o = select.options[i];
    o.value = x.id;
    setText(o, `Rows ${x.first.split('-')[0]}–${x.last.split('-')[0]} · ${fmtNum(x.free)} of ${fmtNum(x.seats)} free`);
  });
  if (document.activeElement !== select) select.value = current;
}

// ---------- DOM ----------

export function el(tag, attrs, children) {
  const n = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') n.className = v;
      else if (k === 'text') n.textContent = v;
      else if (k === 'dataset') Object.assign(n.dataset, v);
      else n.setAttribute(k, v === true ? '' : String(v));
    }
  }
  for (const c of [].concat(children === undefined ? [] : children)) {
    if (c === null || c === undefined) continue;
    n.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return n;
}

export function setText(node, text) {
  const t = String(text);
  if (node && node.textContent !== t) node.textContent = t;
}

const ICONS = { error: '!', success: '✓', info: 'i', warn: '!' };

export function showAlert(box, text, kind) {
  const k = kind || 'error';
  box.dataset.kind = k;
  box.replaceChildren(
    el('span', { class: 'alert-icon', 'aria-hidden': 'true', text: ICONS[k] }),
    el('span', { class: 'alert-text', text }),
    el('button', { class: 'alert-close', type: 'button', 'aria-label': 'Dismiss', text: '×' }),
  );
  box.hidden = false;
}

export function hideAlert(box) {
  box.hidden = true;
  box.replaceChildren();
}

document.addEventListener('click', (e) => {
  const btn = e.target.closest && e.target.closest('.alert-close');
  if (btn) hideAlert(btn.closest('.alert'));
});

// ---------- formatting ----------

const nf = new Intl.NumberFormat();
export const fmtNum = (n) => (typeof n === 'number' && isFinite(n) ? nf.format(n) : '—');

export function fmtSec(ms) {
  if (typeof ms !== 'number' || !isFinite(ms)) return '—';
  return `${(ms / 1000).toFixed(2)} s`;
}

export function ordinal(n) {
  const s = ['th', 'st', 'nd', 'rd'];
  const v = n % 100;
  return fmtNum(n) + (s[(v - 20) % 10] || s[v] || s[0]);
}

export function plural(n, word, many) {
  return `${fmtNum(n)} ${n === 1 ? word : (many || word + 's')}`;
}

export function fmtClock(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const ss = String(s).padStart(2, '0');
  return h ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

export function fmtEta(s) {
  if (typeof s !== 'number' || !isFinite(s)) return '—';
  if (s <= 0) return 'any moment';
  if (s < 60) return `~${Math.round(s)} s`;
  if (s < 3600) return `~${Math.round(s / 60)} min`;
  const h = Math.floor(s / 3600);
  const m = Math.round((s % 3600) / 60);
  return m ? `~${h} h ${m} min` : `~${h} h`;
}

const dtf = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'medium' });
export function fmtTime(iso) {
  const d = new Date(iso);
  return isNaN(d) ? '—' : dtf.format(d);
}

const tf = new Intl.DateTimeFormat(undefined, { timeStyle: 'short' });
const df = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'short' });
// fmtShort is a time today, or a short date and time.
export function fmtShort(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return '—';
  return d.toDateString() === new Date().toDateString() ? tf.format(d) : df.format(d);
}

// ---------- events ----------

// eventState is an event's state as a key for styling and a label.
export function eventState(ev) {
  const now = Date.now();
  const st = ev.stats;
  // Sold out first: two races that sold out alike read alike, whether or
  // not one has passed its closing time since.
  if (st && st.seats_left === 0) return { key: 'soldout', label: 'Sold out' };
  if (ev.closes_at && Date.parse(ev.closes_at) <= now) return { key: 'closed', label: 'Closed' };
  if (ev.opens_at && Date.parse(ev.opens_at) > now) return { key: 'soon', label: 'Opens ' + fmtShort(ev.opens_at) };
  if (ev.paused) return { key: 'paused', label: 'Paused' };
  if (ev.queue_mode === 'closed') return { key: 'nojoin', label: 'No new joins' };
  return { key: 'open', label: 'Open' };
}

// ---------- charts (uPlot, vendored) ----------

// cssVar is a custom property of the page, or fallback.
export function cssVar(name, fallback) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

// palette is the chart colours of the current colour scheme.
function palette() {
  return {
    text: cssVar('--muted', '#545b6c'),
    grid: cssVar('--chart-grid', '#e3e6ee'),
    lines: [cssVar('--chart-line', '#3b32c4'), cssVar('--focus', '#d9480f'),
      cssVar('--success', '#0b6e37'), cssVar('--danger', '#b1261b')],
  };
}

// chart draws a uPlot chart into box (an element with data-chart) that
// follows the box's width. series: [{label, points?, size?, spanGaps?}];
// opts: {height, xTime, xInt, xLabel, yLabel}.
export function chart(box, series, data, opts) {
  const o = opts || {};
  const p = palette();
  const axis = (label) => ({
    stroke: p.text,
    grid: { stroke: p.grid, width: 1 },
    ticks: { stroke: p.grid, width: 1 },
    label,
    labelSize: label ? 20 : 0,
  });
  const width = () => Math.max(240, Math.floor(box.clientWidth || 600));
  const u = new window.uPlot({
    width: width(),
    height: o.height || 220,
    // Whole-number x (race 1, 2, …) gets half a step of room on each side.
    // A live time axis spans at least 30 s, so its first points read as seconds, not years.
    scales: {
      x: o.xInt ? { time: false, range: (_, lo, hi) => [lo - 0.5, hi + 0.5] }
        : o.xTime ? { time: true, range: (_, lo, hi) => (lo != null && hi - lo < 30 ? [hi - 30, hi] : [lo, hi]) }
          : { time: false },
    },
    legend: { show: true },
    cursor: { drag: { x: false, y: false } },
    axes: [Object.assign(axis(o.xLabel), o.xInt ? { incrs: [1, 2, 5, 10, 20, 50, 100] } : {}), axis(o.yLabel)],
    series: [{ label: o.xLabel || 'x' }].concat(series.map((s, i) => {
      const color = p.lines[i % p.lines.length];
      const out = { label: s.label, stroke: color, width: 2, spanGaps: !!s.spanGaps };
      if (s.points) {
        out.width = 0;
        out.points = { show: true, size: s.size || 10, fill: color, stroke: color };
        out.paths = () => null;
      }
      return out;
    })),
  }, data, box);
  if (window.ResizeObserver) {
    new ResizeObserver(() => u.setSize({ width: width(), height: o.height || 220 })).observe(box);
  }
  return u;
}

// chartsReady says whether the vendored uPlot loaded.
export const chartsReady = () => typeof window.uPlot === 'function';
