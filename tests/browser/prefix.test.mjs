// prefix.test.mjs: profd's web UI under a route prefix, in Debian's Chromium, through
// a reverse proxy that passes /profd/ to profd unchanged (started by prefix.sh, which
// sets the PD_* variables below; profd runs with --web.external-url=<proxy>/profd/ and
// no --web.route-prefix). Every request the page makes is recorded: none may leave
// the prefix, and the proxy's log of requests outside it must stay empty.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set: run this through tests/browser/prefix.sh`);
  return v;
};
const PROXY = env('PD_PROXY'); // http://127.0.0.1:<port>, the external URL's origin
const DIRECT = env('PD_DIRECT'); // profd itself
const OUTSIDE_LOG = env('PD_OUTSIDE_LOG');
const SHOTS = env('PD_SCREENSHOTS');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const PREFIX = '/profd';
const HOME = PROXY + PREFIX + '/';
const HEAP = 'heap{job="served"}';
const T = 20000;

let browser, context, page;
const requests = []; // every URL the pages asked for
const pageErrors = [];

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: process.env.PD_BROWSER_HEADED !== '1',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  context = await browser.newContext({ viewport: { width: 1400, height: 950 }, colorScheme: 'light', acceptDownloads: true });
  context.setDefaultTimeout(T);
  context.on('request', (r) => requests.push(r.url()));
  context.on('page', (p) => p.on('pageerror', (e) => pageErrors.push(`${p.url()}: ${e.message}`)));
  page = await context.newPage();
});

after(async () => {
  if (browser) await browser.close();
});

const shot = (name, p = page) => p.screenshot({ path: join(SHOTS, 'prefix-' + name + '.png'), fullPage: true });
const path = (u) => new URL(u).pathname;

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

async function timelineReady(p = page) {
  await p.waitForFunction(() => {
    const el = document.querySelector('#timeline');
    return el && el.dataset.state === 'ready' && Number(el.dataset.lanes) === 1 && Number(el.dataset.marks) >= 1;
  }, null, { timeout: T });
}

async function profileReady(p = page) {
  await p.waitForFunction(() => {
    const pr = document.querySelector('#profile');
    const fl = document.querySelector('#flame');
    return pr && fl && pr.dataset.state === 'ready' && fl.dataset.state === 'ready' &&
      document.querySelector('#top-table tbody tr[data-name]') && !document.querySelector('.pf-table[data-rows="partial"]');
  }, null, { timeout: T });
}

// Steps run in order; one that fails makes the later ones fail too, which is fine
// for a test this short.
let profileUrl = '';

test('the server: / redirects to the prefix, nothing answers outside it', async () => {
  let r = await fetch(DIRECT + '/', { redirect: 'manual' });
  assert.equal(r.status, 302);
  assert.equal(r.headers.get('location'), PREFIX);
  r = await fetch(DIRECT + PREFIX, { redirect: 'manual' });
  assert.equal(r.status, 302);
  assert.equal(r.headers.get('location'), PREFIX + '/');
  for (const p of ['/api/v1/labels', '/-/healthy', '/metrics', '/targets', '/js/app.js']) {
    r = await fetch(DIRECT + p);
    assert.equal(r.status, 404, `${p} outside the prefix`);
  }
  r = await fetch(PROXY + PREFIX + '/api/v1/status/flags');
  const flags = (await r.json()).data;
  assert.equal(flags['web.external-url'], PROXY + PREFIX, 'the external URL, as kept (no trailing slash)');
  assert.equal(flags['web.route-prefix'], PREFIX, 'the route prefix, from the external URL');
  r = await fetch(PROXY + PREFIX + '/-/healthy');
  assert.equal(r.status, 200);
});

test('the page loads under the prefix, its links keep it', async () => {
  const r = await page.goto(PROXY + PREFIX); // the bare prefix: redirected to PREFIX/
  assert.equal(r.status(), 200);
  assert.equal(page.url(), HOME);
  await page.waitForSelector('#query-input', { state: 'visible' });
  const linked = (sel) => page.$eval(sel, (a) => new URL(a.href).pathname);
  assert.equal(await linked('#nav-brand'), PREFIX + '/');
  assert.equal(await linked('#nav-query'), PREFIX + '/');
  assert.equal(await linked('#nav-targets'), PREFIX + '/targets');
  assert.equal(await linked('#nav-status'), PREFIX + '/status');
  // the stylesheet applied: the top bar is laid out, not a bare list of links
  const display = await page.$eval('.topbar', (el) => getComputedStyle(el).display);
  assert.equal(display, 'flex', 'css/style.css loaded under the prefix');
  await shot('01-home');
});

test('a query runs and a profile shows: flame graph and top table', async () => {
  await page.fill('#query-input', HEAP);
  await page.press('#query-input', 'Enter');
  await eventually(async () => {
    // profiles arrive once a second: run again until the timeline has one
    const st = await page.$eval('#timeline', (el) => el.dataset.state);
    if (st !== 'ready') {
      await page.click('#run-query');
      await timelineReady();
    }
  });
  await timelineReady();
  assert.equal(path(page.url()), PREFIX + '/', 'the query page stays under the prefix');
  assert.match(decodeURIComponent(page.url()), /query=heap\{job="served"\}/);
  const ms = await page.$eval('#timeline', (el) => el.profdMarks());
  assert.ok(ms.length >= 1, 'marks to click');
  await page.mouse.click(ms[ms.length - 1].x, ms[ms.length - 1].y);
  await profileReady();
  const frames = await page.$eval('#flame', (el) => el.profdFrames());
  assert.ok(frames.length > 1, 'the flame graph drew frames');
  const rows = await page.$$eval('#top-table tbody tr[data-name]', (rs) => rs.length);
  assert.ok(rows > 0, 'the top table has rows');
  const dl = await page.$eval('#download', (a) => new URL(a.href).pathname);
  assert.equal(dl, PREFIX + '/api/v1/query', 'the download link is under the prefix');
  profileUrl = page.url();
  assert.match(profileUrl, /open=single/);
  assert.equal(path(profileUrl), PREFIX + '/');
  await shot('02-profile');
});

test('copy link gives the view under the external URL', async () => {
  await page.click('#copy-link');
  const link = await page.$eval('#copy-link', (b) => b.dataset.url);
  assert.ok(link.startsWith(PROXY + PREFIX + '/?'), `the link is under the external URL: ${link}`);
  const u = new URL(link);
  const here = new URL(page.url());
  assert.equal(u.searchParams.get('query'), here.searchParams.get('query'));
  assert.equal(u.searchParams.get('open'), 'single');
  assert.equal(u.searchParams.get('time'), here.searchParams.get('time'));
});

test('pages, history and deep links keep the prefix', async () => {
  const queryUrl = page.url(); // the profile's view, as the page keeps it now
  await page.click('#nav-targets');
  await page.waitForURL(HOME + 'targets');
  await page.waitForSelector('section.pool[data-pool="served"]');
  await shot('03-targets');
  await page.click('#nav-status');
  await page.waitForURL(HOME + 'status');
  await eventually(async () => {
    const text = await page.locator('body').innerText();
    assert.ok(text.includes('--web.route-prefix'), 'the status page lists --web.route-prefix');
    assert.ok(text.includes(PROXY + PREFIX), 'and the external URL');
  });
  await shot('04-status');
  // back to the targets page, then to the open profile
  await page.goBack();
  await page.waitForURL(HOME + 'targets');
  await page.waitForSelector('section.pool[data-pool="served"]');
  await page.goBack();
  await eventually(async () => assert.equal(page.url(), queryUrl, 'back on the query page, the profile open'));
  await profileReady();
  // a reload of the deep link, and the same link in a fresh page
  await page.reload();
  await profileReady();
  const p2 = await context.newPage();
  await p2.goto(queryUrl);
  await profileReady(p2);
  await timelineReady(p2);
  await shot('05-deep-link', p2);
  // a page name that is no page of the UI is a 404 whose body is the UI, under
  // the prefix too: the router says so and links the pages; a missing file is
  // the server's bare 404
  const nowhere = await p2.goto(HOME + 'nowhere/else');
  assert.equal(nowhere.status(), 404);
  await p2.waitForSelector('main h2');
  assert.equal(await p2.locator('main h2').innerText(), 'Page not found');
  assert.match(await p2.locator('main code').innerText(), /\/nowhere\/else$/);
  assert.equal(await p2.title(), 'Not found · profd');
  await p2.click('main a[href="targets"]');
  await p2.waitForURL(HOME + 'targets');
  const missing = await p2.request.get(HOME + 'js/nowhere.js');
  assert.equal(missing.status(), 404);
  assert.equal((await missing.text()).trim(), '404 page not found');
  await p2.close();
});

test('the side-by-side page and the combined diff keep the prefix', async () => {
  // from the open profile: Compare, with the latest of its series on side B
  await page.click('#open-bar a[data-act="compare"]');
  await page.waitForURL((u) => u.pathname === PREFIX + '/compare');
  const ready = (p) => p.waitForFunction(() => document.querySelector('#compare')?.dataset.state === 'ready' &&
    ['a', 'b'].every((k) => document.querySelector(`#cmp-${k}-top-table tbody tr[data-name]`)) &&
    !document.querySelector('.pf-table[data-rows="partial"]'), null, { timeout: T });
  await ready(page);
  assert.equal(new URL(page.url()).searchParams.get('b.time'), 'now');
  await shot('06-compare');
  // to the combined diff of the same sides, on the query page under the prefix, and back
  await page.click('#cmp-to-diff');
  await page.waitForURL((u) => u.pathname === PREFIX + '/' && u.searchParams.get('open') === 'diff');
  await page.waitForFunction(() => document.querySelector('#flame')?.dataset.diff === '1' &&
    document.querySelector('#flame')?.dataset.state === 'ready', null, { timeout: T });
  await page.goBack();
  await page.waitForURL((u) => u.pathname === PREFIX + '/compare');
  await ready(page);
  await page.reload();
  await ready(page);
});

test('no request left the prefix', async () => {
  const outside = requests.filter((u) => {
    if (!/^https?:/.test(u)) return false; // data: URLs (the icon)
    const x = new URL(u);
    return x.origin !== PROXY || (x.pathname !== PREFIX && !x.pathname.startsWith(PREFIX + '/'));
  });
  assert.deepEqual(outside, [], 'every request of the pages went to the proxy, under the prefix');
  assert.ok(requests.some((u) => path(u) === PREFIX + '/js/app.js'), 'the scripts came through the prefix');
  assert.ok(requests.some((u) => path(u).startsWith(PREFIX + '/api/v1/query')), 'the API calls too');
  assert.equal(readFileSync(OUTSIDE_LOG, 'utf8'), '', 'the proxy saw nothing outside the prefix');
  assert.deepEqual(pageErrors, [], 'no script errors');
});
