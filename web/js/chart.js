// The values chart above the timeline's lanes: one line per series (or per group of a
// label) of a sample type's total per profile, read from profd's Prometheus-compatible
// endpoint (/prometheus/api/v1). The pure helpers (metric names, selector rewriting,
// decimation, point lookup, brush ranges, the value axis) come first and run in node;
// the Chart class draws on a canvas that shares the timeline's time window and zoom.

import { formatTime, formatValue } from './format.js';
import {
  formatLabels, seriesSelector, timeTicks, lowerBound, upperBound, escapeHtml, TouchTip,
} from './timeline.js';

// ---------------------------------------------------------------- names

// A name as the Prometheus endpoint writes it: every character outside [a-zA-Z0-9_]
// becomes '_'.
export function promName(s) {
  return String(s).replace(/[^a-zA-Z0-9_]/g, '_');
}

// The metric of a profile type's sample type: heap, inuse_space, bytes →
// heap_inuse_space_bytes.
export function metricName(profileType, sampleType, unit) {
  return promName(`${profileType}_${sampleType}_${unit}`);
}

// Sample types preferred as the chart's first choice, as pprof's default sample types
// of Go's profiles; else the first listed.
const PREFERRED = ['inuse_space_bytes', 'cpu_nanoseconds', 'delay_nanoseconds',
  'contentions_count', 'goroutine_count', 'threadcreate_count', 'alloc_space_bytes'];

// The default sample type of profile types whose pprof files name one other than
// PREFERRED's first, so that the chart opens on what the profile view shows first.
const TYPE_DEFAULT = { allocs: 'alloc_space_bytes' };

// Profile types in the order the chart prefers to open on, CPU first; others after
// them in name order.
const TYPE_ORDER = ['profile', 'process_cpu', 'cpu', 'wall', 'heap', 'memory', 'allocs', 'goroutine',
  'mutex', 'block', 'threadcreate'];

// The profile type the chart shows first among types: CPU when there is one.
export function preferredType(types) {
  const rank = (t) => { const i = TYPE_ORDER.indexOf(t); return i < 0 ? TYPE_ORDER.length : i; };
  return [...types].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0))[0];
}

// The chart's choices for one profile type among the endpoint's metric names:
// [{metric, profileType, label, unit, perSecond}] in name order, label being the part
// after the type ("inuse_space_bytes", "cpu_nanoseconds_per_second"); unit the pprof
// unit for formatting ("bytes", "nanoseconds", "count").
export function sampleChoices(profileType, names) {
  const prefix = promName(profileType) + '_';
  const out = [];
  for (const n of [...(names || [])].sort()) {
    if (!n.startsWith(prefix) || n.length === prefix.length) continue;
    const label = n.slice(prefix.length);
    const perSecond = label.endsWith('_per_second');
    const base = perSecond ? label.slice(0, -'_per_second'.length) : label;
    const unit = base.includes('_') ? base.slice(base.lastIndexOf('_') + 1) : base;
    out.push({ metric: n, profileType, label, unit, perSecond });
  }
  return out;
}

// The default choice of a list: the profile view's sample type (name, e.g.
// "inuse_space") when one matches, else a preferred one, else the first; null for none.
export function defaultChoice(choices, sampleType) {
  const plain = choices.filter((c) => !c.perSecond);
  if (sampleType) {
    const want = promName(sampleType) + '_';
    const c = plain.find((x) => x.label.startsWith(want) && !x.label.slice(want.length).includes('_'));
    if (c) return c;
  }
  // a type whose profiles name another default (Go's allocs profile: alloc_space)
  const own = plain.length && TYPE_DEFAULT[plain[0].profileType];
  if (own) {
    const c = plain.find((x) => x.label === own);
    if (c) return c;
  }
  for (const p of PREFERRED) {
    const c = plain.find((x) => x.label === p);
    if (c) return c;
  }
  return plain[0] || choices[0] || null;
}

// ---------------------------------------------------------------- selectors

// The matchers of a selector, split: {name, matchers: ['job="x"', …]} where name is
// the metric name before the braces or of a __name__="…" matcher ('' when none), and
// matchers are the matchers on other labels, as typed. Throws on text that is no
// selector.
export function splitSelector(text) {
  const s = String(text || '').trim();
  let i = 0;
  let name = '';
  const m = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(s);
  if (m) { name = m[0]; i = m[0].length; }
  while (s[i] === ' ') i++;
  const matchers = [];
  if (i === s.length) {
    if (!name) throw new Error('empty selector');
    return { name, matchers };
  }
  if (s[i] !== '{' || s[s.length - 1] !== '}') throw new Error(`not a selector: ${s}`);
  const body = s.slice(i + 1, -1);
  let cur = '';
  let quote = '';
  for (let j = 0; j < body.length; j++) {
    const c = body[j];
    if (quote) {
      cur += c;
      if (c === '\\' && j + 1 < body.length) cur += body[++j];
      else if (c === quote) quote = '';
    } else if (c === '"' || c === "'" || c === '`') {
      quote = c;
      cur += c;
    } else if (c === ',') {
      if (cur.trim()) matchers.push(cur.trim());
      cur = '';
    } else cur += c;
  }
  if (quote) throw new Error(`unterminated quote in ${s}`);
  if (cur.trim()) matchers.push(cur.trim());
  const rest = [];
  for (const x of matchers) {
    const nm = /^__name__\s*=\s*(["'`])((?:[^\\]|\\.)*?)\1$/.exec(x);
    if (nm && !name) name = nm[2].replace(/\\(.)/g, '$1');
    // every matcher on the name goes: the metric replaces it
    if (!/^__name__\s*(=|!=|=~|!~)/.test(x)) rest.push(x);
  }
  return { name, matchers: rest };
}

// The selector with its metric name (or __name__ matcher) replaced by name:
// ('heap{job="x"}', 'heap_inuse_space_bytes') → 'heap_inuse_space_bytes{job="x"}';
// extra: more matchers to add ('instance="a"').
export function withMetric(selector, name, extra = []) {
  const { matchers } = splitSelector(selector);
  const all = matchers.concat(extra);
  return all.length ? `${name}{${all.join(', ')}}` : name;
}

// A Prometheus duration of ms milliseconds ("3600000ms"), at least 1ms.
export function promDuration(ms) {
  return Math.max(1, Math.ceil(ms)) + 'ms';
}

// The step (seconds) of a grouped query_range over [from, to] ms drawn on width
// pixels: one evaluation per pixel column or coarser, at least one second.
export function stepFor(from, to, width) {
  return Math.max(1, Math.ceil((to - from) / Math.max(1, width) / 1000));
}

// The PromQL the chart runs. group: a label name or ''. Ungrouped: an instant query of
// a range selector at `to`, which returns every profile's exact (timestamp, value);
// grouped: sum by (group) over query_range, evaluated every `step` seconds.
export function chartRequest(selector, metric, from, to, width, group) {
  const sel = withMetric(selector, metric);
  if (!group) {
    return { path: 'query', params: { query: `${sel}[${promDuration(to - from)}]`, time: to / 1000 } };
  }
  const step = stepFor(from, to, width);
  return {
    path: 'query_range',
    params: { query: `sum by (${group}) (${sel})`, start: from / 1000, end: to / 1000, step },
    step: step * 1000,
  };
}

// The chart's lines from a Prometheus matrix: [{labels, ts: [ms], vs: [number]}],
// labels being those of the answer (__name__ dropped). NaN and ±Inf stay (not drawn).
export function linesOf(matrix) {
  const out = [];
  for (const r of matrix || []) {
    const labels = { ...(r.metric || {}) };
    delete labels.__name__;
    const vals = r.values || [];
    const ts = new Array(vals.length);
    const vs = new Array(vals.length);
    for (let i = 0; i < vals.length; i++) {
      ts[i] = Math.round(Number(vals[i][0]) * 1000);
      vs[i] = Number(vals[i][1]);
    }
    out.push({ labels, ts, vs });
  }
  return out;
}

// The profile series (its exact selector) of a line of an ungrouped chart.
export function profileSeriesOf(line, profileType) {
  return seriesSelector({ ...line.labels, __name__: profileType });
}

// What a click on a grouped line's point at t opens. series: the timeline's series
// ({labels, ts}) of the chart's profile type; the point's value is the sum, over the
// group's series, of each one's latest profile at or before t within lookback ms.
// Returns {mode:'single', query, time} when one profile made the point,
// {mode:'merge', query, start, end} over those profiles when several did (query: the
// group's selector), or null when none did.
export function groupPointRequest(selector, profileType, group, value, series, t, lookback = 300e3) {
  const hits = [];
  for (const s of series) {
    if (s.labels.__name__ !== profileType) continue;
    if ((s.labels[group] || '') !== (value || '')) continue;
    const i = upperBound(s.ts, t) - 1;
    if (i >= 0 && s.ts[i] > t - lookback) hits.push({ s, t: s.ts[i] });
  }
  if (!hits.length) return null;
  if (hits.length === 1) return { mode: 'single', query: seriesSelector(hits[0].s.labels), time: hits[0].t };
  let start = hits[0].t;
  for (const h of hits) start = Math.min(start, h.t);
  const extra = [`${group}=${JSON.stringify(value || '')}`];
  return { mode: 'merge', query: withMetric(selector, profileType, extra), start, end: t };
}

// A brush from pixel x0 to x1 over the window [vf, vt] drawn on width pixels (x from
// the plot's left edge), as whole milliseconds inside the window: {start, end}.
export function brushRange(x0, x1, vf, vt, width) {
  const k = (vt - vf) / width;
  const a = Math.max(0, Math.min(width, Math.min(x0, x1)));
  const b = Math.max(0, Math.min(width, Math.max(x0, x1)));
  return { start: Math.floor(vf + a * k), end: Math.ceil(vf + b * k) };
}

// The point nearest to (x, y) in pixels over the lines' points in the window, within
// maxDist: {line, index, t, v, x, y} or null. toX(t), toY(v) map to pixels.
export function nearestPoint(lines, x, y, toX, toY, xToT, maxDist) {
  const t0 = xToT(x - maxDist);
  const t1 = xToT(x + maxDist);
  let best = null;
  let bestD = maxDist * maxDist;
  for (let l = 0; l < lines.length; l++) {
    const { ts, vs } = lines[l];
    const end = upperBound(ts, t1);
    for (let i = lowerBound(ts, t0); i < end; i++) {
      if (!Number.isFinite(vs[i])) continue;
      const dx = toX(ts[i]) - x;
      const dy = toY(vs[i]) - y;
      const d = dx * dx + dy * dy;
      if (d <= bestD) {
        bestD = d;
        best = { line: l, index: i, t: ts[i], v: vs[i], x: toX(ts[i]), y: toY(vs[i]) };
      }
    }
  }
  return best;
}

// The largest finite value of the lines' points in [from, to] (0 when none).
export function maxValue(lines, from, to) {
  let m = 0;
  for (const { ts, vs } of lines) {
    const end = upperBound(ts, to);
    for (let i = lowerBound(ts, from); i < end; i++) if (vs[i] > m && Number.isFinite(vs[i])) m = vs[i];
  }
  return m;
}

// Value axis ticks from 0 to at least max, about n of them, on 1/2/5 steps
// (or powers of two of 1024 for bytes): {top, ticks: [values]}.
export function valueTicks(max, n = 4, bytes = false) {
  if (!(max > 0)) return { top: 1, ticks: [0, 1] };
  const raw = max / n;
  let step;
  if (bytes && raw >= 1024) {
    const p = 1024 ** Math.floor(Math.log(raw) / Math.log(1024));
    step = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024].map((k) => k * p).find((s) => s >= raw);
  } else {
    const p = 10 ** Math.floor(Math.log10(raw));
    step = [1, 2, 5, 10].map((k) => k * p).find((s) => s >= raw);
  }
  const top = Math.ceil(max / step) * step;
  const ticks = [];
  for (let v = 0; v <= top + step / 2; v += step) ticks.push(v);
  return { top, ticks };
}

// The points of one line in [from, to] reduced to at most four per pixel column
// (first, min, max, last, in time order), as x, y pixel pairs appended to out (a flat
// array); a NaN value breaks the line (NaN pair). toX and toY map to pixels. One point
// either side of the window is kept, so the line runs to the plot's edges.
export function decimate(ts, vs, from, to, toX, toY, out = []) {
  const lo = Math.max(0, lowerBound(ts, from) - 1);
  const hi = Math.min(ts.length, upperBound(ts, to) + 1);
  let col = NaN;
  let first = -1;
  let min = -1;
  let max = -1;
  let last = -1;
  const put = (i) => { out.push(toX(ts[i]), toY(vs[i])); };
  const flush = () => {
    if (first < 0) return;
    put(first);
    // min and max in time order, each once, then the last
    const a = min < max ? min : max;
    const b = min < max ? max : min;
    if (a !== first && a !== last) put(a);
    if (b !== first && b !== last && b !== a) put(b);
    if (last !== first) put(last);
    first = -1;
  };
  for (let i = lo; i < hi; i++) {
    const v = vs[i];
    if (!Number.isFinite(v)) { flush(); out.push(NaN, NaN); col = NaN; continue; }
    const c = Math.floor(toX(ts[i]));
    if (c !== col) {
      flush();
      col = c;
      first = min = max = last = i;
    } else {
      if (v < vs[min]) min = i;
      if (v > vs[max]) max = i;
      last = i;
    }
  }
  flush();
  return out;
}

// Draws a line's points ts, vs in the window [from, to] into a 32-bit pixel buffer
// w × h as one-pixel-wide vertical spans per column: each segment fills, in every
// column it crosses, the rows between its heights at the column's edges, so a time
// series (x only grows) is a line without gaps. m maps to pixels: x = m.ax + m.bx·t,
// y = m.ay + m.by·v. A NaN value breaks the line. It costs a few operations per point
// and per pixel filled, whatever the number of points per column (no decimation).
export function rasterLine(px, w, h, ts, vs, from, to, m, color) {
  const lo = Math.max(0, lowerBound(ts, from) - 1);
  const hi = Math.min(ts.length, upperBound(ts, to) + 1);
  const { ax, bx, ay, by } = m;
  let x0 = NaN;
  let y0 = NaN;
  for (let i = lo; i < hi; i++) {
    const v = vs[i];
    if (!Number.isFinite(v)) { x0 = NaN; continue; }
    const x1 = ax + bx * ts[i];
    const y1 = ay + by * v;
    if (x0 !== x0) { // the first point after a break: a dot
      const cx = Math.floor(x1);
      if (cx >= 0 && cx < w) span(px, w, h, cx, y1, y1, color);
    } else {
      const ca = Math.floor(x0);
      const cb = Math.floor(x1);
      if (ca === cb) {
        if (ca >= 0 && ca < w) span(px, w, h, ca, y0, y1, color);
      } else {
        const k = (y1 - y0) / (x1 - x0);
        const c0 = Math.max(0, ca);
        const c1 = Math.min(w - 1, cb);
        for (let cx = c0; cx <= c1; cx++) {
          // the segment's heights where it enters and leaves column cx
          const ya = cx === ca ? y0 : y0 + k * (cx - x0);
          const yb = cx === cb ? y1 : y0 + k * (cx + 1 - x0);
          span(px, w, h, cx, ya, yb, color);
        }
      }
    }
    x0 = x1;
    y0 = y1;
  }
}

function span(px, w, h, cx, ya, yb, color) {
  let r0 = Math.floor(ya < yb ? ya : yb);
  let r1 = Math.floor(ya < yb ? yb : ya);
  if (r1 < 0 || r0 >= h) return;
  if (r0 < 0) r0 = 0;
  if (r1 >= h) r1 = h - 1;
  for (let o = r0 * w + cx, end = r1 * w + cx; o <= end; o += w) px[o] = color;
}

// A CSS colour '#rrggbb' as a pixel of a little-endian RGBA buffer with alpha a (0-255).
export function pixelOf(hex, a = 255) {
  const n = parseInt(hex.slice(1), 16);
  return (((a << 24) | ((n & 0xff) << 16) | (n & 0xff00) | ((n >> 16) & 0xff)) >>> 0);
}

// ---------------------------------------------------------------- drawing

const PAD_X = 14; // as the timeline's, so both share their x
const CHART_H = 170;
const PAD_TOP = 16;
const PAD_BOTTOM = 6;
const HIT_PX = 8;
const DENSE_POINTS = 50000; // points in the window above which lines are rasterised
const LEGEND_MAX = 50; // legend entries drawn; the rest are counted
const PALETTE_LIGHT = ['#2f6fd6', '#d6336c', '#2b8a3e', '#e8590c', '#7048e8', '#0c8599',
  '#c2255c', '#5c940d', '#1864ab', '#a61e4d'];
const PALETTE_DARK = ['#6ea2f7', '#f783ac', '#69db7c', '#ffa94d', '#b197fc', '#66d9e8',
  '#faa2c1', '#a9e34b', '#74c0fc', '#ffc9c9'];

function cssVar(style, name, fallback) {
  const v = style.getPropertyValue(name).trim();
  return v || fallback;
}

// The chart in its element (the timeline's .tl-chart). handlers:
//   onPoint(point, event)  a point was clicked: {line, index, t, v}
//   onBrush({start, end})  a range was dragged
//   onCommand(act)         a key asked the shared window to pan or zoom (timeline
//                          commands: 'pan-left', 'zoom-in', …)
//   onZoom(anchorT, factor) ctrl+wheel over the chart
// The chart's window follows setWindow (the timeline's visible window).
export class Chart {
  constructor(root, handlers = {}) {
    this.root = root;
    this.h = handlers;
    this.lines = [];
    this.all = [];
    this.hiddenTitles = new Set();
    this.unit = '';
    this.perSecond = false;
    this.vf = 0;
    this.vt = 0;
    this.width = 0;
    this.height = CHART_H;
    this.dpr = 1;
    this.frame = 0;
    this.hover = null;
    this.drag = null;
    this.picks = [];
    this.build();
    this.setState('idle');
  }

  build() {
    const root = this.root;
    root.innerHTML = `
      <div class="ch-wrap" tabindex="0" role="img"
           aria-label="Values chart: click a point to open that profile, drag to merge a range; arrow keys pan, + and - zoom">
        <canvas class="ch-canvas"></canvas>
        <div class="ch-overlay" hidden></div>
        <div class="tl-tooltip ch-tooltip" hidden></div>
      </div>
      <div class="ch-legend" role="group" aria-label="The chart's series: click one to hide or show it, shift-click to show it alone"></div>
      <div class="sr-only"><table class="ch-table"><caption>Values per series</caption>
        <thead><tr><th scope="col">series</th><th scope="col">points</th><th scope="col">latest</th><th scope="col">min</th><th scope="col">max</th></tr></thead>
        <tbody></tbody></table></div>`;
    this.wrap = root.querySelector('.ch-wrap');
    this.canvas = root.querySelector('canvas');
    this.overlay = root.querySelector('.ch-overlay');
    this.tooltip = root.querySelector('.ch-tooltip');
    this.table = root.querySelector('.ch-table tbody');
    this.legend = root.querySelector('.ch-legend');
    this.legend.addEventListener('click', (e) => {
      const b = e.target.closest('button');
      if (!b) return;
      if (b.dataset.act === 'all') this.showOnly(null);
      else if (e.shiftKey) this.showOnly(b.dataset.title);
      else this.toggleLine(b.dataset.title);
    });
    root.profdPoints = () => this.visiblePoints();
    this.onResize = () => this.resize();
    if (typeof ResizeObserver !== 'undefined') {
      this.ro = new ResizeObserver(this.onResize);
      this.ro.observe(this.wrap);
    }
    const c = this.canvas;
    c.addEventListener('pointerdown', (e) => this.pointerDown(e));
    c.addEventListener('pointermove', (e) => this.pointerMove(e));
    c.addEventListener('pointerup', (e) => this.pointerUp(e));
    c.addEventListener('pointercancel', () => { this.drag = null; this.redraw(); });
    const hideTip = () => { this.hover = null; this.tooltip.hidden = true; this.redraw(); };
    this.touchTip = new TouchTip(c, this.tooltip, hideTip);
    c.addEventListener('pointerleave', () => {
      if (!this.drag && !this.touchTip.pinned) hideTip();
    });
    c.addEventListener('wheel', (e) => {
      if (!(e.ctrlKey || e.metaKey) || this.state !== 'ready') return;
      e.preventDefault();
      const dy = e.deltaMode === 1 ? e.deltaY * 16 : e.deltaY;
      const [x] = this.localXY(e);
      if (this.h.onZoom) this.h.onZoom(this.xToT(x), Math.pow(2, Math.max(-1, Math.min(1, dy / 200))));
    }, { passive: false });
    this.wrap.addEventListener('keydown', (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const map = { ArrowLeft: 'pan-left', ArrowRight: 'pan-right', '+': 'zoom-in', '=': 'zoom-in',
        '-': 'zoom-out', 0: 'reset' };
      if (map[e.key] && this.h.onCommand) { e.preventDefault(); this.h.onCommand(map[e.key]); }
    });
  }

  destroy() {
    if (this.ro) this.ro.disconnect();
    this.touchTip.destroy();
    if (this.frame) cancelAnimationFrame(this.frame);
    delete this.root.profdPoints;
  }

  setState(state, message) {
    this.state = state;
    this.root.dataset.state = state;
    if (state === 'loading') this.showOverlay('<div class="spinner" aria-hidden="true"></div>', true);
    else if (state === 'error' || state === 'empty') this.showOverlay(message || '', false);
    else this.overlay.hidden = true;
    this.wrap.classList.toggle('is-loading', state === 'loading');
  }

  showOverlay(content, html) {
    if (html) this.overlay.innerHTML = content;
    else {
      const p = document.createElement('p');
      p.className = this.state === 'error' ? 'error-text' : 'muted';
      p.textContent = content;
      this.overlay.replaceChildren(p);
    }
    this.overlay.hidden = false;
  }

  setLoading() {
    this.setState('loading');
  }

  setError(message) {
    this.lines = [];
    this.all = [];
    this.renderLegend();
    this.updateCounts();
    this.setState('error', message);
    this.redraw();
  }

  setEmpty(message) {
    this.lines = [];
    this.all = [];
    this.renderLegend();
    this.updateCounts();
    this.setState('empty', message);
    this.redraw();
  }

  // The colour of the line of value under the chart's group-by label (a CSS colour of
  // the theme shown), or '' when the chart is not grouped by label or has no such line:
  // the profile view marks its groups with it.
  groupColor(label, value) {
    if (!this.group || this.group !== label) return '';
    const line = (this.all || this.lines).find((l) => (l.labels[label] || '') === value);
    if (!line) return '';
    const palette = document.documentElement.dataset.theme === 'dark' ? PALETTE_DARK : PALETTE_LIGHT;
    return palette[line.color % palette.length];
  }

  // lines: linesOf's; opts: {unit, perSecond, group, metric, step (grouped: ms)}.
  setData(lines, opts = {}) {
    this.all = lines.map((l, i) => ({ ...l, title: formatLabels(l.labels), color: i }));
    // series hidden from the legend stay hidden while they are in the data
    const titles = new Set(this.all.map((l) => l.title));
    for (const t of [...this.hiddenTitles]) if (!titles.has(t)) this.hiddenTitles.delete(t);
    this.lines = this.all.filter((l) => !this.hiddenTitles.has(l.title));
    this.renderLegend();
    this.unit = opts.unit || '';
    this.perSecond = !!opts.perSecond;
    this.group = opts.group || '';
    this.step = opts.step || 0;
    this.root.dataset.metric = opts.metric || '';
    this.root.dataset.group = this.group;
    this.updateCounts();
    this.fillTable();
    this.setState(this.lines.length ? 'ready' : 'empty', this.lines.length ? '' : 'No values in this range');
    this.resize();
  }

  // Hides or shows the line of title (the legend's click).
  toggleLine(title) {
    if (this.hiddenTitles.has(title)) this.hiddenTitles.delete(title);
    else this.hiddenTitles.add(title);
    this.applyHidden();
  }

  // Shows the line of title alone, or every line (title null, or when it is already
  // the only one shown).
  showOnly(title) {
    const alone = title != null && this.lines.length === 1 && this.lines[0].title === title;
    this.hiddenTitles.clear();
    if (title != null && !alone) for (const l of this.all) if (l.title !== title) this.hiddenTitles.add(l.title);
    this.applyHidden();
  }

  applyHidden() {
    this.lines = this.all.filter((l) => !this.hiddenTitles.has(l.title));
    this.root.dataset.shown = String(this.lines.length);
    this.hover = null;
    this.tooltip.hidden = true;
    this.renderLegend();
    this.redraw();
  }

  // The legend: a swatch and the labels of each line (the first LEGEND_MAX), pressed
  // while the line is shown.
  renderLegend() {
    const all = this.all || [];
    if (all.length < 1) { this.legend.innerHTML = ''; return; }
    const palette = document.documentElement.dataset.theme === 'dark' ? PALETTE_DARK : PALETTE_LIGHT;
    this.legendTheme = document.documentElement.dataset.theme || '';
    const items = all.slice(0, LEGEND_MAX).map((l) => {
      const on = !this.hiddenTitles.has(l.title);
      return `<button type="button" class="ch-key${on ? '' : ' off'}" data-title="${escapeHtml(l.title)}" aria-pressed="${on}" ` +
        `title="${escapeHtml(l.title)}: click to ${on ? 'hide' : 'show'}, shift-click to show it alone">` +
        `<i style="background:${palette[l.color % palette.length]}"></i><span>${escapeHtml(l.title)}</span></button>`;
    });
    if (all.length > LEGEND_MAX) items.push(`<span class="muted">+${all.length - LEGEND_MAX} more</span>`);
    if (this.hiddenTitles.size) items.push('<button type="button" class="ch-key ch-all" data-act="all">Show all</button>');
    this.legend.innerHTML = items.join('');
  }

  updateCounts() {
    let n = 0;
    for (const l of this.all || this.lines) n += l.ts.length;
    this.root.dataset.series = String((this.all || this.lines).length);
    this.root.dataset.shown = String(this.lines.length);
    this.root.dataset.points = String(n);
  }

  // The screen readers' view: per line its number of points, latest, least and
  // largest value (the first 100 lines).
  fillTable() {
    const rows = [];
    for (const l of this.lines.slice(0, 100)) {
      let min = Infinity;
      let max = -Infinity;
      for (const v of l.vs) { if (v < min) min = v; if (v > max) max = v; }
      const last = l.vs.length ? l.vs[l.vs.length - 1] : NaN;
      rows.push(`<tr><th scope="row">${escapeHtml(l.title)}</th><td>${l.ts.length}</td>` +
        `<td>${escapeHtml(this.fmt(last))}</td><td>${escapeHtml(this.fmt(min))}</td><td>${escapeHtml(this.fmt(max))}</td></tr>`);
    }
    this.table.innerHTML = rows.join('');
  }

  fmt(v, opts) {
    if (!Number.isFinite(v)) return 'n/a';
    const s = formatValue(v, this.unit, opts);
    return this.perSecond ? s + '/s' : s;
  }

  // What is open, as the timeline's picks (app.js's picksOf): [{t, tag}] for single
  // profiles, drawn as a line at t; [{start, end, tag}] for ranges, shaded.
  setPicks(picks) {
    this.picks = picks || [];
    this.redraw();
  }

  // The visible window, as the timeline's.
  setWindow(vf, vt) {
    if (vf === this.vf && vt === this.vt) return;
    this.vf = vf;
    this.vt = vt;
    this.redraw();
  }

  resize() {
    const w = Math.max(100, Math.floor(this.wrap.clientWidth));
    const dpr = window.devicePixelRatio || 1;
    if (w !== this.width || dpr !== this.dpr) {
      this.width = w;
      this.dpr = dpr;
      this.canvas.style.width = w + 'px';
      this.canvas.style.height = this.height + 'px';
      this.canvas.width = Math.round(w * dpr);
      this.canvas.height = Math.round(this.height * dpr);
    }
    this.redraw();
  }

  plotWidth() {
    return Math.max(1, this.width - 2 * PAD_X);
  }

  tToX(t) {
    return PAD_X + ((t - this.vf) * this.plotWidth()) / (this.vt - this.vf);
  }

  xToT(x) {
    return this.vf + ((x - PAD_X) * (this.vt - this.vf)) / this.plotWidth();
  }

  vToY(v) {
    const h = this.height - PAD_TOP - PAD_BOTTOM;
    return PAD_TOP + h - (v / (this.top || 1)) * h;
  }

  // Every point in the window, in client coordinates (the browser tests' hook):
  // [{line, index, t, v, x, y, series}] (series: the line's label set as printed).
  visiblePoints() {
    if (this.state !== 'ready') return [];
    const r = this.canvas.getBoundingClientRect();
    this.scaleY();
    const out = [];
    this.lines.forEach((l, li) => {
      const end = upperBound(l.ts, this.vt);
      for (let i = lowerBound(l.ts, this.vf); i < end; i++) {
        if (!Number.isFinite(l.vs[i])) continue;
        out.push({ line: li, index: i, t: l.ts[i], v: l.vs[i], series: l.title,
          x: r.left + this.tToX(l.ts[i]), y: r.top + this.vToY(l.vs[i]) });
      }
    });
    return out;
  }

  scaleY() {
    const max = maxValue(this.lines, this.vf, this.vt);
    const vt = valueTicks(max, 4, this.unit === 'bytes');
    this.top = vt.top;
    return vt.ticks;
  }

  // ------------------------------------------------------------ input

  localXY(e) {
    const r = this.canvas.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  }

  pointAt(x, y) {
    return nearestPoint(this.lines, x, y, (t) => this.tToX(t), (v) => this.vToY(v),
      (px) => this.xToT(px), HIT_PX);
  }

  pointerDown(e) {
    if (this.state !== 'ready' || e.button !== 0) return;
    const [x, y] = this.localXY(e);
    this.drag = { x0: x, y0: y, x, moved: false };
    this.canvas.setPointerCapture(e.pointerId);
    this.wrap.focus({ preventScroll: true });
    e.preventDefault();
  }

  pointerMove(e) {
    const [x, y] = this.localXY(e);
    if (this.drag) {
      this.drag.x = x;
      if (Math.abs(x - this.drag.x0) > 4) this.drag.moved = true;
      this.tooltip.hidden = true;
      this.redraw();
      return;
    }
    this.hoverAt(x, y);
  }

  pointerUp(e) {
    const d = this.drag;
    if (!d) return;
    this.drag = null;
    if (this.canvas.hasPointerCapture(e.pointerId)) this.canvas.releasePointerCapture(e.pointerId);
    const [x, y] = this.localXY(e);
    if (!d.moved) {
      const p = this.pointAt(x, y);
      if (p && this.h.onPoint) this.h.onPoint({ ...p, labels: this.lines[p.line].labels }, e);
      this.hoverAt(x, y);
      this.touchTip.tapped(e, !this.tooltip.hidden);
      return;
    }
    const r = brushRange(d.x0 - PAD_X, x - PAD_X, this.vf, this.vt, this.plotWidth());
    this.redraw();
    if (r.end > r.start && this.h.onBrush) this.h.onBrush(r);
  }

  hoverAt(x, y) {
    if (this.state !== 'ready') return;
    const p = this.pointAt(x, y);
    this.hover = { x, p };
    this.canvas.style.cursor = p ? 'pointer' : 'crosshair';
    if (!p) {
      this.tooltip.hidden = true;
    } else {
      const l = this.lines[p.line];
      this.tooltip.innerHTML = `<div class="tt-time">${escapeHtml(formatTime(p.t))}</div>` +
        `<div class="tt-series">${escapeHtml(l.title)}</div>` +
        `<div class="tt-value">${escapeHtml(this.fmt(p.v))}</div>` +
        `<div class="tt-note">${this.group ? 'click: open the profiles of this group here' : 'click: open this profile'} · drag: merge a range</div>`;
      this.tooltip.hidden = false;
      const tw = this.tooltip.offsetWidth;
      this.tooltip.style.left = (x + 14 + tw > this.width ? Math.max(0, x - 14 - tw) : x + 14) + 'px';
      this.tooltip.style.top = Math.max(0, Math.min(this.height - this.tooltip.offsetHeight, y + 12)) + 'px';
    }
    this.redraw();
  }

  // ------------------------------------------------------------ paint

  redraw() {
    if (this.frame || typeof requestAnimationFrame === 'undefined') return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.paint();
    });
  }

  paint() {
    const ctx = this.canvas.getContext('2d');
    if (!ctx || !this.width) return;
    const style = getComputedStyle(this.root);
    const dark = document.documentElement.dataset.theme === 'dark';
    const palette = dark ? PALETTE_DARK : PALETTE_LIGHT;
    if ((document.documentElement.dataset.theme || '') !== this.legendTheme) this.renderLegend();
    const col = {
      bg: cssVar(style, '--tl-bg', '#fff'),
      grid: cssVar(style, '--tl-grid', '#e3e6ea'),
      muted: cssVar(style, '--muted', '#69717d'),
      hover: cssVar(style, '--tl-hover', '#e8590c'),
      sel: cssVar(style, '--tl-sel', 'rgba(47,111,214,0.15)'),
      range: cssVar(style, '--tl-range', 'rgba(232,89,12,0.13)'),
      pick: cssVar(style, '--tl-pick', '#e8590c'),
      a: cssVar(style, '--diff-a', '#2f6fd6'),
      b: cssVar(style, '--diff-b', '#d6336c'),
      selLine: cssVar(style, '--tl-sel-line', 'rgba(47,111,214,0.7)'),
    };
    const sans = cssVar(style, '--sans', 'system-ui, sans-serif');
    const W = this.width;
    const H = this.height;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.fillStyle = col.bg;
    ctx.fillRect(0, 0, W, H);
    if (this.state !== 'ready' || !(this.vt > this.vf)) return;
    const yTicks = this.scaleY();
    // grid: the timeline's time ticks, and the value ticks
    ctx.fillStyle = col.grid;
    for (const tk of timeTicks(this.vf, this.vt, this.plotWidth()).ticks) ctx.fillRect(Math.round(PAD_X + tk.x), 0, 1, H);
    for (const v of yTicks) ctx.fillRect(PAD_X, Math.round(this.vToY(v)), W - 2 * PAD_X, 1);
    // what is open: merged ranges shaded, single profiles as a line
    for (const p of this.picks) {
      const c = p.tag === 'A' ? col.a : p.tag === 'B' ? col.b : col.pick;
      if (p.start != null && p.end >= this.vf && p.start <= this.vt) {
        const x0 = this.tToX(Math.max(p.start, this.vf));
        const x1 = this.tToX(Math.min(p.end, this.vt));
        ctx.fillStyle = col.range;
        ctx.fillRect(x0, 0, Math.max(1, x1 - x0), H);
      } else if (p.t != null && p.t >= this.vf && p.t <= this.vt) {
        ctx.fillStyle = c;
        ctx.fillRect(Math.round(this.tToX(p.t)) - 1, 0, 2, H);
      }
    }
    // lines: one path per colour, points reduced to four per pixel column
    ctx.save();
    ctx.beginPath();
    ctx.rect(PAD_X, 0, W - 2 * PAD_X, H);
    ctx.clip();
    const toX = (t) => this.tToX(t);
    const toY = (v) => this.vToY(v);
    let inWindow = 0;
    for (const l of this.lines) inWindow += upperBound(l.ts, this.vt) - lowerBound(l.ts, this.vf);
    if (inWindow > DENSE_POINTS) this.paintDense(ctx, palette);
    else this.paintPaths(ctx, palette, toX, toY);
    // the brush
    if (this.drag && this.drag.moved) {
      const x0 = Math.min(this.drag.x0, this.drag.x);
      const x1 = Math.max(this.drag.x0, this.drag.x);
      ctx.fillStyle = col.sel;
      ctx.fillRect(x0, 0, x1 - x0, H);
      ctx.fillStyle = col.selLine;
      ctx.fillRect(Math.round(x0), 0, 1, H);
      ctx.fillRect(Math.round(x1), 0, 1, H);
    }
    // hover
    const hv = this.hover;
    if (hv && !this.drag) {
      ctx.fillStyle = col.muted;
      ctx.globalAlpha = 0.5;
      ctx.fillRect(Math.round(hv.p ? hv.p.x : hv.x), 0, 1, H);
      ctx.globalAlpha = 1;
      if (hv.p) {
        ctx.beginPath();
        ctx.arc(hv.p.x, hv.p.y, 4, 0, 2 * Math.PI);
        ctx.fillStyle = col.hover;
        ctx.fill();
      }
    }
    ctx.restore();
    // value labels over the grid, at the left
    ctx.font = `10.5px ${sans}`;
    ctx.textBaseline = 'bottom';
    for (const v of yTicks) {
      if (v === 0) continue;
      const y = Math.round(this.vToY(v));
      if (y < 10) continue;
      const s = this.fmt(v);
      const tw = ctx.measureText(s).width;
      ctx.fillStyle = col.bg;
      ctx.globalAlpha = 0.8;
      ctx.fillRect(PAD_X + 1, y - 12, tw + 4, 11);
      ctx.globalAlpha = 1;
      ctx.fillStyle = col.muted;
      ctx.fillText(s, PAD_X + 3, y - 1);
    }
    ctx.fillStyle = col.grid;
    ctx.fillRect(0, H - 1, W, 1);
  }

  // Lines as anti-aliased strokes, one path per colour (few points).
  paintPaths(ctx, palette, toX, toY) {
    const paths = palette.map(() => new Path2D());
    const dots = palette.map(() => new Path2D());
    const buf = [];
    for (const l of this.lines) {
      buf.length = 0;
      decimate(l.ts, l.vs, this.vf, this.vt, toX, toY, buf);
      const p = paths[l.color % palette.length];
      let pen = false;
      for (let i = 0; i < buf.length; i += 2) {
        const x = buf[i];
        if (Number.isNaN(x)) { pen = false; continue; }
        if (pen) p.lineTo(x, buf[i + 1]);
        else { p.moveTo(x, buf[i + 1]); pen = true; }
      }
      // sparse lines show their points
      if (buf.length / 2 < this.plotWidth() / 12) {
        const dp = dots[l.color % palette.length];
        for (let i = 0; i < buf.length; i += 2) {
          if (Number.isNaN(buf[i])) continue;
          dp.moveTo(buf[i] + 2, buf[i + 1]);
          dp.arc(buf[i], buf[i + 1], 2, 0, 2 * Math.PI);
        }
      }
    }
    ctx.lineWidth = 1.5;
    ctx.lineJoin = 'round';
    for (let c = 0; c < palette.length; c++) {
      ctx.strokeStyle = palette[c];
      ctx.stroke(paths[c]);
      ctx.fillStyle = palette[c];
      ctx.fill(dots[c]);
    }
  }

  // Many points: every line rasterised into one pixel buffer on device pixels
  // (rasterLine), drawn over the grid in one drawImage. (The buffer's width is the
  // plot's in device pixels, so its x scale is w over the window.)
  paintDense(ctx, palette) {
    const dpr = this.dpr;
    const w = Math.max(1, Math.round(this.plotWidth() * dpr));
    const h = Math.max(1, Math.round(this.height * dpr));
    if (!this.dense || this.dense.w !== w || this.dense.h !== h) {
      const c = document.createElement('canvas');
      c.width = w;
      c.height = h;
      const cx = c.getContext('2d');
      const img = cx.createImageData(w, h);
      this.dense = { w, h, canvas: c, ctx: cx, img, px: new Uint32Array(img.data.buffer) };
    }
    const d = this.dense;
    d.px.fill(0);
    const colors = palette.map((c) => pixelOf(c, 200));
    // x = (tToX(t) - PAD_X)·dpr, y = vToY(v)·dpr, as linear maps
    const bx = (w / (this.vt - this.vf));
    const plotH = this.height - PAD_TOP - PAD_BOTTOM;
    const by = (-plotH / (this.top || 1)) * dpr;
    const m = { ax: -this.vf * bx, bx, ay: (PAD_TOP + plotH) * dpr, by };
    for (const l of this.lines) {
      rasterLine(d.px, w, h, l.ts, l.vs, this.vf, this.vt, m, colors[l.color % colors.length]);
    }
    d.ctx.putImageData(d.img, 0, 0);
    ctx.drawImage(d.canvas, PAD_X, 0, w / dpr, h / dpr);
  }
}
