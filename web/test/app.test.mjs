// Unit tests of the query page's pure logic: URL state, diff picking, routes, selector
// autocompletion, time ranges, history, and the targets page's filter.
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  encodeState, decodeState, diffRequest, picksOf, requestTypes, routeOf, appliedZoom, carryView, SHORTCUTS,
  stepTime, sameUrl, rangeWords, openRequest, rangeLimitOf,
} from '../js/app.js';
import {
  completionContext, applyCompletion, rankSuggestions, metricOf, errorColumn, parseDuration,
  formatDurationShort, resolveRange, addHistory, toLocalInput, fromLocalInput, escapeForQuote,
  closeSelector, parseRangeText,
} from '../js/query.js';
import { setTimeZone } from '../js/format.js';
import { targetMatches, groupByPool } from '../js/targets.js';
import { formatSpan } from '../js/status.js';

// ---------------------------------------------------------------- URL state

test('decodeState defaults', () => {
  const st = decodeState('?query=heap');
  assert.deepEqual(st, { query: 'heap', range: '1h', from: null, to: null, live: false, zoom: null,
    chart: '', group: '', tagFocus: '', open: null, view: {}, filters: {}, gran: '', normalize: false });
});

test('the landing page (no query) shows the last 15 minutes, and says so', () => {
  assert.equal(decodeState('').range, '15m');
  assert.equal(decodeState('?range=6h').range, '6h');
  assert.equal(decodeState('?query=heap').range, '1h');
  assert.equal(rangeWords(decodeState('')), 'the last 15 minutes');
  assert.equal(rangeWords({ range: '1h' }), 'the last hour');
  assert.equal(rangeWords({ range: '24h' }), 'the last 24 hours');
  assert.equal(rangeWords({ range: '7d' }), 'the last 7 days');
  assert.equal(rangeWords({ range: '1h30m' }), 'the last 1h30m');
  assert.match(rangeWords({ range: null, from: 0, to: 3600e3 }), /^from \d{4}-\d\d-\d\d \d\d:\d\d:\d\d to /);
});

test('encodeState/decodeState round-trip every kind of state', () => {
  const states = [
    { query: 'heap{job="api"}', range: '15m', from: null, to: null, live: true,
      zoom: { from: 1000, to: 2000 }, chart: 'heap_inuse_space_bytes', group: 'instance',
      tagFocus: 'endpoint=/api/.*', open: null, view: {}, filters: { hide: 'runtime\\.', prune_from: 'a&b' }, gran: 'files', normalize: false },
    { query: 'heap', range: null, from: 1700000000000, to: 1700003600000, live: false, zoom: null,
      chart: '', group: '', tagFocus: '', open: { mode: 'single', query: 'heap{instance="a:1", job="api"}', time: 1700000001234 },
      view: { sampleIndex: 'alloc_space', focus: 'main.run', search: 'json|http', sort: 'cum',
        filter: 'a&b=c', extra: 'x y' }, filters: {}, gran: '', normalize: false },
    { query: 'allocs', range: '7d', from: null, to: null, live: false, zoom: null,
      chart: '', group: '', tagFocus: '', open: { mode: 'merge', query: 'allocs', start: 1, end: 2 }, view: {}, filters: {}, gran: '', normalize: false },
    { query: 'heap', range: '1h', from: null, to: null, live: false, zoom: null,
      chart: '', group: 'job', tagFocus: 'a=b&c=#d', open: { mode: 'diff', a: { query: 'heap{x="1"}', time: 5 }, b: { query: 'heap{x="2"}', start: 6, end: 9 } },
      view: { sampleIndex: '0' }, filters: { focus: 'x y' }, gran: 'addresses', normalize: true },
  ];
  for (const st of states) {
    const s = encodeState(st);
    assert.deepEqual(decodeState('?' + s), st, s);
  }
});

test('encodeState keeps selectors readable and escapes what must be', () => {
  const s = encodeState({ query: 'heap{job="a&b",x=~"1+2#"}', range: '1h', view: {} });
  assert.equal(s, 'query=heap{job="a%26b",x=~"1%2B2%23"}&range=1h');
  assert.equal(decodeState(s).query, 'heap{job="a&b",x=~"1+2#"}');
});

test('decodeState ignores bad values', () => {
  const st = decodeState('?query=heap&range=forever&from=10&to=5&zoom=9-3&open=single&sel=heap&live=1');
  assert.equal(st.range, '1h');
  assert.equal(st.from, null);
  assert.equal(st.zoom, null);
  assert.equal(st.open, null); // single without a time
  assert.equal(st.live, true);
  const abs = decodeState('?from=10&to=20&live=1');
  assert.equal(abs.range, null);
  assert.equal(abs.live, false); // live needs a relative range
  assert.equal(decodeState('?open=diff&a.sel=x&a.time=1').open, null);
  assert.equal(decodeState('?group=a-b').group, ''); // not a label name
  assert.equal(decodeState('?group=instance').group, 'instance');
});

test('diffRequest: the earlier profile is the base', () => {
  const single = { mode: 'single', query: 'heap{a="1"}', time: 200 };
  assert.deepEqual(diffRequest(single, 'heap{a="2"}', 100),
    { mode: 'diff', a: { query: 'heap{a="2"}', time: 100 }, b: { query: 'heap{a="1"}', time: 200 } });
  assert.deepEqual(diffRequest(single, 'heap{a="1"}', 300),
    { mode: 'diff', a: { query: 'heap{a="1"}', time: 200 }, b: { query: 'heap{a="1"}', time: 300 } });
  assert.equal(diffRequest(single, 'heap{a="1"}', 200), null);
  assert.equal(diffRequest(null, 'heap', 1), null);
  assert.equal(diffRequest({ mode: 'merge', query: 'heap', start: 1, end: 2 }, 'heap', 1), null);
  const diff = { mode: 'diff', a: { query: 'q', time: 10 }, b: { query: 'q', time: 20 } };
  assert.deepEqual(diffRequest(diff, 'q', 30).b, { query: 'q', time: 30 });
  assert.deepEqual(diffRequest(diff, 'q', 30).a, { query: 'q', time: 10 });
});

test('picksOf tags diff sides and maps the whole query to every lane', () => {
  assert.deepEqual(picksOf(null, 'heap'), []);
  assert.deepEqual(picksOf({ mode: 'single', query: 's', time: 5 }, 'heap'), [{ key: 's', t: 5, tag: '' }]);
  assert.deepEqual(picksOf({ mode: 'merge', query: 'heap', start: 1, end: 2 }, 'heap'),
    [{ key: null, start: 1, end: 2, tag: '' }]);
  assert.deepEqual(picksOf({ mode: 'diff', a: { query: 's', time: 1 }, b: { query: 'heap', start: 2, end: 3 } }, 'heap'),
    [{ key: 's', t: 1, tag: 'A' }, { key: null, start: 2, end: 3, tag: 'B' }]);
});

test('requestTypes', () => {
  assert.equal(requestTypes({ mode: 'single', query: 'heap{a="1"}', time: 1 }), 'heap');
  assert.equal(requestTypes({ mode: 'diff', a: { query: 'heap' }, b: { query: 'allocs' } }), 'heap|allocs');
  assert.equal(requestTypes(null), '');
});

test('routeOf', () => {
  assert.equal(routeOf('/'), '/');
  assert.equal(routeOf('/targets'), '/targets');
  assert.equal(routeOf('/status/'), '/status');
  assert.equal(routeOf('/compare'), '/compare');
  assert.equal(routeOf('/profd/compare', '/profd/'), '/compare');
  assert.equal(routeOf('/nope'), null);
  assert.equal(routeOf('/api/v1/labels'), null);
});

// ---------------------------------------------------------------- autocompletion

test('completionContext: metric name', () => {
  assert.deepEqual(completionContext('', 0), { kind: 'metric', prefix: '', start: 0, end: 0 });
  assert.deepEqual(completionContext('hea', 3), { kind: 'metric', prefix: 'hea', start: 0, end: 3 });
  assert.deepEqual(completionContext('heap{job="a"}', 2), { kind: 'metric', prefix: 'he', start: 0, end: 4 });
  assert.equal(completionContext('heap{job="a"} x', 15).kind, 'none');
});

test('completionContext: label names', () => {
  assert.deepEqual(completionContext('heap{', 5), { kind: 'labelName', prefix: '', start: 5, end: 5 });
  assert.deepEqual(completionContext('heap{jo', 7), { kind: 'labelName', prefix: 'jo', start: 5, end: 7 });
  assert.deepEqual(completionContext('heap{job="a", in', 16),
    { kind: 'labelName', prefix: 'in', start: 14, end: 16 });
  assert.deepEqual(completionContext('{jo="x"}', 2), { kind: 'labelName', prefix: 'j', start: 1, end: 3 });
});

test('completionContext: operators and values', () => {
  assert.equal(completionContext('heap{job ', 9).kind, 'operator');
  assert.deepEqual(completionContext('heap{job="', 10),
    { kind: 'labelValue', prefix: '', start: 10, end: 10, label: 'job', op: '=', quote: '"', closed: false });
  assert.deepEqual(completionContext('heap{job=~"ap"}', 13),
    { kind: 'labelValue', prefix: 'ap', start: 11, end: 13, label: 'job', op: '=~', quote: '"', closed: true });
  assert.deepEqual(completionContext('heap{job!="a\\"b', 15),
    { kind: 'labelValue', prefix: 'a\\"b', start: 11, end: 15, label: 'job', op: '!=', quote: '"', closed: false });
  assert.deepEqual(completionContext('heap{job=', 9),
    { kind: 'labelValue', prefix: '', start: 9, end: 9, label: 'job', op: '=', quote: '', closed: false });
  assert.deepEqual(completionContext("{instance='1", 12),
    { kind: 'labelValue', prefix: '1', start: 11, end: 12, label: 'instance', op: '=', quote: "'", closed: false });
  assert.equal(completionContext('heap{job="a" ', 13).kind, 'none');
  assert.equal(completionContext('heap{job="a",', 13).kind, 'labelName');
  // Inside braces a comma within a value does not end it.
  assert.equal(completionContext('heap{job="a,b', 13).kind, 'labelValue');
});

test('applyCompletion', () => {
  let t = 'hea';
  assert.deepEqual(applyCompletion(t, completionContext(t, 3), 'heap'), { text: 'heap', cursor: 4 });
  t = 'heap{jo';
  assert.deepEqual(applyCompletion(t, completionContext(t, 7), 'job'), { text: 'heap{job=""', cursor: 10 });
  t = 'heap{jo="x"}';
  assert.deepEqual(applyCompletion(t, completionContext(t, 7), 'job'), { text: 'heap{job="x"}', cursor: 8 });
  t = 'heap{job="a';
  assert.deepEqual(applyCompletion(t, completionContext(t, 11), 'api'), { text: 'heap{job="api"', cursor: 14 });
  t = 'heap{job="a"}';
  assert.deepEqual(applyCompletion(t, completionContext(t, 11), 'api'), { text: 'heap{job="api"}', cursor: 14 });
  t = 'heap{job=';
  assert.deepEqual(applyCompletion(t, completionContext(t, 9), 'a"b'), { text: 'heap{job="a\\"b"', cursor: 15 });
  t = 'heap{job ';
  assert.deepEqual(applyCompletion(t, completionContext(t, 9), '=~'), { text: 'heap{job =~', cursor: 11 });
});

test('closeSelector closes what was left open', () => {
  assert.equal(closeSelector('heap{job="a'), 'heap{job="a"}');
  assert.equal(closeSelector('heap{job="a"'), 'heap{job="a"}');
  assert.equal(closeSelector('heap{job="a}"'), 'heap{job="a}"}');
  assert.equal(closeSelector('heap{job="a"}'), 'heap{job="a"}');
  assert.equal(closeSelector('heap'), 'heap');
  assert.equal(closeSelector("{a='x\\'"), "{a='x\\''}");
  assert.equal(closeSelector('heap{job="a",'), 'heap{job="a",}');
  assert.equal(closeSelector('heap{job=~"a.*", instance!="b'), 'heap{job=~"a.*", instance!="b"}');
  assert.equal(closeSelector('heap{'), 'heap{}');
});

test('closeSelector leaves a selector that is not cut short as typed', () => {
  // the quote after an unquoted value is not a value left open
  assert.equal(closeSelector('heap{job=demo"}'), 'heap{job=demo"}');
  assert.equal(closeSelector('heap{job=demo"'), 'heap{job=demo"');
  assert.equal(closeSelector('heap{job=demo'), 'heap{job=demo');
  // a brace already closed, a matcher without its value, a label name left open
  assert.equal(closeSelector('heap{job="a"} x'), 'heap{job="a"} x');
  assert.equal(closeSelector('heap{job='), 'heap{job=');
  assert.equal(closeSelector('heap{job'), 'heap{job');
  assert.equal(closeSelector('heap{"job'), 'heap{"job');
  assert.equal(closeSelector('heap{job="a" "b'), 'heap{job="a" "b');
});

test('escapeForQuote', () => {
  assert.equal(escapeForQuote('a"b\\', '"'), 'a\\"b\\\\');
  assert.equal(escapeForQuote("it's", "'"), "it\\'s");
  assert.equal(escapeForQuote('raw\\"', '`'), 'raw\\"');
});

test('rankSuggestions puts prefix matches first', () => {
  assert.deepEqual(rankSuggestions(['allocs', 'heap', 'threadcreate', 'Heapster'], 'hea'),
    ['heap', 'Heapster']);
  assert.deepEqual(rankSuggestions(['allocs', 'heap', 'threadcreate', 'eat'], 'ea'),
    ['eat', 'heap', 'threadcreate']);
  assert.deepEqual(rankSuggestions(['a', 'b'], ''), ['a', 'b']);
  assert.deepEqual(rankSuggestions(['ab', 'ac', 'ad'], 'a', 2), ['ab', 'ac']);
});

test('metricOf and errorColumn', () => {
  assert.equal(metricOf('heap{job="a"}'), 'heap');
  assert.equal(metricOf(' allocs '), 'allocs');
  assert.equal(metricOf('{job="a", __name__="heap"}'), 'heap');
  assert.equal(metricOf('{job="a"}'), '');
  assert.equal(errorColumn('invalid parameter "query": 1:10: parse error: unexpected end of input inside braces'), 10);
  assert.equal(errorColumn('1:1: parse error: x'), 1);
  assert.equal(errorColumn('something else'), 0);
});

// ---------------------------------------------------------------- time range and history

test('parseDuration and formatDurationShort', () => {
  assert.equal(parseDuration('15m'), 15 * 60e3);
  assert.equal(parseDuration('1h30m'), 5400e3);
  assert.equal(parseDuration('7d'), 7 * 86400e3);
  assert.equal(parseDuration('500ms'), 500);
  assert.ok(Number.isNaN(parseDuration('soon')));
  assert.ok(Number.isNaN(parseDuration('')));
  assert.ok(Number.isNaN(parseDuration('1h x')));
  assert.equal(formatDurationShort(5400e3), '1h30m');
  assert.equal(formatDurationShort(86400e3 + 1000), '1d1s');
  assert.equal(formatDurationShort(0), '0s');
});

test('resolveRange', () => {
  const now = 1700000000000;
  assert.deepEqual(resolveRange({ range: '15m' }, now), { from: now - 900e3, to: now });
  assert.deepEqual(resolveRange({ range: null, from: 1, to: 2 }, now), { from: 1, to: 2 });
  assert.deepEqual(resolveRange({ range: null, from: null, to: null }, now), { from: now - 3600e3, to: now });
});

test('toLocalInput and fromLocalInput round-trip', () => {
  const ms = new Date(2026, 10, 22, 9, 5, 7).getTime();
  assert.equal(toLocalInput(ms), '2026-11-22T09:05:07');
  assert.equal(fromLocalInput('2026-11-22T09:05:07'), ms);
  assert.equal(fromLocalInput('2026-11-22T09:05'), ms - 7000);
  assert.ok(Number.isNaN(fromLocalInput('')));
});

test('toLocalInput and fromLocalInput in UTC', () => {
  setTimeZone('utc');
  try {
    const ms = Date.UTC(2026, 10, 22, 9, 5, 7);
    assert.equal(toLocalInput(ms), '2026-11-22T09:05:07');
    assert.equal(fromLocalInput('2026-11-22T09:05:07'), ms);
  } finally {
    setTimeZone('local');
  }
});

test('parseRangeText reads now-6h, 6h and now-2d to now-1d', () => {
  const now = 1e12;
  assert.deepEqual(parseRangeText('now-6h', now), { range: '6h' });
  assert.deepEqual(parseRangeText(' 90m ', now), { range: '1h30m' });
  assert.deepEqual(parseRangeText('now-6h to now', now), { range: '6h' });
  assert.deepEqual(parseRangeText('now-2d to now-1d', now), { from: now - 2 * 86400e3, to: now - 86400e3 });
  assert.deepEqual(parseRangeText('NOW - 1h', now), { range: '1h' });
  assert.match(parseRangeText('', now).error, /now-6h/);
  assert.match(parseRangeText('now', now).error, /"now" is not a time before now/);
  assert.match(parseRangeText('yesterday', now).error, /"yesterday" is not a time before now/);
  assert.match(parseRangeText('now-1h to now-2h', now).error, /ends before it starts/);
  assert.match(parseRangeText('now-1h to x', now).error, /"x" is not now or a time before it/);
  assert.match(parseRangeText('1h to now to now', now).error, /one "to" at most/);
});

test('rangeLimitOf reads the server\'s longest range from its refusal', () => {
  assert.equal(rangeLimitOf('invalid parameter "end": the range from start to end is 8w4d, longer than the limit of 4w3d; narrow it'), 31 * 86400e3);
  assert.equal(rangeLimitOf('parse error'), 0);
  assert.equal(rangeLimitOf(undefined), 0);
});

test('addHistory moves a query to the front, without duplicates', () => {
  assert.deepEqual(addHistory(['a', 'b', 'c'], 'b'), ['b', 'a', 'c']);
  assert.deepEqual(addHistory(['a'], '  '), ['a']);
  assert.deepEqual(addHistory(['a', 'b'], 'c', 2), ['c', 'a']);
});

// ---------------------------------------------------------------- targets, status

const T = (pool, health, instance, type, extra = {}) => ({
  scrapePool: pool, health, profileType: type, scrapeUrl: `http://${instance}/debug/pprof/${type}`,
  lastError: health === 'down' ? 'connection refused' : '',
  labels: { __name__: type, instance, job: pool }, discoveredLabels: { __address__: instance }, ...extra,
});

test('targetMatches filters by health and words', () => {
  const t = T('api', 'down', '10.0.0.1:80', 'heap');
  assert.ok(targetMatches(t, { health: '', text: '' }));
  assert.ok(targetMatches(t, { health: 'down', text: 'refused' }));
  assert.ok(!targetMatches(t, { health: 'up', text: '' }));
  assert.ok(targetMatches(t, { text: 'job=api heap' }));
  assert.ok(targetMatches(t, { text: 'INSTANCE="10.0.0.1:80"' }));
  assert.ok(!targetMatches(t, { text: 'allocs' }));
});

test('groupByPool groups and counts', () => {
  const g = groupByPool([T('b', 'up', 'y:1', 'heap'), T('a', 'down', 'x:1', 'heap'),
    T('b', 'up', 'x:1', 'allocs'), T('b', 'down', 'x:1', 'heap')]);
  assert.deepEqual(g.map((p) => [p.pool, p.up, p.total]), [['b', 2, 3], ['a', 0, 1]]);
  assert.deepEqual(g[0].targets.map((t) => t.labels.instance + ' ' + t.profileType),
    ['x:1 allocs', 'x:1 heap', 'y:1 heap']);
});

test('formatSpan', () => {
  assert.equal(formatSpan(0, 0), 'empty');
  assert.match(formatSpan(1700000000000, 1700000060000), /\(1m 0s\)$/);
});

// ---------------------------------------------------------------- zoom and view carry-over

test('appliedZoom: kept inside the range, clamped across its edge, dropped outside or whole', () => {
  assert.deepEqual(appliedZoom({ from: 2000, to: 3000 }, 1000, 9000), { from: 2000, to: 3000 });
  assert.deepEqual(appliedZoom({ from: 500, to: 3000 }, 1000, 9000), { from: 1000, to: 3000 });
  assert.equal(appliedZoom({ from: 10, to: 20 }, 1000, 9000), null); // a URL of another time
  assert.equal(appliedZoom({ from: 500, to: 9500 }, 1000, 9000), null); // the whole range
  assert.equal(appliedZoom(null, 1000, 9000), null);
});

test('carryView: the whole view for the same profile types, else only the sample type', () => {
  const heap = { mode: 'single', query: 'heap{job="a"}', time: 1 };
  const heap2 = { mode: 'single', query: 'heap{job="b"}', time: 2 };
  const diff = { mode: 'diff', a: { query: 'heap{job="a"}', time: 1 }, b: { query: 'heap{job="a"}', time: 2 } };
  const gor = { mode: 'single', query: 'goroutine{job="a"}', time: 3 };
  const view = { sampleIndex: 'alloc_space', focus: 'main.f', sort: 'cum' };
  assert.deepEqual(carryView(view, heap, heap2, 'alloc_space'), { view, sampleType: '' });
  // a diff of the same type: the chosen sample type goes along, the rest does not
  assert.deepEqual(carryView(view, heap, diff, 'alloc_space'), { view: {}, sampleType: 'alloc_space' });
  assert.deepEqual(carryView(view, heap, gor, ''), { view: {}, sampleType: 'alloc_space' });
  // the user's last choice outlives a profile that did not have it (the view lost it)
  assert.deepEqual(carryView({}, gor, heap, 'alloc_space'), { view: {}, sampleType: 'alloc_space' });
  assert.deepEqual(carryView({}, gor, { ...gor, time: 4 }, 'alloc_space'), { view: {}, sampleType: 'alloc_space' });
  // an index is no name: it does not carry
  assert.deepEqual(carryView({ sampleIndex: '1' }, heap, gor, ''), { view: {}, sampleType: '' });
  assert.deepEqual(carryView({}, null, heap, ''), { view: {}, sampleType: '' });
});

test('SHORTCUTS list the query page, the timeline and the flame graph', () => {
  const sections = SHORTCUTS.map(([s]) => s).join(' | ');
  for (const s of ['Query page', 'Timeline', 'Flame graph']) assert.match(sections, new RegExp(s));
  for (const [, rows] of SHORTCUTS) for (const [k, what] of rows) assert.ok(k && what);
});

test('the landing page (no query) shows the last 15 minutes, and says so', () => {
  assert.equal(decodeState('').range, '15m');
  assert.equal(decodeState('?range=6h').range, '6h');
  assert.equal(decodeState('?query=heap').range, '1h');
  assert.equal(rangeWords(decodeState('')), 'the last 15 minutes');
  assert.equal(rangeWords({ range: '1h' }), 'the last hour');
  assert.equal(rangeWords({ range: '24h' }), 'the last 24 hours');
  assert.equal(rangeWords({ range: '7d' }), 'the last 7 days');
  assert.equal(rangeWords({ range: '1h30m' }), 'the last 1h30m');
  assert.match(rangeWords({ range: null, from: 0, to: 3600e3 }), /^from \d{4}-\d\d-\d\d \d\d:\d\d:\d\d to /);
});

test('encodeState/decodeState round-trip nasty selectors', () => {
  const sels = [
    'heap{job="q\\"uo\\nte <b>&amp; + ü 🙂 {x=~\\"y\\"}"}',
    'heap{job=~"a|b.*", instance!~"x+y&z=1#2"}',
    "heap{job='it''s'}",
    '{__name__="my-type", a="%41%2B%"}',
    'heap{a="\\u00e9 \\t 100% + / ? [ ] @"}',
  ];
  for (const q of sels) {
    const st = { query: q, range: '1h', from: null, to: null, live: false, zoom: null,
      chart: '', group: '', tagFocus: q, open: { mode: 'diff', a: { query: q, time: 1 }, b: { query: q + ' ', start: 2, end: 3 } },
      view: { search: q, filter: '+&=' }, filters: { focus: q }, gran: '', normalize: false };
    const s = encodeState(st);
    assert.ok(!/[&#+ ]/.test(s.replace(/&(?=[a-z._]+=)/g, '')), s); // only separators are raw
    assert.deepEqual(decodeState('?' + s), st, s);
    // the URL parser's percent-encoding (what location.search holds) changes nothing
    assert.deepEqual(decodeState(new URL('/?' + s, 'http://x').search), st, s);
  }
});

test('stepTime moves from the profile shown, stored or the latest before the time', () => {
  const ts = [10, 20, 30];
  assert.equal(stepTime(ts, 20, 1), 30);
  assert.equal(stepTime(ts, 20, -1), 10);
  assert.equal(stepTime(ts, 30, 1), null);
  assert.equal(stepTime(ts, 10, -1), null);
  // 15 shows the profile at 10: next is 20 (not 30), previous is none before 10
  assert.equal(stepTime(ts, 15, 1), 20);
  assert.equal(stepTime(ts, 15, -1), null);
  assert.equal(stepTime(ts, 25, -1), 10);
  assert.equal(stepTime(ts, 5, 1), 10); // nothing shown before the first
  assert.equal(stepTime(ts, 5, -1), null);
  assert.equal(stepTime(ts, 35, -1), 20);
  assert.equal(stepTime([], 5, 1), null);
});

test('sameUrl compares as the browser encodes the location', () => {
  const url = '/?' + encodeState({ query: 'heap{job="a b"}', range: '1h', view: {} });
  const loc = new URL(url, 'http://x'); // what location holds after pushState(url)
  assert.notEqual(url, loc.pathname + loc.search); // '"' is %22 there
  assert.equal(sameUrl(url, loc), true);
  assert.equal(sameUrl(url, new URL('/?query=heap&range=1h', 'http://x')), false);
  assert.equal(sameUrl('/', { pathname: '/', search: '' }), true);
});

test('openRequest: a merge carries the group-by label, every request the sample-label filter', () => {
  const merge = { mode: 'merge', query: 'heap', start: 1, end: 2 };
  assert.equal(openRequest({ open: null, group: 'zone' }), null);
  assert.deepEqual(openRequest({ open: merge, group: 'zone', tagFocus: '' }), { ...merge, groupBy: 'zone' });
  assert.deepEqual(openRequest({ open: merge, group: '', tagFocus: 'a=b' }), { ...merge, tagFocus: 'a=b' });
  const single = { mode: 'single', query: 'heap{a="1"}', time: 5 };
  assert.deepEqual(openRequest({ open: single, group: 'zone', tagFocus: '' }), single, 'one profile has no groups');
  // the group shown is a view key, kept in the URL as group_pick
  const st = decodeState('?query=heap&open=merge&sel=heap&start=1&end=2&group=zone&group_pick=zone="a"');
  assert.equal(st.view.groupPick, 'zone="a"');
  assert.match(encodeState(st), /&group_pick=zone="a"$/);
});

test('openRequest: a merge and a diff with a merged side carry the aggregation (agg= in the URL)', () => {
  const st = decodeState('?query=heap&open=merge&sel=heap&start=1&end=2&agg=sum');
  assert.equal(st.view.aggregation, 'sum');
  assert.match(encodeState(st), /&agg=sum$/);
  assert.equal(openRequest(st).aggregation, 'sum');
  const avg = decodeState('?query=heap&open=diff&a.sel=heap&a.start=1&a.end=2&b.sel=heap&b.time=3&agg=avg');
  assert.equal(openRequest(avg).aggregation, 'avg');
  const single = decodeState('?query=heap&open=single&sel=heap&time=3&agg=avg');
  assert.equal(openRequest(single).aggregation, undefined, 'one profile is not aggregated');
  const bad = decodeState('?query=heap&open=merge&sel=heap&start=1&end=2&agg=median');
  assert.equal(openRequest(bad).aggregation, undefined, 'only sum and avg reach the API');
});

test('stack filters, granularity and normalize: kept in the URL, passed to the open request', () => {
  const st = decodeState('?query=heap&open=diff&a.sel=heap&a.time=1&b.sel=heap&b.time=2&f.focus=main%5C.&f.hide=runtime&gran=lines&normalize=1');
  assert.deepEqual(st.filters, { focus: 'main\\.', hide: 'runtime' });
  assert.equal(st.gran, 'lines');
  assert.equal(st.normalize, true);
  const back = decodeState('?' + encodeState(st));
  assert.deepEqual([back.filters, back.gran, back.normalize], [st.filters, 'lines', true]);
  const req = openRequest(st);
  assert.deepEqual(req.filters, { focus: 'main\\.', hide: 'runtime' });
  assert.equal(req.granularity, 'lines');
  assert.equal(req.normalize, true);
  const merge = openRequest(decodeState('?query=heap&open=merge&sel=heap&start=1&end=2&normalize=1&gran=bogus'));
  assert.equal(merge.normalize, undefined, 'normalize is for diffs');
  assert.equal(merge.granularity, undefined, 'an unknown granularity is dropped');
  assert.equal(openRequest(decodeState('?query=heap&open=single&sel=heap&time=1')).filters, undefined);
});
