// callgraph.test.mjs: the profile view's call graph in Debian's Chromium, against a
// running profd that scrapes tests/support/serve_profiles (started by run.sh). The
// goroutine profile is one fixed file, so what the graph must show comes from
// `go tool pprof -dot` on that file: the same functions as boxes, in the API's DOT
// and in the SVG the UI draws. Then pan and zoom, a click that focuses a function,
// and the view at 390 px in the dark theme. Each step leaves a screenshot.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
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
const HERE = dirname(fileURLToPath(import.meta.url));
const GOROUTINE_FILE = join(HERE, '..', '..', 'testdata', 'profiles', 'goapp', 'goroutine.pb.gz');
const SEL = 'goroutine{job="served"}';
const T = 30000;

// The function names of a DOT call graph (go tool pprof's or profd's): the tooltips
// of its N<i> boxes, "name (cum)".
function dotNames(dot) {
  const names = [];
  for (const line of dot.split('\n')) {
    const m = /^N\d+ \[label=".*" id="node\d+" .* tooltip="(.*) \([^()]*\)" color=/.exec(line);
    if (m) names.push(m[1].replace(/\\"/g, '"').replace(/\\\\/g, '\\'));
  }
  return names.sort();
}

function pprofDot(file) {
  return execFileSync('go', ['tool', 'pprof', '-symbolize=none', '-dot', file], {
    cwd: TMP, env: { ...process.env, PPROF_TMPDIR: TMP }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
  });
}

const luminance = (css) => {
  const [r, g, b] = (css.match(/[\d.]+/g) || []).slice(0, 3).map(Number);
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
};
const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

let browser, page, profileUrl, time, expected;
const done = new Set();

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  for (const f of readdirSync(SHOTS)) if (f.endsWith('.png')) rmSync(join(SHOTS, f));
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: process.env.PD_BROWSER_HEADED !== '1',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  const context = await browser.newContext({ viewport: { width: 1400, height: 950 }, colorScheme: 'light' });
  context.setDefaultTimeout(T);
  page = await context.newPage();
  page.on('pageerror', (e) => { throw e; });
});

after(async () => {
  if (browser) await browser.close();
});

async function shot(name, p = page) {
  await p.mouse.move(1, 1);
  await p.screenshot({ path: join(SHOTS, name + '.png'), fullPage: true });
}

function step(name, needs, fn) {
  test(name, { timeout: 120000 }, async (t) => {
    const missing = needs.filter((n) => !done.has(n));
    if (missing.length) {
      t.skip(`needs ${missing.join(', ')}`);
      return;
    }
    try {
      await fn(t);
    } catch (e) {
      await shot(name + '-FAILED').catch(() => {});
      throw e;
    }
    done.add(name);
  });
}

async function query(params) {
  const u = new URL('/api/v1/query', URL_BASE);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return fetch(u);
}

// Opens the profile page and shows the graph; resolves once it is drawn.
async function openGraph(p) {
  await p.goto(profileUrl);
  await p.click('button[data-layout="graph"]');
  await p.waitForFunction(() => document.querySelector('#callgraph')?.dataset.state === 'ready', null, { timeout: T })
    .catch(async (e) => {
      const got = await p.evaluate(() => ({ ...document.querySelector('#callgraph')?.dataset, status: document.querySelector('.cg-status')?.textContent }));
      throw new Error(`call graph not ready: ${JSON.stringify(got)}`, { cause: e });
    });
}

const shownNames = (p) => p.$$eval('#callgraph g.node', (gs) => gs.map((g) => g.dataset.name).sort());

step('01-api', [], async () => {
  // a stored goroutine profile: the newest one
  const u = new URL('/api/v1/query_range', URL_BASE);
  u.searchParams.set('query', SEL);
  u.searchParams.set('start', String(Date.now() / 1000 - 3600));
  const body = await (await fetch(u)).json();
  assert.equal(body.status, 'success');
  const ts = body.data.flatMap((s) => s.timestamps);
  assert.ok(ts.length > 0, 'goroutine profiles are stored');
  time = ts[ts.length - 1];
  profileUrl = `${URL_BASE}/?query=${encodeURIComponent(SEL)}&open=single&sel=${encodeURIComponent(SEL)}&time=${time}`;
  expected = dotNames(pprofDot(GOROUTINE_FILE));
  assert.ok(expected.length > 3, `go tool pprof -dot draws functions: ${expected}`);

  const params = { query: SEL, time: (time / 1000).toFixed(3), lookback: '0.001' };
  const dot = await query({ ...params, report: 'dot' });
  assert.equal(dot.status, 200);
  assert.match(dot.headers.get('content-type'), /^text\/vnd\.graphviz/);
  assert.deepEqual(dotNames(await dot.text()), expected, 'report=dot has go tool pprof -dot\'s functions');

  const svg = await query({ ...params, report: 'svg' });
  assert.equal(svg.status, 200);
  assert.equal(svg.headers.get('content-type'), 'image/svg+xml');
  const text = await svg.text();
  assert.match(text, /<svg[\s\S]*<\/svg>\s*$/);
  // well-formed XML, an <svg> document, with a box per function
  const parsed = await page.evaluate((t) => {
    const d = new DOMParser().parseFromString(t, 'image/svg+xml');
    return { error: d.querySelector('parsererror')?.textContent || '', root: d.documentElement.nodeName,
      boxes: d.querySelectorAll('g.node').length };
  }, text);
  assert.equal(parsed.error, '', 'the SVG parses as XML');
  assert.equal(parsed.root, 'svg');
  assert.equal(parsed.boxes, expected.length + 1, 'a box per function, and the legend');
  const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  for (const n of expected) assert.ok(text.includes(esc(n)), `the SVG names ${n}`);

  const bad = await query({ ...params, report: 'svg', nodecount: '0' });
  assert.equal(bad.status, 400);
  assert.match((await bad.json()).error, /nodecount/);
});

step('02-graph-view', ['01-api'], async () => {
  await openGraph(page);
  assert.deepEqual(await shownNames(page), expected, 'the boxes are go tool pprof -dot\'s functions');
  // the graph pane alone is shown, and the whole graph fits in it
  assert.equal(await page.$eval('.pf-pane-top', (e) => getComputedStyle(e).display), 'none');
  const canvas = await page.locator('#callgraph').boundingBox();
  const svg = await page.locator('#callgraph svg').boundingBox();
  assert.ok(svg.width <= canvas.width + 1 && svg.height <= canvas.height + 1,
    `the graph fits its pane: ${JSON.stringify(svg)} in ${JSON.stringify(canvas)}`);
  await shot('02-graph');
});

step('03-pan-zoom', ['02-graph-view'], async () => {
  const c = page.locator('#callgraph');
  await c.scrollIntoViewIfNeeded();
  const box = await c.boundingBox();
  const zoom = async () => Number(await c.getAttribute('data-zoom'));
  const fitted = await zoom();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.wheel(0, -400);
  await page.waitForFunction((z) => Number(document.querySelector('#callgraph').dataset.zoom) > z, fitted);
  const stageAt = () => page.$eval('.cg-stage', (e) => e.style.transform);
  const before = await stageAt();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width / 2 - 120, box.y + box.height / 2 - 60, { steps: 5 });
  await page.mouse.up();
  assert.notEqual(await stageAt(), before, 'dragging pans the graph');
  await shot('03-zoomed');
  await page.click('#cg-reset');
  assert.equal(await zoom(), fitted, 'Fit returns to the whole graph');
  await page.click('#cg-zoom-in');
  assert.ok(await zoom() > fitted, '+ zooms in');
  await page.click('#cg-reset');
});

step('04-click-focuses', ['02-graph-view'], async () => {
  // the heaviest function that is not the root: the graph's largest box below it
  const name = expected.find((n) => n.startsWith('runtime.gopark')) || expected[0];
  await page.locator(`#callgraph g.node[data-name="${name}"] polygon`).first().click({ force: true });
  await page.waitForFunction((n) => document.querySelector(`#callgraph g.node.cg-focus`)?.dataset.name === n, name);
  const want = '^' + escapeRegExp(name) + '$';
  assert.equal(await page.inputValue('#flame-search'), want, 'the flame graph searches for the function');
  const url = new URL(page.url());
  assert.equal(url.searchParams.get('focus'), name, 'the focus is kept in the URL');
  await shot('04-focused');
  // the flame graph shows that focus
  await page.click('button[data-layout="flame"]');
  await page.waitForFunction(() => document.querySelector('#flame')?.dataset.state === 'ready');
  assert.equal(await page.inputValue('#flame-search'), want);
  await shot('04-flame-after-click');
});

step('05-narrow-dark', ['01-api'], async () => {
  const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: 'dark', deviceScaleFactor: 2 });
  ctx.setDefaultTimeout(T);
  const p = await ctx.newPage();
  try {
    await openGraph(p);
    assert.deepEqual(await shownNames(p), expected);
    const canvas = await p.locator('#callgraph').boundingBox();
    assert.ok(canvas.x >= 0 && canvas.x + canvas.width <= 390 + 1, `the pane fits 390 px: ${JSON.stringify(canvas)}`);
    assert.ok(canvas.height > 200, `the pane has room: ${JSON.stringify(canvas)}`);
    // dark page, and the graph's own text readable on it: edge labels light, boxes
    // light with dark text
    const pane = await p.$eval('#callgraph', (e) => getComputedStyle(e).backgroundColor);
    assert.ok(luminance(pane) < 0.35, `dark pane: ${pane}`);
    const edgeText = await p.$$eval('#callgraph g.edge text', (ts) => ts.map((t) => getComputedStyle(t).fill));
    assert.ok(edgeText.length > 0, 'edges are labelled');
    for (const f of edgeText) assert.ok(luminance(f) > 0.6, `edge labels are light on the dark pane: ${f}`);
    const box = await p.$eval('#callgraph g.node polygon', (e) => getComputedStyle(e).fill);
    assert.ok(luminance(box) > 0.6, `boxes keep their light fill: ${box}`);
    // a tap on a box focuses it here too
    const name = expected[expected.length - 1];
    await p.locator(`#callgraph g.node[data-name="${name}"] polygon`).first().click({ force: true });
    await p.waitForFunction((n) => document.querySelector('#callgraph g.node.cg-focus')?.dataset.name === n, name);
    await shot('05-narrow-dark', p);
  } finally {
    await ctx.close();
  }
});
