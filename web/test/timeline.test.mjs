// Unit tests of the timeline's pure helpers: label formatting, time ticks, time <-> pixel
// mapping, bucketing of marks, hit testing, zoom and pan.
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  formatLabels, seriesSelector, quoteLabelValue, isBareMetricName, timeTicks, timeToX, xToTime,
  bucketMarks, nearestMark, lowerBound, upperBound, zoomWindow, zoomInAnchor, panWindow, escapeHtml, fitWindow,
} from '../js/timeline.js';

const UTC = () => 0;

test('formatLabels prints a label set as Prometheus does', () => {
  assert.equal(formatLabels({ __name__: 'heap', job: 'api', instance: 'a:1' }),
    'heap{instance="a:1", job="api"}');
  assert.equal(formatLabels({ __name__: 'heap' }), 'heap');
  assert.equal(formatLabels({ job: 'api' }), '{job="api"}');
  assert.equal(formatLabels({}), '{}');
  assert.equal(formatLabels({ __name__: 'in use', job: 'api' }), '{__name__="in use", job="api"}');
  assert.equal(formatLabels({ __name__: 'bool' }), '{__name__="bool"}');
  assert.equal(formatLabels({ __name__: 'heap', b: '2', a: '1' }, ','), 'heap{a="1",b="2"}');
  assert.equal(seriesSelector({ __name__: 'heap', job: 'x' }), 'heap{job="x"}');
});

test('quoteLabelValue escapes as Go %q', () => {
  assert.equal(quoteLabelValue('a"b\\c'), '"a\\"b\\\\c"');
  assert.equal(quoteLabelValue('tab\there\nnl'), '"tab\\there\\nnl"');
  assert.equal(quoteLabelValue('\x01\x7f'), '"\\x01\\x7f"');
  assert.equal(quoteLabelValue('héllo ✓'), '"héllo ✓"');
  assert.equal(quoteLabelValue('a\u200bb\u00a0'), '"a\\u200bb\\u00a0"');
});

test('isBareMetricName', () => {
  assert.ok(isBareMetricName('heap'));
  assert.ok(isBareMetricName('a:b_c1'));
  assert.ok(!isBareMetricName('1heap'));
  assert.ok(!isBareMetricName('in use'));
  assert.ok(!isBareMetricName('NaN'));
});

test('timeTicks picks round steps at least minSpacing apart', () => {
  const from = Date.UTC(2026, 10, 22, 10, 0, 7);
  const to = from + 3600e3;
  const { step, ticks } = timeTicks(from, to, 1000, { offset: UTC, minSpacing: 80 });
  assert.equal(step, 5 * 60e3);
  assert.equal(ticks[0].label, '10:05');
  assert.equal(ticks[ticks.length - 1].label, '11:00');
  for (let i = 1; i < ticks.length; i++) {
    assert.ok(ticks[i].x - ticks[i - 1].x >= 80);
    assert.equal(ticks[i].t - ticks[i - 1].t, step);
  }
  for (const tk of ticks) assert.ok(tk.t >= from && tk.t <= to);
});

test('timeTicks labels seconds, midnights and days', () => {
  const from = Date.UTC(2026, 10, 22, 10, 0, 0);
  const sec = timeTicks(from, from + 60e3, 1200, { offset: UTC });
  assert.equal(sec.step, 5e3);
  assert.equal(sec.ticks[1].label, '10:00:05');
  const days = timeTicks(Date.UTC(2026, 10, 20), Date.UTC(2026, 10, 27), 1200, { offset: UTC });
  assert.equal(days.step, 12 * 3600e3);
  const mid = days.ticks.filter((t) => t.major);
  assert.equal(mid[0].label, 'Nov 20');
  assert.ok(days.ticks.some((t) => t.label === '12:00'));
  const across = timeTicks(Date.UTC(2026, 10, 22, 22), Date.UTC(2026, 10, 23, 2), 1000, { offset: UTC });
  assert.ok(across.ticks.some((t) => t.major && t.label === 'Nov 23'));
});

test('timeTicks aligns on the wall clock of the zone', () => {
  const plus1 = () => 3600e3; // UTC+1
  const from = Date.UTC(2026, 10, 22, 9, 50);
  const { ticks } = timeTicks(from, from + 6 * 3600e3, 600, { offset: plus1, minSpacing: 100 });
  // 1h steps: wall 11:00 is 10:00 UTC.
  assert.equal(ticks[0].label, '11:00');
  assert.equal(ticks[0].t, Date.UTC(2026, 10, 22, 10, 0));
});

test('timeTicks handles empty input', () => {
  assert.deepEqual(timeTicks(10, 10, 100).ticks, []);
  assert.deepEqual(timeTicks(0, 10, 0).ticks, []);
});

test('timeToX and xToTime invert each other', () => {
  assert.equal(timeToX(150, 100, 200, 1000), 500);
  assert.equal(xToTime(500, 100, 200, 1000), 150);
  assert.equal(xToTime(timeToX(123.5, 100, 200, 777), 100, 200, 777), 123.5);
});

test('lowerBound and upperBound', () => {
  const a = [1, 2, 2, 3, 5];
  assert.equal(lowerBound(a, 2), 1);
  assert.equal(upperBound(a, 2), 3);
  assert.equal(lowerBound(a, 0), 0);
  assert.equal(upperBound(a, 9), 5);
});

test('bucketMarks keeps one mark per pixel, standing for the latest', () => {
  const ts = [0, 1, 2, 50, 99, 100, 150];
  const m = bucketMarks(ts, 0, 100, 10); // 10 ms per pixel
  assert.deepEqual(m.map((b) => [b.px, b.count, b.index, b.t]),
    [[0, 3, 2, 2], [5, 1, 3, 50], [9, 2, 5, 100]]);
  assert.equal(m[0].x, 0.2);
  // Outside the window: nothing.
  assert.deepEqual(bucketMarks(ts, 200, 300, 10), []);
  assert.deepEqual(bucketMarks([], 0, 1, 10), []);
});

test('bucketMarks scales to many marks', () => {
  const ts = Array.from({ length: 200000 }, (_, i) => i * 3000);
  const m = bucketMarks(ts, 0, ts[ts.length - 1], 1200);
  assert.ok(m.length <= 1200);
  assert.equal(m.reduce((n, b) => n + b.count, 0), ts.length);
});

test('nearestMark finds the closest mark within reach', () => {
  const marks = [{ x: 10 }, { x: 20 }, { x: 40 }];
  assert.equal(nearestMark(marks, 14, 6).x, 10);
  assert.equal(nearestMark(marks, 16, 6).x, 20);
  assert.equal(nearestMark(marks, 30, 6), null);
  assert.equal(nearestMark(marks, 44, 6).x, 40);
  assert.equal(nearestMark([], 1, 6), null);
});

test('zoomWindow zooms around the anchor and stays inside the range', () => {
  assert.deepEqual(zoomWindow(0, 1000, 500, 0.5, 0, 1000, 10), [250, 750]);
  assert.deepEqual(zoomWindow(0, 1000, 0, 0.5, 0, 1000, 10), [0, 500]);
  assert.deepEqual(zoomWindow(250, 750, 500, 4, 0, 1000, 10), [0, 1000]);
  assert.deepEqual(zoomWindow(0, 100, 50, 0.01, 0, 1000, 10), [45, 55]);
});

test('panWindow moves and clamps', () => {
  assert.deepEqual(panWindow(100, 200, 50, 0, 1000), [150, 250]);
  assert.deepEqual(panWindow(100, 200, -500, 0, 1000), [0, 100]);
  assert.deepEqual(panWindow(800, 950, 500, 0, 1000), [850, 1000]);
});

test('escapeHtml', () => {
  assert.equal(escapeHtml('<a href="x">&\'</a>'), '&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;');
});

test('fitWindow: a window inside the range stays, one across its edge is clamped, one outside shows it all', () => {
  assert.deepEqual(fitWindow(2000, 3000, 1000, 9000), [2000, 3000]);
  assert.deepEqual(fitWindow(500, 3000, 1000, 9000), [1000, 3000]);
  assert.deepEqual(fitWindow(8000, 9500, 1000, 9000), [8000, 9000]);
  assert.deepEqual(fitWindow(10, 20, 1000, 9000), [1000, 9000]);
  assert.deepEqual(fitWindow(9500, 9900, 1000, 9000), [1000, 9000]);
  assert.deepEqual(fitWindow(5, 6, 0, 0), [5, 6]); // no range yet: as asked
});

test('zoomInAnchor: "+" keeps a profile in the window', () => {
  // a profile in the middle half: zoom about the middle
  assert.equal(zoomInAnchor(0, 1000, [[100, 600]]), 500);
  // none there: about the profile nearest the middle, whose place is kept
  assert.equal(zoomInAnchor(0, 1000, [[10, 900], [950]]), 900);
  const [f, t] = zoomWindow(0, 1000, zoomInAnchor(0, 1000, [[10, 900]]), 0.5, 0, 1000, 10);
  assert.ok(f <= 900 && 900 <= t, `the profile at 900 stays in [${f}, ${t}]`);
  // nothing in the window at all: the middle
  assert.equal(zoomInAnchor(0, 1000, [[2000]]), 500);
  assert.equal(zoomInAnchor(0, 1000, []), 500);
});
