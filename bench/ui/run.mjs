// bench/ui/run.mjs: the web UI benchmark's driver (bench/ui.sh runs it). Starts a
// static file server on a free 127.0.0.1 port (web/ at /, bench/ui/ at /bench/, the
// flame graph JSON at /data/), opens bench/ui/harness.html in headless Chromium at
// 1280x800 and prints the harness's measurements, each beside its DOM reference.
//
//   node bench/ui/run.mjs WEB_DIR DATA_DIR
//
// Environment: CHROMIUM (default /usr/bin/chromium), PLAYWRIGHT_CORE (the
// playwright-core directory), BENCH_RUNS (repetitions per figure, default 15),
// BENCH_SYNTH_NODES (the synthetic tree's size, default 100000), BENCH_UI_CASES
// (`timeline`, `chart`, `flame`, comma-separated, default all three).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const [webDir, dataDir] = process.argv.slice(2).map((p) => path.resolve(p));
if (!webDir || !dataDir) {
  console.error('usage: node run.mjs WEB_DIR DATA_DIR');
  process.exit(2);
}
const pwDir = process.env.PLAYWRIGHT_CORE || path.join(here, '../../tests/browser/node_modules/playwright-core');
const { chromium } = await import(pathToFileURL(path.join(pwDir, 'index.mjs')).href);
const runs = Number(process.env.BENCH_RUNS || 15);
const synthNodes = Number(process.env.BENCH_SYNTH_NODES || 100000);
const cases = (process.env.BENCH_UI_CASES || 'timeline,chart,flame').split(',');

// ------------------------------------------------------------------ static server

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.css': 'text/css', '.json': 'application/json', '.svg': 'image/svg+xml' };
const ROOTS = [['/bench/', here], ['/data/', dataDir], ['/', webDir]];
const server = http.createServer((req, res) => {
  const url = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  const [prefix, dir] = ROOTS.find(([p]) => url.startsWith(p));
  const file = path.join(dir, url.slice(prefix.length));
  if (!file.startsWith(dir + path.sep) && file !== dir) { res.writeHead(403).end(); return; }
  fs.readFile(file, (err, body) => {
    if (err) { res.writeHead(404).end(); return; }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] || 'application/octet-stream',
      'cache-control': 'no-store' });
    res.end(body);
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}`;

// ------------------------------------------------------------------ browser

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox'],
});
let failed = false;
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  page.on('pageerror', (e) => { console.error('page error:', e.message); failed = true; });
  await page.goto(base + '/bench/harness.html');
  await page.waitForFunction(() => window.benchReady === true, null, { timeout: 30000 });
  const info = await page.evaluate(() => window.bench.info());
  console.log(`browser: ${info.ua.match(/(Headless)?Chrom(e|ium)\/[\d.]+/)?.[0] || info.ua}; ` +
    `viewport ${info.w}x${info.h}, devicePixelRatio ${info.dpr}; static server ${base}; ` +
    `BENCH_RUNS=${runs}`);
  console.log('statistic: median of the repetitions (n); ms per operation; ratio = reference / profd\n');

  const f = (x) => (x == null || Number.isNaN(x) ? '-' : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
  const ratio = (ref, ours) => (ours > 0 && ref > 0 ? (ref / ours).toFixed(1) + 'x' : '-');
  const row = (cols, widths) => cols.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join(' ');
  const W = [40, 10, 10, 5, 12, 12, 5, 9, 9];
  const head = () => {
    console.log(row(['case', 'canvas', 'canvas', 'n', 'reference', 'reference', 'n', 'ratio', 'ratio'], W));
    console.log(row(['', 'frame ms', 'JS ms', '', 'frame ms', 'JS ms', '', 'frame', 'JS'], W));
    console.log('-'.repeat(W.reduce((a, b) => a + b + 1, -1)));
  };
  const line = (name, ours, ref) => console.log(row([name, f(ours.frame), f(ours.js), ours.n,
    f(ref.frame), f(ref.js), ref.n ?? '', ratio(ref.frame, ours.frame), ratio(ref.js, ours.js)], W));

  if (cases.includes('timeline')) {
    console.log('1. Timeline (web/js/timeline.js) against one SVG <rect> per mark, 1280x800\n');
    head();
    const notes = [];
    for (const [lanes, marks] of [[10, 1000], [10, 10000], [30, 20000]]) {
      const r = await page.evaluate(([l, m, n]) => window.bench.timelineCase(l, m, n), [lanes, marks, runs]);
      const tag = `${lanes}x${marks.toLocaleString('en')}`;
      line(`${tag} data -> first paint`, r.firstPaint, r.svgBuild);
      line(`${tag} pan step (ref: x attrs)`, r.pan, r.svgPanX);
      line(`${tag} pan step (ref: transform)`, r.pan, r.svgPanTransform);
      line(`${tag} repaint, same window (no ref)`, r.repaint, {});
      notes.push(`${tag}: ${r.total.toLocaleString('en')} marks; canvas draws ${r.canvasMarksFull.toLocaleString('en')} ` +
        `(bucketed, lanes on screen), SVG holds ${r.svgElements.toLocaleString('en')} elements; ` +
        `empty step ${f(r.floor.frame)} ms; first-paint frame spread ${f(r.firstPaint.frameMin)}-${f(r.firstPaint.frameMax)} ms ` +
        `vs ${f(r.svgBuild.frameMin)}-${f(r.svgBuild.frameMax)} ms`);
    }
    console.log('');
    for (const n of notes) console.log('  ' + n);
    console.log('');
  }

  if (cases.includes('chart')) {
    console.log('2. Values chart (web/js/chart.js) against one SVG <polyline> per series, and the timeline of the same series, 1280 px wide\n');
    head();
    const notes = [];
    for (const [lines, points] of [[10, 1000], [100, 1000], [1000, 1000]]) {
      const r = await page.evaluate(([l, p, n]) => window.bench.chartCase(l, p, n), [lines, points, runs]);
      const tag = `${lines.toLocaleString('en')}x${points.toLocaleString('en')}`;
      line(`${tag} data -> first paint`, r.firstPaint, r.svgBuild);
      line(`${tag} pan step (no ref)`, r.pan, {});
      line(`${tag} repaint, same window (no ref)`, r.repaint, {});
      line(`${tag} timeline: data -> first paint`, r.tlFirstPaint, {});
      line(`${tag} timeline: pan step`, r.tlPan, {});
      notes.push(`${tag}: ${r.total.toLocaleString('en')} points; empty step ${f(r.floor.frame)} ms; ` +
        `chart first-paint frame spread ${f(r.firstPaint.frameMin)}-${f(r.firstPaint.frameMax)} ms`);
    }
    console.log('');
    for (const n of notes) console.log('  ' + n);
    console.log('');
  }

  if (cases.includes('flame')) {
    console.log('3. Flame graph (web/js/flame.js) against one absolutely positioned <div> per frame, 1280 px wide\n');
    const trees = [];
    const files = fs.readdirSync(dataDir).filter((x) => x.endsWith('.json'));
    for (const file of files) {
      const t = await page.evaluate(([k, u]) => window.bench.loadTree(k, u), [file, '/data/' + file]);
      trees.push([file.replace(/\.json$/, ''), file, t]);
    }
    const s = await page.evaluate(([k, n]) => window.bench.makeSynth(k, n), ['synthetic', synthNodes]);
    trees.push(['synthetic', 'synthetic', s]);
    for (const [label, , t] of trees) {
      console.log(`  ${label}: ${t.nodes.toLocaleString('en')} nodes, depth ${t.depth} (fetch + JSON.parse or build ${f(t.ms)} ms)`);
    }
    console.log('');
    head();
    const notes = [];
    for (const [label, key] of trees) {
      const r = await page.evaluate(([k, n]) => window.bench.flameCase(k, n), [key, runs]);
      console.log(row([`${label} layoutFlame only`, '', f(r.layout.js), r.layout.n, '', '', '', '', ''], W));
      line(`${label} data -> first paint`, r.firstPaint, r.divBuild);
      line(`${label} redraw (search on/off)`, r.redraw, r.divRedraw);
      line(`${label} zoom in`, r.zoomIn, r.divZoomIn);
      line(`${label} zoom out (to the root)`, r.zoomOut, r.divZoomOut);
      notes.push(`${label}: ${r.frames.toLocaleString('en')} frames drawn at the root, ${r.depths} levels; ` +
        `${r.zoomFrames.toLocaleString('en')} when zoomed into a frame ${r.zoomPath} level${r.zoomPath === 1 ? "" : "s"} down; empty step ${f(r.floor.frame)} ms`);
    }
    console.log('');
    for (const n of notes) console.log('  ' + n);
  }
} finally {
  await browser.close();
  server.close();
}
process.exit(failed ? 1 : 0);
