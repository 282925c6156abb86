// rushline practice arena: Korean and English. The language comes from
// the browser (navigator.language), a choice made with the header's
// switch is kept; elements carry data-i18n="key" (their text),
// data-i18n-title / data-i18n-alt (those attributes).
import { local } from '/lib.js';

const EN = {
  'clock.label': 'Server time', 'clock.title': 'The server\'s clock, to the millisecond',
  'steps.title': 'Book your ticket', 'steps.left': 'Time left', 'steps.next': 'Next', 'steps.giveup': 'Give up',
  'steps.soldout': 'Sold out: every seat is gone.',
  'step.date': 'Date', 'step.captcha': 'Captcha', 'step.grade': 'Grade', 'step.seat': 'Seat',
  'step.confirm': 'Confirm', 'step.payment': 'Payment',
  'date.title': 'Pick a date and time', 'date.pick': 'Pick a show, then press Next.',
  'captcha.title': 'Security letters (보안문자)', 'captcha.help': 'Type the digits in the picture. A wrong answer costs a new picture.',
  'captcha.new': 'New picture', 'captcha.label': 'Digits', 'captcha.alt': 'Captcha digits',
  'captcha.wrong': 'Wrong digits: here is a new picture.', 'captcha.submit': 'Enter',
  'grade.title': 'Pick a seat grade', 'grade.help': 'Grades are whole rows, front to back. Pick one to see its seats.',
  'grade.free': '{free} of {seats} left', 'grade.rows': 'rows {a}–{b}', 'grade.seat': '{g} seat',
  'seat.title': 'Pick your seat', 'seat.help': 'Tap a free seat, then press Seats chosen. Choosing never buys by itself.',
  'seat.stage': 'STAGE', 'seat.free': 'Free', 'seat.taken': 'Taken', 'seat.selected': 'Selected',
  'seat.done': 'Seats chosen', 'seat.none': 'Tap a free seat first.', 'seat.picked': 'Seat {s} selected.',
  'seat.taken.now': 'Someone else just took that seat. Pick another one.',
  'confirm.title': 'Check your booking', 'confirm.btn': 'Confirm booking',
  'pay.title': 'Discount and payment', 'pay.help': 'Practice only: no money is taken.', 'pay.discount': 'Discount',
  'pay.none': 'No discount', 'pay.early': 'Early-bird 10%', 'pay.welfare': 'Disability / veterans 50%',
  'pay.method': 'Payment method', 'pay.card': 'Credit card', 'pay.bank': 'Bank transfer', 'pay.kakao': 'KakaoPay',
  'pay.agree': 'I agree to the cancellation terms', 'pay.btn': 'Pay', 'pay.agree.first': 'Tick the cancellation terms first.',
  'side.title': 'My booking', 'side.times': 'Time per step (server clock)',
  'sum.show': 'Show', 'sum.grade': 'Grade', 'sum.seat': 'Seat', 'sum.price': 'Price',
  'won': '{n} won', 'took': '{s}',
  'bought': 'Seat {s} is yours! Paid in practice; now see how you did.',
  'wait.behind': 'Behind you', 'wait.soldout': 'Sold out: every seat is gone. The result comes up in a moment.',
  'res.total': 'Admission to purchase', 'res.grade': 'Seat grade', 'res.steps': 'Time per step: you, the people in this drop, the crowd',
  'res.step': 'Step', 'res.you': 'You', 'res.people': 'People\'s median', 'res.slower': 'Slower than you',
  'res.crowd': 'The crowd\'s column is its median / p90 at each step, over the {n} of it who bought a seat. Its median reaction to the opening was {p50}.',
  'res.crowdwait': 'None of the crowd has bought a seat yet: its column fills in as it does. Its median reaction to the opening was {p50}.',
  'res.admitted': 'Admission',
  'front.join': 'Join', 'front.joinNow': 'Join now!', 'front.open': 'The drop is open', 'front.opensIn': 'The drop opens in',
  'front.go': 'Open! Join now.', 'front.over': 'This drop is over', 'front.secs': 'Opens in {n} s.',
  'front.early': 'Too early! False start {n}: the line isn\'t open yet. Wait for zero and press again.',
  'wait.next': 'You are next in line.', 'wait.pos': 'You are {pos} in line, {eta} to go.',
  'res.crowdcol': 'Crowd p50 / p90',
  'res.running': 'The drop is still running: these results are partial and follow it live.', 'nav.drills': 'Drills', 'drill.first': '{s}: the first drill on this server.', 'who': 'Racing as {n}', 'drill.captcha': 'Captcha drill',
  'drill.captcha.help': 'Type the digits as fast as you can. The server times you from the moment the picture is served, and ranks you against everyone\'s drills.',
  'drill.need': 'Pick a nickname on the front page first.', 'drill.start': 'Start', 'drill.again': 'Again',
  'drill.done': '{s}: faster than {p}% of {n} drills.', 'drill.wrong': 'Wrong digits. Start again.',
  'drill.second': 'Press at the exact second', 'drill.target': 'Target',
  'drill.second.help': 'Ticket sales open on the second. Press when the server clock reaches the target: how far off were you?',
  'drill.press': 'Press!', 'drill.early': '{ms} ms early', 'drill.late': '{ms} ms late', 'drill.avg': 'average {ms} ms off',
  'drill.pressrank': 'closer than {p}% of {n} presses by others', 'drill.pressfirst': 'the first press kept on this server', 'drill.pressfar': 'too far off to rank',
};

const KO = {
  'clock.label': '서버 시간', 'clock.title': '서버 시계 (밀리초까지)',
  'steps.title': '예매하기', 'steps.left': '남은 시간', 'steps.next': '다음 단계', 'steps.giveup': '예매 포기',
  'steps.soldout': '매진되었습니다. 남은 좌석이 없습니다.',
  'step.date': '관람일/회차', 'step.captcha': '보안문자', 'step.grade': '등급 선택', 'step.seat': '좌석 선택',
  'step.confirm': '예매 확인', 'step.payment': '할인/결제',
  'date.title': '관람일과 회차를 선택하세요', 'date.pick': '회차를 고른 뒤 다음 단계를 누르세요.',
  'captcha.title': '보안문자 입력', 'captcha.help': '그림의 숫자를 입력하세요. 틀리면 새 그림이 나옵니다.',
  'captcha.new': '새로고침', 'captcha.label': '보안문자', 'captcha.alt': '보안문자 숫자',
  'captcha.wrong': '보안문자가 틀렸습니다. 새 그림을 확인하세요.', 'captcha.submit': '입력 완료',
  'grade.title': '좌석 등급을 선택하세요', 'grade.help': '등급은 앞줄부터 뒷줄까지 열 단위입니다. 등급을 고르면 좌석이 보입니다.',
  'grade.free': '잔여 {free}석 / {seats}석', 'grade.rows': '{a}–{b}열', 'grade.seat': '{g}석',
  'seat.title': '좌석을 선택하세요', 'seat.help': '빈 좌석을 누른 뒤 좌석선택완료를 누르세요. 선택만으로는 예매되지 않습니다.',
  'seat.stage': '무대', 'seat.free': '선택 가능', 'seat.taken': '선택 불가', 'seat.selected': '선택한 좌석',
  'seat.done': '좌석선택완료', 'seat.none': '먼저 빈 좌석을 선택하세요.', 'seat.picked': '{s} 좌석을 선택했습니다.',
  'seat.taken.now': '이미 선택된 좌석입니다. 다른 좌석을 고르세요.',
  'confirm.title': '예매 정보를 확인하세요', 'confirm.btn': '예매 확인',
  'pay.title': '할인 및 결제', 'pay.help': '연습용입니다. 실제로 결제되지 않습니다.', 'pay.discount': '할인',
  'pay.none': '일반 (할인 없음)', 'pay.early': '조기예매 10%', 'pay.welfare': '장애인/국가유공자 50%',
  'pay.method': '결제 수단', 'pay.card': '신용카드', 'pay.bank': '무통장입금', 'pay.kakao': '카카오페이',
  'pay.agree': '취소 수수료 및 취소 기한에 동의합니다', 'pay.btn': '결제하기', 'pay.agree.first': '먼저 취소 규정에 동의해 주세요.',
  'side.title': '예매 정보', 'side.times': '단계별 소요 시간 (서버 기준)',
  'sum.show': '관람일시', 'sum.grade': '등급', 'sum.seat': '좌석', 'sum.price': '가격',
  'won': '{n}원', 'took': '{s}',
  'bought': '{s} 좌석 예매 성공! (연습용 결제) 결과를 확인하세요.',
  'wait.behind': '내 뒤 대기', 'wait.soldout': '매진되었습니다. 곧 결과가 나옵니다.',
  'res.total': '입장부터 결제까지', 'res.grade': '좌석 등급', 'res.steps': '단계별 시간: 나, 이 드롭의 사람들, 가상 관객',
  'res.step': '단계', 'res.you': '나', 'res.people': '사람들 중앙값', 'res.slower': '나보다 느린 사람',
  'res.crowd': '가상 관객 열은 좌석을 산 {n}명의 단계별 중앙값 / p90입니다. 오픈 반응 속도 중앙값은 {p50}입니다.',
  'res.crowdwait': '아직 좌석을 산 가상 관객이 없습니다. 구매가 이어지면 열이 채워집니다. 오픈 반응 속도 중앙값은 {p50}입니다.',
  'res.admitted': '입장',
  'front.join': '입장', 'front.joinNow': '지금 입장!', 'front.open': '드롭이 열렸습니다', 'front.opensIn': '드롭 오픈까지',
  'front.go': '오픈! 지금 입장하세요.', 'front.over': '이 드롭은 끝났습니다', 'front.secs': '{n}초 후 오픈.',
  'front.early': '너무 빨랐습니다! 부정 출발 {n}회: 아직 열리지 않았습니다. 0이 되면 다시 누르세요.',
  'wait.next': '다음 차례입니다.', 'wait.pos': '대기 순번 {pos}번, 약 {eta} 남음.',
  'res.crowdcol': '가상 관객 중앙값 / p90',
  'res.running': '드롭이 아직 진행 중입니다. 결과는 중간 집계이며 실시간으로 바뀝니다.', 'nav.drills': '연습 게임', 'drill.first': '{s}: 이 서버의 첫 기록입니다.', 'who': '{n} 님 참가 중', 'drill.captcha': '보안문자 연습',
  'drill.captcha.help': '숫자를 최대한 빨리 입력하세요. 그림이 나온 순간부터 서버가 시간을 재고, 다른 사람들의 기록과 비교합니다.',
  'drill.need': '먼저 첫 화면에서 닉네임을 정하세요.', 'drill.start': '시작', 'drill.again': '다시',
  'drill.done': '{s}: 기록 {n}개 중 {p}%보다 빠릅니다.', 'drill.wrong': '틀렸습니다. 다시 시작하세요.',
  'drill.second': '정각 누르기', 'drill.target': '목표 시각',
  'drill.second.help': '티켓 오픈은 정각입니다. 서버 시계가 목표 시각이 되는 순간 누르세요. 얼마나 정확했을까요?',
  'drill.press': '지금!', 'drill.early': '{ms}ms 빠름', 'drill.late': '{ms}ms 늦음', 'drill.avg': '평균 오차 {ms}ms',
  'drill.pressrank': '다른 사람의 기록 {n}개 중 {p}%보다 정확', 'drill.pressfirst': '이 서버의 첫 기록', 'drill.pressfar': '너무 멀어서 순위에 넣지 않습니다',
};

// Static page text in Korean, by its English text: the page's own words
// need no keys of their own.
const PAGE_KO = {
  'Waiting room': '대기실', 'Practice': '연습', 'Solo race': '혼자 연습', 'My races': '내 기록', 'Dashboard': '대시보드',
  'Next public drop': '다음 공개 드롭', 'The drop opens in': '드롭 오픈까지', 'Join': '입장', 'Join now!': '지금 입장!',
  'Save nickname': '닉네임 저장', 'Your nickname, to race': '경쟁할 닉네임', 'People in': '참가자',
  'Crowd joined': '가상 관객 입장', 'Seats': '좌석', 'Opens at': '오픈 시각', 'See this drop\'s results': '이 드롭 결과 보기',
  'Race the bots alone': '봇과 혼자 겨루기', 'You\'re in line': '대기열에 있습니다', 'Your place': '내 순서',
  'Bots ahead': '앞의 봇', 'People ahead': '앞의 사람', 'Your wait': '예상 대기', 'Waiting in all': '전체 대기',
  'Buying now': '구매 중', 'Sold': '판매', 'Seats left': '남은 좌석', 'Progress to the front': '앞까지 진행률',
  'It\'s your turn: pick a seat': '내 차례입니다: 좌석을 고르세요', 'Time left to buy': '남은 구매 시간', 'Free': '선택 가능',
  'Taken': '선택 불가', 'Confirm': '선택 완료', 'Skip to the result': '결과로 건너뛰기', 'Your result': '내 결과',
  'Your drop result': '내 드롭 결과', 'Ahead of everyone': '전체 중 앞선 비율', 'Place in line': '대기 순번',
  'Reaction': '반응 속도', 'False starts': '부정 출발', 'Outcome': '결과', 'Seat': '좌석', 'Waited': '대기 시간',
  'Crowd\'s median': '관객 중앙값', 'Race the next drop': '다음 드롭 참가', 'This drop\'s people': '이 드롭의 사람들',
  'Leaderboard': '순위표', 'Today': '오늘', 'This week': '이번 주', 'All time': '전체', 'Nickname': '닉네임',
  'Place': '순번', 'Bought after': '구매까지', '#': '#', 'Race again': '다시 하기', 'Your races': '내 경기',
  'Scenario': '시나리오', 'Join rank': '입장 순위', 'When': '일시', 'Rank': '순위',
};

const KEY = 'lang';

// lang is the page's language: the one chosen, else the browser's.
export let lang = local.get(KEY) || ((navigator.languages || [navigator.language || 'en'])
  .some((l) => String(l).toLowerCase().startsWith('ko')) ? 'ko' : 'en');

// t is the text of key in the page's language, with {name} filled from vars.
export function t(key, vars) {
  const s = (lang === 'ko' ? KO[key] : EN[key]) || EN[key] || key;
  return vars ? s.replace(/\{(\w+)\}/g, (_, k) => (vars[k] != null ? String(vars[k]) : '')) : s;
}

// english remembers each translated element's English text.
const english = new WeakMap();

// applyLang writes the page in the language: data-i18n keys, and the
// static words of the page found in PAGE_KO.
export function applyLang(root) {
  document.documentElement.lang = lang;
  const scope = root || document;
  for (const e of scope.querySelectorAll('[data-i18n]')) e.textContent = t(e.dataset.i18n);
  for (const e of scope.querySelectorAll('[data-i18n-title]')) e.title = t(e.dataset.i18nTitle);
  for (const e of scope.querySelectorAll('[data-i18n-alt]')) e.alt = t(e.dataset.i18nAlt);
  for (const e of scope.querySelectorAll('h1, h2, dt, th, label, .site-nav a, button, a.btn, legend, caption, .ct-label, .label')) {
    if (e.dataset.i18n || e.children.length) continue;
    if (!english.has(e)) english.set(e, e.textContent.trim());
    const en = english.get(e);
    if (PAGE_KO[en]) e.textContent = lang === 'ko' ? PAGE_KO[en] : en;
  }
  for (const b of document.querySelectorAll('[data-lang]')) b.setAttribute('aria-pressed', String(b.dataset.lang === lang));
}

// setLang switches the language and keeps the choice.
export function setLang(l) {
  lang = l === 'ko' ? 'ko' : 'en';
  local.set(KEY, lang);
  applyLang();
}
