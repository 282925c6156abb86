// rushline pages in Korean and English. The language comes from the
// browser (navigator.languages), a choice made with the header's switch
// ([data-lang] buttons) is kept in localStorage for every page.
//
// Texts: each page adds its tables with addTexts. Dynamic text is
// t(key, vars): {name} is filled from vars (numbers formatted for the
// language), and a table value may be a function of vars for plurals.
// Static text: elements with data-i18n="key" take t(key); headings,
// labels, buttons and the like (and any element with data-tr) are looked
// up by their English text in the page table; data-tr-attr="placeholder
// aria-label" does the same for those attributes, and data-tr-links for a
// text with elements in it. live(node, fn) sets a text that is worked out
// again when the language changes.

const STORE = 'rushline.lang';
const EN = {};
const KO = {};
const PAGE_KO = {};

function stored() {
  try { return JSON.parse(window.localStorage.getItem(STORE)); } catch (_) { return null; }
}

// lang is the page's language, 'ko' or 'en': the one chosen, else the browser's.
export let lang = stored() === 'ko' || stored() === 'en' ? stored()
  : ((navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || 'en'])
    .some((l) => String(l).toLowerCase().startsWith('ko')) ? 'ko' : 'en');

// locale is the Intl locale of the language: the browser's own English
// (its date order) when it speaks English.
export function locale() {
  if (lang === 'ko') return 'ko-KR';
  const nav = navigator.language || 'en';
  return nav.toLowerCase().startsWith('en') ? nav : 'en-GB';
}

let nf = null;
let nfLang = '';
// num formats a number for the language (grouped thousands).
export function num(n) {
  if (typeof n !== 'number' || !isFinite(n)) return '—';
  if (nfLang !== lang) { nf = new Intl.NumberFormat(locale()); nfLang = lang; }
  return nf.format(n);
}

// addTexts adds a page's tables: en and ko by key, page by English text.
export function addTexts({ en, ko, page }) {
  Object.assign(EN, en || {});
  Object.assign(KO, ko || {});
  Object.assign(PAGE_KO, page || {});
}

// t is the text of key in the page's language, with {name} filled from vars.
export function t(key, vars) {
  const s = (lang === 'ko' && KO[key] !== undefined ? KO[key] : EN[key]);
  if (s === undefined) return key;
  const v = vars || {};
  if (typeof s === 'function') return s(v);
  return s.replace(/\{(\w+)\}/g, (_, k) => (v[k] == null ? '' : typeof v[k] === 'number' ? num(v[k]) : String(v[k])));
}

// tr is the page text for English text en in the page's language.
export function tr(en) {
  return lang === 'ko' && PAGE_KO[en] ? PAGE_KO[en] : en;
}

// Nodes whose text (or attribute) is worked out again on a change of language.
const bound = new Map(); // node -> {attr -> fn}

// live sets node's text (or attribute attr) to fn() now and after each
// change of language.
export function live(node, fn, attr) {
  if (!node) return;
  let m = bound.get(node);
  if (!m) { m = {}; bound.set(node, m); }
  m[attr || ''] = fn;
  put(node, attr || '', fn());
}

function put(node, attr, text) {
  const s = String(text);
  if (!attr) { if (node.textContent !== s) node.textContent = s; } else if (node.getAttribute(attr) !== s) node.setAttribute(attr, s);
}

const norm = (s) => String(s).replace(/\s+/g, ' ').trim();
// english remembers each translated element's English text and attributes.
const english = new WeakMap();
const PAGE_SEL = 'h1, h2, h3, dt, th, label, .site-nav a, button, a.btn, legend, caption, figcaption, .ct-label, .label, option, [data-tr]';
const changes = [];

// applyLang writes the page in its language.
export function applyLang(root) {
  document.documentElement.lang = lang;
  const scope = root || document;
  for (const e of scope.querySelectorAll('[data-i18n]')) e.textContent = t(e.dataset.i18n);
  for (const e of scope.querySelectorAll('[data-i18n-title]')) e.title = t(e.dataset.i18nTitle);
  for (const e of scope.querySelectorAll('[data-i18n-alt]')) e.alt = t(e.dataset.i18nAlt);
  // A text with elements in it (links, a name): its English text with the
  // elements as {0}, {1}… is the key, and the translation places them.
  for (const e of scope.querySelectorAll('[data-tr-links]')) {
    if (!english.has(e)) {
      const links = [...e.children];
      let i = 0;
      english.set(e, { tpl: norm([...e.childNodes].map((n) => (n.nodeType === 1 ? `{${i++}}` : n.textContent)).join('')), links });
    }
    const { tpl, links } = english.get(e);
    const s = lang === 'ko' && PAGE_KO[tpl] ? PAGE_KO[tpl] : tpl;
    e.replaceChildren(...s.split(/(\{\d+\})/).filter(Boolean).map((part) => {
      const m = part.match(/^\{(\d+)\}$/);
      return m ? links[Number(m[1])] : document.createTextNode(part);
    }));
  }
  const title = document.querySelector('title');
  for (const e of [title, ...scope.querySelectorAll(PAGE_SEL)]) {
    if (!e || e.dataset.i18n || e.children.length || bound.has(e)) continue;
    // A text the page's script has changed since is the English text now.
    const cur = norm(e.textContent);
    if (!english.has(e) || (cur !== english.get(e) && cur !== PAGE_KO[english.get(e)])) english.set(e, cur);
    const en = english.get(e);
    if (PAGE_KO[en]) e.textContent = lang === 'ko' ? PAGE_KO[en] : en;
  }
  for (const e of scope.querySelectorAll('[data-tr-attr]')) {
    if (!english.has(e)) {
      english.set(e, Object.fromEntries(e.dataset.trAttr.split(/\s+/).map((a) => [a, e.getAttribute(a) || ''])));
    }
    for (const [a, en] of Object.entries(english.get(e))) e.setAttribute(a, lang === 'ko' && PAGE_KO[en] ? PAGE_KO[en] : en);
  }
  for (const [node, m] of bound) {
    if (!node.isConnected) { bound.delete(node); continue; }
    for (const [attr, fn] of Object.entries(m)) put(node, attr, fn());
  }
  for (const b of document.querySelectorAll('[data-lang]')) b.setAttribute('aria-pressed', String(b.dataset.lang === lang));
}

// setLang switches the language, keeps the choice and rewrites the page.
export function setLang(l) {
  lang = l === 'ko' ? 'ko' : 'en';
  try { window.localStorage.setItem(STORE, JSON.stringify(lang)); } catch (_) { /* private mode */ }
  applyLang();
  for (const f of changes) f(lang);
}

// initLang writes the page in its language and wires the header's switch;
// onChange runs after each switch (to redraw what the page drew itself).
export function initLang(onChange) {
  if (onChange) changes.push(onChange);
  for (const b of document.querySelectorAll('[data-lang]')) b.addEventListener('click', () => setLang(b.dataset.lang));
  applyLang();
}

// Words every page shares: the header, the footer, the alerts.
addTexts({
  en: {},
  ko: {},
  page: {
    'Waiting room': '대기실', 'Practice': '연습', 'Dashboard': '대시보드', 'Skip to content': '본문 바로가기',
    'rushline home': 'rushline 홈', 'Pages': '페이지', 'Server links': '서버 링크', 'Dismiss': '닫기',
    'API (OpenAPI)': 'API (OpenAPI)', 'Events JSON': '이벤트 JSON', 'Metrics': '메트릭', 'Readiness': '준비 상태',
    'uPlot licence': 'uPlot 라이선스',
    'rushline practice · bots and people take the same path through the queue': 'rushline 연습 · 봇과 사람이 같은 대기열을 거칩니다',
  },
});
