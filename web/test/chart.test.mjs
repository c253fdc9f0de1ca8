// Unit tests of the values chart's pure helpers: metric names from a selector and a
// sample type, the PromQL it runs, the answer's lines, point lookup for a click, what a
// grouped point opens, brush ranges, value ticks and decimation.
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  promName, metricName, sampleChoices, defaultChoice, splitSelector, withMetric, promDuration, preferredType,
  stepFor, chartRequest, linesOf, profileSeriesOf, groupPointRequest, brushRange, nearestPoint,
  maxValue, valueTicks, decimate, rasterLine, pixelOf,
} from '../js/chart.js';

const NAMES = ['goroutine_goroutine_count', 'heap_alloc_objects_count', 'heap_alloc_space_bytes',
  'heap_inuse_objects_count', 'heap_inuse_space_bytes', 'profile_cpu_nanoseconds',
  'profile_cpu_nanoseconds_per_second', 'profile_samples_count', 'profile_samples_count_per_second'];

test('metric names follow the endpoint: non [a-zA-Z0-9_] become _', () => {
  assert.equal(metricName('heap', 'inuse_space', 'bytes'), 'heap_inuse_space_bytes');
  assert.equal(metricName('profile', 'cpu', 'nanoseconds'), 'profile_cpu_nanoseconds');
  assert.equal(metricName('goroutine', 'goroutine', 'count'), 'goroutine_goroutine_count');
  assert.equal(metricName('my.type', 'alloc-space', 'µs'), 'my_type_alloc_space__s');
  assert.equal(promName('a:b c'), 'a_b_c');
});

test('sampleChoices lists a profile type\'s metrics, with units and per-second ones', () => {
  const heap = sampleChoices('heap', NAMES);
  assert.deepEqual(heap.map((c) => c.label),
    ['alloc_objects_count', 'alloc_space_bytes', 'inuse_objects_count', 'inuse_space_bytes']);
  assert.deepEqual(heap.map((c) => c.unit), ['count', 'bytes', 'count', 'bytes']);
  const cpu = sampleChoices('profile', NAMES);
  assert.deepEqual(cpu.map((c) => [c.label, c.unit, c.perSecond]), [
    ['cpu_nanoseconds', 'nanoseconds', false], ['cpu_nanoseconds_per_second', 'nanoseconds', true],
    ['samples_count', 'count', false], ['samples_count_per_second', 'count', true]]);
  assert.deepEqual(sampleChoices('mutex', NAMES), []);
  // a type whose name is another's prefix does not take its metrics: 'heap' is not 'he'
  assert.deepEqual(sampleChoices('he', NAMES), []);
});

test('defaultChoice: the profile view\'s sample type, else pprof\'s default, else the first', () => {
  const heap = sampleChoices('heap', NAMES);
  assert.equal(defaultChoice(heap).metric, 'heap_inuse_space_bytes');
  assert.equal(defaultChoice(heap, 'alloc_space').metric, 'heap_alloc_space_bytes');
  assert.equal(defaultChoice(heap, 'alloc').metric, 'heap_inuse_space_bytes'); // no such type
  assert.equal(defaultChoice(sampleChoices('profile', NAMES)).metric, 'profile_cpu_nanoseconds');
  assert.equal(defaultChoice(sampleChoices('goroutine', NAMES)).metric, 'goroutine_goroutine_count');
  assert.equal(defaultChoice([]), null);
});

test('splitSelector and withMetric put the metric name in the profile type\'s place', () => {
  assert.deepEqual(splitSelector('heap{job="x", instance=~"a.*"}'),
    { name: 'heap', matchers: ['job="x"', 'instance=~"a.*"'] });
  assert.deepEqual(splitSelector('{__name__="heap",job="x"}'), { name: 'heap', matchers: ['job="x"'] });
  assert.deepEqual(splitSelector('heap'), { name: 'heap', matchers: [] });
  assert.deepEqual(splitSelector('{job="a,b}", x!="\\"}"}'), { name: '', matchers: ['job="a,b}"', 'x!="\\"}"'] });
  assert.equal(withMetric('heap{job="x"}', 'heap_inuse_space_bytes'), 'heap_inuse_space_bytes{job="x"}');
  assert.equal(withMetric('heap', 'heap_inuse_space_bytes'), 'heap_inuse_space_bytes');
  assert.equal(withMetric('{job="served"}', 'goroutine_goroutine_count'), 'goroutine_goroutine_count{job="served"}');
  assert.equal(withMetric('{__name__="heap", job="x"}', 'heap_inuse_space_bytes'), 'heap_inuse_space_bytes{job="x"}');
  // a regex on the name is dropped: the metric names one profile type
  assert.equal(withMetric('{__name__=~"heap|allocs", job="x"}', 'heap_inuse_space_bytes'), 'heap_inuse_space_bytes{job="x"}');
  assert.equal(withMetric('heap{job="x"}', 'heap', ['instance="a:1"']), 'heap{job="x", instance="a:1"}');
  assert.throws(() => splitSelector('heap{job="x"'), /not a selector/);
  assert.throws(() => splitSelector('{job="x}'), /not a selector|unterminated/);
});

test('chartRequest: an instant range query for exact points, sum by over query_range when grouped', () => {
  const from = 1_700_000_000_000;
  const to = from + 3600e3;
  const r = chartRequest('heap{job="x"}', 'heap_inuse_space_bytes', from, to, 1200, '');
  assert.deepEqual(r, { path: 'query', params: {
    query: 'heap_inuse_space_bytes{job="x"}[3600000ms]', time: to / 1000 } });
  const g = chartRequest('heap{job="x"}', 'heap_inuse_space_bytes', from, to, 1200, 'instance');
  assert.equal(g.path, 'query_range');
  assert.equal(g.params.query, 'sum by (instance) (heap_inuse_space_bytes{job="x"})');
  assert.equal(g.params.step, 3); // 3600 s on 1200 px
  assert.equal(g.step, 3000);
  assert.equal(g.params.start, from / 1000);
  assert.equal(stepFor(from, from + 60e3, 1200), 1);
  assert.equal(promDuration(0.2), '1ms');
});

test('linesOf reads a matrix; profileSeriesOf names the profile series of a line', () => {
  const lines = linesOf([{ metric: { __name__: 'heap_inuse_space_bytes', job: 'x', instance: 'a:1' },
    values: [[1700000000.123, '100'], [1700000015, '2.5e3'], [1700000030, 'NaN']] }]);
  assert.deepEqual(lines[0].labels, { job: 'x', instance: 'a:1' });
  assert.deepEqual(lines[0].ts, [1700000000123, 1700000015000, 1700000030000]);
  assert.deepEqual(lines[0].vs.slice(0, 2), [100, 2500]);
  assert.ok(Number.isNaN(lines[0].vs[2]));
  assert.equal(profileSeriesOf(lines[0], 'heap'), 'heap{instance="a:1", job="x"}');
});

test('nearestPoint finds the clicked point across lines, or none out of reach', () => {
  const lines = [{ ts: [0, 10, 20, 30], vs: [0, 5, 10, 5] }, { ts: [0, 10, 20, 30], vs: [10, 10, 0, 0] }];
  const toX = (t) => t * 10;
  const toY = (v) => 100 - v * 10;
  const xToT = (x) => x / 10;
  // (200, 0): line 0's t=20 (v=10) exactly
  assert.deepEqual(nearestPoint(lines, 200, 0, toX, toY, xToT, 8), { line: 0, index: 2, t: 20, v: 10, x: 200, y: 0 });
  // (103, 2): line 1's t=10 (y=0) is 3.6 px away, line 0's t=10 (y=50) far
  assert.equal(nearestPoint(lines, 103, 2, toX, toY, xToT, 8).line, 1);
  assert.equal(nearestPoint(lines, 150, 50, toX, toY, xToT, 8), null);
  // NaN points cannot be clicked
  assert.equal(nearestPoint([{ ts: [10], vs: [NaN] }], 100, 50, toX, toY, xToT, 8), null);
});

test('groupPointRequest opens the profiles that made a grouped point', () => {
  const series = [
    { labels: { __name__: 'heap', job: 'x', instance: 'a' }, ts: [1000, 16000, 31000] },
    { labels: { __name__: 'heap', job: 'x', instance: 'b' }, ts: [5000, 20000] },
    { labels: { __name__: 'heap', job: 'y', instance: 'a' }, ts: [29000] },
    { labels: { __name__: 'goroutine', job: 'x', instance: 'a' }, ts: [30000] },
  ];
  // by instance=a at 30 s: x/a's 16 s and y/a's 29 s → a merge from 16 s to 30 s
  assert.deepEqual(groupPointRequest('heap{job=~".+"}', 'heap', 'instance', 'a', series, 30000),
    { mode: 'merge', query: 'heap{job=~".+", instance="a"}', start: 16000, end: 30000 });
  // by job=x at 10 s within a 6 s lookback: only b's 5 s profile → that single profile
  assert.deepEqual(groupPointRequest('heap', 'heap', 'job', 'x', series, 10000, 6000),
    { mode: 'single', query: 'heap{instance="b", job="x"}', time: 5000 });
  assert.equal(groupPointRequest('heap', 'heap', 'job', 'z', series, 10000), null);
});

test('brushRange turns a drag into whole milliseconds inside the window', () => {
  assert.deepEqual(brushRange(100, 50, 0, 1000, 1000), { start: 50, end: 100 });
  assert.deepEqual(brushRange(-20, 2000, 5000, 6000, 500), { start: 5000, end: 6000 });
  assert.deepEqual(brushRange(0.5, 10.25, 0, 100, 50), { start: 1, end: 21 });
});

test('maxValue and valueTicks scale the value axis', () => {
  const lines = [{ ts: [0, 10, 20], vs: [3, 90, 7] }, { ts: [5], vs: [Infinity] }];
  assert.equal(maxValue(lines, 0, 20), 90);
  assert.equal(maxValue(lines, 15, 30), 7);
  assert.deepEqual(valueTicks(90, 4), { top: 100, ticks: [0, 50, 100] });
  assert.deepEqual(valueTicks(7, 4), { top: 8, ticks: [0, 2, 4, 6, 8] });
  const b = valueTicks(3 * 1024 * 1024, 4, true);
  assert.deepEqual(b.ticks, [0, 1, 2, 3].map((k) => k * 1024 * 1024));
  assert.deepEqual(valueTicks(0), { top: 1, ticks: [0, 1] });
});

test('decimate keeps first, min, max and last of each pixel column, and breaks at NaN', () => {
  const ts = [0, 1, 2, 3, 10, 11, 20, 30];
  const vs = [5, 1, 9, 4, 2, NaN, 3, 7];
  const out = decimate(ts, vs, 0, 25, (t) => t / 10, (v) => v);
  // column 0 (t 0..3): first 5, min 1, max 9, last 4 in time order; column 1: 2; NaN; 3; 7
  // (t=30 is the first point past the window, kept so the line leaves the plot)
  assert.deepEqual(out.filter((_, i) => i % 2 === 1), [5, 1, 9, 4, 2, NaN, 3, 7]);
  assert.deepEqual(decimate([0, 1, 2], [1, 1, 1], 0, 2, (t) => t * 0.1, (v) => v).length, 4);
});

test('rasterLine fills every column a segment crosses, without gaps, clipped to the buffer', () => {
  const w = 6;
  const h = 5;
  const px = new Uint32Array(w * h);
  // from (0.5, 0.5) to (4.5, 4.5): a diagonal; then a break (NaN); then one lone point
  const id = { ax: 0, bx: 1, ay: 0, by: 1 };
  rasterLine(px, w, h, [0.5, 4.5, 5, 5.2], [0.5, 4.5, NaN, 2.1], 0, 6, id, 7);
  const rows = [];
  for (let r = 0; r < h; r++) rows.push(Array.from(px.slice(r * w, r * w + w), (v) => (v ? '#' : '.')).join(''));
  // (each column spans the rows between the heights at its edges: y = x here)
  assert.deepEqual(rows, [
    '#.....',
    '##....',
    '.##..#',
    '..##..',
    '...##.',
  ]);
  // a steep segment fills the rows between; points outside the buffer are clipped
  const p2 = new Uint32Array(3 * 4);
  rasterLine(p2, 3, 4, [1.5, 1.6, 9], [-10, 10, 9], 0, 3, id, 1);
  assert.deepEqual(Array.from(p2), [0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0]); // the last segment runs below
});

test('pixelOf packs a colour for a little-endian RGBA buffer', () => {
  const px = new Uint32Array([pixelOf('#102030', 200)]);
  assert.deepEqual(Array.from(new Uint8Array(px.buffer)), [0x10, 0x20, 0x30, 200]);
});

test('the chart opens on CPU when the query has it, on alloc_space for allocs', () => {
  assert.equal(preferredType(['allocs', 'block', 'goroutine', 'heap', 'profile']), 'profile');
  assert.equal(preferredType(['allocs', 'goroutine', 'heap']), 'heap');
  assert.equal(preferredType(['zeta', 'alpha']), 'alpha', 'unknown types in name order');
  const allocs = [{ metric: 'allocs_alloc_objects_count', profileType: 'allocs', label: 'alloc_objects_count' },
    { metric: 'allocs_alloc_space_bytes', profileType: 'allocs', label: 'alloc_space_bytes' },
    { metric: 'allocs_inuse_space_bytes', profileType: 'allocs', label: 'inuse_space_bytes' }];
  assert.equal(defaultChoice(allocs).metric, 'allocs_alloc_space_bytes', 'as pprof\'s default for allocs');
  assert.equal(defaultChoice(allocs, 'inuse_space').metric, 'allocs_inuse_space_bytes', 'the view\'s choice wins');
});
