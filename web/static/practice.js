// rushline practice arena. The front is the next public drop: its
// countdown on the server's clock, the people and crowd joined, then join →
// waiting (SSE) → seats → the drop's ranking, your percentile and the
// leaderboard. The solo race (nickname → scenario → countdown → the same
// race → result) stays as a second choice. Hash routes, so a reload keeps
// the page:
//   #/  #/drop/{drop}  #/drop/{drop}/wait  #/drop/{drop}/seats  #/drop/{drop}/result
//   #/solo  #/race/{id}  #/race/{id}/wait  #/race/{id}/seats  #/race/{id}/result  #/history
import {
  $, api, enc, local, friendly, notActiveText, clock, el, setText, showAlert, hideAlert,
  fmtNum, fmtSec, ordinal, fmtClock, fmtEta, fmtTime, fmtShort, chart, chartsReady, readSeats, showSections,
} from '/lib.js';
import { t, lang, applyLang, setLang } from '/practice-i18n.js';
import { proveWork } from '/pow.js';

const LIVE_MS = 1000;
const SEATS_MS = 1000;
// A solo race's result is asked for again with backoff: soon while the
// person's attempt may just have ended (every second at most while it
// runs on), then more rarely while the crowd races on and its side fills
// in, until the result is final.
const RESULT_FIRST_MS = 400;
const RESULT_PENDING_MAX_MS = 1000;
const RESULT_PARTIAL_MS = 1000;
const RESULT_MAX_MS = 5000;
const DROP_MS = 1000;
const DROP_RESULT_MS = 2000;
// PRESS_MAX_MS is the furthest from its target a press the server ranks.
const PRESS_MAX_MS = 5000;
const CHART_POINTS = 600;
const MAX_RACES = 20;

const alertBox = $('practice-alert');

// ---------- session and races (localStorage) ----------

function session() {
  const s = local.get('practice.session');
  if (!s || !s.access_token) return null;
  if (s.expires_at && Date.parse(s.expires_at) <= Date.now()) {
    local.del('practice.session');
    return null;
  }
  return s;
}

const bearer = () => (session() || {}).access_token;

// race returns what this browser knows of a practice race.
function race(id) {
  return (local.get('practice.races') || {})[id] || { id };
}

function saveRace(r) {
  const all = local.get('practice.races') || {};
  all[r.id] = Object.assign({}, all[r.id], r, { saved: Date.now() });
  const ids = Object.keys(all).sort((a, b) => all[b].saved - all[a].saved);
  for (const id of ids.slice(MAX_RACES)) delete all[id];
  local.set('practice.races', all);
  return all[r.id];
}

// ---------- routing ----------

let cleanups = [];
let routeGen = 0;

function onLeave(fn) { cleanups.push(fn); }

// still says whether the view that called it is still shown: views await
// the network, and a route change meanwhile must not wake them up.
function still() {
  const g = routeGen;
  return () => g === routeGen;
}

function go(hash) {
  routed = true;
  if (location.hash === hash) route();
  else location.hash = hash;
}

// A game is one race the wait and seat views follow: a solo race's event,
// or a drop's (drop is then its id), and base, the hash of its pages.
const soloGame = (id) => ({ event: id, drop: null, base: `#/race/${enc(id)}` });

// dropGame finds the event this browser joined for drop id.
function dropGame(id) {
  const r = Object.values(local.get('practice.races') || {}).find((x) => x.drop === id);
  return r && { event: r.id, drop: id, base: `#/drop/${enc(id)}` };
}

function route() {
  queueMicrotask(() => { renderWho(); applyLang(); });
  for (const fn of cleanups) fn();
  cleanups = [];
  routeGen++;
  hideAlert(alertBox);
  const parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  for (const v of document.querySelectorAll('.view')) v.hidden = true;
  if (parts[0] === 'drop' && parts[1]) {
    const id = parts[1];
    if (parts[2] === 'result') return showDropResult(id);
    const g = session() && dropGame(id);
    if ((parts[2] === 'wait' || parts[2] === 'seats') && g) return parts[2] === 'wait' ? showWait(g) : showSeatsOrSteps(g);
    return showDrop(id);
  }
  if (parts[0] === 'race' && parts[1]) {
    if (!session()) {
      showAlert(alertBox, t('p.nick.first'), 'info');
      return showStart();
    }
    const id = parts[1];
    switch (parts[2]) {
      case 'wait': return showWait(soloGame(id));
      case 'seats': return showSeatsOrSteps(soloGame(id));
      case 'result': return showResult(id);
      default: return showCountdown(id);
    }
  }
  if (parts[0] === 'history') return showBoard(null, true);
  if (parts[0] === 'drills') return showDrills();
  if (parts[0] === 'solo') return showStart();
  return showDrop(null);
}

window.addEventListener('hashchange', () => { routed = true; route(); });

// A pointer click that lands within GUARD_MS of a screen change does
// nothing: the second click of a double-click on "Join now!" must not buy
// the seat that has just appeared under the pointer.
const GUARD_MS = 500;
let changedAt = -Infinity;
let routed = false;

let settleTimer = 0;

// screenChanged starts the guard: call it whenever what sits under the
// pointer is replaced (a view, a step). The page's root carries
// data-settling meanwhile, so tests (and styles) can tell.
function screenChanged() {
  if (!routed) return; // the first view after loading: no click came before it
  changedAt = performance.now();
  document.documentElement.dataset.settling = 'true';
  clearTimeout(settleTimer);
  settleTimer = setTimeout(() => { delete document.documentElement.dataset.settling; }, GUARD_MS);
}

document.addEventListener('click', (e) => {
  // A click from the keyboard (Enter or Space: detail 0) aims at the
  // focused control, not at whatever lies under the pointer.
  if (e.detail === 0 || performance.now() - changedAt >= GUARD_MS) return;
  e.preventDefault();
  e.stopImmediatePropagation();
}, true);

function show(id, title) {
  const v = $(id);
  if (v.hidden) screenChanged();
  v.hidden = false;
  document.title = `rushline — ${title}`;
  return v;
}

function focusHeading(view) {
  const h = view.querySelector('h1');
  if (h) {
    h.setAttribute('tabindex', '-1');
    h.focus({ preventScroll: true });
  }
}

// every runs fn now and then each ms until the view is left.
function every(ms, fn) {
  let stopped = false;
  let timer = 0;
  const tick = async () => {
    if (stopped) return;
    try { await fn(); } finally { if (!stopped) timer = setTimeout(tick, ms); }
  };
  onLeave(() => { stopped = true; clearTimeout(timer); });
  tick();
}

// ---------- 0. the next public drop ----------

// dropMeta is a drop's scenario, level, crowd and seats in one line.
const dropMeta = (d) => [t('dr.meta', { sc: d.scenario, level: d.level, crowd: d.crowd, seats: d.seats }), ...opening(d)].join(' · ');
// opening names a drop's opening when it is not a plain first come, first served.
const opening = (d) => [
  ...(d.queue_mode && d.queue_mode !== 'fifo' ? [t('open.' + d.queue_mode)] : []),
  ...(d.challenge === 'pow' ? [t('open.pow', { bits: d.pow_bits })] : []),
];
// nth is a place in line: 3rd, or 3번째 in Korean.
const nth = (n) => (lang === 'ko' ? t('nth', { n }) : ordinal(n));

// joinedDrop says whether this browser holds a place in drop id's line.
function joinedDrop(id) {
  const g = dropGame(id);
  return !!(g && race(g.event).token);
}

// renderDropButton shows the nickname form or the Join button: none for a
// drop that is over or already joined.
function renderDropButton(d) {
  const s = session();
  $('dr-nick-form').hidden = !!s;
  $('dr-join').hidden = !s || !d || d.phase === 'finished' || joinedDrop(d.id);
}

$('dr-nick-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  if (!await startSession($('dr-nickname'), $('dr-nick-save'))) return;
  $('dr-nick-form').hidden = true;
  $('dr-join').hidden = false;
  $('dr-join').focus();
});

// showDrop shows drop want, or the next public drop: its countdown on the
// server's clock, the people and crowd joined, and the Join button. A press
// before the opening goes to the server, which refuses it (409) and counts
// a false start; the page says so and the person presses again.
async function showDrop(want) {
  const v = show('view-drop', t('title.drop'));
  const shown = still();
  renderDropButton(null);
  const btn = $('dr-join');
  let d = null;
  let joining = false;
  let falseStarts = 0;
  let quietUntil = 0; // a false start's message stays up a moment
  let lastSpoken = -1;
  let raf = 0;
  btn.dataset.state = 'waiting';
  setText(btn, t('front.join'));
  $('dr-after').hidden = true;
  $('dr-pow').hidden = true;
  setText($('dr-eyebrow'), want ? t('dr.practice') : t('dr.next'));

  const frame = () => {
    if (!d) return;
    const left = Date.parse(d.opens_at) - clock.now();
    const quiet = Date.now() < quietUntil;
    if (d.phase === 'finished') {
      setText($('dr-clock'), t('dr.over'));
      setText($('dr-title'), t('front.over'));
      setText($('dr-status'), t('dr.closed'));
      return;
    }
    if (joinedDrop(d.id)) {
      setText($('dr-status'), t('dr.in'));
    }
    if (left <= 0) {
      btn.dataset.state = 'open';
      setText(btn, t('front.joinNow'));
      setText($('dr-clock'), 'GO');
      setText($('dr-title'), t('front.open'));
      if (!quiet && !joinedDrop(d.id)) setText($('dr-status'), t('front.go'));
      return;
    }
    if (!quiet) btn.dataset.state = 'waiting';
    setText(btn, t('front.join'));
    setText($('dr-title'), t('front.opensIn'));
    setText($('dr-clock'), left < 10000 ? (left / 1000).toFixed(1) : fmtClock(left));
    const s = Math.ceil(left / 1000);
    if (!quiet && !joinedDrop(d.id) && s !== lastSpoken && (s <= 5 || s % 10 === 0 || lastSpoken < 0)) {
      lastSpoken = s;
      setText($('dr-status'), t('front.secs', { n: s }));
    }
    // One frame pending at most: the 250 ms timer calls frame too.
    if (!raf) raf = requestAnimationFrame(() => { raf = 0; frame(); });
  };
  // requestAnimationFrame stops in a background tab; the timer still opens the button.
  const timer = setInterval(frame, 250);
  onLeave(() => { cancelAnimationFrame(raf); clearInterval(timer); });

  const render = () => {
    setText($('dr-meta'), dropMeta(d));
    setText($('dr-opens'), fmtShort(d.opens_at));
    setText($('dr-seats'), fmtNum(d.seats));
    const st = d.stats || {};
    setText($('dr-people'), fmtNum(st.people_joined != null ? st.people_joined : d.people));
    setText($('dr-crowd'), t('crowd.of', { n: st.crowd_joined || 0, total: d.crowd }));
    $('dr-results').setAttribute('href', `#/drop/${enc(d.id)}/result`);
    $('dr-after').hidden = d.phase === 'scheduled' || d.phase === 'countdown' ? !joinedDrop(d.id) : false;
    renderDropButton(d);
  };

  // The drop's figures about once a second; the next drop once the shown
  // one is over, unless a drop was asked for.
  every(DROP_MS, async () => {
    try {
      if (!d || (d.phase === 'finished' && !want)) {
        let id = want;
        if (!id) {
          const l = await api('GET', '/drops');
          // The soonest drop not over, one not joined yet if there is one.
          const open = (Array.isArray(l && l.drops) ? l.drops : []).filter((x) => x.phase !== 'finished');
          const next = open.find((x) => !joinedDrop(x.id)) || open[0];
          if (!next) {
            setText($('dr-status'), t('dr.none'));
            return;
          }
          id = next.id;
        }
        const first = await api('GET', `/drops/${enc(id)}`);
        if (!shown()) return;
        d = first;
        if (want && joinedDrop(d.id) && d.phase !== 'finished') return go(`#/drop/${enc(d.id)}/wait`);
        render();
        frame();
        return;
      } else {
        d = await api('GET', `/drops/${enc(d.id)}`);
      }
      if (!shown()) return;
      render();
    } catch (err) {
      if (err.code === 'DROP_NOT_FOUND') want = null;
      showAlert(alertBox, friendly(err));
    }
  });

  clock.sync(5).then(() => {
    if (!shown()) return;
    setText($('dr-offset'), clock.synced ? `${Math.round(clock.offset)} ms (±${Math.round(clock.rtt / 2)} ms)` : t('dr.nosync'));
  });

  const join = async () => {
    if (joining || !d) return;
    if (!session()) {
      $('dr-nickname').focus();
      return;
    }
    joining = true;
    try {
      const body = { user_type: 'ACTUAL' };
      if (d.challenge === 'pow') Object.assign(body, await proveDropWork(d.event));
      let q = await api('POST', `/events/${enc(d.event)}/queue`, { bearer: bearer(), body });
      // A random_start drop's join before its opening holds a pre-queue
      // place: ask again (no new challenge needed) until the draw places it.
      while (q.status === 'PREQUEUED') {
        quietUntil = Infinity;
        btn.dataset.state = 'prequeued';
        setText($('dr-status'), t('dr.prequeued'));
        const opens = Date.parse(d.opens_at) - clock.now();
        await new Promise((r) => setTimeout(r, Math.max(1000, opens + 500 + Math.random() * 1000)));
        if (!shown()) return;
        q = await api('POST', `/events/${enc(d.event)}/queue`, { bearer: bearer(), body: { user_type: 'ACTUAL' } });
      }
      quietUntil = 0;
      saveRace({
        id: d.event, drop: d.id, scenario: d.scenario, opens_at: d.opens_at, seats: d.seats,
        token: q.token, first_position: q.position || null, pass: q.pass || null, expires_at: q.expires_at || null,
      });
      // Saved either way, but a join answered after the person left this
      // view (another drop, the front page) must not take them back.
      if (!shown()) return;
      go(`#/drop/${enc(d.id)}/${q.status === 'ACTIVE' ? 'seats' : 'wait'}`);
    } catch (err) {
      if (err.code === 'EVENT_NOT_OPEN') {
        falseStarts++;
        quietUntil = Date.now() + 1500;
        btn.dataset.state = 'early';
        setText($('dr-status'), t('front.early', { n: falseStarts }));
        // The server's clock said not yet: measure it again.
        clock.rtt = Infinity;
        clock.sync(3);
      } else {
        if (err.code === 'UNAUTHENTICATED') {
          local.del('practice.session');
          renderDropButton(d);
        }
        showAlert(alertBox, friendly(err));
      }
    } finally {
      joining = false;
    }
  };
  btn.onclick = join;
  onLeave(() => { btn.onclick = null; });
  focusHeading(v);
  if (session()) btn.focus();
}

// proveDropWork solves the drop's challenge before its join (pow.js),
// showing its progress on the drop's card.
async function proveDropWork(eventId) {
  const box = $('dr-pow');
  box.hidden = false;
  try {
    return await proveWork(eventId, (pct) => {
      $('dr-pow-progress').value = pct;
      setText($('dr-pow-text'), pct >= 100 ? t('dr.pow.done') : t('dr.pow', { pct }));
    });
  } finally {
    setTimeout(() => { box.hidden = true; }, 1500);
  }
}

// ---------- a drop's result ----------

// showDropResult shows drop id's ranking of people, this person's entry
// (percentile, false starts) and the leaderboard; while the drop runs it
// follows the partial results.
async function showDropResult(id) {
  const v = show('view-dresult', t('title.dres'));
  $('dres-body').hidden = true;
  setText($('dres-wait'), t('res.loading'));
  focusHeading(v);
  const shown = still();
  let info = null;
  let over = false;
  let board = ''; // the outcome and seat the leaderboard was loaded for
  every(DROP_RESULT_MS, async () => {
    if (over) return;
    try {
      if (!info) info = await api('GET', `/drops/${enc(id)}`);
      const [res, mine] = await Promise.all([
        api('GET', `/drops/${enc(id)}/results`),
        session() ? api('GET', `/drops/${enc(id)}/results/me`, { bearer: bearer() }).catch((err) => err) : null,
      ]);
      if (!shown()) return;
      over = res.phase === 'finished';
      renderDropResult(info, res, mine);
      // The leaderboard again when this person's outcome changed, and at the end.
      const now = mine && !(mine instanceof Error) ? `${mine.outcome} ${mine.seat}` : '-';
      if (now !== board || over) {
        board = now;
        loadDropBoard();
        loadStepTimes(info, res);
      }
    } catch (err) {
      if (!shown()) return;
      if (err.code === 'DROP_NOT_FOUND') over = true;
      setText($('dres-wait'), friendly(err));
    }
  });
}

function renderDropResult(info, res, mine) {
  const me = (session() || {}).user_id;
  const running = res.phase !== 'finished';
  setText($('dres-drop'), `${dropMeta(info)} · ${t('dres.opened', { at: fmtShort(info.opens_at) })}`);
  setText($('dres-wait'), running ? t('res.running') : '');
  $('dres-body').hidden = false;
  const c = res.crowd || {};
  const q = c.reaction_ms || {};
  setText($('dres-crowd-p50'), fmtSec(q.p50));
  setText($('rank-crowd'), t('dres.crowd', { joined: c.joined || 0, sold: c.sold || 0, p50: fmtSec(q.p50), p90: fmtSec(q.p90), p99: fmtSec(q.p99) }));

  const ok = mine && !(mine instanceof Error);
  if (ok) saveRace({ id: info.event, drop: info.id, seat: mine.seat || null });
  let headline;
  if (!session()) headline = t('dres.nick');
  else if (!ok && mine && mine.code !== 'RESULT_NOT_FOUND') headline = friendly(mine);
  else if (!ok) headline = t('dres.notin');
  else {
    headline = t('dres.head', { pos: mine.position, p: mine.percentile, s: fmtReaction(mine.reaction_ms) });
    headline += ' ' + (mine.false_starts ? t('dres.false', { n: mine.false_starts }) : t('dres.nofalse'));
    headline += ' ' + (mine.seat ? t('res.got', { s: mine.seat }) : `${outcomeText(mine.outcome)}.`);
  }
  setText($('dres-headline'), headline);
  setText($('dres-percentile'), ok ? `${mine.percentile}%` : '—');
  setText($('dres-position'), ok ? nth(mine.position) : '—');
  setText($('dres-reaction'), ok ? fmtReaction(mine.reaction_ms) : '—');
  setText($('dres-false'), ok ? fmtNum(mine.false_starts) : '—');
  setText($('dres-outcome'), ok ? outcomeText(mine.outcome) : '—');
  setText($('dres-seat'), (ok && mine.seat) || '—');
  setText($('dres-waited'), ok && typeof mine.wait_ms === 'number' ? fmtSec(mine.wait_ms) : '—');

  const people = Array.isArray(res.people) ? res.people : [];
  $('rank-empty').hidden = people.length > 0;
  $('rank-table').querySelector('tbody').replaceChildren(...people.map((x) => el('tr', { class: me && x.user_id === me ? 'me' : null }, [
    el('td', { class: 'num', text: fmtNum(x.rank) }),
    el('td', { text: me && x.user_id === me ? t('you.mark', { n: x.nickname }) : x.nickname }),
    el('td', { class: 'num', text: fmtSec(x.reaction_ms) }),
    el('td', { class: 'num', text: nth(x.position) }),
    el('td', { class: 'opt', text: outcomeText(x.outcome) }),
    el('td', { text: x.seat || '—' }),
  ])));
}

// loadStepTimes fills the person's time per step against the drop's
// people and crowd, for a drop with order steps; hidden otherwise. While
// the drop runs and the crowd's column is not full, it reads them again.
let stepTimesTimer = 0;
async function loadStepTimes(info, res) {
  clearTimeout(stepTimesTimer);
  const shown = still();
  const r = race(info.event);
  const box = $('dres-steps-box');
  const rows = document.querySelectorAll('#view-dresult [data-steps]');
  if (!r.token) return;
  let tm;
  try {
    tm = await api('GET', `/events/${enc(info.event)}/steps/times`, { headers: { 'X-Queue-Token': r.token } });
  } catch (_) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  for (const x of rows) x.hidden = false;
  setText($('dres-total'), fmtMS(tm.total_ms));
  setText($('dres-grade'), tm.grade ? `${t('grade.seat', { g: tm.grade })} · ${fmtWon(tm.price)}` : '—');
  $('dres-steps').querySelector('tbody').replaceChildren(...(tm.steps || []).map((x) => el('tr', { dataset: { step: x.step } }, [
    el('th', { scope: 'row', text: t(`step.${x.step}`) }),
    el('td', { class: 'num', text: fmtMS(x.you_ms) }),
    el('td', { class: 'num', text: `${fmtMS(x.people_p50_ms)} (${fmtNum(x.people)})` }),
    el('td', { class: 'num', text: typeof x.percentile === 'number' ? `${x.percentile}%` : '—' }),
    el('td', { class: 'num', dataset: { crowd: '' }, text: crowdCell(x.crowd_p50_ms, x.crowd_p90_ms) }),
  ])), el('tr', { class: 'total', dataset: { step: 'total' } }, [
    el('th', { scope: 'row', text: t('res.total') }),
    el('td', { class: 'num', text: fmtMS(tm.total_ms) }),
    el('td', { class: 'num', text: fmtMS(tm.people_total_ms) }),
    el('td', { class: 'num', text: '' }),
    el('td', { class: 'num', dataset: { crowd: '' }, text: crowdCell(tm.crowd_ms, tm.crowd_p90_ms) }),
  ]));
  const q = ((res && res.crowd) || {}).reaction_ms || {};
  const bought = Math.max(0, ...(tm.steps || []).map((x) => x.crowd || 0));
  setText($('dres-crowd-note'), typeof q.p50 === 'number'
    ? t(bought ? 'res.crowd' : 'res.crowdwait', { n: fmtNum(bought), p50: fmtSec(q.p50) }) : '');
  const full = typeof tm.crowd_ms === 'number' && (tm.steps || []).every((x) => typeof x.crowd_p50_ms === 'number');
  if (!full && res && res.phase !== 'finished') {
    stepTimesTimer = setTimeout(() => { if (shown()) loadStepTimes(info, res); }, DROP_RESULT_MS);
  }
}

// crowdCell shows the crowd's median and p90 at a step, "—" before any of
// it bought.
const crowdCell = (p50, p90) => (typeof p50 === 'number' ? `${fmtMS(p50)} / ${fmtMS(p90)}` : '—');

// loadDropBoard fills the leaderboard of the chosen period; this person's row
// is the one with their user id.
async function loadDropBoard() {
  const period = (document.querySelector('input[name="dlb-period"]:checked') || {}).value || 'day';
  try {
    const r = await api('GET', `/leaderboard?period=${enc(period)}`);
    const entries = Array.isArray(r && r.entries) ? r.entries : [];
    const me = (session() || {}).user_id;
    $('dlb-empty').hidden = entries.length > 0;
    $('dlb-table').querySelector('tbody').replaceChildren(...entries.map((x) => el('tr', { class: me && x.user_id === me ? 'me' : null }, [
      el('td', { class: 'num', text: fmtNum(x.rank) }),
      el('td', { text: x.nickname }),
      el('td', { class: 'num', text: fmtSec(x.reaction_ms) }),
      el('td', { text: x.seat || outcomeText(x.outcome) }),
      el('td', { class: 'num opt', text: typeof x.bought_ms === 'number' ? fmtSec(x.bought_ms) : '—' }),
    ])));
  } catch (err) {
    showAlert(alertBox, friendly(err));
  }
}

for (const r of document.querySelectorAll('input[name="dlb-period"]')) r.addEventListener('change', loadDropBoard);
$('dres-next').addEventListener('click', () => go('#/'));

// ---------- 1. nickname and scenario ----------

let scenarios = [];

function renderWho() {
  const s = session();
  $('who').hidden = !s;
  if (s) setText($('who'), t('who', { n: s.nickname }));
  $('nick-form').hidden = !!s;
  $('p-nickname-hint').hidden = !!s;
  $('p-signed-in').hidden = !s;
  if (s) setText($('p-name'), s.nickname);
  $('p-create').disabled = !s || !scenarios.length;
}

async function loadScenarios() {
  if (scenarios.length) return scenarios;
  const r = await api('GET', '/practice/scenarios');
  // Races made for practice first, then the rest from small to large.
  const rank = (x) => (String(x.name).startsWith('practice') ? 0 : 1);
  scenarios = (Array.isArray(r && r.scenarios) ? r.scenarios : [])
    .sort((a, b) => rank(a) - rank(b) || a.bots - b.bots || String(a.name).localeCompare(b.name));
  return scenarios;
}

async function showStart() {
  const v = show('view-start', t('title.solo'));
  renderWho();
  const box = $('scenario-list');
  const shown = still();
  try {
    await loadScenarios();
  } catch (err) {
    box.replaceChildren(el('p', { class: 'hint', text: friendly(err) }));
    return;
  }
  if (!shown()) return;
  // The default is the big race against 2,000 bots, as the arena promises.
  const chosen = local.get('practice.scenario') ||
    (scenarios.find((s) => s.name === 'practice-2k') || scenarios.find((s) => s.name === 'practice-small') || scenarios[0] || {}).name;
  if (!box.querySelector('input')) {
    box.replaceChildren(...scenarios.map((s, i) => {
      const id = `scn-${i}`;
      return el('div', { class: 'scenario' }, [
        el('input', { type: 'radio', name: 'scenario', id, value: s.name, checked: s.name === chosen }),
        el('label', { for: id }, [
          el('span', { class: 'scn-name', text: s.name }),
          el('span', { class: 'scn-desc', text: s.description || '' }),
          el('span', { class: 'scn-meta', text: t('scn.meta', { bots: s.bots, seats: s.seats, s: s.opens_in_s }) }),
        ]),
      ]);
    }));
    if (!scenarios.length) box.replaceChildren(el('p', { class: 'hint', text: t('solo.none') }));
  }
  renderWho();
  if (!session()) $('p-nickname').focus();
  else focusHeading(v);
}

// startSession starts a session for the nickname typed in input (its
// submit button busy meanwhile); false when there is none.
async function startSession(input, submit) {
  const nickname = input.value.trim();
  if (!nickname || [...nickname].length > 32) {
    showAlert(alertBox, t('p.nick.bad'));
    input.focus();
    return false;
  }
  submit.disabled = true;
  try {
    local.set('practice.session', await api('POST', '/sessions', { body: { nickname } }));
    hideAlert(alertBox);
    renderWho();
    return true;
  } catch (err) {
    showAlert(alertBox, friendly(err));
    return false;
  } finally {
    submit.disabled = false;
  }
}

$('nick-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  if (!await startSession($('p-nickname'), $('p-start'))) return;
  const first = document.querySelector('#scenario-list input:checked') || document.querySelector('#scenario-list input');
  if (first) first.focus();
});

$('p-sign-out').addEventListener('click', () => {
  local.del('practice.session');
  renderWho();
  $('p-nickname').focus();
});

$('race-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const picked = document.querySelector('#scenario-list input:checked');
  if (!picked) {
    showAlert(alertBox, t('solo.pick'));
    return;
  }
  const body = { scenario: picked.value };
  const raw = $('p-opens-in').value.trim();
  if (raw) {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 3 || n > 120) {
      showAlert(alertBox, t('p.opens.bad'));
      $('p-opens-in').focus();
      return;
    }
    body.opens_in_s = n;
  }
  local.set('practice.scenario', picked.value);
  $('p-create').disabled = true;
  try {
    const r = await api('POST', '/practice', { bearer: bearer(), body });
    const ev = r.event || {};
    saveRace({
      id: ev.id, scenario: r.scenario || picked.value, opens_at: r.opens_at || ev.opens_at,
      bots: r.bots, seats: r.seats != null ? r.seats : ev.seats, token: null,
    });
    go(`#/race/${enc(ev.id)}`);
  } catch (err) {
    if (err.code === 'UNAUTHENTICATED') local.del('practice.session');
    showAlert(alertBox, friendly(err));
    renderWho();
  }
});

// ---------- 2. countdown ----------

// loadRace fills in opens_at and seats from the server when this browser
// lost them (another tab, cleared storage).
async function loadRace(id) {
  let r = race(id);
  if (!r.opens_at || r.seats == null) {
    const ev = await api('GET', `/events/${enc(id)}`);
    r = saveRace({ id, opens_at: r.opens_at || ev.opens_at, seats: r.seats != null ? r.seats : ev.seats });
  }
  return r;
}

async function showCountdown(id) {
  const v = show('view-countdown', t('title.cd'));
  const shown = still();
  let r;
  try {
    r = await loadRace(id);
  } catch (err) {
    showAlert(alertBox, friendly(err));
    return;
  }
  if (!shown()) return;
  if (r.token) return go(`#/race/${enc(id)}/wait`);
  setText($('cd-scenario'), r.scenario ? t('scenario', { s: r.scenario }) : t('solo.race'));
  $('cd-skip').setAttribute('href', `#/race/${enc(id)}/result`);
  setText($('cd-title'), t('front.opensIn'));
  setText($('cd-status'), t('cd.sync'));
  setText($('cd-bots'), fmtNum(r.bots));
  setText($('cd-seats'), fmtNum(r.seats));
  setText($('cd-opens'), fmtTime(r.opens_at));
  const btn = $('join-btn');
  const opensAt = Date.parse(r.opens_at);
  let open = false;
  let joining = false;
  let raf = 0;
  btn.setAttribute('aria-disabled', 'true');
  btn.dataset.state = 'waiting';
  setText(btn, t('cd.wait'));
  btn.focus();

  await clock.sync(5);
  if (!shown()) return;
  setText($('cd-offset'), clock.synced ? `${Math.round(clock.offset)} ms (±${Math.round(clock.rtt / 2)})` : t('cd.unknown'));
  setText($('cd-status'), clock.synced ? t('cd.synced') : t('cd.nosync'));

  let lastSpoken = -1;
  let quietUntil = 0; // an early press's message stays up a moment
  const frame = () => {
    const left = opensAt - clock.now();
    if (left <= 0) {
      if (!open) {
        open = true;
        btn.setAttribute('aria-disabled', 'false');
        btn.dataset.state = 'open';
        setText(btn, t('front.joinNow'));
        setText($('cd-clock'), 'GO');
        setText($('cd-title'), t('front.open'));
        setText($('cd-status'), t('front.go'));
      }
      return;
    }
    const s = Math.ceil(left / 1000);
    setText($('cd-clock'), left < 10000 ? (left / 1000).toFixed(1) : fmtClock(left));
    // Announce whole seconds to screen readers near the end, not every frame.
    if (s !== lastSpoken && (s <= 5 || s % 10 === 0) && Date.now() >= quietUntil) {
      lastSpoken = s;
      setText($('cd-status'), t('front.secs', { n: s }));
    }
    // One frame pending at most: the 250 ms timer calls frame too.
    if (!raf) raf = requestAnimationFrame(() => { raf = 0; frame(); });
  };
  frame();
  // requestAnimationFrame stops in a background tab; the timer still opens the button.
  const timer = setInterval(frame, 250);
  onLeave(() => { cancelAnimationFrame(raf); clearInterval(timer); });

  const join = async () => {
    if (joining) return;
    if (!open) {
      quietUntil = Date.now() + 1500;
      setText($('cd-status'), t('cd.notyet'));
      return;
    }
    joining = true;
    btn.setAttribute('aria-disabled', 'true');
    setText(btn, t('joining'));
    try {
      const q = await api('POST', `/events/${enc(id)}/queue`, { bearer: bearer(), body: { user_type: 'ACTUAL' } });
      saveRace({ id, token: q.token, first_position: q.position || null, pass: q.pass || null, expires_at: q.expires_at || null });
      if (!shown()) return; // saved, but the person has left this view
      go(`#/race/${enc(id)}/${q.status === 'ACTIVE' ? 'seats' : 'wait'}`);
    } catch (err) {
      joining = false;
      if (err.code === 'EVENT_NOT_OPEN') {
        // The server's clock says not yet: resync and let the person press again.
        open = false;
        btn.dataset.state = 'waiting';
        clock.rtt = Infinity;
        clock.sync(3).then(frame);
      } else {
        btn.setAttribute('aria-disabled', 'false');
        setText(btn, t('front.joinNow'));
      }
      showAlert(alertBox, friendly(err));
    }
  };
  btn.onclick = join;
  onLeave(() => { btn.onclick = null; });
  focusHeading(v);
  btn.focus();
}

// ---------- 3. waiting ----------

async function showWait(g) {
  const v = show('view-wait', t('title.wait'));
  const id = g.event;
  const r = race(id);
  if (!r.token) return go(g.base);
  for (const x of v.querySelectorAll('[data-solo]')) x.hidden = !!g.drop;
  for (const x of v.querySelectorAll('[data-drop]')) x.hidden = !g.drop;
  const st = { position: r.first_position || null, first: r.first_position || null, waiting: null, eta: null,
    aheadPeople: null, done: false };
  const series = [[], [], []];
  let u = null;
  if (chartsReady()) {
    u = chart($('w-chart'), [{ label: t('w.waiting'), spanGaps: true }, { label: t('w.place'), spanGaps: true }],
      series, { height: 220, xLabel: t('chart.inline'), yLabel: t('chart.people') });
  }

  const render = () => {
    if (st.soldOut) {
      setText($('w-headline'), t('wait.soldout'));
    } else if (st.position != null) {
      setText($('w-headline'), st.position === 1
        ? t('wait.next')
        : t('wait.pos', { pos: lang === 'ko' ? fmtNum(st.position) : nth(st.position), eta: fmtEta(st.eta) }));
    }
    if (st.position != null) {
      setText($('w-position'), nth(st.position));
      const pct = st.first > 1 ? Math.round(100 * (st.first - st.position) / (st.first - 1)) : 0;
      $('w-progress').value = Math.max(0, Math.min(100, pct));
      setText($('w-progress'), `${pct}%`);
    }
    // The stream's place is fresher than the once-a-second live figures: split
    // it into people (from the live figures) and bots, so the two add up.
    if (st.position != null && st.aheadPeople != null) {
      const people = Math.min(st.aheadPeople, st.position - 1);
      setText($('w-ahead-people'), fmtNum(people));
      setText($('w-ahead-bots'), fmtNum(st.position - 1 - people));
    }
    setText($('w-eta'), st.soldOut ? '—' : fmtEta(st.eta));
    if (st.waiting != null && st.position != null) setText($('w-behind'), fmtNum(Math.max(0, st.waiting - st.position)));
    if (st.waiting != null) setText($('w-waiting'), fmtNum(st.waiting));
  };
  render();

  const since = Date.now();
  const sample = () => {
    const t = Math.round((Date.now() - since) / 100) / 10;
    series[0].push(t);
    series[1].push(st.waiting);
    series[2].push(st.position);
    if (series[0].length > CHART_POINTS) series.forEach((s) => s.shift());
    if (u) u.setData(series);
  };
  sample();
  const sampler = setInterval(sample, 1000);
  onLeave(() => clearInterval(sampler));

  onLeave(() => { st.done = true; });
  const finish = (path, note) => {
    if (st.done) return;
    st.done = true;
    if (note) showAlert(alertBox, note, 'info');
    go(`${g.base}/${path}`);
  };

  // Sold out is pushed: nobody waits on for a seat that is not there.
  soldOutFeed(id, () => {
    if (st.done) return;
    st.soldOut = true;
    render();
    showAlert(alertBox, t('wait.soldout'), 'warn');
    const here = still();
    setTimeout(() => { if (here()) finish('result'); }, 600);
  });

  // The queue stream: position updates, then admitted / expired / closed.
  const es = new EventSource(`/api/v1/events/${enc(id)}/queue/${enc(r.token)}/stream`);
  onLeave(() => es.close());
  const data = (e) => { try { return JSON.parse(e.data); } catch (_) { return {}; } };
  es.addEventListener('position', (e) => {
    const d = data(e);
    if (typeof d.position === 'number') {
      st.position = d.position;
      if (st.first == null || d.position > st.first) {
        st.first = d.position;
        saveRace({ id, first_position: d.position });
      }
    }
    if (typeof d.waiting === 'number') st.waiting = d.waiting;
    if (typeof d.eta_s === 'number') st.eta = d.eta_s;
    $('w-conn').dataset.state = 'live';
    setText($('w-conn'), t('live'));
    render();
  });
  es.addEventListener('admitted', (e) => {
    const d = data(e);
    saveRace({ id, pass: d.pass || null, expires_at: d.expires_at || null });
    es.close();
    finish('seats');
  });
  es.addEventListener('expired', () => { es.close(); finish('result', t('w.expired')); });
  es.addEventListener('closed', (e) => {
    es.close();
    const s = data(e).status;
    finish('result', s ? notActiveText(s) : t('w.closed'));
  });
  es.onerror = () => {
    if (st.done) return;
    $('w-conn').dataset.state = 'stale';
    setText($('w-conn'), t('reconnecting'));
  };

  // The live figures, about once a second: a drop's people and crowd, or
  // who is ahead in a solo race, bots and people apart.
  if (g.drop) {
    every(LIVE_MS, async () => {
      try {
        const d = await api('GET', `/drops/${enc(g.drop)}`);
        const x = d.stats || {};
        setText($('w-people'), fmtNum(x.people_joined));
        setText($('w-crowd'), t('crowd.of', { n: x.crowd_joined, total: d.crowd }));
        setText($('w-active'), fmtNum(x.active));
        setText($('w-sold'), t('sold.of', { n: x.sold, total: d.seats }));
        setText($('w-seats-left'), fmtNum(x.seats_left));
        if (typeof x.waiting === 'number') st.waiting = x.waiting;
        render();
      } catch (err) {
        if (err.code !== 'NETWORK') showAlert(alertBox, friendly(err));
      }
    });
  } else every(LIVE_MS, async () => {
    try {
      const l = await api('GET', `/practice/${enc(id)}/live`, { bearer: bearer() });
      if (typeof l.ahead_people === 'number') st.aheadPeople = l.ahead_people;
      setText($('w-active'), fmtNum(l.active));
      setText($('w-sold'), t('sold.of', { n: l.sold, total: l.seats }));
      setText($('w-seats-left'), fmtNum(l.seats_left));
      if (typeof l.waiting === 'number') st.waiting = l.waiting;
      render();
    } catch (err) {
      if (err.code !== 'NETWORK') showAlert(alertBox, friendly(err));
    }
  });
  // A stream that never says so still ends: the token's status is the truth.
  every(5000, async () => {
    try {
      const q = await api('GET', `/events/${enc(id)}/queue/${enc(r.token)}`);
      if (q.status === 'ACTIVE') {
        saveRace({ id, pass: q.pass || null, expires_at: q.expires_at || null });
        finish('seats');
      } else if (q.status !== 'WAITING') {
        finish('result', notActiveText(q.status));
      }
    } catch (_) { /* the stream and live figures show connection trouble */ }
  });
  focusHeading(v);
}

// ---------- 4. seats ----------

async function showSeats(g) {
  const v = show('view-seats', t('title.seats'));
  const id = g.event;
  const r = race(id);
  if (!r.token) return go(g.base);
  $('s-skip').setAttribute('href', `${g.base}/result`);
  const map = $('s-map');
  map.replaceChildren();
  setText($('s-note'), '');
  let buttons = new Map();
  let drawn = null; // the section drawn, of a map answered by section
  let section = null;
  let busy = false;
  let over = false;
  // Choosing a seat and buying it are two actions: a click selects, and
  // Confirm buys the selected seat.
  let picked = null;
  const confirmBtn = $('s-confirm');
  const select = (b) => {
    if (picked) picked.setAttribute('aria-pressed', 'false');
    picked = b;
    if (b) b.setAttribute('aria-pressed', 'true');
    confirmBtn.disabled = !b;
    setText($('s-picked'), b ? t('seat.picked', { s: b.dataset.seat }) : t('seat.none'));
  };
  select(null);
  let expiresAt = Date.parse(r.expires_at);
  let ttl = Math.max(1, (expiresAt - clock.now()) || 1);

  onLeave(() => { over = true; });
  const end = (note, kind) => {
    if (over) return;
    over = true;
    showAlert(alertBox, note, kind || 'info');
    const here = still();
    setTimeout(() => { if (here()) go(`${g.base}/result`); }, 1200);
  };

  // Sold out is pushed: the map says so at once, not at its next read.
  soldOutFeed(id, () => end(t('steps.soldout'), 'warn'));

  const tick = () => {
    if (isNaN(expiresAt)) return;
    const left = expiresAt - clock.now();
    setText($('s-time'), fmtClock(left));
    $('s-bar').style.width = `${Math.max(0, Math.min(100, 100 * left / ttl))}%`;
    $('s-countdown').dataset.urgent = String(left < 10000);
    if (left <= 0 && !busy) end(t('w.expired'), 'warn');
  };
  const timer = setInterval(tick, 250);
  onLeave(() => clearInterval(timer));
  tick();

  const draw = (seats) => {
    const { rows, width } = seatRows(seats);
    map.style.setProperty('--cols', String(width));
    if (width > 16) map.dataset.dense = 'true';
    const frag = document.createDocumentFragment();
    select(null);
    buttons = new Map();
    for (const [name, list] of rows) {
      frag.append(el('span', { class: 'row-label', 'aria-hidden': 'true', text: name }));
      for (const s of list) {
        const b = el('button', { type: 'button', class: 'seat', dataset: { seat: s.id },
          text: String(s.id).split('-').slice(1).join('-') || s.id });
        buttons.set(s.id, b);
        frag.append(b);
      }
      for (let i = list.length; i < width; i++) frag.append(el('span', { 'aria-hidden': 'true' }));
    }
    map.replaceChildren(frag);
  };

  const update = (m) => {
    const { seats } = m;
    if (buttons.size !== seats.length || drawn !== m.section) draw(seats);
    drawn = m.section;
    for (const s of seats) {
      const b = buttons.get(s.id);
      if (!b || b.getAttribute('aria-busy') === 'true') continue;
      if (b.disabled !== !!s.taken) {
        if (s.taken && document.activeElement === b) {
          const next = [...buttons.values()].find((x) => !x.disabled && x !== b);
          if (next) next.focus();
        }
        b.disabled = !!s.taken;
        if (b.disabled && b === picked) {
          select(null);
          setText($('s-note'), t('seat.taken.now'));
        }
      }
      b.setAttribute('aria-label', t(s.taken ? 'seat.aria.taken' : 'seat.aria', { s: s.id }));
    }
    setText($('s-count'), t('seats.free', { free: m.free, total: m.total }));
    if (!m.free && m.total) end(t('steps.soldout'), 'warn');
  };

  const refresh = async () => {
    if (over) return;
    try {
      const asked = section;
      const m = await readSeats(id, r.token, asked);
      // A section picked while this read ran wins over its answer: its own
      // read (the chooser's change) draws it.
      if (over || section !== asked) return;
      section = m.section;
      showSections($('s-section-box'), $('s-section'), m.sections, m.section);
      update(m);
    } catch (err) {
      if (over) return;
      if (err.code === 'NOT_ACTIVE' && err.status === 'WAITING') return go(`${g.base}/wait`);
      if (err.code === 'NOT_ACTIVE') return end(notActiveText(err.status), 'warn');
      setText($('s-note'), friendly(err));
    }
  };

  // Without expires_at (a reload), the token's status gives it.
  const shown = still();
  if (isNaN(expiresAt)) {
    try {
      const q = await api('GET', `/events/${enc(id)}/queue/${enc(r.token)}`);
      if (!shown()) return;
      if (q.status === 'WAITING') return go(`${g.base}/wait`);
      if (q.status !== 'ACTIVE') return end(notActiveText(q.status), 'warn');
      expiresAt = Date.parse(q.expires_at);
      ttl = Math.max(1, (expiresAt - clock.now()) || 1);
      saveRace({ id, expires_at: q.expires_at });
    } catch (err) {
      showAlert(alertBox, friendly(err));
    }
    if (!shown()) return;
  }

  map.onclick = (e) => {
    const b = e.target.closest('button.seat');
    if (!b || b.disabled || busy || over) return;
    setText($('s-note'), ''); // what was said of the seat before
    select(b === picked ? null : b);
  };
  confirmBtn.onclick = async () => {
    const b = picked;
    if (!b || b.disabled || busy || over) return;
    busy = true;
    confirmBtn.disabled = true;
    b.setAttribute('aria-busy', 'true');
    map.dataset.busy = 'true';
    setText($('s-note'), t('seat.buying', { s: b.dataset.seat }));
    try {
      const o = await api('POST', `/events/${enc(id)}/orders`, { bearer: bearer(), body: { token: r.token, seat: b.dataset.seat } });
      saveRace({ id, seat: o.seat });
      setText($('s-note'), t('seat.yours', { s: o.seat }));
      end(t(g.drop ? 'bought.drop' : 'bought', { s: o.seat }), 'success');
    } catch (err) {
      setText($('s-note'), friendly(err));
      if (err.code === 'SEAT_TAKEN') {
        b.disabled = true;
        select(null);
        await refresh();
      } else if (err.code === 'SOLD_OUT' || err.code === 'NOT_ACTIVE') {
        end(friendly(err), 'warn');
      }
    } finally {
      busy = false;
      b.removeAttribute('aria-busy');
      delete map.dataset.busy;
      confirmBtn.disabled = !picked;
    }
  };
  $('s-section').onchange = (e) => { section = e.target.value; refresh(); };
  onLeave(() => { map.onclick = null; confirmBtn.onclick = null; $('s-section').onchange = null; });
  every(SEATS_MS, refresh);
  focusHeading(v);
}

// ---------- 4b. the order steps (events whose scenario names them) ----------

// soldOutFeed follows event id's stats stream (a push each second) and calls
// onSoldOut once no seat is left.
function soldOutFeed(id, onSoldOut) {
  const es = new EventSource(`/api/v1/events/${enc(id)}/stats/stream`);
  onLeave(() => es.close());
  es.addEventListener('stats', (e) => {
    let d = {};
    try { d = JSON.parse(e.data); } catch (_) { return; }
    if (d.seats_left === 0) {
      es.close();
      onSoldOut();
    }
  });
}

// showSeatsOrSteps shows the order steps of an event that has them, else
// the one seat map of API.md's order call.
async function showSeatsOrSteps(g) {
  const r = race(g.event);
  if (!r.token) return go(g.base);
  const shown = still();
  let st = null;
  try {
    st = await api('GET', `/events/${enc(g.event)}/steps`, { headers: { 'X-Queue-Token': r.token } });
  } catch (err) {
    if (err.code !== 'STEP_OUT_OF_ORDER' && err.code !== 'UNAVAILABLE') {
      if (!shown()) return;
      showAlert(alertBox, friendly(err));
    }
  }
  if (!shown()) return;
  return st ? showSteps(g, st) : showSeats(g);
}

// fmtReaction is a reaction time in milliseconds, as practisers count it.
const fmtReaction = (ms) => (typeof ms === 'number' ? `${fmtNum(Math.round(ms))} ms` : '—');
const fmtMS = (ms) => (typeof ms === 'number' ? `${(ms / 1000).toFixed(2)} s` : '—');
const fmtWon = (n) => t('won', { n: fmtNum(n) });
const fmtShow = (at) => new Intl.DateTimeFormat(lang === 'ko' ? 'ko-KR' : 'en-GB', {
  timeZone: 'Asia/Seoul', year: 'numeric', month: 'short', day: 'numeric', weekday: 'short', hour: '2-digit', minute: '2-digit',
}).format(new Date(at));

// seatRows groups a seat list by row: the rows in order and the widest.
function seatRows(seats) {
  const rows = new Map();
  for (const x of seats) {
    const row = String(x.id).split('-')[0];
    if (!rows.has(row)) rows.set(row, []);
    rows.get(row).push(x);
  }
  return { rows, width: Math.max(1, ...[...rows.values()].map((x) => x.length)) };
}

// showSteps walks the person through the event's steps. Every choice is a
// selection first and goes to the server only with the step's button; the
// server records each step's time on its clock.
function showSteps(g, st) {
  const v = show('view-steps', t('steps.title'));
  const id = g.event;
  const r = race(id);
  const tokenH = { 'X-Queue-Token': r.token };
  const info = { date: null, grade: null, seat: null };
  let step = st.next;
  let choice = null; // the current step's selection, sent with Next
  let busy = false;
  let over = false;
  const next = $('st-next');
  const expiresAt = Date.parse(st.expires_at);
  const ttl = Math.max(1, expiresAt - Date.parse(st.admitted_at) || 1);
  setText($('st-event'), r.scenario ? `${r.scenario}` : id);
  $('st-skip').setAttribute('href', `${g.base}/result`);
  // Giving up leaves the line, so a held seat goes back at once.
  $('st-skip').onclick = async (e) => {
    e.preventDefault();
    over = true;
    try { await api('DELETE', `/events/${enc(id)}/queue/${enc(r.token)}`, { bearer: bearer() }); } catch (_) { /* the pass ends anyway */ }
    go(`${g.base}/result`);
  };
  $('st-soldout').hidden = true;
  for (const d of st.done) info[d.step] = d.value || null;

  onLeave(() => { over = true; });
  const end = (note, kind) => {
    if (over) return;
    over = true;
    next.disabled = true;
    if (note) showAlert(alertBox, note, kind || 'info');
    const here = still();
    setTimeout(() => { if (here()) go(`${g.base}/result`); }, 900);
  };
  soldOutFeed(id, () => {
    if (over) return;
    $('st-soldout').hidden = false;
    end(null);
  });

  const tick = () => {
    if (isNaN(expiresAt)) return;
    const left = expiresAt - clock.now();
    setText($('st-time'), fmtClock(left));
    $('st-countdown').dataset.urgent = String(left < 10000);
    if (left <= 0 && !busy) end(notActiveText('EXPIRED'), 'warn');
  };
  const timer = setInterval(tick, 250);
  onLeave(() => clearInterval(timer));
  tick();

  const times = new Map(st.done.map((d) => [d.step, d.ms]));
  const renderSide = () => {
    $('st-progress').replaceChildren(...st.flow.map((x) => el('li', {
      'aria-current': x === step ? 'step' : null,
      dataset: { state: times.has(x) ? 'done' : (x === step ? 'now' : 'todo') },
      text: t(`step.${x}`),
    })));
    const grade = st.grades.find((x) => x.id === info.grade);
    const show = st.dates.find((x) => x.id === info.date);
    const rows = [];
    if (show) rows.push([t('sum.show'), fmtShow(show.at)]);
    if (grade) rows.push([t('sum.grade'), t('grade.seat', { g: grade.id })], [t('sum.price'), fmtWon(grade.price)]);
    if (info.seat) rows.push([t('sum.seat'), info.seat]);
    $('st-picked').replaceChildren(...rows.flatMap(([k, x]) => [el('dt', { text: k }), el('dd', { text: x })]));
    $('sk-summary').replaceChildren(...rows.flatMap(([k, x]) => [el('dt', { text: k }), el('dd', { text: x })]));
    $('st-times').replaceChildren(...st.flow.filter((x) => times.has(x)).map((x) =>
      el('li', { dataset: { step: x }, text: `${t(`step.${x}`)}: ${fmtMS(times.get(x))}` })));
  };

  const label = { date: 'steps.next', captcha: 'captcha.submit', grade: 'steps.next', seat: 'seat.done', confirm: 'confirm.btn', payment: 'pay.btn' };
  const choose = (value) => {
    choice = value;
    next.disabled = busy || over || (choice == null && step !== 'confirm' && step !== 'payment');
  };

  // gradeOfChoice is the seat grade (VIP, R, S, A) of the grade or block chosen.
  const gradeOfChoice = () => (st.grades.find((x) => x.id === info.grade) || {}).grade || info.grade;

  // The seat map of the chosen grade, refreshed each second.
  let seatButtons = new Map();
  let picked = null;
  const map = $('ss-map');
  let zoom = 1;
  const drawSeats = (seats) => {
    const { rows, width } = seatRows(seats);
    map.style.setProperty('--cols', String(width));
    if (width > 16) map.dataset.dense = 'true'; else delete map.dataset.dense;
    const frag = document.createDocumentFragment();
    seatButtons = new Map();
    picked = null;
    for (const [name, list] of rows) {
      frag.append(el('span', { class: 'row-label', 'aria-hidden': 'true', text: name }));
      for (const x of list) {
        const b = el('button', { type: 'button', class: `seat graded g-${gradeOfChoice()}`, dataset: { seat: x.id },
          'aria-pressed': 'false', text: String(x.id).split('-').slice(1).join('-') });
        seatButtons.set(x.id, b);
        frag.append(b);
      }
      for (let i = list.length; i < width; i++) frag.append(el('span', { 'aria-hidden': 'true' }));
    }
    map.replaceChildren(frag);
  };
  const loadSeats = async () => {
    if (over || step !== 'seat' || !info.grade) return;
    try {
      const m = await api('GET', `/events/${enc(id)}/steps/seats?grade=${enc(info.grade)}`, { headers: tokenH });
      if (over || step !== 'seat') return;
      const seats = Array.isArray(m && m.seats) ? m.seats : [];
      if (seatButtons.size !== seats.length || !seats.every((x) => seatButtons.has(x.id))) drawSeats(seats);
      for (const x of seats) {
        const b = seatButtons.get(x.id);
        b.disabled = !!x.taken;
        b.setAttribute('aria-label', `${x.id}${x.taken ? `, ${t('seat.taken')}` : ''}`);
        if (b.disabled && b === picked) {
          picked = null;
          b.setAttribute('aria-pressed', 'false');
          setText($('st-note'), t('seat.taken.now'));
          choose(null);
        }
      }
    } catch (err) {
      if (err.code === 'NOT_ACTIVE') end(friendly(err), 'warn');
      else setText($('st-note'), friendly(err));
    }
  };
  map.onclick = (e) => {
    const b = e.target.closest('button.seat');
    if (!b || b.disabled || busy || over) return;
    if (picked) picked.setAttribute('aria-pressed', 'false');
    picked = b === picked ? null : b;
    if (picked) picked.setAttribute('aria-pressed', 'true');
    setText($('st-note'), picked ? t('seat.picked', { s: picked.dataset.seat }) : '');
    choose(picked ? picked.dataset.seat : null);
  };
  const setZoom = (z) => {
    zoom = Math.max(0.6, Math.min(2, z));
    $('ss-scroll').style.setProperty('--zoom', String(zoom));
  };
  $('ss-zoom-in').onclick = () => setZoom(zoom + 0.25);
  $('ss-zoom-out').onclick = () => setZoom(zoom - 0.25);
  // A phone starts zoomed in: the grade was the section overview.
  setZoom(window.matchMedia('(max-width: 520px)').matches ? 1.25 : 1);

  const radio = (box, items) => {
    box.replaceChildren(...items.map((it) => {
      const b = el('button', { type: 'button', class: `choice ${it.cls || ''}`, role: 'radio', 'aria-checked': 'false',
        dataset: { value: it.value }, disabled: it.disabled || null }, [
        el('span', { class: 'c-main' }, it.main),
        el('span', { class: 'c-sub', text: it.sub }),
      ]);
      return b;
    }));
    box.onclick = (e) => {
      const b = e.target.closest('button.choice');
      if (!b || b.disabled || busy || over) return;
      for (const x of box.querySelectorAll('.choice')) x.setAttribute('aria-checked', String(x === b));
      choose(b.dataset.value);
    };
  };

  const newCaptcha = () => {
    $('sc-image').src = `/api/v1/events/${enc(id)}/steps/captcha?token=${enc(r.token)}&n=${Date.now()}`;
    $('sc-answer').value = '';
    choose(null);
  };
  $('sc-new').onclick = () => { if (!busy && !over) newCaptcha(); };
  $('sc-answer').oninput = (e) => {
    e.target.value = e.target.value.replace(/\D/g, '').slice(0, 6);
    choose(e.target.value.length === 6 ? e.target.value : null);
  };
  $('sc-answer').onkeydown = (e) => { if (e.key === 'Enter' && !next.disabled) next.click(); };
  $('sp-agree').checked = false;

  // enter shows the pane of the current step.
  const enter = () => {
    screenChanged();
    choice = null;
    setText($('st-note'), '');
    for (const p of v.querySelectorAll('.step-pane')) p.hidden = p.dataset.step !== step;
    setText(next, t(label[step] || 'steps.next'));
    renderSide();
    choose(null);
    if (step === 'date') {
      radio($('sd-shows'), st.dates.map((x) => ({ value: x.id, main: fmtShow(x.at), sub: t('date.pick') })));
    } else if (step === 'captcha') {
      newCaptcha();
      $('sc-answer').focus();
    } else if (step === 'grade') {
      radio($('sg-grades'), st.grades.map((x) => ({
        value: x.id, cls: `g-${x.grade}`, disabled: x.free === 0,
        main: [el('span', { class: 'grade-dot', 'aria-hidden': 'true' }), `${t('grade.seat', { g: x.id })} · ${fmtWon(x.price)}`],
        sub: `${t('grade.free', { free: fmtNum(x.free), seats: fmtNum(x.seats) })} · ${t('grade.rows', { a: x.first_row, b: x.last_row })}`,
      })));
    } else if (step === 'seat') {
      map.replaceChildren();
      seatButtons = new Map();
      loadSeats();
    }
    const h = v.querySelector(`.step-pane[data-step="${step}"] h2`);
    if (h && step !== 'captcha') { h.setAttribute('tabindex', '-1'); h.focus({ preventScroll: true }); }
  };
  every(SEATS_MS, loadSeats);

  next.onclick = async () => {
    if (busy || over || next.disabled) return;
    if (step === 'payment' && !$('sp-agree').checked) {
      setText($('st-note'), t('pay.agree.first'));
      return;
    }
    let value = choice || '';
    if (step === 'payment') {
      value = `${document.querySelector('input[name="sp-method"]:checked').value}/${document.querySelector('input[name="sp-discount"]:checked').value}`;
    }
    busy = true;
    next.disabled = true;
    try {
      const res = await api('POST', `/events/${enc(id)}/steps/${enc(step)}`, { bearer: bearer(), body: { token: r.token, value } });
      times.set(step, res.ms);
      if (step in info) info[step] = value;
      if (res.order) {
        saveRace({ id, seat: res.order.seat });
        renderSide();
        setText($('st-note'), t('bought', { s: res.order.seat }));
        end(t('bought', { s: res.order.seat }), 'success');
        return;
      }
      step = res.next;
      enter();
    } catch (err) {
      if (err.code === 'CAPTCHA_WRONG') {
        setText($('st-note'), t('captcha.wrong'));
        newCaptcha();
      } else if (err.code === 'SEAT_TAKEN') {
        setText($('st-note'), t('seat.taken.now'));
        await loadSeats();
      } else if (err.code === 'SOLD_OUT' || err.code === 'NOT_ACTIVE') {
        end(friendly(err), 'warn');
      } else {
        setText($('st-note'), friendly(err));
      }
    } finally {
      busy = false;
      choose(choice);
    }
  };
  onLeave(() => {
    next.onclick = null; map.onclick = null; $('sc-new').onclick = null; $('sc-answer').oninput = null; $('st-skip').onclick = null;
    $('ss-zoom-in').onclick = null; $('ss-zoom-out').onclick = null;
  });
  if (!step) return end(null);
  enter();
}


// ---------- drills ----------

const two = (n) => String(n).padStart(2, '0');
const fmtMilli = (ms) => {
  const d = new Date(ms);
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
};

// showDrills shows the captcha drill (timed by the server) and the press at
// the exact second (on the server's clock, measured over several samples).
function showDrills() {
  show('view-drills', t('nav.drills'));
  const s = session();
  $('dc-need').hidden = !!s;
  $('dc-start').disabled = !s;
  let drill = null;
  const img = $('dc-image');
  const answer = $('dc-answer');
  $('dc-start').onclick = async () => {
    try {
      const d = await api('POST', '/drills/captcha', { bearer: bearer() });
      drill = d.id;
      img.hidden = false;
      img.src = `/api/v1/drills/captcha/${enc(drill)}?access_token=${enc(bearer())}`;
      answer.disabled = false;
      answer.value = '';
      answer.focus();
      setText($('dc-result'), '');
    } catch (err) {
      setText($('dc-result'), friendly(err));
    }
  };
  answer.oninput = async () => {
    answer.value = answer.value.replace(/\D/g, '').slice(0, 6);
    if (answer.value.length < 6 || !drill) return;
    const id = drill;
    drill = null;
    answer.disabled = true;
    try {
      const r = await api('POST', `/drills/captcha/${enc(id)}`, { bearer: bearer(), body: { answer: answer.value } });
      setText($('dc-result'), r.people > 1 ? t('drill.done', { s: fmtMS(r.ms), p: r.percentile, n: fmtNum(r.people) })
        : t('drill.first', { s: fmtMS(r.ms) }));
    } catch (err) {
      setText($('dc-result'), err.code === 'CAPTCHA_WRONG' ? t('drill.wrong') : friendly(err));
    }
    setText($('dc-start'), t('drill.again'));
    $('dc-start').focus();
  };
  $('dc-form').onsubmit = (e) => e.preventDefault();

  // The press: a target 3 to 8 s ahead on a whole 5 seconds.
  const hist = [];
  let target = 0;
  const aim = () => {
    target = Math.ceil((clock.now() + 3000) / 5000) * 5000;
    setText($('ds-target'), fmtMilli(target));
  };
  let raf = 0;
  const paint = () => {
    setText($('ds-clock'), fmtMilli(clock.now()));
    if (clock.now() > target + 2000) aim();
    raf = requestAnimationFrame(paint);
  };
  clock.sync(5).then(() => { aim(); paint(); });
  onLeave(() => cancelAnimationFrame(raf));
  $('ds-press').onclick = () => {
    if (!target) return;
    const off = Math.round(clock.now() - target);
    hist.unshift(off);
    hist.length = Math.min(hist.length, 10);
    const say = (x) => (x < 0 ? t('drill.early', { ms: -x }) : t('drill.late', { ms: x }));
    const avg = Math.round(hist.reduce((a, x) => a + Math.abs(x), 0) / hist.length);
    const line = `${say(off)} · ${t('drill.avg', { ms: avg })}`;
    setText($('ds-result'), line);
    $('ds-history').replaceChildren(...hist.map((x) => el('li', { text: say(x) })));
    // The server keeps the press and ranks it against other people's;
    // one more than 5 s off is no attempt at the second.
    if (session() && Math.abs(off) > PRESS_MAX_MS) setText($('ds-result'), `${line} · ${t('drill.pressfar')}`);
    else if (session()) {
      api('POST', '/drills/press', { bearer: bearer(), body: { target_at: new Date(target).toISOString(), offset_ms: off } })
        .then((r) => {
          if (hist[0] !== off) return; // a later press is shown already
          setText($('ds-result'), `${line} · ${typeof r.percentile === 'number'
            ? t('drill.pressrank', { p: r.percentile, n: fmtNum(r.people) }) : t('drill.pressfirst')}`);
        })
        .catch((err) => setText($('ds-result'), `${line} · ${friendly(err)}`));
    }
    aim();
  };
  onLeave(() => { $('dc-start').onclick = null; answer.oninput = null; $('ds-press').onclick = null; });
}

// ---------- 5. result ----------

const OUTCOMES = {
  bought: 'Bought a seat',
  seat: 'Bought a seat',
  waiting: 'Still in line',
  sold_out: 'Sold out',
  expired: 'Time ran out',
  left: 'Left the line',
  not_joined: 'Did not join',
  waiting_when_closed: 'Still waiting at the close',
  outbid: 'Outbid',
  abandoned: 'Gave up waiting',
};
const OUTCOMES_KO = {
  bought: '좌석 확보', seat: '좌석 확보', waiting: '대기 중', sold_out: '매진', expired: '시간 초과', left: '대기 취소',
  not_joined: '참가 안 함', waiting_when_closed: '마감 때 대기 중', outbid: '밀려남', abandoned: '대기 포기',
};
const outcomeText = (o) => (lang === 'ko' && OUTCOMES_KO[o]) || OUTCOMES[o] || String(o || '—').replace(/_/g, ' ');

async function showResult(id) {
  const v = show('view-result', t('title.result'));
  $('r-body').hidden = true;
  setText($('r-wait'), t('res.loading'));
  focusHeading(v);
  let done = false;
  let timer = 0;
  let delay = RESULT_FIRST_MS;
  let last = ''; // the answer shown, to redraw only what changed
  onLeave(() => { done = true; clearTimeout(timer); });
  const again = (most) => {
    timer = setTimeout(poll, delay);
    delay = Math.min(Math.round(delay * 1.5), most);
  };
  const poll = async () => {
    if (done) return;
    try {
      const res = await api('GET', `/practice/${enc(id)}/result`, { bearer: bearer() });
      if (done) return;
      const partial = res.final === false;
      const now = JSON.stringify(res);
      if (now !== last) {
        // The history and leaderboard with the person's result, and again with the final figures.
        if (!last || !partial) showBoard(res.scenario, false);
        if (!last) delay = RESULT_PARTIAL_MS;
        last = now;
        renderResult(res);
      }
      if (partial) again(RESULT_MAX_MS);
      else done = true;
    } catch (err) {
      if (done) return;
      if (err.code === 'RACE_NOT_FINISHED') {
        setText($('r-wait'), t('race.pending'));
        again(RESULT_PENDING_MAX_MS);
        return;
      }
      if (err.code === 'NETWORK' || err.code === 'RATE_LIMITED' || err.code === 'UNAVAILABLE') again(RESULT_MAX_MS);
      else done = true;
      setText($('r-wait'), friendly(err));
    }
  };
  poll();
}

// renderResult shows a solo race's result: the person's figures, final
// from the start, and the bots' side, which is partial (labelled so) until
// the race has finished.
function renderResult(res) {
  const you = res.you || {};
  const bots = res.bot_stats || {};
  const partial = res.final === false;
  $('r-body').dataset.final = String(!partial);
  const botsText = partial ? t('race.bots.sofar', { n: fmtNum(res.bots), total: fmtNum(res.bots_planned) }) : t('n.bots', { n: res.bots });
  setText($('r-scenario'), `${t('scenario', { s: res.scenario })} · ${botsText} · ${t('n.seats', { n: res.seats })}`);
  setText($('r-wait'), partial ? t('race.partial') : '');
  $('r-body').hidden = false;
  let headline;
  if (!you.joined) {
    headline = t('res.notjoined', { n: res.sold });
  } else {
    headline = t('res.head', { rank: you.join_rank, faster: you.bots_ahead || 0, s: fmtSec(you.reaction_ms), p: you.reaction_percentile });
    if (you.people_ahead) headline += ' ' + t('res.people.ahead', { n: you.people_ahead });
    headline += ' ' + (you.seat ? t('res.got', { s: you.seat }) : `${outcomeText(you.outcome)}.`);
  }
  setText($('r-headline'), headline);
  setText($('r-reaction'), you.joined ? fmtSec(you.reaction_ms) : '—');
  setText($('r-rank'), you.joined ? nth(you.join_rank) : '—');
  setText($('r-bots-ahead'), you.joined ? fmtNum(you.bots_ahead) : '—');
  setText($('r-outcome'), outcomeText(you.outcome));
  setText($('r-waited'), you.joined && typeof you.wait_ms === 'number' ? fmtSec(you.wait_ms) : '—');
  setText($('r-seat'), you.seat || '—');
  setText($('r-sold'), partial ? t('race.sold.sofar', { n: fmtNum(res.sold), seats: fmtNum(res.seats) })
    : t('sold.of', { n: res.sold, total: res.seats }));
  setText($('r-bot-median'), res.bots > 0 && bots.reaction_ms ? fmtSec(bots.reaction_ms.p50) : '—');

  const tbody = $('r-outcomes').querySelector('tbody');
  const outcomes = Object.assign({}, bots.outcomes);
  // While the race runs, the bots not yet in line are still racing too
  // (a result shown right after your own attempt may come before any).
  const notIn = partial ? (res.bots_planned || 0) - (res.bots || 0) : 0;
  if (notIn > 0) outcomes.waiting = (outcomes.waiting || 0) + notIn;
  tbody.replaceChildren(...Object.entries(outcomes).sort((a, b) => b[1] - a[1]).map(([k, n]) =>
    el('tr', null, [el('td', { text: k === 'waiting' ? t('race.racing') : outcomeText(k) }), el('td', { class: 'num', text: fmtNum(n) })])));

  // The bots' reaction times as a cumulative curve, with yours as a point.
  const box = $('r-chart');
  box.replaceChildren();
  const samples = (bots.reaction_samples_ms || []).filter((x) => typeof x === 'number').sort((a, b) => a - b);
  if (!chartsReady() || !samples.length) {
    box.append(el('p', { class: 'hint', text: t('res.nochart') }));
    return;
  }
  const xs = samples.map((x) => x / 1000);
  const cdf = samples.map((_, i) => Math.round(1000 * (i + 1) / samples.length) / 10);
  const mine = xs.map(() => null);
  if (you.joined && typeof you.reaction_ms === 'number') {
    const x = you.reaction_ms / 1000;
    let at = xs.findIndex((v) => v >= x);
    if (at < 0) at = xs.length;
    xs.splice(at, 0, x);
    cdf.splice(at, 0, at > 0 ? cdf[at - 1] : 0);
    mine.splice(at, 0, 100 - (you.reaction_percentile || 0));
  }
  chart(box, [{ label: t('chart.bots') }, { label: t('res.you'), points: true, size: 14 }],
    [xs, cdf, mine], { height: 240, xLabel: t('chart.reaction'), yLabel: t('chart.pctbots') });
  box.setAttribute('aria-label', t('chart.aria', { p50: fmtSec(bots.reaction_ms && bots.reaction_ms.p50) }) +
    (you.joined ? t('chart.aria.you', { s: fmtSec(you.reaction_ms), p: you.reaction_percentile }) : ''));
}

$('r-again').addEventListener('click', () => go('#/solo'));

// ---------- history and leaderboard ----------

let boardScenario = null;

async function showBoard(scenario, alone) {
  const v = $('view-board');
  v.hidden = false;
  if (alone) {
    document.title = `rushline — ${t('title.history')}`;
    if (!session()) showAlert(alertBox, t('h.nick'), 'info');
  }
  const shown = still();
  try {
    await loadScenarios();
  } catch (err) {
    showAlert(alertBox, friendly(err));
  }
  if (!shown()) return;
  const sel = $('lb-scenario');
  if (sel.options.length !== scenarios.length) {
    sel.replaceChildren(...scenarios.map((s) => el('option', { value: s.name, text: s.name })));
  }
  boardScenario = scenario || boardScenario || local.get('practice.scenario') || (scenarios[0] || {}).name;
  if (boardScenario) sel.value = boardScenario;
  await Promise.all([loadHistory(), loadLeaderboard()]);
  if (alone) focusHeading(v);
}

$('lb-scenario').addEventListener('change', () => {
  boardScenario = $('lb-scenario').value;
  loadLeaderboard();
});

let historyChart = null;

async function loadHistory() {
  const tbody = $('h-table').querySelector('tbody');
  if (!session()) {
    tbody.replaceChildren();
    $('h-empty').hidden = false;
    return;
  }
  let races = [];
  try {
    const r = await api('GET', '/practice/history', { bearer: bearer() });
    races = Array.isArray(r && r.races) ? r.races : [];
  } catch (err) {
    showAlert(alertBox, friendly(err));
    return;
  }
  $('h-empty').hidden = races.length > 0;
  tbody.replaceChildren(...races.map((x) => el('tr', null, [
    el('td', null, el('a', { href: `#/race/${enc(x.event)}/result`, text: fmtTime(x.at) })),
    el('td', { text: x.scenario }),
    el('td', { class: 'num', text: typeof x.reaction_ms === 'number' ? fmtSec(x.reaction_ms) : '—' }),
    el('td', { class: 'num', text: x.join_rank ? nth(x.join_rank) : '—' }),
    el('td', { text: outcomeText(x.outcome) }),
    el('td', { text: x.seat || '—' }),
  ])));
  // Oldest first, joined races only: is the reaction time falling?
  const joined = races.filter((x) => typeof x.reaction_ms === 'number' && x.reaction_ms > 0).reverse();
  const trend = $('h-trend');
  if (joined.length >= 2) {
    const half = Math.ceil(joined.length / 2);
    const avg = (a) => a.reduce((s, x) => s + x.reaction_ms, 0) / a.length;
    const early = avg(joined.slice(0, joined.length - half));
    const late = avg(joined.slice(joined.length - half));
    setText(trend, late < early
      ? t('h.faster', { late: fmtSec(late), early: fmtSec(early) })
      : t('h.notfaster', { late: fmtSec(late), early: fmtSec(early) }));
  } else {
    setText(trend, joined.length ? t('h.again') : '');
  }
  const box = $('h-chart');
  if (!chartsReady()) return;
  const data = [joined.map((_, i) => i + 1), joined.map((x) => x.reaction_ms / 1000)];
  if (historyChart) {
    historyChart.setData(data);
  } else {
    box.replaceChildren();
    historyChart = chart(box, [{ label: t('chart.reaction') }], data, { height: 200, xLabel: t('chart.race'), yLabel: t('chart.secs'), xInt: true });
  }
}

async function loadLeaderboard() {
  const tbody = $('lb-table').querySelector('tbody');
  if (!boardScenario) return;
  try {
    const r = await api('GET', `/practice/leaderboard?scenario=${enc(boardScenario)}`);
    const entries = Array.isArray(r && r.entries) ? r.entries : [];
    $('lb-empty').hidden = entries.length > 0;
    // "You" is the row with this session's user id, never a nickname: many
    // people may share one.
    const me = (session() || {}).user_id;
    tbody.replaceChildren(...entries.map((x) => el('tr', { class: me && x.user_id === me ? 'me' : null }, [
      el('td', { class: 'num', text: fmtNum(x.rank) }),
      el('td', { text: x.nickname }),
      el('td', { class: 'num', text: fmtSec(x.reaction_ms) }),
      el('td', { class: 'num', text: x.join_rank ? nth(x.join_rank) : '—' }),
      el('td', { text: x.seat || '—' }),
    ])));
  } catch (err) {
    showAlert(alertBox, friendly(err));
  }
}

// ---------- server clock and language (every view) ----------

for (const b of document.querySelectorAll('[data-lang]')) b.addEventListener('click', () => { setLang(b.dataset.lang); route(); });

// The header's clock shows the server's time to the millisecond: the
// offset measured over several samples (lib.js clock), then every frame.
function serverClock() {
  const out = $('server-clock');
  const paint = () => {
    setText(out, fmtMilli(clock.now()));
    out.dataset.synced = String(clock.synced);
    requestAnimationFrame(paint);
  };
  clock.sync(5).then(() => requestAnimationFrame(paint));
}
serverClock();

route();
