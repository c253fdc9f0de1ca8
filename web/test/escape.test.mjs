// Unit tests of the HTML the UI builds from API strings: function names, sample type
// units and label values come from profiles anyone may push, so none may turn into markup.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rowHtml, esc } from '../js/top.js';
import { tipHtml, escapeHtml as flameEscape } from '../js/flame.js';
import { escapeHtml } from '../js/timeline.js';

const EVIL = '<img src=x onerror=alert(1)>';
const NASTY = `a"b'c<d>&e\nf ü 🙂`;

// No tag but the ones the template itself writes.
function tags(html) {
  return [...html.matchAll(/<\s*([a-zA-Z]+)/g)].map((m) => m[1].toLowerCase());
}

test('every escaper turns markup characters into entities', () => {
  for (const f of [esc, flameEscape, escapeHtml]) {
    assert.equal(f(NASTY), 'a&quot;b&#39;c&lt;d&gt;&amp;e\nf ü 🙂');
    assert.equal(f(EVIL).includes('<'), false);
  }
});

test('top rows escape the name, the unit and the inline mark', () => {
  const r = { name: EVIL, inline: EVIL, flat: 5, flatPercent: 50, sumPercent: 50, cum: 7, cumPercent: 70 };
  for (const diff of [false, true]) {
    const html = rowHtml(r, EVIL, diff, EVIL);
    assert.deepEqual([...new Set(tags(html))].sort(), ['button', 'span', 'td', 'tr'], html);
    assert.ok(html.includes('&lt;img src=x onerror=alert(1)&gt;'));
    assert.ok(html.includes('class="pf-focus'), 'the focused row is still marked');
  }
  // a known unit is formatted as before
  const ok = rowHtml({ name: 'main.f', flat: 2048, flatPercent: 1, sumPercent: 1, cum: 2048, cumPercent: 1 }, 'bytes', false, '');
  assert.ok(ok.includes('<td class="num">2 kB</td>'), ok);
  assert.ok(!ok.includes('pf-inline'));
});

test('flame tooltips escape the frame name and the unit', () => {
  const node = { name: EVIL, self: 1, total: 3, baseSelf: 2, baseTotal: 4 };
  const tree = { name: 'root', self: 0, total: 10, baseTotal: 8 };
  for (const diff of [false, true]) {
    const html = tipHtml({ node, name: NASTY, dim: false }, tree, EVIL, diff);
    assert.deepEqual([...new Set(tags(html))].sort(),
      (diff ? ['b', 'div', 'span', 'table', 'td', 'th', 'tr'] : ['div', 'span', 'table', 'td', 'th', 'tr']), html);
    assert.ok(html.includes('a&quot;b&#39;c&lt;d&gt;&amp;e'));
  }
  const html = tipHtml({ node: { name: 'f', self: 0, total: 0 }, name: 'f' }, { total: 0 }, 'bytes', false);
  assert.ok(html.includes('0 B') && !html.includes('NaN'), html);
});
