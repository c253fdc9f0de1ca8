// The side-by-side comparison page (/compare): two panes, A (left, the base) and B
// (right), each with its own selector and time (one profile, or a merge of a range),
// each drawing its own flame graph and top table, kept in step: one sample type, a
// zoom on one side zooms the other to the same call path, one search, one sort and
// filter, and one width scale. The whole state is in the URL (decodeCompare /
// encodeCompare); a link switches to the query page's combined diff of the same two
// sides, which links back. The pure helpers at the top run in node.

import { formatTime, formatValue } from './format.js';
import { SelectorInput, RangeControls, closeSelector, rememberQuery, toLocalInput, fromLocalInput } from './query.js';
import { FlameView, findPath, pathsTo, escapeRegExp } from './flame.js';
import { TopTable } from './top.js';
import { orderSampleTypes, describeProfiles, aggregationLine } from './profile.js';
import {
  SIDES, VIEW_KEYS, AT_RE, decodeCompare, resolveSide, metaRequest, dataRequest, compareRequests, takeEarly,
} from './sides.js';

// ---------------------------------------------------------------- URL state

// decodeCompare, resolveSide and the requests are sides.js's
export { SIDES, decodeCompare, resolveSide };

// Percent-encodes a URL component but leaves the characters of selectors readable.
function enc(s) {
  return encodeURIComponent(s).replace(/%(7B|7D|3A|2C|3D|22|2F|40|5B|5D)/g, (m) => decodeURIComponent(m));
}

function sidePairs(out, prefix, s) {
  out.push([prefix + 'sel', s.query || '']);
  if (s.range) out.push([prefix + 'range', s.range]);
  else if (s.start != null && s.end != null) { out.push([prefix + 'start', s.start]); out.push([prefix + 'end', s.end]); }
  else if (s.time != null) out.push([prefix + 'time', s.time]);
  else out.push([prefix + 'time', s.at || 'now']);
}

function joinPairs(out) {
  return out.map(([k, v]) => k + '=' + enc(String(v))).join('&');
}

// The state as a query string (without "?"), in a fixed order; defaults left out.
export function encodeCompare(st) {
  const out = [];
  for (const k of SIDES) sidePairs(out, k + '.', st[k] || {});
  for (const [k, name] of VIEW_KEYS) if (st[k]) out.push([name, st[k]]);
  if (st.scale === 'own') out.push(['scale', 'own']);
  return joinPairs(out);
}

// Whether a side is a merge of a range (else one profile).
export function isMerge(s) {
  return !!(s && (s.range || s.start != null));
}

// What a side's time says, in words: 'latest', '1h ago', 'last 6h', or absolute times.
export function sideWhen(s) {
  if (s.range) return `merge of the last ${s.range}`;
  if (s.start != null) return `merge from ${formatTime(s.start)} to ${formatTime(s.end)}`;
  if (s.time != null) return `profile at ${formatTime(s.time)}`;
  const m = AT_RE.exec(s.at || 'now');
  return m && m[1] ? `profile ${m[1]} ago` : 'latest profile';
}

// The query page's query string showing the combined diff of the same two sides
// (base A, new B) at `now`, with the same sample type, focus, search, sort and filter;
// its timeline shows A's selector over a range holding both sides.
export function diffSearch(st, now) {
  const a = resolveSide(st.a, now);
  const b = resolveSide(st.b, now);
  const ts = [a, b].flatMap((s) => (s.start != null ? [s.start, s.end] : [s.time]));
  const lo = Math.min(...ts);
  const hi = Math.max(...ts);
  const pad = Math.max(Math.round((hi - lo) / 10), 60e3);
  const out = [['query', a.query], ['from', lo - pad], ['to', hi + pad], ['open', 'diff']];
  sidePairs(out, 'a.', a);
  sidePairs(out, 'b.', b);
  for (const [k, name] of VIEW_KEYS) if (st[k]) out.push([name, st[k]]);
  return joinPairs(out);
}

// The compare page's query string for what the query page has open (profile.js's
// req) and its view: a diff's two sides; a single profile against the latest of its
// series; a merge against the same selector over the last span of the same length.
export function compareSearch(req, view = {}) {
  if (!req) return '';
  let a;
  let b;
  const side = (s) => (s.start != null ? { query: s.query, start: s.start, end: s.end } : { query: s.query, time: s.time });
  if (req.mode === 'diff') { a = side(req.a); b = side(req.b); } else {
    a = side(req);
    b = req.mode === 'merge' ? { query: req.query, range: `${Math.max(1, Math.round((req.end - req.start) / 1000))}s` }
      : { query: req.query, at: 'now' };
  }
  const v = view || {};
  return encodeCompare({ a, b, sample: v.sampleIndex || '', focus: v.focus || '', search: v.search || '',
    sort: v.sort || '', filter: v.filter || '', agg: v.aggregation || '', scale: 'same' });
}

// ---------------------------------------------------------------- keeping the panes in step

// The path (names below the root) a tree shows for a focus from the other side: the
// same call path when the tree has it, else its longest part the tree has; a bare
// function name (no ';', as the top table sets it) is the one path to it when there
// is exactly one. {path, found}: found is false when the whole focus is not there.
export function mapPath(tree, focus) {
  if (!focus) return { path: [], found: true };
  const want = Array.isArray(focus) ? focus : String(focus).split(';');
  if (!tree) return { path: [], found: false };
  if (findPath(tree, want)) return { path: want.slice(), found: true };
  if (want.length === 1) {
    const ps = pathsTo(tree, want[0], 2);
    if (ps.length === 1) return { path: ps[0], found: true };
    if (ps.length > 1) return { path: [], found: true }; // several: the search marks them all
  }
  let n = tree;
  const path = [];
  for (const name of want) {
    const c = (n.children || []).find((x) => x.name === name);
    if (!c) break;
    path.push(name);
    n = c;
  }
  return { path, found: false };
}

// The share of the width each side's graph spans: with the same scale, widths are
// relative to the larger of the two totals (so the smaller side looks smaller); else
// each side spans the whole width. totals: [a, b] of the frames shown at the top.
export function scaleShares(totals, same) {
  const t = totals.map((x) => Math.abs(Number(x) || 0));
  const max = Math.max(...t);
  if (!same || !(max > 0)) return t.map(() => 1);
  return t.map((x) => x / max);
}

// The sample types both sides have, in A's order (its default first), and the one to
// show: `wanted` when both have it, else A's default when B has it, else the first
// both have. metas: [a, b] meta answers (either may be null: no profile there).
export function commonSampleTypes(metas, wanted) {
  const [ma, mb] = metas;
  const ta = orderSampleTypes(ma);
  const tb = orderSampleTypes(mb);
  let list;
  if (ma && mb) list = ta.filter((t) => tb.some((u) => u.type === t.type));
  else list = ma ? ta : tb;
  const names = list.map((t) => t.type);
  let pick = '';
  if (wanted && names.includes(wanted)) pick = wanted;
  else if (ma && names.includes(ma.defaultSampleType)) pick = ma.defaultSampleType;
  else if (mb && names.includes(mb.defaultSampleType)) pick = mb.defaultSampleType;
  else pick = names[0] || '';
  return { types: names, pick };
}

// ---------------------------------------------------------------- the page (browser only)

const AT_PRESETS = [['now', 'Latest'], ['now-15m', '15m ago'], ['now-1h', '1h ago'], ['now-6h', '6h ago'], ['now-24h', '24h ago']];
const NAMES = { a: 'A', b: 'B' };

function h(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids) e.append(k);
  return e;
}

function ensureStylesheet() {
  if (document.querySelector('link[rel="stylesheet"][href$="css/compare.css"]')) return;
  document.head.append(h('link', { rel: 'stylesheet', href: 'css/compare.css' }));
}

function errorText(e) {
  return e && e.message ? e.message : String(e);
}

// Whether a dataRequest answer is of sample type si (both reports name theirs).
export function dataIsOf(got, si) {
  if (!got || !si) return false;
  const [fr, tr] = got;
  return !!(fr && tr && fr.data && tr.data && fr.data.sampleType === si && tr.data.sampleType === si);
}

// Resolves in a task of its own after the next frame (or after 50 ms where no frame
// comes, as in a hidden tab): what was drawn before it is on the screen.
function nextTask() {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, 50);
    requestAnimationFrame(() => { clearTimeout(t); setTimeout(resolve, 0); });
  });
}

// One pane: a side's selector and time controls, description, total, flame graph and
// top table. `page` is the ComparePage it reports to.
class Pane {
  constructor(page, k, host) {
    this.page = page;
    this.k = k;
    this.tree = null;
    this.meta = null;
    this.ctrl = null;
    const K = NAMES[k];
    const p = `cmp-${k}-`;
    this.root = h('section', { id: `cmp-${k}`, class: 'cmp-pane', 'data-side': k, 'data-state': 'loading',
      'aria-label': `Side ${K}` });
    this.input = h('input', { id: p + 'input', type: 'text', class: 'mono cmp-input', placeholder: 'Selector, e.g. heap{job="api"}',
      'aria-label': `Selector of side ${K}`, 'aria-describedby': p + 'error' });
    const list = h('ul', { id: p + 'suggest', class: 'suggest', hidden: true });
    const run = h('button', { type: 'button', id: p + 'run', class: 'btn primary small' }, 'Run');
    this.error = h('div', { id: p + 'error', class: 'query-error', role: 'alert', hidden: true });
    this.kind = h('div', { class: 'seg', role: 'group', 'aria-label': `What side ${K} shows` },
      h('button', { type: 'button', class: 'seg-btn', 'data-kind': 'single', id: p + 'single' }, 'One profile'),
      h('button', { type: 'button', class: 'seg-btn', 'data-kind': 'merge', id: p + 'merge' }, 'Merge a range'));
    this.atBar = h('div', { class: 'cmp-at' });
    const atSeg = h('div', { class: 'seg', role: 'group', 'aria-label': 'The profile at or before' });
    for (const [v, label] of AT_PRESETS) atSeg.append(h('button', { type: 'button', class: 'seg-btn', 'data-at': v }, label));
    this.timeInput = h('input', { type: 'datetime-local', step: '1', id: p + 'time', 'aria-label': `Side ${K}: the profile at or before (local time)` });
    this.atBar.append(atSeg, h('label', { class: 'range-abs' }, h('span', {}, 'At'), this.timeInput));
    this.rangeBar = h('div', { class: 'range-bar cmp-range' });
    this.desc = h('p', { id: p + 'desc', class: 'cmp-desc muted' });
    this.total = h('p', { class: 'cmp-total' }, 'Total ', h('b', { id: p + 'total', 'data-total': '' }, '…'));
    this.note = h('div', { id: p + 'note', class: 'cmp-note', role: 'status', hidden: true });
    this.msg = h('div', { class: 'pf-msg', role: 'alert', hidden: true });
    const flameHost = h('div', { class: 'pf-pane pf-pane-flame cmp-flame' });
    const topHost = h('div', { class: 'pf-pane pf-pane-top cmp-top' });
    this.root.append(
      h('header', { class: 'cmp-head' }, h('span', { class: `tag tag-${k}`, title: k === 'a' ? 'The base side' : 'The compared side' }, K),
        h('div', { class: 'selector' }, this.input, list), run),
      this.error,
      h('div', { class: 'cmp-time' }, this.kind, this.atBar, this.rangeBar),
      this.desc, this.total, this.note, this.msg,
      // the profile view's look (profile.css) for the graph and the table
      h('div', { class: 'pf-profile cmp-view' }, flameHost, topHost));
    host.append(this.root);

    this.sel = new SelectorInput({ input: this.input, list, error: this.error, onRun: (q) => this.run(q) });
    run.addEventListener('click', () => this.run(this.input.value));
    this.range = new RangeControls(this.rangeBar, { idPrefix: p, live: false, onChange: (c) => {
      if (c.range) this.setSide({ query: this.side().query, range: c.range });
      else if (c.from != null) this.setSide({ query: this.side().query, start: c.from, end: c.to });
    } });
    this.kind.addEventListener('click', (e) => {
      const b = e.target.closest('button[data-kind]');
      if (!b || (b.dataset.kind === 'merge') === isMerge(this.side())) return;
      const q = this.side().query;
      this.setSide(b.dataset.kind === 'merge' ? { query: q, range: '1h' } : { query: q, at: 'now' });
    });
    atSeg.addEventListener('click', (e) => {
      const b = e.target.closest('button[data-at]');
      if (b) this.setSide({ query: this.side().query, at: b.dataset.at });
    });
    this.timeInput.addEventListener('change', () => {
      const t = fromLocalInput(this.timeInput.value);
      if (Number.isFinite(t)) this.setSide({ query: this.side().query, time: t });
    });

    this.flame = new FlameView(flameHost, {
      onZoom: (path) => page.zoomed(k, path),
      onSearch: (q) => page.searched(k, q),
    });
    this.top = new TopTable(topHost, {
      onSort: (s) => page.sorted(k, s),
      onFilter: (f) => page.filtered(k, f),
      onFocus: (name) => page.focusedName(k, name),
    });
    // ids of their own: the query page's profile view names these #flame, #top-table, …
    this.flame.canvas.id = p + 'flame';
    this.flame.searchInput.id = p + 'flame-search';
    this.flame.searchResult.id = p + 'flame-search-result';
    this.flame.resetBtn.id = p + 'flame-reset';
    this.flame.crumbs.id = p + 'flame-crumbs';
    this.top.input.id = p + 'top-filter';
    this.top.table.id = p + 'top-table';
    this.flame.canvas.setAttribute('aria-label', `Flame graph of side ${K}. Arrow keys move between frames, Enter zooms, Escape resets.`);
  }

  side() {
    return this.page.state[this.k];
  }

  run(q) {
    const query = closeSelector(String(q || '').trim());
    this.input.value = query;
    if (query) rememberQuery(query);
    this.setSide({ ...this.side(), query });
  }

  setSide(s) {
    this.page.sideChanged(this.k, s);
  }

  // The controls from the state.
  render(now) {
    const s = this.side();
    if (document.activeElement !== this.input) this.input.value = s.query;
    const merge = isMerge(s);
    for (const b of this.kind.children) {
      const on = (b.dataset.kind === 'merge') === merge;
      b.classList.toggle('active', on);
      b.setAttribute('aria-pressed', String(on));
    }
    this.atBar.hidden = merge;
    this.rangeBar.hidden = !merge;
    const r = resolveSide(s, now);
    if (merge) this.range.set({ range: s.range || null, live: false }, { from: r.start, to: r.end });
    else {
      for (const b of this.atBar.querySelectorAll('button[data-at]')) {
        const on = s.time == null && (s.at || 'now') === b.dataset.at;
        b.classList.toggle('active', on);
        b.setAttribute('aria-pressed', String(on));
      }
      if (document.activeElement !== this.timeInput) this.timeInput.value = toLocalInput(r.time);
    }
  }

  setState(s) {
    this.root.dataset.state = s;
    this.root.setAttribute('aria-busy', String(s === 'loading'));
  }

  showMessage(text) {
    this.msg.textContent = text || '';
    this.msg.hidden = !text;
  }

  // The side's meta answer (or null when nothing is there); resolved: resolveSide's;
  // early: the meta request's promise when it was made before the pane was built
  // (compareRequests), else made here.
  async loadMeta(resolved, signal, early) {
    this.resolved = resolved;
    this.meta = null;
    this.tree = null;
    this.sel.clearError();
    this.showMessage('');
    this.setState('loading');
    this.flame.setState('loading');
    this.top.setState('loading');
    this.desc.textContent = `${resolved.query || '(no selector)'}: ${sideWhen(this.side())}`;
    if (!resolved.query) {
      this.showMessage(`Side ${NAMES[this.k]} has no selector yet: type one above.`);
      return null;
    }
    try {
      const r = await (early || metaRequest(resolved, this.page.state.agg, signal));
      this.meta = r.data || null;
      if (!this.meta) this.showMessage(`No profile for side ${NAMES[this.k]}: ${this.desc.textContent}. Pick another time or range.`);
      else {
        const agg = aggregationLine(this.meta);
        this.desc.textContent = describeProfiles(this.meta) + (agg.length ? ` · ${agg[0][1]}` : '');
      }
      return this.meta;
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      if (e.status === 400) this.sel.setError(e.message);
      else this.showMessage(errorText(e));
      return null;
    }
  }

  // The flame graph and top table in sample type si, fetched (a promise of
  // [flamegraph answer, top answer]). early: a dataRequest answer requested with the
  // meta (compareRequests), used when it is of sample type si.
  async fetchData(si, signal, early) {
    const got = early ? await early : null;
    if (got && dataIsOf(got, si)) return got;
    return dataRequest(this.resolved, this.page.state.agg, si, signal);
  }

  // Draws dataRequest's answer.
  show([fr, tr]) {
    this.tree = fr.data && fr.data.root;
    this.unit = (fr.data && fr.data.unit) || '';
    this.flame.setData(this.tree, this.unit, false);
    if (tr.data) this.top.setData(tr.data, false);
    else this.top.setState('empty', 'No profile.');
    const tot = this.tree ? this.tree.total : 0;
    const b = this.total.querySelector('b');
    b.textContent = formatValue(tot, this.unit);
    b.dataset.total = String(tot);
  }

  setNote(text) {
    this.note.textContent = text || '';
    this.note.hidden = !text;
  }

  destroy() {
    if (this.ctrl) this.ctrl.abort();
    this.flame.destroy();
    this.top.destroy();
    this.root.remove();
  }
}

class ComparePage {
  constructor(main) {
    ensureStylesheet();
    this.main = main;
    this.state = decodeCompare(location.search);
    // the requests go out before the page is built (building it is tens of ms); in a
    // page loaded here, sides.js sent them when it ran, before most modules came
    this.early = takeEarly(location.search) || compareRequests(this.state, Date.now());
    this.root = h('section', { id: 'compare', class: 'cmp-page', 'data-state': 'loading' });
    this.sample = h('select', { id: 'cmp-sample', 'aria-label': 'Sample type of both sides', disabled: true });
    this.scale = h('div', { class: 'seg', role: 'group', 'aria-label': 'Flame graph widths' },
      h('button', { type: 'button', class: 'seg-btn', id: 'cmp-scale-same', 'data-scale': 'same',
        title: 'Widths relative to the larger total: the smaller side is drawn narrower' }, 'Same scale'),
      h('button', { type: 'button', class: 'seg-btn', id: 'cmp-scale-own', 'data-scale': 'own',
        title: 'Each side spans the whole width (its own 100%)' }, 'Each 100%'));
    this.swapBtn = h('button', { type: 'button', id: 'cmp-swap', class: 'btn small', title: 'Swap sides A and B' }, 'Swap A/B');
    this.toDiff = h('a', { id: 'cmp-to-diff', class: 'btn small', href: './',
      title: 'The same two sides as one diff flame graph (B − A) on the query page' }, 'Combined diff');
    const bar = h('div', { class: 'cmp-bar' },
      h('h2', { class: 'cmp-title' }, 'Side by side'),
      h('label', { class: 'pf-label' }, h('span', {}, 'Sample type'), this.sample),
      this.scale, h('span', { class: 'spacer' }), this.swapBtn, this.toDiff);
    this.status = h('p', { class: 'cmp-status muted', 'aria-live': 'polite' });
    const panes = h('div', { class: 'cmp-panes' });
    this.root.append(bar, this.status, panes);
    main.append(this.root);
    this.panes = null;
    document.title = 'Compare · profd';
    this.building = this.build(panes);
  }

  // The panes and the first load, in a task after the one that made the bar: in a new
  // tab the constructor runs in the task that evaluates the modules, and both panes
  // (their controls, graph and table) with the first style and layout were more than
  // 100 ms of it on a loaded machine (bench/ui_pages.sh). Until the panes are built,
  // popstate only takes the new state and destroy stops the build.
  async build(host) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    if (this.destroyed) return;
    const early = this.early; // null when popstate came first: the requests are stale
    this.early = undefined;
    this.panes = { a: new Pane(this, 'a', host), b: new Pane(this, 'b', host) };

    this.sample.addEventListener('change', () => {
      this.state.sample = this.sample.value;
      this.commit(false);
      this.loadData();
    });
    this.scale.addEventListener('click', (e) => {
      const b = e.target.closest('button[data-scale]');
      if (!b) return;
      this.state.scale = b.dataset.scale;
      this.commit(false);
      this.renderScale();
      this.applyScale();
    });
    this.swapBtn.addEventListener('click', () => {
      const { a, b } = this.state;
      this.state.a = b;
      this.state.b = a;
      this.commit(true);
      this.load();
    });
    // relative times are resolved at the moment of the switch
    this.toDiff.addEventListener('click', () => { this.toDiff.href = './?' + diffSearch(this.state, Date.now()); });
    this.load(early);
  }

  destroy() {
    this.destroyed = true;
    if (this.ctrl) this.ctrl.abort();
    if (this.early) this.early.ctrl.abort();
    this.early = undefined;
    if (this.panes) for (const k of SIDES) this.panes[k].destroy();
    this.root.remove();
  }

  popstate() {
    const prev = this.state;
    this.state = decodeCompare(location.search);
    if (!this.panes) { // not built yet: build loads the new state
      if (this.early) this.early.ctrl.abort();
      this.early = null;
      return;
    }
    if (JSON.stringify([prev.a, prev.b]) !== JSON.stringify([this.state.a, this.state.b]) || prev.sample !== this.state.sample) {
      this.load();
    } else this.applyView();
  }

  commit(push) {
    const s = encodeCompare(this.state);
    const url = location.pathname + '?' + s;
    this.toDiff.href = './?' + diffSearch(this.state, Date.now());
    if (location.search === '?' + s) return;
    if (push) history.pushState(null, '', url);
    else history.replaceState(null, '', url);
  }

  sideChanged(k, s) {
    this.state[k] = s;
    this.state.focus = '';
    this.commit(true);
    this.load();
  }

  renderScale() {
    for (const b of this.scale.children) {
      const on = b.dataset.scale === this.state.scale;
      b.classList.toggle('active', on);
      b.setAttribute('aria-pressed', String(on));
    }
  }

  setState(s) {
    this.root.dataset.state = s;
    this.root.setAttribute('aria-busy', String(s === 'loading'));
  }

  // Both sides' meta, the sample type both have, then both sides' data.
  // early: compareRequests's answer, made for this state.
  async load(early) {
    if (this.ctrl) this.ctrl.abort();
    const ctrl = early ? early.ctrl : new AbortController();
    this.ctrl = ctrl;
    const now = early ? early.now : Date.now();
    this.commit(false);
    this.renderScale();
    for (const k of SIDES) this.panes[k].render(now);
    this.setState('loading');
    this.status.textContent = '';
    let metas;
    try {
      metas = await Promise.all(SIDES.map((k, i) => this.panes[k].loadMeta(
        early ? early.sides[i].resolved : resolveSide(this.state[k], now), ctrl.signal, early && early.sides[i].meta)));
    } catch (e) {
      if (e.name === 'AbortError' || ctrl.signal.aborted) return;
      throw e;
    }
    if (ctrl.signal.aborted || this.destroyed) return;
    this.metas = metas;
    const { types, pick } = commonSampleTypes(metas, this.state.sample);
    this.sample.replaceChildren(...types.map((t) => h('option', { value: t }, t)));
    this.sample.value = pick;
    this.sample.disabled = types.length < 2;
    if (this.state.sample && pick !== this.state.sample) {
      this.status.textContent = `The sample type ${this.state.sample} is not in both sides: showing ${pick || 'none'}.`;
      this.state.sample = '';
      this.commit(false);
    } else if (metas[0] && metas[1] && !types.length) {
      this.status.textContent = 'The two sides have no sample type in common: compare profiles of one type '
        + '(each graph is drawn to its own scale).';
    }
    this.shown = pick;
    await this.loadData(early);
  }

  // early: compareRequests's answer, whose data is used where it is of the sample type shown.
  async loadData(early) {
    if (this.dataCtrl) this.dataCtrl.abort();
    const ctrl = new AbortController();
    this.dataCtrl = ctrl;
    const si = this.sample.value || this.shown || '';
    const got = await Promise.all(SIDES.map(async (k, i) => {
      const pane = this.panes[k];
      if (!this.metas || !this.metas[i]) {
        pane.flame.setState('empty');
        pane.top.setState('empty');
        pane.total.querySelector('b').textContent = '–';
        pane.total.querySelector('b').dataset.total = '';
        pane.setState(pane.msg.hidden ? 'empty' : 'error');
        return null;
      }
      pane.flame.setState('loading');
      pane.top.setState('loading');
      pane.setState('loading');
      try {
        return await pane.fetchData(si, ctrl.signal, early && early.sides[i].data);
      } catch (e) {
        if (e.name === 'AbortError' || ctrl.signal.aborted) return null;
        pane.flame.setState('error', errorText(e));
        pane.top.setState('error', errorText(e));
        pane.setState('error');
        return null;
      }
    }));
    if (ctrl.signal.aborted || this.destroyed) return;
    // each graph laid out once, at its final zoom and width (applyFocus then finds
    // nothing to change), and one pane drawn a frame after the other, so that no
    // task holds both; the first in a task after the one that built the panes (when
    // the answers were in before them, as in a new tab, that is the same task)
    this.presetView(got);
    let drawn = 0;
    for (let i = 0; i < SIDES.length; i++) {
      if (!got[i]) continue;
      if (drawn++) await nextTask();
      else if (early) await new Promise((resolve) => setTimeout(resolve, 0));
      if (ctrl.signal.aborted || this.destroyed) return;
      this.panes[SIDES[i]].show(got[i]);
      this.panes[SIDES[i]].setState('ready');
    }
    this.applyView();
    const states = SIDES.map((k) => this.panes[k].root.dataset.state);
    this.setState(states.includes('loading') ? 'loading' : states.every((s) => s === 'ready') ? 'ready' : 'partial');
  }

  // The focus's zoom and the scale's widths on the flame graphs of dataRequest's
  // answers (got: per side, or null), before they are drawn: as applyFocus and
  // applyScale will set them.
  presetView(got) {
    const totals = [];
    const units = new Set();
    SIDES.forEach((k, i) => {
      const tree = got[i] && got[i][0].data && got[i][0].data.root;
      units.add((got[i] && got[i][0].data && got[i][0].data.unit) || '');
      if (!tree) { totals.push(0); return; }
      const m = mapPath(tree, this.state.focus);
      this.panes[k].flame.setZoom(m.path);
      const n = findPath(tree, m.path);
      totals.push(n ? n.total : 0);
    });
    const shares = scaleShares(totals, this.state.scale === 'same' && units.size === 1);
    SIDES.forEach((k, i) => this.panes[k].flame.setScale(shares[i]));
  }

  // The URL's focus, search, sort and filter on both panes.
  applyView() {
    const st = this.state;
    this.renderScale();
    for (const k of SIDES) {
      const pane = this.panes[k];
      pane.flame.setSearch(st.search);
      pane.top.setView({ sort: st.sort, filter: st.filter, focus: pane.top.focus });
      pane.top.render();
    }
    this.applyFocus();
  }

  // Zooms both sides to the focus (a call path), saying on a side that lacks it where
  // it stopped; then the widths.
  applyFocus() {
    const focus = this.state.focus;
    for (const k of SIDES) {
      const pane = this.panes[k];
      if (!pane.tree) { pane.setNote(''); continue; }
      const m = mapPath(pane.tree, focus);
      pane.flame.setZoom(m.path);
      const last = focus ? focus.split(';').pop() : '';
      pane.top.setFocus(m.path.length ? m.path[m.path.length - 1] : focus.includes(';') ? '' : last);
      if (m.found) pane.setNote('');
      else {
        const at = m.path.length ? `its nearest caller here, ${m.path[m.path.length - 1]}` : 'the whole graph';
        pane.setNote(`${last} (on that call path) is not in side ${NAMES[k]}: showing ${at}.`);
      }
      pane.root.dataset.focusFound = m.found ? '1' : '0';
    }
    this.applyScale();
  }

  applyScale() {
    const totals = SIDES.map((k) => {
      const p = this.panes[k];
      if (!p.tree) return 0;
      const n = findPath(p.tree, p.flame.layout.zoomPath || []);
      return n ? n.total : 0;
    });
    // two units (heap beside goroutine) have no common scale: each side its own 100%
    const units = new Set(SIDES.map((k) => this.panes[k].unit || ''));
    const shares = scaleShares(totals, this.state.scale === 'same' && units.size === 1);
    SIDES.forEach((k, i) => {
      this.panes[k].flame.setScale(shares[i]);
      this.panes[k].flame.canvas.dataset.scale = shares[i].toFixed(4);
    });
  }

  // ---- one pane's change, applied to both

  zoomed(k, path) {
    this.state.focus = path.join(';');
    this.commit(false);
    this.applyFocus();
  }

  searched(k, q) {
    this.state.search = q;
    this.commit(false);
    for (const o of SIDES) if (o !== k) this.panes[o].flame.setSearch(q);
  }

  sorted(k, s) {
    this.state.sort = s;
    this.commit(false);
    for (const o of SIDES) if (o !== k) { this.panes[o].top.sort = s; this.panes[o].top.render(); }
  }

  filtered(k, f) {
    this.state.filter = f;
    this.commit(false);
    for (const o of SIDES) {
      if (o === k) continue;
      const t = this.panes[o].top;
      t.setView({ sort: t.sort, filter: f, focus: t.focus });
      t.render();
    }
  }

  // A row clicked in a top table: both sides search for that function and zoom to it
  // where there is one path to it.
  focusedName(k, name) {
    const search = '^' + escapeRegExp(name) + '$';
    this.state.search = search;
    this.state.focus = name;
    this.commit(false);
    for (const o of SIDES) this.panes[o].flame.setSearch(search);
    this.applyFocus();
  }
}

// Mounts the page in main; returns {destroy(), popstate()} for the router.
export function mountCompare(main) {
  return new ComparePage(main);
}
