// Unit tests of profile.js's pure parts: API parameters of each request mode, series
// labels, sample type choice and the header's descriptions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  queryParams, sideParams, seriesLabel, orderSampleTypes, chooseSampleType, describe, describeProfiles,
  carrySampleType, describeRequest, emptySideMessage, groupSelector, groupKey, groupRows, aggregationLine, scaleTree, tagFocusOf,
} from '../js/profile.js';

test('queryParams: single, merge and diff, times in seconds', () => {
  assert.deepEqual(queryParams({ mode: 'single', query: 'heap', time: 1795373956872 }),
    { mode: 'single', query: 'heap', time: 1795373956.872 });
  assert.deepEqual(queryParams({ mode: 'merge', query: 'heap', start: 1000, end: 5000 }),
    { mode: 'merge', query: 'heap', start: 1, end: 5 });
  assert.deepEqual(queryParams({ mode: 'diff', a: { query: 'heap{a="1"}', time: 2000 }, b: { query: 'heap', start: 3000, end: 4000 } }),
    { mode: 'diff', 'a.query': 'heap{a="1"}', 'a.time': 2, 'b.query': 'heap', 'b.start': 3, 'b.end': 4 });
  const d = queryParams({ mode: 'diff', query: 'cpu', a: { time: 1000 }, b: { time: 2000 } });
  assert.equal(d['a.query'], 'cpu');
  assert.equal(d['b.time'], 2);
});

test('queryParams: the sample-label filter goes along as tag_focus in every mode', () => {
  assert.deepEqual(queryParams({ mode: 'single', query: 'heap', time: 1000, tagFocus: 'endpoint=/api' }),
    { mode: 'single', query: 'heap', time: 1, tag_focus: 'endpoint=/api' });
  assert.equal(queryParams({ mode: 'merge', query: 'heap', start: 1000, end: 2000, tagFocus: 'x=1' }).tag_focus, 'x=1');
  assert.equal(queryParams({ mode: 'diff', a: { query: 'q', time: 1 }, b: { query: 'q', time: 2 }, tagFocus: 'x' }).tag_focus, 'x');
  assert.equal('tag_focus' in queryParams({ mode: 'single', query: 'heap', time: 1000, tagFocus: '' }), false);
});

test('sideParams: a diff side as a request of its own', () => {
  assert.deepEqual(sideParams({ query: 'heap', time: 1500 }), { mode: 'single', query: 'heap', time: 1.5 });
  assert.deepEqual(sideParams({ start: 1000, end: 2000 }, 'heap'), { mode: 'merge', query: 'heap', start: 1, end: 2 });
});

test('seriesLabel prints series as Prometheus does', () => {
  assert.equal(seriesLabel({ __name__: 'heap', job: 'api', instance: 'a:1' }), 'heap{instance="a:1", job="api"}');
  assert.equal(seriesLabel({ __name__: 'heap' }), 'heap');
  assert.equal(seriesLabel({ job: 'a"b' }), '{job="a\\"b"}');
  assert.equal(seriesLabel(null), '');
  // one line, and the selector of that series: control characters quoted as Go's %q
  assert.equal(seriesLabel({ __name__: 'heap', job: 'a\nb\\c ü' }), 'heap{job="a\\nb\\\\c ü"}');
});

const meta = {
  sampleTypes: [
    { type: 'alloc_objects', unit: 'count', total: 1 }, { type: 'alloc_space', unit: 'bytes', total: 2 },
    { type: 'inuse_objects', unit: 'count', total: 3 }, { type: 'inuse_space', unit: 'bytes', total: 4 },
  ],
  defaultSampleType: 'inuse_space',
  profileCount: 1, seriesCount: 1, minTime: 1000, maxTime: 1000, timestamp: 1000,
  series: [{ __name__: 'heap', job: 'api' }],
};

test('sample types: the default first, the view\'s choice kept when it exists', () => {
  assert.deepEqual(orderSampleTypes(meta).map((t) => t.type), ['inuse_space', 'alloc_objects', 'alloc_space', 'inuse_objects']);
  assert.equal(chooseSampleType(meta, 'alloc_space'), 'alloc_space');
  assert.equal(chooseSampleType(meta, 'cpu'), 'inuse_space');
  assert.equal(chooseSampleType(meta, ''), 'inuse_space');
  assert.equal(chooseSampleType(meta, '1'), 'alloc_space');
  assert.equal(chooseSampleType({ sampleTypes: [{ type: 'x' }, { type: 'y' }], defaultSampleType: null }, ''), 'y');
});

test('describe: single, merge, diff', () => {
  const now = 61000;
  const s = describe(meta, { mode: 'single', query: 'heap' }, now);
  assert.equal(s.title, 'heap{job="api"}');
  assert.match(s.lines[0][1], /\(1m ago\)$/);
  const m = describe({ ...meta, profileCount: 12, seriesCount: 3, minTime: 0, maxTime: 60000 }, { mode: 'merge', query: 'heap' }, now);
  assert.equal(m.title, 'Merge of 12 profiles of 3 series');
  const d = describe({ a: meta, b: { ...meta, profileCount: 5, seriesCount: 1 } }, { mode: 'diff' }, now);
  assert.equal(d.lines[0][0], 'base (a)');
  assert.match(d.lines[0][1], /^heap\{job="api"\} at /);
  assert.match(d.lines[1][1], /^5 profiles of heap\{job="api"\}, /);
  assert.equal(describeProfiles(null), 'no profile');
});

test('carrySampleType: the carried name when the profile has it, else its default', () => {
  assert.equal(carrySampleType(meta, 'alloc_space'), 'alloc_space');
  assert.equal(carrySampleType(meta, 'cpu'), 'inuse_space');
  assert.equal(carrySampleType(meta, ''), 'inuse_space');
  // a goroutine profile has no alloc_space: its own default
  assert.equal(carrySampleType({ sampleTypes: [{ type: 'goroutine' }], defaultSampleType: 'goroutine' }, 'alloc_space'), 'goroutine');
  assert.equal(carrySampleType(null, 'alloc_space'), '');
});

test('describeRequest: what was asked for, before meta answers', () => {
  const one = describeRequest({ mode: 'single', query: 'heap{job="a"}', time: 1000 });
  assert.equal(one.title, 'heap{job="a"}');
  assert.equal(one.lines.length, 1);
  assert.equal(one.lines[0][0], 'time');
  const m = describeRequest({ mode: 'merge', query: 'heap', start: 1000, end: 2000 });
  assert.deepEqual(m.lines.map(([k]) => k), ['query', 'time']);
  const d = describeRequest({ mode: 'diff', a: { query: 'heap{x="1"}', time: 1000 }, b: { start: 1000, end: 2000 }, query: 'heap' });
  assert.deepEqual(d.lines.map(([k]) => k), ['base (a)', 'new (b)']);
  assert.match(d.lines[0][1], /^heap\{x="1"\} at /);
  assert.match(d.lines[1][1], /^heap from .* to /);
  assert.deepEqual(describeRequest(null), { title: '', lines: [] });
});

test('groupSelector: a group of a merge is the merge\'s selector with the group\'s matcher', () => {
  assert.equal(groupSelector('heap{job="x"}', 'zone', 'a'), 'heap{job="x", zone="a"}');
  // the group of series without the label: label="" matches them, as in PromQL
  assert.equal(groupSelector('heap{job="x"}', 'zone', ''), 'heap{job="x", zone=""}');
  // an equality on the label gives way; other matchers on it stay
  assert.equal(groupSelector('heap{zone="b", job="x"}', 'zone', 'a'), 'heap{job="x", zone="a"}');
  assert.equal(groupSelector('heap{zone=~"a|b"}', 'zone', 'a'), 'heap{zone=~"a|b", zone="a"}');
  assert.equal(groupSelector('heap', 'instance', 'a"b\n'), 'heap{instance="a\\"b\\n"}');
  // by profile type: the name is the group's
  assert.equal(groupSelector('{job="x"}', '__name__', 'heap'), 'heap{job="x"}');
  assert.equal(groupSelector('{job="x"}', '__name__', 'a-b'), '{__name__="a-b", job="x"}');
  assert.equal(groupSelector('heap{job=', 'zone', 'a'), 'heap{job=', 'not a selector: left to the API');
});

test('groupRows: the heaviest group first, with shares, counts and top function', () => {
  const data = { groupBy: ['zone'], groups: [
    { labels: { zone: '' }, total: 10, unit: 'bytes', profileCount: 1, seriesCount: 1, report: { rows: [{ name: 'f' }] } },
    { labels: { zone: 'a' }, total: 30, unit: 'bytes', profileCount: 4, seriesCount: 2, report: { rows: [{ name: 'g' }] } },
    { labels: { zone: 'b' }, total: 10, unit: 'bytes', profileCount: 2, seriesCount: 1, report: { rows: [] } },
  ] };
  const rows = groupRows(data, 'zone');
  assert.deepEqual(rows.map((r) => r.key), ['zone="a"', 'zone=""', 'zone="b"']);
  assert.deepEqual(rows.map((r) => r.share), [60, 20, 20]);
  assert.equal(rows[0].top, 'g');
  assert.equal(rows[2].top, '');
  assert.equal(rows[1].value, '');
  assert.deepEqual(groupRows(null, 'zone'), []);
  assert.equal(groupKey('zone', { zone: 'a"b' }), 'zone="a\\"b"');
  assert.equal(groupKey('zone', {}), 'zone=""');
});

test('aggregation: merges and merged diff sides pass it on, the header names what was averaged', () => {
  assert.deepEqual(queryParams({ mode: 'merge', query: 'heap', start: 1000, end: 5000, aggregation: 'sum' }),
    { mode: 'merge', query: 'heap', start: 1, end: 5, aggregation: 'sum' });
  assert.equal(queryParams({ mode: 'single', query: 'heap', time: 1000, aggregation: 'sum' }).aggregation, undefined);
  assert.equal(queryParams({ mode: 'diff', aggregation: 'avg', a: { query: 'heap', start: 1000, end: 2000 }, b: { query: 'heap', time: 3000 } }).aggregation, 'avg');
  assert.equal(queryParams({ mode: 'diff', aggregation: 'avg', a: { query: 'heap', time: 1000 }, b: { query: 'heap', time: 3000 } }).aggregation, undefined);
  assert.deepEqual(sideParams({ query: 'heap', start: 1000, end: 2000 }, '', 'avg'), { mode: 'merge', query: 'heap', start: 1, end: 2, aggregation: 'avg' });
  assert.deepEqual(sideParams({ query: 'heap', time: 1000 }, '', 'avg'), { mode: 'single', query: 'heap', time: 1 });
  const heap = { sampleTypes: [{ type: 'alloc_space', aggregation: 'sum' }, { type: 'inuse_objects', aggregation: 'avg' }, { type: 'inuse_space', aggregation: 'avg' }] };
  assert.deepEqual(aggregationLine(heap), [['aggregate', 'average per profile of inuse_objects, inuse_space; sum of the rest']]);
  assert.deepEqual(aggregationLine({ sampleTypes: [{ type: 'cpu', aggregation: 'sum' }] }), [['aggregate', 'sum of the profiles']]);
  assert.deepEqual(aggregationLine({ sampleTypes: [{ type: 'goroutine', aggregation: 'avg' }] }), [['aggregate', 'average per profile']]);
  assert.deepEqual(aggregationLine({ sampleTypes: [{ type: 'cpu' }] }), [], 'one profile: no line');
  const m = describe({ ...heap, profileCount: 2, seriesCount: 1, minTime: 0, maxTime: 1 }, { mode: 'merge', query: 'heap' });
  assert.deepEqual(m.lines[2], ['aggregate', 'average per profile of inuse_objects, inuse_space; sum of the rest']);
});

test('stack filters, granularity and normalize reach every request of the view', () => {
  const req = { mode: 'diff', normalize: true, granularity: 'lines', filters: { focus: 'main', prune_from: 'runtime\\.' },
    a: { query: 'heap', time: 1000 }, b: { query: 'heap', time: 2000 } };
  const p = queryParams(req);
  assert.equal(p.focus, 'main');
  assert.equal(p.prune_from, 'runtime\\.');
  assert.equal(p.granularity, 'lines');
  assert.equal(p.normalize, 'true');
  const m = queryParams({ mode: 'merge', query: 'heap', start: 1000, end: 2000, normalize: true, granularity: 'functions' });
  assert.equal(m.normalize, undefined, 'a merge is not normalized');
  assert.equal(m.granularity, undefined, 'functions is the default');
  const d = describe({ a: {}, b: {} }, req);
  assert.ok(d.lines.length >= 2);
  const t = scaleTree({ name: 'root', self: 0, total: 10, children: [{ name: 'f', self: 3, total: 3, children: [] }] }, 1.5);
  assert.deepEqual([t.total, t.children[0].self, t.children[0].total], [15, 5, 5]);
});

test('tagFocusOf: a string value as an anchored regex, a number with a unit as itself', () => {
  assert.equal(tagFocusOf('endpoint', '/api'), 'endpoint=^/api$');
  assert.equal(tagFocusOf('shard', '3'), 'shard=^3$', 'a string label that looks like a number');
  assert.equal(tagFocusOf('q', 'a.b(c)'), 'q=^a\\.b\\(c\\)$');
  assert.equal(tagFocusOf('bytes', '72kB'), 'bytes=72kB');
  assert.equal(tagFocusOf('bytes', '1.50MB'), 'bytes=1.50MB');
});

test('emptySideMessage: one message naming the empty side of a diff', () => {
  const req = { mode: 'diff', query: 'heap', a: { time: 1000 }, b: { query: 'heap{job="x"}', start: 0, end: 60000 } };
  const w = ['side b of the diff has no profile, so there is no diff', 'other'];
  const m = emptySideMessage(req, w);
  assert.match(m, /^Side B \(new\) has no profile: nothing matches heap\{job="x"\} from .* to .*\. Pick another mark or range for side B\.$/);
  assert.match(emptySideMessage(req, ['other', 'side a of the diff has no profile, so there is no diff']), /^Side A \(base\) has no profile: nothing matches heap at /);
  assert.equal(emptySideMessage(req, ['other']), null);
  assert.equal(emptySideMessage({ mode: 'single', query: 'heap', time: 1 }, w), null);
});
