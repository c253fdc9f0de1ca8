// Unit tests of the side-by-side page's pure logic (compare.js): its URL state, the
// switch to and from the query page's combined diff, the call path a zoom maps to on
// the other side, the same-scale widths and the sample type both sides show.
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  decodeCompare, encodeCompare, resolveSide, diffSearch, compareSearch, mapPath, scaleShares,
  commonSampleTypes, isMerge, sideWhen, dataIsOf,
} from '../js/compare.js';
import { decodeState } from '../js/app.js';
import { layoutFlame } from '../js/flame.js';

test('decodeCompare: every kind of side, and the defaults', () => {
  const st = decodeCompare('?a.sel=heap{job="x"}&a.time=1700000000000&b.sel=heap&b.range=6h');
  assert.deepEqual(st.a, { query: 'heap{job="x"}', time: 1700000000000 });
  assert.deepEqual(st.b, { query: 'heap', range: '6h' });
  assert.equal(st.scale, 'same');
  assert.equal(st.sample, '');
  assert.deepEqual(decodeCompare('?a.sel=h&a.start=5&a.end=9').a, { query: 'h', start: 5, end: 9 });
  assert.deepEqual(decodeCompare('?a.sel=h&a.time=now-15m').a, { query: 'h', at: 'now-15m' });
  // unreadable times show the latest profile; a reversed range is not a range
  assert.deepEqual(decodeCompare('?a.sel=h&a.time=yesterday').a, { query: 'h', at: 'now' });
  assert.deepEqual(decodeCompare('?a.sel=h&a.start=9&a.end=5').a, { query: 'h', at: 'now' });
  assert.deepEqual(decodeCompare('?a.sel=h&a.range=soon').a, { query: 'h', at: 'now' });
  assert.deepEqual(decodeCompare('').b, { query: '', at: 'now' });
  assert.equal(decodeCompare('?scale=own').scale, 'own');
  assert.equal(decodeCompare('?scale=bogus').scale, 'same');
});

test('encodeCompare/decodeCompare round-trip the whole state', () => {
  const states = [
    { a: { query: 'heap{job="a&b"}', time: 1700000000000 }, b: { query: 'heap', at: 'now' },
      sample: 'alloc_space', focus: 'main.main;runtime.mallocgc', search: '^json\\.', sort: '-cum',
      filter: 'a=b&c', agg: 'sum', scale: 'own' },
    { a: { query: 'goroutine', range: '15m' }, b: { query: 'goroutine{x=~"1+"}', start: 1, end: 2 },
      sample: '', focus: '', search: '', sort: '', filter: '', agg: '', scale: 'same' },
    { a: { query: 'h', at: 'now-1h' }, b: { query: 'h', at: 'now' },
      sample: '', focus: 'x', search: '', sort: '', filter: '', agg: 'avg', scale: 'same' },
  ];
  for (const st of states) {
    const s = encodeCompare(st);
    assert.deepEqual(decodeCompare('?' + s), st, s);
  }
  assert.equal(encodeCompare(states[1]), 'a.sel=goroutine&a.range=15m&b.sel=goroutine{x=~"1%2B"}&b.start=1&b.end=2');
});

test('resolveSide makes relative times absolute', () => {
  const now = 10 * 3600e3;
  assert.deepEqual(resolveSide({ query: 'h', at: 'now' }, now), { query: 'h', time: now });
  assert.deepEqual(resolveSide({ query: 'h', at: 'now-1h' }, now), { query: 'h', time: now - 3600e3 });
  assert.deepEqual(resolveSide({ query: 'h', range: '15m' }, now), { query: 'h', start: now - 900e3, end: now });
  assert.deepEqual(resolveSide({ query: 'h', start: 1, end: 2 }, now), { query: 'h', start: 1, end: 2 });
  assert.deepEqual(resolveSide({ query: 'h', time: 7 }, now), { query: 'h', time: 7 });
  assert.equal(isMerge({ range: '1h' }), true);
  assert.equal(isMerge({ time: 1 }), false);
  assert.equal(sideWhen({ at: 'now' }), 'latest profile');
  assert.equal(sideWhen({ at: 'now-6h' }), 'profile 6h ago');
  assert.equal(sideWhen({ range: '1h' }), 'merge of the last 1h');
});

test('the combined diff of the same two sides, and back', () => {
  const now = 1700000000000;
  const st = { a: { query: 'heap{job="x"}', time: now - 600e3 }, b: { query: 'heap{job="y"}', range: '5m' },
    sample: 'inuse_objects', focus: 'main.main', search: 'json', sort: 'cum', filter: '', agg: 'sum', scale: 'own' };
  const q = decodeState('?' + diffSearch(st, now));
  assert.deepEqual(q.open, { mode: 'diff', a: { query: 'heap{job="x"}', time: now - 600e3 },
    b: { query: 'heap{job="y"}', start: now - 300e3, end: now } });
  assert.equal(q.query, 'heap{job="x"}');
  assert.ok(q.from < now - 600e3 && q.to > now, 'the timeline range holds both sides');
  assert.deepEqual(q.view, { sampleIndex: 'inuse_objects', focus: 'main.main', search: 'json', sort: 'cum', aggregation: 'sum' });
  // and back: the query page's open diff and its view give the same sides (now absolute)
  const back = decodeCompare('?' + compareSearch(q.open, q.view));
  assert.deepEqual(back.a, q.open.a);
  assert.deepEqual(back.b, q.open.b);
  assert.equal(back.sample, 'inuse_objects');
  assert.equal(back.focus, 'main.main');
  assert.equal(back.search, 'json');
  assert.equal(back.sort, 'cum');
  assert.equal(back.agg, 'sum', 'the aggregation goes both ways');
  assert.equal(decodeCompare('?agg=median').agg, '', 'only sum and avg');
  // a single profile opens against the latest of its series; a merge against the same span
  assert.deepEqual(decodeCompare('?' + compareSearch({ mode: 'single', query: 'h', time: 5 })).b, { query: 'h', at: 'now' });
  assert.deepEqual(decodeCompare('?' + compareSearch({ mode: 'merge', query: 'h', start: 0, end: 3600e3 })).b,
    { query: 'h', range: '3600s' });
  assert.equal(compareSearch(null), '');
});

const tree = {
  name: 'root', total: 100, children: [
    { name: 'main', total: 80, children: [
      { name: 'a', total: 50, children: [{ name: 'malloc', total: 50 }] },
      { name: 'b', total: 30, children: [{ name: 'c', total: 10 }] },
    ] },
    { name: 'gc', total: 20, children: [{ name: 'malloc', total: 20 }] },
  ],
};

test('mapPath: the same call path, its longest part, or a function by name', () => {
  assert.deepEqual(mapPath(tree, 'main;b;c'), { path: ['main', 'b', 'c'], found: true });
  assert.deepEqual(mapPath(tree, ['main', 'b']), { path: ['main', 'b'], found: true });
  // not there: as far as the path goes, and says so
  assert.deepEqual(mapPath(tree, 'main;b;zzz'), { path: ['main', 'b'], found: false });
  assert.deepEqual(mapPath(tree, 'other;b'), { path: [], found: false });
  // a name alone (the top table's focus): its one path, or none when there are several
  assert.deepEqual(mapPath(tree, 'c'), { path: ['main', 'b', 'c'], found: true });
  assert.deepEqual(mapPath(tree, 'malloc'), { path: [], found: true });
  assert.deepEqual(mapPath(tree, 'nowhere'), { path: [], found: false });
  assert.deepEqual(mapPath(tree, ''), { path: [], found: true });
  assert.deepEqual(mapPath(null, 'main'), { path: [], found: false });
});

test('same scale: widths relative to the larger total; each own 100% otherwise', () => {
  assert.deepEqual(scaleShares([50, 200], true), [0.25, 1]);
  assert.deepEqual(scaleShares([-300, 100], true), [1, 1 / 3]);
  assert.deepEqual(scaleShares([50, 200], false), [1, 1]);
  assert.deepEqual(scaleShares([0, 0], true), [1, 1]);
  assert.deepEqual(scaleShares([0, 10], true), [0, 1]);
  // the layout draws the smaller side that much narrower, its frames in proportion
  const full = layoutFlame(tree, { width: 1000, minWidth: 0 });
  const quarter = layoutFlame(tree, { width: 1000, minWidth: 0, scale: 0.25 });
  assert.equal(full.rects[0].w, 1000);
  assert.equal(quarter.rects[0].w, 250);
  const w = (l, name) => l.rects.find((r) => r.name === name).w;
  assert.equal(w(quarter, 'main'), w(full, 'main') / 4);
  assert.equal(w(quarter, 'c'), 25);
  // zoomed: the zoomed frame spans the share, its callers above it too
  const z = layoutFlame(tree, { width: 1000, minWidth: 0, zoom: ['main', 'b'], scale: 0.5 });
  assert.deepEqual(z.rects.slice(0, 3).map((r) => r.w), [500, 500, 500]);
  assert.ok(Math.abs(w(z, 'c') - 500 / 3) < 1e-9);
});

test('commonSampleTypes: the types both sides have, and which one shows', () => {
  const heap = { defaultSampleType: 'inuse_space', sampleTypes: [
    { type: 'alloc_objects' }, { type: 'alloc_space' }, { type: 'inuse_objects' }, { type: 'inuse_space' }] };
  const other = { defaultSampleType: 'alloc_space', sampleTypes: [{ type: 'alloc_space' }, { type: 'inuse_space' }] };
  assert.deepEqual(commonSampleTypes([heap, other], ''), { types: ['inuse_space', 'alloc_space'], pick: 'inuse_space' });
  assert.deepEqual(commonSampleTypes([heap, other], 'alloc_space').pick, 'alloc_space');
  // a wanted type one side lacks gives way to A's default
  assert.deepEqual(commonSampleTypes([heap, other], 'alloc_objects').pick, 'inuse_space');
  const gor = { defaultSampleType: 'goroutine', sampleTypes: [{ type: 'goroutine' }] };
  assert.deepEqual(commonSampleTypes([heap, gor], ''), { types: [], pick: '' });
  // one side empty: the other's types
  assert.deepEqual(commonSampleTypes([null, gor], '').types, ['goroutine']);
});

test('dataIsOf: data asked for with the meta is used only when both reports are of the type shown', () => {
  const ans = (fr, tr) => [{ data: fr && { sampleType: fr, root: {} } }, { data: tr && { sampleType: tr, rows: [] } }];
  assert.equal(dataIsOf(ans('cpu', 'cpu'), 'cpu'), true);
  assert.equal(dataIsOf(ans('samples', 'samples'), 'cpu'), false, 'the profile default was another type');
  assert.equal(dataIsOf(ans('cpu', 'samples'), 'cpu'), false, 'one report of another type');
  assert.equal(dataIsOf(ans(null, 'cpu'), 'cpu'), false, 'no flame graph');
  assert.equal(dataIsOf(null, 'cpu'), false, 'the early request failed');
  assert.equal(dataIsOf(ans('cpu', 'cpu'), ''), false, 'no sample type picked');
});
