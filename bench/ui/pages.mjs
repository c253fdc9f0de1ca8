// bench/ui/pages.mjs: the UI pages benchmark's driver (bench/ui_pages.sh runs it).
// Against two running profds holding the same profiles, one serving the current web/
// and one a reference copy of it (an older commit's), it measures in headless
// Chromium at 1440x900, each figure for both and their ratio:
//
//   compare   /compare of two merges: ms until both panes are ready, and the
//             longest task (PerformanceObserver 'longtask') until then; opened
//             from the query page as the UI opens it (a route change, no page
//             load), and in a new tab (from navigation: modules, page and data)
//   hover     a merged flame graph (one per workload): ms a mousemove over a frame
//             takes until the frame is drawn again and its tooltip laid out
//             (the handler's synchronous work and the layout it forces), over up
//             to 400 frames; median, 95th percentile and the worst
//   cls       the cumulative layout shift of each page (the largest session window
//             of shifts without input, as web-vitals computes it) from navigation
//             until it is ready and has not shifted for 1 s
//
//   node bench/ui/pages.mjs CURRENT_URL REFERENCE_URL WORKLOADS_JSON
//
// WORKLOADS_JSON: [{name, query, start, end, split}] — a selector and the span of its
// profiles (Unix ms); split divides it into the compare page's two sides.
// Environment: CHROMIUM, PLAYWRIGHT_CORE, BENCH_RUNS (default 5).
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const [curUrl, refUrl, workloadsJson] = process.argv.slice(2);
if (!curUrl || !refUrl || !workloadsJson) {
  console.error('usage: node pages.mjs CURRENT_URL REFERENCE_URL WORKLOADS_JSON');
  process.exit(2);
}
const workloads = JSON.parse(workloadsJson);
const pwDir = process.env.PLAYWRIGHT_CORE || path.join(here, '../../tests/browser/node_modules/playwright-core');
const { chromium } = await import(pathToFileURL(path.join(pwDir, 'index.mjs')).href);
const runs = Math.max(1, Number(process.env.BENCH_RUNS || 5));
const T = 60000;

// observers installed before any script of the page runs
function observe() {
  window.benchShifts = [];
  window.benchLongTasks = [];
  new PerformanceObserver((l) => {
    for (const e of l.getEntries()) if (!e.hadRecentInput) window.benchShifts.push({ t: e.startTime, v: e.value });
  }).observe({ type: 'layout-shift', buffered: true });
  try {
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) window.benchLongTasks.push({ t: e.startTime, d: e.duration });
    }).observe({ type: 'longtask', buffered: true });
  } catch (e) { /* no long task timing */ }
}

// CLS as web-vitals computes it: shifts grouped into windows (gaps < 1 s, at most 5 s
// long), the largest window's sum
function cls(shifts) {
  let best = 0, cur = 0, first = -1, last = -1;
  for (const s of shifts) {
    if (first >= 0 && s.t - last < 1000 && s.t - first < 5000) cur += s.v;
    else { cur = s.v; first = s.t; }
    last = s.t;
    best = Math.max(best, cur);
  }
  return best;
}

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
await context.addInitScript(observe);
let failed = false;

async function fresh() {
  const p = await context.newPage();
  p.on('pageerror', (e) => { console.error('page error:', e.message); failed = true; });
  return p;
}

const enc = encodeURIComponent;
function compareUrl(base, w) {
  return `${base}/compare?a.sel=${enc(w.query)}&a.start=${w.start}&a.end=${w.split}` +
    `&b.sel=${enc(w.query)}&b.start=${w.split + 1}&b.end=${w.end}`;
}
function mergeUrl(base, w) {
  return `${base}/?query=${enc(w.query)}&from=${w.start - 60000}&to=${w.end + 60000}&open=merge` +
    `&sel=${enc(w.query)}&start=${w.start}&end=${w.end}`;
}
const profileReady = () => {
  const pr = document.querySelector('#profile');
  const fl = document.querySelector('#flame');
  return !!(pr && fl && pr.dataset.state === 'ready' && fl.dataset.state === 'ready' &&
    document.querySelector('#top-table tbody tr[data-name]'));
};

// waits for ready(), then for 1 s without a layout shift (at most 15 s more)
async function settle(p, ready) {
  await p.waitForFunction(ready, null, { timeout: T });
  await p.waitForFunction(() => {
    const s = window.benchShifts;
    const lastShift = s.length ? s[s.length - 1].t : 0;
    return performance.now() - lastShift > 1000;
  }, null, { timeout: 15000, polling: 100 }).catch(() => {});
}

async function measureCompare(base, w) {
  const p = await fresh();
  await p.goto(compareUrl(base, w));
  const readyAt = await (await p.waitForFunction(() =>
    document.querySelector('#compare')?.dataset.state === 'ready' && performance.now(), null, { timeout: T, polling: 'raf' })).jsonValue();
  const longest = await p.evaluate((t) => Math.max(0, ...window.benchLongTasks.filter((x) => x.t <= t).map((x) => x.d)), readyAt);
  await p.close();
  return { ready: readyAt, longest };
}

// /compare opened from the query page as the UI opens it (a route change in the same
// document: no page load): ms from the route change to both panes ready
async function measureCompareInApp(base, w) {
  const p = await fresh();
  await p.goto(`${base}/?query=${enc(w.query)}&from=${w.start - 60000}&to=${w.end + 60000}`);
  await p.waitForFunction(() => document.querySelector('#timeline')?.dataset.state === 'ready', null, { timeout: T });
  const path = compareUrl('', w);
  const t0 = await p.evaluate((u) => {
    window.benchLongTasks = [];
    const t = performance.now();
    history.pushState(null, '', u);
    window.dispatchEvent(new PopStateEvent('popstate'));
    return t;
  }, path);
  const readyAt = await (await p.waitForFunction(() =>
    document.querySelector('#compare')?.dataset.state === 'ready' && performance.now(), null, { timeout: T, polling: 'raf' })).jsonValue();
  const longest = await p.evaluate((t) => Math.max(0, ...window.benchLongTasks.filter((x) => x.t <= t).map((x) => x.d)), readyAt);
  await p.close();
  return { ready: readyAt - t0, longest };
}

async function measureHover(base, w) {
  const p = await fresh();
  await p.goto(mergeUrl(base, w));
  await p.waitForFunction(profileReady, null, { timeout: T });
  const r = await p.evaluate(async () => {
    const c = document.querySelector('canvas#flame');
    const all = c.profdFrames();
    const fs = all.filter((f) => f.w >= 2);
    const tip = document.querySelector('#profile .pf-tooltip');
    const step = Math.max(1, Math.floor(fs.length / 400));
    const ds = [];
    const raf = () => new Promise((res) => requestAnimationFrame(() => res()));
    for (let i = 0; i < fs.length; i += step) {
      const f = fs[i];
      const t0 = performance.now();
      c.dispatchEvent(new MouseEvent('mousemove', { bubbles: true, clientX: f.x + f.w / 2, clientY: f.y + f.h / 2 }));
      if (tip) void tip.offsetWidth; // the layout the tooltip needs
      void document.body.offsetHeight;
      ds.push(performance.now() - t0);
      await raf();
    }
    ds.sort((a, b) => a - b);
    return { n: ds.length, frames: fs.length, functions: new Set(all.map((f) => f.name)).size - 1, p50: ds[Math.floor(ds.length / 2)], p95: ds[Math.floor(ds.length * 0.95)], max: ds[ds.length - 1] };
  });
  await p.close();
  return r;
}

async function measureCls(base, w) {
  const pages = [
    ['landing /', `${base}/`, () => !!document.querySelector('#timeline .chips .chip')],
    ['query page', `${base}/?query=${enc(w.query)}&from=${w.start - 60000}&to=${w.end + 60000}`,
      () => document.querySelector('#timeline')?.dataset.state === 'ready'],
    ['merged profile', mergeUrl(base, w), profileReady],
    ['/compare', compareUrl(base, w), () => document.querySelector('#compare')?.dataset.state === 'ready'],
    ['/targets', `${base}/targets`, () => !!document.querySelector('#main table, #main .target, #main .empty')],
    ['/status', `${base}/status`, () => !!document.querySelector('#status-flags table')],
  ];
  const out = {};
  for (const [name, url, ready] of pages) {
    const p = await fresh();
    await p.goto(url);
    await settle(p, ready);
    out[name] = cls(await p.evaluate(() => window.benchShifts));
    await p.close();
  }
  return out;
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const fmt = (x, d = 1) => (x === undefined || Number.isNaN(x) ? '?' : x.toFixed(d));
const ratio = (a, b) => (b > 0 ? (a / b).toFixed(2) + '×' : a > 0 ? '∞' : '1.00×');
function row(label, cur, ref, aim, d = 1) {
  console.log(`  ${label.padEnd(44)} ${fmt(cur, d).padStart(9)} ${fmt(ref, d).padStart(10)} ${ratio(cur, ref).padStart(7)}   ${aim}`);
}
const header = () => console.log(`  ${'figure'.padEnd(44)} ${'current'.padStart(9)} ${'reference'.padStart(10)} ${'ratio'.padStart(7)}   aim`);

try {
  // a first load of each, not measured: Chromium's caches and profd's warm
  for (const base of [curUrl, refUrl]) {
    const p = await fresh();
    await p.goto(compareUrl(base, workloads[0]));
    await p.waitForFunction(() => document.querySelector('#compare')?.dataset.state === 'ready', null, { timeout: T });
    await p.close();
  }
  for (const w of workloads) {
    console.log(`\nworkload ${w.name}: ${w.query}`);
    const res = { cur: { c: [], a: [], h: [] }, ref: { c: [], a: [], h: [] } };
    for (let i = 0; i < runs; i++) {
      for (const [k, base] of [['cur', curUrl], ['ref', refUrl]]) {
        res[k].c.push(await measureCompare(base, w));
        res[k].a.push(await measureCompareInApp(base, w));
        res[k].h.push(await measureHover(base, w));
      }
    }
    const m = (k, f) => median(res[k].c.map(f));
    const hm = (k, f) => median(res[k].h.map(f));
    console.log(`  (${runs} runs each, medians; the merged flame graph: ${res.cur.h[0].functions} functions in its frames, ${res.cur.h[0].frames} frames of 2 px or more, ${res.cur.h[0].n} hovered)`);
    header();
    const am = (k, f) => median(res[k].a.map(f));
    row('/compare from the UI: ready (ms)', am('cur', (x) => x.ready), am('ref', (x) => x.ready), '≤ 400');
    row('/compare from the UI: longest task (ms)', am('cur', (x) => x.longest), am('ref', (x) => x.longest), '≤ 100');
    row('/compare in a new tab: ready (ms)', m('cur', (x) => x.ready), m('ref', (x) => x.ready), '≤ 400');
    row('/compare in a new tab: longest task (ms)', m('cur', (x) => x.longest), m('ref', (x) => x.longest), '≤ 100');
    row('hover a frame, median (ms)', hm('cur', (x) => x.p50), hm('ref', (x) => x.p50), '');
    row('hover a frame, 95th percentile (ms)', hm('cur', (x) => x.p95), hm('ref', (x) => x.p95), '≤ 16');
    row('hover a frame, worst (ms)', hm('cur', (x) => x.max), hm('ref', (x) => x.max), '');
    const cc = [], rc = [];
    for (let i = 0; i < Math.min(runs, 3); i++) { cc.push(await measureCls(curUrl, w)); rc.push(await measureCls(refUrl, w)); }
    for (const name of Object.keys(cc[0])) {
      row(`layout shift, ${name}`, median(cc.map((x) => x[name])), median(rc.map((x) => x[name])), '≤ 0.1', 3);
    }
  }
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
