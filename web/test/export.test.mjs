// Unit tests of export.js's pure parts: the flame graph as SVG (one frame group per
// laid-out frame, the canvas's colours and labels, the zoom's dimmed ancestors, the
// search's highlight, names escaped) and file names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { flameSvg, xmlEscape, svgFileName } from '../js/export.js';
import { layoutFlame, frameColor, diffColor, combineDiff, ROW_H, SEARCH_COLORS } from '../js/flame.js';

const n = (name, self, children = []) => ({
  name, self, total: self + children.reduce((s, c) => s + c.total, 0), children,
});

function tree() {
  return n('root', 0, [
    n('main.a', 20, [n('main.<T>&"x"', 0, [n('main.leaf', 40)])]),
    n('pkg/b.B', 0, [n('main.y', 30)]),
  ]);
}

const frames = (svg) => svg.match(/<g class="frame"/g) || [];

test('xmlEscape escapes markup and drops what XML forbids', () => {
  assert.equal(xmlEscape(`<a href="x">&'</a>`), '&lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;');
  assert.equal(xmlEscape('a\u0001b\tc'), 'a\ufffdb\tc');
});

test('every laid-out frame is one group with its rect, title and colour', () => {
  const layout = layoutFlame(tree(), { width: 900 });
  const svg = flameSvg(layout, { width: 900, charW: 7 });
  assert.equal(frames(svg).length, layout.rects.length);
  assert.equal((svg.match(/<rect x=/g) || []).length, layout.rects.length);
  assert.match(svg, /^<\?xml version="1.0" encoding="UTF-8"\?>\n<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="900" height="72"/);
  assert.match(svg, /<style>text \{ font: 11.5px/);
  // names escaped, in the title and the label
  assert.match(svg, /<title>main.&lt;T&gt;&amp;&quot;x&quot;<\/title>/);
  assert.doesNotMatch(svg, /<T>/);
  // the root spans the width, in its colour, with its label
  const root = frameColor('root', false);
  assert.match(svg, new RegExp(`<title>root</title><rect x="0" y="0" width="899" height="${ROW_H - 1}" fill="${root.fill.replace(/[()]/g, '\\$&')}"/><text x="3" y="${ROW_H / 2}" fill="${root.text}">root</text>`));
  const dark = flameSvg(layout, { width: 900, dark: true });
  assert.match(dark, new RegExp(`fill="${frameColor('main.leaf', true).fill.replace(/[()]/g, '\\$&')}"`));
  assert.match(dark, /data-theme="dark"/);
});

test('a zoomed layout: dimmed ancestors, the zoomed frame full width', () => {
  const layout = layoutFlame(tree(), { width: 400, zoom: ['main.a'] });
  const svg = flameSvg(layout, { width: 400, charW: 7 });
  assert.equal(frames(svg).length, layout.rects.length);
  assert.equal(frames(svg).length, 4); // root (dim), main.a, x, leaf
  assert.match(svg, /<g class="frame" opacity="0.45"><title>root<\/title>/);
  assert.match(svg, /<title>main.a<\/title><rect x="0" y="18" width="399"/);
  assert.doesNotMatch(svg, /pkg\/b.B/);
});

test('search: matches highlighted, the rest faded; narrow frames have no label', () => {
  const layout = layoutFlame(tree(), { width: 300 });
  const svg = flameSvg(layout, { width: 300, charW: 7, match: (s) => s === 'main.y' });
  assert.match(svg, new RegExp(`<g class="frame"><title>main.y</title><rect [^>]*fill="${SEARCH_COLORS.light.fill.replace(/[()]/g, '\\$&')}"`));
  assert.match(svg, /<g class="frame" opacity="0.5"><title>main.a<\/title>/);
  const narrow = flameSvg(layoutFlame(tree(), { width: 20 }), { width: 20, charW: 7 });
  assert.equal((narrow.match(/<text /g) || []).length, 0);
});

test('a diff is coloured by change', () => {
  const d = combineDiff(tree(), n('root', 0, [n('main.a', 60)]));
  const layout = layoutFlame(d, { width: 500, value: (x) => x.width });
  const svg = flameSvg(layout, { width: 500, diff: true });
  const r = layout.rects.find((x) => x.name === 'main.a');
  assert.match(svg, new RegExp(`fill="${diffColor(r.node.baseTotal, r.node.total, false).fill.replace(/[()]/g, '\\$&')}"`));
});

test('file names', () => {
  assert.equal(svgFileName('heap', 'inuse_space', 'flame'), 'heap-inuse_space-flame.svg');
  assert.equal(svgFileName('a b/c', ''), 'a_b_c.svg');
  assert.equal(svgFileName(), 'flamegraph.svg');
});
