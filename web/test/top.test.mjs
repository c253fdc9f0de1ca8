// Unit tests of top.js's pure parts: sort strings, sorting, filtering, running sums.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSort, nextSort, sortRows, filterRows, viewRows } from '../js/top.js';

// in pprof's order (|flat| descending, then name)
const rows = [
  { name: 'main.newRecord', flat: 500, flatPercent: 50, sumPercent: 50, cum: 500, cumPercent: 50 },
  { name: 'runtime.malg', flat: 300, flatPercent: 30, sumPercent: 80, cum: 300, cumPercent: 30 },
  { name: 'main.leaker', flat: 150, flatPercent: 15, sumPercent: 95, cum: 950, cumPercent: 95 },
  { name: 'fmt.Sprintf', flat: 50, flatPercent: 5, sumPercent: 100, cum: 50, cumPercent: 5 },
  { name: 'main.main', flat: 0, flatPercent: 0, sumPercent: 100, cum: 1000, cumPercent: 100 },
];
const names = (rs) => rs.map((r) => r.name);

test('parseSort', () => {
  assert.deepEqual(parseSort(''), { key: 'sum%', dir: 'asc' });
  assert.deepEqual(parseSort(undefined), { key: 'sum%', dir: 'asc' });
  assert.deepEqual(parseSort('cum'), { key: 'cum', dir: 'desc' });
  assert.deepEqual(parseSort('name'), { key: 'name', dir: 'asc' });
  assert.deepEqual(parseSort('flat:asc'), { key: 'flat', dir: 'asc' });
  assert.deepEqual(parseSort('bogus:desc'), { key: 'sum%', dir: 'asc' });
});

test('nextSort: natural direction first, then the other', () => {
  assert.equal(nextSort('', 'cum'), 'cum');
  assert.equal(nextSort('cum', 'cum'), 'cum:asc');
  assert.equal(nextSort('cum:asc', 'cum'), 'cum');
  assert.equal(nextSort('cum', 'name'), 'name');
  assert.equal(nextSort('name', 'name'), 'name:desc');
  assert.equal(nextSort('', 'sum%'), 'sum%:desc');
  assert.equal(nextSort('sum%:desc', 'sum%'), '');
});

test('default order is the API\'s (pprof\'s) order', () => {
  assert.deepEqual(names(sortRows(rows, '')), names(rows));
});

test('sort by cum, flat, name, both directions', () => {
  assert.deepEqual(names(sortRows(rows, 'cum')), ['main.main', 'main.leaker', 'main.newRecord', 'runtime.malg', 'fmt.Sprintf']);
  assert.deepEqual(names(sortRows(rows, 'cum:asc')), ['fmt.Sprintf', 'runtime.malg', 'main.newRecord', 'main.leaker', 'main.main']);
  assert.deepEqual(names(sortRows(rows, 'cum%')), names(sortRows(rows, 'cum')));
  assert.deepEqual(names(sortRows(rows, 'flat:asc')), ['main.main', 'fmt.Sprintf', 'main.leaker', 'runtime.malg', 'main.newRecord']);
  assert.deepEqual(names(sortRows(rows, 'name')), ['fmt.Sprintf', 'main.leaker', 'main.main', 'main.newRecord', 'runtime.malg']);
  assert.deepEqual(names(sortRows(rows, 'name:desc')), ['runtime.malg', 'main.newRecord', 'main.main', 'main.leaker', 'fmt.Sprintf']);
  assert.deepEqual(names(sortRows(rows, 'sum%:desc')), names(rows).reverse());
});

test('sorting keeps ties in the input order and does not change the input', () => {
  const tied = [{ name: 'b', flat: 1, cum: 5 }, { name: 'a', flat: 1, cum: 5 }, { name: 'c', flat: 2, cum: 5 }];
  const copy = JSON.stringify(tied);
  assert.deepEqual(names(sortRows(tied, 'cum')), ['b', 'a', 'c']);
  assert.deepEqual(names(sortRows(tied, 'flat')), ['c', 'b', 'a']);
  assert.equal(JSON.stringify(tied), copy);
});

test('a diff sorts by signed change: growth first, shrinkage last', () => {
  const d = [{ name: 'down', flat: -90, cum: -90 }, { name: 'up', flat: 40, cum: 40 }, { name: 'flat', flat: 0, cum: 10 }];
  assert.deepEqual(names(sortRows(d, 'flat')), ['up', 'flat', 'down']);
});

test('filter: substring or regex, case-insensitive', () => {
  assert.deepEqual(names(filterRows(rows, 'MAIN')), ['main.newRecord', 'main.leaker', 'main.main']);
  assert.deepEqual(names(filterRows(rows, '^main\\.(leaker|main)$')), ['main.leaker', 'main.main']);
  assert.deepEqual(names(filterRows(rows, 'Sprintf(')), []); // invalid regex → substring
  assert.deepEqual(names(filterRows(rows, '')), names(rows));
});

test('viewRows recomputes sum% over the rows shown', () => {
  const v = viewRows(rows, { filter: 'main', sort: 'cum' });
  assert.deepEqual(names(v), ['main.main', 'main.leaker', 'main.newRecord']);
  assert.deepEqual(v.map((r) => r.sumPercent), [0, 15, 65]);
  assert.equal(rows[1].sumPercent, 80, 'input unchanged');
  assert.deepEqual(viewRows(rows).map((r) => r.sumPercent), [50, 80, 95, 100, 100]);
  assert.deepEqual(viewRows(null), []);
});

test('a diff with each side: A, B, Δ, Δ% columns, each sortable', async () => {
  const { DIFF_COLUMNS, deltaPercent, rowHtml } = await import('../js/top.js');
  assert.deepEqual(DIFF_COLUMNS.map((c) => c.label), ['A', 'B', 'Δ', 'Δ%', 'Δ cum', 'name']);
  const rows = [
    { name: 'grew', flat: 50, cum: 50, baseFlat: 100, newFlat: 150 },
    { name: 'shrank', flat: -80, cum: -80, baseFlat: 100, newFlat: 20 },
    { name: 'new', flat: 10, cum: 10, baseFlat: 0, newFlat: 10 },
    { name: 'gone', flat: -5, cum: -5, baseFlat: 5, newFlat: 0 },
  ];
  assert.equal(deltaPercent(rows[0]), 50);
  assert.equal(deltaPercent(rows[1]), -80);
  assert.equal(deltaPercent(rows[2]), Infinity);
  assert.equal(deltaPercent(rows[3]), -100);
  const names = (rs) => rs.map((r) => r.name);
  assert.deepEqual(names(sortRows(rows, 'base')), ['grew', 'shrank', 'gone', 'new']);
  assert.deepEqual(names(sortRows(rows, 'new')), ['grew', 'shrank', 'new', 'gone']);
  assert.deepEqual(names(sortRows(rows, 'delta%')), ['new', 'grew', 'shrank', 'gone']);
  assert.deepEqual(names(sortRows(rows, 'delta%:asc')), ['gone', 'shrank', 'grew', 'new']);
  assert.deepEqual(parseSort('delta%'), { key: 'delta%', dir: 'desc' });
  const html = rowHtml(rows[2], 'bytes', true, '');
  const cells = [...html.matchAll(/<td class="num">([^<]*)<\/td>/g)].map((m) => m[1]);
  assert.deepEqual(cells, ['0 B', '10 B', '+10 B', 'new', '+10 B']);
  // without the sides' values (an older answer) the plain signed columns stay
  assert.equal([...rowHtml({ name: 'x', flat: 1, cum: 1, flatPercent: 1, cumPercent: 1, sumPercent: 1 }, 'bytes', true, '')
    .matchAll(/<td class="num/g)].length, 5);
});
