// The top table (pprof's -top by function): pure sorting and filtering of
// report=top's rows, and TopTable, which renders them with sortable headers, a filter
// input and rows that focus their function in the flame graph when clicked.
//
// view.sort is "<column>" (its natural direction: numbers largest first, names A→Z)
// or "<column>:asc" / "<column>:desc"; columns: flat, flat%, sum%, cum, cum%, name.
// Sorting by flat or cum uses the signed value (a diff shows growth first, shrinkage
// last); "sum%" is pprof's own order (|flat| descending). sum% is the running sum of
// flat% over the rows as shown (after filter and sort).

import { formatValue, formatPercent } from './format.js';
import { compileMatcher } from './flame.js';

export const COLUMNS = [
  { key: 'flat', label: 'flat', num: true },
  { key: 'flat%', label: 'flat%', num: true },
  { key: 'sum%', label: 'sum%', num: true },
  { key: 'cum', label: 'cum', num: true },
  { key: 'cum%', label: 'cum%', num: true },
  { key: 'name', label: 'name', num: false },
];

// A diff's columns: side A's (base) and side B's (new) flat values, their change (Δ),
// the change relative to A (Δ%: ∞ for a function A does not have) and the change of cum.
export const DIFF_COLUMNS = [
  { key: 'base', label: 'A', title: 'flat in side A (the base)', num: true },
  { key: 'new', label: 'B', title: 'flat in side B (the new)', num: true },
  { key: 'flat', label: 'Δ', title: 'the change of flat, B − A', num: true },
  { key: 'delta%', label: 'Δ%', title: 'the change of flat relative to A', num: true },
  { key: 'cum', label: 'Δ cum', title: 'the change of cum, B − A', num: true },
  { key: 'name', label: 'name', num: false },
];

// A diff row's change relative to side A, in percent: ±Infinity when A has none of it.
export function deltaPercent(r) {
  const a = r.baseFlat || 0;
  const d = (r.newFlat || 0) - a;
  if (!a) return d > 0 ? Infinity : d < 0 ? -Infinity : 0;
  return (100 * d) / Math.abs(a);
}

const DEFAULT_SORT = { key: 'sum%', dir: 'asc' };

// "cum" → {key:'cum', dir:'desc'}; "name:desc" → {key:'name', dir:'desc'};
// unknown or empty → pprof's order.
export function parseSort(s) {
  if (!s) return { ...DEFAULT_SORT };
  const [key, dir] = String(s).split(':');
  const col = COLUMNS.find((c) => c.key === key) || DIFF_COLUMNS.find((c) => c.key === key);
  if (!col) return { ...DEFAULT_SORT };
  if (dir === 'asc' || dir === 'desc') return { key, dir };
  return { key, dir: naturalDir(key) };
}

function naturalDir(key) {
  return key === 'name' || key === 'sum%' ? 'asc' : 'desc';
}

// The sort after clicking a column's header: its natural direction first, then the
// other. Returns the view.sort string ("" for pprof's order).
export function nextSort(current, key) {
  const cur = parseSort(current);
  let dir = naturalDir(key);
  if (cur.key === key) dir = cur.dir === 'asc' ? 'desc' : 'asc';
  if (key === 'sum%' && dir === 'asc') return '';
  return dir === naturalDir(key) ? key : `${key}:${dir}`;
}

function sortField(key) {
  if (key === 'flat' || key === 'flat%') return 'flat';
  if (key === 'cum' || key === 'cum%') return 'cum';
  if (key === 'base') return 'baseFlat';
  if (key === 'new') return 'newFlat';
  if (key === 'delta%') return 'deltaPercent';
  return key;
}

// Rows sorted as `sort` (a view.sort string) says; a new array, ties kept in pprof's
// order (the input's). Does not change the rows.
export function sortRows(rows, sort) {
  const { key, dir } = parseSort(sort);
  const f = sortField(key);
  const sgn = dir === 'asc' ? 1 : -1;
  const idx = rows.map((r, i) => [r, i]);
  idx.sort(([a, ia], [b, ib]) => {
    let c = 0;
    if (f === 'name') c = a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
    else if (f === 'sum%') c = ia - ib;
    else if (f === 'deltaPercent') {
      const x = deltaPercent(a);
      const y = deltaPercent(b);
      c = x === y ? 0 : x < y ? -1 : 1;
    } else c = (a[f] || 0) - (b[f] || 0);
    return c * sgn || ia - ib;
  });
  return idx.map(([r]) => r);
}

// Rows whose name matches the filter (substring or regular expression, any case).
export function filterRows(rows, filter) {
  const m = compileMatcher(filter);
  return m ? rows.filter((r) => m(r.name)) : rows.slice();
}

// Filtered and sorted rows with sumPercent recomputed as the running sum of flatPercent
// in the order shown. New row objects; the input is not changed.
export function viewRows(rows, { sort, filter } = {}) {
  const out = sortRows(filterRows(rows || [], filter), sort);
  let sum = 0;
  return out.map((r) => {
    sum += r.flatPercent || 0;
    return { ...r, sumPercent: sum };
  });
}

// ---------------------------------------------------------------------------------
// Rendering (browser only)

// rows rendered at first, "Show all" renders the rest: two panes of 500 rows took
// 100 ms of layout (bench/ui_pages.sh), more than a pane shows without scrolling
const MAX_ROWS = 150;
// Of those, the rows drawn in the task that draws the table: more than a pane shows
// at 1,100 px (22 px a row). The rest are added when the page is next idle (two
// compare panes of 150 rows were 40-60 ms of style and layout each in the task that
// drew them, bench/ui_pages.sh); until then the table has data-rows="partial".
const FIRST_ROWS = 50;

// Text for HTML (element content and quoted attributes). Everything from the API (names,
// units, messages) goes through it: a pushed profile's strings are anyone's.
export function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

// One row of the table as HTML: every string in it (name, unit, inline) escaped.
// unit: the sample type's; diff: values are changes (signed); focus: the focused name.
// A diff's row (diff true) has the columns of DIFF_COLUMNS when the API gave each
// side's values (baseFlat, newFlat), else the plain ones with signs.
export function rowHtml(r, unit, diff, focus) {
  const o = { sign: !!diff };
  const cls = diff ? (r.flat > 0 || (!r.flat && r.cum > 0) ? ' pf-up' : r.flat < 0 || (!r.flat && r.cum < 0) ? ' pf-down' : '') : '';
  const inl = r.inline ? ` <span class="pf-inline">(${esc(r.inline)})</span>` : '';
  const tr = `<tr tabindex="0" data-name="${esc(r.name)}" class="${r.name === focus ? 'pf-focus' : ''}${cls}">`;
  const name = `<td class="name" title="${esc(r.name)}"><button type="button" class="pf-sw-act" data-act="sandwich" ` +
    `title="Sandwich: the callers and callees of ${esc(r.name)}" aria-label="Sandwich of ${esc(r.name)}">⇅</button>` +
    `${esc(r.name)}${inl}</td></tr>`;
  if (diff && r.baseFlat !== undefined) {
    const dp = deltaPercent(r);
    const dpText = dp === Infinity ? 'new' : dp === -Infinity ? 'gone' : formatPercent(dp, o);
    return tr +
      `<td class="num">${esc(formatValue(r.baseFlat, unit))}</td>` +
      `<td class="num">${esc(formatValue(r.newFlat, unit))}</td>` +
      `<td class="num">${esc(formatValue(r.flat, unit, o))}</td>` +
      `<td class="num">${esc(dpText)}</td>` +
      `<td class="num">${esc(formatValue(r.cum, unit, o))}</td>` + name;
  }
  return tr +
    `<td class="num">${esc(formatValue(r.flat, unit, o))}</td>` +
    `<td class="num">${esc(formatPercent(r.flatPercent, o))}</td>` +
    `<td class="num pf-muted">${esc(formatPercent(r.sumPercent, o))}</td>` +
    `<td class="num">${esc(formatValue(r.cum, unit, o))}</td>` +
    `<td class="num">${esc(formatPercent(r.cumPercent, o))}</td>` + name;
}

// The top table widget. opts: onSort(sortString), onFilter(string), onFocus(name),
// onSandwich(name) (a row's ⇅ button).
export class TopTable {
  constructor(container, opts = {}) {
    this.opts = opts;
    this.data = null;
    this.sort = '';
    this.filter = '';
    this.focus = '';
    this.limit = MAX_ROWS;
    this.diff = false;

    this.root = document.createElement('div');
    this.root.className = 'pf-top';
    this.root.innerHTML =
      '<div class="pf-top-bar"><input id="top-filter" type="search" placeholder="Filter functions (regex)" ' +
      'aria-label="Filter functions (substring or regular expression)" spellcheck="false" autocomplete="off">' +
      '<span class="pf-top-count pf-muted" aria-live="polite"></span></div>' +
      '<div class="pf-top-scroll"><table id="top-table" class="pf-table"><thead><tr></tr></thead><tbody></tbody></table>' +
      '<div class="pf-top-more"></div></div>';
    container.append(this.root);
    this.input = this.root.querySelector('#top-filter');
    this.count = this.root.querySelector('.pf-top-count');
    this.table = this.root.querySelector('#top-table');
    this.tbody = this.table.tBodies[0];
    this.more = this.root.querySelector('.pf-top-more');
    this.scroll = this.root.querySelector('.pf-top-scroll');
    this.table.dataset.state = 'loading';

    const head = this.table.tHead.rows[0];
    this.head = head;
    this.columns = null;
    this._heads(COLUMNS);

    this._filterTimer = 0;
    this._on(this.input, 'input', () => {
      clearTimeout(this._filterTimer);
      this._filterTimer = setTimeout(() => {
        this.filter = this.input.value;
        this.limit = MAX_ROWS;
        this.render();
        if (this.opts.onFilter) this.opts.onFilter(this.filter);
      }, 100);
    });
    this._on(this.input, 'keydown', (e) => {
      if (e.key === 'Escape' && this.input.value) {
        e.stopPropagation();
        this.input.value = '';
        this.input.dispatchEvent(new Event('input'));
      } else if (e.key === 'ArrowDown' || e.key === 'Enter') {
        const first = this.tbody.rows[0];
        if (first) {
          e.preventDefault();
          first.focus();
        }
      }
    });
    const sortBy = (th) => {
      this.sort = nextSort(this.sort, th.dataset.sort);
      this.render();
      if (this.opts.onSort) this.opts.onSort(this.sort);
    };
    this._on(head, 'click', (e) => {
      const th = e.target.closest('th[data-sort]');
      if (th) sortBy(th);
    });
    this._on(head, 'keydown', (e) => {
      const th = e.target.closest('th[data-sort]');
      if (th && (e.key === 'Enter' || e.key === ' ')) {
        e.preventDefault();
        sortBy(th);
      }
    });
    this._on(this.tbody, 'click', (e) => {
      const tr = e.target.closest('tr[data-name]');
      if (tr && e.target.closest('[data-act="sandwich"]')) {
        if (this.opts.onSandwich) this.opts.onSandwich(tr.dataset.name);
      } else if (tr) this._focusRow(tr);
    });
    this._on(this.tbody, 'keydown', (e) => {
      const tr = e.target.closest('tr[data-name]');
      if (!tr || e.target.closest('[data-act="sandwich"]')) return; // the button's own keys
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        this._focusRow(tr);
      } else if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        const next = e.key === 'ArrowDown' ? tr.nextElementSibling : tr.previousElementSibling;
        if (next) next.focus();
        else if (e.key === 'ArrowUp') this.input.focus();
      }
    });
    this._on(this.more, 'click', (e) => {
      if (e.target.closest('button')) {
        this.limit = Infinity;
        this.render();
      }
    });
  }

  // The header cells of columns (COLUMNS, or DIFF_COLUMNS for a diff with sides).
  _heads(columns) {
    if (this.columns === columns) return;
    this.columns = columns;
    this.drawn = null;
    this.head.textContent = '';
    for (const c of columns) {
      const th = document.createElement('th');
      th.dataset.sort = c.key;
      th.scope = 'col';
      th.tabIndex = 0;
      th.className = c.num ? 'num' : 'name';
      th.textContent = c.label;
      th.title = `Sort by ${c.title || c.label}`;
      this.head.append(th);
    }
  }

  _on(t, ev, fn) {
    t.addEventListener(ev, fn);
    (this._un || (this._un = [])).push(() => t.removeEventListener(ev, fn));
  }

  _focusRow(tr) {
    const name = tr.dataset.name;
    this.setFocus(name);
    if (this.opts.onFocus) this.opts.onFocus(name);
  }

  // Appends rows (after the first FIRST_ROWS) when the page is next idle, with the
  // focus there is then.
  _drawRest(rows, unit) {
    this.table.dataset.rows = 'partial';
    const draw = () => {
      this._rest = null;
      this.tbody.insertAdjacentHTML('beforeend', rows.map((r) => rowHtml(r, unit, this.diff, this.focus)).join(''));
      this.table.dataset.rows = 'all';
    };
    if (typeof requestIdleCallback === 'function') {
      const id = requestIdleCallback(draw, { timeout: 1000 });
      this._rest = () => cancelIdleCallback(id);
    } else {
      const id = setTimeout(draw, 50);
      this._rest = () => clearTimeout(id);
    }
  }

  _cancelRest() {
    if (this._rest) this._rest();
    this._rest = null;
    this.table.dataset.rows = 'all';
  }

  destroy() {
    this._cancelRest();
    clearTimeout(this._filterTimer);
    (this._un || []).forEach((f) => f());
    this.root.remove();
  }

  setState(state, message) {
    this.table.dataset.state = state;
    if (state !== 'ready') {
      this._cancelRest();
      this.drawn = null;
      this.tbody.innerHTML = message ? `<tr class="pf-top-msg"><td colspan="6">${esc(message)}</td></tr>` : '';
      this.count.textContent = '';
      this.more.textContent = '';
    }
  }

  setView({ sort, filter, focus }) {
    this.sort = sort || '';
    this.filter = filter || '';
    this.focus = focus || '';
    if (this.input.value !== this.filter) this.input.value = this.filter;
  }

  setFocus(name) {
    this.focus = name || '';
    for (const tr of this.tbody.rows) tr.classList.toggle('pf-focus', tr.dataset.name === this.focus);
  }

  // data: report=top's answer; diff: values are changes (shown with a sign).
  setData(data, diff = false) {
    this.data = data;
    this.diff = diff;
    this.table.classList.toggle('pf-diff', !!diff);
    const sides = !!(diff && data && data.rows && data.rows.length && data.rows[0].baseFlat !== undefined);
    this.table.classList.toggle('pf-sides', sides);
    this._heads(sides ? DIFF_COLUMNS : COLUMNS);
    this.limit = MAX_ROWS;
    if (!data || !data.rows) {
      this.setState('empty', 'No functions.');
      return;
    }
    this.table.dataset.state = 'ready';
    this.render();
  }

  // Draws the rows; nothing to do when the data and the view are those drawn last
  // (the compare page applies its view to both panes after their data came).
  render() {
    const { data } = this;
    if (!data || !data.rows) return;
    const drawn = [data, this.diff, this.sort, this.filter, this.focus, this.limit];
    if (this.drawn && drawn.every((x, i) => x === this.drawn[i])) return;
    this.drawn = drawn;
    const { key, dir } = parseSort(this.sort);
    for (const th of this.table.tHead.rows[0].cells) {
      const on = th.dataset.sort === key && this.sort !== '';
      th.setAttribute('aria-sort', on ? (dir === 'asc' ? 'ascending' : 'descending') : 'none');
      th.classList.toggle('pf-sorted', on);
    }
    const rows = viewRows(data.rows, { sort: this.sort, filter: this.filter });
    const shown = rows.slice(0, this.limit);
    this._cancelRest();
    const first = shown.slice(0, FIRST_ROWS);
    const html = first.map((r) => rowHtml(r, data.unit, this.diff, this.focus));
    if (!shown.length) {
      html.push(`<tr class="pf-top-msg"><td colspan="6">${this.filter ? 'No function matches the filter.' : 'No functions.'}</td></tr>`);
    }
    this.tbody.innerHTML = html.join('');
    if (shown.length > first.length) this._drawRest(shown.slice(first.length), data.unit);
    const total = data.rows.length;
    this.count.textContent = this.filter ? `${rows.length} of ${total} functions` : `${total} functions`;
    this.more.innerHTML = rows.length > shown.length
      ? `<button type="button">Show all ${rows.length} rows</button>` : '';
  }
}
