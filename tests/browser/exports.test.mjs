// exports.test.mjs: the profile view's export menu in Debian's Chromium, against the
// profd run.sh starts (PD_* variables). For a heap profile opened from its URL, zoomed
// and on a chosen sample type, each entry's download happens and holds the right
// thing: pprof is the stored profile (go tool pprof -raw prints the same), folded
// stacks are the stacks and values of go tool pprof -raw, speedscope JSON parses with
// every sample type and per-frame totals equal to go tool pprof -top's flat, and the
// SVG parses as XML with one frame per frame the canvas draws and the root's label.
// "Copy link" puts the view's URL on the clipboard, and that URL opens the same view.
// At 1400 and 390 px wide, in both themes; screenshots in PD_SCREENSHOTS.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set: run this through tests/browser/run.sh`);
  return v;
};
const URL_BASE = env('PD_URL');
const TMP = env('PD_TMP');
const SHOTS = env('PD_SCREENSHOTS');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const HEAP = 'heap{job="served"}';
const TYPE = 'alloc_space'; // not the default (inuse_space): the choice must carry
const T = 20000;

function pprof(args) {
  return execFileSync('go', ['tool', 'pprof', '-symbolize=none', ...args], {
    cwd: TMP, env: { ...process.env, PPROF_TMPDIR: TMP }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
  });
}

// The stacks of one sample type as go tool pprof -raw lists samples and locations:
// Map "outer;...;leaf" → summed value (zero sums left out).
function rawStacks(file, type) {
  const lines = pprof(['-raw', file]).split('\n');
  const si = lines.findIndex((l) => l.startsWith('Samples:'));
  const types = lines[si + 1].trim().split(/\s+/).map((t) => t.replace(/\[dflt\]$/, '').split('/')[0]);
  const col = types.indexOf(type);
  assert.ok(col >= 0, `${file} has ${type}`);
  const samples = [];
  let i = si + 2;
  for (; i < lines.length && lines[i] !== 'Locations'; i++) {
    const m = /^\s*([-\d\s]+): ([\d ]+)$/.exec(lines[i]);
    if (m) samples.push({ v: Number(m[1].trim().split(/\s+/)[col]), locs: m[2].trim().split(' ').map(Number) });
  }
  const locs = new Map();
  let cur = null;
  for (i++; i < lines.length && lines[i] !== 'Mappings'; i++) {
    const m = /^\s*(\d+): 0x[0-9a-f]+ (?:M=\d+ )?(.*)$/.exec(lines[i]);
    if (m) {
      cur = [];
      locs.set(Number(m[1]), cur);
      if (m[2].trim()) cur.push(m[2].trim().split(' ')[0]);
    } else if (cur && lines[i].trim()) cur.push(lines[i].trim().split(' ')[0]);
  }
  const out = new Map();
  for (const s of samples) {
    const frames = s.locs.flatMap((l) => locs.get(l)).reverse(); // leaf first, innermost first
    if (!frames.length) continue;
    const k = frames.join(';');
    out.set(k, (out.get(k) || 0) + s.v);
  }
  for (const [k, v] of out) if (v === 0) out.delete(k);
  return out;
}

// go tool pprof -top -nodefraction=0's flat per function, non-zero only.
function topFlat(file, type) {
  const out = pprof(['-top', '-nodefraction=0', `-sample_index=${type}`, '-unit=bytes', file]).split('\n');
  const h = out.findIndex((l) => /^\s*flat\s+flat%/.test(l));
  const flat = new Map();
  for (const l of out.slice(h + 1)) {
    const f = l.trim().split(/\s+/);
    if (f.length < 6) continue;
    const v = Number(f[0].replace(/B$/, ''));
    if (v) flat.set(f.slice(5).join(' ').replace(/ \((partial-)?inline\)$/, ''), v);
  }
  return flat;
}

// ---- the browser ----

let browser;
const pageErrors = [];
let stored; // {t, file}: the heap profile the steps open, as the API stores it

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  for (const f of readdirSync(SHOTS)) if (f.endsWith('.png')) rmSync(join(SHOTS, f));
  browser = await chromium.launch({
    executablePath: CHROMIUM, headless: process.env.PD_BROWSER_HEADED !== '1',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  const u = new URL('/api/v1/query_range', URL_BASE);
  u.searchParams.set('query', HEAP);
  u.searchParams.set('start', String(Date.now() / 1000 - 3600));
  const body = await (await fetch(u)).json();
  const t = body.data[0].timestamps[0];
  const q = new URL('/api/v1/query', URL_BASE);
  for (const [k, v] of Object.entries({ query: HEAP, time: (t / 1000).toFixed(3), lookback: '0.001', report: 'proto' })) q.searchParams.set(k, v);
  const r = await fetch(q);
  assert.equal(r.status, 200);
  const file = join(TMP, 'exports-stored.pb.gz');
  writeFileSync(file, Buffer.from(await r.arrayBuffer()));
  stored = { t, file };
});

after(async () => {
  if (browser) await browser.close();
  assert.deepEqual(pageErrors, [], 'no script errors in the pages');
});

async function shot(p, name) {
  await p.screenshot({ path: join(SHOTS, name + '.png'), fullPage: true });
}

// The view's URL: the stored profile open on TYPE, zoomed into the root's heaviest child.
async function viewUrl() {
  const q = new URL('/api/v1/query', URL_BASE);
  for (const [k, v] of Object.entries({ query: HEAP, time: (stored.t / 1000).toFixed(3), lookback: '0.001', report: 'flamegraph', sample_index: TYPE })) q.searchParams.set(k, v);
  const fg = (await (await fetch(q)).json()).data;
  const zoom = fg.root.children[0].name;
  const u = new URL('/', URL_BASE);
  for (const [k, v] of Object.entries({ query: HEAP, range: '1h', open: 'single', sel: HEAP, time: String(stored.t), sample: TYPE, focus: zoom })) u.searchParams.set(k, v);
  return { url: u.toString(), zoom };
}

async function profileReady(p) {
  await p.waitForFunction(() => {
    const pr = document.querySelector('#profile');
    const fl = document.querySelector('#flame');
    return pr && fl && pr.dataset.state === 'ready' && fl.dataset.state === 'ready';
  }, null, { timeout: T });
}

async function openMenu(p) {
  if (!(await p.$eval('#export-menu', (d) => d.open))) await p.click('#export-menu > summary');
  await p.waitForSelector('#export-svg', { state: 'visible' });
}

async function download(p, sel) {
  await openMenu(p);
  const [dl] = await Promise.all([p.waitForEvent('download', { timeout: T }), p.click(sel)]);
  const path = join(TMP, `dl-${Date.now()}-${dl.suggestedFilename()}`);
  await dl.saveAs(path);
  return { name: dl.suggestedFilename(), path, text: () => readFileSync(path, 'utf8') };
}

const cases = [
  { name: 'desktop-light', viewport: { width: 1400, height: 950 }, theme: 'light' },
  { name: 'desktop-dark', viewport: { width: 1400, height: 950 }, theme: 'dark' },
  { name: 'narrow-light', viewport: { width: 390, height: 844 }, theme: 'light', mobile: true },
  { name: 'narrow-dark', viewport: { width: 390, height: 844 }, theme: 'dark', mobile: true },
];

let n = 0;
for (const c of cases) {
  test(`exports ${c.name}`, { timeout: 180000 }, async () => {
    const ctx = await browser.newContext({
      viewport: c.viewport, colorScheme: c.theme, acceptDownloads: true,
      ...(c.mobile ? { hasTouch: true, isMobile: true } : {}),
    });
    await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(URL_BASE).origin });
    ctx.setDefaultTimeout(T);
    const p = await ctx.newPage();
    p.on('pageerror', (e) => pageErrors.push(`${c.name}: ${e.message}`));
    const prefix = String(++n).padStart(2, '0') + '-' + c.name;
    try {
      const { url, zoom } = await viewUrl();
      await p.goto(url);
      await profileReady(p);
      assert.equal(await p.$eval('html', (h) => h.dataset.theme), c.theme);
      assert.equal(await p.$eval('#sample-type', (s) => s.value), TYPE);
      await openMenu(p);
      // the menu is on screen, whole
      const W = c.viewport.width;
      for (const id of ['export-pprof', 'export-folded', 'export-speedscope', 'export-svg', 'profile-copy-link']) {
        const b = await p.locator('#' + id).boundingBox();
        assert.ok(b && b.x >= 0 && b.x + b.width <= W, `#${id} on screen: ${JSON.stringify(b)}`);
      }
      assert.ok(await p.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth),
        'the open menu does not widen the page');
      await shot(p, prefix + '-menu');

      // pprof: the stored profile
      const pb = await download(p, '#export-pprof');
      assert.match(pb.name, /^heap-.*\.pb\.gz$/);
      assert.equal(pprof(['-raw', pb.path]), pprof(['-raw', stored.file]), 'the pprof download is the stored profile');

      // folded stacks of the sample type shown
      const fo = await download(p, '#export-folded');
      assert.match(fo.name, /^heap-.*\.folded\.txt$/);
      const got = new Map();
      for (const line of fo.text().split('\n').filter(Boolean)) {
        const m = /^(.*) (-?\d+)$/.exec(line);
        assert.ok(m, `a folded line: ${line}`);
        assert.ok(!got.has(m[1]), `stack printed once: ${m[1]}`);
        got.set(m[1], Number(m[2]));
      }
      const want = rawStacks(stored.file, TYPE);
      assert.deepEqual([...got].sort(), [...want].sort(), 'folded stacks are go tool pprof -raw\'s');

      // speedscope: every sample type, the one shown active
      const ss = await download(p, '#export-speedscope');
      assert.match(ss.name, /^heap-.*\.speedscope\.json$/);
      const doc = JSON.parse(ss.text());
      assert.equal(doc.$schema, 'https://www.speedscope.app/file-format-schema.json');
      assert.deepEqual(doc.profiles.map((x) => x.name), ['alloc_objects', 'alloc_space', 'inuse_objects', 'inuse_space']);
      assert.equal(doc.activeProfileIndex, 1);
      const prof = doc.profiles[1];
      assert.equal(prof.type, 'sampled');
      assert.equal(prof.unit, 'bytes');
      assert.equal(prof.samples.length, prof.weights.length);
      const flat = new Map();
      prof.samples.forEach((s, i) => {
        const leaf = doc.shared.frames[s[s.length - 1]].name;
        flat.set(leaf, (flat.get(leaf) || 0) + prof.weights[i]);
      });
      assert.deepEqual([...flat].filter(([, v]) => v).sort(), [...topFlat(stored.file, TYPE)].sort(),
        'speedscope\'s flat per frame is go tool pprof -top\'s');

      // the SVG of the flame graph as shown
      const frames = await p.$eval('#flame', (el) => el.profdFrames());
      assert.equal(frames[0].name, 'root');
      assert.ok(frames[0].dim, 'zoomed: the root is a dimmed ancestor');
      assert.equal(frames[1].name, zoom);
      const sv = await download(p, '#export-svg');
      assert.match(sv.name, /\.svg$/);
      const svg = await p.evaluate((text) => {
        const d = new DOMParser().parseFromString(text, 'image/svg+xml');
        if (d.getElementsByTagName('parsererror').length) return { error: d.documentElement.textContent };
        const gs = [...d.querySelectorAll('g.frame')];
        return {
          root: d.documentElement.localName, theme: d.documentElement.getAttribute('data-theme'),
          frames: gs.length, rects: d.querySelectorAll('g.frame > rect').length,
          first: gs[0] && { title: gs[0].querySelector('title').textContent, label: gs[0].querySelector('text')?.textContent },
          second: gs[1] && gs[1].querySelector('title').textContent,
          width: Number(d.documentElement.getAttribute('width')),
        };
      }, sv.text());
      assert.ok(!svg.error, `the SVG parses: ${svg.error}`);
      assert.equal(svg.root, 'svg');
      assert.equal(svg.theme, c.theme);
      assert.equal(svg.frames, frames.length, 'one frame in the SVG per frame drawn');
      assert.equal(svg.rects, frames.length);
      assert.deepEqual(svg.first, { title: 'root', label: 'root' });
      assert.equal(svg.second, zoom, 'the SVG is zoomed as the view');
      const canvasW = await p.$eval('#flame', (el) => el.getBoundingClientRect().width);
      assert.ok(Math.abs(svg.width - canvasW) <= 1, `the SVG is as wide as the canvas (${svg.width} vs ${canvasW})`);
      // shown in the browser as a picture of its own
      const img = await ctx.newPage();
      await img.setContent(`<body style="margin:0"><img id="svg" src="data:image/svg+xml;base64,${Buffer.from(sv.text()).toString('base64')}"></body>`);
      await img.waitForFunction(() => document.querySelector('#svg').complete && document.querySelector('#svg').naturalWidth > 0);
      await img.screenshot({ path: join(SHOTS, prefix + '-svg.png') });
      await img.close();

      // copy link: the view's URL on the clipboard, which opens the same view
      await openMenu(p);
      await p.click('#profile-copy-link');
      await p.waitForFunction(() => document.querySelector('#profile-copy-link').textContent === 'Copied', null, { timeout: T });
      const link = await p.evaluate(() => navigator.clipboard.readText());
      assert.equal(link, await p.$eval('#profile-copy-link', (b) => b.dataset.url));
      // under the external URL (profd's default: this host and the listen port), as
      // the query page's Copy link; opened here at the address the test reaches
      const ext = await p.$eval('meta[name="profd-external-url"]', (m) => m.content);
      const extBase = ext ? ext.replace(/\/+$/, '') + '/' : new URL('/', URL_BASE).toString();
      assert.ok(link.startsWith(extBase), `${link} is under the external URL ${extBase}`);
      const lu = new URL(link);
      assert.equal(lu.searchParams.get('open'), 'single');
      assert.equal(lu.searchParams.get('sample'), TYPE);
      assert.equal(lu.searchParams.get('focus'), zoom);
      assert.equal(lu.searchParams.get('time'), String(stored.t));
      await shot(p, prefix + '-copied');
      const p2 = await ctx.newPage();
      p2.on('pageerror', (e) => pageErrors.push(`${c.name} (link): ${e.message}`));
      await p2.goto(new URL(lu.pathname + lu.search, URL_BASE).toString());
      await profileReady(p2);
      assert.equal(await p2.$eval('#sample-type', (s) => s.value), TYPE);
      const again = await p2.$eval('#flame', (el) => el.profdFrames());
      assert.deepEqual(again.map((f) => [f.name, f.depth, Math.round(f.w)]), frames.map((f) => [f.name, f.depth, Math.round(f.w)]),
        'the link shows the same flame graph');
      await shot(p2, prefix + '-link-opened');
    } catch (e) {
      await shot(p, prefix + '-FAILED').catch(() => {});
      throw e;
    } finally {
      await ctx.close();
    }
  });
}
