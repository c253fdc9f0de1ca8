// lib.mjs: what a file of browser steps needs besides its steps (used by
// clickhouse.test.mjs): the PD_* environment run.sh sets, go tool pprof as the
// reference, the API, Chromium launched by playwright-core, screenshots, waiting
// for a condition with a deadline, steps that skip when what they need failed,
// and readers of the timeline, the values chart and the profile view.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set: run this through tests/browser/run.sh`);
  return v;
};
export const URL_BASE = env('PD_URL');
export const SERVED_LOG = env('PD_SERVED_LOG');
export const TMP = env('PD_TMP');
export const SHOTS = env('PD_SCREENSHOTS');
export const PROFD = env('PD_PROFD');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const T = 20000; // how long a step waits for the UI

// ---- expected values, computed without the UI ----

export function pprof(args) {
  return execFileSync('go', ['tool', 'pprof', '-nodefraction=0', '-symbolize=none', ...args], {
    cwd: TMP, env: { ...process.env, PPROF_TMPDIR: TMP }, encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

// go tool pprof -top's rows: [{name, flat, flatPercent, cumPercent}]
export function pprofTop(args) {
  const out = pprof(['-top', ...args]).split('\n');
  const h = out.findIndex((l) => /^\s*flat\s+flat%/.test(l));
  assert.ok(h >= 0, 'go tool pprof -top printed no table');
  return out.slice(h + 1).filter((l) => l.trim()).map((l) => {
    const f = l.trim().split(/\s+/);
    return { flat: f[0], flatPercent: parseFloat(f[1]), cumPercent: parseFloat(f[4]), name: f.slice(5).join(' ').replace(/ \(inline\)$/, '') };
  });
}

// go tool pprof -top without the lines that depend on the file name or time
export const topTable = (args) => pprof(['-top', ...args]).split('\n')
  .filter((l) => !/^(File|Build ID|Time|Duration):/.test(l)).join('\n');

// go tool pprof -dot with its default cuts; the functions it draws, sorted
export function pprofDotNames(file) {
  const dot = execFileSync('go', ['tool', 'pprof', '-symbolize=none', '-dot', file], {
    cwd: TMP, env: { ...process.env, PPROF_TMPDIR: TMP }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
  });
  const names = [];
  for (const line of dot.split('\n')) {
    const m = /^N\d+ \[label=".*" id="node\d+" .* tooltip="(.*) \([^()]*\)" color=/.exec(line);
    if (m) names.push(m[1].replace(/\\"/g, '"').replace(/\\\\/g, '\\'));
  }
  return names.sort();
}

// The total of one sample type over a file's samples, from go tool pprof -raw.
export function sampleTotal(file, type) {
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

export async function api(path, params) {
  const u = new URL('/api/v1/' + path, URL_BASE);
  for (const [k, v] of Object.entries(params || {})) u.searchParams.set(k, v);
  const r = await fetch(u);
  const body = await r.json();
  assert.equal(body.status, 'success', `${u}: ${body.error}`);
  return body.data;
}

// A counter of profd's /metrics (the sum of its series), 0 when absent.
export async function metric(name) {
  const text = await (await fetch(new URL('/metrics', URL_BASE))).text();
  let sum = 0;
  for (const l of text.split('\n')) {
    if (l.startsWith(name + ' ') || l.startsWith(name + '{')) sum += Number(l.slice(l.lastIndexOf(' ') + 1));
  }
  return sum;
}

// The served file whose go tool pprof -raw equals that of the profile of selector
// sel stored at t (ms); path: the served log's path of that profile type.
const rawOf = new Map();
function rawText(file) {
  if (!rawOf.has(file)) rawOf.set(file, pprof(['-raw', file]));
  return rawOf.get(file);
}
const servedAt = new Map();
export async function servedFileAt(sel, path, t) {
  const key = `${sel} ${t}`;
  if (servedAt.has(key)) return servedAt.get(key);
  const u = new URL('/api/v1/query', URL_BASE);
  u.searchParams.set('query', sel);
  u.searchParams.set('time', (t / 1000).toFixed(3));
  u.searchParams.set('lookback', '0.001');
  u.searchParams.set('report', 'proto');
  const r = await fetch(u);
  assert.equal(r.status, 200, `no profile of ${sel} stored at ${t}`);
  const storedFile = join(TMP, `stored-${t}.pb.gz`);
  writeFileSync(storedFile, Buffer.from(await r.arrayBuffer()));
  const stored = pprof(['-raw', storedFile]);
  const files = [...new Set(readFileSync(SERVED_LOG, 'utf8').split('\n')
    .filter((l) => l.startsWith(path + ' ')).map((l) => l.slice(path.length + 1)))];
  const f = files.find((x) => rawText(x) === stored);
  assert.ok(f, `the profile stored at ${t} is none of the served files ${files.join(', ')}`);
  servedAt.set(key, f);
  return f;
}

// ---- the browser ----

// Launches Chromium before the steps and closes it after; h.browser and h.page are
// set once it runs. Page errors are collected in h.pageErrors.
export function harness() {
  const h = { browser: null, context: null, page: null, pageErrors: [], consoleErrors: [] };
  h.watch = (p) => {
    p.on('pageerror', (e) => h.pageErrors.push(`${p.url()}: ${e.message}`));
    p.on('console', (m) => { if (m.type() === 'error') h.consoleErrors.push(`${p.url()}: ${m.text()}`); });
  };
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    for (const f of readdirSync(SHOTS)) if (f.endsWith('.png')) rmSync(join(SHOTS, f));
    h.browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: process.env.PD_BROWSER_HEADED !== '1',
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    h.context = await h.browser.newContext({ viewport: { width: 1400, height: 950 }, colorScheme: 'light', acceptDownloads: true });
    h.context.setDefaultTimeout(T);
    h.page = await h.context.newPage();
    h.watch(h.page);
  });
  after(async () => {
    if (h.browser) await h.browser.close();
    if (h.consoleErrors.length) console.log('console errors seen (not failures):\n  ' + h.consoleErrors.join('\n  '));
  });
  h.shot = async (name, p = h.page) => {
    await p.mouse.move(1, 1); // no hover tooltip over what the picture is about
    await p.screenshot({ path: join(SHOTS, name + '.png'), fullPage: true });
  };
  // a step runs only when the steps it needs passed; done also holds named points
  h.done = new Set();
  h.step = (name, needs, fn) => {
    test(name, { timeout: 180000 }, async (t) => {
      const missing = needs.filter((n) => !h.done.has(n));
      if (missing.length) {
        t.skip(`needs ${missing.join(', ')}`);
        return;
      }
      try {
        await fn(t);
      } catch (e) {
        await h.shot(name + '-FAILED').catch(() => {});
        throw e;
      }
      h.done.add(name);
    });
  };
  return h;
}

// Retries fn (which asserts) until it passes or ms run out; then throws its error.
export async function eventually(fn, ms = T) {
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

// ---- reading the page ----

export const timeline = (p) => p.$eval('#timeline', (el) => ({ ...el.dataset }));
export const marks = (p) => p.$eval('#timeline', (el) => el.profdMarks());
// (once every row is drawn: a table adds the rows after its first 50 when the page is idle)
export const topRows = async (p) => {
  await p.waitForFunction(() => !document.querySelector('.pf-table[data-rows="partial"]'));
  return p.$$eval('#top-table tbody tr[data-name]', (rs) => rs.map((r) => r.dataset.name));
};
export const chartState = (p) => p.$eval('#chart', (el) => ({ ...el.dataset }));
export const chartPoints = (p) => p.$eval('#chart', (el) => el.profdPoints());

export async function timelineReady(p, lanes, minMarks) {
  await p.waitForFunction(([l, m]) => {
    const el = document.querySelector('#timeline');
    return el && el.dataset.state === 'ready' && Number(el.dataset.lanes) === l && Number(el.dataset.marks) >= m;
  }, [lanes, minMarks], { timeout: T }).catch(async (e) => {
    const got = await p.$eval('#timeline', (el) => ({ ...el.dataset })).catch(() => 'no #timeline');
    throw new Error(`timeline not ready with ${lanes} lanes and >= ${minMarks} marks: ${JSON.stringify(got)}`, { cause: e });
  });
}

// waits for the profile view to be drawn; diff: whether it is a diff
export async function profileReady(p, diff) {
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

// drags across the page at height y, from x0 to x1
export async function drag(p, y, x0, x1) {
  await p.mouse.move(x0, y);
  await p.mouse.down();
  await p.mouse.move((x0 + x1) / 2, y, { steps: 5 });
  await p.mouse.move(x1, y, { steps: 5 });
  await p.mouse.up();
}

export const luminance = (css) => {
  const [r, g, b] = css.match(/[\d.]+/g).map(Number);
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
};
export const background = (p) => p.evaluate(() => {
  for (const el of [document.body, document.documentElement]) {
    const c = getComputedStyle(el).backgroundColor;
    if (c && !/rgba\(\s*0,\s*0,\s*0,\s*0\s*\)|transparent/.test(c)) return c;
  }
  return 'rgb(255, 255, 255)';
});

// What sticks out of a narrow page: the page's own width, the nav bar's, and each
// item of the bar that is cut off or covered.
export async function narrowProblems(p) {
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
