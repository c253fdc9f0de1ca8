// compare.test.mjs: the side-by-side page (/compare) in Debian's Chromium, against the
// profd that run.sh starts (scraping serve_profiles' growing heap every second). Side A
// is one stored heap profile, side B a merge of the next three; what each pane shows
// is checked against `go tool pprof` on the files the target served for them. Steps
// run in order in one page, as a person would use it; each leaves a screenshot in
// PD_SCREENSHOTS (browser-screenshots-compare/).
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
const SERVED_LOG = env('PD_SERVED_LOG');
const TMP = env('PD_TMP');
const SHOTS = env('PD_SCREENSHOTS');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const HEAP = 'heap{job="served"}';
const T = 20000; // how long a step waits for the UI

// ---- expected values, from go tool pprof on the served files ----

function pprof(args) {
  return execFileSync('go', ['tool', 'pprof', '-nodefraction=0', '-symbolize=none', ...args], {
    cwd: TMP, env: { ...process.env, PPROF_TMPDIR: TMP }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
  });
}

// The function names of go tool pprof -top, heaviest first.
function topNames(args) {
  const lines = pprof(['-top', ...args]).split('\n');
  const head = lines.findIndex((l) => /^\s*flat\s+flat%/.test(l));
  assert.ok(head >= 0, `go tool pprof -top ${args.join(' ')} printed no table`);
  return lines.slice(head + 1).filter((l) => l.trim())
    .map((l) => l.trim().split(/\s+/).slice(5).join(' ').replace(/ \(inline\)$/, ''));
}

// The sum of one sample type over the samples of files (a merge), from -raw.
function rawTotal(files, type) {
  let sum = 0;
  for (const f of files) {
    const lines = pprof(['-raw', f]).split('\n');
    const h = lines.findIndex((l) => l.trim().split(/\s+/).some((c) => c.startsWith(type + '/')));
    assert.ok(h >= 0, `go tool pprof -raw ${f} has no ${type}`);
    const col = lines[h].trim().split(/\s+/).findIndex((c) => c.startsWith(type + '/'));
    for (const l of lines.slice(h + 1)) {
      const m = /^\s*([-\d\s]+):/.exec(l);
      if (!m) { if (/^\S/.test(l)) break; continue; }
      sum += Number(m[1].trim().split(/\s+/)[col]);
    }
  }
  return sum;
}

// The total of the average of files in type: go tool pprof's merge of them with each
// sample's value divided by their number, rounded half away from zero (profd's
// aggregation=avg, the default for the heap in use).
function averageTotal(files, type) {
  const lines = pprof(['-raw', ...files]).split('\n');
  const h = lines.findIndex((l) => l.trim().split(/\s+/).some((c) => c.startsWith(type + '/')));
  const col = lines[h].trim().split(/\s+/).findIndex((c) => c.startsWith(type + '/'));
  let sum = 0;
  for (const l of lines.slice(h + 1)) {
    const m = /^\s*([-\d\s]+):/.exec(l);
    if (!m) { if (/^\S/.test(l)) break; continue; }
    const v = Math.abs(Number(m[1].trim().split(/\s+/)[col]));
    const q = Math.floor(v / files.length);
    sum += 2 * (v - q * files.length) >= files.length ? q + 1 : q;
  }
  return sum;
}

async function api(path, params) {
  const u = new URL('/api/v1/' + path, URL_BASE);
  for (const [k, v] of Object.entries(params || {})) u.searchParams.set(k, v);
  const body = await (await fetch(u)).json();
  assert.equal(body.status, 'success', `${u}: ${body.error}`);
  return body.data;
}

// Which served file the heap profile stored at t (ms) is: the one whose -raw is the
// stored profile's (a stored profile round-trips, sample for sample).
const rawCache = new Map();
const rawOf = (f) => { if (!rawCache.has(f)) rawCache.set(f, pprof(['-raw', f])); return rawCache.get(f); };
async function heapFileAt(t) {
  const u = new URL('/api/v1/query', URL_BASE);
  for (const [k, v] of Object.entries({ query: HEAP, time: (t / 1000).toFixed(3), lookback: '0.001', report: 'proto' })) {
    u.searchParams.set(k, v);
  }
  const r = await fetch(u);
  assert.equal(r.status, 200, `no heap profile stored at ${t}`);
  const stored = join(TMP, `cmp-stored-${t}.pb.gz`);
  writeFileSync(stored, Buffer.from(await r.arrayBuffer()));
  const want = pprof(['-raw', stored]);
  const files = [...new Set(readFileSync(SERVED_LOG, 'utf8').split('\n')
    .filter((l) => l.startsWith('/debug/pprof/heap ')).map((l) => l.slice('/debug/pprof/heap '.length)))];
  const f = files.find((x) => rawOf(x) === want);
  assert.ok(f, `the profile stored at ${t} is none of the served files`);
  return f;
}

// ---- the browser ----

let browser;
let context;
let page;
const pageErrors = [];
const watch = (p) => p.on('pageerror', (e) => pageErrors.push(`${p.url()}: ${e.message}`));

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  for (const f of readdirSync(SHOTS)) if (f.endsWith('.png')) rmSync(join(SHOTS, f));
  browser = await chromium.launch({
    executablePath: CHROMIUM, headless: process.env.PD_BROWSER_HEADED !== '1',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  context = await browser.newContext({ viewport: { width: 1400, height: 950 }, colorScheme: 'light' });
  context.setDefaultTimeout(T);
  page = await context.newPage();
  watch(page);
});

after(async () => {
  if (browser) await browser.close();
});

async function shot(name, p = page) {
  await p.mouse.move(1, 1);
  await p.screenshot({ path: join(SHOTS, name + '.png'), fullPage: true });
}

async function eventually(fn, ms = T) {
  const end = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (Date.now() > end) throw e;
      await new Promise((r) => setTimeout(r, 150));
    }
  }
}

const done = new Set();
function step(name, needs, fn) {
  test(name, { timeout: 90000 }, async (t) => {
    const missing = needs.filter((n) => !done.has(n));
    if (missing.length) { t.skip(`needs ${missing.join(', ')}`); return; }
    try {
      await fn(t);
    } catch (e) {
      await shot(name + '-FAILED').catch(() => {});
      throw e;
    }
    done.add(name);
  });
}

// ---- reading the page ----

// What a pane shows: {state, rows (top table names), total (raw), root (zoomed frame),
// frames (profdFrames), search, note}.
// (once every row of its table is drawn: rows after the first 50 come when the page is idle)
const pane = async (k, p = page) => (await p.waitForFunction(() => !document.querySelector('.pf-table[data-rows="partial"]')), p.evaluate((k) => {
  const root = document.querySelector(`#cmp-${k}`);
  const canvas = document.querySelector(`#cmp-${k}-flame`);
  const note = document.querySelector(`#cmp-${k}-note`);
  return {
    state: root && root.dataset.state,
    rows: [...document.querySelectorAll(`#cmp-${k}-top-table tbody tr[data-name]`)].map((r) => r.dataset.name),
    total: Number(document.querySelector(`#cmp-${k}-total`).dataset.total),
    root: canvas.dataset.root,
    width: canvas.getBoundingClientRect().width,
    frames: canvas.dataset.state === 'ready' ? canvas.profdFrames() : [],
    search: document.querySelector(`#cmp-${k}-flame-search`).value,
    searchResult: document.querySelector(`#cmp-${k}-flame-search-result`).textContent,
    filter: document.querySelector(`#cmp-${k}-top-filter`).value,
    sorted: [...document.querySelectorAll(`#cmp-${k}-top-table th[aria-sort]`)]
      .filter((th) => th.getAttribute('aria-sort') !== 'none').map((th) => th.dataset.sort + ':' + th.getAttribute('aria-sort')),
    note: note.hidden ? '' : note.textContent,
    input: document.querySelector(`#cmp-${k}-input`).value,
  };
}, k));

async function panesReady(p = page) {
  await p.waitForFunction(() => {
    const c = document.querySelector('#compare');
    return c && c.dataset.state === 'ready' &&
      ['a', 'b'].every((k) => document.querySelector(`#cmp-${k}-top-table tbody tr[data-name]`)) &&
      !document.querySelector('.pf-table[data-rows="partial"]');
  }, null, { timeout: T }).catch(async (e) => {
    const got = await p.evaluate(() => ({ page: document.querySelector('#compare')?.dataset,
      a: document.querySelector('#cmp-a')?.innerText.slice(0, 300), b: document.querySelector('#cmp-b')?.innerText.slice(0, 300) }));
    throw new Error(`the panes are not ready: ${JSON.stringify(got)}`, { cause: e });
  });
}

const params = (p = page) => new URL(p.url()).searchParams;
const rootWidth = (pn) => pn.frames.find((f) => f.depth === 0).w;

// ---- the steps ----

let ts = []; // the heap profiles' timestamps (ms), ascending
let aFile; // side A: the first profile
let bFiles; // side B: the merge of the next three
const A_TOP = () => topNames(['-sample_index=inuse_space', aFile]);
const B_TOP = () => topNames(['-sample_index=inuse_space', ...bFiles]);

step('01-from-diff', [], async () => {
  const now = Date.now();
  const series = await api('query_range', { query: HEAP, start: String((now - 3600e3) / 1000), end: String(now / 1000) });
  ts = series.flatMap((s) => s.timestamps).sort((x, y) => x - y);
  assert.ok(ts.length >= 4, `at least 4 heap profiles: ${ts.length}`);
  aFile = await heapFileAt(ts[0]);
  bFiles = [];
  for (const t of ts.slice(1, 4)) bFiles.push(await heapFileAt(t));
  // the query page with the diff of the two sides open, as shift-click and shift-drag
  // leave it; its open bar leads to the side-by-side page
  const q = new URLSearchParams({ query: HEAP, range: '1h', open: 'diff', 'a.sel': HEAP, 'a.time': String(ts[0]),
    'b.sel': HEAP, 'b.start': String(ts[1]), 'b.end': String(ts[3]) });
  await page.goto(`${URL_BASE}/?${q}`);
  await page.waitForSelector('#open-bar[data-mode="diff"] a[data-act="compare"]');
  await page.waitForFunction(() => document.querySelector('#flame')?.dataset.state === 'ready');
  await shot('01-diff');
  await page.click('#open-bar a[data-act="compare"]');
  await page.waitForURL('**/compare?**');
  await panesReady();
  const p = params();
  assert.equal(p.get('a.sel'), HEAP);
  assert.equal(p.get('a.time'), String(ts[0]));
  assert.equal(p.get('b.start'), String(ts[1]));
  assert.equal(p.get('b.end'), String(ts[3]));
  assert.equal(await page.title(), 'Compare · profd');
  await shot('01-compare');
});

step('02-each-side-is-pprofs', ['01-from-diff'], async () => {
  assert.equal(await page.$eval('#cmp-sample', (s) => s.value), 'inuse_space', 'the heap default on both sides');
  const a = await pane('a');
  const b = await pane('b');
  const at = A_TOP();
  const bt = B_TOP();
  assert.equal(a.rows[0], at[0], 'side A: the top row is go tool pprof -top\'s');
  assert.equal(a.rows.length, at.length, 'side A: as many rows as go tool pprof -top');
  assert.equal(b.rows[0], bt[0], 'side B (a merge of 3): the top row is go tool pprof -top\'s over the 3 files');
  assert.equal(b.rows.length, bt.length, 'side B: as many rows as go tool pprof -top');
  assert.equal(a.total, rawTotal([aFile], 'inuse_space'), 'side A\'s total');
  assert.equal(b.total, averageTotal(bFiles, 'inuse_space'), 'side B\'s total: the average of the 3 files (the heap in use is averaged)');
  assert.match(await page.locator('#cmp-b').innerText(), /average per profile of inuse_objects, inuse_space/, 'side B says it is averaged');
  // the same scale: the root frames' widths are as the totals
  const [small, big] = a.total < b.total ? [a, b] : [b, a];
  assert.ok(Math.abs(rootWidth(small) / rootWidth(big) - small.total / big.total) < 0.01,
    `root widths ${rootWidth(small)} / ${rootWidth(big)} are as the totals ${small.total} / ${big.total}`);
  assert.ok(Math.abs(rootWidth(big) - big.width) < 1, 'the larger side spans its whole graph');
  await shot('02-same-scale');
});

step('03-scale-own', ['02-each-side-is-pprofs'], async () => {
  await page.click('#cmp-scale-own');
  await eventually(async () => {
    for (const k of ['a', 'b']) {
      const pn = await pane(k);
      assert.ok(Math.abs(rootWidth(pn) - pn.width) < 1, `side ${k} spans its whole width`);
    }
  });
  assert.equal(params().get('scale'), 'own');
  await shot('03-scale-own');
  await page.click('#cmp-scale-same');
  await eventually(async () => assert.equal(params().get('scale'), null));
});

let zoomPath;
step('04-zoom-both', ['02-each-side-is-pprofs'], async () => {
  // a frame of A two levels down that B has at the same call path
  const a = await pane('a');
  const b = await pane('b');
  const pathOf = (frames, i) => {
    const out = [frames[i].name];
    for (let d = frames[i].depth - 1, j = i; d > 0; d--) {
      j = frames.slice(0, j).findLastIndex((f) => f.depth === d);
      out.unshift(frames[j].name);
    }
    return out;
  };
  const bPaths = new Set(b.frames.map((f, i) => (f.depth > 0 ? pathOf(b.frames, i).join(';') : '')));
  const i = a.frames.findIndex((f, j) => f.depth === 2 && f.w > 20 && bPaths.has(pathOf(a.frames, j).join(';')));
  assert.ok(i >= 0, 'a frame of depth 2 on both sides');
  zoomPath = pathOf(a.frames, i);
  const f = a.frames[i];
  await page.mouse.click(f.x + Math.min(f.w / 2, 10), f.y + f.h / 2);
  await eventually(async () => {
    assert.equal((await pane('a')).root, f.name, 'side A zoomed into the frame clicked');
    assert.equal((await pane('b')).root, f.name, 'side B zoomed to the same call path');
  });
  assert.equal(params().get('focus'), zoomPath.join(';'));
  assert.equal((await pane('b')).note, '', 'no note: B has the path');
  await shot('04-zoom-both');
});

step('05-zoom-missing', ['04-zoom-both'], async () => {
  // a call path only one side could have: the other says so, and stops at its caller
  const u = new URL(page.url());
  u.searchParams.set('focus', zoomPath.concat('no.such.function').join(';'));
  await page.goto(u.toString());
  await panesReady();
  await eventually(async () => {
    for (const k of ['a', 'b']) {
      const pn = await pane(k);
      assert.equal(pn.root, zoomPath[zoomPath.length - 1], `side ${k}: zoomed as far as the path goes`);
      assert.match(pn.note, /no\.such\.function .*is not in side/, `side ${k} says the frame is missing`);
    }
  });
  await shot('05-zoom-missing');
  // back to the whole graph: Reset zoom on one side resets both
  await page.click('#cmp-b-flame-reset');
  await eventually(async () => {
    assert.equal((await pane('a')).root, 'root');
    assert.equal((await pane('b')).root, 'root');
    assert.equal((await pane('a')).note, '');
  });
});

step('06-search-both', ['02-each-side-is-pprofs'], async () => {
  await page.fill('#cmp-a-flame-search', 'runtime');
  await eventually(async () => {
    const b = await pane('b');
    assert.equal(b.search, 'runtime', 'the search is on side B too');
    assert.match(b.searchResult, /frame/, `side B counts its matches: "${b.searchResult}"`);
    assert.equal(params().get('search'), 'runtime');
  });
  await shot('06-search-both');
});

step('07-sort-filter-both', ['02-each-side-is-pprofs'], async () => {
  await page.click('#cmp-a-top-table th[data-sort="cum"]');
  await eventually(async () => {
    assert.deepEqual((await pane('b')).sorted, (await pane('a')).sorted, 'side B sorted as A');
    assert.equal((await pane('b')).sorted.length, 1);
  });
  await page.fill('#cmp-b-top-filter', 'main');
  await eventually(async () => {
    const a = await pane('a');
    assert.equal(a.filter, 'main', 'side A filtered as B');
    assert.ok(a.rows.length > 0 && a.rows.every((r) => /main/.test(r)), `side A's rows match: ${a.rows}`);
    assert.equal(params().get('filter'), 'main');
  });
  await shot('07-sort-filter');
  await page.fill('#cmp-b-top-filter', '');
  await eventually(async () => assert.equal((await pane('a')).filter, ''));
});

step('08-to-diff-and-back', ['02-each-side-is-pprofs'], async () => {
  await page.click('#cmp-to-diff');
  await page.waitForURL((u) => !u.pathname.endsWith('/compare'));
  await page.waitForFunction(() => document.querySelector('#flame')?.dataset.state === 'ready' &&
    document.querySelector('#flame')?.dataset.diff === '1');
  let p = params();
  assert.equal(p.get('open'), 'diff');
  assert.equal(p.get('a.time'), String(ts[0]));
  assert.equal(p.get('b.start'), String(ts[1]));
  assert.equal(p.get('b.end'), String(ts[3]));
  assert.equal(p.get('search'), 'runtime', 'the search goes along');
  await shot('08-combined-diff');
  await page.click('#open-bar a[data-act="compare"]');
  await page.waitForURL('**/compare?**');
  await panesReady();
  p = params();
  assert.equal(p.get('a.time'), String(ts[0]));
  assert.equal(p.get('b.start'), String(ts[1]));
  assert.equal(p.get('b.end'), String(ts[3]));
  assert.equal(p.get('sort'), 'cum', 'the top tables\' sort went there and back');
  const [a, b] = [await pane('a'), await pane('b')];
  assert.equal(a.total, rawTotal([aFile], 'inuse_space'), 'side A\'s total');
  assert.equal(b.total, averageTotal(bFiles, 'inuse_space'), 'side B\'s total (averaged)');
  assert.deepEqual([...a.rows].sort(), [...A_TOP()].sort(), 'side A: go tool pprof -top\'s functions');
  assert.deepEqual([...b.rows].sort(), [...B_TOP()].sort(), 'side B: go tool pprof -top\'s functions');
  // back and forward go through the same pages
  await page.goBack();
  await page.waitForFunction(() => document.querySelector('#open-bar')?.dataset.mode === 'diff');
  await page.goForward();
  await panesReady();
});

step('09-reload', ['08-to-diff-and-back'], async () => {
  await page.click('#cmp-a-flame-reset');
  const a = await pane('a');
  const f = a.frames.find((x) => x.depth === 1 && x.w > 20);
  await page.mouse.click(f.x + 5, f.y + f.h / 2);
  await eventually(async () => assert.equal((await pane('b')).root, f.name));
  const url = page.url();
  await page.reload();
  await panesReady();
  assert.equal(page.url(), url, 'the URL is the same after a reload');
  await eventually(async () => {
    const [ra, rb] = [await pane('a'), await pane('b')];
    assert.equal(ra.root, f.name, 'side A still zoomed');
    assert.equal(rb.root, f.name, 'side B still zoomed');
    assert.equal(ra.search, 'runtime');
    assert.equal(rb.search, 'runtime');
  });
  await shot('09-reload');
});

step('10-edit-a-side', ['02-each-side-is-pprofs'], async () => {
  // side B's own selector, with autocompletion, and its own time: the latest goroutine
  // profile; heap and goroutine have no sample type in common, and the page says so
  await page.click('#cmp-b-single');
  await eventually(async () => assert.equal(params().get('b.time'), 'now'));
  await page.fill('#cmp-b-input', 'gorou');
  await page.waitForSelector('#cmp-b-suggest li', { state: 'visible' });
  const sugg = await page.$$eval('#cmp-b-suggest li .s-text', (ls) => ls.map((l) => l.textContent));
  assert.ok(sugg.includes('goroutine'), `side B's suggestions: ${sugg}`);
  assert.equal(await page.$eval('#query-suggest', () => 1).catch(() => 0), 0, 'no query page input here');
  await page.fill('#cmp-b-input', 'goroutine{job="served"}');
  await page.press('#cmp-b-input', 'Enter');
  await eventually(async () => {
    assert.equal(params().get('b.sel'), 'goroutine{job="served"}');
    assert.match(await page.textContent('.cmp-status'), /no sample type in common/);
    // counts beside bytes: each graph to its own scale, not 84 goroutines against MBs
    for (const k of ['a', 'b']) {
      const pn = await pane(k);
      assert.ok(pn.frames.length && Math.abs(rootWidth(pn) - pn.width) < 1, `side ${k} spans its whole width`);
    }
  });
  await shot('10-other-type');
  // a merge of the last 15 minutes of heap on side B: a range of its own
  await page.fill('#cmp-b-input', HEAP);
  await page.press('#cmp-b-input', 'Enter');
  await page.click('#cmp-b-merge');
  await page.click('#cmp-b [data-range="15m"]');
  await eventually(async () => assert.equal(params().get('b.range'), '15m'));
  await panesReady();
  assert.equal(await page.$eval('#cmp-sample', (s) => s.value), 'inuse_space');
  await shot('10-last-15m');
});

step('10-swap', ['10-edit-a-side'], async () => {
  const before = params();
  const [a, b] = [await pane('a'), await pane('b')];
  await page.click('#cmp-swap');
  await eventually(async () => {
    const p = params();
    assert.equal(p.get('a.range'), before.get('b.range'), 'B\'s range is now A\'s');
    assert.equal(p.get('b.time'), before.get('a.time'), 'A\'s time is now B\'s');
  });
  await panesReady();
  assert.equal((await pane('b')).total, a.total, 'side B shows what A did');
  assert.equal((await pane('a')).rows.length, b.rows.length);
  await page.goBack();
  await eventually(async () => assert.equal(params().get('a.time'), before.get('a.time'), 'back: as before the swap'));
  await panesReady();
  await shot('10-swap-back');
});

step('11-dark', ['02-each-side-is-pprofs'], async () => {
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 950 }, colorScheme: 'dark' });
  const p = await ctx.newPage();
  watch(p);
  try {
    const q = new URLSearchParams({ 'a.sel': HEAP, 'a.time': String(ts[0]), 'b.sel': HEAP, 'b.start': String(ts[1]), 'b.end': String(ts[3]) });
    await p.goto(`${URL_BASE}/compare?${q}`);
    await panesReady(p);
    assert.equal(await p.evaluate(() => document.documentElement.dataset.theme), 'dark');
    const bg = await p.$eval('#cmp-a', (el) => getComputedStyle(el).backgroundColor);
    const [r, g, b] = bg.match(/[\d.]+/g).map(Number);
    assert.ok((0.2126 * r + 0.7152 * g + 0.0722 * b) / 255 < 0.3, `a dark pane: ${bg}`);
    assert.equal((await pane('a', p)).rows[0], A_TOP()[0]);
    await shot('11-dark', p);
  } finally {
    await ctx.close();
  }
});

for (const theme of ['light', 'dark']) {
  step(`12-narrow-${theme}`, ['02-each-side-is-pprofs'], async () => {
    const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: theme, hasTouch: true, isMobile: true });
    const p = await ctx.newPage();
    watch(p);
    try {
      const q = new URLSearchParams({ 'a.sel': HEAP, 'a.time': String(ts[0]), 'b.sel': HEAP, 'b.start': String(ts[1]), 'b.end': String(ts[3]) });
      await p.goto(`${URL_BASE}/compare?${q}`);
      await panesReady(p);
      assert.equal(await p.evaluate(() => document.documentElement.dataset.theme), theme);
      const boxes = await p.evaluate(() => ['a', 'b'].map((k) => document.querySelector(`#cmp-${k}`).getBoundingClientRect().toJSON()));
      assert.ok(boxes[1].top >= boxes[0].bottom, 'the panes are stacked, A over B');
      for (const bx of boxes) assert.ok(bx.left >= 0 && bx.right <= 390, `a pane within the screen: ${bx.left}-${bx.right}`);
      const wide = await p.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(wide <= 390, `the page is ${wide} px wide`);
      assert.equal((await pane('a', p)).rows[0], A_TOP()[0]);
      assert.equal((await pane('b', p)).rows[0], B_TOP()[0]);
      await shot(`12-narrow-${theme}`, p);
    } finally {
      await ctx.close();
    }
  });
}

step('13-one-round-of-requests', ['02-each-side-is-pprofs'], async () => {
  // a new tab: each side's flame graph and top table are asked for with its meta, not
  // after it. The meta answers are held back until both sides' data requests are out
  // (a page that waited for its meta would never send them), and with the default
  // sample type nothing is asked for twice.
  const p = await context.newPage();
  watch(p);
  const seen = [];
  let release;
  const held = new Promise((r) => { release = r; });
  p.on('request', (r) => { if (r.url().includes('/api/v1/query?')) seen.push(new URL(r.url()).searchParams); });
  await p.route('**/api/v1/query?*', async (route) => {
    if (new URL(route.request().url()).searchParams.get('report') === 'meta') await held;
    await route.continue();
  });
  try {
    const q = new URLSearchParams({ 'a.sel': HEAP, 'a.time': String(ts[0]), 'b.sel': HEAP, 'b.start': String(ts[1]), 'b.end': String(ts[3]) });
    await p.goto(`${URL_BASE}/compare?${q}`);
    const reports = () => seen.map((x) => `${x.get('mode')}:${x.get('report')}`).sort();
    await eventually(async () => assert.deepEqual(reports(),
      ['merge:flamegraph', 'merge:meta', 'merge:top', 'single:flamegraph', 'single:meta', 'single:top'],
      'both sides\' meta, flame graph and top requests, sent while the metas are held'));
    release();
    await panesReady(p);
    assert.equal(seen.length, 6, `no request made again: ${reports()}`);
    assert.equal((await pane('a', p)).rows[0], A_TOP()[0]);
    assert.equal((await pane('b', p)).total, averageTotal(bFiles, 'inuse_space'));
    // another sample type in the URL is the one asked for with the meta
    seen.length = 0;
    await p.goto(`${URL_BASE}/compare?${q}&sample=alloc_space`);
    await panesReady(p);
    assert.equal(await p.$eval('#cmp-sample', (el) => el.value), 'alloc_space');
    assert.deepEqual(seen.filter((x) => x.get('report') !== 'meta').map((x) => x.get('sample_index')),
      ['alloc_space', 'alloc_space', 'alloc_space', 'alloc_space'], 'the data of alloc_space, asked for once');
    assert.equal((await pane('a', p)).total, rawTotal([aFile], 'alloc_space'));
  } finally {
    release();
    await p.close();
  }
});

step('13-requests-before-the-modules', ['13-one-round-of-requests'], async () => {
  // a new tab: the page's six requests go out when sides.js has run, before the other
  // modules are in (one of them is held back here until they are all out), and
  // compare.js, once it runs, uses them: nothing is asked for again
  const p = await context.newPage();
  watch(p);
  const seen = [];
  let release;
  const held = new Promise((r) => { release = r; });
  p.on('request', (r) => { if (r.url().includes('/api/v1/query?')) seen.push(new URL(r.url()).searchParams); });
  await p.route('**/js/timeline.js', async (route) => { await held; await route.continue(); });
  try {
    const q = new URLSearchParams({ 'a.sel': HEAP, 'a.time': String(ts[0]), 'b.sel': HEAP, 'b.start': String(ts[1]), 'b.end': String(ts[3]) });
    await p.goto(`${URL_BASE}/compare?${q}`, { waitUntil: 'commit' });
    const reports = () => seen.map((x) => `${x.get('mode')}:${x.get('report')}`).sort();
    await eventually(async () => assert.deepEqual(reports(),
      ['merge:flamegraph', 'merge:meta', 'merge:top', 'single:flamegraph', 'single:meta', 'single:top'],
      'both sides\' requests, sent while a module of the app is held'));
    assert.equal(await p.evaluate(() => !!document.querySelector('#compare')), false, 'before the app ran');
    release();
    await panesReady(p);
    assert.equal(seen.length, 6, `no request made again: ${reports()}`);
    assert.equal((await pane('a', p)).total, rawTotal([aFile], 'inuse_space'));
    assert.equal((await pane('b', p)).total, averageTotal(bFiles, 'inuse_space'));
  } finally {
    release();
    await p.close();
  }
});

step('14-tall-graph-scrolls', ['02-each-side-is-pprofs'], async () => {
  // a graph taller than its pane (here a pane three rows high) is drawn where it can
  // be seen; scrolled to its bottom, the deepest frames are drawn there
  const p = await context.newPage();
  watch(p);
  await p.addInitScript(() => document.addEventListener('DOMContentLoaded', () => {
    const st = document.createElement('style');
    st.textContent = '#cmp-a .pf-flame-scroll { flex: none; height: 54px; }';
    document.head.append(st);
  }));
  try {
    const q = new URLSearchParams({ 'a.sel': HEAP, 'a.start': String(ts[1]), 'a.end': String(ts[3]), 'b.sel': HEAP, 'b.time': String(ts[0]) });
    await p.goto(`${URL_BASE}/compare?${q}`);
    await panesReady(p);
    // the colour of the canvas at the middle of a frame (canvas pixels), 0 where nothing is drawn
    const alphaAt = (f) => p.evaluate((f) => {
      const c = document.querySelector('#cmp-a-flame');
      const b = c.getBoundingClientRect();
      const k = c.width / b.width;
      return c.getContext('2d').getImageData(Math.round((f.x - b.left + Math.min(f.w / 2, 2)) * k), Math.round((f.y - b.top + f.h / 2) * k), 1, 1).data[3];
    }, f);
    const frames = (await pane('a', p)).frames;
    const depth = Math.max(...frames.map((f) => f.depth));
    assert.ok(depth >= 8, `a graph of at least 9 levels in a pane of 3: ${depth + 1}`);
    const deep = frames.filter((f) => f.depth === depth).sort((x, y) => y.w - x.w)[0];
    const top = frames.find((f) => f.depth === 0);
    assert.ok(await alphaAt(top) > 0, 'the root, in view, is drawn');
    assert.equal(await alphaAt(deep), 0, `the deepest level (${depth}), far below the view, is not drawn yet`);
    await p.$eval('#cmp-a .pf-flame-scroll', (el) => { el.scrollTop = el.scrollHeight; });
    await eventually(async () => {
      const f = (await pane('a', p)).frames.find((x) => x.depth === depth && x.name === deep.name);
      assert.ok(await alphaAt(f) > 0, 'scrolled to the bottom: the deepest frame is drawn');
    });
    // hovering it shows its tooltip, as anywhere
    const f = (await pane('a', p)).frames.find((x) => x.depth === depth && x.name === deep.name);
    await p.mouse.move(f.x + Math.min(f.w / 2, 2), f.y + f.h / 2);
    await eventually(async () => {
      const tip = await p.$eval('#cmp-a .pf-tooltip', (el) => (el.hidden ? '' : el.textContent));
      assert.ok(tip.includes(deep.name), `the tooltip names ${deep.name}: ${tip}`);
    });
  } finally {
    await p.close();
  }
});

step('15-no-page-errors', [], async () => {
  assert.deepEqual(pageErrors, [], 'no uncaught errors in the pages');
});
