// The query page's timeline: one lane per series, one mark per stored profile, drawn on
// a canvas. The pure helpers (label formatting, time axis ticks, time <-> pixel mapping,
// bucketing of marks that share a pixel, zoom and pan arithmetic) come first and run in
// node; the Timeline class draws on requestAnimationFrame and handles mouse and keys.

import { formatTime, formatDuration, zoneOffset } from './format.js';

// ---------------------------------------------------------------- labels

const PROMQL_WORDS = new Set(['bool', 'on', 'ignoring', 'group_left', 'group_right',
  'atan2', 'inf', 'nan']);

// Whether a profile type can be written bare before the braces (heap{…}).
export function isBareMetricName(name) {
  return /^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name) && !PROMQL_WORDS.has(name.toLowerCase());
}

const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;
const SIMPLE_ESCAPES = { 7: '\\a', 8: '\\b', 9: '\\t', 10: '\\n', 11: '\\v', 12: '\\f', 13: '\\r' };

// A label value quoted as Go's %q does (what profd prints and parses back).
export function quoteLabelValue(v) {
  let out = '"';
  for (const ch of String(v)) {
    const c = ch.codePointAt(0);
    if (ch === '"' || ch === '\\') out += '\\' + ch;
    else if (SIMPLE_ESCAPES[c]) out += SIMPLE_ESCAPES[c];
    else if (c < 0x20 || c === 0x7f) out += '\\x' + c.toString(16).padStart(2, '0');
    else if (c !== 0x20 && NON_PRINTABLE.test(ch)) {
      out += c > 0xffff ? '\\U' + c.toString(16).padStart(8, '0')
        : '\\u' + c.toString(16).padStart(4, '0');
    } else out += ch;
  }
  return out + '"';
}

// A label set as Prometheus prints it: heap{instance="a:1", job="api"}. It is also an
// exact selector of that series (every label matched with =).
export function formatLabels(labels, sep = ', ') {
  const names = Object.keys(labels || {}).filter((k) => k !== '__name__').sort();
  const items = names.map((k) => k + '=' + quoteLabelValue(labels[k]));
  let head = '';
  const name = labels ? labels.__name__ : undefined;
  if (name !== undefined && name !== '') {
    if (isBareMetricName(name)) head = name;
    else items.unshift('__name__=' + quoteLabelValue(name));
  }
  if (head && items.length === 0) return head;
  return head + '{' + items.join(sep) + '}';
}

// The exact selector of one series.
export function seriesSelector(labels) {
  return formatLabels(labels, ', ');
}

// ---------------------------------------------------------------- time axis

const SEC = 1e3;
const MIN = 60e3;
const HOUR = 3600e3;
const DAY = 86400e3;
export const TICK_STEPS = [SEC, 2 * SEC, 5 * SEC, 10 * SEC, 15 * SEC, 30 * SEC, MIN, 2 * MIN,
  5 * MIN, 10 * MIN, 15 * MIN, 30 * MIN, HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY,
  2 * DAY, 7 * DAY, 14 * DAY, 28 * DAY];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov',
  'Dec'];
const pad2 = (n) => String(n).padStart(2, '0');

// The shown time zone's offset at t (format.js's zoneOffset: the browser's or UTC).
export const localOffset = (t) => zoneOffset(t);

// Ticks of a time axis over [from, to] drawn on width pixels, at least minSpacing pixels
// apart, on round wall-clock times ("15:30", "15:30:10", "Nov 23" at midnight).
// opts.offset(t) gives the zone's offset (default: the shown zone, zoneOffset).
// Returns {step, ticks: [{t, x, label, major}]}; major ticks fall on midnight.
export function timeTicks(from, to, width, opts = {}) {
  const minSpacing = opts.minSpacing || 80;
  const offsetOf = opts.offset || localOffset;
  if (!(to > from) || !(width > 0)) return { step: 0, ticks: [] };
  const span = to - from;
  const want = (span * minSpacing) / width;
  let step = TICK_STEPS.find((s) => s >= want);
  if (!step) step = Math.ceil(want / (28 * DAY)) * 28 * DAY;
  const off = offsetOf(from);
  const ticks = [];
  let wall = Math.ceil((from + off) / step) * step;
  for (let guard = 0; guard < 5000; guard++, wall += step) {
    const approx = wall - off;
    const t = wall - offsetOf(approx);
    if (t > to) break;
    if (t < from) continue;
    const major = wall % DAY === 0;
    ticks.push({ t, x: ((t - from) * width) / span, label: tickLabel(wall, step, major), major });
  }
  return { step, ticks };
}

function tickLabel(wall, step, major) {
  const d = new Date(wall);
  if (major || step >= DAY) return MONTHS[d.getUTCMonth()] + ' ' + d.getUTCDate();
  const hm = pad2(d.getUTCHours()) + ':' + pad2(d.getUTCMinutes());
  return step < MIN ? hm + ':' + pad2(d.getUTCSeconds()) : hm;
}

// ---------------------------------------------------------------- marks

export function timeToX(t, from, to, width) {
  return ((t - from) * width) / (to - from);
}

export function xToTime(x, from, to, width) {
  return from + (x * (to - from)) / width;
}

// First index whose value is >= v (arr ascending).
export function lowerBound(arr, v) {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arr[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// First index whose value is > v (arr ascending).
export function upperBound(arr, v) {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arr[mid] <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// The marks of ascending timestamps inside [from, to] on width pixels, one per pixel
// column: [{px, x, index, t, count}], where several profiles on one pixel make one mark
// standing for the latest of them (index, t, x) with count of them.
export function bucketMarks(ts, from, to, width) {
  const out = [];
  if (!ts || !(to > from) || !(width > 0)) return out;
  const k = width / (to - from);
  const maxPx = Math.max(0, Math.ceil(width) - 1);
  const end = upperBound(ts, to);
  for (let i = lowerBound(ts, from); i < end; i++) {
    const x = (ts[i] - from) * k;
    const px = Math.min(maxPx, Math.floor(x));
    const last = out[out.length - 1];
    if (last && last.px === px) {
      last.count++;
      last.index = i;
      last.t = ts[i];
      last.x = x;
    } else {
      out.push({ px, x, index: i, t: ts[i], count: 1 });
    }
  }
  return out;
}

// The mark nearest to x within maxDist pixels, or null (marks ordered by x).
export function nearestMark(marks, x, maxDist) {
  let lo = 0;
  let hi = marks.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (marks[mid].x < x) lo = mid + 1;
    else hi = mid;
  }
  let best = null;
  let bestD = maxDist;
  for (const i of [lo - 1, lo]) {
    if (i < 0 || i >= marks.length) continue;
    const d = Math.abs(marks[i].x - x);
    if (d <= bestD) {
      best = marks[i];
      bestD = d;
    }
  }
  return best;
}

// Zooms the window [vf, vt] by factor (< 1 zooms in) around the time anchor, kept inside
// [min, max] and at least minSpan long. Returns [from, to].
export function zoomWindow(vf, vt, anchor, factor, min, max, minSpan = 1000) {
  const full = max - min;
  let span = Math.min(full, Math.max(Math.min(minSpan, full), (vt - vf) * factor));
  const a = Math.min(vt, Math.max(vf, anchor));
  const frac = vt > vf ? (a - vf) / (vt - vf) : 0.5;
  let f = a - span * frac;
  return clampWindow(f, f + span, min, max);
}

// Where "+" zooms the window [vf, vt] in (by half, keeping the anchor's place): its
// middle, unless the half about the middle holds none of the profiles (times, each
// lane's sorted ms) while the window holds some; then the profile nearest the middle,
// so that zooming in never lands on an empty window the whole view was not.
export function zoomInAnchor(vf, vt, lanes) {
  const mid = (vf + vt) / 2, q = (vt - vf) / 4;
  let best = null;
  for (const ts of lanes) {
    for (const t of ts) {
      if (t < vf || t > vt) continue;
      if (t >= mid - q && t <= mid + q) return mid;
      if (best === null || Math.abs(t - mid) < Math.abs(best - mid)) best = t;
    }
  }
  return best === null ? mid : best;
}

// Moves [vf, vt] by delta ms, kept inside [min, max].
export function panWindow(vf, vt, delta, min, max) {
  return clampWindow(vf + delta, vt + delta, min, max);
}

// The window [vf, vt] as the timeline shows it over the range [from, to]: clamped into
// the range, or the whole range when it lies outside (a zoom kept from a URL of another
// time). Returns [from, to].
export function fitWindow(vf, vt, from, to) {
  if (!(to > from)) return [vf, vt];
  if (!(Math.min(to, vt) > Math.max(from, vf))) return [from, to];
  return clampWindow(Math.max(from, vf), Math.min(to, vt), from, to);
}

function clampWindow(f, t, min, max) {
  const span = Math.min(t - f, max - min);
  if (f < min) f = min;
  if (f + span > max) f = max - span;
  return [Math.round(f), Math.round(f + span)];
}

// ---------------------------------------------------------------- drawing

const AXIS_H = 24;
const LANE_H = 36;
const TITLE_H = 15;
const MARK_H = 14;
const PAD_X = 14;
const MAX_VISIBLE_LANES = 10;
const MIN_VISIBLE_LANES = 2;
const HIT_PX = 6;

function cssVar(style, name, fallback) {
  const v = style.getPropertyValue(name).trim();
  return v || fallback;
}

// The canvas timeline bound to one element (#timeline). handlers:
//   onMark(mark, event)       a mark was clicked; mark = {lane, series, t, index}
//   onSelectAction(kind, sel) an action of the range selection: 'zoom', 'merge', 'diff';
//                             sel = {start, end, lane (index or null)}
//   onRangeShift(sel)         a shift-drag selection (diff against the open merge)
//   onView(from, to)          the visible window changed (zoom, pan)
//   onWindow(from, to)        the visible window was set, by the user or by new data
//                             (the values chart above the lanes follows it)
export class Timeline {
  constructor(root, handlers = {}) {
    this.root = root;
    this.h = handlers;
    this.series = [];
    this.from = 0;
    this.to = 0;
    this.vf = 0;
    this.vt = 0;
    this.scroll = 0;
    this.hover = null;
    this.drag = null;
    this.selection = null;
    this.picks = [];
    this.canDiffRange = false;
    this.bucketCache = [];
    this.bucketKey = '';
    this.frame = 0;
    this.width = 0;
    this.height = 0;
    this.touches = new Map(); // pointerId → {x, y} of the fingers down
    this.pinch = null;
    this.build();
    this.setState('loading');
  }

  build() {
    const root = this.root;
    root.classList.add('timeline');
    root.innerHTML = `
      <div class="tl-toolbar">
        <span class="tl-window" aria-live="polite"></span>
        <div class="tl-actions" role="toolbar" aria-label="Selected range" hidden></div>
        <span class="tl-buttons">
          <button type="button" class="btn small" data-act="pan-left" title="Pan left (←)">‹</button>
          <button type="button" class="btn small" data-act="zoom-in" title="Zoom in (+)">+</button>
          <button type="button" class="btn small" data-act="zoom-out" title="Zoom out (−)">−</button>
          <button type="button" class="btn small" data-act="pan-right" title="Pan right (→)">›</button>
          <button type="button" class="btn small" data-act="reset" title="Show the whole range (0)">Reset zoom</button>
        </span>
      </div>
      <div class="tl-chart" hidden></div>
      <div class="tl-wrap" tabindex="0" role="application"
           aria-label="Timeline: click a mark to open a profile, drag to select a range; Enter opens the latest profile, arrow keys pan, + and - zoom, 0 resets">
        <canvas class="tl-canvas"></canvas>
        <div class="tl-overlay" hidden></div>
        <div class="tl-tooltip" hidden></div>
      </div>`;
    this.wrap = root.querySelector('.tl-wrap');
    this.canvas = root.querySelector('canvas');
    this.overlay = root.querySelector('.tl-overlay');
    this.tooltip = root.querySelector('.tl-tooltip');
    this.actions = root.querySelector('.tl-actions');
    this.windowLabel = root.querySelector('.tl-window');
    root.profdMarks = () => this.visibleMarks();

    this.onResize = () => this.resize();
    if (typeof ResizeObserver !== 'undefined') {
      this.ro = new ResizeObserver(this.onResize);
      this.ro.observe(this.wrap);
    }
    window.addEventListener('resize', this.onResize);
    this.stopDpr = watchDevicePixelRatio(this.onResize);

    root.querySelector('.tl-buttons').addEventListener('click', (e) => {
      const b = e.target.closest('button[data-act]');
      if (b) this.command(b.dataset.act);
    });
    const c = this.canvas;
    c.addEventListener('pointerdown', (e) => this.pointerDown(e));
    c.addEventListener('pointermove', (e) => this.pointerMove(e));
    c.addEventListener('pointerup', (e) => this.pointerUp(e));
    c.addEventListener('pointercancel', (e) => { this.touchEnd(e); this.drag = null; this.redraw(); });
    const hideTip = () => { this.hover = null; this.tooltip.hidden = true; this.redraw(); };
    this.touchTip = new TouchTip(c, this.tooltip, hideTip);
    c.addEventListener('pointerleave', () => {
      if (!this.drag && !this.touchTip.pinned) hideTip();
    });
    c.addEventListener('wheel', (e) => this.wheel(e), { passive: false });
    this.wrap.addEventListener('keydown', (e) => this.key(e));
    // A focus ring for keyboard focus only, not after a click on the canvas.
    this.wrap.addEventListener('focus', () => this.wrap.classList.toggle('ring', !this.pointerFocus));
    this.wrap.addEventListener('blur', () => this.wrap.classList.remove('ring'));
    this.actions.addEventListener('click', (e) => {
      const b = e.target.closest('button[data-act]');
      if (!b || b.disabled || !this.selection) return;
      const sel = this.selection;
      if (b.dataset.act === 'cancel') { this.clearSelection(); return; }
      // done with the selection: a merge or diff shows as the open range instead
      this.clearSelection();
      if (this.h.onSelectAction) this.h.onSelectAction(b.dataset.act, { ...sel });
      if (b.dataset.act === 'zoom') this.setView(sel.start, sel.end, true);
    });
  }

  destroy() {
    if (this.ro) this.ro.disconnect();
    window.removeEventListener('resize', this.onResize);
    this.stopDpr();
    this.touchTip.destroy();
    if (this.frame) cancelAnimationFrame(this.frame);
    delete this.root.profdMarks;
  }

  setState(state, message) {
    this.state = state;
    this.root.dataset.state = state;
    this.wrap.classList.toggle('is-loading', state === 'loading');
    if (state === 'loading') {
      if (!this.series.length) this.showOverlay('<div class="spinner" aria-hidden="true"></div><p>Loading series…</p>');
    } else if (state === 'error') {
      const p = document.createElement('p');
      p.className = 'error-text';
      p.textContent = message || 'Loading failed';
      this.showOverlay(p);
    } else if (state === 'ready') {
      this.overlay.hidden = true;
    }
  }

  showOverlay(content) {
    if (typeof content === 'string') this.overlay.innerHTML = content;
    else { this.overlay.replaceChildren(content); }
    this.overlay.hidden = false;
  }

  setLoading() {
    this.setState('loading');
  }

  setError(message) {
    this.series = [];
    this.updateCounts();
    this.setState('error', message);
    this.resize();
  }

  // node: what to say (a DOM node explaining what to do).
  setEmpty(node) {
    this.series = [];
    this.updateCounts();
    this.setState('empty');
    this.showOverlay(node);
    this.resize();
  }

  // series: [{labels, timestamps}] of query_range; [from, to] the queried range;
  // [vf, vt] the visible window (zoom), or null for the whole range.
  setData(series, from, to, vf, vt) {
    this.series = series.map((s) => ({
      labels: s.labels,
      ts: s.timestamps || [],
      title: formatLabels(s.labels),
      key: seriesSelector(s.labels),
    }));
    this.from = from;
    this.to = to;
    this.bucketKey = '';
    const maxScroll = Math.max(0, this.series.length * LANE_H - this.lanesHeight());
    this.scroll = Math.min(this.scroll, maxScroll);
    this.updateCounts();
    this.setState('ready');
    if (this.selection && (this.selection.start < from || this.selection.end > to)) this.clearSelection();
    this.setView(vf == null ? from : vf, vt == null ? to : vt, false);
    this.resize();
  }

  updateCounts() {
    let n = 0;
    for (const s of this.series) n += s.ts.length;
    this.root.dataset.lanes = String(this.series.length);
    this.root.classList.toggle('has-data', this.series.length > 0);
    this.root.dataset.marks = String(n);
  }

  // The visible window; emit: tell onView.
  setView(vf, vt, emit) {
    const [f, t] = fitWindow(vf, vt, this.from, this.to);
    const changed = f !== this.vf || t !== this.vt;
    this.vf = f;
    this.vt = t;
    this.root.dataset.viewFrom = String(f);
    this.root.dataset.viewTo = String(t);
    const zoomed = f > this.from || t < this.to;
    this.windowLabel.textContent = this.to > this.from
      ? `${formatTime(f)} – ${formatTime(t)} (${formatDuration((t - f) * 1e6)})${zoomed ? ' · zoomed' : ''}`
      : '';
    this.root.querySelector('[data-act="reset"]').disabled = !zoomed;
    if (changed && emit && this.h.onView) this.h.onView(f, t, zoomed);
    if (this.h.onWindow) this.h.onWindow(f, t);
    this.redraw();
  }

  isZoomed() {
    return this.vf > this.from || this.vt < this.to;
  }

  // picks: what is open, drawn over the marks: [{key, t, tag}] for single profiles and
  // [{key (or null for every lane), start, end, tag}] for ranges; tag 'A', 'B' or ''.
  // canDiffRange: a merge is open, so a range selection may offer a diff against it.
  setPicks(picks, canDiffRange) {
    this.picks = picks || [];
    this.canDiffRange = !!canDiffRange;
    this.redraw();
  }

  clearSelection() {
    this.selection = null;
    this.actions.hidden = true;
    this.root.classList.remove('has-selection');
    this.redraw();
  }

  command(act) {
    if (!(this.to > this.from)) return;
    const span = this.vt - this.vf;
    const mid = (this.vf + this.vt) / 2;
    if (act === 'pan-left') this.setView(...panWindow(this.vf, this.vt, -span * 0.25, this.from, this.to), true);
    else if (act === 'pan-right') this.setView(...panWindow(this.vf, this.vt, span * 0.25, this.from, this.to), true);
    else if (act === 'zoom-in') {
      const a = zoomInAnchor(this.vf, this.vt, this.series.map((x) => x.ts));
      this.setView(...zoomWindow(this.vf, this.vt, a, 0.5, this.from, this.to), true);
    }
    else if (act === 'zoom-out') this.setView(...zoomWindow(this.vf, this.vt, mid, 2, this.from, this.to), true);
    else if (act === 'reset') this.setView(this.from, this.to, true);
  }

  // ------------------------------------------------------------ geometry

  // The lanes area: the series' lanes (at most MAX_VISIBLE_LANES, then they scroll);
  // while there is nothing to draw, room for a message (MIN_VISIBLE_LANES).
  lanesHeight() {
    const n = this.series.length
      ? Math.min(MAX_VISIBLE_LANES, this.series.length)
      : MIN_VISIBLE_LANES;
    return n * LANE_H;
  }

  resize() {
    const w = Math.max(100, Math.floor(this.wrap.clientWidth));
    const h = AXIS_H + this.lanesHeight() + 4;
    const dpr = window.devicePixelRatio || 1;
    if (w !== this.width || h !== this.height || dpr !== this.dpr) {
      this.width = w;
      this.height = h;
      this.dpr = dpr;
      this.canvas.style.width = w + 'px';
      this.canvas.style.height = h + 'px';
      this.canvas.width = Math.round(w * dpr);
      this.canvas.height = Math.round(h * dpr);
      this.wrap.style.height = h + 'px';
      this.bucketKey = '';
    }
    this.redraw();
  }

  plotWidth() {
    return Math.max(1, this.width - 2 * PAD_X);
  }

  // The marks of one lane in the visible window, computed when first needed (only lanes
  // on screen are bucketed) and kept until the window, width or data change.
  laneMarks(i) {
    const pw = this.plotWidth();
    const key = `${this.vf}:${this.vt}:${pw}:${this.series.length}`;
    if (key !== this.bucketKey) {
      this.bucketCache = new Array(this.series.length);
      this.bucketKey = key;
    }
    let m = this.bucketCache[i];
    if (!m) {
      m = bucketMarks(this.series[i].ts, this.vf, this.vt, pw);
      this.bucketCache[i] = m;
    }
    return m;
  }

  laneTop(i) {
    return AXIS_H + i * LANE_H - this.scroll;
  }

  laneAt(y) {
    if (y < AXIS_H) return -1;
    const i = Math.floor((y - AXIS_H + this.scroll) / LANE_H);
    return i >= 0 && i < this.series.length ? i : -1;
  }

  tToX(t) {
    return PAD_X + timeToX(t, this.vf, this.vt, this.plotWidth());
  }

  xToT(x) {
    const pw = this.plotWidth();
    const px = Math.min(pw, Math.max(0, x - PAD_X));
    return xToTime(px, this.vf, this.vt, pw);
  }

  // Every mark on screen, in client coordinates (the browser tests' hook).
  visibleMarks() {
    if (this.state !== 'ready') return [];
    const r = this.canvas.getBoundingClientRect();
    const out = [];
    for (let lane = 0; lane < this.series.length; lane++) {
      const top = this.laneTop(lane);
      const y = top + TITLE_H + MARK_H / 2;
      if (y < AXIS_H || y > this.height - 2) continue;
      for (const m of this.laneMarks(lane)) {
        out.push({ lane, index: m.index, t: m.t, count: m.count,
          x: r.left + PAD_X + m.x, y: r.top + y });
      }
    }
    return out;
  }

  markAt(x, y) {
    const lane = this.laneAt(y);
    if (lane < 0) return null;
    const m = nearestMark(this.laneMarks(lane), x - PAD_X, HIT_PX);
    return m ? { lane, ...m } : null;
  }

  // ------------------------------------------------------------ input

  localXY(e) {
    const r = this.canvas.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  }

  // Two fingers on the lanes pinch-zoom about their midpoint (this.pinch); one drags.
  pinchStart() {
    const [a, b] = [...this.touches.values()];
    const d = Math.hypot(a.x - b.x, a.y - b.y);
    this.drag = null;
    this.clearSelection();
    this.pinch = { d0: Math.max(1, d), vf: this.vf, vt: this.vt, anchor: this.xToT((a.x + b.x) / 2) };
    this.tooltip.hidden = true;
  }

  pinchMove() {
    const [a, b] = [...this.touches.values()];
    const d = Math.max(1, Math.hypot(a.x - b.x, a.y - b.y));
    const p = this.pinch;
    this.setView(...zoomWindow(p.vf, p.vt, p.anchor, p.d0 / d, this.from, this.to), true);
  }

  pointerDown(e) {
    if (this.state !== 'ready' || (e.button !== 0 && e.button !== 1)) return;
    const [x, y] = this.localXY(e);
    if (e.pointerType === 'touch') {
      this.touches.set(e.pointerId, { x, y });
      this.canvas.setPointerCapture(e.pointerId);
      if (this.touches.size === 2) {
        this.pinchStart();
        e.preventDefault();
        return;
      }
      if (this.pinch) return;
    }
    const pan = e.button === 1 || e.altKey;
    this.drag = { x0: x, y0: y, x, y, lane0: this.laneAt(y), moved: false, pan,
      shift: e.shiftKey, vf: this.vf, vt: this.vt };
    this.canvas.setPointerCapture(e.pointerId);
    this.pointerFocus = true;
    this.wrap.focus({ preventScroll: true });
    this.pointerFocus = false;
    e.preventDefault();
  }

  pointerMove(e) {
    const [x, y] = this.localXY(e);
    if (this.touches.has(e.pointerId)) this.touches.set(e.pointerId, { x, y });
    if (this.pinch) {
      if (this.touches.size >= 2) this.pinchMove();
      return;
    }
    const d = this.drag;
    if (d) {
      d.x = x;
      d.y = y;
      if (!d.moved && Math.abs(x - d.x0) > 4) d.moved = true;
      if (d.moved && d.pan) {
        const dt = ((d.x0 - x) * (d.vt - d.vf)) / this.plotWidth();
        this.setView(...panWindow(d.vf, d.vt, dt, this.from, this.to), true);
      }
      this.tooltip.hidden = true;
      this.redraw();
      return;
    }
    this.hoverAt(x, y);
  }

  hoverAt(x, y) {
    if (this.state !== 'ready') return;
    const lane = this.laneAt(y);
    const inPlot = x >= PAD_X - HIT_PX && x <= this.width - PAD_X + HIT_PX;
    const mark = inPlot ? this.markAt(x, y) : null;
    this.hover = inPlot ? { x, y, lane, mark } : null;
    this.canvas.style.cursor = mark ? 'pointer' : 'crosshair';
    if (!this.hover) {
      this.tooltip.hidden = true;
    } else {
      const t = mark ? mark.t : this.xToT(x);
      let html = `<div class="tt-time">${escapeHtml(formatTime(t))}${mark ? '' : ''}</div>`;
      if (lane >= 0) html += `<div class="tt-series">${escapeHtml(this.series[lane].title)}</div>`;
      if (mark && mark.count > 1) html += `<div class="tt-note">${mark.count} profiles on this pixel; zoom in to tell them apart (opens the latest)</div>`;
      else if (mark) html += '<div class="tt-note">click: open · shift-click: diff with the open one</div>';
      this.tooltip.innerHTML = html;
      this.tooltip.hidden = false;
      const tw = this.tooltip.offsetWidth;
      const left = x + 14 + tw > this.width ? Math.max(0, x - 14 - tw) : x + 14;
      this.tooltip.style.left = left + 'px';
      const th = this.tooltip.offsetHeight;
      this.tooltip.style.top = (y + 16 + th > this.height && y - 12 - th >= 0 ? y - 12 - th : y + 16) + 'px';
    }
    this.redraw();
  }

  // A finger lifted (or its gesture cancelled): a pinch ends with fewer than two.
  touchEnd(e) {
    if (!this.touches.delete(e.pointerId)) return false;
    if (!this.pinch) return false;
    if (this.touches.size < 2) {
      this.pinch = this.touches.size ? this.pinch : null;
      this.drag = null;
    }
    if (!this.touches.size) this.pinch = null;
    return true;
  }

  pointerUp(e) {
    if (this.touchEnd(e)) return;
    const d = this.drag;
    if (!d) return;
    this.drag = null;
    if (this.canvas.hasPointerCapture(e.pointerId)) this.canvas.releasePointerCapture(e.pointerId);
    const [x, y] = this.localXY(e);
    if (d.pan) { this.redraw(); return; }
    if (!d.moved) {
      const m = this.markAt(x, y);
      if (m && this.h.onMark) {
        const s = this.series[m.lane];
        this.h.onMark({ lane: m.lane, series: s, t: m.t, index: m.index }, e);
      } else if (!m) {
        this.clearSelection();
      }
      this.hoverAt(x, y);
      this.touchTip.tapped(e, !this.tooltip.hidden);
      return;
    }
    let t0 = this.xToT(Math.min(d.x0, x));
    let t1 = this.xToT(Math.max(d.x0, x));
    t0 = Math.floor(t0);
    t1 = Math.ceil(t1);
    const laneEnd = this.laneAt(y);
    const lane = d.lane0 >= 0 && d.lane0 === laneEnd ? d.lane0 : null;
    this.selection = { start: t0, end: t1, lane };
    if (d.shift && this.canDiffRange && this.h.onSelectAction) {
      const sel = this.selection;
      this.clearSelection();
      this.h.onSelectAction('diff', sel);
      return;
    }
    this.showActions();
    this.redraw();
  }

  countIn(sel) {
    let n = 0;
    const lanes = sel.lane == null ? this.series : [this.series[sel.lane]];
    for (const s of lanes) n += upperBound(s.ts, sel.end) - lowerBound(s.ts, sel.start);
    return n;
  }

  showActions() {
    const sel = this.selection;
    const n = this.countIn(sel);
    const types = new Set(this.series.map((s) => s.labels.__name__));
    const mixed = sel.lane == null && types.size > 1;
    const what = sel.lane == null
      ? `all ${this.series.length} series`
      : 'this lane';
    const mergeTitle = mixed
      ? 'The query matches several profile types, which cannot be merged: drag within one lane, or narrow the selector'
      : sel.lane == null
        ? 'Merge every profile of the query in the range (drag within one lane to merge only that series)'
        : 'Merge the profiles of this series in the range (drag across lanes to merge the whole query)';
    this.actions.innerHTML = `
      <span class="tl-sel-info">${escapeHtml(formatDuration((sel.end - sel.start) * 1e6))}, ${n} profile${n === 1 ? '' : 's'} in ${escapeHtml(what)}</span>
      <button type="button" class="btn small" id="sel-zoom" data-act="zoom" title="Zoom the timeline to the selection">Zoom</button>
      <button type="button" class="btn small primary" id="sel-merge" data-act="merge" title="${escapeHtml(mergeTitle)}"${n === 0 || mixed ? ' disabled' : ''}>Merge ${escapeHtml(what)}</button>
      ${mixed ? '<span class="tl-sel-note">several profile types: drag within one lane to merge</span>' : ''}
      ${this.canDiffRange ? `<button type="button" class="btn small" id="sel-diff" data-act="diff" title="Diff: the open merge is the base (A), this range is B"${n === 0 ? ' disabled' : ''}>Diff vs open merge</button>` : ''}
      <button type="button" class="btn small ghost" data-act="cancel" title="Clear the selection (Esc)" aria-label="Clear the selection">✕</button>`;
    this.actions.hidden = false;
    this.root.classList.add('has-selection');
  }

  wheel(e) {
    if (this.state !== 'ready' || !(this.to > this.from)) return;
    const [x] = this.localXY(e);
    const dy = e.deltaMode === 1 ? e.deltaY * 16 : e.deltaY;
    const dx = e.deltaMode === 1 ? e.deltaX * 16 : e.deltaX;
    if (e.ctrlKey || e.metaKey) {
      e.preventDefault();
      const factor = Math.pow(2, Math.max(-1, Math.min(1, dy / 200)));
      this.setView(...zoomWindow(this.vf, this.vt, this.xToT(x), factor, this.from, this.to), true);
      return;
    }
    if (e.shiftKey || Math.abs(dx) > Math.abs(dy)) {
      e.preventDefault();
      const d = (e.shiftKey && Math.abs(dy) > Math.abs(dx)) ? dy : dx;
      const dt = (d * (this.vt - this.vf)) / this.plotWidth();
      this.setView(...panWindow(this.vf, this.vt, dt, this.from, this.to), true);
      return;
    }
    const maxScroll = Math.max(0, this.series.length * LANE_H - this.lanesHeight());
    const next = Math.max(0, Math.min(maxScroll, this.scroll + dy));
    if (next !== this.scroll) {
      e.preventDefault();
      this.scroll = next;
      const [, y] = this.localXY(e);
      this.hoverAt(x, y);
    }
  }

  key(e) {
    if (e.target !== this.wrap || e.ctrlKey || e.metaKey || e.altKey) return;
    const map = { ArrowLeft: 'pan-left', ArrowRight: 'pan-right', '+': 'zoom-in', '=': 'zoom-in',
      '-': 'zoom-out', '0': 'reset' };
    if (map[e.key]) {
      e.preventDefault();
      this.command(map[e.key]);
    } else if (e.key === 'Enter' && this.state === 'ready' && this.h.onMark) {
      // The keyboard's way in: the latest profile of the first lane on screen.
      const lane = Math.min(this.series.length - 1, Math.floor(this.scroll / LANE_H));
      const marks = lane >= 0 ? this.laneMarks(lane) : [];
      const m = marks[marks.length - 1];
      if (m) {
        e.preventDefault();
        this.h.onMark({ lane, series: this.series[lane], t: m.t, index: m.index }, e);
      }
    } else if (e.key === 'Escape' && this.selection) {
      e.preventDefault();
      this.clearSelection();
    } else if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      const maxScroll = Math.max(0, this.series.length * LANE_H - this.lanesHeight());
      const next = Math.max(0, Math.min(maxScroll, this.scroll + (e.key === 'ArrowDown' ? LANE_H : -LANE_H)));
      if (next !== this.scroll) { e.preventDefault(); this.scroll = next; this.redraw(); }
    }
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
    const col = {
      bg: cssVar(style, '--tl-bg', '#fff'),
      laneAlt: cssVar(style, '--tl-lane-alt', '#f6f7f9'),
      grid: cssVar(style, '--tl-grid', '#e3e6ea'),
      text: cssVar(style, '--fg', '#1d2127'),
      muted: cssVar(style, '--muted', '#69717d'),
      mark: cssVar(style, '--tl-mark', '#2f6fd6'),
      markDense: cssVar(style, '--tl-mark-dense', '#1b4d9e'),
      hover: cssVar(style, '--tl-hover', '#e8590c'),
      a: cssVar(style, '--diff-a', '#2f6fd6'),
      b: cssVar(style, '--diff-b', '#d6336c'),
      pick: cssVar(style, '--tl-pick', '#e8590c'),
      sel: cssVar(style, '--tl-sel', 'rgba(47,111,214,0.15)'),
      selLine: cssVar(style, '--tl-sel-line', 'rgba(47,111,214,0.7)'),
      range: cssVar(style, '--tl-range', 'rgba(232,89,12,0.13)'),
    };
    const mono = cssVar(style, '--mono', 'ui-monospace, monospace');
    const sans = cssVar(style, '--sans', 'system-ui, sans-serif');
    const W = this.width;
    const H = this.height;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.fillStyle = col.bg;
    ctx.fillRect(0, 0, W, H);
    if (!(this.vt > this.vf)) return;
    const pw = this.plotWidth();
    const lanes = this.series;

    // lanes
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS_H, W, H - AXIS_H);
    ctx.clip();
    const first = Math.max(0, Math.floor(this.scroll / LANE_H));
    const last = Math.min(lanes.length - 1, Math.ceil((this.scroll + H - AXIS_H) / LANE_H));
    for (let i = first; i <= last; i++) {
      if (i % 2 === 1) {
        ctx.fillStyle = col.laneAlt;
        ctx.fillRect(0, this.laneTop(i), W, LANE_H);
      }
    }
    // grid
    const { ticks } = timeTicks(this.vf, this.vt, pw);
    // (in each lane below its title, so the title reads clear of the lines)
    ctx.fillStyle = col.grid;
    for (let i = first; i <= last; i++) {
      const y0 = this.laneTop(i) + TITLE_H - 2;
      for (const tk of ticks) ctx.fillRect(Math.round(PAD_X + tk.x), y0, 1, LANE_H - TITLE_H + 2);
    }

    // ranges that are open (merge sides) and the selection being dragged or kept
    for (const p of this.picks) {
      if (p.start == null) continue;
      this.paintRange(ctx, p.start, p.end, p.key == null ? null : this.laneIndex(p.key), col.range,
        p.tag ? (p.tag === 'A' ? col.a : col.b) : col.pick, p.tag, sans);
    }
    let dragSel = null;
    if (this.drag && this.drag.moved && !this.drag.pan) {
      const d = this.drag;
      const laneEnd = this.laneAt(d.y);
      dragSel = { start: this.xToT(Math.min(d.x0, d.x)), end: this.xToT(Math.max(d.x0, d.x)),
        lane: d.lane0 >= 0 && d.lane0 === laneEnd ? d.lane0 : null };
    } else if (this.selection) dragSel = this.selection;
    if (dragSel) this.paintRange(ctx, dragSel.start, dragSel.end, dragSel.lane, col.sel, col.selLine, '', sans);

    // titles and marks: one path per colour, so thousands of marks cost two fills
    ctx.textBaseline = 'middle';
    ctx.font = `11px ${mono}`;
    const single = new Path2D();
    const several = new Path2D();
    for (let i = first; i <= last; i++) {
      const top = this.laneTop(i);
      ctx.fillStyle = col.muted;
      ctx.fillText(this.fitTitle(ctx, i, W - 2 * PAD_X), PAD_X, top + 9);
      const marks = this.laneMarks(i);
      // Marks half as wide as their average spacing: 2 px when sparse, down to one
      // device pixel when dense, so neighbours stay apart.
      const spacing = marks.length > 1 ? pw / marks.length : pw;
      const mw = Math.min(2, Math.max(1, Math.round(spacing * 0.5 * this.dpr)) / this.dpr);
      const y = top + TITLE_H;
      const dpr = this.dpr;
      for (const m of marks) {
        // On device pixels: crisp, and cheaper than anti-aliased edges.
        const x = Math.round((PAD_X + m.x - mw / 2) * dpr) / dpr;
        (m.count > 1 ? several : single).rect(x, y, mw, MARK_H);
      }
    }
    ctx.fillStyle = col.mark;
    ctx.fill(single);
    ctx.fillStyle = col.markDense;
    ctx.fill(several);
    // open single profiles
    for (const p of this.picks) {
      if (p.t == null) continue;
      const lane = this.laneIndex(p.key);
      if (lane < 0 || p.t < this.vf || p.t > this.vt) continue;
      const x = this.tToX(p.t);
      const top = this.laneTop(lane);
      const c = p.tag === 'A' ? col.a : p.tag === 'B' ? col.b : col.pick;
      ctx.fillStyle = c;
      ctx.fillRect(x - 2, top + TITLE_H - 2, 4, MARK_H + 4);
      ctx.strokeStyle = c;
      ctx.lineWidth = 1;
      ctx.strokeRect(x - 4.5, top + TITLE_H - 3.5, 9, MARK_H + 7);
      if (p.tag) {
        ctx.font = `bold 10px ${sans}`;
        ctx.fillText(p.tag, x + 7, top + TITLE_H + 4);
      }
    }
    // hover
    const hv = this.hover;
    if (hv && !this.drag) {
      ctx.fillStyle = col.grid;
      if (hv.mark) {
        const top = this.laneTop(hv.mark.lane);
        ctx.fillStyle = col.hover;
        ctx.fillRect(PAD_X + hv.mark.x - 1.5, top + TITLE_H - 3, 3, MARK_H + 6);
      } else {
        ctx.fillStyle = col.muted;
        ctx.globalAlpha = 0.5;
        ctx.fillRect(Math.round(hv.x), AXIS_H, 1, H - AXIS_H);
        ctx.globalAlpha = 1;
      }
    }
    ctx.restore();

    // axis
    ctx.fillStyle = col.bg;
    ctx.fillRect(0, 0, W, AXIS_H);
    ctx.fillStyle = col.grid;
    ctx.fillRect(0, AXIS_H - 1, W, 1);
    ctx.font = `11px ${sans}`;
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'center';
    for (const tk of ticks) {
      const x = PAD_X + tk.x;
      ctx.fillStyle = col.grid;
      ctx.fillRect(Math.round(x), AXIS_H - 5, 1, 5);
      ctx.fillStyle = tk.major ? col.text : col.muted;
      ctx.font = `${tk.major ? 'bold ' : ''}11px ${sans}`;
      const tw = ctx.measureText(tk.label).width;
      const cx = Math.max(tw / 2 + 1, Math.min(W - tw / 2 - 1, x));
      ctx.fillText(tk.label, cx, AXIS_H / 2);
    }
    ctx.textAlign = 'start';
    // lane scroll indicator
    const total = lanes.length * LANE_H;
    const visible = H - AXIS_H;
    if (total > visible + 4) {
      const bh = Math.max(16, (visible * visible) / total);
      const by = AXIS_H + ((visible - bh) * this.scroll) / (total - visible + 4);
      ctx.fillStyle = col.muted;
      ctx.globalAlpha = 0.4;
      ctx.fillRect(W - 4, by, 3, bh);
      ctx.globalAlpha = 1;
    }
  }

  // The lane's title cut with an ellipsis to maxW pixels (cached per width and font).
  fitTitle(ctx, i, maxW) {
    const s = this.series[i];
    const key = maxW + ctx.font;
    if (s.fitKey === key) return s.fit;
    let text = s.title;
    if (ctx.measureText(text).width > maxW) {
      let lo = 0;
      let hi = text.length;
      while (lo < hi) {
        const mid = (lo + hi + 1) >>> 1;
        if (ctx.measureText(text.slice(0, mid) + '…').width <= maxW) lo = mid;
        else hi = mid - 1;
      }
      text = text.slice(0, lo) + '…';
    }
    s.fitKey = key;
    s.fit = text;
    return text;
  }

  laneIndex(key) {
    for (let i = 0; i < this.series.length; i++) if (this.series[i].key === key) return i;
    return -1;
  }

  paintRange(ctx, start, end, lane, fill, line, tag, sans) {
    if (end < this.vf || start > this.vt || lane === -1) return;
    const x0 = this.tToX(Math.max(start, this.vf));
    const x1 = this.tToX(Math.min(end, this.vt));
    const y0 = lane == null ? AXIS_H : this.laneTop(lane);
    const h = lane == null ? this.height - AXIS_H : LANE_H;
    ctx.fillStyle = fill;
    ctx.fillRect(x0, y0, Math.max(1, x1 - x0), h);
    ctx.fillStyle = line;
    if (start >= this.vf) ctx.fillRect(Math.round(x0), y0, 1, h);
    if (end <= this.vt) ctx.fillRect(Math.round(x1), y0, 1, h);
    if (tag) {
      ctx.font = `bold 10px ${sans}`;
      ctx.fillText(tag, x0 + 3, y0 + 8);
    }
  }
}

// A canvas tooltip on a touch screen, where nothing hovers: a tap shows the tooltip of
// what it touched and pins it (the pointerleave that follows a lifted finger leaves it),
// and the next pointer press anywhere else on the page hides it (hide()), pinned or
// not, so no tooltip outlives the user's attention. destroy() removes the page-wide
// listener.
export class TouchTip {
  constructor(canvas, tooltip, hide) {
    this.pinned = false;
    this.onDown = (e) => {
      this.pinned = false;
      if (!canvas.contains(e.target) && !tooltip.hidden) hide();
    };
    document.addEventListener('pointerdown', this.onDown, true);
  }

  // After a tap (pointerup without a drag): pin the tooltip shown for a finger or pen.
  tapped(e, shown) {
    this.pinned = shown && e.pointerType !== 'mouse';
  }

  destroy() {
    document.removeEventListener('pointerdown', this.onDown, true);
  }
}

// Calls cb whenever window.devicePixelRatio changes (the window moved to a screen of
// another density, or the page zoom changed), so canvases can be sized again; returns a
// function that stops watching.
export function watchDevicePixelRatio(cb) {
  if (typeof window === 'undefined' || !window.matchMedia) return () => {};
  let mq = null;
  let stopped = false;
  const onChange = () => {
    arm();
    if (!stopped) cb();
  };
  const arm = () => {
    if (mq) mq.removeEventListener('change', onChange);
    mq = null;
    if (stopped) return;
    mq = window.matchMedia(`(resolution: ${window.devicePixelRatio || 1}dppx)`);
    if (mq.addEventListener) mq.addEventListener('change', onChange);
  };
  arm();
  return () => {
    stopped = true;
    if (mq && mq.removeEventListener) mq.removeEventListener('change', onChange);
    mq = null;
  };
}

export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;',
    '"': '&quot;', "'": '&#39;' }[c]));
}
