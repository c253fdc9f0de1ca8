// ingest.test.mjs: a service that pushes to Pyroscope's /ingest shows in the UI, in
// Debian's Chromium, against the profd run.sh starts (PD_* variables). Three folded
// profiles of cartservice.cpu{env=prod} are pushed (the last at from=now&until=now);
// the API must hold one series with all three. Then the landing page must offer the
// service under "Or every profile type of one pushed service:", its button must show
// the series in the timeline with a mark per push, and a mark must open a profile
// whose flame graph and top table hold the pushed functions with the pushed values
// (samples at sampleRate's 100 Hz: 10 ms of CPU each). Screenshots in PD_SCREENSHOTS.
import assert from 'node:assert/strict';
import { URL_BASE, T, api, harness, timelineReady, marks, topRows, profileReady } from './lib.mjs';

const h = harness();
const NAME = 'cartservice.cpu{env=prod}';
const SERVICE = 'cartservice';
const SEL = `{service_name="${SERVICE}"}`;
// the pushed stacks, root first, and their samples; at 100 Hz (sampleRate's
// default) a sample is 10 ms of CPU
const STACKS = [
  ['main.main', 'checkout.PlaceOrder', 'cart.AddItem', 40],
  ['main.main', 'checkout.PlaceOrder', 'payment.Charge', 25],
  ['main.main', 'cart.GetCart', 10],
];
const FOLDED = STACKS.map((s) => `${s.slice(0, -1).join(';')} ${s[s.length - 1]}`).join('\n') + '\n';
const FUNCS = [...new Set(STACKS.flatMap((s) => s.slice(0, -1)))];
let series; // the pushed series' labels, from the API

async function push(from, until) {
  const q = new URLSearchParams({ name: NAME, from, until, spyName: 'gospy' });
  const r = await fetch(`${URL_BASE}/ingest?${q}`, { method: 'POST', body: FOLDED,
    headers: { 'Content-Type': 'text/plain' } });
  const body = await r.text();
  assert.equal(r.status, 200, `POST /ingest?${q} answered ${r.status}: ${body}`);
}

h.step('01-push', [], async () => {
  const now = Math.floor(Date.now() / 1000);
  // oldest first: a series takes its profiles in time order
  await push(String(now - 60), String(now - 50));
  await push(String(now - 30), String(now - 20));
  await push('now', 'now');
  const all = await api('series', { 'match[]': SEL });
  assert.equal(all.length, 1, `one series of ${SERVICE}: ${JSON.stringify(all)}`);
  series = all[0];
  assert.equal(series.service_name, SERVICE);
  assert.equal(series.env, 'prod');
  const q = await api('query_range', { query: SEL, start: now - 3600, end: now + 60 });
  assert.equal(q.length, 1);
  assert.equal(q[0].timestamps.length, 3, `three profiles stored: ${JSON.stringify(q[0])}`);
});

h.step('02-landing', ['01-push'], async () => {
  const p = h.page;
  await p.goto(URL_BASE + '/');
  const label = p.locator('#timeline p', { hasText: 'Or every profile type of one pushed service:' });
  await label.waitFor({ timeout: T });
  // the chips right after that line are the services'
  const chips = await p.$$eval('#timeline p', (ps) => {
    const el = ps.find((x) => x.textContent === 'Or every profile type of one pushed service:');
    const next = el && el.nextElementSibling;
    return next ? [...next.querySelectorAll('.chip')].map((b) => b.textContent.trim()) : [];
  });
  assert.deepEqual(chips, [SEL], 'the pushed service is the one service offered');
  // the scraped jobs are offered as jobs, not as services
  await p.locator('#timeline p', { hasText: 'Or every profile type of one job:' }).waitFor();
  await h.shot('02-landing');
});

h.step('03-timeline', ['02-landing'], async () => {
  const p = h.page;
  await p.locator('#timeline .chips .chip', { hasText: SEL }).click();
  await timelineReady(p, 1, 3);
  assert.equal(new URL(p.url()).searchParams.get('query'), SEL);
  assert.equal(await p.inputValue('#query-input'), SEL);
  // a mark's tooltip names the pushed series (the lane titles are drawn on the canvas)
  const ms = await marks(p);
  assert.equal(ms.reduce((n, m) => n + (m.count || 1), 0), 3, 'one mark per pushed profile');
  await p.mouse.move(ms[0].x, ms[0].y);
  const tip = p.locator('#timeline .tl-tooltip:not(.ch-tooltip) .tt-series');
  await tip.waitFor({ state: 'visible' });
  const title = await tip.innerText();
  assert.match(title, /^profile\{env="prod", .*service_name="cartservice"\}$/, `the lane's series: ${title}`);
  await h.shot('03-timeline');
});

h.step('04-profile', ['03-timeline'], async () => {
  const p = h.page;
  const ms = (await marks(p)).sort((a, b) => a.t - b.t);
  await p.mouse.click(ms[ms.length - 1].x, ms[ms.length - 1].y);
  await profileReady(p, false);
  const frames = await p.$eval('#flame', (el) => el.profdFrames());
  const names = new Set(frames.map((f) => f.name));
  for (const f of FUNCS) assert.ok(names.has(f), `the flame graph has ${f}: ${[...names].join(', ')}`);
  // the widest leaf is cart.AddItem, 40 of the 75 samples
  const root = frames.find((f) => f.depth === 0);
  const add = frames.find((f) => f.name === 'cart.AddItem');
  assert.ok(Math.abs(add.w / root.w - 40 / 75) < 0.02, `cart.AddItem is 40/75 of the root (${add.w} of ${root.w})`);
  const rows = await topRows(p);
  assert.equal(rows[0], 'cart.AddItem', `the top table's first row: ${rows.join(', ')}`);
  assert.deepEqual([...rows].sort(), [...FUNCS].sort(), 'the top table lists the pushed functions');
  // 40 samples at 100 Hz: 400 ms of CPU, flat; the whole profile 750 ms
  const flat = await p.$eval('#top-table tbody tr[data-name="cart.AddItem"]', (r) => r.children[0].textContent.trim());
  assert.equal(flat, '400 ms', 'cart.AddItem\'s flat time is 40 samples of 10 ms');
  const cum = await p.$eval('#top-table tbody tr[data-name="main.main"]', (r) => r.children[3].textContent.trim());
  assert.equal(cum, '750 ms', 'main.main\'s cumulative time is all 75 samples');
  assert.match(await p.locator('#profile').innerText(), /profile\{env="prod", .*service_name="cartservice"\}/, 'the profile view names the series');
  await h.shot('04-profile');
});

h.step('05-no-page-errors', ['04-profile'], async () => {
  assert.deepEqual(h.pageErrors, []);
});
