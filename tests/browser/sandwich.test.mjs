// sandwich.test.mjs: the profile view's sandwich, flame/icicle orientation and runtime
// collapse in Debian's Chromium, against a running profd that scrapes
// tests/support/serve_profiles (started by run.sh, which sets the PD_* variables).
// Steps run in order in one page and leave screenshots (NN-step.png); a step whose
// prerequisite failed is skipped.
//
// Expected values come from `go tool pprof` on the file the target served for the
// profile shown: -top -cum for the pivot's total, -peek for its callers and callees.
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
const SAMPLE = 'alloc_space';
const PIVOT = 'main.churner';
const T = 20000;

// ---- expected values, from go tool pprof ----

function pprof(args) {
  return execFileSync('go', ['tool', 'pprof', '-nodefraction=0', '-symbolize=none', '-unit=B', ...args], {
    cwd: TMP, env: { ...process.env, PPROF_TMPDIR: TMP }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
  });
}
const bytes = (s) => Number(s.replace(/B$/, ''));
const plain = (name) => name.replace(/ \(inline\)$/, '');
const reOf = (name) => '^' + name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$';

// go tool pprof -top -cum: {name: cum} in bytes
function pprofCum(file, sample) {
  const out = pprof(['-top', '-cum', `-sample_index=${sample}`, file]).split('\n');
  const h = out.findIndex((l) => /^\s*flat\s+flat%/.test(l));
  assert.ok(h >= 0, 'go tool pprof -top printed no table');
  const cum = {};
  for (const l of out.slice(h + 1).filter((x) => x.trim())) {
    const f = l.trim().split(/\s+/);
    cum[plain(f.slice(5).join(' '))] = bytes(f[3]);
  }
  return cum;
}

// go tool pprof -peek of one function: {callers: {name: bytes}, callees: {…}, cum}
function pprofPeek(file, sample, name) {
  const out = pprof(['-peek', reOf(name), `-sample_index=${sample}`, file]).split('\n');
  const r = { callers: {}, callees: {}, cum: null };
  for (const l of out) {
    const m = /^\s*(\S+)\s+\S+%\s+\|\s+(.+?)\s*$/.exec(l); // a caller or callee line
    const self = /^\s*(\S+)\s+\S+%\s+\S+%\s+(\S+)\s+\S+%\s+\|\s+(.+?)\s*$/.exec(l); // the function's own
    if (self && plain(self[3]) === name) r.cum = bytes(self[2]);
    else if (m) (r.cum === null ? r.callers : r.callees)[plain(m[2])] = bytes(m[1]);
  }
  assert.ok(r.cum !== null, `go tool pprof -peek found no ${name} in ${file}`);
  return r;
}

async function api(path, params) {
  const u = new URL('/api/v1/' + path, URL_BASE);
  for (const [k, v] of Object.entries(params || {})) u.searchParams.set(k, v);
  const r = await fetch(u);
  const body = await r.json();
  assert.equal(body.status, 'success', `${u}: ${body.error}`);
  return body.data;
}

// The heap file the target served for the profile stored at t (ms): the one whose
// go tool pprof -raw equals the stored profile's.
async function heapFileAt(t) {
  const u = new URL('/api/v1/query', URL_BASE);
  for (const [k, v] of Object.entries({ query: HEAP, time: (t / 1000).toFixed(3), lookback: '0.001', report: 'proto' })) {
    u.searchParams.set(k, v);
  }
  const r = await fetch(u);
  assert.equal(r.status, 200, `no heap profile stored at ${t}`);
  const stored = join(TMP, `sw-stored-${t}.pb.gz`);
  writeFileSync(stored, Buffer.from(await r.arrayBuffer()));
  const raw = (f) => pprof(['-raw', f]).replace(/^(File|Build ID|Time|Duration):.*$/gm, '');
  const want = raw(stored);
  const files = [...new Set(readFileSync(SERVED_LOG, 'utf8').split('\n')
    .filter((l) => l.startsWith('/debug/pprof/heap ')).map((l) => l.slice('/debug/pprof/heap '.length)))];
  const f = files.find((x) => raw(x) === want);
  assert.ok(f, `the profile stored at ${t} is none of the served files ${files.join(', ')}`);
  return f;
}

// ---- the browser ----

let browser, context, page;
const pageErrors = [];
function watch(p) {
  p.on('pageerror', (e) => pageErrors.push(`${p.url()}: ${e.message}`));
}

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

const done = new Set();
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

const framesOf = (sel, p = page) => p.$eval(sel, (el) => el.profdFrames());

// Scrolls the page so that the frame of canvas `sel` called `name` (at `depth`, if
// given) is on screen, and returns where it is drawn then.
async function reveal(sel, name, depth) {
  const find = (fs) => fs.filter((f) => f.name === name && (depth === undefined || f.depth === depth))
    .sort((a, b) => b.w - a.w)[0];
  const f = find(await framesOf(sel));
  assert.ok(f, `${sel} draws ${name}`);
  await page.evaluate((y) => window.scrollBy(0, y - window.innerHeight / 2), f.y + f.h / 2);
  return find(await framesOf(sel));
}
const param = (p, k) => new URL(p.url()).searchParams.get(k);

async function profileReady(p = page) {
  await p.waitForFunction(() => {
    const pr = document.querySelector('#profile');
    return pr && pr.dataset.state === 'ready' && document.querySelector('#top-table tbody tr[data-name]') &&
      !document.querySelector('.pf-table[data-rows="partial"]');
  }, null, { timeout: T });
}

async function sandwichReady(pivot, p = page) {
  await p.waitForFunction((name) => {
    const s = document.querySelector('#sandwich');
    return s && s.dataset.state === 'ready' && s.dataset.pivot === name &&
      document.querySelector('#sandwich-callers')?.dataset.state === 'ready' &&
      document.querySelector('#sandwich-callees')?.dataset.state === 'ready';
  }, pivot, { timeout: T }).catch(async (e) => {
    const got = await p.evaluate(() => ({ ...document.querySelector('#sandwich')?.dataset }));
    throw new Error(`sandwich of ${pivot} not ready: ${JSON.stringify(got)}`, { cause: e });
  });
}

// The sandwich's pivot total and its direct callers and callees as drawn:
// {total, callers: {name: total}, callees: {…}}.
async function drawnSandwich(p = page) {
  const callers = await framesOf('#sandwich-callers', p);
  const callees = await framesOf('#sandwich-callees', p);
  const level = (fs) => Object.fromEntries(fs.filter((f) => f.depth === 1).map((f) => [f.name, f.total]));
  const pivotUp = callers.find((f) => f.depth === 0);
  const pivotDown = callees.find((f) => f.depth === 0);
  return { total: pivotUp.total, totalDown: pivotDown.total, callers: level(callers), callees: level(callees),
    callerRects: callers, calleeRects: callees };
}

let t1, t2, file1, file2, profileUrl;

step('01-open', [], async () => {
  const meta = await api('query', { query: HEAP, time: (Date.now() / 1000).toFixed(3), report: 'meta' });
  t2 = meta.timestamp;
  const prev = await api('query', { query: HEAP, time: ((t2 - 1) / 1000).toFixed(3), report: 'meta' });
  t1 = prev.timestamp;
  assert.ok(t1 < t2, `two heap profiles stored (${t1}, ${t2})`);
  file1 = await heapFileAt(t1);
  file2 = await heapFileAt(t2);
  profileUrl = `${URL_BASE}/?query=${encodeURIComponent(HEAP)}&range=1h&open=single&sel=${encodeURIComponent(HEAP)}` +
    `&time=${t2}&sample=${SAMPLE}`;
  await page.goto(profileUrl);
  await profileReady();
  await shot('01-open');
});

step('02-sandwich-from-top-table', ['01-open'], async () => {
  await page.fill('#top-filter', reOf(PIVOT));
  // the filter applies after a pause and draws the rows anew: click in the new rows
  await page.waitForFunction(() => / of \d+ functions$/.test(document.querySelector('#profile .pf-top-count')?.textContent || ''),
    null, { timeout: T });
  const btn = page.locator(`#top-table tr[data-name="${PIVOT}"] [data-act="sandwich"]`);
  await btn.click();
  await sandwichReady(PIVOT);
  assert.equal(param(page, 'v.pivot'), PIVOT, 'the pivot is in the URL');
  assert.ok(await page.locator('#flame').isHidden(), 'the sandwich takes the flame graph\'s place');
  const peek = pprofPeek(file2, SAMPLE, PIVOT);
  const cum = pprofCum(file2, SAMPLE)[PIVOT];
  const got = await drawnSandwich();
  assert.equal(got.total, cum, `the pivot's total is go tool pprof -top -cum's (${file2})`);
  assert.equal(got.totalDown, cum, 'the callees\' pivot too');
  assert.equal(peek.cum, cum);
  assert.equal(Number(await page.getAttribute('#sandwich', 'data-total')), cum);
  const top = await api('query', { query: HEAP, time: (t2 / 1000).toFixed(3), report: 'top', sample_index: SAMPLE });
  assert.equal(top.rows.find((r) => r.name === PIVOT).cum, cum, 'the top table\'s cum for the pivot');
  assert.deepEqual(got.callers, peek.callers, 'callers are go tool pprof -peek\'s');
  assert.deepEqual(got.callees, peek.callees, 'callees are go tool pprof -peek\'s');
  // the callers are drawn above the pivot, the callees below it
  const pivotUp = got.callerRects.find((f) => f.depth === 0);
  for (const f of got.callerRects.filter((x) => x.depth > 0)) assert.ok(f.y < pivotUp.y, `caller ${f.name} above the pivot`);
  const pivotDown = got.calleeRects.find((f) => f.depth === 0);
  for (const f of got.calleeRects.filter((x) => x.depth > 0)) assert.ok(f.y > pivotDown.y, `callee ${f.name} below it`);
  await shot('02-sandwich');
});

step('03-reload-and-back', ['02-sandwich-from-top-table'], async () => {
  await page.reload();
  await sandwichReady(PIVOT);
  await page.click('#nav-targets');
  await page.waitForSelector('tr.target');
  await page.goBack();
  await sandwichReady(PIVOT);
  assert.equal(param(page, 'v.pivot'), PIVOT);
});

step('04-pivot-from-a-frame', ['03-reload-and-back'], async () => {
  // a right click on a callee makes it the pivot
  const callees = await framesOf('#sandwich-callees');
  const target = await reveal('#sandwich-callees', callees.filter((f) => f.depth === 1).sort((a, b) => b.w - a.w)[0].name, 1);
  await page.mouse.click(target.x + target.w / 2, target.y + target.h / 2, { button: 'right' });
  await sandwichReady(target.name);
  assert.equal(param(page, 'v.pivot'), target.name);
  const peek = pprofPeek(file2, SAMPLE, target.name);
  const got = await drawnSandwich();
  assert.equal(got.total, pprofCum(file2, SAMPLE)[target.name]);
  assert.deepEqual(got.callers, peek.callers, `${target.name}'s callers are go tool pprof -peek's`);
  assert.deepEqual(got.callees, peek.callees, `${target.name}'s callees are go tool pprof -peek's`);
  await shot('04-pivot-from-frame');
  // and from the main flame graph, once the sandwich is closed
  await page.click('#sandwich-close');
  await page.waitForSelector('#flame[data-state="ready"]');
  assert.equal(param(page, 'v.pivot'), null, 'closed: no pivot in the URL');
  const f = await reveal('#flame', PIVOT);
  await page.mouse.click(f.x + f.w / 2, f.y + f.h / 2, { button: 'right' });
  await sandwichReady(PIVOT);
  await page.click('#sandwich-close');
  await page.waitForSelector('#flame[data-state="ready"]');
});

// the frame under the mouse, by the tooltip it shows
async function nameAt(x, y) {
  await page.mouse.move(x, y);
  await page.waitForSelector('.pf-flame .pf-tooltip:not([hidden])');
  return page.locator('.pf-flame .pf-tooltip:not([hidden]) .pf-tip-name').innerText();
}

step('05-orientation', ['04-pivot-from-a-frame'], async () => {
  await page.fill('#top-filter', '');
  assert.equal(await page.getAttribute('#flame', 'data-orient'), 'icicle', 'the root at the top at first');
  let fs = await framesOf('#flame');
  const deep = (list) => list.filter((f) => f.depth >= 2 && f.w > 40).sort((a, b) => b.w - a.w)[0];
  let root = fs.find((f) => f.depth === 0);
  let d = await reveal('#flame', deep(fs).name, deep(fs).depth);
  assert.ok(root.y < d.y, 'icicle: the root above its callees');
  assert.equal(await nameAt(d.x + d.w / 2, d.y + d.h / 2), d.name, 'icicle: hit test finds the frame drawn there');
  await shot('05-icicle');
  await page.click('#flame-orient [data-orient="flame"]');
  await page.waitForSelector('#flame[data-orient="flame"]');
  assert.equal(param(page, 'v.orient'), 'flame', 'the orientation is in the URL');
  fs = await framesOf('#flame');
  d = await reveal('#flame', deep(fs).name, deep(fs).depth);
  root = (await framesOf('#flame')).find((f) => f.depth === 0);
  assert.ok(root.y > d.y, `flame: the root (y ${root.y}) below its callees (${d.name}, y ${d.y})`);
  assert.equal(await nameAt(d.x + d.w / 2, d.y + d.h / 2), d.name, 'flame: hit test finds the frame drawn there');
  root = await reveal('#flame', 'root', 0);
  assert.equal(await nameAt(root.x + 5, root.y + root.h / 2), 'root', 'flame: the bottom row is the root');
  d = await reveal('#flame', d.name, d.depth);
  // a click zooms into the frame under it
  await page.mouse.click(d.x + d.w / 2, d.y + d.h / 2);
  await page.waitForFunction((n) => document.querySelector('#flame').dataset.root === n, d.name);
  await shot('05-flame');
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => document.querySelector('#flame').dataset.root === 'root');
  // remembered: a link without v.orient shows the last choice
  await page.goto(profileUrl);
  await profileReady();
  assert.equal(await page.getAttribute('#flame', 'data-orient'), 'flame', 'kept in localStorage');
  await page.click('#flame-orient [data-orient="icicle"]');
  await page.waitForSelector('#flame[data-orient="icicle"]');
});

step('06-runtime-collapse', ['05-orientation'], async () => {
  // the heap's default sample type (inuse_space), whose goroutine stacks run through
  // the runtime
  await page.goto(profileUrl.replace(`&sample=${SAMPLE}`, ''));
  await profileReady();
  await page.waitForSelector('#flame[data-state="ready"]');
  const before = await framesOf('#flame');
  assert.ok(before.some((f) => f.name.startsWith('runtime.')), 'runtime frames to fold');
  await page.click('#flame-runtime');
  await page.waitForFunction((n) => document.querySelector('#flame').profdFrames().length !== n, before.length);
  assert.equal(param(page, 'v.runtime'), 'collapse');
  const after = await framesOf('#flame');
  assert.ok(after.length < before.length, `fewer frames: ${after.length} < ${before.length}`);
  const rootTotal = (fs) => fs.find((f) => f.depth === 0).total;
  assert.equal(rootTotal(after), rootTotal(before), 'the total is unchanged');
  const folded0 = after.find((f) => f.collapsed && f.collapsed.length);
  assert.ok(folded0, 'a frame says what was folded into it');
  const folded = await reveal('#flame', folded0.name, folded0.depth);
  assert.ok(folded, 'a frame says what was folded into it');
  const mine = before.find((f) => f.name === folded.name && f.depth === folded.depth);
  assert.equal(folded.total, mine.total, `${folded.name}'s total is unchanged`);
  assert.ok(!after.some((f) => f.depth > folded.depth && folded.collapsed.includes(f.name) &&
    f.x >= folded.x && f.x < folded.x + folded.w), 'the folded frames are not drawn below it');
  const tip = await (async () => {
    await page.mouse.move(folded.x + Math.min(folded.w / 2, 20), folded.y + folded.h / 2);
    await page.waitForSelector('.pf-flame .pf-tooltip:not([hidden])');
    return page.locator('.pf-flame .pf-tooltip:not([hidden])').innerText();
  })();
  for (const n of folded.collapsed.slice(0, 8)) assert.ok(tip.includes(n), `the tooltip lists ${n}: ${tip}`);
  await shot('06-runtime-collapsed');
  await page.click('#flame-runtime');
  await page.waitForFunction((n) => document.querySelector('#flame').profdFrames().length === n, before.length);
});

step('07-diff', ['01-open'], async () => {
  await page.goto(`${URL_BASE}/?query=${encodeURIComponent(HEAP)}&range=1h&open=diff&a.sel=${encodeURIComponent(HEAP)}` +
    `&a.time=${t1}&b.sel=${encodeURIComponent(HEAP)}&b.time=${t2}&sample=${SAMPLE}&v.pivot=${encodeURIComponent(PIVOT)}`);
  await sandwichReady(PIVOT);
  assert.equal(await page.getAttribute('#sandwich-callers', 'data-diff'), '1', 'drawn in diff colours');
  const pivot = (await framesOf('#sandwich-callees')).find((f) => f.depth === 0);
  assert.equal(pivot.baseTotal, pprofCum(file1, SAMPLE)[PIVOT], 'base (a): go tool pprof -top -cum of a\'s file');
  assert.equal(pivot.total, pprofCum(file2, SAMPLE)[PIVOT], 'new (b): go tool pprof -top -cum of b\'s file');
  const callees = Object.fromEntries((await framesOf('#sandwich-callees')).filter((f) => f.depth === 1)
    .map((f) => [f.name, f.total]));
  for (const [n, v] of Object.entries(pprofPeek(file2, SAMPLE, PIVOT).callees)) {
    assert.equal(callees[n], v, `new (b) callee ${n}`);
  }
  await shot('07-diff-sandwich');
});

for (const theme of ['light', 'dark']) {
  for (const width of [1400, 390]) {
    step(`08-${width}-${theme}`, ['02-sandwich-from-top-table'], async () => {
      const ctx = await browser.newContext({ viewport: { width, height: width > 500 ? 950 : 844 }, colorScheme: theme,
        ...(width < 500 ? { hasTouch: true, isMobile: true } : {}) });
      const p = await ctx.newPage();
      watch(p);
      try {
        await p.goto(`${profileUrl}&v.pivot=${encodeURIComponent(PIVOT)}`);
        await sandwichReady(PIVOT, p);
        assert.equal(await p.evaluate(() => document.documentElement.dataset.theme), theme);
        const got = await drawnSandwich(p);
        assert.equal(got.total, pprofCum(file2, SAMPLE)[PIVOT]);
        // nothing wider than the screen, and both halves of the sandwich have room
        const over = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        assert.ok(over <= 0, `the page is ${over} px wider than the screen`);
        for (const id of ['#sandwich-callers', '#sandwich-callees']) {
          const box = await p.locator(id).boundingBox();
          assert.ok(box && box.width > 200 && box.height >= 18, `${id} is drawn: ${JSON.stringify(box)}`);
        }
        await p.locator('#sandwich').scrollIntoViewIfNeeded();
        await p.screenshot({ path: join(SHOTS, `08-${width}-${theme}.png`), fullPage: true });
      } finally {
        await ctx.close();
      }
    });
  }
}

step('09-no-page-errors', [], async () => {
  assert.deepEqual(pageErrors, [], 'no uncaught errors in the pages');
});
