// Unit tests of callgraph.js's pure parts: a node's function from its tooltip, and
// the pan and zoom arithmetic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nodeName, zoomAt, fitView } from '../js/callgraph.js';

test('nodeName takes the function from "name (cum)"', () => {
  assert.equal(nodeName('main.leaker (5646.26kB)'), 'main.leaker');
  assert.equal(nodeName('runtime/pprof.Do (6158.27kB)'), 'runtime/pprof.Do');
  // parentheses inside the name stay; only the last "(value)" goes
  assert.equal(nodeName('main.(*T).Run (10ms)'), 'main.(*T).Run');
  assert.equal(nodeName('std::vector<int>::push_back(int) (1s)'), 'std::vector<int>::push_back(int)');
  assert.equal(nodeName('<unknown>'), '<unknown>');
  assert.equal(nodeName(''), '');
  assert.equal(nodeName(null), '');
});

test('zoomAt keeps the point under the pointer still', () => {
  const v = { x: 10, y: 20, k: 1 };
  const z = zoomAt(v, 2, 110, 70);
  assert.equal(z.k, 2);
  // the drawing point under (110, 70) before is (100, 50); after, it is still there
  assert.equal((110 - z.x) / z.k, 100);
  assert.equal((70 - z.y) / z.k, 50);
  const back = zoomAt(z, 0.5, 110, 70);
  assert.deepEqual(back, v);
});

test('zoomAt stays within its bounds', () => {
  assert.equal(zoomAt({ x: 0, y: 0, k: 1 }, 1000, 0, 0).k, 20);
  assert.equal(zoomAt({ x: 0, y: 0, k: 1 }, 0.0001, 0, 0).k, 0.05);
  assert.equal(zoomAt({ x: 0, y: 0, k: 1 }, 1000, 0, 0, 0.5, 3).k, 3);
});

test('fitView fits and centres, never enlarging', () => {
  assert.deepEqual(fitView(200, 100, 400, 400), { x: 100, y: 150, k: 1 });
  const f = fitView(800, 400, 400, 400);
  assert.equal(f.k, 0.5);
  assert.equal(f.x, 0);
  assert.equal(f.y, 100);
  assert.deepEqual(fitView(0, 0, 400, 400), { x: 0, y: 0, k: 1 });
});
