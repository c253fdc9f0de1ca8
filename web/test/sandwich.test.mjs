// Unit tests of sandwich.js's pure parts (callers and callees trees, recursion counted
// once, the runtime collapse, diff trees) and of flame.js's orientation (rowTop, hit
// tests with the root at the bottom).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  calleesTree, callersTree, pivotValues, collapseRuntime, isRuntimeFrame, frameCount,
} from '../js/sandwich.js';
import { layoutFlame, indexByDepth, hitTest, rowTop, combineDiff, ROW_H } from '../js/flame.js';

const n = (name, self, children = []) => ({
  name, self, total: self + children.reduce((s, c) => s + c.total, 0), children,
});
const kid = (node, name) => (node.children || []).find((c) => c.name === name);
const names = (node) => (node.children || []).map((c) => `${c.name}=${c.total}`);

// Stacks (root first) and their values:
//   main.a → main.f → main.g          10
//   main.a → main.f → main.f → main.h  5   (recursion: f on the stack twice)
//   main.b → main.f                    7   (f's self)
//   main.b → main.g                    3
//   main.f                             2   (f called from the root)
function sample() {
  return n('root', 0, [
    n('main.a', 0, [n('main.f', 0, [n('main.g', 10), n('main.f', 0, [n('main.h', 5)])])]),
    n('main.b', 0, [n('main.f', 7), n('main.g', 3)]),
    n('main.f', 2),
  ]);
}

test('pivot values: cum counts a stack once (outermost f), flat sums every f frame', () => {
  const v = pivotValues(sample(), 'main.f');
  // stacks with f: 10 + 5 + 7 + 2 = 24 (not 29: the recursive stack counts once)
  assert.equal(v.cum, 24);
  assert.equal(v.flat, 9);
  assert.equal(pivotValues(sample(), 'main.g').cum, 13);
  assert.equal(pivotValues(sample(), 'nope').cum, 0);
});

test('callees: the outermost subtrees of the pivot merged, recursion shown once', () => {
  const t = calleesTree(sample(), 'main.f');
  assert.equal(t.name, 'main.f');
  assert.equal(t.total, 24, 'the pivot\'s total is its cum');
  assert.equal(t.self, 9, 'self: 7 (under b) + 2 (at the root); the inner f\'s self is its own');
  assert.deepEqual(names(t), ['main.g=10', 'main.f=5']);
  assert.deepEqual(names(kid(t, 'main.f')), ['main.h=5']);
  assert.equal(t.total, t.self + t.children.reduce((s, c) => s + c.total, 0));
  assert.equal(calleesTree(sample(), 'nope'), null);
});

test('callers: the pivot at the root, its callers as children, values of the pivot', () => {
  const t = callersTree(sample(), 'main.f');
  assert.equal(t.name, 'main.f');
  assert.equal(t.total, 24);
  // direct callers of the outermost f: a (15), b (7); at the root itself: 2 (self)
  assert.deepEqual(names(t), ['main.a=15', 'main.b=7']);
  assert.equal(t.self, 2, 'stacks where f has no caller');
  assert.equal(kid(t, 'main.a').self, 15, 'main.a is called by nothing');
  assert.equal(kid(t, 'main.a').children.length, 0, 'the recursive f is not its own caller');
  assert.equal(t.total, t.self + t.children.reduce((s, c) => s + c.total, 0));
});

test('callers: chains of callers go up to the root, merged by name', () => {
  const t = n('root', 0, [
    n('main.main', 0, [n('main.x', 0, [n('main.leaf', 4)]), n('main.y', 0, [n('main.x', 0, [n('main.leaf', 6)])])]),
  ]);
  const c = callersTree(t, 'main.leaf');
  assert.deepEqual(names(c), ['main.x=10']);
  const x = kid(c, 'main.x');
  assert.deepEqual(names(x), ['main.y=6', 'main.main=4']);
  assert.deepEqual(names(kid(x, 'main.y')), ['main.main=6']);
  assert.equal(x.self, 0);
  assert.equal(kid(x, 'main.main').self, 4);
});

test('sandwich of a diff tree: both sides, widths, outermost occurrence', () => {
  const a = n('root', 0, [n('main.a', 0, [n('main.f', 4, [n('main.f', 2)])])]);
  const b = n('root', 0, [n('main.a', 0, [n('main.f', 1)]), n('main.b', 0, [n('main.f', 5)])]);
  const d = combineDiff(a, b);
  const callees = calleesTree(d, 'main.f');
  assert.equal(callees.total, 6);
  assert.equal(callees.baseTotal, 6);
  assert.equal(callees.self, 6);
  assert.equal(callees.baseSelf, 4);
  assert.equal(callees.width, 6 + 2, 'the larger self of the two sides plus the children\'s widths');
  const callers = callersTree(d, 'main.f');
  assert.deepEqual(callers.children.map((c) => [c.name, c.baseTotal, c.total]), [['main.a', 6, 1], ['main.b', 0, 5]]);
  assert.equal(callers.width, 6 + 5);
  const v = pivotValues(d, 'main.f');
  assert.deepEqual(v, { flat: 6, cum: 6, baseFlat: 6, baseCum: 6 });
});

test('the input tree is left as it is', () => {
  const t = sample();
  const before = JSON.stringify(t);
  calleesTree(t, 'main.f');
  callersTree(t, 'main.f');
  collapseRuntime(t);
  assert.equal(JSON.stringify(t), before);
});

test('runtime frames: package runtime only', () => {
  assert.ok(isRuntimeFrame('runtime.mallocgc'));
  assert.ok(isRuntimeFrame('runtime.(*mheap).alloc'));
  assert.ok(!isRuntimeFrame('runtime/pprof.Do'));
  assert.ok(!isRuntimeFrame('main.runtime'));
});

test('collapse: a run of runtime frames folds into its first, totals unchanged', () => {
  // root → main.main → runtime.newobject → runtime.mallocgc → runtime.nextFree (3)
  //                                        runtime.mallocgc (self 2)
  //      → main.main → runtime.makeslice → main.cb (a callback under the run) (4)
  //      → runtime.main → main.main → main.w (5)
  const t = n('root', 0, [
    n('main.main', 1, [
      n('runtime.newobject', 0, [n('runtime.mallocgc', 2, [n('runtime.nextFree', 3)])]),
      n('runtime.makeslice', 0, [n('runtime.growslice', 0, [n('main.cb', 4)])]),
    ]),
    n('runtime.main', 0, [n('main.main', 0, [n('main.w', 5)])]),
  ]);
  const c = collapseRuntime(t);
  assert.equal(c.total, t.total);
  const mm = kid(c, 'main.main');
  const nw = kid(mm, 'runtime.newobject');
  assert.equal(nw.total, 5);
  assert.equal(nw.self, 5, 'the folded frames\' self goes to the run\'s first frame');
  assert.deepEqual(nw.collapsed, ['runtime.mallocgc', 'runtime.nextFree']);
  assert.equal(nw.children.length, 0);
  const ms = kid(mm, 'runtime.makeslice');
  assert.deepEqual(names(ms), ['main.cb=4'], 'a non-runtime frame under a run stays, as the run\'s child');
  assert.deepEqual(ms.collapsed, ['runtime.growslice']);
  const rm = kid(c, 'runtime.main');
  assert.equal(rm.collapsed, undefined, 'nothing folded: no runtime frame below it');
  assert.deepEqual(names(kid(rm, 'main.main')), ['main.w=5']);
  assert.equal(frameCount(t), 10);
  assert.equal(frameCount(c), 7);
  // every node's total is still its self plus its children's
  const check = (x) => {
    assert.equal(x.total, x.self + x.children.reduce((s, k) => s + k.total, 0), x.name);
    x.children.forEach(check);
  };
  check(c);
});

test('collapse: non-runtime children of several folded frames merge by name', () => {
  const t = n('root', 0, [n('runtime.a', 0, [
    n('runtime.b', 1, [n('main.cb', 2, [n('main.x', 1)])]),
    n('runtime.c', 0, [n('main.cb', 3)]),
  ])]);
  const c = collapseRuntime(t);
  const a = kid(c, 'runtime.a');
  assert.deepEqual(names(a), ['main.cb=6']);
  assert.equal(kid(a, 'main.cb').self, 5);
  assert.deepEqual(names(kid(a, 'main.cb')), ['main.x=1']);
  assert.equal(a.self, 1);
});

test('collapse of a diff tree keeps both sides and recomputes widths', () => {
  const a = n('root', 0, [n('runtime.a', 1, [n('runtime.b', 2)])]);
  const b = n('root', 0, [n('runtime.a', 0, [n('runtime.b', 5)])]);
  const c = collapseRuntime(combineDiff(a, b));
  const r = kid(c, 'runtime.a');
  assert.deepEqual([r.baseSelf, r.self, r.baseTotal, r.total, r.width], [3, 5, 3, 5, 5]);
  assert.equal(c.width, 5);
});

test('orientation: rowTop puts the root at the top (icicle) or the bottom (flame)', () => {
  assert.equal(rowTop(0, 4, false), 0);
  assert.equal(rowTop(3, 4, false), 3 * ROW_H);
  assert.equal(rowTop(0, 4, true), 3 * ROW_H);
  assert.equal(rowTop(3, 4, true), 0);
});

test('orientation: hit tests find the same frame where each orientation draws it', () => {
  const t = sample();
  const { rects, depths } = layoutFlame(t, { width: 240 });
  const rows = indexByDepth(rects);
  for (let i = 0; i < rects.length; i++) {
    const r = rects[i];
    const x = r.x + r.w / 2;
    const yIcicle = rowTop(r.depth, depths, false) + ROW_H / 2;
    const yFlame = rowTop(r.depth, depths, true) + ROW_H / 2;
    assert.equal(hitTest(rects, rows, x, yIcicle, ROW_H, false, depths), i, `${r.name} icicle`);
    assert.equal(hitTest(rects, rows, x, yFlame, ROW_H, true, depths), i, `${r.name} flame`);
  }
  // the flame graph's bottom row is the root, its top row the deepest frames
  const bottom = (depths - 1) * ROW_H + 1;
  assert.equal(rects[hitTest(rects, rows, 1, bottom, ROW_H, true, depths)].name, 'root');
  assert.notEqual(hitTest(rects, rows, 1, bottom, ROW_H, false, depths), 0, 'the icicle\'s bottom row is not the root');
  assert.equal(hitTest(rects, rows, 1, 1, ROW_H, false, depths), 0, 'the icicle\'s top row is the root');
  assert.equal(hitTest(rects, rows, 1, depths * ROW_H + 1, ROW_H, true, depths), -1, 'below the root');
  assert.equal(hitTest(rects, rows, 1, -1, ROW_H, true, depths), -1, 'above the top');
});
