// The flame graph: pure layout, search, diff and colour functions (importable in node
// without a DOM), and FlameView, which draws a call tree on a canvas with the root at
// the top (an icicle graph) or at the bottom (a flame graph), zoom on click, search
// highlighting, a tooltip and keyboard navigation.
//
// Trees are report=flamegraph's {name, self, total, children}. A diff tree
// (combineDiff) adds baseSelf/baseTotal (side a) to each node, whose self/total are
// side b's; a diff frame is as wide as `width`: the larger of its two sides' self plus
// its children's widths, so frames that shrank or disappeared in b still show.

import { formatValue, formatPercent } from './format.js';
import { watchDevicePixelRatio, TouchTip } from './timeline.js';

export const ROW_H = 18;        // CSS pixels per stack level
export const MIN_WIDTH = 0.75;  // frames narrower than this (CSS px) are not drawn
export const MAX_DEPTH = 1200;  // deeper levels are not drawn (canvas size limits)

// ---------------------------------------------------------------------------------
// Colours

// FNV-1a, 32 bits: a stable hash of a string.
export function hashString(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

// The package part of a function name: "runtime/pprof.Do" → "runtime/pprof",
// "github.com/a/b.(*T).M" → "github.com/a/b", "main.work.func1" → "main",
// "std::vector<int>::push_back" → "std"; a name without either is its own package.
export function packageOf(name) {
  const s = String(name);
  const slash = s.lastIndexOf('/');
  const dot = s.indexOf('.', slash + 1);
  if (dot > 0) return s.slice(0, dot);
  const colons = s.indexOf('::');
  if (colons > 0) return s.slice(0, colons);
  return slash > 0 ? s.slice(0, slash) : s;
}

function textOn(lightness) {
  return lightness >= 52 ? '#1b1b1b' : '#f4f4f4';
}

// A frame's colour, from a warm palette: the hue comes from the package (frames of one
// package share it), saturation and lightness vary a little with the function, so the
// same function is always the same colour. {fill, text} as CSS colours.
export function frameColor(name, dark = false) {
  if (name === 'root') {
    return dark ? { fill: 'hsl(30, 6%, 38%)', text: '#f4f4f4' } : { fill: 'hsl(30, 8%, 78%)', text: '#1b1b1b' };
  }
  const hp = hashString(packageOf(name));
  const hf = hashString(String(name));
  const hue = 4 + (hp % 48);                   // red .. orange .. amber
  const sat = 62 + ((hf >>> 8) % 20);          // 62..81 %
  const light = dark ? 36 + (hf % 10) : 60 + (hf % 12);
  return { fill: `hsl(${hue}, ${sat}%, ${light}%)`, text: textOn(light) };
}

// Relative change of a diff node in [-1, 1]: (b − a) / max(|a|, |b|).
export function relativeChange(base, value) {
  const m = Math.max(Math.abs(base), Math.abs(value));
  return m === 0 ? 0 : (value - base) / m;
}

// A diff frame's colour: red for growth, blue for shrinkage, grey when unchanged,
// stronger with the relative change.
export function diffColor(base, value, dark = false) {
  const r = relativeChange(base, value);
  const a = Math.min(1, Math.abs(r));
  if (a < 0.01) {
    return dark ? { fill: 'hsl(220, 5%, 40%)', text: '#f4f4f4' } : { fill: 'hsl(220, 6%, 82%)', text: '#1b1b1b' };
  }
  const hue = r > 0 ? 2 : 214;
  // light theme: pale to strong; dark theme: dull to vivid
  const sat = dark ? Math.round(14 + 62 * a) : 45 + Math.round(35 * a);
  const light = dark ? Math.round(30 + 14 * a) : Math.round(88 - 36 * a);
  return { fill: `hsl(${hue}, ${sat}%, ${light}%)`, text: textOn(light) };
}

// ---------------------------------------------------------------------------------
// Search

// The colour of frames the search matches.
export const SEARCH_COLORS = {
  light: { fill: 'hsl(282, 70%, 70%)', text: '#141414' },
  dark: { fill: 'hsl(282, 60%, 62%)', text: '#141414' },
};

// A case-insensitive matcher for a search string: a regular expression when it is
// one, else a substring. null for an empty search.
export function compileMatcher(query) {
  const q = (query || '').trim();
  if (!q) return null;
  let re;
  try {
    re = new RegExp(q, 'i');
  } catch (e) {
    const lower = q.toLowerCase();
    return (name) => String(name).toLowerCase().includes(lower);
  }
  return (name) => re.test(String(name));
}

export function escapeRegExp(s) {
  return String(s).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// How much of the profile the matching frames account for: every stack is counted
// once, however many matching frames it has (a match inside a match adds nothing).
// The root frame itself never matches. Returns {frames, value, base} with frames the
// number of matching frames, value the sum of `total` over outermost matches and base
// the same over `baseTotal` (diff trees; 0 otherwise).
export function searchShare(root, match) {
  const out = { frames: 0, value: 0, base: 0 };
  if (!root || !match) return out;
  const stack = [[root, false]];
  while (stack.length) {
    const [n, inside] = stack.pop();
    let now = inside;
    if (n !== root && match(n.name)) {
      out.frames++;
      if (!inside) {
        out.value += n.total || 0;
        out.base += n.baseTotal || 0;
        now = true;
      }
    }
    const ch = n.children || [];
    for (let i = ch.length - 1; i >= 0; i--) stack.push([ch[i], now]);
  }
  return out;
}

// ---------------------------------------------------------------------------------
// Tree helpers

// The node at a path of names below the root (the root for []), or null.
export function findPath(root, path) {
  let n = root;
  for (const name of path || []) {
    if (!n) return null;
    n = (n.children || []).find((c) => c.name === name) || null;
  }
  return n;
}

// Every path (array of names below the root) to a frame called `name`, at most `max`.
export function pathsTo(root, name, max = 2) {
  const out = [];
  if (!root) return out;
  const walk = (n, path) => {
    for (const c of n.children || []) {
      if (out.length >= max) return;
      const p = path.concat(c.name);
      if (c.name === name) out.push(p);
      walk(c, p);
    }
  };
  walk(root, []);
  return out;
}

// Combines the trees of two profiles by call path: b's self/total as the node's,
// a's as baseSelf/baseTotal, and `width` for the layout (see the top of this file).
// Either side may be null (nothing found): it counts as zero everywhere.
export function combineDiff(a, b) {
  const NONE = [];
  const merge = (A, B, name) => {
    const node = {
      name,
      self: B ? B.self || 0 : 0, total: B ? B.total || 0 : 0,
      baseSelf: A ? A.self || 0 : 0, baseTotal: A ? A.total || 0 : 0,
      children: [], width: 0,
    };
    const ac = (A && A.children) || NONE;
    const bc = (B && B.children) || NONE;
    const kids = node.children;
    if (!ac.length) {
      for (let i = 0; i < bc.length; i++) kids.push(merge(null, bc[i], bc[i].name));
    } else if (!bc.length) {
      for (let i = 0; i < ac.length; i++) kids.push(merge(ac[i], null, ac[i].name));
    } else {
      const inB = new Map();
      for (let i = 0; i < bc.length; i++) inB.set(bc[i].name, bc[i]);
      for (let i = 0; i < ac.length; i++) {
        const other = inB.get(ac[i].name);
        kids.push(merge(ac[i], other || null, ac[i].name));
        if (other) inB.delete(ac[i].name);
      }
      for (const c of inB.values()) kids.push(merge(null, c, c.name));
    }
    let w = Math.max(Math.abs(node.self), Math.abs(node.baseSelf));
    for (let i = 0; i < kids.length; i++) w += kids[i].width;
    node.width = w;
    if (kids.length > 1) kids.sort(byWidth);
    return node;
  };
  return merge(a || null, b || null, 'root');
}

function byWidth(x, y) {
  return y.width - x.width || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0);
}

// ---------------------------------------------------------------------------------
// Layout

// Lays out a tree for a canvas `width` CSS pixels wide, root at the top.
// opts.zoom: path of names of the frame zoomed into (it gets the full width and its
// ancestors are shown full width above it, `dim`); opts.minWidth: narrower frames
// (and their children) are left out; opts.scale: the share of the width the top
// frame spans (0 < scale <= 1, default 1: side by side, the smaller of two profiles is
// drawn narrower); opts.value(node): the number widths are
// proportional to (default |total|, use n => n.width for a diff tree).
// Returns {rects, depths, zoomNode, zoomPath}: rects [{node, name, depth, x, w, dim,
// parent}] in depth-first order (parent: index of the parent rect, -1 for the top),
// so rects of one depth ascend in x; depths: number of levels.
export function layoutFlame(root, opts = {}) {
  const width = opts.width || 0;
  const minWidth = opts.minWidth === undefined ? MIN_WIDTH : opts.minWidth;
  const val = opts.value || ((n) => Math.abs(n.total || 0));
  const maxDepth = opts.maxDepth || MAX_DEPTH;
  const full = width * (opts.scale > 0 && opts.scale < 1 ? opts.scale : 1);
  const rects = [];
  if (!root || width <= 0) return { rects, depths: 0, zoomNode: root || null, zoomPath: [] };

  // The chain from the root to the zoomed frame; an unknown path zooms as far as it goes.
  const chain = [root];
  const zoomPath = [];
  for (const name of opts.zoom || []) {
    const c = (chain[chain.length - 1].children || []).find((x) => x.name === name);
    if (!c) break;
    chain.push(c);
    zoomPath.push(name);
  }
  for (let i = 0; i < chain.length - 1; i++) {
    rects.push({ node: chain[i], name: chain[i].name, depth: i, x: 0, w: full, dim: true, parent: i - 1 });
  }
  const top = chain[chain.length - 1];
  const topV = val(top);
  const scale = topV > 0 ? full / topV : 0;
  let depths = chain.length;

  const stack = [[top, chain.length - 1, 0, chain.length - 2]];
  while (stack.length) {
    const [n, depth, x, parent] = stack.pop();
    const w = n === top ? full : val(n) * scale;
    if (n !== top && w < minWidth) continue;
    const idx = rects.length;
    rects.push({ node: n, name: n.name, depth, x, w, dim: false, parent });
    if (depth + 1 > depths - 1) depths = depth + 1;
    if (depth + 1 >= maxDepth) continue;
    const ch = n.children || [];
    // children start at the parent's left edge, in the tree's order
    const xs = new Array(ch.length);
    let cx = x;
    for (let i = 0; i < ch.length; i++) {
      xs[i] = cx;
      cx += val(ch[i]) * scale;
    }
    for (let i = ch.length - 1; i >= 0; i--) stack.push([ch[i], depth + 1, xs[i], idx]);
  }
  return { rects, depths, zoomNode: top, zoomPath };
}

// The path of names (below the root) of rects[i].
export function rectPath(rects, i) {
  const names = [];
  while (i >= 0 && rects[i].parent !== undefined) {
    names.push(rects[i].name);
    i = rects[i].parent;
  }
  names.pop(); // the root
  return names.reverse();
}

// Groups rect indices by depth (each list ascending in x) for hit tests.
export function indexByDepth(rects) {
  const rows = [];
  rects.forEach((r, i) => {
    (rows[r.depth] || (rows[r.depth] = [])).push(i);
  });
  return rows;
}

// The top (CSS pixels) of the row of stack level `depth`: the root's row at the top
// (icicle), or, when inverted, at the bottom of `depths` rows (flame).
export function rowTop(depth, depths, inverted = false, rowH = ROW_H) {
  return (inverted ? depths - 1 - depth : depth) * rowH;
}

// The index of the rect at (x, y) CSS pixels, or -1. inverted: the layout is drawn with
// the root at the bottom of `depths` rows (rowTop).
export function hitTest(rects, rows, x, y, rowH = ROW_H, inverted = false, depths = 0) {
  if (y < 0) return -1;
  const d = inverted ? depths - 1 - Math.floor(y / rowH) : Math.floor(y / rowH);
  const row = rows[d];
  if (!row) return -1;
  let lo = 0;
  let hi = row.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = rects[row[mid]];
    if (x < r.x) hi = mid - 1;
    else if (x >= r.x + r.w) lo = mid + 1;
    else return row[mid];
  }
  return -1;
}

// A label that fits `chars` characters: the whole name, else without its package
// path, else cut with "…"; '' when not even two characters fit.
export function fitLabel(name, chars) {
  if (chars < 2) return '';
  if (name.length <= chars) return name;
  const slash = name.lastIndexOf('/', name.indexOf('(') > 0 ? name.indexOf('(') : name.length);
  const short = slash >= 0 ? name.slice(slash + 1) : name;
  if (short.length <= chars) return short;
  return short.slice(0, chars - 1) + '…';
}

// Text for HTML: frame names and the unit come from the profile, which anyone may push.
export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

// The tooltip of a laid-out frame r (a rect of layoutFlame) of `tree`, as HTML; every
// name and formatted value escaped.
export function tipHtml(r, tree, unit, diff) {
  const n = r.node;
  const u = unit || '';
  const esc = escapeHtml;
  const val = (v, o) => esc(formatValue(v, u, o));
  const pct = (p, o) => esc(formatPercent(p, o));
  const row = (k, v) => `<tr><th>${k}</th><td>${v}</td></tr>`;
  let body = '';
  if (diff) {
    const baseTot = Math.abs(tree.baseTotal) || 0;
    const d = n.total - n.baseTotal;
    const dp = n.baseTotal ? pct((100 * d) / Math.abs(n.baseTotal), { sign: true }) : (n.total ? 'new' : '0%');
    body += row('base', `${val(n.baseTotal)} <span class="pf-muted">(${pct(baseTot ? (100 * n.baseTotal) / baseTot : 0)})</span>`);
    body += row('new', `${val(n.total)} <span class="pf-muted">(${pct(baseTot ? (100 * n.total) / baseTot : 0)} of base)</span>`);
    body += row('delta', `<b class="${d > 0 ? 'pf-up' : d < 0 ? 'pf-down' : ''}">${val(d, { sign: true })}</b> <span class="pf-muted">(${dp})</span>`);
    body += row('self', `${val(n.baseSelf)} → ${val(n.self)}`);
  } else {
    const tot = Math.abs(tree.total) || 0;
    const pc = (v) => pct(tot ? (100 * v) / tot : 0);
    body += row('total', `${val(n.total)} <span class="pf-muted">(${pc(n.total)})</span>`);
    body += row('self', `${val(n.self)} <span class="pf-muted">(${pc(n.self)})</span>`);
  }
  if (n.collapsed && n.collapsed.length) {
    const shown = n.collapsed.slice(0, 8).map(esc).join('<br>');
    const more = n.collapsed.length > 8 ? `<br>… ${n.collapsed.length - 8} more` : '';
    body += row('collapsed', `<span class="pf-tip-collapsed">${n.collapsed.length} runtime function${n.collapsed.length === 1 ? '' : 's'}:<br>${shown}${more}</span>`);
  }
  return `<div class="pf-tip-name">${esc(r.name)}</div><table>${body}</table>` +
    `<div class="pf-tip-hint pf-muted">${r.dim ? 'click: zoom out to here' : 'click: zoom in'}` +
    `${r.depth > 0 ? ' · right-click or S: sandwich' : ''}</div>`;
}

// ---------------------------------------------------------------------------------
// Drawing (browser only)

function isDarkTheme() {
  const t = document.documentElement.dataset.theme;
  if (t === 'dark') return true;
  if (t === 'light') return false;
  return !!(window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches);
}

function el(tag, attrs = {}, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// The labels' font; export.js's SVG uses it too.
export const FONT = '11.5px ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace';

// The flame graph widget: toolbar (search, result, reset), breadcrumbs and canvas.
// opts.onZoom(pathArray) and opts.onSearch(string) report the user's changes;
// opts.onContext(name) a right click (or the S key) on a frame; opts.id names the
// canvas (default 'flame'; its controls are ID-search, ID-reset, …); opts.inverted
// draws the root at the bottom; opts.toolbar === false leaves the search bar out.
export class FlameView {
  constructor(container, opts = {}) {
    this.opts = opts;
    this.tree = null;
    this.unit = '';
    this.diff = false;
    this.zoom = [];
    this.scaleShare = 1; // setScale
    this.search = '';
    this.match = null;
    this.matchCache = new Map();
    this.layout = { rects: [], depths: 0, zoomPath: [] };
    this.rows = [];
    this.hover = -1;
    this.sel = -1;
    this.dark = false;
    this.inverted = !!opts.inverted;
    const id = opts.id || 'flame';

    this.root = el('div', { class: 'pf-flame' });
    const bar = el('div', { class: 'pf-flame-bar' });
    this.searchInput = el('input', {
      id: `${id}-search`, type: 'search', placeholder: 'Search frames (regex)  /',
      'aria-label': 'Search frames (substring or regular expression)', spellcheck: 'false', autocomplete: 'off',
    });
    this.searchResult = el('span', { id: `${id}-search-result`, class: 'pf-muted', 'aria-live': 'polite' });
    this.resetBtn = el('button', { id: `${id}-reset`, type: 'button', title: 'Show the whole graph (Esc)' }, 'Reset zoom');
    bar.append(this.searchInput, this.searchResult, this.resetBtn);
    this.bar = bar;
    if (opts.toolbar === false) bar.hidden = true;
    this.crumbs = el('nav', { id: `${id}-crumbs`, class: 'pf-crumbs', 'aria-label': 'Zoomed frame and its callers' });
    this.scroll = el('div', { class: 'pf-flame-scroll' });
    this.canvas = el('canvas', {
      id, tabindex: '0', role: 'img', 'data-state': 'loading', 'data-root': 'root', 'data-diff': '0',
      'data-orient': this.inverted ? 'flame' : 'icicle',
      'aria-label': 'Flame graph. Arrow keys move between frames, Enter zooms, Escape resets.',
    });
    this.tip = el('div', { class: 'pf-tooltip', role: 'tooltip' });
    this.tip.hidden = true;
    this.msg = el('div', { class: 'pf-flame-msg' });
    this.scroll.append(this.canvas, this.msg);
    this.root.append(bar, this.crumbs, this.scroll, this.tip);
    container.append(this.root);
    this.ctx = this.canvas.getContext('2d');
    this.canvas.profdFrames = () => this.frames();

    this._listen();
    this.setState('loading');
  }

  _listen() {
    const on = (t, ev, fn, o) => {
      t.addEventListener(ev, fn, o);
      (this._unlisten || (this._unlisten = [])).push(() => t.removeEventListener(ev, fn, o));
    };
    this._searchTimer = 0;
    on(this.searchInput, 'input', () => {
      clearTimeout(this._searchTimer);
      this._searchTimer = setTimeout(() => {
        this.setSearch(this.searchInput.value, true);
        if (this.opts.onSearch) this.opts.onSearch(this.search);
      }, 120);
    });
    on(this.searchInput, 'keydown', (e) => {
      if (e.key === 'Escape') {
        e.stopPropagation();
        if (this.searchInput.value) {
          this.searchInput.value = '';
          this.setSearch('', true);
          if (this.opts.onSearch) this.opts.onSearch('');
        } else {
          this.canvas.focus();
        }
      } else if (e.key === 'Enter') {
        this.canvas.focus();
      }
    });
    on(this.resetBtn, 'click', () => this.userZoom([]));
    on(this.canvas, 'mousemove', (e) => this._onMove(e));
    on(this.scroll, 'scroll', () => this._onScroll(), { passive: true });
    const hideTip = () => {
      this.hover = -1;
      this.tip.hidden = true;
      this.canvas.style.cursor = '';
      this.draw();
    };
    on(this.canvas, 'mouseleave', hideTip);
    // a tap shows a frame's tooltip through the mouse events that follow it; the next
    // press elsewhere hides it
    this._touchTip = new TouchTip(this.canvas, this.tip, hideTip);
    on(this.canvas, 'click', (e) => {
      const i = this._hitEvent(e);
      if (i < 0) return;
      this.sel = i;
      this.userZoom(rectPath(this.layout.rects, i));
    });
    on(this.canvas, 'contextmenu', (e) => {
      const i = this._hitEvent(e);
      if (i < 0 || !this.opts.onContext || this.layout.rects[i].depth === 0) return;
      e.preventDefault();
      this.opts.onContext(this.layout.rects[i].name);
    });
    on(this.canvas, 'keydown', (e) => this._onKey(e));
    on(this.canvas, 'blur', () => {
      if (this.hover < 0) this.tip.hidden = true;
    });
    on(this.crumbs, 'click', (e) => {
      const b = e.target.closest('button[data-depth]');
      if (!b) return;
      this.userZoom(this.zoom.slice(0, Number(b.dataset.depth)));
    });
    if (typeof ResizeObserver !== 'undefined') {
      // only a new width changes the layout (not the pane's height)
      this._ro = new ResizeObserver(() => {
        if (this.scroll.clientWidth !== this.cssW) this.relayout(true);
      });
      this._ro.observe(this.scroll);
    }
    const mq = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;
    if (mq) on(mq, 'change', () => this.draw());
    // a new density: the canvas's backing store is sized again (relayout sizes it)
    this._stopDpr = watchDevicePixelRatio(() => this.relayout(true));
    this._mo = new MutationObserver(() => this.draw());
    this._mo.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme', 'class'] });
  }

  destroy() {
    clearTimeout(this._searchTimer);
    (this._unlisten || []).forEach((f) => f());
    if (this._ro) this._ro.disconnect();
    if (this._mo) this._mo.disconnect();
    if (this._stopDpr) this._stopDpr();
    this._touchTip.destroy();
    cancelAnimationFrame(this._raf);
    this.root.remove();
  }

  setState(state, message) {
    this.canvas.dataset.state = state;
    this.root.dataset.state = state;
    this.msg.textContent = message || '';
    this.msg.hidden = !message;
    if (state !== 'ready') {
      this._laid = null;
      this.resetBtn.classList.add('pf-idle'); // nothing drawn, nothing to reset
      this.layout = { rects: [], depths: 0, zoomPath: [] };
      this.rows = [];
      this.tip.hidden = true;
      // an empty canvas at the width it had: reading the pane's width here would lay
      // the page out while it is being built (a pane is built in this state)
      this._sizeCanvas(0, this.cssW || 0);
    }
  }

  // tree: a flame tree (or a combineDiff tree with diff=true); unit: the sample type's.
  setData(tree, unit, diff = false) {
    this.tree = tree;
    this.unit = unit || '';
    this.diff = !!diff;
    this.canvas.dataset.diff = diff ? '1' : '0';
    this.matchCache.clear();
    this.sel = -1;
    this.hover = -1;
    const total = tree ? (diff ? tree.width : Math.abs(tree.total)) : 0;
    if (!tree || !total) {
      this.setState('empty', diff
        ? 'Neither side has samples of this type.'
        : 'This profile has no samples of this type: nothing of the kind happened while it was taken '
          + '(the CPU profile of an idle program is empty). Drag over a range on the timeline to merge '
          + 'several profiles, or pick another sample type.');
      this._updateSearchResult();
      return;
    }
    this.setState('ready');
    this._updateSearchResult();
    this.relayout();
  }

  // Root at the bottom (true, a flame graph) or at the top (false, an icicle graph).
  setInverted(inverted) {
    this.inverted = !!inverted;
    this.canvas.dataset.orient = this.inverted ? 'flame' : 'icicle';
    this.relayout();
  }

  // The top of a stack level's row on the canvas (CSS pixels).
  _y(depth) {
    return rowTop(depth, this.layout.depths, this.inverted);
  }

  // Sets the zoom path (array of names below the root) without reporting it.
  setZoom(path) {
    this.zoom = (path || []).slice();
    this.sel = -1;
    this.relayout();
    // the keyboard cursor starts on the frame zoomed into
    const zp = this.layout.zoomPath || [];
    if (zp.length && this.layout.rects[zp.length]) this.sel = zp.length;
  }

  // The share of the width the zoomed frame spans (1: all of it).
  setScale(share) {
    if (share === this.scaleShare) return;
    this.scaleShare = share;
    this.relayout();
  }

  userZoom(path) {
    this.setZoom(path);
    this.zoom = this.layout.zoomPath ? this.layout.zoomPath.slice() : this.zoom;
    if (this.opts.onZoom) this.opts.onZoom(this.zoom.slice());
  }

  setSearch(q, fromInput = false) {
    const same = (q || '') === this.search;
    this.search = q || '';
    if (!fromInput && this.searchInput.value !== this.search) this.searchInput.value = this.search;
    // the same search draws nothing again (setData keeps the matches up to date)
    if (same) return;
    this.match = compileMatcher(this.search);
    this.matchCache.clear();
    this._updateSearchResult();
    this.draw();
  }

  _isMatch(name) {
    if (!this.match) return false;
    let m = this.matchCache.get(name);
    if (m === undefined) {
      m = this.match(name);
      this.matchCache.set(name, m);
    }
    return m;
  }

  _updateSearchResult() {
    const r = this.searchResult;
    if (!this.match || !this.tree) {
      r.textContent = '';
      r.removeAttribute('data-share');
      return;
    }
    const s = searchShare(this.tree, (n) => this._isMatch(n));
    if (!s.frames) {
      r.textContent = 'no match';
      r.dataset.share = '0';
      return;
    }
    if (this.diff) {
      const baseTot = Math.abs(this.tree.baseTotal) || 0;
      const newTot = Math.abs(this.tree.total) || 0;
      const pb = baseTot ? (100 * s.base) / baseTot : 0;
      const pn = newTot ? (100 * s.value) / newTot : 0;
      r.textContent = `${s.frames} frames · base ${formatValue(s.base, this.unit)} (${formatPercent(pb)}) → new ${formatValue(s.value, this.unit)} (${formatPercent(pn)})`;
      r.dataset.share = String(pn);
    } else {
      const tot = Math.abs(this.tree.total) || 0;
      const p = tot ? (100 * s.value) / tot : 0;
      r.textContent = `${s.frames} frame${s.frames === 1 ? '' : 's'} · ${formatValue(s.value, this.unit)} · ${formatPercent(p)} of total`;
      r.dataset.share = String(p);
    }
  }

  // Lays the frames out again; nothing to do when the tree, zoom, scale and width
  // are those of the layout there is (the compare page sets both panes' zoom and
  // scale after their data: each relayout of 1,000 functions is tens of ms).
  // force: the width changed (the resize observer), so the last one is not known.
  relayout(force = false) {
    if (!this.tree || this.canvas.dataset.state !== 'ready') {
      this._laid = null;
      this._renderCrumbs();
      return;
    }
    const key = [this.tree, this.zoom.join('\u0000'), this.scaleShare, this.diff, this.inverted];
    if (!force && this._laid && this.layout && key.every((x, i) => x === this._laid[i])) return;
    this._laid = key;
    const width = Math.max(0, this.scroll.clientWidth);
    this.layout = layoutFlame(this.tree, {
      width, zoom: this.zoom, value: this.diff ? (n) => n.width : undefined, scale: this.scaleShare,
    });
    this.rows = indexByDepth(this.layout.rects);
    this.hover = -1;
    this.tip.hidden = true;
    if (this.sel >= this.layout.rects.length) this.sel = -1;
    const zp = this.layout.zoomPath;
    this.canvas.dataset.root = zp.length ? zp[zp.length - 1] : 'root';
    this.resetBtn.classList.toggle('pf-idle', zp.length === 0);
    this._renderCrumbs();
    this._sizeCanvas(this.layout.depths * ROW_H, width);
    // a flame graph's root is at the bottom: show it first
    if (this.inverted) this.scroll.scrollTop = this.scroll.scrollHeight;
    this.draw();
  }

  _renderCrumbs() {
    const zp = (this.layout && this.layout.zoomPath) || [];
    this.crumbs.textContent = '';
    this.crumbs.hidden = zp.length === 0;
    if (!zp.length) return;
    const names = ['root'].concat(zp);
    names.forEach((n, i) => {
      if (i) this.crumbs.append(el('span', { class: 'pf-crumb-sep', 'aria-hidden': 'true' }, '›'));
      if (i === names.length - 1) {
        this.crumbs.append(el('span', { class: 'pf-crumb-cur', title: n }, n));
      } else {
        this.crumbs.append(el('button', { type: 'button', 'data-depth': String(i), title: n }, n));
      }
    });
  }

  // width: the pane's, when the caller has just read it (reading it again after the
  // crumbs changed would lay the page out a second time)
  _sizeCanvas(h, width) {
    const dpr = window.devicePixelRatio || 1;
    const w = width !== undefined ? width : Math.max(0, this.scroll.clientWidth);
    this.cssW = w;
    this.cssH = h;
    const pw = Math.round(w * dpr);
    const ph = Math.round(h * dpr);
    if (this.canvas.width !== pw) this.canvas.width = pw;
    if (this.canvas.height !== ph) this.canvas.height = ph;
    this.canvas.style.width = w + 'px';
    this.canvas.style.height = h + 'px';
    this.dpr = dpr;
  }

  draw() {
    cancelAnimationFrame(this._raf);
    this._raf = requestAnimationFrame(() => this._draw());
  }

  _draw() {
    const { ctx } = this;
    const rects = this.layout.rects;
    const dpr = this.dpr || 1;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, this.cssW || 0, this.cssH || 0);
    if (!rects.length) return;
    this.dark = isDarkTheme();
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    if (!this._charW) this._charW = ctx.measureText('mmmmmmmmmm').width / 10 || 7;
    const charW = this._charW;
    const searching = !!this.match;
    const hl = this.dark ? SEARCH_COLORS.dark : SEARCH_COLORS.light;
    const [b0, b1] = (this._band = this._visibleBand());
    for (let i = 0; i < rects.length; i++) {
      const r = rects[i];
      const y = this._y(r.depth);
      if (y + ROW_H <= b0 || y >= b1) continue;
      const n = r.node;
      const matched = searching && r.depth > 0 && this._isMatch(r.name);
      let c;
      if (matched) c = hl;
      else if (this.diff) c = r.depth === 0 ? diffColor(n.baseTotal, n.total, this.dark) : diffColor(n.baseTotal, n.total, this.dark);
      else c = frameColor(r.name, this.dark);
      ctx.globalAlpha = r.dim ? 0.45 : searching && !matched ? 0.5 : 1;
      const w = Math.max(r.w - 1, 0.5);
      ctx.fillStyle = c.fill;
      ctx.fillRect(r.x, y, w, ROW_H - 1);
      if (r.w > charW * 2 + 6) {
        const label = fitLabel(r.name, Math.floor((r.w - 6) / charW));
        if (label) {
          ctx.fillStyle = c.text;
          ctx.fillText(label, r.x + 3, y + ROW_H / 2);
        }
      }
    }
    ctx.globalAlpha = 1;
    for (const [i, color] of [[this.hover, this.dark ? '#fff' : '#000'], [this.sel, this.dark ? '#8ab4ff' : '#1a56db']]) {
      if (i < 0 || i >= rects.length) continue;
      const r = rects[i];
      ctx.strokeStyle = color;
      ctx.lineWidth = i === this.sel ? 2 : 1;
      ctx.strokeRect(r.x + 0.5, this._y(r.depth) + 0.5, Math.max(r.w - 2, 1), ROW_H - 2);
    }
  }

  // The rows of the canvas (CSS px from its top) that _draw draws: those in the pane's
  // view and half a view above and below it. A canvas taller than its pane (a deep
  // profile) is drawn only where it can be seen; a scroll past the band draws again
  // (_onScroll). A pane not laid out (hidden) draws everything, as it cannot tell.
  _visibleBand() {
    const view = this.scroll.clientHeight;
    if (!view) return [0, this.cssH || 0];
    const top = this.scroll.scrollTop - this.canvas.offsetTop;
    return [top - view / 2, top + view * 1.5];
  }

  _onScroll() {
    if (!this._band || !this.layout.rects.length) return;
    const view = this.scroll.clientHeight;
    const top = this.scroll.scrollTop - this.canvas.offsetTop;
    if (top < this._band[0] || top + view > this._band[1]) this.draw();
  }

  _hitEvent(e) {
    const b = this.canvas.getBoundingClientRect();
    return hitTest(this.layout.rects, this.rows, e.clientX - b.left, e.clientY - b.top, ROW_H, this.inverted, this.layout.depths);
  }

  _onMove(e) {
    const i = this._hitEvent(e);
    if (i !== this.hover) {
      this.hover = i;
      this.draw();
    }
    this.canvas.style.cursor = i >= 0 ? 'pointer' : '';
    if (i < 0) {
      this.tip.hidden = true;
      return;
    }
    this._showTip(i, e.clientX, e.clientY);
  }

  _tipHtml(r) {
    return tipHtml(r, this.tree, this.unit, this.diff);
  }

  _showTip(i, cx, cy) {
    const r = this.layout.rects[i];
    this.tip.innerHTML = this._tipHtml(r);
    this.tip.hidden = false;
    const host = this.root.getBoundingClientRect();
    const tw = this.tip.offsetWidth;
    const th = this.tip.offsetHeight;
    let x = cx - host.left + 14;
    let y = cy - host.top + 16;
    if (x + tw > host.width - 4) x = Math.max(4, cx - host.left - tw - 14);
    if (cy + 16 + th > window.innerHeight - 4) y = Math.max(0, cy - host.top - th - 10);
    this.tip.style.left = x + 'px';
    this.tip.style.top = y + 'px';
  }

  _onKey(e) {
    const rects = this.layout.rects;
    if (!rects.length) {
      if (e.key === 'Escape' && this.zoom.length) this.userZoom([]);
      return;
    }
    let i = this.sel;
    const cur = rects[i];
    let handled = true;
    // up and down move on screen: to the caller is down when the root is at the bottom
    let key = e.key;
    if (this.inverted && (key === 'ArrowUp' || key === 'ArrowDown')) key = key === 'ArrowUp' ? 'ArrowDown' : 'ArrowUp';
    switch (key) {
      case 's':
      case 'S':
        if (i >= 0 && cur.depth > 0 && this.opts.onContext) this.opts.onContext(cur.name);
        else handled = false;
        i = -2;
        break;
      case 'ArrowUp':
        i = i < 0 ? 0 : Math.max(0, cur.parent >= 0 ? cur.parent : i);
        break;
      case 'ArrowDown': {
        if (i < 0) { i = 0; break; }
        const row = this.rows[cur.depth + 1] || [];
        const child = row.find((j) => rects[j].x >= cur.x - 0.01 && rects[j].x < cur.x + cur.w);
        if (child !== undefined) i = child;
        break;
      }
      case 'ArrowLeft':
      case 'ArrowRight': {
        if (i < 0) { i = 0; break; }
        const row = this.rows[cur.depth];
        const k = row.indexOf(i) + (e.key === 'ArrowLeft' ? -1 : 1);
        if (k >= 0 && k < row.length) i = row[k];
        break;
      }
      case 'Enter':
      case ' ':
        if (i >= 0) this.userZoom(rectPath(rects, i));
        i = -2;
        break;
      case 'Escape':
        if (this.zoom.length) this.userZoom([]);
        else if (this.search) {
          this.setSearch('');
          if (this.opts.onSearch) this.opts.onSearch('');
        } else handled = false;
        i = -2;
        break;
      default:
        handled = false;
    }
    if (!handled) return;
    e.preventDefault();
    e.stopPropagation();
    if (i === -2) return;
    this.sel = i;
    this.draw();
    const r = rects[i];
    if (r) {
      // keep the selection in view, and show its numbers
      const top = this._y(r.depth);
      if (top < this.scroll.scrollTop) this.scroll.scrollTop = top;
      else if (top + ROW_H > this.scroll.scrollTop + this.scroll.clientHeight) this.scroll.scrollTop = top + ROW_H - this.scroll.clientHeight;
      const b = this.canvas.getBoundingClientRect();
      this._showTip(i, b.left + r.x + Math.min(r.w / 2, 40), b.top + top + ROW_H - 8);
    }
  }

  // Every frame drawn, in client coordinates (the browser tests' hook).
  frames() {
    const b = this.canvas.getBoundingClientRect();
    return this.layout.rects.map((r) => ({
      name: r.name, depth: r.depth,
      x: b.left + r.x, y: b.top + this._y(r.depth), w: r.w, h: ROW_H - 1,
      self: r.node.self, total: r.node.total,
      ...(this.diff ? { baseSelf: r.node.baseSelf, baseTotal: r.node.baseTotal } : {}),
      ...(r.dim ? { dim: true } : {}),
      ...(r.node.collapsed ? { collapsed: r.node.collapsed.slice() } : {}),
    }));
  }
}
