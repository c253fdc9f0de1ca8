// Unit tests of flame.js's pure parts: layout, zoom, culling, hit tests, diff trees,
// search matching and shares, colours and labels.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  layoutFlame, rectPath, indexByDepth, hitTest, combineDiff, compileMatcher, searchShare,
  hashString, packageOf, frameColor, diffColor, relativeChange, findPath, pathsTo, fitLabel,
  escapeRegExp, ROW_H,
} from '../js/flame.js';

const n = (name, self, children = []) => ({
  name, self, total: self + children.reduce((s, c) => s + c.total, 0), children,
});

// root 100: a 60 (a.x 40 (leaf 40), self 20), b 30 (b.y 30), tiny 0.1, self 9.9
function sample() {
  return n('root', 9.9, [
    n('main.a', 20, [n('main.x', 0, [n('main.leaf', 40)])]),
    n('pkg/b.B', 0, [n('main.y', 30)]),
    n('main.tiny', 0.1),
  ]);
}

test('layout: root full width, children left to right in order, widths proportional', () => {
  const t = sample();
  const { rects, depths, zoomNode } = layoutFlame(t, { width: 1000 });
  assert.equal(zoomNode, t);
  const by = Object.fromEntries(rects.map((r) => [r.name, r]));
  assert.equal(by.root.x, 0);
  assert.equal(by.root.w, 1000);
  assert.equal(by['main.a'].x, 0);
  assert.equal(by['main.a'].w, 600);
  assert.equal(by['pkg/b.B'].x, 600);
  assert.equal(by['pkg/b.B'].w, 300);
  assert.equal(by['main.y'].x, 600);
  assert.equal(by['main.leaf'].depth, 3);
  assert.equal(by['main.leaf'].w, 400);
  assert.equal(depths, 4);
  assert.ok(rects.every((r) => !r.dim));
});

test('layout: frames narrower than minWidth are culled, with their children', () => {
  const t = sample();
  const names = (o) => layoutFlame(t, { width: 1000, ...o }).rects.map((r) => r.name);
  assert.ok(names({ minWidth: 0.5 }).includes('main.tiny'));       // 1 px
  assert.ok(!names({ minWidth: 2 }).includes('main.tiny'));
  // at 10 px wide, b (3 px) stays but nothing under 4 px does with minWidth 4
  const narrow = names({ width: 10, minWidth: 4 });
  assert.deepEqual(narrow.sort(), ['main.a', 'main.leaf', 'main.x', 'root'].sort());
});

test('layout: zoom makes a frame full width, ancestors shown dimmed above', () => {
  const t = sample();
  const { rects, zoomPath } = layoutFlame(t, { width: 800, zoom: ['main.a', 'main.x'] });
  assert.deepEqual(zoomPath, ['main.a', 'main.x']);
  const by = Object.fromEntries(rects.map((r) => [r.name, r]));
  assert.equal(by.root.dim, true);
  assert.equal(by['main.a'].dim, true);
  assert.equal(by['main.a'].w, 800);
  assert.equal(by['main.x'].dim, false);
  assert.equal(by['main.x'].w, 800);
  assert.equal(by['main.x'].depth, 2);
  assert.equal(by['main.leaf'].w, 800);
  assert.ok(!('pkg/b.B' in by), 'siblings of the zoomed path are not drawn');
});

test('layout: an unknown zoom path zooms as far as it resolves', () => {
  const { zoomPath } = layoutFlame(sample(), { width: 100, zoom: ['main.a', 'nope'] });
  assert.deepEqual(zoomPath, ['main.a']);
});

test('layout: rects of a depth ascend in x; hit tests find them', () => {
  const { rects } = layoutFlame(sample(), { width: 1000 });
  const rows = indexByDepth(rects);
  for (const row of rows) {
    for (let i = 1; i < row.length; i++) assert.ok(rects[row[i]].x >= rects[row[i - 1]].x + rects[row[i - 1]].w - 1e-9);
  }
  const at = (x, d) => {
    const i = hitTest(rects, rows, x, d * ROW_H + 3);
    return i < 0 ? null : rects[i].name;
  };
  assert.equal(at(10, 0), 'root');
  assert.equal(at(599, 1), 'main.a');
  assert.equal(at(600, 1), 'pkg/b.B');
  assert.equal(at(950, 1), null); // self space of the root
  assert.equal(at(650, 2), 'main.y');
  assert.equal(at(10, 9), null);
  const leaf = rects.findIndex((r) => r.name === 'main.leaf');
  assert.deepEqual(rectPath(rects, leaf), ['main.a', 'main.x', 'main.leaf']);
  assert.deepEqual(rectPath(rects, 0), []);
});

test('layout: a deep recursion does not overflow the stack', () => {
  let t = n('f', 1);
  for (let i = 0; i < 5000; i++) t = n('f', 0, [t]);
  const { rects, depths } = layoutFlame(n('root', 0, [t]), { width: 100, maxDepth: 3000 });
  assert.equal(depths, 3000);
  assert.equal(rects.length, 3000);
});

test('findPath and pathsTo', () => {
  const t = sample();
  assert.equal(findPath(t, ['pkg/b.B', 'main.y']).total, 30);
  assert.equal(findPath(t, ['main.y']), null);
  assert.equal(findPath(t, []), t);
  assert.deepEqual(pathsTo(t, 'main.y'), [['pkg/b.B', 'main.y']]);
  const rec = n('root', 0, [n('f', 0, [n('f', 1)])]);
  assert.equal(pathsTo(rec, 'f').length, 2);
});

test('combineDiff joins the two trees by call path', () => {
  const a = n('root', 0, [n('main.a', 10, [n('main.gone', 5)]), n('main.same', 7)]);
  const b = n('root', 0, [n('main.a', 25), n('main.same', 7), n('main.new', 3)]);
  const d = combineDiff(a, b);
  assert.equal(d.total, 35);
  assert.equal(d.baseTotal, 22);
  const get = (p) => findPath(d, p);
  assert.deepEqual([get(['main.a']).baseTotal, get(['main.a']).total], [15, 25]);
  assert.deepEqual([get(['main.a']).baseSelf, get(['main.a']).self], [10, 25]);
  assert.deepEqual([get(['main.a', 'main.gone']).baseTotal, get(['main.a', 'main.gone']).total], [5, 0]);
  assert.deepEqual([get(['main.new']).baseTotal, get(['main.new']).total], [0, 3]);
  // widths: max of the two selves plus children, so removed frames keep their room
  assert.equal(get(['main.a', 'main.gone']).width, 5);
  assert.equal(get(['main.a']).width, 25 + 5);
  assert.equal(d.width, 30 + 7 + 3);
  // every child fits inside its parent
  const check = (x) => {
    assert.ok(x.children.reduce((s, c) => s + c.width, 0) <= x.width + 1e-9);
    x.children.forEach(check);
  };
  check(d);
  // children widest first
  assert.deepEqual(d.children.map((c) => c.name), ['main.a', 'main.same', 'main.new']);
});

test('combineDiff with a missing side', () => {
  const b = n('root', 0, [n('main.a', 4)]);
  const d = combineDiff(null, b);
  assert.equal(d.total, 4);
  assert.equal(d.baseTotal, 0);
  assert.equal(findPath(d, ['main.a']).baseTotal, 0);
  const d2 = combineDiff(b, null);
  assert.equal(d2.total, 0);
  assert.equal(d2.baseTotal, 4);
  assert.equal(d2.width, 4);
});

test('diff layout uses the combined widths', () => {
  const a = n('root', 0, [n('main.gone', 50)]);
  const b = n('root', 0, [n('main.new', 50)]);
  const d = combineDiff(a, b);
  const { rects } = layoutFlame(d, { width: 200, value: (x) => x.width });
  const by = Object.fromEntries(rects.map((r) => [r.name, r]));
  assert.equal(by['main.gone'].w, 100);
  assert.equal(by['main.new'].w, 100);
});

test('search: regex or substring, case-insensitive', () => {
  const m = compileMatcher('MAIN\\.(a|y)$');
  assert.ok(m('main.a'));
  assert.ok(m('main.y'));
  assert.ok(!m('main.ab'));
  const bad = compileMatcher('foo(');  // not a regular expression: substring
  assert.ok(bad('x.FOO(bar)'));
  assert.ok(!bad('foo'));
  assert.equal(compileMatcher('  '), null);
  const exact = new RegExp('^' + escapeRegExp('main.(*T).M') + '$');
  assert.ok(exact.test('main.(*T).M'));
  assert.ok(!exact.test('mainx(*T).M'));
});

test('search share counts each stack once (no double counting of nested matches)', () => {
  // recursion: f → f → f, each with self; total 10 + 20 + 30 = 60 in f, root 100
  const t = n('root', 0, [
    n('f', 10, [n('f', 20, [n('f', 30)])]),
    n('g', 25, [n('f', 15)]),
  ]);
  const s = searchShare(t, compileMatcher('^f$'));
  assert.equal(s.frames, 4);
  assert.equal(s.value, 60 + 15);
  assert.equal(searchShare(t, compileMatcher('f|g')).value, 100);
  assert.equal(searchShare(t, compileMatcher('root')).frames, 0);
  assert.equal(searchShare(t, compileMatcher('zzz')).value, 0);
  assert.deepEqual(searchShare(t, null), { frames: 0, value: 0, base: 0 });
});

test('search share on a diff tree adds the base side', () => {
  const d = combineDiff(n('root', 0, [n('f', 10, [n('f', 5)])]), n('root', 0, [n('f', 2)]));
  const s = searchShare(d, compileMatcher('f'));
  assert.equal(s.value, 2);
  assert.equal(s.base, 15);
});

test('colours are stable per function and share a hue per package', () => {
  assert.equal(hashString('main.work'), hashString('main.work'));
  assert.notEqual(hashString('main.work'), hashString('main.worl'));
  assert.equal(hashString(''), 0x811c9dc5);
  assert.deepEqual(frameColor('main.work'), frameColor('main.work'));
  const hue = (c) => Number(/hsl\((\d+)/.exec(c.fill)[1]);
  assert.equal(hue(frameColor('runtime.mallocgc')), hue(frameColor('runtime.gcBgMarkWorker')));
  assert.equal(hue(frameColor('github.com/a/b.(*T).M')), hue(frameColor('github.com/a/b.F')));
  for (const name of ['main.a', 'runtime.x', 'net/http.(*conn).serve', 'x', 'std::vector<int>::at']) {
    const h = hue(frameColor(name));
    assert.ok(h >= 0 && h <= 60, `${name}: warm hue, got ${h}`);
    assert.match(frameColor(name, true).fill, /^hsl\(/);
  }
  assert.equal(packageOf('runtime/pprof.Do'), 'runtime/pprof');
  assert.equal(packageOf('github.com/a/b.(*T).M'), 'github.com/a/b');
  assert.equal(packageOf('main.startNormal.func1'), 'main');
  assert.equal(packageOf('std::vector<int>::push_back'), 'std');
  assert.equal(packageOf('cmpbody'), 'cmpbody');
});

test('diff colours: red for growth, blue for shrinkage, stronger with change', () => {
  const hsl = (c) => /hsl\((\d+), (\d+)%, (\d+)%\)/.exec(c.fill).slice(1).map(Number);
  const [hUp, , lUpBig] = hsl(diffColor(10, 100));
  const [, , lUpSmall] = hsl(diffColor(90, 100));
  const [hDown] = hsl(diffColor(100, 10));
  assert.ok(hUp < 20, 'growth is red');
  assert.ok(hDown > 180 && hDown < 250, 'shrinkage is blue');
  assert.ok(lUpBig < lUpSmall, 'a larger change is more intense');
  assert.deepEqual(diffColor(50, 50), diffColor(7, 7));
  assert.equal(relativeChange(0, 5), 1);
  assert.equal(relativeChange(5, 0), -1);
  assert.equal(relativeChange(0, 0), 0);
  assert.equal(relativeChange(50, 100), 0.5);
});

test('labels fit the frame', () => {
  assert.equal(fitLabel('main.work', 20), 'main.work');
  assert.equal(fitLabel('github.com/acme/db.(*Conn).Query', 22), 'db.(*Conn).Query');
  assert.equal(fitLabel('github.com/acme/db.(*Conn).Query', 8), 'db.(*Co…');
  assert.equal(fitLabel('main.work', 1), '');
  assert.ok(fitLabel('abcdefghijklmnop', 5).length <= 5);
});
