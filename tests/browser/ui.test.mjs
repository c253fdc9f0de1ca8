// ui.test.mjs: profd's web UI in Debian's Chromium, against a running profd that
// scrapes tests/support/serve_profiles (started by run.sh, which sets the PD_*
// variables below). Steps run in order in one page, as a person would use the UI;
// each one asserts what it shows and leaves a screenshot (NN-step.png). A step whose
// prerequisite failed is skipped, so one failure does not hide the others.
//
// Expected values come from outside the UI: the API's timestamps, the served log
// (which file each scrape got) and `go tool pprof` on those files.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { fileURLToPath } from 'node:url';

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
const ALL = '{job="served"}';
const T = 20000; // how long a step waits for the UI

// ---- expected values, computed without the UI ----

function pprof(args) {
  return execFileSync('go', ['tool', 'pprof', '-nodefraction=0', '-symbolize=none', ...args], {
    cwd: TMP, env: { ...process.env, PPROF_TMPDIR: TMP }, encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

// go tool pprof -top's rows: [{name, flat}] (the table after the header line)
function pprofTop(args) {
  const out = pprof(['-top', ...args]).split('\n');
  const h = out.findIndex((l) => /^\s*flat\s+flat%/.test(l));
  assert.ok(h >= 0, 'go tool pprof -top printed no table');
  return out.slice(h + 1).filter((l) => l.trim()).map((l) => {
    const f = l.trim().split(/\s+/);
    return { flat: f[0], cumPercent: parseFloat(f[4]), name: f.slice(5).join(' ').replace(/ \(inline\)$/, '') };
  });
}
const topName = (args) => pprofTop(args)[0].name;
// the part of -top that does not depend on the file name or time
const topTable = (args) => pprof(['-top', ...args]).split('\n').filter((l) => !/^(File|Build ID|Time|Duration):/.test(l)).join('\n');

async function api(path, params) {
  const u = new URL('/api/v1/' + path, URL_BASE);
  for (const [k, v] of Object.entries(params || {})) u.searchParams.set(k, v);
  const r = await fetch(u);
  const body = await r.json();
  assert.equal(body.status, 'success', `${u}: ${body.error}`);
  return body.data;
}

// The file served for the heap profile stored at t (ms). A single profile's download
// is the profile the target served, field for field (the store rebuilds only its
// string table), so `go tool pprof -raw` prints the same for it as for one of the
// files the served log lists for the heap path.
const fileBytes = new Map();
function gunzipped(file) {
  if (!fileBytes.has(file)) fileBytes.set(file, gunzipSync(readFileSync(file)));
  return fileBytes.get(file);
}
const rawOf = new Map();
function rawText(file) {
  if (!rawOf.has(file)) rawOf.set(file, pprof(['-raw', file]));
  return rawOf.get(file);
}
async function heapFileAt(t) {
  const u = new URL('/api/v1/query', URL_BASE);
  u.searchParams.set('query', HEAP);
  u.searchParams.set('time', (t / 1000).toFixed(3));
  u.searchParams.set('lookback', '0.001');
  u.searchParams.set('report', 'proto');
  const r = await fetch(u);
  assert.equal(r.status, 200, `no heap profile stored at ${t}`);
  const storedFile = join(TMP, `stored-${t}.pb.gz`);
  writeFileSync(storedFile, Buffer.from(await r.arrayBuffer()));
  const stored = pprof(['-raw', storedFile]);
  const files = [...new Set(readFileSync(SERVED_LOG, 'utf8').split('\n')
    .filter((l) => l.startsWith('/debug/pprof/heap ')).map((l) => l.slice('/debug/pprof/heap '.length)))];
  const f = files.find((x) => rawText(x) === stored);
  assert.ok(f, `the profile stored at ${t} is none of the served files ${files.join(', ')}`);
  return f;
}

// ---- the browser ----

let browser, context, page;
const pageErrors = [];
const consoleErrors = [];

function watch(p) {
  p.on('pageerror', (e) => pageErrors.push(`${p.url()}: ${e.message}`));
  p.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(`${p.url()}: ${m.text()}`); });
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  for (const f of readdirSync(SHOTS)) if (f.endsWith('.png')) rmSync(join(SHOTS, f));
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: process.env.PD_BROWSER_HEADED !== '1',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  context = await browser.newContext({
    viewport: { width: 1400, height: 950 }, colorScheme: 'light', acceptDownloads: true,
  });
  context.setDefaultTimeout(T);
  page = await context.newPage();
  watch(page);
});

after(async () => {
  if (browser) await browser.close();
  if (consoleErrors.length) console.log('console errors seen (not failures):\n  ' + consoleErrors.join('\n  '));
});

async function shot(name, p = page) {
  await p.mouse.move(1, 1); // no hover tooltip over what the picture is about
  await p.screenshot({ path: join(SHOTS, name + '.png'), fullPage: true });
}

// Retries fn (which asserts) until it passes or ms run out; then throws its error.
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

const done = new Set(); // steps that passed, and named points some steps reach early
function step(name, needs, fn) {
  test(name, { timeout: 90000 }, async (t) => {
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

// ---- reading the page ----

const timeline = () => page.$eval('#timeline', (el) => ({
  state: el.dataset.state, lanes: Number(el.dataset.lanes), marks: Number(el.dataset.marks),
}));
const marks = (p = page) => p.$eval('#timeline', (el) => el.profdMarks());
const frames = (p = page) => p.$eval('#flame', (el) => el.profdFrames());
// (once every row is drawn: a table adds the rows after its first 50 when the page is idle)
const topRows = async (p = page) => {
  await p.waitForFunction(() => !document.querySelector('.pf-table[data-rows="partial"]'));
  return p.$$eval('#top-table tbody tr[data-name]', (rs) => rs.map((r) => r.dataset.name));
};
const attr = (sel, a, p = page) => p.$eval(sel, (el, a) => el.getAttribute(a), a);

async function runQuery(q, how = 'enter', p = page) {
  await p.fill('#query-input', q);
  if (how === 'enter') await p.press('#query-input', 'Enter');
  else await p.click('#run-query');
}

// waits for the timeline to show the answer to a query: lanes and marks as asked
async function timelineReady(lanes, minMarks, p = page) {
  await p.waitForFunction(([l, m]) => {
    const el = document.querySelector('#timeline');
    return el && el.dataset.state === 'ready' && Number(el.dataset.lanes) === l && Number(el.dataset.marks) >= m;
  }, [lanes, minMarks], { timeout: T }).catch(async (e) => {
    const got = await p.$eval('#timeline', (el) => ({ ...el.dataset })).catch(() => 'no #timeline');
    throw new Error(`timeline not ready with ${lanes} lanes and >= ${minMarks} marks: ${JSON.stringify(got)}`, { cause: e });
  });
}

// waits for the profile view to be drawn; diff: whether it is a diff
async function profileReady(diff, p = page) {
  await p.waitForFunction((d) => {
    const pr = document.querySelector('#profile');
    const fl = document.querySelector('#flame');
    return pr && fl && pr.dataset.state === 'ready' && fl.dataset.state === 'ready' &&
      (fl.dataset.diff === '1') === d && document.querySelector('#top-table tbody tr[data-name]') &&
      !document.querySelector('.pf-table[data-rows="partial"]');
  }, diff, { timeout: T }).catch(async (e) => {
    const got = await p.evaluate(() => ({
      profile: document.querySelector('#profile')?.dataset, flame: document.querySelector('#flame')?.dataset,
    }));
    throw new Error(`profile view not ready (diff=${diff}): ${JSON.stringify(got)}`, { cause: e });
  });
}

// the sample type the profile view shows (a select, or buttons with one pressed)
async function sampleTypeShown(p = page) {
  const text = await p.$eval('#sample-type', (el) => (el.tagName === 'SELECT'
    ? `${el.value} ${el.selectedOptions[0]?.textContent}`
    : el.querySelector('[aria-pressed="true"],[aria-selected="true"],.active,.selected')?.textContent) || '');
  const s = ['alloc_objects', 'alloc_space', 'inuse_objects', 'inuse_space'].find((x) => text.includes(x));
  assert.ok(s, `#sample-type shows a heap sample type: "${text}"`);
  return s;
}

async function clickMark(m, shift = false) {
  if (shift) await page.keyboard.down('Shift');
  await page.mouse.click(m.x, m.y);
  if (shift) await page.keyboard.up('Shift');
}

const luminance = (css) => {
  const [r, g, b] = css.match(/[\d.]+/g).map(Number);
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
};
const background = (p = page) => p.evaluate(() => {
  // the first opaque background from body up (html may carry it instead)
  for (const el of [document.body, document.documentElement]) {
    const c = getComputedStyle(el).backgroundColor;
    if (c && !/rgba\(\s*0,\s*0,\s*0,\s*0\s*\)|transparent/.test(c)) return c;
  }
  return 'rgb(255, 255, 255)';
});

// ---- the steps ----

step('01-query-page', [], async () => {
  const r = await page.goto(URL_BASE + '/');
  assert.equal(r.status(), 200);
  await page.waitForSelector('#query-input', { state: 'visible' });
  await page.waitForSelector('#run-query', { state: 'visible' });
  for (const range of ['15m', '1h', '6h', '24h', '7d']) {
    assert.equal(await page.locator(`[data-range="${range}"]`).count(), 1, `range preset ${range}`);
  }
  assert.equal(await page.locator('#live').count(), 1, '#live');
  // the navigation: the brand and Query lead to /, each link has its own id
  // (relative to the page's <base href>, which is "/" without a route prefix)
  const linked = (sel) => page.$eval(sel, (a) => new URL(a.href).pathname);
  assert.equal(await linked('#nav-brand'), '/', 'the brand links the query page');
  assert.equal(await linked('#nav-query'), '/', 'nav link to /');
  assert.equal(await linked('#nav-targets'), '/targets', 'nav link to /targets');
  assert.equal(await linked('#nav-status'), '/status', 'nav link to /status');
  // "?" lists the keyboard shortcuts; Escape closes the list
  await page.locator('body').press('?');
  await page.waitForSelector('#keys-popover', { state: 'visible' });
  const keys = await page.locator('#keys-popover').textContent();
  for (const s of ['Query page', 'Timeline', 'Flame graph']) assert.ok(keys.includes(s), `the keys list has ${s}`);
  await shot('01-keys');
  await page.keyboard.press('Escape');
  await page.waitForSelector('#keys-popover', { state: 'hidden' });
  const bg = await background();
  assert.ok(luminance(bg) > 0.6, `light theme background is light: ${bg}`);
  await shot('01-query-page');
});

step('02-lanes', ['01-query-page'], async () => {
  await runQuery(ALL, 'enter');
  await timelineReady(2, 8); // heap and goroutine, at least 4 profiles each
  const tl = await timeline();
  const ms = await marks();
  // profiles closer than a pixel are drawn as one mark with a count
  assert.equal(ms.reduce((n, m) => n + (m.count || 1), 0), tl.marks, 'the marks of profdMarks() add up to data-marks');
  assert.deepEqual([...new Set(ms.map((m) => m.lane))].sort(), [0, 1], 'marks in both lanes');
  // every mark is one stored profile, and data-marks counts all in the range shown
  const shown = await page.$eval('#timeline', (el) => [el.dataset.viewFrom, el.dataset.viewTo]);
  const range = shown[0] && shown[1]
    ? { start: (shown[0] / 1000).toFixed(3), end: (shown[1] / 1000).toFixed(3) }
    : { start: String(Date.now() / 1000 - 3600) };
  const series = await api('query_range', { query: ALL, ...range });
  const stored = series.flatMap((s) => s.timestamps);
  for (const m of ms) assert.ok(stored.includes(m.t), `mark at ${m.t} is a stored profile`);
  // a scrape that began before the UI's query may be stored after it: one per series
  const slack = range.end ? 2 : 10;
  assert.ok(tl.marks <= stored.length && tl.marks >= stored.length - slack,
    `data-marks ${tl.marks} counts the ${stored.length} profiles of the range shown (less at most ${slack} in flight)`);
  const box = await page.locator('#timeline').boundingBox();
  for (const m of ms) {
    assert.ok(m.x >= box.x && m.x <= box.x + box.width && m.y >= box.y && m.y <= box.y + box.height,
      `mark ${JSON.stringify(m)} inside #timeline ${JSON.stringify(box)}`);
  }
  assert.match(decodeURIComponent(page.url()), /served/, 'the query is kept in the URL');
  // the values chart opens on the preferred profile type (CPU, then heap), not on the
  // first by name (goroutine)
  await eventually(async () => assert.equal((await chartState()).metric, 'heap_inuse_space_bytes'));
  await shot('02-lanes');
});

const spread = (ms) => Math.max(...ms.map((m) => m.x)) - Math.min(...ms.map((m) => m.x));

step('03-range-presets', ['02-lanes'], async () => {
  // the same profiles over 15 minutes instead of an hour: marks spread further apart
  // (the query ran from the landing page, over its 15 minutes: first the hour)
  await page.click('[data-range="1h"]');
  await eventually(async () => {
    assert.equal(new URL(page.url()).searchParams.get('range'), '1h');
    assert.equal((await timeline()).state, 'ready');
  });
  await timelineReady(2, 8);
  const wide = spread(await marks());
  await page.click('[data-range="15m"]');
  await eventually(async () => {
    const tl = await timeline();
    assert.equal(tl.state, 'ready');
    const s = spread(await marks());
    // a quarter of the range: four times the pixels for the same marks (more when a
    // scrape came in between); a few seconds of scrapes may span only a few pixels
    // at 15m, so the floor is small
    assert.ok(s > wide * 3.5 && s > 3, `15m spreads the marks over about four times the pixels of 1h (${s} vs ${wide})`);
  });
  assert.match(page.url(), /15m/, 'the range is kept in the URL');
  await shot('03-range-15m');
});

step('03-range-text', ['01-query-page'], async () => {
  // a browser 5:30 ahead of UTC, so that the zone choice shows
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 950 }, timezoneId: 'Asia/Kolkata' });
  const p = await ctx.newPage();
  watch(p);
  await p.goto(`${URL_BASE}/?query=${encodeURIComponent(HEAP)}&range=1h`);
  await p.waitForFunction(() => document.querySelector('#timeline')?.dataset.state === 'ready', null, { timeout: T });
  assert.equal(await p.inputValue('#range-text'), 'now-1h', 'the field shows the range as typed');
  const param = (k) => new URL(p.url()).searchParams.get(k);
  // Grafana's relative forms
  await p.fill('#range-text', 'now-6h');
  await p.press('#range-text', 'Enter');
  await p.waitForFunction(() => new URL(location.href).searchParams.get('range') === '6h', null, { timeout: T });
  await p.fill('#range-text', 'now-3h to now-1h');
  await p.press('#range-text', 'Enter');
  await p.waitForFunction(() => new URL(location.href).searchParams.get('from') !== null, null, { timeout: T });
  assert.equal(Number(param('to')) - Number(param('from')), 2 * 3600e3, 'now-3h to now-1h is two hours');
  assert.equal(param('range'), null);
  // a typo says what is wrong and changes nothing
  const before = p.url();
  await p.fill('#range-text', 'yesterday');
  await p.press('#range-text', 'Enter');
  assert.match(await p.$eval('#range-text', (i) => i.validationMessage), /"yesterday" is not a time before now/);
  assert.equal(p.url(), before);
  // longer than the server's 31 days: offered clamped, and the status says so
  await p.fill('#range-text', 'now-60d');
  await p.press('#range-text', 'Enter');
  await p.waitForFunction(() => new URL(location.href).searchParams.get('range') === '31d', null, { timeout: T });
  await p.waitForFunction(() => document.querySelector('#timeline')?.dataset.state === 'ready', null, { timeout: T });
  const note = await p.locator('[data-note="range"]').innerText();
  assert.match(note, /at most 31d at a time, so the last 31d of the 60d asked for are shown/, note);
  assert.equal(await p.locator('.query-error:not([hidden])').count(), 0, 'no refusal shown');
  // the zone: the browser's, then UTC for every time shown
  await p.click('[data-range="1h"]');
  await p.waitForFunction(() => new URL(location.href).searchParams.get('range') === '1h', null, { timeout: T });
  assert.match(await p.$eval('#time-zone', (s) => s.selectedOptions[0].textContent), /Browser time \(UTC\+05:30\)/);
  const shown = async () => {
    const v = await p.inputValue('#range-to');
    return { v, asUtc: Date.parse(v + 'Z') };
  };
  const local = await shown();
  await p.selectOption('#time-zone', 'utc');
  await p.waitForFunction(() => document.querySelector('#timeline')?.dataset.state === 'ready', null, { timeout: T });
  const utc = await shown();
  const d = local.asUtc - utc.asUtc;
  assert.ok(Math.abs(d - 5.5 * 3600e3) < 120e3, `the inputs move 5:30 back in UTC (${local.v} → ${utc.v})`);
  await p.reload();
  await p.waitForSelector('#time-zone');
  assert.equal(await p.inputValue('#time-zone'), 'utc', 'the choice is kept');
  await ctx.close();
});

step('04-heap-lane', ['02-lanes'], async () => {
  await runQuery(HEAP, 'button');
  await timelineReady(1, 4);
  const ms = await marks();
  assert.ok(ms.every((m) => m.lane === 0));
  const sorted = [...ms].sort((a, b) => a.t - b.t);
  for (let i = 1; i < sorted.length; i++) assert.ok(sorted[i].x > sorted[i - 1].x, 'later profiles are further right');
  await shot('04-heap-lane');
});

step('05-live', ['04-heap-lane'], async () => {
  // live: the timeline follows new scrapes (one a second; the UI refreshes every 10 s)
  const before = (await timeline()).marks;
  await page.check('#live');
  await eventually(async () => {
    const tl = await timeline();
    assert.ok(tl.marks > before, `live adds marks: ${tl.marks} after ${before}`);
  }, 30000);
  await shot('05-live');
  await page.uncheck('#live'); // off again, so that marks stay where they are
  await page.waitForTimeout(2000); // a refresh already under way may still land
  const n = (await timeline()).marks;
  await page.waitForTimeout(11000);
  assert.equal((await timeline()).marks, n, 'no new marks once live is off');
});

// every mark is visible: what is at its point is the timeline's canvas (no bar or
// popup drawn over it)
async function assertUncovered(ms, what) {
  const covered = await page.evaluate((pts) => pts.filter((m) => {
    const el = document.elementFromPoint(m.x, m.y);
    return !el || !el.classList.contains('tl-canvas');
  }), ms);
  assert.deepEqual(covered, [], `${what} covers no mark`);
}

// drags across the timeline at the height of a mark, from x0 to x1
async function drag(y, x0, x1) {
  await page.mouse.move(x0, y);
  await page.mouse.down();
  await page.mouse.move((x0 + x1) / 2, y, { steps: 5 });
  await page.mouse.move(x1, y, { steps: 5 });
  await page.mouse.up();
}

let heapMarks = []; // marks of the heap lane, one profile each, oldest first
let firstFile; // the file served for heapMarks[0]
let profileUrl; // the page showing heapMarks[0]

step('06-select-zoom', ['04-heap-lane'], async () => {
  // a drag over every mark, then Zoom: the marks spread apart, one profile each
  const ms = (await marks()).sort((a, b) => a.t - b.t);
  const n = (await timeline()).marks;
  const before = spread(ms);
  const boxBefore = await page.locator('#timeline').boundingBox();
  await drag(ms[0].y, ms[0].x - 8, ms[ms.length - 1].x + 8);
  await page.waitForSelector('#sel-zoom', { state: 'visible' });
  await page.waitForSelector('#sel-merge', { state: 'visible' });
  await assertUncovered(ms, 'the range selection\'s action bar');
  assert.deepEqual(await page.locator('#timeline').boundingBox(), boxBefore, 'the action bar moves nothing');
  await shot('06-selection');
  await page.click('#sel-zoom');
  await eventually(async () => {
    assert.equal((await timeline()).state, 'ready');
    heapMarks = (await marks()).sort((a, b) => a.t - b.t);
    assert.equal(heapMarks.length, n, `every profile is its own mark (${heapMarks.length} of ${n})`);
    assert.ok(heapMarks.every((m) => (m.count || 1) === 1), 'no mark stands for several profiles');
    assert.ok(spread(heapMarks) > before * 5, `zoomed in: ${spread(heapMarks)} px, was ${before}`);
  });
  const box = await page.locator('#timeline').boundingBox();
  assert.ok(heapMarks.every((m) => m.x > box.x && m.x < box.x + box.width), 'all marks still inside the timeline');
  firstFile = await heapFileAt(heapMarks[0].t);
  await shot('06-zoomed');
});

step('07-profile', ['06-select-zoom'], async () => {
  await clickMark(heapMarks[0]);
  await profileReady(false);
  profileUrl = page.url();
  done.add('profile-open'); // what the next steps need, whatever the checks below find
  assert.ok(await page.locator('#profile-host #profile').count() === 1, '#profile inside #profile-host');
  const expected = topName([firstFile]); // inuse_space, the heap's default
  const rows = await topRows();
  assert.equal(rows[0], expected, `top table's first row is go tool pprof -top's (${firstFile})`);
  assert.equal(rows.length, pprofTop([firstFile]).length, 'as many rows as go tool pprof -top -nodefraction=0');
  assert.equal(await attr('#flame', 'data-root'), 'root');
  const fs = await frames();
  assert.ok(fs.length > 10, `the flame graph draws frames (${fs.length})`);
  assert.ok(fs.some((f) => f.name === expected), `the flame graph has ${expected}`);
  const box = await page.locator('#flame').boundingBox();
  const root = fs.find((f) => f.depth === 0);
  assert.ok(root && root.w > box.width * 0.9, `the root frame spans the graph (${root && root.w} of ${box.width})`);
  await shot('07-profile');
});

step('08-flame-zoom', ['profile-open'], async () => {
  const name = topName([firstFile]);
  const target = (await frames()).filter((f) => f.name === name && f.depth > 0).reduce((a, f) => (f.w > a.w ? f : a));
  const before = target.w;
  await page.mouse.click(target.x + Math.min(target.w / 2, 20), target.y + target.h / 2);
  await eventually(async () => assert.equal(await attr('#flame', 'data-root'), name));
  const after = (await frames()).filter((f) => f.name === name).reduce((a, f) => (f.w > a.w ? f : a));
  assert.ok(after.w > before * 1.05, `zoomed ${name} is wider (${after.w} > ${before})`);
  assert.match(await page.locator('#flame-crumbs').innerText(), new RegExp(name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')),
    'the breadcrumbs name the zoomed frame');
  await shot('08-flame-zoom');
  await page.click('#flame-reset');
  await eventually(async () => assert.equal(await attr('#flame', 'data-root'), 'root'));
});

step('09-flame-search', ['profile-open'], async () => {
  const row = pprofTop([firstFile])[0];
  const term = row.name.split('.').pop(); // newRecord
  await page.fill('#flame-search', term);
  await eventually(async () => {
    const text = await page.locator('#flame-search-result').innerText();
    const pct = text.match(/([\d.]+)\s*%/);
    assert.ok(pct, `#flame-search-result reports the match's share: "${text}"`);
    assert.ok(Math.abs(parseFloat(pct[1]) - row.cumPercent) < 0.1,
      `the match's share ${pct[1]}% is ${row.name}'s cum% in go tool pprof -top, ${row.cumPercent}%`);
  });
  const found = await page.locator('#flame-search-result').innerText();
  await shot('09-flame-search');
  await page.fill('#flame-search', 'zzz_no_such_function');
  await eventually(async () => {
    const text = await page.locator('#flame-search-result').innerText();
    assert.notEqual(text, found, 'a term that matches nothing reports something else');
  });
  await page.fill('#flame-search', '');
});

step('10-top-table', ['profile-open'], async () => {
  const all = await topRows();
  await page.fill('#top-filter', 'runtime');
  await eventually(async () => {
    const rows = await topRows();
    assert.ok(rows.length > 0 && rows.length < all.length, `filter keeps some rows (${rows.length} of ${all.length})`);
    for (const r of rows) assert.match(r, /runtime/i, 'every filtered row matches');
  });
  await shot('10-top-filter');
  await page.fill('#top-filter', '');
  await eventually(async () => assert.equal((await topRows()).length, all.length));
  // sorting by name orders the rows by name
  const th = page.locator('#top-table th[data-sort="name"]');
  assert.equal(await th.count(), 1, 'th[data-sort="name"]');
  await th.click();
  await eventually(async () => {
    const rows = await topRows();
    const sorted = [...rows].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const rev = [...sorted].reverse();
    assert.ok(JSON.stringify(rows) === JSON.stringify(sorted) || JSON.stringify(rows) === JSON.stringify(rev),
      `sorted by name: ${rows.slice(0, 4).join(', ')}…`);
  });
  await shot('10-top-sort');
  const flat = page.locator('#top-table th[data-sort="flat"]');
  assert.equal(await flat.count(), 1, 'th[data-sort="flat"]');
  await flat.click();
  await eventually(async () => assert.equal((await topRows())[0], topName([firstFile]), 'back to flat order'));
});

step('11-sample-type', ['profile-open'], async () => {
  const expected = topName(['-sample_index=alloc_space', firstFile]);
  const st = page.locator('#sample-type');
  const isSelect = await st.evaluate((el) => el.tagName === 'SELECT');
  if (isSelect) {
    const value = await st.evaluate((el) => [...el.options].find((o) => /alloc_space/.test(o.textContent + ' ' + o.value))?.value);
    assert.ok(value !== undefined, '#sample-type offers alloc_space');
    await st.selectOption(value);
  } else {
    await st.locator('button', { hasText: 'alloc_space' }).click();
  }
  await eventually(async () => {
    assert.equal((await topRows())[0], expected, 'top row for alloc_space is go tool pprof -sample_index=alloc_space\'s');
    assert.equal(await attr('#flame', 'data-state'), 'ready');
  });
  assert.match(decodeURIComponent(page.url()), /alloc_space|sampleIndex|si=/, 'the sample type is kept in the URL');
  await shot('11-sample-type');
});

step('12-download', ['profile-open'], async () => {
  const href = await attr('#download', 'href');
  assert.match(href, /report=proto/, `#download links the proto report: ${href}`);
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
  const file = join(TMP, 'downloaded-' + (dl.suggestedFilename() || 'profile.pb.gz'));
  await dl.saveAs(file);
  assert.match(dl.suggestedFilename(), /^heap-.*\.pb\.gz$/, 'the API names the file');
  assert.ok(statSync(file).size > 100, 'a non-empty download');
  // a single profile is exactly what the target served
  assert.equal(topTable([file]), topTable([firstFile]), 'go tool pprof -top of the download equals the served file\'s');
  execFileSync(env('PD_PROFD'), ['pprof', 'validate', file], { stdio: 'pipe' });
  await shot('12-download');
});

step('12-stack-filters', ['profile-open'], async () => {
  // pprof's -hide, then -lines, from the view's filter bar: the table is go tool
  // pprof -top's with the same flags, and the URL keeps them
  const si = await sampleTypeShown();
  const names = (args) => pprofTop([`-sample_index=${si}`, ...args, firstFile]).map((r) => r.name).sort();
  await page.click('#stack-filters summary');
  await page.fill('#stack-filters input[data-filter="hide"]', 'runtime');
  await page.press('#stack-filters input[data-filter="hide"]', 'Enter');
  await eventually(async () => assert.equal(new URL(page.url()).searchParams.get('f.hide'), 'runtime'));
  await profileReady(false);
  await eventually(async () => assert.deepEqual((await topRows()).sort(), names(['-hide=runtime'])));
  assert.match(await page.locator('#profile .pf-details').innerText(), /stacks\s+hide=runtime/);
  await page.selectOption('#granularity', 'lines');
  await eventually(async () => assert.equal(new URL(page.url()).searchParams.get('gran'), 'lines'));
  await profileReady(false);
  await eventually(async () => assert.deepEqual((await topRows()).sort(), names(['-hide=runtime', '-lines'])));
  await shot('12-stack-filters');
  await page.click('#filters-clear');
  await eventually(async () => {
    const u = new URL(page.url());
    assert.equal(u.searchParams.get('f.hide'), null);
    assert.equal(u.searchParams.get('gran'), null);
  });
  await profileReady(false);
  await eventually(async () => assert.deepEqual((await topRows()).sort(), names([])));
});

step('13-diff', ['profile-open'], async () => {
  // the first mark, and a later one that got another capture of the growing heap
  const a = heapMarks[0];
  let b, bFile;
  for (const m of [heapMarks[2], ...heapMarks.slice(1)]) {
    const f = await heapFileAt(m.t);
    if (f !== firstFile) { b = m; bFile = f; break; }
  }
  assert.ok(b, 'two marks with different captures');
  await clickMark(a);
  await profileReady(false);
  await clickMark(b, true);
  await profileReady(true);
  // the sample type chosen before (11-sample-type) stays: the diff's profiles have it
  const si = await sampleTypeShown();
  if (done.has('11-sample-type')) {
    assert.equal(si, 'alloc_space', 'the chosen sample type is kept for the next profile opened');
    assert.match(decodeURIComponent(page.url()), /sample=alloc_space/, 'and kept in the URL');
  }
  const expected = topName([`-sample_index=${si}`, `-diff_base=${firstFile}`, bFile]);
  await eventually(async () => assert.equal((await topRows())[0], expected, `diff's top row (${si}) is go tool pprof -diff_base's`));
  assert.equal(await attr('#flame', 'data-diff'), '1');
  // the table has each side's flat beside the change, and a legend says what is what
  assert.deepEqual(await page.$$eval('#top-table thead th', (ths) => ths.map((t) => t.textContent)),
    ['A', 'B', 'Δ', 'Δ%', 'Δ cum', 'name']);
  assert.match(await page.locator('#diff-legend').innerText(), /more in B[\s\S]*less in B[\s\S]*unchanged/);
  assert.match(await page.$eval('#sample-type', (s) => s.selectedOptions[0].textContent), /^\S+ \(A .+ → B .+\)$/,
    'the sample-type menu names both sides\' totals');
  const cells = await page.$eval('#top-table tbody tr[data-name]', (tr) => [...tr.cells].map((c) => c.textContent));
  assert.ok(/^[+-]/.test(cells[2]) && !/^[+-]/.test(cells[0]) && !/^[+-]/.test(cells[1]),
    `A and B are amounts, Δ a change: ${cells}`);
  await page.click('#top-table thead th[data-sort="delta%"]');
  assert.equal(await attr('#top-table thead th[data-sort="delta%"]', 'aria-sort'), 'descending', 'Δ% sorts');
  await page.click('#top-table thead th[data-sort="delta%"]');
  await page.click('#top-table thead th[data-sort="delta%"]');
  // normalize: B scaled to A's total first, as go tool pprof -normalize
  await page.click('#stack-filters summary');
  await page.check('#normalize');
  await eventually(async () => assert.equal(new URL(page.url()).searchParams.get('normalize'), '1'));
  await profileReady(true);
  const norm = pprofTop([`-sample_index=${si}`, '-normalize', `-diff_base=${firstFile}`, bFile]).map((r) => r.name).sort();
  await eventually(async () => assert.deepEqual((await topRows()).sort(), norm, 'the rows of go tool pprof -normalize'));
  assert.match(await page.locator('#profile .pf-details').innerText(), /normalize\s+B scaled/);
  assert.equal(await page.$eval('#stack-filters', (d) => d.open), true, 'the filter bar stays open while one is set');
  await page.uncheck('#normalize');
  await eventually(async () => assert.equal(new URL(page.url()).searchParams.get('normalize'), null));
  await profileReady(true);
  await assertUncovered(await marks(), 'the open diff');
  await shot('13-diff');
});

step('13-copy-link', ['13-diff'], async () => {
  // profd runs without --web.external-url: the link is built from the address in the
  // browser (127.0.0.1:port here), not from profd's default http://<hostname>:<port>
  await page.click('#copy-link');
  await eventually(async () => assert.ok(await attr('#copy-link', 'data-url'), 'the link is made'));
  const link = await attr('#copy-link', 'data-url');
  assert.ok(link.startsWith(URL_BASE + '/?'), `the link is under the page's own origin ${URL_BASE}: ${link}`);
  assert.equal(new URL(link).searchParams.get('open'), 'diff');
  assert.equal(new URL(link).search, new URL(page.url()).search, 'the link is the view');
});

step('14-reload-keeps-state', ['13-diff'], async () => {
  const url = page.url();
  await page.reload();
  await profileReady(true);
  assert.equal(page.url(), url, 'the URL is the same after a reload');
  await timelineReady(1, 4);
  await shot('14-reload');
});

step('14-diff-empty-side', ['13-diff'], async () => {
  // side B at a time with no profile: one message that names the side, and not the
  // API's warning saying it again
  const u = new URL(page.url());
  for (const k of ['b.start', 'b.end']) u.searchParams.delete(k);
  u.searchParams.set('b.time', '1000');
  const p = await context.newPage();
  await p.goto(u.toString());
  await p.waitForSelector('#profile .pf-msg:not([hidden])', { timeout: T });
  const text = await p.locator('#profile .pf-msg').innerText();
  assert.match(text, /^Side B \(new\) has no profile: nothing matches .* at .*\. Pick another mark or range for side B\.$/, text);
  assert.doesNotMatch(await p.locator('#profile').innerText(), /side b of the diff has no profile|No profile at that time/);
  await p.close();
});

step('15-select-merge', ['06-select-zoom'], async () => {
  // a drag over the first four profiles, then Merge: go tool pprof's merge of those files
  heapMarks = (await marks()).sort((x, y) => x.t - y.t);
  const first = heapMarks[0];
  const last = heapMarks[3];
  const gap = heapMarks[1].x - first.x;
  await drag(first.y, first.x - gap / 3, last.x + gap / 3);
  await page.waitForSelector('#sel-merge', { state: 'visible' });
  await assertUncovered(heapMarks, 'the range selection\'s action bar');
  await shot('15-selection');
  await page.click('#sel-merge');
  await profileReady(false);
  const files = [];
  for (const m of heapMarks.slice(0, 4)) files.push(await heapFileAt(m.t));
  const s = await sampleTypeShown();
  const expected = pprofTop([`-sample_index=${s}`, ...files]);
  await eventually(async () => {
    const rows = await topRows();
    assert.equal(rows[0], expected[0].name, `merge of 4 profiles (${s}): top row is go tool pprof's`);
    assert.equal(rows.length, expected.length, 'as many rows as go tool pprof -top over the 4 files');
  });
  assert.match(await attr('#download', 'href'), /mode=merge/, 'the download is the merge');
  await shot('15-merge');
});

step('16-targets', ['01-query-page'], async () => {
  await page.click('#nav-targets');
  await page.waitForURL('**/targets');
  await eventually(async () => {
    const pools = await page.$$eval('.pool', (ps) => ps.map((p) => p.innerText));
    assert.equal(pools.length, 2, `two pools: ${pools.length}`);
    assert.ok(pools.some((p) => p.includes('served')) && pools.some((p) => p.includes('unreachable')), 'pools named by job');
    const health = await page.$$eval('tr.target[data-health]', (rs) => rs.map((r) => r.dataset.health));
    assert.equal(health.filter((h) => h === 'up').length, 2, `served: heap and goroutine up (${health})`);
    assert.equal(health.filter((h) => h === 'down').length, 2, `unreachable: both down (${health})`);
  });
  const text = await page.locator('body').innerText();
  assert.match(text, /connection refused|connect|refused/i, 'the down targets show their error');
  await shot('16-targets');
});

step('17-status', ['01-query-page'], async () => {
  await page.click('#nav-status');
  await page.waitForURL('**/status');
  const build = await api('status/buildinfo');
  await eventually(async () => {
    const text = await page.locator('body').innerText();
    assert.ok(text.includes(build.version), `the status page shows the version ${build.version}`);
    const fields = await page.$$eval('#status-build th', (ths) => ths.map((t) => t.textContent));
    assert.ok(fields.includes('Compiler') && !fields.includes('Go version'),
      `a C build names its compiler and no Go version: ${fields}`);
    assert.doesNotMatch(await page.locator('#status-build').innerText(), /—/, 'no empty build fields');
    assert.ok(text.includes('served'), 'the status page shows the configuration');
  });
  const sym = await api('status/symbolizer');
  assert.ok(sym.enabled, 'the test server runs the symbolizer');
  await eventually(async () => {
    const card = await page.locator('#status-symbolizer').innerText();
    assert.match(card, /Sources[\s\S]*Cache size[\s\S]*Hits[\s\S]*Misses[\s\S]*Failures/,
      `the status page shows the symbolizer: ${card}`);
    for (const x of sym.sources.filter((s) => s.type === 'dir')) {
      assert.ok(card.includes(x.path), `the symbolizer's source ${x.path} is listed`);
    }
  });
  await shot('17-status');
});

step('18-empty', ['01-query-page'], async () => {
  await page.goto(URL_BASE + '/');
  await runQuery('heap{job="nothing-here"}');
  await page.waitForFunction(() => document.querySelector('#timeline')?.dataset.state === 'empty', null, { timeout: T });
  assert.equal((await timeline()).marks, 0);
  const text = await page.locator('#timeline').innerText();
  assert.match(text, /no (profiles?|series|data)|nothing|matched no|matches no/i, 'the timeline explains the empty answer');
  assert.ok(text.includes('nothing-here'), 'the message names the selector');
  // all of the message can be read: nothing in it is cut off by the timeline's box
  const clipped = await page.$eval('#timeline', (tl) => {
    const box = tl.getBoundingClientRect();
    return [...tl.querySelectorAll('*')].filter((e) => {
      const r = e.getBoundingClientRect();
      return r.width > 0 && r.height > 0 && e.checkVisibility() && e.children.length === 0 && e.textContent.trim() &&
        (r.bottom > box.bottom + 1 || r.top < box.top - 1);
    }).map((e) => e.textContent.trim().slice(0, 40));
  });
  assert.deepEqual(clipped, [], 'parts of the empty message lie outside the timeline box');
  await shot('18-empty');
});

step('19-syntax-error', ['01-query-page'], async () => {
  await runQuery('heap{job=');
  // the API's own message, shown next to the input
  await eventually(async () => {
    const text = await page.locator('body').innerText();
    assert.match(text, /unexpected end of input|parse error/i, 'the selector\'s syntax error is shown');
  });
  const state = (await timeline()).state;
  assert.notEqual(state, 'ready', 'the timeline does not claim a result for a bad selector');
  await shot('19-syntax-error');
});

step('20-dark-theme', ['profile-open'], async () => {
  // the page of the first profile, in a browser that prefers a dark colour scheme
  const dark = await browser.newContext({ viewport: { width: 1400, height: 950 }, colorScheme: 'dark' });
  const p = await dark.newPage();
  watch(p);
  try {
    await p.goto(profileUrl);
    await profileReady(false, p);
    const bg = await background(p);
    assert.ok(luminance(bg) < 0.35, `dark theme background is dark: ${bg}`);
    const fg = await p.evaluate(() => getComputedStyle(document.querySelector('#top-table')).color);
    assert.ok(luminance(fg) > 0.6, `light text on the dark background: ${fg}`);
    assert.equal((await topRows(p))[0], topName([firstFile]), 'the same profile as in the light page');
    await timelineReady(1, 4, p);
    await shot('20-dark', p);
    // the toggle overrides the browser's preference
    await p.click('#theme-toggle');
    await eventually(async () => {
      const light = await background(p);
      assert.ok(luminance(light) > 0.6, `the theme toggle switches to light: ${light}`);
    });
    await shot('20-dark-toggled-light', p);
  } finally {
    await dark.close();
  }
});

step('21-stale-zoom', ['01-query-page'], async () => {
  // a zoom kept in a URL that lies outside the range is not applied, and leaves the URL
  await page.goto(`${URL_BASE}/?query=${encodeURIComponent(HEAP)}&range=1h&zoom=1000-2000`);
  await timelineReady(1, 4);
  await eventually(async () => assert.doesNotMatch(page.url(), /zoom=/, `no stale zoom in ${page.url()}`));
  const [from, to] = await page.$eval('#timeline', (el) => [Number(el.dataset.viewFrom), Number(el.dataset.viewTo)]);
  assert.ok(to - from > 3500e3, `the whole hour is shown (${to - from} ms)`);
  await shot('21-stale-zoom');
  // the brand leads back to the query page, without the query
  await page.click('#nav-brand');
  await eventually(async () => {
    const u = new URL(page.url());
    assert.ok(u.pathname === '/' && !u.searchParams.has('query'), `the brand opens / (${u})`);
  });
});

// A served heap file with every string table entry in `repl` replaced: the top-level
// string_table (field 6) entries are re-encoded, all else is copied as it is.
function rewriteStrings(pb, repl) {
  const varint = (b, i) => {
    let v = 0; let m = 1;
    for (;;) { const c = b[i++]; v += (c & 0x7f) * m; m *= 128; if (!(c & 0x80)) return [v, i]; }
  };
  const enc = (n) => { const o = []; do { let c = n % 128; n = Math.floor(n / 128); if (n) c |= 0x80; o.push(c); } while (n); return Buffer.from(o); };
  const out = [];
  for (let i = 0; i < pb.length;) {
    const st = i;
    const [tag, j0] = varint(pb, i);
    let j = j0;
    if ((tag & 7) === 0) j = varint(pb, j)[1];
    else if ((tag & 7) === 2) { const [len, k] = varint(pb, j); j = k + len; }
    else throw new Error(`unexpected wire type in ${tag}`);
    const str = (tag >>> 3) === 6 ? pb.subarray(j0, j) : null;
    const text = str && pb.subarray(varint(pb, j0)[1], j).toString();
    if (text !== null && repl[text] !== undefined) {
      const d = Buffer.from(repl[text]);
      out.push(enc(tag), enc(d.length), d);
    } else out.push(pb.subarray(st, j));
    i = j;
  }
  return Buffer.concat(out);
}

step('22-hostile-strings', ['01-query-page'], async () => {
  // A pushed profile whose label value, sample unit and function name are markup: the
  // UI shows them as text and runs none of it.
  const evil = (what) => `<img src=x onerror="window.pdXss=(window.pdXss||[]).concat('${what}')">`;
  const file = readFileSync(SERVED_LOG, 'utf8').split('\n')
    .find((l) => l.startsWith('/debug/pprof/heap ')).slice('/debug/pprof/heap '.length);
  const pb = rewriteStrings(gunzipped(file), { bytes: evil('unit'), 'runtime.malg': evil('function') });
  const sel = `heap{job="xss-check", evil=${JSON.stringify(evil('label') + '\n"&')}}`;
  const r = await fetch(`${URL_BASE}/api/v1/profiles?labels=${encodeURIComponent(sel)}&time=${Math.floor(Date.now() / 1000)}`,
    { method: 'POST', body: gzipSync(pb) });
  assert.equal(r.status, 200, await r.text());
  const dialogs = [];
  const onDialog = (d) => { dialogs.push(d.message()); d.dismiss().catch(() => {}); };
  page.on('dialog', onDialog);
  try {
    await page.goto(URL_BASE + '/');
    await runQuery('heap{job="xss-check"}');
    await timelineReady(1, 1);
    const [m] = await marks();
    await page.mouse.move(m.x, m.y); // the tooltip names the series
    await clickMark(m);
    await profileReady(false);
    for (const f of (await frames()).filter((x) => x.w > 4).slice(0, 12)) await page.mouse.move(f.x + 2, f.y + 5);
    const text = await page.locator('#profile').innerText();
    assert.ok(text.includes('onerror'), 'the unit and the names are shown as text');
    await page.waitForTimeout(300); // an <img>'s onerror runs once its load fails
    const ran = await page.evaluate(() => window.pdXss || null);
    assert.equal(ran, null, `markup from the API ran: ${ran}`);
    assert.deepEqual(dialogs, []);
  } finally {
    page.off('dialog', onDialog);
  }
  await shot('22-hostile-strings');
});

// ---- the values chart: heap profiles pushed at known times into three series of two
// zones, so each point's value (the profile's inuse_space total) and each group's sum
// are known from go tool pprof -raw on the files pushed ----

// The total of one sample type over a file's samples, from go tool pprof -raw.
function sampleTotal(file, type) {
  const lines = pprof(['-raw', file]).split('\n');
  const h = lines.findIndex((l) => l.includes('/') && l.trim().split(/\s+/).some((c) => c.startsWith(type + '/')));
  assert.ok(h >= 0, `go tool pprof -raw ${file} lists no ${type}`);
  const col = lines[h].trim().split(/\s+/).findIndex((c) => c.startsWith(type + '/'));
  let sum = 0;
  for (const l of lines.slice(h + 1)) {
    const m = /^\s*([-\d\s]+):/.exec(l);
    if (!m) { if (/^\S/.test(l)) break; continue; }
    sum += Number(m[1].trim().split(/\s+/)[col]);
  }
  return sum;
}

const CHART = 'heap{job="chart"}';
const chartPushed = []; // [{instance, zone, t (ms), file}]
const chartState = () => page.$eval('#chart', (el) => ({ ...el.dataset }));
const chartPoints = () => page.$eval('#chart', (el) => el.profdPoints());

async function chartReady(series, points) {
  await page.waitForFunction(([n, p]) => {
    const el = document.querySelector('#chart');
    return el && el.dataset.state === 'ready' && Number(el.dataset.series) === n && (p == null || Number(el.dataset.points) === p);
  }, [series, points], { timeout: T }).catch(async (e) => {
    throw new Error(`chart not ready with ${series} series and ${points} points: ${JSON.stringify(await chartState().catch(() => 'no #chart'))}`, { cause: e });
  });
}

step('23-chart', ['01-query-page'], async () => {
  const dir = readFileSync(SERVED_LOG, 'utf8').split('\n').find((l) => l.startsWith('/debug/pprof/heap '))
    .slice('/debug/pprof/heap '.length).replace(/\/[^/]*$/, '');
  const files = ['heap.pb.gz', 'heap-2.pb.gz', 'heap-3.pb.gz'].map((f) => join(dir, f));
  const now = Math.floor(Date.now() / 1000);
  const series = [['p1', 'a'], ['p2', 'a'], ['p3', 'b']];
  for (const [i, [instance, zone]] of series.entries()) {
    for (let k = 0; k < 3; k++) {
      const t = now - 90 + 20 * k;
      const file = files[(i + k) % 3];
      const sel = `heap{job="chart", instance="${instance}", zone="${zone}"}`;
      const r = await fetch(`${URL_BASE}/api/v1/profiles?labels=${encodeURIComponent(sel)}&time=${t}`,
        { method: 'POST', body: readFileSync(file) });
      assert.equal(r.status, 200, await r.text());
      chartPushed.push({ instance, zone, t: t * 1000, file });
    }
  }
  await page.goto(URL_BASE + '/?query=' + encodeURIComponent(CHART) + '&range=15m');
  await timelineReady(3, 9);
  await chartReady(3, 9);
  const st = await chartState();
  assert.equal(st.metric, 'heap_inuse_space_bytes', 'the chart shows heap\'s default sample type');
  assert.equal(st.group, '');
  const pts = await chartPoints();
  assert.equal(pts.length, 9, 'one point per pushed profile');
  for (const p of pts) {
    const inst = /instance="(p\d)"/.exec(p.series)[1];
    const pushed = chartPushed.find((x) => x.instance === inst && x.t === p.t);
    assert.ok(pushed, `point ${JSON.stringify(p)} is a pushed profile`);
    assert.equal(p.v, sampleTotal(pushed.file, 'inuse_space'), `${inst} at ${p.t}: inuse_space total of ${pushed.file}`);
  }
  // drawn inside the chart, later points further right, above the lanes
  const box = await page.locator('#chart canvas').boundingBox();
  const lanes = await page.locator('#timeline .tl-wrap').boundingBox();
  for (const p of pts) assert.ok(p.x >= box.x && p.x <= box.x + box.width && p.y >= box.y && p.y <= box.y + box.height, 'point inside the chart');
  assert.ok(box.y + box.height <= lanes.y + 1, 'the chart is above the lanes');
  // the chart and the lanes share their time axis: a point sits over its profile's mark
  const ms = await marks();
  for (const p of pts) {
    const m = ms.find((x) => x.t === p.t);
    assert.ok(m && Math.abs(m.x - p.x) < 1.5, `point at ${p.t} over its mark (${p.x} vs ${m && m.x})`);
  }
  // hover shows the value
  const p0 = pts[0];
  await page.mouse.move(p0.x, p0.y);
  await page.waitForSelector('.ch-tooltip', { state: 'visible' });
  assert.match(await page.locator('.ch-tooltip').innerText(), /\d+(\.\d+)? (B|kB|MB)/);
  // the screen readers' table: a row per series
  assert.equal(await page.locator('.ch-table tbody tr').count(), 3);
  await shot('23-chart');
});

step('23-chart-legend', ['23-chart'], async () => {
  // a legend names each line; a click hides one, shift-click shows one alone
  const keys = () => page.$$eval('#chart .ch-legend button.ch-key[data-title]', (bs) => bs.map((b) => [b.dataset.title, b.getAttribute('aria-pressed')]));
  const titles = (await keys()).map((k) => k[0]);
  assert.equal(titles.length, 3, `a key per series: ${titles}`);
  for (const i of ['p1', 'p2', 'p3']) assert.ok(titles.some((t) => t.includes(`instance="${i}"`)), `a key names ${i}`);
  const p1 = titles.find((t) => t.includes('"p1"'));
  const p3 = titles.find((t) => t.includes('"p3"'));
  await page.click(`#chart .ch-legend button[data-title='${p1}']`);
  await eventually(async () => {
    assert.equal((await chartState()).shown, '2');
    const pts = await chartPoints();
    assert.equal(pts.length, 6, 'p1\'s points are gone');
    assert.ok(pts.every((x) => !x.series.includes('"p1"')));
  });
  assert.deepEqual((await keys()).find((k) => k[0] === p1), [p1, 'false'], 'its key says it is hidden');
  await shot('23-chart-legend');
  await page.click(`#chart .ch-legend button[data-title='${p3}']`, { modifiers: ['Shift'] });
  await eventually(async () => {
    const pts = await chartPoints();
    assert.ok(pts.length === 3 && pts.every((x) => x.series.includes('"p3"')), 'p3 alone');
  });
  await page.click('#chart .ch-legend button[data-act="all"]');
  await eventually(async () => assert.equal((await chartPoints()).length, 9, 'every series again'));
  assert.equal((await chartState()).series, '3');
});

step('24-chart-click', ['23-chart'], async () => {
  const pts = await chartPoints();
  const p = pts.find((x) => x.series.includes('"p2"') && x.t === chartPushed.find((y) => y.instance === 'p2').t + 20000);
  assert.ok(p, 'p2\'s second point');
  await page.mouse.click(p.x, p.y);
  await profileReady(false);
  const u = new URL(page.url());
  assert.equal(u.searchParams.get('open'), 'single');
  assert.equal(u.searchParams.get('sel'), 'heap{instance="p2", job="chart", zone="a"}');
  assert.equal(u.searchParams.get('time'), String(p.t));
  // the profile open is the file pushed there: the top table's first row is go tool pprof's
  const pushed = chartPushed.find((y) => y.instance === 'p2' && y.t === p.t);
  const s = await sampleTypeShown();
  await eventually(async () => assert.equal((await topRows())[0], topName([`-sample_index=${s}`, pushed.file])));
  await shot('24-chart-click');
});

step('25-chart-brush', ['23-chart'], async () => {
  const pts = (await chartPoints()).sort((a, b) => a.t - b.t);
  const ts = [...new Set(pts.map((p) => p.t))];
  assert.equal(ts.length, 3);
  const x = (t) => pts.find((p) => p.t === t).x;
  const gap = x(ts[1]) - x(ts[0]);
  const box = await page.locator('#chart canvas').boundingBox();
  await drag(box.y + 8, x(ts[0]) - gap / 3, x(ts[1]) + gap / 3);
  await profileReady(false);
  const u = new URL(page.url());
  assert.equal(u.searchParams.get('open'), 'merge');
  assert.equal(u.searchParams.get('sel'), CHART);
  const start = Number(u.searchParams.get('start'));
  const end = Number(u.searchParams.get('end'));
  assert.ok(start <= ts[0] && start > ts[0] - 20000 && end >= ts[1] && end < ts[2], `merge over the brush: ${start}-${end} for ${ts}`);
  await eventually(async () => assert.match(await page.locator('#profile').innerText(), /Merge of 6 profiles of 3 series/));
  await shot('25-chart-brush');
});

step('26-chart-group', ['23-chart'], async () => {
  await page.selectOption('#chart-group', 'zone');
  await eventually(async () => {
    const st = await chartState();
    assert.equal(st.group, 'zone');
    assert.equal(st.state, 'ready');
    assert.equal(st.series, '2', 'one line per zone');
  });
  assert.match(page.url(), /group=zone/, 'the group-by is kept in the URL');
  const pts = await chartPoints();
  // every zone's latest point: the sum of its series' latest profiles
  const t2 = Math.max(...chartPushed.map((p) => p.t));
  for (const zone of ['a', 'b']) {
    const line = pts.filter((p) => p.series === `{zone="${zone}"}`).sort((a, b) => a.t - b.t);
    assert.ok(line.length > 0, `a line for zone ${zone}`);
    const last = line[line.length - 1];
    assert.ok(last.t >= t2);
    const want = chartPushed.filter((p) => p.zone === zone && p.t === t2)
      .reduce((n, p) => n + sampleTotal(p.file, 'inuse_space'), 0);
    assert.equal(last.v, want, `zone ${zone} at ${last.t}: the sum of its series' latest inuse_space`);
  }
  await shot('26-chart-group');
  // a point of zone a opens the merge of that zone's profiles that made it
  const a = pts.filter((p) => p.series === '{zone="a"}').sort((x, y) => x.t - y.t).pop();
  await page.mouse.click(a.x, a.y);
  await profileReady(false);
  const u = new URL(page.url());
  assert.equal(u.searchParams.get('open'), 'merge');
  assert.equal(u.searchParams.get('sel'), 'heap{job="chart", zone="a"}');
  assert.equal(Number(u.searchParams.get('start')), t2);
  await eventually(async () => assert.match(await page.locator('#profile').innerText(), /Merge of 2 profiles of 2 series/));
});

step('27-landing-range', ['02-lanes'], async () => {
  // the landing page names the range its buttons run over, and highlights that preset
  await page.goto(URL_BASE + '/');
  const said = () => page.locator('#timeline p', { hasText: 'every series of it' }).innerText();
  const active = () => page.$$eval('[data-range][aria-pressed="true"]', (bs) => bs.map((b) => b.dataset.range));
  await eventually(async () => assert.match(await said(), /the last 15 minutes/));
  assert.deepEqual(await active(), ['15m'], 'the 15m preset is the one highlighted');
  await shot('27-landing-range');
  await page.click('[data-range="6h"]');
  await eventually(async () => assert.match(await said(), /the last 6 hours/));
  assert.deepEqual(await active(), ['6h']);
  // a job's button runs over that range
  await page.locator('.chips .chip', { hasText: '{job="served"}' }).click();
  await timelineReady(2, 4);
  assert.equal(new URL(page.url()).searchParams.get('range'), '6h');
});

step('28-selector-as-typed', ['01-query-page'], async () => {
  // Enter runs the selector as typed when closing it would not complete it
  await page.goto(URL_BASE + '/');
  const typed = 'heap{job=served"}';
  await runQuery(typed);
  await eventually(async () => assert.match(await page.locator('#query-error').innerText(), /parse error|unexpected/i));
  assert.equal(await page.inputValue('#query-input'), typed, 'the selector is left as typed');
  assert.equal(new URL(page.url()).searchParams.get('query'), typed);
  // one cut short is still closed
  await runQuery('heap{job="served');
  await timelineReady(1, 4);
  assert.equal(await page.inputValue('#query-input'), 'heap{job="served"}');
  await shot('28-selector-as-typed');
});

step('29-percent-precision', ['profile-open'], async () => {
  await page.goto(profileUrl);
  await profileReady(false);
  // flat%, sum%, cum%: every one with two decimals, so the column lines up
  const cells = await page.$$eval('#top-table tbody tr[data-name]', (rs) => rs.flatMap((r) =>
    [1, 2, 4].map((i) => r.children[i].textContent)));
  assert.ok(cells.length >= 9, `percent cells: ${cells.length}`);
  for (const c of cells) assert.match(c, /^(\d+\.\d\d|<0\.01)%$/, `a percent with two decimals: "${c}"`);
  // and none is cut off by its column (100.00% included)
  const cut = await page.$$eval('#top-table tbody tr[data-name] td.num', (tds) =>
    tds.filter((td) => td.scrollWidth > td.clientWidth).map((td) => td.textContent));
  assert.deepEqual(cut, [], 'numbers cut off by their column');
  await shot('29-percent-precision');
});

step('30-preload', ['profile-open'], async () => {
  // a cold load of a profile's page: every module it runs was preloaded by index.html,
  // and index.html preloads nothing it does not run
  const cold = await browser.newContext({ viewport: { width: 1400, height: 950 } });
  const p = await cold.newPage();
  watch(p);
  const modules = new Set();
  p.on('request', (r) => {
    const u = new URL(r.url());
    if (/\/js\/[^/]+\.js$/.test(u.pathname)) modules.add(u.pathname.replace(/^.*\/js\//, 'js/'));
  });
  try {
    await p.goto(profileUrl);
    await profileReady(false, p);
    const head = await p.evaluate(() => ({
      preload: [...document.querySelectorAll('link[rel="modulepreload"]')].map((l) => l.getAttribute('href')),
      sheets: [...document.querySelectorAll('link[rel="stylesheet"]')].map((l) => l.getAttribute('href')),
    }));
    assert.deepEqual([...modules].sort(), [...head.preload].sort(), 'the modules run are the modules preloaded');
    assert.ok(head.sheets.includes('css/profile.css'), 'the profile view\'s stylesheet is in the page from the start');
    assert.equal(await p.locator('link[href$="css/profile.css"]').count(), 1, 'and only once');
  } finally {
    await cold.close();
  }
});

// The inuse total of the average of files (go tool pprof's merge of them with each
// sample's value divided by their number, rounded half away from zero, as profd's
// aggregation=avg).
function averageTotal(files, type) {
  const lines = pprof(['-raw', ...files]).split('\n');
  const h = lines.findIndex((l) => l.trim().split(/\s+/).some((c) => c.startsWith(type + '/')));
  const col = lines[h].trim().split(/\s+/).findIndex((c) => c.startsWith(type + '/'));
  let sum = 0;
  for (const l of lines.slice(h + 1)) {
    const m = /^\s*([-\d\s]+):/.exec(l);
    if (!m) { if (/^\S/.test(l)) break; continue; }
    const v = Number(m[1].trim().split(/\s+/)[col]);
    const q = Math.floor(Math.abs(v) / files.length);
    const r = Math.abs(v) - q * files.length;
    sum += Math.sign(v) * (2 * r >= files.length ? q + 1 : q);
  }
  return sum;
}

// Pushes testdata/profiles/REL as sel, ago seconds back, and opens it at its CPU
// sample type; returns the file's path.
async function pushAndOpen(rel, sel, ago) {
  const file = fileURLToPath(new URL('../../testdata/profiles/' + rel, import.meta.url));
  const t = Math.floor(Date.now() / 1000) - ago;
  const r = await fetch(`${URL_BASE}/api/v1/profiles?labels=${encodeURIComponent(sel)}&time=${t}`, { method: 'POST', body: readFileSync(file) });
  assert.equal(r.status, 200, await r.text());
  await page.goto(`${URL_BASE}/?query=${encodeURIComponent(sel)}&range=15m&open=single&sel=${encodeURIComponent(sel)}&time=${t * 1000}&sample=cpu`);
  await profileReady(false);
  return file;
}

step('32-top-show-all', ['01-query-page'], async () => {
  // a profile of 248 functions: the table draws its first 150 rows and a button
  // for the rest, which then are go tool pprof -top's, all of them
  const file = await pushAndOpen('goapp/cpu-large.pb.gz', 'profile{job="large"}', 40);
  const want = pprofTop(['-sample_index=cpu', file]);
  assert.ok(want.length > 150, `the file has more than 150 functions (${want.length})`);
  assert.equal((await topRows()).length, 150, 'the first 150 rows');
  const more = page.locator('#profile .pf-top-more button');
  assert.equal(await more.innerText(), `Show all ${want.length} rows`);
  await more.click();
  await eventually(async () => assert.equal((await topRows()).length, want.length, 'then all of them'));
  assert.deepEqual((await topRows()).slice().sort(), want.map((x) => x.name).sort(), 'go tool pprof -top\'s functions');
});

step('32-label-explorer', ['01-query-page'], async () => {
  // a CPU profile with pprof labels (endpoint, shard, tenant): the explorer lists each
  // key's values with go tool pprof -tags's shares, and a value focuses the view on
  // its samples, as -tagfocus
  const file = await pushAndOpen('labels/cpu.pb.gz', 'profile{job="labelled"}', 30);
  await page.click('#label-explorer summary');
  await page.waitForSelector('#label-explorer[data-state="ready"]');
  const shown = await page.$$eval('#label-explorer .pf-label-key', (ks) => ks.map((k) => [k.dataset.key,
    [...k.querySelectorAll('button.pf-label-value')].map((b) => [b.dataset.value, b.querySelector('.pf-label-share').textContent.split(' ')[0]])]));
  const want = [];
  for (const l of pprof(['-tags', '-sample_index=cpu', file]).split('\n')) {
    let m = /^\s*(\S+): Total/.exec(l);
    if (m) { want.push([m[1], []]); continue; }
    m = /^\s*\S+ \(\s*([\d.]+)%\): (.*)$/.exec(l);
    if (m) want[want.length - 1][1].push([m[2], `${m[1]}%`]);
  }
  assert.deepEqual(shown, want, 'the keys, values and shares of go tool pprof -tags');
  // a key's breakdown: each value's top function is go tool pprof -top -tagfocus's first row
  await page.click('#label-explorer button.pf-label-group[data-group="endpoint"]');
  await page.waitForSelector('#label-explorer .pf-label-key[data-key="endpoint"][data-state="grouped"]');
  const tops = await page.$$eval('#label-explorer .pf-label-key[data-key="endpoint"] button.pf-label-value',
    (bs) => bs.map((b) => {
      const t = b.querySelector('.pf-label-top');
      const cut = t && t.getBoundingClientRect().bottom > b.getBoundingClientRect().bottom + 1;
      return [b.dataset.value, t && !cut ? t.textContent : `cut off: ${t && t.textContent}`];
    }));
  assert.ok(tops.length >= 2, `endpoint has values: ${tops}`);
  for (const [v, top] of tops) {
    const esc = v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    assert.equal(top, 'top ' + pprofTop(['-sample_index=cpu', `-tagfocus=endpoint=^${esc}$`, file])[0].name, `endpoint=${v}'s top function`);
  }
  await shot('32-label-explorer');
  await page.click('#label-explorer button[data-key="endpoint"][data-value="/health"]');
  await eventually(async () => assert.equal(new URL(page.url()).searchParams.get('tag_focus'), 'endpoint=^/health$'));
  await profileReady(false);
  const focused = pprofTop(['-sample_index=cpu', '-tagfocus=endpoint=^/health$', file]).map((x) => x.name).sort();
  await eventually(async () => assert.deepEqual((await topRows()).sort(), focused, 'the rows of go tool pprof -tagfocus'));
  assert.equal(await page.inputValue('#tag-focus'), 'endpoint=^/health$', 'the chart\'s sample-label box shows it');
  await page.fill('#tag-focus', '');
  await page.press('#tag-focus', 'Enter');
  await eventually(async () => assert.equal(new URL(page.url()).searchParams.get('tag_focus'), null));
});

step('31-profile-groups', ['23-chart'], async () => {
  // a merge of the chart's three series, grouped by zone, summed (agg=sum): one group
  // per zone, each with the sum of its profiles' totals; the chart groups by the same label
  const start = Math.min(...chartPushed.map((x) => x.t));
  const end = Math.max(...chartPushed.map((x) => x.t));
  await page.goto(`${URL_BASE}/?query=${encodeURIComponent(CHART)}&range=15m&group=zone&open=merge` +
    `&sel=${encodeURIComponent(CHART)}&start=${start}&end=${end}&agg=sum`);
  await profileReady(false);
  assert.equal(await page.inputValue('#profile-aggregation'), 'sum', 'agg= in the URL sets the Aggregate menu');
  const groups = () => page.$$eval('#profile-groups button[data-key]', (bs) => bs.map((b) => ({
    key: b.dataset.key, total: Number(b.dataset.total), checked: b.getAttribute('aria-checked') })));
  // (data-color: the swatch's colour, that of the group's line on the chart)
  await page.waitForSelector('#profile-groups[data-state="ready"]');
  const zoneTotal = (z) => chartPushed.filter((x) => x.zone === z).reduce((n, x) => n + sampleTotal(x.file, 'inuse_space'), 0);
  const gs = await groups();
  assert.deepEqual(gs.map((g) => g.key), ['', 'zone="a"', 'zone="b"'], 'All, then the heaviest group first');
  assert.equal(gs[1].total, zoneTotal('a'));
  assert.equal(gs[2].total, zoneTotal('b'));
  assert.equal(gs[0].total, zoneTotal('a') + zoneTotal('b'));
  assert.equal(gs[0].checked, 'true', 'the whole merge is shown first');
  assert.equal(await page.inputValue('#profile-group-by'), 'zone');
  await chartReady(2);
  assert.equal((await chartState()).group, 'zone', 'the chart groups by the same label');
  // each group wears the colour of its line on the chart: two groups, two colours
  await eventually(async () => {
    const colors = await page.$$eval('#profile-groups button[data-key]:not([data-key=""])', (bs) => bs.map((b) => b.dataset.color));
    assert.equal(colors.length, 2);
    assert.ok(colors.every((c) => /^#[0-9a-f]{6}$/i.test(c)) && colors[0] !== colors[1], `group colours ${colors}`);
  });
  // each group card shows its top function whole: go tool pprof's top row of its files
  for (const z of ['a', 'b']) {
    const files = chartPushed.filter((x) => x.zone === z).map((x) => x.file);
    const top = await page.$eval(`#profile-groups button[data-key='zone="${z}"'] .pf-group-top`,
      (e) => ({ text: e.textContent, cut: e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().bottom > e.closest('button').getBoundingClientRect().bottom + 1 }));
    assert.equal(top.text, 'top ' + topName(['-sample_index=inuse_space', ...files]), `zone ${z}'s card names its top function`);
    assert.ok(!top.cut, `zone ${z}'s top function is not cut off`);
  }
  await shot('31-profile-groups');
  // picking zone b shows the merge of zone b's profiles alone, and the URL keeps it
  await page.click('#profile-groups button[data-key="zone=\\"b\\""]');
  const bFiles = chartPushed.filter((x) => x.zone === 'b').map((x) => x.file);
  await eventually(async () => assert.equal((await topRows())[0], topName(['-sample_index=inuse_space', ...bFiles])));
  await eventually(async () => assert.equal(new URL(page.url()).searchParams.get('group_pick'), 'zone="b"'));
  assert.match(await page.locator('#profile .pf-details').innerText(), /zone="b", 3 profiles of 1 series/);
  await profileReady(false);
  assert.equal((await topRows()).length, pprofTop(['-sample_index=inuse_space', ...bFiles]).length,
    'as many rows as go tool pprof -top over zone b\'s files');
  await shot('31-profile-group-b');
  await page.reload();
  await profileReady(false);
  await page.waitForSelector('#profile-groups[data-state="ready"]');
  assert.equal((await groups()).find((g) => g.checked === 'true').key, 'zone="b"', 'a reload keeps the group');
  // the profile view's group-by is the chart's: by instance, both split three ways
  await page.selectOption('#profile-group-by', 'instance');
  await eventually(async () => {
    assert.equal(new URL(page.url()).searchParams.get('group'), 'instance');
    assert.equal(new URL(page.url()).searchParams.get('group_pick'), null, 'a new grouping starts from the whole merge');
  });
  await page.waitForSelector('#profile-groups[data-state="ready"]');
  assert.equal((await groups()).length, 4, 'All and three instances');
  await chartReady(3);
  assert.equal((await chartState()).group, 'instance');
  assert.equal(await page.inputValue('#chart-group'), 'instance');
  // and the chart's control moves the profile view's
  await page.selectOption('#chart-group', 'zone');
  await eventually(async () => assert.equal(await page.inputValue('#profile-group-by'), 'zone'));
  await page.waitForSelector('#profile-groups[data-state="ready"]');
  assert.equal((await groups()).length, 3);
  // Aggregate "by type" (the default): the heap in use is averaged per profile, in
  // each group over its own profiles, and the header says so
  await page.selectOption('#profile-aggregation', '');
  await eventually(async () => assert.equal(new URL(page.url()).searchParams.get('agg'), null, 'the default leaves agg= out'));
  const files = (z) => chartPushed.filter((x) => !z || x.zone === z).map((x) => x.file);
  // (All: the whole merge's average, each zone's weighed by its number of profiles)
  const za = averageTotal(files('a'), 'inuse_space');
  const zb = averageTotal(files('b'), 'inuse_space');
  const all = Math.round((za * files('a').length + zb * files('b').length) / files().length);
  await eventually(async () => {
    const gs = await groups();
    assert.deepEqual(gs.map((g) => [g.key, g.total]).sort(), [['', all], ['zone="a"', za], ['zone="b"', zb]].sort());
  });
  assert.ok(Math.abs(all - averageTotal(files(), 'inuse_space')) <= 64, 'which is the average of all files within rounding');
  await eventually(async () => assert.match(await page.locator('#profile .pf-details').innerText(),
    /average per profile of inuse_objects, inuse_space; sum of the rest/));
  await shot('31-profile-groups-average');
});

// ---- a phone: 390 px wide, touch, in both themes ----

// What sticks out of a 390 px page: the page's own width, the nav bar's, and each
// item of the bar that is cut off or covered.
async function narrowProblems(p) {
  return p.evaluate(() => {
    const out = [];
    const W = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth > W) out.push(`the page is ${document.documentElement.scrollWidth} px wide`);
    const bar = document.querySelector('.topbar');
    if (bar.scrollWidth > bar.clientWidth) out.push(`the nav bar overflows to ${bar.scrollWidth} px`);
    for (const id of ['nav-brand', 'nav-query', 'nav-targets', 'nav-status', 'keys-help', 'theme-toggle']) {
      const el = document.getElementById(id);
      const r = el.getBoundingClientRect();
      if (!el.checkVisibility() || r.width < 8 || r.left < 0 || r.right > W) out.push(`#${id} is not on screen (${r.left}-${r.right})`);
      else {
        const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        if (!hit || !el.contains(hit)) out.push(`#${id} is covered`);
      }
    }
    return out;
  });
}

// The width of a cell in characters of its own font.
const widthInChars = (p, sel) => p.$eval(sel, (el) => {
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = getComputedStyle(el).font;
  return el.getBoundingClientRect().width / ctx.measureText('0').width;
});

for (const theme of ['light', 'dark']) {
  step(`32-narrow-${theme}`, ['profile-open', '23-chart'], async () => {
    const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: theme,
      hasTouch: true, isMobile: true });
    const p = await ctx.newPage();
    watch(p);
    const snap = async (name) => {
      await p.screenshot({ path: join(SHOTS, `32-narrow-${theme}-${name}.png`), fullPage: true });
    };
    try {
      // the query page: every item of the bar on screen, nothing wider than the phone
      await p.goto(URL_BASE + '/');
      await p.waitForSelector('#timeline .chips .chip');
      assert.deepEqual(await narrowProblems(p), [], 'the landing page at 390 px');
      assert.equal(await p.evaluate(() => document.documentElement.dataset.theme), theme);
      await snap('landing');
      // the targets: each target's endpoint and labels get the width of the screen,
      // not a character per line
      await p.goto(URL_BASE + '/targets');
      await p.waitForSelector('tr.target');
      assert.deepEqual(await narrowProblems(p), [], 'the targets page at 390 px');
      const cells = await p.$$eval('tr.target td.endpoint, tr.target td.labels', (tds) => tds.map((td) => ({
        w: td.getBoundingClientRect().width, text: td.textContent.trim().slice(0, 40) })));
      assert.ok(cells.length >= 8, `targets cells: ${cells.length}`);
      for (const c of cells) assert.ok(c.w >= 300, `the cell "${c.text}" is ${c.w} px wide`);
      const linkLines = await p.$$eval('tr.target td.endpoint > a', (as) => as.map((a) => a.getClientRects().length));
      for (const n of linkLines) assert.ok(n <= 2, `an endpoint link spreads over ${n} lines`);
      await snap('targets');
      // a profile: the top table's names keep at least 20 characters
      await p.goto(profileUrl);
      await profileReady(false, p);
      assert.deepEqual(await narrowProblems(p), [], 'the profile page at 390 px');
      const chars = await widthInChars(p, '#top-table tbody tr[data-name] td.name');
      assert.ok(chars >= 20, `the name column holds ${chars.toFixed(1)} characters`);
      await snap('profile');
      // a tap on a point of the chart shows its value until a tap elsewhere
      await p.goto(URL_BASE + '/?query=' + encodeURIComponent(CHART) + '&range=15m');
      await p.waitForFunction(() => document.querySelector('#chart')?.dataset.state === 'ready');
      await p.waitForFunction(() => document.querySelector('#timeline')?.dataset.state === 'ready');
      const pt = (await p.$eval('#chart', (el) => el.profdPoints())).sort((a, b) => b.t - a.t)[0];
      await p.touchscreen.tap(pt.x, pt.y);
      await profileReady(false, p);
      await p.waitForSelector('.ch-tooltip', { state: 'visible' });
      assert.match(await p.locator('.ch-tooltip').innerText(), /\d+(\.\d+)? (B|kB|MB)/, 'the tapped point\'s value');
      await snap('tapped');
      const status = await p.locator('.query-status').boundingBox();
      await p.touchscreen.tap(status.x + 4, status.y + status.height / 2);
      await p.waitForSelector('.ch-tooltip', { state: 'hidden' });
      // and so does a mark's tooltip on the lanes
      const m = (await p.$eval('#timeline', (el) => el.profdMarks()))[0];
      await p.touchscreen.tap(m.x, m.y);
      await p.waitForSelector('#timeline .tl-tooltip:not(.ch-tooltip)', { state: 'visible' });
      await p.touchscreen.tap(status.x + 4, status.y + status.height / 2);
      await p.waitForSelector('#timeline .tl-tooltip:not(.ch-tooltip)', { state: 'hidden' });
      assert.deepEqual(await narrowProblems(p), [], 'the query page with a profile open at 390 px');
      // the hint names a finger's gestures, not a mouse's
      assert.equal(await p.locator('.tl-hint-touch').isVisible(), true, 'the touch hint is shown');
      assert.equal(await p.locator('.tl-hint-mouse').isVisible(), false, 'the mouse hint is not');
      // a touch-drag along a lane: the selection's bar covers none of the zoom buttons,
      // and its buttons do what they say when tapped
      const cdp = await ctx.newCDPSession(p);
      const touch = (type, pts) => cdp.send('Input.dispatchTouchEvent', { type,
        touchPoints: pts.map(([x, y], id) => ({ x, y, id, radiusX: 1, radiusY: 1, force: 1 })) });
      const lane0 = (await p.$eval('#timeline', (el) => el.profdMarks())).filter((x) => x.lane === 0);
      const xs = lane0.map((x) => x.x);
      const [x0, x1, ly] = [Math.min(...xs) - 3, Math.max(...xs) + 3, lane0[0].y];
      await touch('touchStart', [[x0, ly]]);
      for (let i = 1; i <= 8; i++) await touch('touchMove', [[x0 + ((x1 - x0) * i) / 8, ly]]);
      await touch('touchEnd', []);
      await p.waitForSelector('#timeline .tl-actions', { state: 'visible' });
      const overlaps = await p.evaluate(() => {
        const vis = (b) => { const r = b.getBoundingClientRect(); return r.width > 0 && r.height > 0 ? r : null; };
        const acts = [...document.querySelectorAll('#timeline .tl-actions button')].map(vis).filter(Boolean);
        const zoom = [...document.querySelectorAll('#timeline .tl-buttons button')].map(vis).filter(Boolean);
        const out = [];
        for (const a of acts) for (const z of zoom) {
          if (a.left < z.right && z.left < a.right && a.top < z.bottom && z.top < a.bottom) out.push([a.left, z.left]);
        }
        const vw = document.documentElement.clientWidth;
        for (const a of acts) if (a.right > vw + 0.5 || a.left < -0.5) out.push(['off screen', a.left, a.right]);
        return out;
      });
      assert.deepEqual(overlaps, [], 'no button of the selection bar lies over a zoom button or off the screen');
      await snap('selection');
      const merge = await p.locator('#sel-merge').boundingBox();
      await p.touchscreen.tap(merge.x + merge.width / 2, merge.y + merge.height / 2);
      await eventually(async () => assert.equal(new URL(p.url()).searchParams.get('open'), 'merge', 'Merge this lane merged'));
      await profileReady(false, p);
      assert.equal(await p.locator('#timeline .tl-buttons').isVisible(), true, 'the zoom buttons are back');
      // a pinch on the lanes zooms in about its middle
      const span = async () => p.$eval('#timeline', (el) => Number(el.dataset.viewTo) - Number(el.dataset.viewFrom));
      const before = await span();
      const mid = (x0 + x1) / 2;
      await touch('touchStart', [[mid - 20, ly], [mid + 20, ly]]);
      for (let i = 1; i <= 6; i++) await touch('touchMove', [[mid - 20 - 12 * i, ly], [mid + 20 + 12 * i, ly]]);
      await touch('touchEnd', []);
      await eventually(async () => {
        const after = await span();
        assert.ok(after > 0 && after < before * 0.5, `the pinch zoomed in: ${before} ms → ${after} ms`);
      });
      assert.equal(await p.locator('#timeline .tl-actions').isVisible(), false, 'a pinch selects nothing');
      // a merge grouped by zone: the groups fit the screen too
      const start = Math.min(...chartPushed.map((x) => x.t));
      const end = Math.max(...chartPushed.map((x) => x.t));
      await p.goto(`${URL_BASE}/?query=${encodeURIComponent(CHART)}&range=15m&group=zone&open=merge` +
        `&sel=${encodeURIComponent(CHART)}&start=${start}&end=${end}`);
      await p.waitForSelector('#profile-groups[data-state="ready"]');
      await profileReady(false, p);
      assert.deepEqual(await narrowProblems(p), [], 'a grouped merge at 390 px');
      await snap('groups');
    } finally {
      await ctx.close();
    }
  });
}

step('34-no-page-errors', [], async () => {
  assert.deepEqual(pageErrors, [], 'no uncaught errors in the pages');
});
