// bench/ui/harness.js: the measurements of bench/ui.sh, run in the page
// bench/ui/harness.html. It drives the UI's own modules (web/js/timeline.js,
// web/js/chart.js, web/js/flame.js, served from web/ at /) with synthetic or real
// data, and the same input drawn the straightforward DOM way (one SVG <rect> per
// timeline mark, one SVG <polyline> per chart series, one absolutely positioned
// <div> per flame frame) as the reference. run.mjs calls the
// functions of window.bench and prints the tables.
//
// Every measurement is a `step`: work() runs inside a requestAnimationFrame
// callback, at the start of a frame.
//   js     the synchronous part: for the canvas the module's own drawing, for the
//          DOM the element updates plus a forced style and layout (offsetHeight)
//   frame  from the start of work() until a message posted right after it is
//          delivered: that task runs once the browser has done the frame's
//          rendering on the main thread (style, layout, paint recording, the
//          canvas flush, commit), so it is the work plus what showing it costs
//          there, independent of vsync; rasterisation on other threads is not in it
// A step ends with one untimed frame, so the next starts from a quiet page.
// The canvas side calls the module's drawing directly (Timeline.paint,
// FlameView._draw) after cancelling the frame it had scheduled, so both sides draw
// in the frame where the work happened.

import { Timeline } from '/js/timeline.js';
import { Chart } from '/js/chart.js';
import {
  FlameView, layoutFlame, frameColor, fitLabel, compileMatcher, ROW_H,
} from '/js/flame.js';

// timeline.js's geometry (module constants, not exported)
const AXIS_H = 24;
const LANE_H = 36;
const TITLE_H = 15;
const MARK_H = 14;
const PAD_X = 14;
const MAX_VISIBLE_LANES = 10;

const stage = document.getElementById('stage');
const now = () => performance.now();
const nextFrame = () => new Promise((r) => requestAnimationFrame(() => r()));

const afterRender = () => new Promise((r) => {
  const ch = new MessageChannel();
  ch.port1.onmessage = () => r();
  ch.port2.postMessage(0);
});

async function step(work) {
  await nextFrame();
  const t0 = now();
  work();
  const t1 = now();
  await afterRender();
  const t2 = now();
  await nextFrame();
  return { js: t1 - t0, frame: t2 - t0 };
}

function median(xs) {
  const s = xs.slice().sort((a, b) => a - b);
  const n = s.length;
  return n ? (n % 2 ? s[(n - 1) >> 1] : (s[n / 2 - 1] + s[n / 2]) / 2) : NaN;
}

// Repeats step(work) after one warm-up: `runs` times, or fewer when the repetitions
// take longer than budgetMs (at least `min`). before(i)/after(i) run untimed.
async function repeat(work, { runs, budgetMs = 8000, min = 3, before, after }) {
  const js = [];
  const frame = [];
  const start = now();
  for (let i = -1; i < runs; i++) {
    if (before) before(i);
    const r = await step(() => work(i));
    if (after) after(i);
    if (i >= 0) {
      js.push(r.js);
      frame.push(r.frame);
      if (js.length >= min && now() - start > budgetMs) break;
    }
  }
  return { js: median(js), frame: median(frame), n: js.length, jsAll: js, frameAll: frame };
}

// ------------------------------------------------------------------ data

// mulberry32: a small seeded generator, so every run draws the same input.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// `lanes` series of `marks` profiles each, scraped every 15 s with ±2 s of jitter
// and each series starting at its own offset; [from, to] covers all of them.
export function makeSeries(lanes, marks, seed = 1) {
  const r = rng(seed);
  const from = Date.UTC(2026, 10, 20, 0, 0, 0);
  const step = 15e3;
  const series = [];
  for (let i = 0; i < lanes; i++) {
    const ts = new Array(marks);
    let t = from + Math.floor(r() * step);
    for (let j = 0; j < marks; j++) {
      ts[j] = Math.round(t + (r() - 0.5) * 4e3);
      t += step;
    }
    series.push({
      labels: { __name__: ['cpu', 'heap', 'goroutine'][i % 3], instance: `app-${i}.example:6060`, job: 'bench' },
      timestamps: ts,
    });
  }
  return { series, from, to: from + (marks + 1) * step };
}

// ------------------------------------------------------------------ timeline

function clear() {
  stage.replaceChildren();
}

function timelineHost() {
  clear();
  const host = document.createElement('div');
  host.id = 'timeline';
  stage.append(host);
  return host;
}

// The reference: the same lanes as an SVG, one <rect> per profile (no bucketing),
// marks under a <g> per lane (its fill) inside a <g> that pans; lane titles and
// the alternate lane background as <text>/<rect>. At most 10 lanes show, the rest
// scroll, as in the timeline.
function svgTimeline(series, vf, vt) {
  const NS = 'http://www.w3.org/2000/svg';
  const W = 1280;
  const pw = W - 2 * PAD_X;
  const k = pw / (vt - vf);
  const scroll = document.createElement('div');
  scroll.className = 'ref-scroll';
  scroll.style.height = AXIS_H + Math.min(MAX_VISIBLE_LANES, series.length) * LANE_H + 4 + 'px';
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('class', 'ref-svg');
  svg.setAttribute('width', W);
  svg.setAttribute('height', AXIS_H + series.length * LANE_H + 4);
  const pan = document.createElementNS(NS, 'g');
  const lanes = [];
  for (let i = 0; i < series.length; i++) {
    const top = AXIS_H + i * LANE_H;
    if (i % 2 === 1) {
      const bg = document.createElementNS(NS, 'rect');
      bg.setAttribute('x', 0);
      bg.setAttribute('y', top);
      bg.setAttribute('width', W);
      bg.setAttribute('height', LANE_H);
      bg.setAttribute('fill', '#f6f7f9');
      svg.append(bg);
    }
    const title = document.createElementNS(NS, 'text');
    title.setAttribute('x', PAD_X);
    title.setAttribute('y', top + 12);
    title.setAttribute('font-size', '11');
    title.setAttribute('font-family', 'monospace');
    title.setAttribute('fill', '#69717d');
    title.textContent = series[i].labels.__name__ + '{instance="' + series[i].labels.instance + '", job="bench"}';
    svg.append(title);
    const g = document.createElementNS(NS, 'g');
    g.setAttribute('fill', '#3b74d4');
    const ts = series[i].timestamps;
    const rects = new Array(ts.length);
    const y = top + TITLE_H;
    for (let j = 0; j < ts.length; j++) {
      const r = document.createElementNS(NS, 'rect');
      r.setAttribute('x', (PAD_X + (ts[j] - vf) * k - 0.5).toFixed(1));
      r.setAttribute('y', y);
      r.setAttribute('width', 1);
      r.setAttribute('height', MARK_H);
      g.append(r);
      rects[j] = r;
    }
    pan.append(g);
    lanes.push(rects);
  }
  svg.append(pan);
  scroll.append(svg);
  return { el: scroll, svg, pan, lanes, k };
}

function forceLayout(el) {
  return el.offsetHeight;
}

// One case of the timeline: lanes x marks at 1280x800.
//   first paint  setData of the series (a fresh array each time) and the first paint
//                / building the SVG and its first layout
//   pan step     the window (half the range) moved by 1% of its span, alternately
//                right and left: the module rebuckets the lanes on screen and paints
//                / every rect's x attribute set anew, and (the cheapest DOM pan) the
//                translate of the group that holds the marks
//   repaint      paint() of an unchanged window (what a hover or a selection costs)
export async function timelineCase(lanes, marks, runs) {
  const { series, from, to } = makeSeries(lanes, marks);
  const copy = () => series.map((s) => ({ labels: s.labels, timestamps: s.timestamps }));
  const host = timelineHost();
  const tl = new Timeline(host, {});
  const paintNow = () => {
    if (tl.frame) cancelAnimationFrame(tl.frame);
    tl.frame = 0;
    tl.paint();
  };
  const out = { lanes, marks, total: lanes * marks };
  await nextFrame();

  out.firstPaint = await repeat(() => { tl.setData(copy(), from, to, null, null); paintNow(); },
    { runs, before: () => tl.setLoading() });
  let drawn = 0;
  for (let i = 0; i < tl.series.length; i++) {
    const y = tl.laneTop(i);
    if (y >= AXIS_H && y < tl.height) drawn += tl.laneMarks(i).length;
  }
  out.canvasMarksFull = drawn;
  const span = Math.round((to - from) / 2);
  const vf0 = from + Math.round(span / 2);
  tl.setView(vf0, vf0 + span, false);
  paintNow();
  const d = Math.round(span / 100);
  out.pan = await repeat((i) => {
    const f = vf0 + (i % 2 === 0 ? d : 0);
    tl.setView(f, f + span, false);
    paintNow();
  }, { runs });
  out.repaint = await repeat(() => paintNow(), { runs });
  out.floor = await repeat(() => {}, { runs });
  tl.destroy();
  clear();

  // the reference, on the same series
  const budgetMs = 12000;
  let ref = null;
  out.svgBuild = await repeat(() => {
    ref = svgTimeline(series, from, to);
    stage.append(ref.el);
    forceLayout(ref.el);
  }, { runs, budgetMs, before: () => { if (ref) ref.el.remove(); ref = null; } });
  ref.el.remove();
  ref = svgTimeline(series, vf0, vf0 + span);
  stage.append(ref.el);
  await nextFrame();
  const k = ref.k;
  out.svgPanX = await repeat((i) => {
    const f = vf0 + (i % 2 === 0 ? d : 0);
    for (let l = 0; l < ref.lanes.length; l++) {
      const ts = series[l].timestamps;
      const rects = ref.lanes[l];
      for (let j = 0; j < rects.length; j++) rects[j].setAttribute('x', (PAD_X + (ts[j] - f) * k - 0.5).toFixed(1));
    }
    forceLayout(ref.el);
  }, { runs, budgetMs });
  out.svgPanTransform = await repeat((i) => {
    ref.pan.setAttribute('transform', i % 2 === 0 ? `translate(${(-d * k).toFixed(1)} 0)` : 'translate(0 0)');
    forceLayout(ref.el);
  }, { runs, budgetMs });
  out.svgElements = ref.svg.getElementsByTagName('*').length;
  ref.el.remove();
  clear();
  return strip(out);
}

// ------------------------------------------------------------------ values chart

// The chart's lines for makeSeries' timestamps: a heap-like value per profile, a
// random walk around each series' own level.
function chartLines(series, seed = 3) {
  const r = rng(seed);
  return series.map((s, i) => {
    const vs = new Array(s.timestamps.length);
    let v = (1 + (i % 17)) * 64 * 1024 * 1024;
    for (let j = 0; j < vs.length; j++) {
      v = Math.max(1e6, v + (r() - 0.5) * 4 * 1024 * 1024);
      vs[j] = v;
    }
    return { labels: { instance: s.labels.instance, job: 'bench' }, ts: s.timestamps, vs };
  });
}

// The reference: the same lines as an SVG, one <polyline> per series with every
// point (no decimation), over the same 170 px high plot.
function svgChart(lines, vf, vt, top) {
  const NS = 'http://www.w3.org/2000/svg';
  const W = 1280;
  const H = 170;
  const k = (W - 2 * PAD_X) / (vt - vf);
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('width', W);
  svg.setAttribute('height', H);
  svg.style.display = 'block';
  const colors = ['#2f6fd6', '#d6336c', '#2b8a3e', '#e8590c', '#7048e8', '#0c8599', '#c2255c', '#5c940d', '#1864ab', '#a61e4d'];
  for (let i = 0; i < lines.length; i++) {
    const { ts, vs } = lines[i];
    const pts = new Array(ts.length);
    for (let j = 0; j < ts.length; j++) {
      pts[j] = (PAD_X + (ts[j] - vf) * k).toFixed(1) + ',' + (16 + (H - 22) * (1 - vs[j] / top)).toFixed(1);
    }
    const pl = document.createElementNS(NS, 'polyline');
    pl.setAttribute('points', pts.join(' '));
    pl.setAttribute('fill', 'none');
    pl.setAttribute('stroke', colors[i % colors.length]);
    pl.setAttribute('stroke-opacity', '0.6');
    svg.append(pl);
  }
  return svg;
}

// One case of the values chart, lines x points at 1280 px, beside the timeline of the
// same series (one lane per series, its marks) in the same page and run:
//   first paint  Chart.setData + paint / Timeline.setData + paint / the SVG built
//   pan step     the window (half the range) moved by 1% and painted
//   repaint      paint() of an unchanged window (a hover)
export async function chartCase(nLines, points, runs) {
  const { series, from, to } = makeSeries(nLines, points, 5);
  const lines = chartLines(series);
  const out = { lines: nLines, points, total: nLines * points };
  const span = Math.round((to - from) / 2);
  const vf0 = from + Math.round(span / 2);
  const d = Math.round(span / 100);

  // the timeline of the same series
  const tl = new Timeline(timelineHost(), {});
  const tlPaint = () => { if (tl.frame) cancelAnimationFrame(tl.frame); tl.frame = 0; tl.paint(); };
  await nextFrame();
  const copy = () => series.map((s) => ({ labels: s.labels, timestamps: s.timestamps }));
  out.tlFirstPaint = await repeat(() => { tl.setData(copy(), from, to, null, null); tlPaint(); },
    { runs, before: () => tl.setLoading() });
  tl.setView(vf0, vf0 + span, false);
  tlPaint();
  out.tlPan = await repeat((i) => {
    const f = vf0 + (i % 2 === 0 ? d : 0);
    tl.setView(f, f + span, false);
    tlPaint();
  }, { runs });
  tl.destroy();

  // the chart
  clear();
  const host = document.createElement('div');
  host.id = 'chart';
  stage.append(host);
  const ch = new Chart(host, {});
  const chPaint = () => { if (ch.frame) cancelAnimationFrame(ch.frame); ch.frame = 0; ch.paint(); };
  await nextFrame();
  ch.setWindow(from, to);
  out.firstPaint = await repeat(() => {
    ch.setData(lines.map((l) => ({ labels: l.labels, ts: l.ts, vs: l.vs })), { unit: 'bytes', metric: 'heap_inuse_space_bytes' });
    chPaint();
  }, { runs, before: () => ch.setLoading() });
  ch.setWindow(vf0, vf0 + span);
  chPaint();
  out.pan = await repeat((i) => {
    const f = vf0 + (i % 2 === 0 ? d : 0);
    ch.setWindow(f, f + span);
    chPaint();
  }, { runs });
  out.repaint = await repeat(() => chPaint(), { runs });
  out.floor = await repeat(() => {}, { runs });
  out.points = Number(host.dataset.points);
  ch.destroy();
  clear();

  // the reference
  let top = 0;
  for (const l of lines) for (const v of l.vs) if (v > top) top = v;
  let ref = null;
  out.svgBuild = await repeat(() => {
    ref = svgChart(lines, from, to, top);
    stage.append(ref);
    forceLayout(ref);
  }, { runs, budgetMs: 12000, before: () => { if (ref) ref.remove(); ref = null; } });
  if (ref) ref.remove();
  clear();
  return strip(out);
}

// ------------------------------------------------------------------ flame graph

function countTree(root) {
  let nodes = 0;
  let depth = 0;
  const st = [[root, 0]];
  while (st.length) {
    const [n, d] = st.pop();
    nodes++;
    if (d > depth) depth = d;
    for (const c of n.children || []) st.push([c, d + 1]);
  }
  return { nodes, depth };
}

// A synthetic call tree of n nodes: 3,000 function names in 150 packages, each
// node's parent drawn with a bias towards recent nodes (so stacks grow deep, up to
// 60), sibling names distinct, self values heavy-tailed; totals summed bottom-up and
// children in descending total, like profd's flame JSON.
export function synthTree(n, seed = 7) {
  const r = rng(seed);
  const names = [];
  for (let p = 0; p < 150; p++) {
    const pkg = p % 3 === 0 ? `runtime/internal${p}` : `github.com/acme/service${p % 17}/pkg${p}`;
    for (let f = 0; f < 20; f++) names.push(f % 4 === 0 ? `${pkg}.(*Server${f}).Handle` : `${pkg}.func${f}`);
  }
  const root = { name: 'root', self: 0, total: 0, children: [] };
  const nodes = [root];
  const depth = [0];
  const used = [new Set()];
  while (nodes.length < n) {
    let pi = Math.floor(nodes.length * (1 - r() ** 4));
    if (pi >= nodes.length) pi = nodes.length - 1;
    if (depth[pi] >= 60) pi = Math.floor(r() * Math.min(nodes.length, 50));
    const parent = nodes[pi];
    let name;
    for (let tries = 0; tries < 8; tries++) {
      name = names[Math.floor(r() * names.length)];
      if (!used[pi].has(name)) break;
      name = null;
    }
    if (!name) continue;
    used[pi].add(name);
    const node = { name, self: Math.floor(1000 * r() ** -1.2), total: 0, children: [] };
    parent.children.push(node);
    nodes.push(node);
    depth.push(depth[pi] + 1);
    used.push(new Set());
  }
  for (let i = nodes.length - 1; i >= 0; i--) {
    const nd = nodes[i];
    let t = nd.self;
    for (const c of nd.children) t += c.total;
    nd.total = t;
    nd.children.sort((a, b) => b.total - a.total);
  }
  return root;
}

// The frame zoomed into: of the frames between 2% and 30% of the total, the one
// with the most nodes below it (zooming into it brings the most new frames on
// screen). Returns its path of names below the root.
function zoomPathOf(root) {
  let best = null;
  let bestCount = -1;
  const walk = (n, path) => {
    let count = 1;
    for (const c of n.children || []) count += walk(c, path.concat(c.name));
    const share = n.total / root.total;
    if (n !== root && share >= 0.02 && share <= 0.3 && count > bestCount) {
      best = path;
      bestCount = count;
    }
    return count;
  };
  walk(root, []);
  return best || [];
}

let trees = {};

export async function loadTree(key, url) {
  const t0 = now();
  const res = await fetch(url);
  const j = await res.json();
  trees[key] = { root: j.root, unit: j.unit };
  return { ms: now() - t0, ...countTree(j.root) };
}

export function makeSynth(key, n) {
  const t0 = now();
  trees[key] = { root: synthTree(n), unit: 'nanoseconds' };
  return { ms: now() - t0, ...countTree(trees[key].root) };
}

// The reference: one absolutely positioned <div> per frame of the same layout, with
// the same colours, the same labels (fitLabel, cut to the same width) and the dim
// ancestors' opacity.
function divFlame(lay, charW) {
  const box = document.createElement('div');
  box.className = 'ref-flame';
  box.style.height = lay.depths * ROW_H + 'px';
  const frag = document.createDocumentFragment();
  const divs = new Array(lay.rects.length);
  for (let i = 0; i < lay.rects.length; i++) {
    const r = lay.rects[i];
    const c = frameColor(r.name, false);
    const d = document.createElement('div');
    d.style.cssText = `left:${r.x}px;top:${r.depth * ROW_H}px;width:${Math.max(r.w - 1, 0.5)}px;` +
      `background:${c.fill};color:${c.text}${r.dim ? ';opacity:0.45' : ''}`;
    if (r.w > charW * 2 + 6) {
      const label = fitLabel(r.name, Math.floor((r.w - 6) / charW));
      if (label) d.textContent = label;
    }
    frag.append(d);
    divs[i] = d;
  }
  box.append(frag);
  return { el: box, divs };
}

// One flame graph case on a loaded tree:
//   layout       layoutFlame alone (pure JS, shared by both sides)
//   first paint  FlameView.setData (layout, canvas size, draw) / layoutFlame and
//                building the DIVs
//   redraw       the search highlight switched on and off (every frame's colour and
//                alpha change; the match cache kept, the share not recomputed) /
//                the same restyle of every DIV
//   zoom in/out  into the frame zoomPathOf picks, and back to the root: setZoom +
//                draw / layoutFlame of the new zoom and the DIVs built anew
export async function flameCase(key, runs, search = 'runtime') {
  const { root, unit } = trees[key];
  clear();
  const host = document.createElement('div');
  host.className = 'host';
  stage.append(host);
  const view = new FlameView(host, {});
  const drawNow = () => {
    cancelAnimationFrame(view._raf);
    view._draw();
  };
  await nextFrame();
  const width = view.scroll.clientWidth;
  const out = { width };
  const layTimes = [];
  for (let i = -1; i < runs; i++) {
    const t0 = now();
    layoutFlame(root, { width });
    if (i >= 0) layTimes.push(now() - t0);
  }
  out.layout = { js: median(layTimes), n: layTimes.length };
  out.firstPaint = await repeat(() => { view.setData(root, unit); drawNow(); },
    { runs, before: () => view.setState('loading') });
  out.frames = view.layout.rects.length;
  out.depths = view.layout.depths;
  const matcher = compileMatcher(search);
  out.redraw = await repeat((i) => {
    view.match = i % 2 === 0 ? matcher : null;
    drawNow();
  }, { runs });
  view.match = null;
  const zpath = zoomPathOf(root);
  out.zoomPath = zpath.length;
  out.zoomIn = await repeat(() => { view.setZoom(zpath); drawNow(); },
    { runs, before: () => { view.setZoom([]); drawNow(); } });
  out.zoomFrames = view.layout.rects.length;
  out.zoomOut = await repeat(() => { view.setZoom([]); drawNow(); },
    { runs, before: () => { view.setZoom(zpath); drawNow(); } });
  out.floor = await repeat(() => {}, { runs });
  const charW = view._charW;
  view.destroy();
  clear();

  // the reference
  const budgetMs = 12000;
  let ref = null;
  const drop = () => { if (ref) ref.el.remove(); ref = null; };
  out.divBuild = await repeat(() => {
    const lay = layoutFlame(root, { width });
    ref = divFlame(lay, charW);
    stage.append(ref.el);
    forceLayout(ref.el);
  }, { runs, budgetMs, before: drop });
  const lay = layoutFlame(root, { width });
  const cache = new Map();
  const isMatch = (name) => {
    let m = cache.get(name);
    if (m === undefined) cache.set(name, (m = matcher(name)));
    return m;
  };
  const hl = { fill: 'hsl(282, 70%, 70%)', text: '#141414' };
  out.divRedraw = await repeat((i) => {
    const on = i % 2 === 0;
    for (let j = 0; j < lay.rects.length; j++) {
      const r = lay.rects[j];
      const m = on && r.depth > 0 && isMatch(r.name);
      const c = m ? hl : frameColor(r.name, false);
      const s = ref.divs[j].style;
      s.background = c.fill;
      s.color = c.text;
      s.opacity = r.dim ? '0.45' : on && !m ? '0.5' : '';
    }
    forceLayout(ref.el);
  }, { runs, budgetMs });
  const divZoom = (zoom) => {
    drop();
    ref = divFlame(layoutFlame(root, { width, zoom }), charW);
    stage.append(ref.el);
    forceLayout(ref.el);
  };
  out.divZoomIn = await repeat(() => divZoom(zpath), { runs, budgetMs, before: () => divZoom([]) });
  out.divZoomOut = await repeat(() => divZoom([]), { runs, budgetMs, before: () => divZoom(zpath) });
  drop();
  clear();
  return strip(out);
}

// Leaves the per-run arrays out of what goes back to node, keeping the spread.
function strip(o) {
  for (const v of Object.values(o)) {
    if (v && typeof v === 'object' && v.frameAll) {
      v.frameMin = Math.min(...v.frameAll);
      v.frameMax = Math.max(...v.frameAll);
      delete v.jsAll;
      delete v.frameAll;
    }
  }
  return o;
}

export function info() {
  return { ua: navigator.userAgent, dpr: window.devicePixelRatio, w: innerWidth, h: innerHeight };
}

window.bench = { timelineCase, chartCase, loadTree, makeSynth, flameCase, info };
window.benchReady = true;
