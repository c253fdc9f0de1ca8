// clickhouse.test.mjs: the web UI of a profd that keeps its profiles in ClickHouse
// (run.sh with PD_BROWSER_CLICKHOUSE=1 starts clickhouse-server and passes
// --storage.clickhouse.url), checked end to end: scrape → WAL spool → ClickHouse → UI.
// Expected values come from outside the UI: profd_clickhouse_sent_profiles_total,
// ClickHouse's own profiles table, the API, the served log and go tool pprof.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import {
  URL_BASE, env, T, TMP, PROFD, api, metric, pprofTop, topTable, pprofDotNames, sampleTotal, servedFileAt, harness, eventually,
  timeline, marks, topRows, chartState, chartPoints, timelineReady, profileReady, drag,
  luminance, background, narrowProblems,
} from './lib.mjs';

const CH_URL = env('PD_CLICKHOUSE_URL');
const HEAP = 'heap{job="served"}';
const HEAP_PATH = '/debug/pprof/heap';
const SENT = 8; // profiles ClickHouse must have taken before the steps look (heap and goroutine)
const h = harness();
const { step, shot } = h;
const heapFileAt = (t) => servedFileAt(HEAP, HEAP_PATH, t);

// A query to ClickHouse itself, answered as TabSeparated lines.
async function chQuery(sql) {
  const r = await fetch(CH_URL, { method: 'POST', body: sql });
  const text = await r.text();
  assert.equal(r.status, 200, `ClickHouse: ${text}`);
  return text.split('\n').filter((l) => l);
}

let db; // profd's ClickHouse database (status/tsdb)
let win; // {from, to} ms: the window the timeline is zoomed to
let heapMarks = []; // the heap lane's marks in win, oldest first
let profileUrl;

// The top table equals go tool pprof -top of the files: the same rows, the same
// first row, and each row's flat% within the rounding of both.
// a diff's table has no percentages (A, B, Δ, Δ%, Δ cum): its Δ's sign is checked instead
async function assertTopIs(p, args, what) {
  const want = pprofTop(args);
  const diff = args.some((a) => a.startsWith('-diff_base='));
  await eventually(async () => {
    const rows = await p.$$eval('#top-table tbody tr[data-name]',
      (rs) => rs.map((r) => ({ name: r.dataset.name, flatPercent: parseFloat(r.cells[1].textContent.replace(/[^\d.-]/g, '')), delta: r.cells[2]?.textContent })));
    assert.equal(rows.length, want.length, `${what}: as many rows as go tool pprof -top`);
    assert.equal(rows[0].name, want[0].name, `${what}: the first row is go tool pprof -top's`);
    assert.deepEqual(rows.map((r) => r.name).sort(), want.map((r) => r.name).sort(), `${what}: the same functions`);
    for (const r of rows) {
      const w = want.find((x) => x.name === r.name);
      if (diff) {
        assert.equal(r.delta.startsWith('-'), w.flat.startsWith('-'), `${what}: ${r.name} Δ ${r.delta}, go tool pprof ${w.flat}`);
        continue;
      }
      assert.ok(Math.abs(r.flatPercent - w.flatPercent) < 0.06, `${what}: ${r.name} flat% ${r.flatPercent}, go tool pprof ${w.flatPercent}`);
    }
  });
}

step('01-landing', [], async () => {
  const page = h.page;
  const r = await page.goto(URL_BASE + '/');
  assert.equal(r.status(), 200);
  await page.waitForSelector('#query-input', { state: 'visible' });
  await page.waitForSelector('#timeline .chips .chip'); // the landing page lists the scraped types
  assert.ok(luminance(await background(page)) > 0.6, 'the light theme');
  await shot('01-landing');
});

step('02-sent', [], async () => {
  // the scrapes reach ClickHouse: the shipper's count, and ClickHouse's own table
  await eventually(async () => {
    const n = await metric('profd_clickhouse_sent_profiles_total');
    assert.ok(n >= SENT, `profd_clickhouse_sent_profiles_total is ${n}, waiting for ${SENT}`);
  }, 120000);
  const st = await api('status/tsdb');
  assert.equal(st.storage, 'clickhouse', 'status/tsdb names ClickHouse as the storage');
  db = st.clickhouse.database;
  assert.equal(db, 'profd', 'the default database');
  const [rows] = await chQuery(`SELECT count() FROM ${db}.profiles`);
  assert.ok(Number(rows) >= SENT, `ClickHouse holds ${rows} profiles`);
});

step('03-timeline', ['01-landing', '02-sent'], async () => {
  const page = h.page;
  // a window from the first profile to a moment ago, so its profiles are all there
  // once shipped
  const now = Date.now();
  const [all] = await api('query_range', { query: HEAP, start: ((now - 15 * 60000) / 1000).toFixed(3) });
  win = { from: all.timestamps[0] - 2000, to: now - 1000 };
  await page.goto(`${URL_BASE}/?query=${encodeURIComponent(HEAP)}&range=15m&zoom=${win.from}-${win.to}`);
  await timelineReady(page, 1, 4);
  // the marks are the profiles in ClickHouse: API and ClickHouse agree with them,
  // once everything scraped in the window has been shipped (reloads until then)
  await eventually(async () => {
    await page.reload();
    await timelineReady(page, 1, 4);
    const tl = await timeline(page);
    assert.equal(Number(tl.viewFrom), win.from, 'the zoom kept from the URL');
    assert.equal(Number(tl.viewTo), win.to);
    const ms = (await marks(page)).sort((a, b) => a.t - b.t);
    assert.ok(ms.every((m) => (m.count || 1) === 1), 'one profile a mark');
    const [series] = await api('query_range', { query: HEAP, start: (win.from / 1000).toFixed(3), end: (win.to / 1000).toFixed(3) });
    const inCh = (await chQuery(`SELECT ts FROM ${db}.profiles WHERE series_id IN (SELECT series_id FROM ${db}.series ` +
      `WHERE values[indexOf(names, '__name__')] = 'heap' AND values[indexOf(names, 'job')] = 'served') ` +
      `AND ts >= ${win.from} AND ts <= ${win.to} GROUP BY ts ORDER BY ts`)).map(Number);
    assert.deepEqual(ms.map((m) => m.t), series.timestamps, 'the marks are query_range\'s timestamps');
    assert.deepEqual(series.timestamps, inCh, 'query_range\'s timestamps are the profiles rows in ClickHouse');
    heapMarks = ms;
  }, 60000);
  assert.ok(heapMarks.length >= 4, `${heapMarks.length} marks`);
  const box = await page.locator('#timeline').boundingBox();
  assert.ok(heapMarks.every((m) => m.x > box.x && m.x < box.x + box.width), 'every mark inside the timeline');
  await shot('03-timeline');
});

step('04-profile', ['03-timeline'], async () => {
  const page = h.page;
  const file = await heapFileAt(heapMarks[0].t);
  await page.mouse.click(heapMarks[0].x, heapMarks[0].y);
  await profileReady(page, false);
  profileUrl = page.url();
  assert.equal(new URL(profileUrl).searchParams.get('time'), String(heapMarks[0].t), 'the clicked mark\'s profile');
  await assertTopIs(page, [file], `the profile at ${heapMarks[0].t} (${file})`);
  await shot('04-profile');
});

step('05-merge', ['03-timeline'], async () => {
  const page = h.page;
  const ms = (await marks(page)).sort((a, b) => a.t - b.t);
  const first = ms[0];
  const last = ms[3];
  const gap = ms[1].x - first.x;
  await drag(page, first.y, first.x - gap / 3, last.x + gap / 3);
  await page.waitForSelector('#sel-merge', { state: 'visible' });
  await shot('05-selection');
  await page.click('#sel-merge');
  await profileReady(page, false);
  const u = new URL(page.url());
  assert.equal(u.searchParams.get('open'), 'merge');
  const files = [];
  for (const m of ms.slice(0, 4)) files.push(await heapFileAt(m.t));
  await assertTopIs(page, files, 'the merge of 4 profiles');
  await eventually(async () => assert.match(await page.locator('#profile').innerText(), /Merge of 4 profiles/));
  await shot('05-merge');
});

step('06-diff', ['04-profile'], async () => {
  const page = h.page;
  const a = heapMarks[0];
  const aFile = await heapFileAt(a.t);
  let b, bFile;
  for (const m of heapMarks.slice(1)) {
    const f = await heapFileAt(m.t);
    if (f !== aFile) { b = m; bFile = f; break; }
  }
  assert.ok(b, 'two marks with different captures');
  await page.goto(profileUrl);
  await profileReady(page, false);
  await timelineReady(page, 1, 4);
  const at = (t) => marks(page).then((ms) => ms.find((m) => m.t === t));
  const ma = await at(a.t);
  await page.mouse.click(ma.x, ma.y);
  await profileReady(page, false);
  const mb = await at(b.t);
  await page.keyboard.down('Shift');
  await page.mouse.click(mb.x, mb.y);
  await page.keyboard.up('Shift');
  await profileReady(page, true);
  await assertTopIs(page, [`-diff_base=${aFile}`, bFile], 'the diff');
  await shot('06-diff');
});

step('07-chart', ['03-timeline'], async () => {
  const page = h.page;
  await page.goto(`${URL_BASE}/?query=${encodeURIComponent(HEAP)}&range=15m&zoom=${win.from}-${win.to}`);
  await timelineReady(page, 1, heapMarks.length);
  await page.waitForFunction(() => document.querySelector('#chart')?.dataset.state === 'ready', null, { timeout: T });
  const st = await chartState(page);
  assert.equal(st.metric, 'heap_inuse_space_bytes', 'the chart shows heap\'s default sample type');
  const pts = (await chartPoints(page)).sort((a, b) => a.t - b.t);
  assert.deepEqual(pts.map((p) => p.t), heapMarks.map((m) => m.t), 'a point per profile of the timeline');
  const box = await page.locator('#chart canvas').boundingBox();
  const lanes = await page.locator('#timeline .tl-wrap').boundingBox();
  assert.ok(box.y + box.height <= lanes.y + 1, 'the chart is above the lanes');
  for (const p of pts) {
    const file = await heapFileAt(p.t);
    assert.equal(p.v, sampleTotal(file, 'inuse_space'), `the point at ${p.t} is the inuse_space total of ${file}`);
    assert.ok(p.x >= box.x && p.x <= box.x + box.width && p.y >= box.y && p.y <= box.y + box.height, 'inside the chart');
  }
  await shot('07-chart');
});

// the storage section of the status page: ClickHouse, its database and spool, no blocks
async function assertStatusSaysClickhouse(p) {
  await p.waitForSelector('#status-storage [data-storage="clickhouse"]');
  const text = await p.locator('#status-storage').innerText();
  assert.match(text, new RegExp(`Profiles are kept in ClickHouse database ${db}`), text);
  assert.doesNotMatch(text, /No persisted blocks|Blocks size|ULID/, 'no blocks are listed');
  const sent = Number(/Profiles sent to ClickHouse\s+(\d+)/.exec(text)?.[1]);
  assert.ok(sent >= SENT, `the status page counts the profiles sent (${sent})`);
  assert.match(text, /Waiting in the spool\s+\d+ profiles?, [\d.]+ [kMG]?B of 1 GB/);
  // the cardinality lists count the series ClickHouse holds (the spool's head is empty)
  const types = await p.$$eval('#status-storage .card-list:first-child td.mono', (tds) => tds.map((td) => td.textContent).sort());
  assert.deepEqual(types, ['goroutine', 'heap'], 'series by profile type');
}

step('08-status', ['02-sent'], async () => {
  const page = h.page;
  await page.goto(URL_BASE + '/');
  await page.click('#nav-status');
  await page.waitForURL('**/status');
  await assertStatusSaysClickhouse(page);
  await shot('08-status');
});

for (const theme of ['light', 'dark']) {
  step(`09-${theme}-desktop`, ['04-profile'], async () => {
    const ctx = await h.browser.newContext({ viewport: { width: 1400, height: 950 }, colorScheme: theme });
    const p = await ctx.newPage();
    h.watch(p);
    try {
      await p.goto(profileUrl);
      await profileReady(p, false);
      const bg = luminance(await background(p));
      assert.ok(theme === 'dark' ? bg < 0.35 : bg > 0.6, `${theme} background: ${bg}`);
      assert.equal((await topRows(p))[0], pprofTop([await heapFileAt(heapMarks[0].t)])[0].name);
      await shot(`09-${theme}-desktop-profile`, p);
      await p.goto(URL_BASE + '/status');
      await assertStatusSaysClickhouse(p);
      await shot(`09-${theme}-desktop-status`, p);
    } finally {
      await ctx.close();
    }
  });

  step(`10-${theme}-narrow`, ['04-profile'], async () => {
    const ctx = await h.browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: theme,
      hasTouch: true, isMobile: true });
    const p = await ctx.newPage();
    h.watch(p);
    try {
      await p.goto(URL_BASE + '/');
      await p.waitForSelector('#timeline .chips .chip');
      assert.deepEqual(await narrowProblems(p), [], 'the landing page at 390 px');
      await shot(`10-${theme}-narrow-landing`, p);
      await p.goto(profileUrl);
      await profileReady(p, false);
      assert.equal((await topRows(p))[0], pprofTop([await heapFileAt(heapMarks[0].t)])[0].name);
      assert.deepEqual(await narrowProblems(p), [], 'the profile at 390 px');
      await shot(`10-${theme}-narrow-profile`, p);
      await p.goto(URL_BASE + '/status');
      await assertStatusSaysClickhouse(p);
      assert.deepEqual(await narrowProblems(p), [], 'the status page at 390 px');
      await shot(`10-${theme}-narrow-status`, p);
    } finally {
      await ctx.close();
    }
  });
}

step('11-download', ['04-profile'], async () => {
  // a single profile rebuilt from ClickHouse's rows is the profile the target served
  const page = h.page;
  await page.goto(profileUrl);
  await profileReady(page, false);
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
  const file = join(TMP, 'downloaded-' + (dl.suggestedFilename() || 'profile.pb.gz'));
  await dl.saveAs(file);
  assert.ok(statSync(file).size > 100, 'a non-empty download');
  const served = await heapFileAt(heapMarks[0].t);
  assert.equal(topTable([file]), topTable([served]), 'go tool pprof -top of the download equals the served file\'s');
  execFileSync(PROFD, ['pprof', 'validate', file], { stdio: 'pipe' });
});

step('12-graph', ['04-profile'], async () => {
  const page = h.page;
  await page.goto(profileUrl);
  await profileReady(page, false);
  await page.click('button[data-layout="graph"]');
  await page.waitForFunction(() => document.querySelector('#callgraph')?.dataset.state === 'ready', null, { timeout: T });
  const shown = await page.$$eval('#callgraph g.node', (gs) => gs.map((g) => g.dataset.name).sort());
  assert.deepEqual(shown, pprofDotNames(await heapFileAt(heapMarks[0].t)), 'the graph\'s functions are go tool pprof -dot\'s');
  await shot('12-graph');
});

step('13-live', ['03-timeline'], async () => {
  // live: new scrapes reach ClickHouse and then the timeline (the UI refreshes every 10 s)
  const page = h.page;
  await page.goto(`${URL_BASE}/?query=${encodeURIComponent(HEAP)}&range=15m`);
  await timelineReady(page, 1, 4);
  const before = Number((await timeline(page)).marks);
  await page.check('#live');
  await eventually(async () => {
    const n = Number((await timeline(page)).marks);
    assert.ok(n > before, `live adds marks: ${n} after ${before}`);
  }, 60000);
  await page.uncheck('#live');
  await shot('13-live');
});

// Last, as it stops ClickHouse: queries fail naming ClickHouse, the status page still
// shows the storage with the reason its series lists are empty, and scrapes wait in
// the spool.
step('14-clickhouse-down', ['02-sent'], async () => {
  const page = h.page;
  process.kill(Number(env('PD_CLICKHOUSE_PID')), 'SIGTERM');
  await eventually(async () => {
    const up = await fetch(CH_URL + 'ping').then((r) => r.ok, () => false);
    assert.ok(!up, 'ClickHouse still answers /ping');
  }, 60000);
  await page.goto(`${URL_BASE}/?query=${encodeURIComponent(HEAP)}&range=15m`);
  await page.waitForFunction(() => document.querySelector('#timeline')?.dataset.state === 'error', null, { timeout: T });
  const text = await page.locator('#timeline').innerText();
  assert.match(text, new RegExp(`ClickHouse did not answer: clickhouse ${CH_URL.replace(/\/$/, '').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: `),
    'the query\'s error names ClickHouse, its URL and why');
  assert.doesNotMatch(text, /SELECT|statement/, 'the statement stays in the log');
  await shot('14-down-query');
  const waiting = () => page.locator('#status-storage').innerText()
    .then((t) => Number(/Waiting in the spool\s+(\d+) profile/.exec(t)?.[1]));
  await page.goto(URL_BASE + '/status');
  await page.waitForSelector('#status-storage [data-storage="clickhouse"]');
  const warning = await page.locator('#status-storage .storage-warning').innerText();
  assert.match(warning, /^the series lists are empty: ClickHouse did not answer: clickhouse http:\/\/127\.0\.0\.1:\d+: /);
  assert.doesNotMatch(warning, /statement|SELECT/, 'the statement stays in the log');
  const before = await waiting();
  await eventually(async () => {
    await page.reload();
    await page.waitForSelector('#status-storage [data-storage="clickhouse"]');
    const n = await waiting();
    assert.ok(n > before, `scrapes wait in the spool: ${n} profiles, ${before} before`);
    assert.match(await page.locator('#status-storage').innerText(), /Flushes\s+\d+ \([1-9]\d* failed\)/, 'failed flushes counted');
  }, 60000);
  await shot('14-down-status');
});

step('15-no-page-errors', [], async () => {
  assert.deepEqual(h.pageErrors, [], 'no uncaught errors in the pages');
});
