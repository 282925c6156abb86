// Shared helpers of the waiting room, practice and dashboard pages: the API
// client, error sentences, server-clock sync, formatting, event states and
// uPlot charts. Plain ES module, no build step, no outside requests. uPlot
// comes from /vendor as a global. Texts in Korean and English (i18n.js).
import { addTexts, t, tr, live, locale, num } from '/i18n.js';

addTexts({
  en: {
    'err.page': 'Something went wrong in this page. Reload it and try again.',
    'err.moment': 'a moment', 'err.secs': '{n} s',
    'err.NETWORK': 'Can\'t reach the rushline server. Check that it is still running; this page keeps trying.',
    'err.RATE_LIMITED': 'Too many requests from this address. Wait {wait} and try again.',
    'err.UNAVAILABLE': 'The server\'s storage isn\'t answering right now. Nothing was half-done; try again in {wait}.',
    'err.SOLD_OUT': 'Sold out: every seat is gone.',
    'err.SEAT_TAKEN': 'Someone else just took that seat. The map has been refreshed, pick another one.',
    'err.EVENT_NOT_OPEN': 'Too early: the line isn\'t open yet.',
    'err.EVENT_CLOSED': 'The line has closed: it takes no more joins.',
    'err.EVENT_EXISTS': 'An event with that id already exists. Choose another id.',
    'err.EVENT_NOT_FOUND': 'That event doesn\'t exist (any more).',
    'err.TOKEN_NOT_FOUND': 'The server no longer knows this place in line.',
    'err.SEAT_NOT_FOUND': 'That seat isn\'t on this event\'s map.',
    'err.TOKEN_OWNER_MISMATCH': 'That place in line belongs to another session.',
    'err.RACE_NOT_FINISHED': 'Your race isn\'t over yet: the result comes once your attempt has ended.',
    'err.UNAUTHENTICATED.admin': 'This needs the admin key. Paste it into the Admin key field.',
    'err.UNAUTHENTICATED': 'Your session has expired or isn\'t valid any more. Pick a nickname again.',
    'err.FORBIDDEN.admin': 'That admin key is wrong. Copy admin_key from the server\'s keys.json.',
    'err.FORBIDDEN': 'You aren\'t allowed to do that', 'err.BAD_REQUEST': 'The server didn\'t accept that',
    'err.BODY_TOO_LARGE': 'That request was too large for the server.',
    'err.server': '{msg}.', 'err.http': 'The server answered with an error (HTTP {status}). Try again in a moment.',
    'na.WAITING': 'It isn\'t your turn yet: you are still in line.', 'na.EXPIRED': 'Your time to buy ran out.',
    'na.DONE': 'This turn was already used for an order.', 'na.LEFT': 'You left the line, so this turn can\'t be used.',
    'na.other': 'Your place in line isn\'t active right now.',
    'sections.option': 'Rows {a}–{b} · {free} of {seats} free',
    'eta.soon': 'any moment', 'eta.s': '~{n} s', 'eta.m': '~{n} min', 'eta.hm': '~{h} h {m} min', 'eta.h': '~{h} h',
    'state.soldout': 'Sold out', 'state.closed': 'Closed', 'state.soon': 'Opens {at}', 'state.paused': 'Paused',
    'state.nojoin': 'No new joins', 'state.open': 'Open', 'chart.time': 'Time',
  },
  ko: {
    'err.page': '페이지에서 문제가 생겼습니다. 새로고침한 뒤 다시 시도하세요.',
    'err.moment': '잠시', 'err.secs': '{n}초',
    'err.NETWORK': 'rushline 서버에 연결할 수 없습니다. 서버가 실행 중인지 확인하세요. 이 페이지는 계속 다시 연결을 시도합니다.',
    'err.RATE_LIMITED': '이 주소에서 요청이 너무 많습니다. {wait} 후 다시 시도하세요.',
    'err.UNAVAILABLE': '지금 서버 저장소가 응답하지 않습니다. 처리된 것은 없으니 {wait} 후 다시 시도하세요.',
    'err.SOLD_OUT': '매진되었습니다. 남은 좌석이 없습니다.',
    'err.SEAT_TAKEN': '이미 다른 분이 선택한 좌석입니다. 좌석 배치도를 새로 불러왔으니 다른 좌석을 고르세요.',
    'err.EVENT_NOT_OPEN': '아직 이릅니다. 대기열이 열리지 않았습니다.',
    'err.EVENT_CLOSED': '대기열이 마감되어 더 이상 줄을 설 수 없습니다.',
    'err.EVENT_EXISTS': '같은 ID의 이벤트가 이미 있습니다. 다른 ID를 정하세요.',
    'err.EVENT_NOT_FOUND': '없는 이벤트입니다 (삭제되었을 수 있습니다).',
    'err.TOKEN_NOT_FOUND': '서버에 이 대기 순번이 더 이상 없습니다.',
    'err.SEAT_NOT_FOUND': '이 이벤트의 좌석 배치도에 없는 좌석입니다.',
    'err.TOKEN_OWNER_MISMATCH': '다른 세션의 대기 순번입니다.',
    'err.RACE_NOT_FINISHED': '아직 경기가 끝나지 않았습니다. 내 시도가 끝나면 결과가 나옵니다.',
    'err.UNAUTHENTICATED.admin': '관리자 키가 필요합니다. 관리자 키 칸에 붙여 넣으세요.',
    'err.UNAUTHENTICATED': '세션이 만료되었거나 유효하지 않습니다. 닉네임을 다시 정하세요.',
    'err.FORBIDDEN.admin': '관리자 키가 틀렸습니다. 서버의 keys.json에서 admin_key 값을 복사하세요.',
    'err.FORBIDDEN': '허용되지 않는 요청입니다', 'err.BAD_REQUEST': '서버가 요청을 받아들이지 않았습니다',
    'err.BODY_TOO_LARGE': '요청이 너무 커서 서버가 받지 않았습니다.',
    'err.server': '서버 오류: {msg}.', 'err.http': '서버가 오류로 응답했습니다 (HTTP {status}). 잠시 후 다시 시도하세요.',
    'na.WAITING': '아직 내 차례가 아닙니다. 대기 중입니다.', 'na.EXPIRED': '예매 가능 시간이 끝났습니다.',
    'na.DONE': '이번 차례는 이미 예매에 사용했습니다.', 'na.LEFT': '대기열에서 나와 이번 차례는 쓸 수 없습니다.',
    'na.other': '지금은 예매할 차례가 아닙니다.',
    'sections.option': '{a}–{b}열 · 잔여 {free}석 / {seats}석',
    'eta.soon': '곧', 'eta.s': '{n}초', 'eta.m': '{n}분', 'eta.hm': '{h}시간 {m}분', 'eta.h': '{h}시간',
    'state.soldout': '매진', 'state.closed': '마감', 'state.soon': '{at} 오픈', 'state.paused': '일시 중지',
    'state.nojoin': '신규 대기 중단', 'state.open': '진행 중', 'chart.time': '시각',
  },
});

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
  if (!(err instanceof ApiError)) return t('err.page');
  const wait = err.retryAfter ? t('err.secs', { n: err.retryAfter }) : t('err.moment');
  const withMessage = (key) => t(key) + (err.serverMessage ? `: ${err.serverMessage}.` : '.');
  switch (err.code) {
    case 'RATE_LIMITED':
    case 'UNAVAILABLE':
      return t('err.' + err.code, { wait });
    case 'NOT_ACTIVE':
      return notActiveText(err.status);
    case 'UNAUTHENTICATED':
    case 'FORBIDDEN':
      if (where === 'admin') return t(`err.${err.code}.admin`);
      return err.code === 'FORBIDDEN' ? withMessage('err.FORBIDDEN') : t('err.UNAUTHENTICATED');
    case 'BAD_REQUEST':
      return withMessage('err.BAD_REQUEST');
    case 'NETWORK': case 'SOLD_OUT': case 'SEAT_TAKEN': case 'EVENT_NOT_OPEN': case 'EVENT_CLOSED':
    case 'EVENT_EXISTS': case 'EVENT_NOT_FOUND': case 'TOKEN_NOT_FOUND': case 'SEAT_NOT_FOUND':
    case 'TOKEN_OWNER_MISMATCH': case 'RACE_NOT_FINISHED': case 'BODY_TOO_LARGE':
      return t('err.' + err.code);
    default:
      if (err.serverMessage) return t('err.server', { msg: capitalize(err.serverMessage) });
      return t('err.http', { status: String(err.httpStatus) });
  }
}

export function notActiveText(status) {
  return t(['WAITING', 'EXPIRED', 'DONE', 'LEFT'].includes(status) ? 'na.' + status : 'na.other');
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
    setText(o, t('sections.option', { a: x.first.split('-')[0], b: x.last.split('-')[0], free: x.free, seats: x.seats }));
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

// showAlert shows text in box: a string, or a function of the page's
// language, which a switch of language then rewrites.
export function showAlert(box, text, kind) {
  const k = kind || 'error';
  box.dataset.kind = k;
  const msg = el('span', { class: 'alert-text' });
  const close = el('button', { class: 'alert-close', type: 'button', text: '×' });
  box.replaceChildren(el('span', { class: 'alert-icon', 'aria-hidden': 'true', text: ICONS[k] }), msg, close);
  live(msg, typeof text === 'function' ? text : () => text);
  live(close, () => tr('Dismiss'), 'aria-label');
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

export const fmtNum = num;

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
  if (s <= 0) return t('eta.soon');
  if (s < 60) return t('eta.s', { n: Math.round(s) });
  if (s < 3600) return t('eta.m', { n: Math.round(s / 60) });
  const h = Math.floor(s / 3600);
  const m = Math.round((s % 3600) / 60);
  return m ? t('eta.hm', { h, m }) : t('eta.h', { h });
}

// dateFormat is an Intl.DateTimeFormat of the page's language, made once per language.
const formats = new Map();
export function dateFormat(opts) {
  const k = locale() + JSON.stringify(opts);
  if (!formats.has(k)) formats.set(k, new Intl.DateTimeFormat(locale(), opts));
  return formats.get(k);
}

export function fmtTime(iso) {
  const d = new Date(iso);
  return isNaN(d) ? '—' : dateFormat({ dateStyle: 'short', timeStyle: 'medium' }).format(d);
}

// fmtShort is a time today, or a short date and time.
export function fmtShort(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return '—';
  return dateFormat(d.toDateString() === new Date().toDateString() ? { timeStyle: 'short' } : { dateStyle: 'short', timeStyle: 'short' }).format(d);
}

// ---------- events ----------

// eventState is an event's state as a key for styling and a label.
export function eventState(ev) {
  const now = Date.now();
  const st = ev.stats;
  // Sold out first: two races that sold out alike read alike, whether or
  // not one has passed its closing time since.
  const state = (key, vars) => ({ key, label: t('state.' + key, vars) });
  if (st && st.seats_left === 0) return state('soldout');
  if (ev.closes_at && Date.parse(ev.closes_at) <= now) return state('closed');
  if (ev.opens_at && Date.parse(ev.opens_at) > now) return state('soon', { at: fmtShort(ev.opens_at) });
  if (ev.paused) return state('paused');
  if (ev.queue_mode === 'closed') return state('nojoin');
  return state('open');
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
    axes: [Object.assign(axis(o.xLabel), o.xInt ? { incrs: [1, 2, 5, 10, 20, 50, 100] } : {},
      o.xTime ? { values: (_, splits, _i, _s, incr) => splits.map((v) => (v == null ? '' : incr >= 86400 ? dayOf(v) : clockTime(v))) } : {}),
    axis(o.yLabel)],
    series: [Object.assign({ label: o.xLabel || (o.xTime ? t('chart.time') : 'x') },
      o.xTime ? { value: (_, v) => (v == null ? '—' : clockTime(v)) } : {})].concat(series.map((s, i) => {
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

// clockTime is a chart's time (s since 1970) as the time of day, in the page's language.
const clockTime = (v) => dateFormat({ hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' }).format(new Date(v * 1000));
// dayOf is a chart's time as its day, for an axis whose ticks are days apart.
const dayOf = (v) => dateFormat({ month: 'short', day: 'numeric' }).format(new Date(v * 1000));

// chartsReady says whether the vendored uPlot loaded.
export const chartsReady = () => typeof window.uPlot === 'function';
