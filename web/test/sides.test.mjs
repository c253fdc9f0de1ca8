// Unit tests of sides.js: the compare page's requests of both sides (compareRequests),
// and the ones it starts when it runs on a page loaded at /compare: the same requests
// compare.js would make for that URL, taken over once (takeEarly) and never made twice.
import test from 'node:test';
import assert from 'node:assert/strict';
import { compareRequests, decodeCompare, takeEarly } from '../js/sides.js';

// fetch as the browser's, answering every request with an empty success; the URLs
// asked for go into `log`
function stubFetch(log) {
  globalThis.fetch = async (url, opts) => {
    log.push({ url: String(url), headers: opts && opts.headers, priority: opts && opts.priority });
    return { ok: true, status: 200, json: async () => ({ status: 'success', data: null }) };
  };
}

const SEARCH = '?a.sel=heap{job="x"}&a.start=1700000000000&a.end=1700000600000&b.sel=heap&b.time=1700000900000&sample=alloc_space&agg=sum';

function parsed(log) {
  return log.map((r) => Object.fromEntries(new URL(r.url, 'http://x').searchParams)).sort((x, y) =>
    JSON.stringify(x) < JSON.stringify(y) ? -1 : 1);
}

test('compareRequests: each side\'s meta, flame graph and top table at once', async () => {
  const log = [];
  stubFetch(log);
  const r = compareRequests(decodeCompare(SEARCH), 1700001000000);
  assert.equal(r.now, 1700001000000);
  assert.equal(r.sides.length, 2);
  await Promise.all(r.sides.map((s) => Promise.all([s.meta, s.data])));
  assert.ok(log.every((x) => x.url.startsWith('/api/v1/query?')), 'under the base, the query endpoint');
  assert.deepEqual(parsed(log), [
    { mode: 'merge', query: 'heap{job="x"}', start: '1700000000', end: '1700000600', aggregation: 'sum', report: 'meta' },
    { mode: 'merge', query: 'heap{job="x"}', start: '1700000000', end: '1700000600', aggregation: 'sum', sample_index: 'alloc_space', report: 'flamegraph' },
    { mode: 'merge', query: 'heap{job="x"}', start: '1700000000', end: '1700000600', aggregation: 'sum', sample_index: 'alloc_space', report: 'top' },
    { mode: 'single', query: 'heap', time: '1700000900', report: 'meta' },
    { mode: 'single', query: 'heap', time: '1700000900', sample_index: 'alloc_space', report: 'flamegraph' },
    { mode: 'single', query: 'heap', time: '1700000900', sample_index: 'alloc_space', report: 'top' },
  ].sort((x, y) => (JSON.stringify(x) < JSON.stringify(y) ? -1 : 1)));
  // a side without a selector asks for nothing; a relative side is resolved at now
  log.length = 0;
  const r2 = compareRequests(decodeCompare('?a.sel=&b.sel=heap&b.time=now-1m'), 1700001000000);
  assert.equal(r2.sides[0].meta, null);
  assert.equal(r2.sides[0].data, null);
  assert.deepEqual(r2.sides[1].resolved, { query: 'heap', time: 1700000940000 });
  await Promise.all([r2.sides[1].meta, r2.sides[1].data]);
  assert.equal(log.length, 3);
});

test('in node (no page) nothing is started and takeEarly has nothing', () => {
  assert.equal(takeEarly(''), null);
});

// sides.js as run by index.html on a page at `pathname` + `search`: a module instance of
// its own, with a location and fetch of the test's
async function loadAt(pathname, search, tag) {
  const log = [];
  stubFetch(log);
  globalThis.location = { pathname, search };
  try {
    const m = await import(`../js/sides.js?${tag}`);
    return { m, log };
  } finally {
    delete globalThis.location;
  }
}

test('loaded at /compare: the page\'s requests start at once, as compare.js would make them', async () => {
  const { m, log } = await loadAt('/compare', SEARCH, 'early1');
  assert.equal(log.length, 6, 'both sides\' meta, flame graph and top requests, when the module runs');
  assert.ok(log.every((x) => x.priority === 'low'), 'at low priority: the modules still coming go first');
  const early = m.takeEarly(SEARCH);
  assert.ok(early, 'compare.js takes them over');
  await Promise.all(early.sides.map((s) => Promise.all([s.meta, s.data])));
  // the very requests compare.js makes itself (compareRequests of the page's state)
  const mine = [];
  stubFetch(mine);
  const own = compareRequests(decodeCompare(SEARCH), early.now);
  await Promise.all(own.sides.map((s) => Promise.all([s.meta, s.data])));
  assert.deepEqual(log.map((x) => x.url), mine.map((x) => x.url));
  assert.ok(mine.every((x) => x.priority === undefined), 'the page\'s own, at the default priority');
  assert.deepEqual(early.sides.map((s) => s.resolved), own.sides.map((s) => s.resolved));
  // once: a second page (popstate, swap) makes its own
  assert.equal(m.takeEarly(SEARCH), null);
  assert.equal(log.length, 6, 'nothing asked for twice');
});

test('loaded at /compare, taken for another URL: stopped, not used', async () => {
  const { m, log } = await loadAt('/compare/', SEARCH, 'early2');
  assert.equal(log.length, 6, 'a trailing slash is the compare page too');
  assert.equal(m.takeEarly('?a.sel=other'), null);
  assert.equal(m.takeEarly(SEARCH), null, 'and gone');
});

test('loaded at another page: nothing is requested', async () => {
  for (const [path, tag] of [['/', 'early3'], ['/targets', 'early4'], ['/compare-x', 'early5']]) {
    const { m, log } = await loadAt(path, SEARCH, tag);
    assert.equal(log.length, 0, path);
    assert.equal(m.takeEarly(SEARCH), null, path);
  }
});
