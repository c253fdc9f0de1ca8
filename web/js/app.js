// The web UI's entry point: client-side routing between the query, targets and status
// pages, the navigation bar and theme toggle, and the query page itself, whose whole
// state (selector, range, live, zoom, the open profile and its view) lives in the URL.
// encodeState/decodeState and the other pure helpers run in node.

import { apiGet, promGet } from './api.js';
import { BASE, innerPath, pagePath, externalLink, pageExternalBase } from './base.js';
import { formatTime } from './format.js';
import {
  SelectorInput, RangeControls, resolveRange, parseDuration, formatDurationShort,
  rememberQuery, profileTypes, metricOf, closeSelector, loadTimeZone,
} from './query.js';
import { Timeline, escapeHtml, lowerBound, fitWindow, zoomWindow } from './timeline.js';
import {
  Chart, sampleChoices, defaultChoice, chartRequest, linesOf, profileSeriesOf, groupPointRequest,
  withMetric, preferredType,
} from './chart.js';
import { mountTargets } from './targets.js';
import { mountStatus } from './status.js';
import { mountCompare, compareSearch } from './compare.js';
import { STACK_FILTERS, GRANULARITIES } from './profile.js';

// ---------------------------------------------------------------- URL state

// The profile view's keys (profile.js's view object) and their URL names.
const VIEW_KEYS = [['sampleIndex', 'sample'], ['focus', 'focus'], ['search', 'search'],
  ['sort', 'sort'], ['filter', 'filter'], ['groupPick', 'group_pick'], ['aggregation', 'agg']];

function int(s) {
  if (s == null || !/^-?\d+$/.test(s)) return null;
  return Number(s);
}

function decodeSide(p, prefix) {
  const query = p.get(prefix + 'sel');
  if (!query) return null;
  const time = int(p.get(prefix + 'time'));
  const start = int(p.get(prefix + 'start'));
  const end = int(p.get(prefix + 'end'));
  if (start != null && end != null && end >= start) return { query, start, end };
  if (time != null) return { query, time };
  return null;
}

// The range when the URL names none: an hour, and on the landing page (no query) 15
// minutes, as a first run has only minutes of profiles. The presets highlight it and
// the landing page's text names it (rangeWords), so the two always agree.
export const DEFAULT_RANGE = '1h';
export const LANDING_RANGE = '15m';

const UNIT_WORDS = { ms: 'millisecond', s: 'second', m: 'minute', h: 'hour', d: 'day', w: 'week', y: 'year' };

// The range of a state in words: '15m' → 'the last 15 minutes', '1h' → 'the last hour',
// '1h30m' → 'the last 1h30m', absolute → 'from … to …' (local times).
export function rangeWords(st) {
  if (st.range) {
    const m = /^(\d+)(ms|s|m|h|d|w|y)$/.exec(st.range);
    if (!m) return `the last ${st.range}`;
    const n = Number(m[1]);
    return n === 1 ? `the last ${UNIT_WORDS[m[2]]}` : `the last ${n} ${UNIT_WORDS[m[2]]}s`;
  }
  return `from ${formatTime(st.from)} to ${formatTime(st.to)}`;
}

// The query page's state from location.search:
// {query, range ('15m', or null for absolute; DEFAULT_RANGE or LANDING_RANGE when the
//  URL names none), from, to (ms, absolute only), live,
//  zoom ({from, to} or null), chart (the values chart's metric, '' for the default),
//  group (the group-by label of the chart and of a merge, '' for none), tagFocus (the sample-label filter
//  of the profiles opened, '' for none), open (profile.js's req or null), view ({…})}.
export function decodeState(search) {
  const p = new URLSearchParams(search || '');
  const st = { query: p.get('query') || '', range: null, from: null, to: null, live: false,
    zoom: null, chart: p.get('chart') || '', group: p.get('group') || '',
    tagFocus: p.get('tag_focus') || '', open: null, view: {}, filters: {}, gran: '', normalize: false };
  if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(st.group)) st.group = '';
  for (const k of STACK_FILTERS) {
    const v = p.get('f.' + k);
    if (v) st.filters[k] = v;
  }
  if (GRANULARITIES.includes(p.get('gran'))) st.gran = p.get('gran');
  st.normalize = p.get('normalize') === '1';
  const range = p.get('range');
  const from = int(p.get('from'));
  const to = int(p.get('to'));
  if (range && parseDuration(range) > 0) st.range = range;
  else if (from != null && to != null && to > from) { st.from = from; st.to = to; }
  else st.range = st.query ? DEFAULT_RANGE : LANDING_RANGE;
  st.live = p.get('live') === '1' && !!st.range;
  const z = /^(\d+)-(\d+)$/.exec(p.get('zoom') || '');
  if (z && Number(z[2]) > Number(z[1])) st.zoom = { from: Number(z[1]), to: Number(z[2]) };
  const mode = p.get('open');
  if (mode === 'single' || mode === 'merge') {
    const side = decodeSide(p, '');
    if (side && mode === 'single' && side.time != null) st.open = { mode, query: side.query, time: side.time };
    if (side && mode === 'merge' && side.start != null) {
      st.open = { mode, query: side.query, start: side.start, end: side.end };
    }
  } else if (mode === 'diff') {
    const a = decodeSide(p, 'a.');
    const b = decodeSide(p, 'b.');
    if (a && b) st.open = { mode, a, b };
  }
  for (const [k, name] of VIEW_KEYS) {
    const v = p.get(name);
    if (v != null && v !== '') st.view[k] = v;
  }
  for (const [k, v] of p) {
    if (k.startsWith('v.') && v !== '') st.view[k.slice(2)] = v;
  }
  return st;
}

// Percent-encodes a URL component but leaves the characters of selectors readable.
function enc(s) {
  return encodeURIComponent(s).replace(/%(7B|7D|3A|2C|3D|22|2F|40|5B|5D)/g,
    (m) => decodeURIComponent(m));
}

function encodeSide(out, prefix, side) {
  out.push([prefix + 'sel', side.query]);
  if (side.start != null) {
    out.push([prefix + 'start', side.start]);
    out.push([prefix + 'end', side.end]);
  } else out.push([prefix + 'time', side.time]);
}

// The state as a query string (without "?"), in a fixed order; defaults left out.
export function encodeState(st) {
  const out = [];
  if (st.query) out.push(['query', st.query]);
  if (st.range) out.push(['range', st.range]);
  else if (st.from != null && st.to != null) { out.push(['from', st.from]); out.push(['to', st.to]); }
  if (st.live && st.range) out.push(['live', '1']);
  if (st.zoom) out.push(['zoom', `${st.zoom.from}-${st.zoom.to}`]);
  if (st.chart) out.push(['chart', st.chart]);
  if (st.group) out.push(['group', st.group]);
  if (st.tagFocus) out.push(['tag_focus', st.tagFocus]);
  for (const k of STACK_FILTERS) if (st.filters && st.filters[k]) out.push(['f.' + k, st.filters[k]]);
  if (st.gran) out.push(['gran', st.gran]);
  if (st.normalize) out.push(['normalize', '1']);
  const o = st.open;
  if (o) {
    out.push(['open', o.mode]);
    if (o.mode === 'diff') { encodeSide(out, 'a.', o.a); encodeSide(out, 'b.', o.b); }
    else encodeSide(out, '', o);
  }
  const view = st.view || {};
  const known = new Set(VIEW_KEYS.map(([k]) => k));
  for (const [k, name] of VIEW_KEYS) {
    if (view[k] != null && view[k] !== '') out.push([name, view[k]]);
  }
  for (const k of Object.keys(view).sort()) {
    if (!known.has(k) && view[k] != null && view[k] !== '') out.push(['v.' + k, view[k]]);
  }
  return out.map(([k, v]) => k + '=' + enc(String(v))).join('&');
}

// The profile types a request reads (to keep the view when the next profile has the same).
export function requestTypes(req) {
  if (!req) return '';
  if (req.mode === 'diff') return metricOf(req.a.query) + '|' + metricOf(req.b.query);
  return metricOf(req.query);
}

// The request of a shift-click on the mark (query, t) while `open` is open: a diff of
// the anchor (the open single profile, or a diff's base) and the mark, the earlier of
// the two being the base (a); null when there is no single-profile anchor.
export function diffRequest(open, query, t) {
  let anchor = null;
  if (open && open.mode === 'single') anchor = { query: open.query, time: open.time };
  else if (open && open.mode === 'diff' && open.a.time != null) anchor = open.a;
  if (!anchor || (anchor.query === query && anchor.time === t)) return null;
  const mark = { query, time: t };
  return anchor.time <= t ? { mode: 'diff', a: anchor, b: mark } : { mode: 'diff', a: mark, b: anchor };
}

// The time of the profile d (1 or -1) steps from the one shown at `time` in a series of
// ascending timestamps ts, or null when there is none. A time between stored ones shows
// the latest before it (the API's lookback), so that one is the starting point.
export function stepTime(ts, time, d) {
  const i = lowerBound(ts, time);
  const cur = ts[i] === time ? i : i - 1; // -1: nothing stored before time
  const j = cur + d;
  return j >= 0 && j < ts.length ? ts[j] : null;
}

// Whether the path-and-query url (as url() builds it, with '"' and spaces left as they
// are) is where loc ({pathname, search, origin}) already is. The browser percent-encodes
// some characters the app leaves readable ('"' becomes %22), so both go through the URL
// parser first; comparing the raw strings pushed a history entry on every re-run.
export function sameUrl(url, loc) {
  try {
    const u = new URL(url, 'http://x' + BASE);
    const l = new URL(loc.pathname + loc.search, 'http://x');
    return u.pathname + u.search === l.pathname + l.search;
  } catch (e) {
    return url === loc.pathname + loc.search;
  }
}

// The zoom the timeline applies over the range [from, to]: clamped into it, or null
// when it lies outside the range or covers all of it (so the URL keeps no stale zoom).
export function appliedZoom(zoom, from, to) {
  if (!zoom || !(to > from)) return zoom || null;
  const [f, t] = fitWindow(zoom.from, zoom.to, from, to);
  return f > from || t < to ? { from: f, to: t } : null;
}

// A sample type worth carrying to another profile: a name (not an index into the list).
function sampleName(s) {
  return typeof s === 'string' && s !== '' && !/^\d+$/.test(s) ? s : '';
}

// Opening next after prev: the view to keep ({...}) and the sample type to carry over
// (profile.js's opts.sampleType, '' for none). The whole view stays when both read the
// same profile types; otherwise only the sample type the user chose (preferred, else the
// view's) is carried, and the profile view keeps it if the new profile has a sample type
// of that name (else it shows the default).
export function carryView(view, prev, next, preferred) {
  const v = view || {};
  if (requestTypes(next) === requestTypes(prev)) {
    const keep = { ...v };
    return { view: keep, sampleType: keep.sampleIndex ? '' : sampleName(preferred) };
  }
  return { view: {}, sampleType: sampleName(preferred) || sampleName(v.sampleIndex) };
}

// The request the profile view gets for the state: the open profile with the
// sample-label filter, and a merge with the group-by label (the chart's) as groupBy.
export function openRequest(st) {
  const o = st.open;
  if (!o) return null;
  const req = { ...o };
  if (st.tagFocus) req.tagFocus = st.tagFocus;
  const f = {};
  for (const k of STACK_FILTERS) if (st.filters && st.filters[k]) f[k] = st.filters[k];
  if (Object.keys(f).length) req.filters = f;
  if (st.gran && st.gran !== 'functions') req.granularity = st.gran;
  if (st.normalize && o.mode === 'diff') req.normalize = true;
  if (o.mode === 'merge' && st.group) req.groupBy = st.group;
  const agg = st.view && st.view.aggregation;
  if ((agg === 'sum' || agg === 'avg') && (o.mode === 'merge' || (o.mode === 'diff' && (o.a.start != null || o.b.start != null)))) {
    req.aggregation = agg;
  }
  return req;
}

// What the timeline should highlight for an open request.
export function picksOf(req, query) {
  if (!req) return [];
  const one = (s, tag) => (s.start != null
    ? { key: s.query === query ? null : s.query, start: s.start, end: s.end, tag }
    : { key: s.query, t: s.time, tag });
  if (req.mode === 'diff') return [one(req.a, 'A'), one(req.b, 'B')];
  return [one(req, '')];
}

// ---------------------------------------------------------------- theme

function currentTheme() {
  return document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light';
}

function setTheme(t, store) {
  document.documentElement.dataset.theme = t;
  const b = document.getElementById('theme-toggle');
  if (b) {
    b.setAttribute('aria-label', t === 'dark' ? 'Switch to the light theme' : 'Switch to the dark theme');
    b.title = b.getAttribute('aria-label');
    b.textContent = t === 'dark' ? '☀' : '☾';
  }
  if (store) {
    try { localStorage.setItem('profd.theme', t); } catch (e) { /* no storage */ }
  }
  window.dispatchEvent(new Event('profd-theme'));
}

function initTheme() {
  let stored = null;
  try { stored = localStorage.getItem('profd.theme'); } catch (e) { /* no storage */ }
  const mq = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;
  setTheme(stored || (mq && mq.matches ? 'dark' : 'light'), false);
  if (mq && mq.addEventListener) {
    mq.addEventListener('change', (e) => {
      let s = null;
      try { s = localStorage.getItem('profd.theme'); } catch (err) { /* no storage */ }
      if (!s) setTheme(e.matches ? 'dark' : 'light', false);
    });
  }
  const b = document.getElementById('theme-toggle');
  if (b) b.addEventListener('click', () => setTheme(currentTheme() === 'dark' ? 'light' : 'dark', true));
}

// ---------------------------------------------------------------- keyboard help

// The shortcuts the keys popover lists: [section, [[keys, what]]]; keys are split on
// spaces into <kbd>s ("Ctrl+wheel" stays one).
export const SHORTCUTS = [
  ['Anywhere', [
    ['?', 'show or hide this list'],
    ['Esc', 'close it'],
  ]],
  ['Query page', [
    ['/', 'focus the selector'],
    ['Enter', 'run the query (in the selector)'],
    ['↑ ↓ Tab', 'pick a suggestion'],
    ['Ctrl+Space', 'show suggestions'],
    ['[ ]', 'previous / next profile of the open series'],
  ]],
  ['Timeline (click it or Tab to it)', [
    ['← →', 'pan'],
    ['+ −', 'zoom in / out'],
    ['0', 'show the whole range'],
    ['↑ ↓', 'scroll the lanes'],
    ['Enter', 'open the latest profile'],
    ['Esc', 'clear the range selection'],
    ['Ctrl+wheel', 'zoom'],
    ['Shift+wheel Alt+drag', 'pan'],
    ['Shift+click', 'diff with the open profile'],
    ['Shift+drag', 'diff a range with the open merge'],
  ]],
  ['Values chart (click it or Tab to it)', [
    ['← → + − 0', 'pan and zoom, with the timeline'],
    ['Ctrl+wheel', 'zoom'],
    ['click', 'open the profile of a point (of a group: its profiles)'],
    ['drag', 'merge the range'],
    ['Shift+click', 'diff a point with the open profile'],
  ]],
  ['Flame graph', [
    ['/', 'search frames (in the profile view)'],
    ['← → ↑ ↓', 'move between frames (graph focused)'],
    ['Enter Space', 'zoom into the frame'],
    ['S', 'sandwich of the frame: its callers and callees (or right-click it)'],
    ['Esc', 'zoom out, then clear the search'],
  ]],
];

function keysHtml() {
  const kbds = (k) => k.split(' ').map((x) => `<kbd>${escapeHtml(x)}</kbd>`).join(' ');
  let html = '<h3 id="keys-title">Keyboard shortcuts</h3>';
  for (const [section, rows] of SHORTCUTS) {
    html += `<h4>${escapeHtml(section)}</h4><dl>`;
    for (const [k, what] of rows) html += `<dt>${kbds(k)}</dt><dd>${escapeHtml(what)}</dd>`;
    html += '</dl>';
  }
  return html;
}

function initKeysHelp() {
  const btn = document.getElementById('keys-help');
  if (!btn) return;
  const pop = document.createElement('div');
  pop.id = 'keys-popover';
  pop.className = 'keys-popover';
  pop.setAttribute('role', 'dialog');
  pop.setAttribute('aria-labelledby', 'keys-title');
  pop.tabIndex = -1;
  pop.hidden = true;
  pop.innerHTML = keysHtml();
  document.body.appendChild(pop);
  const show = (on) => {
    pop.hidden = !on;
    btn.setAttribute('aria-expanded', String(on));
    if (on) pop.focus({ preventScroll: true });
  };
  btn.addEventListener('click', () => show(pop.hidden));
  document.addEventListener('click', (e) => {
    if (!pop.hidden && !pop.contains(e.target) && !btn.contains(e.target)) show(false);
  });
  document.addEventListener('keydown', (e) => {
    const t = e.target;
    const typing = t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' ||
      t.isContentEditable);
    if (e.key === 'Escape' && !pop.hidden) {
      e.preventDefault();
      e.stopPropagation();
      show(false);
      btn.focus({ preventScroll: true });
    } else if (e.key === '?' && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      show(pop.hidden);
    }
  }, true);
}

// ---------------------------------------------------------------- the query page

const LIVE_MS = 10e3;

// What each of Go's profile types measures, under its button on the landing page.
const TYPE_NOTES = {
  profile: 'CPU time', heap: 'memory in use', allocs: 'allocations', goroutine: 'stacks',
  mutex: 'lock contention', block: 'blocking', threadcreate: 'thread creation',
};

// The longest range the server takes, from its refusal of a longer one ("… longer
// than the limit of 31d; narrow it"), in ms; 0 when the message says no limit.
export function rangeLimitOf(message) {
  const m = /longer than the limit of (\w+)/.exec(message || '');
  const d = m ? parseDuration(m[1]) : NaN;
  return d > 0 ? d : 0;
}

class QueryPage {
  constructor(main) {
    this.main = main;
    main.innerHTML = `
      <section class="query-page">
        <form class="query-bar" autocomplete="off" onsubmit="return false">
          <div class="selector">
            <input id="query-input" type="text" class="mono" placeholder='Selector, e.g. heap{job="api"}   (press / to focus)'
                   aria-label="Series selector" aria-describedby="query-error">
            <button type="button" id="query-history" class="hist-btn" title="Recent queries" aria-label="Recent queries">▾</button>
            <ul id="query-suggest" class="suggest" hidden></ul>
          </div>
          <button type="button" id="run-query" class="btn primary">Run</button>
          <button type="button" id="copy-link" class="btn ghost" title="Copy a link to this view (under --web.external-url)">Copy link</button>
        </form>
        <div id="query-error" class="query-error" role="alert" hidden></div>
        <div class="range-bar"></div>
        <div class="query-status muted" aria-live="polite"></div>
        <div id="timeline" data-state="loading" data-lanes="0" data-marks="0"></div>
        <p class="tl-hint tl-hint-touch muted">
          <b>Tap</b> a mark or a chart point: open it ·
          <b>Drag</b> along a lane: pick a range, then Zoom or Merge ·
          <b>Pinch</b> the lanes: zoom · <b>‹ ›</b> pan · open a profile, then <b>Compare</b> for a side-by-side diff
        </p>
        <p class="tl-hint tl-hint-mouse muted">
          <b>Chart:</b> click a point to open that profile, drag to merge a range ·
          <b>Click</b> a mark: open it ·
          <b>Shift-click</b> another: diff them (the earlier is the base, A) ·
          <b>Drag</b>: zoom to or merge a range (in one lane: that series; across lanes: the whole query) ·
          <b>Shift-drag</b> after a merge: diff two ranges ·
          <b>Ctrl+wheel</b> zoom, <b>Shift+wheel</b> or <b>Alt-drag</b> pan ·
          <b>?</b> all keys
        </p>
        <div id="open-bar" class="open-bar" hidden></div>
        <div id="profile-host" class="profile-host"></div>
      </section>`;
    this.state = decodeState(location.search);
    this.series = [];
    this.resolved = resolveRange(this.state, Date.now());
    this.mounted = null;
    this.mountedKey = '';
    this.carrySample = ''; // the sample type to carry into the next profile opened
    this.samplePref = sampleName(this.state.view.sampleIndex); // the user's last choice
    this.status = main.querySelector('.query-status');
    this.openBar = main.querySelector('#open-bar');
    this.host = main.querySelector('#profile-host');
    this.input = new SelectorInput({
      input: main.querySelector('#query-input'),
      list: main.querySelector('#query-suggest'),
      error: main.querySelector('#query-error'),
      onRun: (q) => this.run(q),
    });
    main.querySelector('#run-query').addEventListener('click', () => this.run(this.input.value));
    main.querySelector('#copy-link').addEventListener('click', (e) => this.copyLink(e.currentTarget));
    const hist = main.querySelector('#query-history');
    hist.addEventListener('mousedown', (e) => e.preventDefault());
    hist.addEventListener('click', () => {
      if (this.input.isOpen()) this.input.close();
      else this.input.showHistory();
    });
    this.range = new RangeControls(main.querySelector('.range-bar'), {
      onChange: (c) => this.rangeChanged(c),
    });
    this.timeline = new Timeline(main.querySelector('#timeline'), {
      onMark: (m, e) => this.markClicked(m, e),
      onSelectAction: (kind, sel) => this.selectionAction(kind, sel),
      onView: (f, t, zoomed) => {
        this.state.zoom = zoomed ? { from: f, to: t } : null;
        this.commitSoon();
      },
      onWindow: (f, t) => { if (this.chart) this.chart.setWindow(f, t); },
    });
    this.setupChart();
    this.openBar.addEventListener('click', (e) => {
      if (e.target.closest('a[data-act=compare]')) this.compareLink();
      const b = e.target.closest('button[data-act]');
      if (b) this.openBarAction(b.dataset.act);
    });
    this.onKey = (e) => this.globalKey(e);
    document.addEventListener('keydown', this.onKey);
    this.onTheme = () => { this.timeline.redraw(); this.chart.redraw(); this.recolorGroups(); };
    window.addEventListener('profd-theme', this.onTheme);
    this.timer = setInterval(() => {
      if (this.state.live && !document.hidden) this.load(true);
    }, LIVE_MS);
    this.input.value = this.state.query;
    this.load(false);
    this.renderOpen();
  }

  destroy() {
    clearInterval(this.timer);
    clearTimeout(this.startTimer);
    clearTimeout(this.commitTimer);
    document.removeEventListener('keydown', this.onKey);
    window.removeEventListener('profd-theme', this.onTheme);
    if (this.abort) this.abort.abort();
    this.timeline.destroy();
    this.chart.destroy();
    if (this.mounted) this.mounted.destroy();
    this.mounted = null;
  }

  // Back/forward: the URL changed under us.
  popstate() {
    const prev = this.state;
    const st = decodeState(location.search);
    this.state = st;
    if (document.activeElement !== this.input.input || prev.query !== st.query) this.input.value = st.query;
    const reload = prev.query !== st.query || prev.range !== st.range || prev.from !== st.from ||
      prev.to !== st.to || prev.live !== st.live;
    if (reload) this.load(false);
    else if (prev.chart !== st.chart || prev.group !== st.group) this.loadChart();
    if (!reload && JSON.stringify(prev.zoom) !== JSON.stringify(st.zoom)) {
      this.fitZoom();
      this.timeline.setView(st.zoom ? st.zoom.from : this.resolved.from,
        st.zoom ? st.zoom.to : this.resolved.to, false);
    }
    this.tagInput.value = st.tagFocus;
    this.renderOpen();
  }

  // The view's absolute link, under the external URL, to the clipboard (and in the
  // button's data-url, where it can be read when the clipboard cannot be written).
  copyLink(btn) {
    this.commit(false);
    const link = externalLink('/', encodeState(this.state), pageExternalBase());
    btn.dataset.url = link;
    const done = (ok) => {
      btn.textContent = ok ? 'Copied' : 'Copy link';
      btn.title = ok ? link : 'The clipboard is not available here: ' + link;
    };
    if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(link).then(() => done(true), () => done(false));
    else done(false);
  }

  url() {
    const s = encodeState(this.state);
    return pagePath('/') + (s ? '?' + s : '');
  }

  commit(push) {
    clearTimeout(this.commitTimer);
    const url = this.url();
    if (sameUrl(url, location)) return;
    if (push) history.pushState(null, '', url);
    else history.replaceState(null, '', url);
  }

  commitSoon() {
    clearTimeout(this.commitTimer);
    this.commitTimer = setTimeout(() => this.commit(false), 250);
  }

  run(q) {
    const query = closeSelector(String(q || '').trim());
    this.input.value = query;
    const changed = query !== this.state.query;
    this.state.query = query;
    this.state.zoom = null;
    if (changed) { this.state.open = null; this.state.view = {}; this.state.group = ''; }
    if (query) rememberQuery(query);
    this.commit(true);
    this.load(false);
    this.renderOpen();
  }

  rangeChanged(c) {
    const st = this.state;
    if (c.range) {
      st.range = c.range;
      st.from = null;
      st.to = null;
    } else if (c.from != null) {
      st.range = null;
      st.from = c.from;
      st.to = c.to;
      st.live = false;
    } else if (c.live != null) {
      st.live = c.live;
      if (c.live && !st.range) {
        st.range = formatDurationShort(this.resolved.to - this.resolved.from);
        st.from = null;
        st.to = null;
      }
    }
    st.zoom = null;
    this.commit(c.live == null);
    this.load(false);
  }

  // Keeps state.zoom to what the timeline applies over the resolved range: a zoom from a
  // URL that no longer fits is dropped (or clamped), and the URL says so. Returns whether
  // it changed.
  fitZoom() {
    const st = this.state;
    const z = appliedZoom(st.zoom, this.resolved.from, this.resolved.to);
    if (JSON.stringify(z) === JSON.stringify(st.zoom)) return false;
    st.zoom = z;
    this.commit(false);
    return true;
  }

  setStatus(html) {
    this.status.innerHTML = html;
  }

  async load(quiet) {
    const st = this.state;
    if (this.abort) this.abort.abort();
    const ac = new AbortController();
    this.abort = ac;
    const prevTo = this.resolved.to;
    const { from, to } = resolveRange(st, Date.now());
    this.resolved = { from, to };
    this.fitZoom();
    this.range.set(st, this.resolved);
    document.title = (st.query ? st.query + ' · ' : '') + 'profd';
    // the chart keeps its place while the series load (shown, then filled), so the
    // lanes below it do not move down when it comes
    if (!st.query.trim()) this.chartSlot.hidden = true;
    else if (!quiet && this.chartSlot.hidden) {
      this.chartSlot.hidden = false;
      this.chart.resize();
      this.chart.setLoading();
    }
    if (!st.query.trim()) {
      this.series = [];
      this.setStatus('');
      this.showStart(ac);
      return;
    }
    if (!quiet) this.timeline.setLoading();
    if (!quiet) this.setStatus('Loading series…');
    try {
      const r = await apiGet('query_range', { query: st.query, start: from / 1000,
        end: to / 1000, limit: 1000 }, ac.signal);
      if (ac !== this.abort) return;
      this.input.clearError();
      const series = r.data || [];
      this.series = series;
      if (!series.length) {
        this.chartSlot.hidden = true;
        this.setStatus('');
        await this.showNoMatch(ac);
        return;
      }
      // Live: a zoom that reached the end of the range follows it.
      if (quiet && st.zoom && st.zoom.to >= prevTo - 1000) {
        const d = to - prevTo;
        st.zoom = { from: Math.max(from, st.zoom.from + d), to: Math.min(to, st.zoom.to + d) };
        if (!this.fitZoom()) this.commit(false);
      }
      this.timeline.setData(series, from, to, st.zoom ? st.zoom.from : null,
        st.zoom ? st.zoom.to : null);
      this.timeline.setPicks(picksOf(st.open, st.query), st.open && st.open.mode === 'merge');
      this.loadChart(quiet);
      let n = 0;
      for (const s of series) n += s.timestamps.length;
      const notes = r.warnings.concat(this.clampNote ? [this.clampNote] : []);
      this.clampNote = '';
      const warn = notes.length
        ? ` · <span class="warn-text" data-note="range">${escapeHtml(notes.join('; '))}</span>` : '';
      this.setStatus(`${series.length} series · ${n.toLocaleString('en-US')} profile${n === 1 ? '' : 's'} · updated ${escapeHtml(formatTime(Date.now()).slice(11))}${st.live ? ' · live' : ''}${warn}`);
    } catch (e) {
      if (e && e.name === 'AbortError') return;
      if (ac !== this.abort) return;
      this.series = [];
      this.chartSlot.hidden = true;
      // a range longer than the server takes: its longest, ending where this one
      // ends, and the status says so
      const lim = e.status === 400 ? rangeLimitOf(e.message) : 0;
      if (lim > 0 && to - from > lim) {
        const asked = formatDurationShort(to - from);
        if (st.range) st.range = formatDurationShort(lim);
        else { st.from = st.to - lim; }
        this.clampNote = `profd queries at most ${formatDurationShort(lim)} at a time, so the last ${formatDurationShort(lim)} of the ${asked} asked for are shown`;
        this.commit(false);
        this.load(quiet);
        return;
      }
      if (e.status === 400) {
        this.input.setError(e.message);
        this.timeline.setError('No timeline: the request was refused (see the message under the selector).');
      } else {
        this.timeline.setError(e.message || String(e));
      }
      this.setStatus('');
    }
  }

  // ------------------------------------------------------------ the values chart

  // The chart above the lanes, in the timeline's slot: its controls (sample type,
  // group-by, sample-label filter) and the canvas.
  setupChart() {
    const slot = this.timeline.root.querySelector('.tl-chart');
    this.chartSlot = slot;
    slot.innerHTML = `
      <div class="ch-toolbar">
        <label>Values <select id="chart-sample" aria-label="The sample type the chart shows"></select></label>
        <label>Group by <select id="chart-group" aria-label="Group the chart's lines by a label">
          <option value="">nothing (a line per series)</option></select></label>
        <label title="Open profiles with only the samples whose pprof labels match (go tool pprof -tagfocus); the chart's totals are of whole profiles">Sample labels
          <input id="tag-focus" type="text" class="mono" placeholder="key=regex" spellcheck="false"
                 aria-label="Sample-label filter of the profiles opened (tag_focus)"></label>
        <span class="ch-status muted" aria-live="polite"></span>
      </div>
      <div id="chart" data-state="idle" data-series="0" data-points="0"></div>`;
    this.chartSample = slot.querySelector('#chart-sample');
    this.chartGroup = slot.querySelector('#chart-group');
    this.tagInput = slot.querySelector('#tag-focus');
    this.chartStatus = slot.querySelector('.ch-status');
    this.tagInput.value = this.state.tagFocus;
    this.chart = new Chart(slot.querySelector('#chart'), {
      onPoint: (p, e) => this.chartPoint(p, e),
      onBrush: (r) => this.chartBrush(r),
      onCommand: (act) => this.timeline.command(act),
      onZoom: (anchor, factor) => {
        const tl = this.timeline;
        tl.setView(...zoomWindow(tl.vf, tl.vt, anchor, factor, tl.from, tl.to), true);
      },
    });
    this.chartSample.addEventListener('change', () => {
      this.state.chart = this.chartSample.value;
      this.commit(false);
      this.loadChart();
    });
    this.chartGroup.addEventListener('change', () => this.groupByChanged(this.chartGroup.value));
    const applyTag = () => {
      const v = this.tagInput.value.trim();
      if (v === this.state.tagFocus) return;
      this.state.tagFocus = v;
      this.commit(false);
      this.renderOpen();
    };
    this.tagInput.addEventListener('change', applyTag);
    this.tagInput.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); applyTag(); } });
  }

  // The group-by label, from the chart's control or the profile view's: one choice for
  // both (the chart's lines and a merge's groups), kept in the URL as group=.
  groupByChanged(label) {
    if (label === this.state.group) return;
    this.state.group = label;
    delete this.state.view.groupPick;
    this.commit(false);
    this.loadChart();
    this.renderOpen();
  }

  // The profile view's groups take the colours of the chart's lines.
  recolorGroups() {
    if (this.mounted && this.mounted.recolor) this.mounted.recolor();
  }

  // Loads the chart's lines for the timeline's series (this.series): the sample types
  // of their profile types, the one chosen, then its values over the range.
  async loadChart(quiet = false) {
    const st = this.state;
    const series = this.series;
    if (this.chartAbort) this.chartAbort.abort();
    const ac = new AbortController();
    this.chartAbort = ac;
    if (!series.length) { this.chartSlot.hidden = true; return; }
    this.chartSlot.hidden = false;
    this.chart.resize();
    const { from, to } = this.resolved;
    if (!quiet) {
      this.chart.setLoading();
      this.chartStatus.textContent = 'Loading values…';
    }
    this.chart.setWindow(this.timeline.vf, this.timeline.vt);
    try {
      const types = [...new Set(series.map((s) => s.labels.__name__))].sort();
      const names = (await promGet('label/__name__/values', {}, ac.signal)).data || [];
      if (ac !== this.chartAbort) return;
      const choices = types.flatMap((t) => sampleChoices(t, names));
      this.fillChartControls(types, choices, series);
      const choice = choices.find((c) => c.metric === st.chart) ||
        defaultChoice(choices.filter((c) => c.profileType === preferredType(types)), this.samplePref);
      if (!choice) {
        this.chart.setEmpty('No values stored for ' + types.join(', ') + ' yet.');
        return;
      }
      this.chartSample.value = choice.metric;
      this.chartChoice = choice;
      const req = chartRequest(st.query, choice.metric, from, to, this.chart.plotWidth(), st.group);
      const r = await promGet(req.path, req.params, ac.signal);
      if (ac !== this.chartAbort) return;
      const lines = linesOf(r.data && r.data.result);
      this.chart.setData(lines, { unit: choice.unit, perSecond: choice.perSecond, group: st.group,
        metric: choice.metric, step: req.step });
      this.recolorGroups();
      this.chart.setWindow(this.timeline.vf, this.timeline.vt);
      this.chartStatus.textContent = st.group
        ? `${lines.length} group${lines.length === 1 ? '' : 's'} by ${st.group}, summed every ${req.params.step} s`
        : `${lines.length} series`;
    } catch (e) {
      if (e && e.name === 'AbortError') return;
      if (ac !== this.chartAbort) return;
      this.chart.setError('No values: ' + (e && e.message ? e.message : String(e)));
      this.chartStatus.textContent = '';
    }
  }

  fillChartControls(types, choices, series) {
    const st = this.state;
    const sel = this.chartSample;
    sel.replaceChildren();
    for (const t of types) {
      const g = document.createElement('optgroup');
      g.label = t;
      for (const c of choices.filter((x) => x.profileType === t)) {
        const o = document.createElement('option');
        o.value = c.metric;
        o.textContent = `${t}: ${c.label.replace(/_/g, ' ')}`;
        g.appendChild(o);
      }
      if (g.children.length) sel.appendChild(g);
    }
    sel.disabled = choices.length < 2;
    const labels = new Set();
    for (const s of series) for (const k of Object.keys(s.labels)) if (k !== '__name__') labels.add(k);
    const gs = this.chartGroup;
    while (gs.options.length > 1) gs.remove(1);
    for (const k of [...labels].sort()) {
      const o = document.createElement('option');
      o.value = k;
      o.textContent = k;
      gs.appendChild(o);
    }
    gs.value = labels.has(st.group) ? st.group : '';
  }

  chartPoint(p, e) {
    const c = this.chartChoice;
    if (!c) return;
    const st = this.state;
    if (!st.group) {
      const key = profileSeriesOf(this.chart.lines[p.line], c.profileType);
      this.markClicked({ series: { key }, t: p.t }, e);
      return;
    }
    const ts = this.timeline.series.map((s) => ({ labels: s.labels, ts: s.ts }));
    const req = groupPointRequest(st.query, c.profileType, st.group, p.labels[st.group], ts, p.t);
    if (req) this.open(req);
  }

  // A brush over the chart: a merge of the query's profiles of the chart's profile type.
  chartBrush(r) {
    const c = this.chartChoice;
    if (!c) return;
    const query = metricOf(this.state.query) === c.profileType ? this.state.query
      : withMetric(this.state.query, c.profileType);
    this.open({ mode: 'merge', query, start: r.start, end: r.end });
  }

  // Buttons that run a query over the range shown: each profile type (all its series),
  // or a selector.
  typeChips(types) {
    const wrap = document.createElement('div');
    wrap.className = 'chips';
    for (const t of types) {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'chip';
      b.textContent = t;
      const what = TYPE_NOTES[t];
      if (what) {
        const note = document.createElement('span');
        note.className = 'chip-note';
        note.textContent = what;
        b.append(' ', note);
        b.title = `${t}: ${what}, every series`;
      }
      b.addEventListener('click', () => this.run(t));
      wrap.appendChild(b);
    }
    return wrap;
  }

  // polling: the page looks again by itself (the landing page does)
  noDataNode(polling = false) {
    const d = document.createElement('div');
    d.className = 'empty';
    d.innerHTML = `<h3>profd has no profiles yet</h3>
      ${polling ? `<p>A profd that has just started stores its first profiles within a scrape
      interval (15 s in the example configuration); this page looks again every 5 s.</p>` : ''}
      <p>No series are stored. Check the <a href="targets">targets</a>: are any configured, and are
      they up? Targets come from <code>scrape_configs</code> in the configuration file
      (see <a href="status">status</a> for the loaded configuration); profiles can also be
      pushed to <code>POST /api/v1/profiles</code>, by Pyroscope's SDKs to <code>/ingest</code>,
      by Grafana Alloy to <code>/push.v1.PusherService/Push</code> and by OpenTelemetry
      exporters to <code>/v1development/profiles</code>.</p>`;
    return d;
  }

  async showStart(ac) {
    const types = await profileTypes();
    if (ac !== this.abort) return;
    if (!types.length) {
      this.timeline.setEmpty(this.noDataNode(true));
      // a first run: the first scrapes are seconds away, so look again
      clearTimeout(this.startTimer);
      this.startTimer = setTimeout(() => {
        if (ac === this.abort && !this.state.query.trim()) this.load(true);
      }, 5e3);
      return;
    }
    let jobs = [];
    let services = [];
    try {
      [jobs, services] = await Promise.all(['job', 'service_name'].map(async (l) =>
        (await apiGet(`label/${l}/values`, {}, ac.signal)).data || []));
    } catch (e) { /* the types alone will do */ }
    if (ac !== this.abort) return;
    // pushed profiles (Pyroscope's SDKs, Alloy, OTLP) name a service rather than a job
    services = services.filter((v) => !jobs.includes(v));
    const quote = (v) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
    const d = document.createElement('div');
    d.className = 'empty';
    d.innerHTML = `<h3>Pick what to look at</h3>
      <p class="start-range">A profile type: every series of it, over ${escapeHtml(rangeWords(this.state))}</p>`;
    d.appendChild(this.typeChips(types));
    if (jobs.length && jobs.length <= 12) {
      const p = document.createElement('p');
      p.textContent = 'Or every profile type of one job:';
      d.appendChild(p);
      d.appendChild(this.typeChips(jobs.map((j) => `{job="${quote(j)}"}`)));
    }
    if (services.length && services.length <= 12) {
      const p = document.createElement('p');
      p.textContent = 'Or every profile type of one pushed service:';
      d.appendChild(p);
      d.appendChild(this.typeChips(services.map((v) => `{service_name="${quote(v)}"}`)));
    }
    const more = document.createElement('p');
    more.className = 'muted';
    more.innerHTML = 'Or type a selector above (press <kbd>/</kbd>), such as <code>heap{job="api"}</code>.';
    d.appendChild(more);
    this.timeline.setEmpty(d);
  }

  async showNoMatch(ac) {
    const types = await profileTypes();
    if (ac !== this.abort) return;
    if (!types.length) { this.timeline.setEmpty(this.noDataNode()); return; }
    const { from, to } = this.resolved;
    const d = document.createElement('div');
    d.className = 'empty';
    const metric = metricOf(this.state.query);
    if (metric && !types.includes(metric)) {
      d.innerHTML = `<h3>Unknown profile type</h3>
        <p>profd has never stored a profile of type <code class="sel"></code>. Known types:</p>`;
      d.querySelector('code.sel').textContent = metric;
      d.appendChild(this.typeChips(types));
      this.timeline.setEmpty(d);
      return;
    }
    d.innerHTML = `<h3>No profiles in this range</h3>
      <p><code class="sel"></code> matched no series with a profile between
      ${escapeHtml(formatTime(from))} and ${escapeHtml(formatTime(to))}.
      Widen the range, or check the selector's labels (autocompletion knows them).</p>
      <div class="chips widen"></div>
      <p>Known profile types:</p>`;
    d.querySelector('code.sel').textContent = this.state.query;
    const widen = d.querySelector('.widen');
    const span = to - from;
    for (const r of ['6h', '24h', '7d']) {
      if (parseDuration(r) <= span) continue;
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'chip';
      b.textContent = 'Last ' + r;
      b.addEventListener('click', () => this.rangeChanged({ range: r }));
      widen.appendChild(b);
    }
    d.appendChild(this.typeChips(types));
    this.timeline.setEmpty(d);
  }

  // ------------------------------------------------------------ picking profiles

  markClicked(m, e) {
    const key = m.series.key;
    if (e.shiftKey) {
      const req = diffRequest(this.state.open, key, m.t);
      if (req) { this.open(req); return; }
    }
    this.open({ mode: 'single', query: key, time: m.t });
  }

  selectionAction(kind, sel) {
    const query = sel.lane != null && this.series[sel.lane]
      ? this.timeline.series[sel.lane].key : this.state.query;
    if (kind === 'merge') {
      this.open({ mode: 'merge', query, start: sel.start, end: sel.end });
    } else if (kind === 'diff') {
      const o = this.state.open;
      if (!o || o.mode !== 'merge') return;
      this.open({ mode: 'diff', a: { query: o.query, start: o.start, end: o.end },
        b: { query, start: sel.start, end: sel.end } });
    }
  }

  open(req) {
    const c = carryView(this.state.view, this.state.open, req, this.samplePref);
    this.state.view = c.view;
    this.carrySample = c.sampleType;
    this.state.open = req;
    this.commit(true);
    this.renderOpen();
  }

  openBarAction(act) {
    const o = this.state.open;
    if (!o) return;
    if (act === 'close') { this.open(null); return; }
    if (act === 'swap' && o.mode === 'diff') { this.open({ mode: 'diff', a: o.b, b: o.a }); return; }
    if ((act === 'prev' || act === 'next') && o.mode === 'single') this.step(act === 'next' ? 1 : -1);
  }

  // The open bar's link to the side-by-side page (compare.js), with the view as it is now.
  compareLink() {
    const a = this.openBar.querySelector('a[data-act=compare]');
    if (a && this.state.open) a.setAttribute('href', 'compare?' + compareSearch(this.state.open, this.state.view));
  }

  // Opens the previous/next profile of the open single profile's series.
  step(d) {
    const o = this.state.open;
    if (!o || o.mode !== 'single') return;
    const lane = this.timeline.laneIndex(o.query);
    if (lane < 0) return;
    const t = stepTime(this.timeline.series[lane].ts, o.time, d);
    if (t != null) this.open({ mode: 'single', query: o.query, time: t });
  }

  // The bar over the profile view: what kind of view is open and how to move on from it
  // (prev/next, swap, close). What exactly is shown (series, times, diff sides) is the
  // profile view's header, said once.
  renderOpenBar() {
    const o = this.state.open;
    if (!o) { this.openBar.hidden = true; this.openBar.innerHTML = ''; return; }
    let html = '';
    if (o.mode === 'single') {
      html = `<span class="badge">Profile</span>
        <span class="muted small-text">Shift-click another mark to diff against this one</span>
        <span class="spacer"></span>
        <a class="btn small" data-act="compare" href="compare" title="This profile in a pane of its own beside another (the latest of its series to start with)">Compare</a>
        <button type="button" class="btn small" data-act="prev" title="Previous profile of this series ([)">‹ Prev</button>
        <button type="button" class="btn small" data-act="next" title="Next profile of this series (])">Next ›</button>`;
    } else if (o.mode === 'merge') {
      html = `<span class="badge">Merge</span>
        <span class="muted small-text">Shift-drag another range to diff against it</span>
        <span class="spacer"></span>
        <a class="btn small" data-act="compare" href="compare" title="This merge in a pane of its own beside another range">Compare</a>`;
    } else {
      html = `<span class="badge">Diff</span>
        <span class="muted small-text">The values are B − A: what grew from the base (A) to the new side (B)</span>
        <span class="spacer"></span>
        <a class="btn small" data-act="compare" href="compare" title="The two sides in two panes, each with its own flame graph and top table">Side by side</a>
        <button type="button" class="btn small" data-act="swap" title="Swap the base and the new side">Swap A/B</button>`;
    }
    html += '<button type="button" class="btn small ghost" data-act="close" title="Close the profile" aria-label="Close the profile">✕</button>';
    this.openBar.innerHTML = html;
    this.compareLink();
    this.openBar.dataset.mode = o.mode;
    this.openBar.hidden = false;
  }

  async renderOpen() {
    const st = this.state;
    this.renderOpenBar();
    this.timeline.setPicks(picksOf(st.open, st.query), st.open && st.open.mode === 'merge');
    this.chart.setPicks(picksOf(st.open, st.query));
    const req = openRequest(st);
    const key = JSON.stringify(req);
    if (key === this.mountedKey) return;
    this.mountedKey = key;
    if (this.mounted) { this.mounted.destroy(); this.mounted = null; }
    this.host.replaceChildren();
    if (!st.open) {
      this.host.innerHTML = `<div class="profile-placeholder">
        <p>Click a mark on the timeline to open that profile here: flame graph and top table.</p>
        <p class="muted">Shift-click a second mark to diff the two, or drag over a range to merge it.</p></div>`;
      return;
    }
    let mod;
    try {
      mod = await import('./profile.js');
    } catch (e) {
      if (key !== this.mountedKey) return;
      this.host.innerHTML = '';
      const p = document.createElement('p');
      p.className = 'error-text';
      p.textContent = 'The profile view failed to load: ' + (e && e.message ? e.message : e);
      this.host.appendChild(p);
      return;
    }
    if (key !== this.mountedKey) return;
    const onView = (partial) => {
      if (key !== this.mountedKey) return;
      for (const [k, v] of Object.entries(partial || {})) {
        if (v == null || v === '') delete this.state.view[k];
        else this.state.view[k] = String(v);
      }
      if (partial && sampleName(partial.sampleIndex)) this.samplePref = partial.sampleIndex;
      this.commit(false);
    };
    const opts = { sampleType: this.carrySample, onGroupBy: (label) => this.groupByChanged(label),
      onFilters: ({ filters, gran, normalize }) => {
        this.state.filters = { ...(filters || {}) };
        this.state.gran = gran || '';
        this.state.normalize = !!normalize;
        this.commit(false);
        this.renderOpen();
      },
      onTagFocus: (v) => {
        this.state.tagFocus = v;
        if (this.tagInput) this.tagInput.value = v;
        this.commit(false);
        this.renderOpen();
      },
      onAggregation: (agg) => {
        if (agg) this.state.view.aggregation = agg;
        else delete this.state.view.aggregation;
        this.commit(false);
        this.renderOpen();
      },
      copyLink: (btn) => this.copyLink(btn),
      groupColor: (value) => this.chart.groupColor(this.state.group, value) };
    this.carrySample = '';
    this.mounted = mod.mountProfile(this.host, req, { ...st.view }, onView, opts);
  }

  globalKey(e) {
    const t = e.target;
    const typing = t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' ||
      t.isContentEditable);
    if (typing || e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === '/') {
      e.preventDefault();
      const input = this.input.input;
      input.focus();
      input.select();
    } else if (e.key === '[' || e.key === ']') {
      if (this.state.open && this.state.open.mode === 'single') {
        e.preventDefault();
        this.step(e.key === ']' ? 1 : -1);
      }
    }
  }
}

// ---------------------------------------------------------------- routing

const ROUTES = {
  '/': (main) => new QueryPage(main),
  '/targets': (main) => mountTargets(main),
  '/status': (main) => mountStatus(main),
  '/compare': (main) => mountCompare(main),
};

// The route of a path: '/', '/targets', '/status', '/compare' or null (not a page of the UI). The
// path is absolute, under base (the route prefix: '/profd/targets').
export function routeOf(pathname, base = BASE) {
  const inner = innerPath(pathname, base);
  if (inner === null) return null;
  const p = inner.replace(/\/+$/, '') || '/';
  return Object.prototype.hasOwnProperty.call(ROUTES, p) ? p : null;
}

let current = null;

function notFound(main) {
  main.innerHTML = `<section class="page"><h2>Page not found</h2>
    <p>There is nothing at <code></code>. Go to the <a href="./">query page</a>,
    the <a href="targets">targets</a> or the <a href="status">status</a>.</p></section>`;
  main.querySelector('code').textContent = location.pathname;
  return { destroy() {} };
}

function route() {
  const main = document.getElementById('main');
  const path = routeOf(location.pathname);
  for (const a of document.querySelectorAll('.topbar nav a')) {
    const on = routeOf(new URL(a.href, location.href).pathname) === path;
    if (on) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (current && current.path === path && path !== null) {
    if (current.page.popstate) current.page.popstate();
    return;
  }
  if (current) current.page.destroy();
  main.replaceChildren();
  window.scrollTo(0, 0);
  const page = path ? ROUTES[path](main) : notFound(main);
  current = { path, page };
  if (path !== '/') {
    document.title = ({ '/targets': 'Targets', '/status': 'Status', '/compare': 'Compare' }[path] || 'Not found') + ' · profd';
  }
}

function isUiLink(a, e) {
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return false;
  if (a.target && a.target !== '_self') return false;
  if (a.hasAttribute('download')) return false;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin) return false;
  return routeOf(url.pathname) !== null;
}

function start() {
  loadTimeZone();
  // another time zone: every page draws its times again, from its URL
  window.addEventListener('profd-timezone', () => {
    if (current) current.page.destroy();
    current = null;
    route();
  });
  initTheme();
  initKeysHelp();
  document.addEventListener('click', (e) => {
    const a = e.target.closest ? e.target.closest('a[href]') : null;
    if (!isUiLink(a, e)) return;
    e.preventDefault();
    const url = new URL(a.href, location.href);
    if (url.pathname + url.search !== location.pathname + location.search) {
      history.pushState(null, '', url.pathname + url.search);
    }
    route();
  });
  window.addEventListener('popstate', route);
  route();
}

if (typeof document !== 'undefined' && typeof window !== 'undefined') {
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
}
