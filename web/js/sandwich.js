// The sandwich view of one function (the pivot) and the runtime-frame collapse of a
// flame tree: pure tree functions (importable in node without a DOM) and
// SandwichView, which draws the pivot's callers above it (an inverted flame graph,
// the pivot at the bottom) and its callees below it (a flame graph rooted at it).
//
// Trees are report=flamegraph's {name, self, total, children}, or combineDiff's (with
// baseSelf, baseTotal and width). Every function here returns new nodes and leaves
// its input as it is.
//
// Recursion: a function that appears more than once on one stack is counted once, at
// its OUTERMOST occurrence (the one nearest the root), as pprof's cum is. The callees
// tree merges the subtrees of the outermost occurrences (so a recursive call shows as
// the pivot calling itself, once), the callers tree the paths from the root to them.
// Either tree's total is then the pivot's cum in the top table (pprof -top -cum).

import { FlameView } from './flame.js';
import { formatValue } from './format.js';

const SUMS = ['self', 'total', 'baseSelf', 'baseTotal'];

function emptyNode(name, diff) {
  return diff
    ? { name, self: 0, total: 0, baseSelf: 0, baseTotal: 0, width: 0, children: [] }
    : { name, self: 0, total: 0, children: [] };
}

const isDiff = (root) => !!root && root.baseTotal !== undefined;

// Adds node src (and its subtree) into dst, merging children by name.
function addInto(dst, src) {
  for (const k of SUMS) if (dst[k] !== undefined) dst[k] += src[k] || 0;
  if (src.collapsed) dst.collapsed = [...new Set((dst.collapsed || []).concat(src.collapsed))].sort();
  for (const c of src.children || []) addInto(childOf(dst, c.name), c);
}

function childOf(n, name) {
  if (!n._kids) n._kids = new Map(n.children.map((c) => [c.name, c]));
  let c = n._kids.get(name);
  if (!c) {
    c = emptyNode(name, n.width !== undefined);
    n._kids.set(name, c);
    n.children.push(c);
  }
  return c;
}

// Drops the merge index, sorts children as report=flamegraph does (|total|
// descending, then name; a diff tree by width) and sets a diff tree's widths
// (combineDiff's: the larger side's self plus the children's widths).
function finish(n) {
  delete n._kids;
  let w = Math.max(Math.abs(n.self || 0), Math.abs(n.baseSelf || 0));
  for (const c of n.children) w += finish(c);
  const diff = n.width !== undefined;
  if (diff) n.width = w;
  n.children.sort((a, b) => (diff ? b.width - a.width : Math.abs(b.total) - Math.abs(a.total)) ||
    (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return w;
}

// Calls fn(node, ancestors) for every outermost frame called `name` (ancestors: the
// nodes from the root down to its caller, the root included).
export function eachOutermost(root, name, fn) {
  if (!root) return;
  const path = [];
  const walk = (n) => {
    if (n !== root && n.name === name) {
      fn(n, path.slice());
      return;
    }
    path.push(n);
    for (const c of n.children || []) walk(c);
    path.pop();
  };
  walk(root);
}

// The pivot's callees: one tree rooted at a frame called `name`, the merge of the
// subtrees of its outermost occurrences. null when the tree has no such frame.
export function calleesTree(root, name) {
  const out = emptyNode(name, isDiff(root));
  let found = false;
  eachOutermost(root, name, (n) => {
    found = true;
    addInto(out, n);
  });
  if (!found) return null;
  finish(out);
  return out;
}

// The pivot's callers: a tree rooted at a frame called `name` whose children are its
// direct callers, theirs their callers, up to the root's children. A node's total is
// the pivot's cost reached through that chain of callers, its self the part whose
// stacks start at that caller (no caller above). null when there is no such frame.
export function callersTree(root, name) {
  const diff = isDiff(root);
  const out = emptyNode(name, diff);
  let found = false;
  eachOutermost(root, name, (n, ancestors) => {
    found = true;
    const add = (m, end) => {
      m.total += n.total || 0;
      if (diff) m.baseTotal += n.baseTotal || 0;
      if (end) {
        m.self += n.total || 0;
        if (diff) m.baseSelf += n.baseTotal || 0;
      }
    };
    let cur = out;
    add(cur, ancestors.length <= 1);
    for (let i = ancestors.length - 1; i >= 1; i--) {
      cur = childOf(cur, ancestors[i].name);
      add(cur, i === 1);
    }
  });
  if (!found) return null;
  finish(out);
  return out;
}

// The pivot's flat (self) value, summed over every frame called `name` (pprof's
// flat), and its cum (outermost occurrences only): {flat, cum, baseFlat, baseCum}.
export function pivotValues(root, name) {
  const v = { flat: 0, cum: 0, baseFlat: 0, baseCum: 0 };
  if (!root) return v;
  const stack = [root];
  while (stack.length) {
    const n = stack.pop();
    if (n !== root && n.name === name) {
      v.flat += n.self || 0;
      v.baseFlat += n.baseSelf || 0;
    }
    for (const c of n.children || []) stack.push(c);
  }
  eachOutermost(root, name, (n) => {
    v.cum += n.total || 0;
    v.baseCum += n.baseTotal || 0;
  });
  return v;
}

// The collapse rule: a Go runtime frame is a function of package runtime itself
// ("runtime.mallocgc", "runtime.(*mheap).alloc"; not runtime/pprof or runtime/trace).
export function isRuntimeFrame(name) {
  return String(name).startsWith('runtime.');
}

// The tree with every run of consecutive runtime frames on a stack folded into the
// run's first (outermost) frame: that frame keeps its name and total, takes the self
// of the frames folded into it, and lists their names (once each, sorted) in
// `collapsed`; the non-runtime frames the run calls become its children (merged by
// name). Totals are unchanged; only frames go.
export function collapseRuntime(root, isRuntime = isRuntimeFrame) {
  if (!root) return root;
  const diff = isDiff(root);
  const copy = (n) => {
    const out = emptyNode(n.name, diff);
    for (const k of SUMS) if (out[k] !== undefined) out[k] = n[k] || 0;
    const head = n !== root && isRuntime(n.name);
    const folded = new Set();
    const visit = (src) => {
      for (const c of src.children || []) {
        if (head && isRuntime(c.name)) {
          out.self += c.self || 0;
          if (diff) out.baseSelf += c.baseSelf || 0;
          folded.add(c.name);
          visit(c);
        } else {
          const cc = copy(c);
          const had = out._kids && out._kids.get(cc.name);
          if (had) addInto(had, cc);
          else {
            childOf(out, cc.name);
            out._kids.set(cc.name, cc);
            out.children[out.children.length - 1] = cc;
          }
        }
      }
    };
    visit(n);
    if (folded.size) out.collapsed = [...folded].sort();
    return out;
  };
  const out = copy(root);
  finishDeep(out);
  return out;
}

// finish for trees built by copy: every node may carry a merge index.
function finishDeep(n) {
  const stack = [n];
  while (stack.length) {
    const m = stack.pop();
    delete m._kids;
    for (const c of m.children) stack.push(c);
  }
  finish(n);
}

// The number of frames of a tree (the root left out).
export function frameCount(root) {
  let k = 0;
  const stack = root ? [...(root.children || [])] : [];
  while (stack.length) {
    const n = stack.pop();
    k++;
    for (const c of n.children || []) stack.push(c);
  }
  return k;
}

// ---------------------------------------------------------------------------------
// The view (browser only)

function h(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids) e.append(k);
  return e;
}

const ORIENT_KEY = 'profd.profile.orient';

// The orientation last chosen ('flame': root at the bottom, 'icicle': at the top,
// the default), from localStorage.
export function storedOrient() {
  try {
    return localStorage.getItem(ORIENT_KEY) === 'flame' ? 'flame' : 'icicle';
  } catch (e) {
    return 'icicle';
  }
}

// The flame graph's options, for its toolbar: the orientation (#flame-orient, a
// segmented pair: Icicle, root at the top; Flame, root at the bottom; kept in
// localStorage and the view) and the runtime collapse (#flame-runtime, a toggle: the
// view's runtime = 'collapse'). onChange(partial view) reports a change.
export function flameOptions(view, onChange) {
  const orient = h('span', { id: 'flame-orient', class: 'pf-seg', role: 'group', 'aria-label': 'Orientation' });
  let cur = view.orient === 'flame' || view.orient === 'icicle' ? view.orient : storedOrient();
  for (const [k, label, title] of [['icicle', 'Icicle', 'Root at the top'], ['flame', 'Flame', 'Root at the bottom']]) {
    orient.append(h('button', { type: 'button', 'data-orient': k, 'aria-pressed': String(k === cur), title }, label));
  }
  orient.addEventListener('click', (e) => {
    const b = e.target.closest('button[data-orient]');
    if (!b || b.dataset.orient === cur) return;
    cur = b.dataset.orient;
    for (const x of orient.children) x.setAttribute('aria-pressed', String(x.dataset.orient === cur));
    try {
      localStorage.setItem(ORIENT_KEY, cur);
    } catch (err) { /* private mode */ }
    onChange({ orient: cur });
  });
  const runtime = h('button', {
    type: 'button', id: 'flame-runtime', 'aria-pressed': String(view.runtime === 'collapse'),
    title: 'Fold each run of Go runtime frames (runtime.*) into its first frame; totals stay the same',
  }, 'Collapse runtime');
  runtime.addEventListener('click', () => {
    const on = runtime.getAttribute('aria-pressed') !== 'true';
    runtime.setAttribute('aria-pressed', String(on));
    onChange({ runtime: on ? 'collapse' : '' });
  });
  return h('span', { class: 'pf-flame-opts' }, orient, runtime);
}

// SandwichView shows the sandwich of a pivot function in `container`.
// opts.onClose() is called when the user closes it; opts.onPivot(name) when the
// user picks another pivot in it (a right click on a frame).
export class SandwichView {
  constructor(container, opts = {}) {
    this.opts = opts;
    this.title = h('span', { class: 'pf-sw-name' });
    this.values = h('span', { class: 'pf-sw-values pf-muted' });
    this.closeBtn = h('button', { type: 'button', id: 'sandwich-close', title: 'Back to the whole flame graph' }, 'Close sandwich');
    const head = h('div', { class: 'pf-sw-head' }, h('span', { class: 'pf-sw-kind' }, 'Sandwich'), this.title, this.values, this.closeBtn);
    this.note = h('div', { class: 'pf-sw-note pf-muted' });
    this.callersLabel = h('div', { class: 'pf-sw-label' }, 'Callers (the function at the bottom, who calls it above)');
    this.calleesLabel = h('div', { class: 'pf-sw-label' }, 'Callees (the function at the top, what it calls below)');
    const pick = (name) => { if (this.opts.onPivot) this.opts.onPivot(name); };
    this.root = h('section', { id: 'sandwich', class: 'pf-sandwich', 'data-state': 'empty', 'aria-label': 'Sandwich view' },
      head, this.note, this.callersLabel);
    container.append(this.root);
    this.callers = new FlameView(this.root, { id: 'sandwich-callers', inverted: true, toolbar: false, onContext: pick });
    this.root.append(this.calleesLabel);
    this.callees = new FlameView(this.root, { id: 'sandwich-callees', toolbar: false, onContext: pick });
    this.callers.root.classList.add('pf-sw-callers');
    this.callees.root.classList.add('pf-sw-callees');
    this.closeBtn.addEventListener('click', () => { if (this.opts.onClose) this.opts.onClose(); });
  }

  // tree: the whole flame tree (a combineDiff tree when diff); name: the pivot;
  // collapse: fold runtime frames in both halves.
  setData(tree, name, unit, diff, collapse) {
    const callers = callersTree(tree, name);
    const callees = calleesTree(tree, name);
    this.title.textContent = name;
    this.title.title = name;
    this.root.dataset.pivot = name;
    const v = pivotValues(tree, name);
    this.root.dataset.total = String(v.cum);
    this.root.dataset.flat = String(v.flat);
    if (diff) {
      this.values.textContent = `cum ${formatValue(v.baseCum, unit)} → ${formatValue(v.cum, unit)} · flat ${formatValue(v.baseFlat, unit)} → ${formatValue(v.flat, unit)}`;
    } else {
      this.values.textContent = `cum ${formatValue(v.cum, unit)} · flat ${formatValue(v.flat, unit)}`;
    }
    if (!callers) {
      this.root.dataset.state = 'empty';
      this.note.textContent = `No frame of ${name} in this profile (for this sample type).`;
      this.callers.setState('empty');
      this.callees.setState('empty');
      return;
    }
    this.root.dataset.state = 'ready';
    this.note.textContent = 'Merged over every call site; a function on a stack more than once counts once, at its outermost call. ' +
      'Exact: made from the whole call tree (no frame left out). Right-click a frame to make it the pivot.';
    this.callers.setData(collapse ? collapseRuntime(callers) : callers, unit, diff);
    this.callees.setData(collapse ? collapseRuntime(callees) : callees, unit, diff);
  }

  setState(state, message) {
    this.root.dataset.state = state;
    this.note.textContent = message || '';
    this.callers.setState(state);
    this.callees.setState(state);
  }

  relayout() {
    this.callers.relayout(true);
    this.callees.relayout(true);
  }

  destroy() {
    this.callers.destroy();
    this.callees.destroy();
    this.root.remove();
  }
}
