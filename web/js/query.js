// The query page's controls: the selector input (autocompletion of profile types, label
// names and values by cursor context, history of recent queries, inline errors) and the
// time range (presets, absolute from/to, live). The pure helpers come first and run in
// node; SelectorInput and RangeControls bind them to the DOM.

import { apiGet } from './api.js';
import { escapeHtml } from './timeline.js';
import { zoneOffset, timeZone, setTimeZone, zoneName, parseDuration } from './format.js';

// ---------------------------------------------------------------- completion context

const IDENT = /[a-zA-Z0-9_]/;
const METRIC_CH = /[a-zA-Z0-9_:]/;
const WS = /\s/;

// What the cursor at pos in a selector is on, for autocompletion:
//   {kind: 'metric', prefix, start, end}                   typing the profile type
//   {kind: 'labelName', prefix, start, end}                after "{" or ","
//   {kind: 'operator', prefix: '', start, end, label}      after a label name
//   {kind: 'labelValue', prefix, start, end, label, op, quote, closed}
//        inside a quoted value (quote '"', "'" or '`'; closed: the closing quote is
//        there and end is its index) or right after the operator (quote '')
//   {kind: 'none'}                                         nothing to suggest
// [start, end) is the part of text a suggestion replaces.
export function completionContext(text, pos = text.length) {
  let i = 0;
  let braces = false;
  let closedBraces = false;
  let expect = 'name';
  let label = '';
  let op = '';
  let quote = '';
  let strStart = -1;
  let quotedName = false;
  let atCursor = null;
  while (i < pos) {
    const c = text[i];
    if (quote) {
      if (c === '\\' && quote !== '`') { i += 2; continue; }
      if (c === quote) {
        quote = '';
        if (quotedName) {
          label = text.slice(strStart, i);
          expect = 'op';
          quotedName = false;
        } else expect = 'sep';
      }
      i++;
      continue;
    }
    if (!braces) {
      if (c === '{' && !closedBraces) { braces = true; expect = 'name'; }
      else if (c === '}') closedBraces = true;
      i++;
      continue;
    }
    if (c === '}') { braces = false; closedBraces = true; i++; continue; }
    if (c === '#') { // a comment runs to the end of the line
      while (i < pos && text[i] !== '\n') i++;
      continue;
    }
    if (WS.test(c)) { i++; continue; }
    if (c === ',') { expect = 'name'; i++; continue; }
    if (c === '"' || c === "'" || c === '`') {
      quote = c;
      strStart = i + 1;
      quotedName = expect === 'name';
      i++;
      continue;
    }
    if (c === '=' || c === '!') {
      const two = text.slice(i, i + 2);
      if (two === '=~' || two === '!~' || two === '!=') { op = two; i += 2; }
      else { op = c === '=' ? '=' : '!'; i++; }
      expect = 'value';
      continue;
    }
    if (IDENT.test(c)) {
      let j = i;
      while (j < pos && IDENT.test(text[j])) j++;
      if (j === pos) atCursor = { start: i, expect };
      if (expect === 'name') { label = text.slice(i, j); expect = 'op'; }
      else if (expect === 'value') expect = 'sep';
      i = j;
      continue;
    }
    i++;
  }
  if (quote) {
    if (quotedName) return { kind: 'none' };
    let end = pos;
    let closed = false;
    for (let j = pos; j < text.length; j++) {
      const c = text[j];
      if (c === '\\' && quote !== '`') { j++; continue; }
      if (c === quote) { end = j; closed = true; break; }
      if (c === '\n' && quote !== '`') break;
    }
    if (!closed) end = pos;
    return { kind: 'labelValue', prefix: text.slice(strStart, pos), start: strStart, end, label,
      op, quote, closed };
  }
  if (!braces) {
    if (closedBraces) return { kind: 'none' };
    let start = pos;
    while (start > 0 && METRIC_CH.test(text[start - 1])) start--;
    let end = pos;
    while (end < text.length && METRIC_CH.test(text[end])) end++;
    if (text.slice(0, start).trim() !== '') return { kind: 'none' };
    return { kind: 'metric', prefix: text.slice(start, pos), start, end };
  }
  const identEnd = (from) => {
    let e = from;
    while (e < text.length && IDENT.test(text[e])) e++;
    return e;
  };
  if (atCursor) {
    if (atCursor.expect === 'name') {
      return { kind: 'labelName', prefix: text.slice(atCursor.start, pos), start: atCursor.start,
        end: identEnd(pos) };
    }
    if (atCursor.expect === 'value') {
      return { kind: 'labelValue', prefix: text.slice(atCursor.start, pos), start: atCursor.start,
        end: identEnd(pos), label, op, quote: '', closed: false };
    }
    return { kind: 'none' };
  }
  if (expect === 'name') return { kind: 'labelName', prefix: '', start: pos, end: identEnd(pos) };
  if (expect === 'op') return { kind: 'operator', prefix: '', start: pos, end: pos, label };
  if (expect === 'value') {
    return { kind: 'labelValue', prefix: '', start: pos, end: pos, label, op, quote: '',
      closed: false };
  }
  return { kind: 'none' };
}

// The selector with what is missing at its end when it is a selector cut short: an
// unclosed quote of a label value, then the unclosed brace. 'heap{job="a' →
// 'heap{job="a"}'. Anything else is left as typed, for the API to name the error: a
// brace already closed, an unquoted value ('heap{job=demo"}' stays as it is, rather
// than becoming 'heap{job=demo"}"}'), a matcher without its value.
export function closeSelector(text) {
  let expect = ''; // '' outside braces; else name, op, value, sep
  let quote = '';
  let quoteIsName = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\' && quote !== '`') i++;
      else if (c === quote) { quote = ''; expect = quoteIsName ? 'op' : 'sep'; }
      continue;
    }
    if (!expect) {
      if (c === '{') expect = 'name';
      else if (!METRIC_CH.test(c) && !WS.test(c)) return text;
      continue;
    }
    if (WS.test(c)) continue;
    if (c === '"' || c === "'" || c === '`') {
      if (expect !== 'name' && expect !== 'value') return text;
      quote = c;
      quoteIsName = expect === 'name';
      continue;
    }
    if (expect === 'name' && IDENT.test(c)) {
      while (i + 1 < text.length && IDENT.test(text[i + 1])) i++;
      expect = 'op';
    } else if (expect === 'op' && (c === '=' || c === '!')) {
      const two = text.slice(i, i + 2);
      if (two === '=~' || two === '!~' || two === '!=') i++;
      else if (c === '!') return text;
      expect = 'value';
    } else if (expect === 'sep' && c === ',') expect = 'name';
    else return text; // a closed brace, an unquoted value, a comment: as typed
  }
  if (quote) return quoteIsName ? text : text + quote + '}';
  return expect === 'name' || expect === 'sep' ? text + '}' : text;
}

// Whether the end of text is inside (unclosed) braces, outside strings.
function insideBraces(text) {
  let quote = '';
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\' && quote !== '`') i++;
      else if (c === quote) quote = '';
    } else if (c === '"' || c === "'" || c === '`') quote = c;
    else if (c === '{') depth++;
    else if (c === '}') depth--;
  }
  return !quote && depth > 0;
}

// A value written inside the given quote.
export function escapeForQuote(value, quote) {
  if (quote === '`') return value;
  const q = quote || '"';
  return value.replace(/\\/g, '\\\\').replace(q === '"' ? /"/g : /'/g, '\\' + q)
    .replace(/\n/g, '\\n');
}

// Applies a suggestion in the context ctx of completionContext: {text, cursor}.
// A label name gets ="" with the cursor between the quotes (unless an operator follows);
// a value gets its quotes, and the cursor goes after the closing one.
export function applyCompletion(text, ctx, value) {
  const before = text.slice(0, ctx.start);
  const after = text.slice(ctx.end);
  if (ctx.kind === 'labelName') {
    if (/^\s*(=|!=|=~|!~)/.test(after)) {
      return { text: before + value + after, cursor: before.length + value.length };
    }
    return { text: before + value + '=""' + after, cursor: before.length + value.length + 2 };
  }
  if (ctx.kind === 'labelValue') {
    if (ctx.quote) {
      const esc = escapeForQuote(value, ctx.quote);
      const rest = ctx.closed ? after : ctx.quote + after;
      return { text: before + esc + rest, cursor: before.length + esc.length + 1 };
    }
    const esc = '"' + escapeForQuote(value, '"') + '"';
    return { text: before + esc + after, cursor: before.length + esc.length };
  }
  return { text: before + value + after, cursor: before.length + value.length };
}

// Orders candidates for what was typed: those starting with it first (case-insensitive),
// then those containing it, each group in the candidates' order; at most limit.
export function rankSuggestions(items, prefix, limit = 100) {
  const p = prefix.toLowerCase();
  if (!p) return items.slice(0, limit);
  const starts = [];
  const contains = [];
  for (const it of items) {
    const s = String(it).toLowerCase();
    if (s.startsWith(p)) starts.push(it);
    else if (s.includes(p)) contains.push(it);
  }
  return starts.concat(contains).slice(0, limit);
}

// The profile type a selector names (before the braces, or __name__="…"), else ''.
export function metricOf(text) {
  const m = /^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{|$)/.exec(text);
  if (m) return m[1];
  const n = /__name__\s*=\s*"((?:[^"\\]|\\.)*)"/.exec(text);
  return n ? n[1].replace(/\\(.)/g, '$1') : '';
}

// The 1-based column of a parse error message ("1:6: parse error: …"), or 0.
export function errorColumn(message) {
  const m = /(?:^|: )1:(\d+): parse error/.exec(message || '');
  return m ? Number(m[1]) : 0;
}

// ---------------------------------------------------------------- time range

export const RANGE_PRESETS = ['15m', '1h', '6h', '24h', '7d'];

// parseDuration (format.js) is part of this module's interface too
export { parseDuration };

// ms → the shortest Prometheus duration: 5400000 → "1h30m".
export function formatDurationShort(ms) {
  if (!(ms > 0)) return '0s';
  const parts = [];
  let rest = Math.round(ms);
  for (const [u, f] of [['d', 86400e3], ['h', 3600e3], ['m', 60e3], ['s', 1e3], ['ms', 1]]) {
    const n = Math.floor(rest / f);
    if (n > 0) { parts.push(n + u); rest -= n * f; }
  }
  return parts.join('');
}

// {range, from, to} of the URL state → the absolute {from, to} (ms) at now.
export function resolveRange(st, now) {
  if (st.range) {
    const d = parseDuration(st.range);
    if (d > 0) return { from: now - d, to: now };
  }
  if (st.from != null && st.to != null && st.to > st.from) return { from: st.from, to: st.to };
  return { from: now - 3600e3, to: now };
}

const pad2 = (n) => String(n).padStart(2, '0');

// ms → the value of an <input type="datetime-local" step="1"> in the shown zone
// (the browser's, or UTC: format.js's timeZone).
export function toLocalInput(ms) {
  const d = new Date(ms + zoneOffset(ms));
  return `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())}T` +
    `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}`;
}

// The value of a datetime-local input (the shown zone) → ms, NaN when empty or invalid.
export function fromLocalInput(s) {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(s || '')) return NaN;
  return timeZone() === 'utc' ? Date.parse(s + 'Z') : new Date(s).getTime();
}

// A range typed as Grafana's time picker takes it: "now-6h" or "6h" (the last 6
// hours: {range: '6h'}), "now-2d to now-1d" (absolute at now: {from, to}); "now" may
// end a relative range ("now-6h to now"). {error} names what is wrong.
export function parseRangeText(text, now) {
  const t = String(text || '').trim().toLowerCase();
  const rel = (x) => {
    const y = x.trim();
    if (y === 'now') return 0;
    const m = /^(?:now\s*-\s*)?(\w+)$/.exec(y);
    const d = m ? parseDuration(m[1]) : NaN;
    return d > 0 ? d : NaN;
  };
  if (!t) return { error: 'Type a range such as now-6h, or now-2d to now-1d' };
  const parts = t.split(/\s+to\s+/);
  if (parts.length > 2) return { error: `"${text}": one "to" at most` };
  const a = rel(parts[0]);
  const b = parts.length === 2 ? rel(parts[1]) : 0;
  if (Number.isNaN(a) || a === 0) {
    return { error: `"${parts[0].trim()}" is not a time before now: write now-6h, 6h or now-90m` };
  }
  if (Number.isNaN(b)) return { error: `"${parts[1].trim()}" is not now or a time before it (now-1h)` };
  if (b >= a) return { error: `"${text}" ends before it starts` };
  if (b === 0) return { range: formatDurationShort(a) };
  return { from: now - a, to: now - b };
}

// ---------------------------------------------------------------- history

const HISTORY_KEY = 'profd.history';
const HISTORY_MAX = 25;

// The list with q moved (or added) to the front, at most max long.
export function addHistory(list, q, max = HISTORY_MAX) {
  const s = String(q || '').trim();
  if (!s) return list.slice(0, max);
  return [s].concat(list.filter((x) => x !== s)).slice(0, max);
}

export function loadHistory() {
  try {
    const v = JSON.parse(localStorage.getItem(HISTORY_KEY) || '[]');
    return Array.isArray(v) ? v.filter((x) => typeof x === 'string') : [];
  } catch (e) {
    return [];
  }
}

export function rememberQuery(q) {
  try {
    localStorage.setItem(HISTORY_KEY, JSON.stringify(addHistory(loadHistory(), q)));
  } catch (e) { /* storage unavailable: no history */ }
}

// ---------------------------------------------------------------- suggestions source

const CACHE_MS = 30e3;
const cache = new Map();

// Cached GET of a list endpoint (labels, label values); [] on failure.
async function cachedList(path, params) {
  const key = path + '?' + JSON.stringify(params);
  const hit = cache.get(key);
  if (hit && Date.now() - hit.at < CACHE_MS) return hit.promise;
  const promise = apiGet(path, params).then((r) => {
    const list = r.data || [];
    // an empty answer (a first run, before the first scrape) is asked again next time
    if (!list.length && cache.get(key) && cache.get(key).promise === promise) cache.delete(key);
    return list;
  }, () => {
    cache.delete(key);
    return [];
  });
  cache.set(key, { at: Date.now(), promise });
  return promise;
}

export function profileTypes() {
  return cachedList('label/__name__/values', {});
}

const OPERATORS = [
  { text: '=', kind: 'equals' }, { text: '!=', kind: 'differs' },
  { text: '=~', kind: 'matches regex' }, { text: '!~', kind: 'does not match regex' }];

// The suggestions for a context: [{text, kind, value?}] (value: what to insert when it
// differs from text).
async function suggestionsFor(text, ctx) {
  const metric = metricOf(text);
  const match = metric ? { 'match[]': metric } : {};
  if (ctx.kind === 'metric') {
    const types = await profileTypes();
    return rankSuggestions(types, ctx.prefix).map((t) => ({ text: t, kind: 'profile type' }));
  }
  if (ctx.kind === 'labelName') {
    const names = (await cachedList('labels', match)).filter((n) => n !== '__name__' || !metric);
    return rankSuggestions(names, ctx.prefix).map((t) => ({ text: t, kind: 'label' }));
  }
  if (ctx.kind === 'operator') return OPERATORS.slice();
  if (ctx.kind === 'labelValue') {
    if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(ctx.label)) return [];
    const values = ctx.label === '__name__'
      ? await profileTypes()
      : await cachedList(`label/${ctx.label}/values`, match);
    const prefix = ctx.prefix.replace(/\\(.)/g, '$1');
    return rankSuggestions(values, prefix).map((t) => ({ text: t,
      kind: ctx.label === '__name__' ? 'profile type' : ctx.label }));
  }
  return [];
}

// ---------------------------------------------------------------- the selector input

// Binds the selector input: suggestions under it, keyboard navigation, history, inline
// errors. onRun(text) runs the query.
export class SelectorInput {
  constructor({ input, list, error, onRun }) {
    this.input = input;
    this.list = list;
    this.error = error;
    this.onRun = onRun;
    this.items = [];
    this.active = -1;
    this.ctx = null;
    this.seq = 0;
    input.setAttribute('autocomplete', 'off');
    input.setAttribute('spellcheck', 'false');
    input.setAttribute('role', 'combobox');
    input.setAttribute('aria-autocomplete', 'list');
    input.setAttribute('aria-expanded', 'false');
    input.setAttribute('aria-controls', list.id);
    list.setAttribute('role', 'listbox');
    input.addEventListener('input', () => { this.clearError(); this.update(); });
    input.addEventListener('focus', () => this.update());
    input.addEventListener('click', () => this.update());
    input.addEventListener('blur', () => setTimeout(() => this.close(), 120));
    input.addEventListener('keydown', (e) => this.keydown(e));
    list.addEventListener('mousedown', (e) => e.preventDefault());
    list.addEventListener('click', (e) => {
      const li = e.target.closest('li[data-i]');
      if (li) this.choose(Number(li.dataset.i));
    });
  }

  get value() {
    return this.input.value;
  }

  set value(v) {
    this.input.value = v;
  }

  isOpen() {
    return !this.list.hidden;
  }

  async update() {
    const seq = ++this.seq;
    const text = this.input.value;
    const pos = this.input.selectionStart == null ? text.length : this.input.selectionStart;
    let items;
    if (text.trim() === '') {
      const hist = loadHistory().map((h) => ({ text: h, kind: 'recent', whole: true }));
      const types = (await profileTypes()).map((t) => ({ text: t, kind: 'profile type' }));
      items = hist.slice(0, 10).concat(types);
      this.ctx = { kind: 'metric', prefix: '', start: 0, end: text.length };
    } else {
      this.ctx = completionContext(text, pos);
      items = await suggestionsFor(text, this.ctx);
      // Nothing more to add when the only suggestion is what is already there.
      if (items.length === 1 && this.ctx.kind !== 'operator' &&
          items[0].text === text.slice(this.ctx.start, this.ctx.end)) items = [];
      if (this.ctx.kind === 'metric') {
        const hist = rankSuggestions(loadHistory(), text, 5).filter((h) => h !== text)
          .map((h) => ({ text: h, kind: 'recent', whole: true }));
        items = items.concat(hist);
      }
    }
    if (seq !== this.seq || document.activeElement !== this.input) return;
    this.show(items);
  }

  // The recent queries alone (the history button).
  showHistory() {
    this.seq++;
    this.input.focus();
    const hist = loadHistory().map((h) => ({ text: h, kind: 'recent', whole: true }));
    this.ctx = { kind: 'metric', prefix: '', start: 0, end: this.input.value.length };
    if (!hist.length) {
      this.show([{ text: 'No recent queries yet: they are kept here once run', kind: '', whole: true, inert: true }]);
      return;
    }
    this.show(hist);
  }

  show(items) {
    this.items = items;
    this.active = -1;
    if (!items.length) { this.close(); return; }
    const prefix = this.ctx && this.ctx.prefix ? this.ctx.prefix.toLowerCase() : '';
    this.list.innerHTML = items.map((it, i) => {
      const t = it.text;
      const k = prefix && !it.whole ? t.toLowerCase().indexOf(prefix) : -1;
      const body = k >= 0
        ? escapeHtml(t.slice(0, k)) + '<b>' + escapeHtml(t.slice(k, k + prefix.length)) + '</b>' +
          escapeHtml(t.slice(k + prefix.length))
        : escapeHtml(t);
      return `<li role="option" id="${this.list.id}-${i}" data-i="${i}" class="kind-${it.kind === 'recent' ? 'recent' : 'other'}"><span class="s-text">${body}</span><span class="s-kind">${escapeHtml(it.kind)}</span></li>`;
    }).join('');
    this.list.hidden = false;
    this.input.setAttribute('aria-expanded', 'true');
  }

  close() {
    this.list.hidden = true;
    this.items = [];
    this.active = -1;
    this.input.setAttribute('aria-expanded', 'false');
    this.input.removeAttribute('aria-activedescendant');
  }

  move(d) {
    if (!this.items.length) return;
    const n = this.items.length;
    this.active = this.active < 0 ? (d > 0 ? 0 : n - 1) : (this.active + d + n) % n;
    for (const li of this.list.children) li.classList.toggle('active', Number(li.dataset.i) === this.active);
    const li = this.list.children[this.active];
    if (li) {
      li.scrollIntoView({ block: 'nearest' });
      this.input.setAttribute('aria-activedescendant', li.id);
    }
  }

  choose(i) {
    const it = this.items[i];
    if (!it || it.inert) return;
    let r;
    if (it.whole) r = { text: it.text, cursor: it.text.length };
    else r = applyCompletion(this.input.value, this.ctx, it.value || it.text);
    this.input.value = r.text;
    this.input.setSelectionRange(r.cursor, r.cursor);
    this.clearError();
    this.close();
    this.input.focus();
    this.update();
  }

  keydown(e) {
    const open = this.isOpen();
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      if (!open) { this.update(); return; }
      this.move(e.key === 'ArrowDown' ? 1 : -1);
    } else if (e.key === 'Enter') {
      if (open && this.active >= 0) {
        e.preventDefault();
        this.choose(this.active);
      } else {
        e.preventDefault();
        this.close();
        this.onRun(this.input.value);
      }
    } else if (e.key === 'Tab' && open && !e.shiftKey && this.items.length) {
      e.preventDefault();
      this.choose(this.active >= 0 ? this.active : 0);
    } else if (e.key === 'Escape') {
      if (open) { e.preventDefault(); e.stopPropagation(); this.close(); }
      else this.input.blur();
    } else if ((e.key === '{' || e.key === '}') && !e.ctrlKey && !e.metaKey && !e.altKey) {
      // "{" brings its "}"; typing "}" over that "}" steps over it.
      const el = this.input;
      const a = el.selectionStart;
      const b = el.selectionEnd;
      const v = el.value;
      if (e.key === '{' && a === b && !insideBraces(v.slice(0, a)) && v[a] !== '}') {
        e.preventDefault();
        el.setRangeText('{}', a, b, 'end');
        el.setSelectionRange(a + 1, a + 1);
        el.dispatchEvent(new Event('input'));
      } else if (e.key === '}' && a === b && v[a] === '}') {
        e.preventDefault();
        el.setSelectionRange(a + 1, a + 1);
        this.update();
      }
    } else if (e.key === ' ' && e.ctrlKey) {
      e.preventDefault();
      this.update();
    }
  }

  // Shows the API's message under the input; a parse error's column gets a caret.
  setError(message) {
    const col = errorColumn(message);
    this.error.replaceChildren();
    const msg = document.createElement('div');
    msg.className = 'error-text';
    msg.textContent = message;
    this.error.appendChild(msg);
    if (col > 0 && this.input.value.length < 300 && !this.input.value.includes('\n')) {
      const pre = document.createElement('pre');
      pre.className = 'error-caret';
      const bytes = new TextEncoder().encode(this.input.value);
      const upto = new TextDecoder().decode(bytes.slice(0, col - 1));
      pre.textContent = this.input.value + '\n' + ' '.repeat(upto.length) + '^';
      this.error.appendChild(pre);
    }
    this.error.hidden = false;
    this.input.setAttribute('aria-invalid', 'true');
  }

  clearError() {
    this.error.hidden = true;
    this.error.replaceChildren();
    this.input.removeAttribute('aria-invalid');
  }
}

// ---------------------------------------------------------------- the time range

// The time zone chosen (the browser's or UTC), kept in localStorage: read once at
// start (loadTimeZone); a change is saved and the page redrawn ('profd-timezone').
export function loadTimeZone() {
  let z = null;
  try { z = localStorage.getItem('profd.tz'); } catch (e) { /* no storage */ }
  setTimeZone(z === 'utc' ? 'utc' : 'local');
}

export function saveTimeZone(z) {
  setTimeZone(z);
  try { localStorage.setItem('profd.tz', timeZone()); } catch (e) { /* no storage */ }
  window.dispatchEvent(new Event('profd-timezone'));
}

// Preset buttons (data-range), absolute from/to inputs and the live toggle (#live).
// onChange receives {range} for a preset, {from, to} for absolute times, {live}.
// idPrefix names a second set on one page (#PREFIXrange-from, …); live: false leaves
// the live toggle out.
export class RangeControls {
  constructor(container, { onChange, idPrefix = '', live = true }) {
    this.onChange = onChange;
    container.innerHTML = `
      <div class="range-presets seg" role="group" aria-label="Time range, relative to now">
        ${RANGE_PRESETS.map((r) => `<button type="button" class="seg-btn" data-range="${r}" title="The last ${r}">${r}</button>`).join('')}
      </div>
      <label class="range-rel"><span class="sr-only">Range</span>
        <input type="text" class="mono" id="${idPrefix}range-text" placeholder="now-6h" spellcheck="false"
               title="A range before now: now-6h, 90m, now-2d to now-1d (Enter applies)"
               aria-label="Range relative to now (now-6h, now-2d to now-1d)"></label>
      <label class="range-abs"><span>From</span>
        <input type="datetime-local" step="1" id="${idPrefix}range-from" aria-label="From (local time)"></label>
      <label class="range-abs"><span>To</span>
        <input type="datetime-local" step="1" id="${idPrefix}range-to" aria-label="To (local time)"></label>
      <label class="range-tz"><span class="sr-only">Time zone</span>
        <select id="${idPrefix}time-zone" aria-label="Time zone of the times shown">
          <option value="local">Browser time (${zoneName()})</option><option value="utc">UTC</option></select></label>
      ${live ? `<label class="live-toggle" title="Refresh every 10 s and keep the end of the range at now">
        <input type="checkbox" id="${idPrefix}live"> <span>Live</span></label>` : ''}`;
    this.fromInput = container.querySelector('input[id$="range-from"]');
    this.toInput = container.querySelector('input[id$="range-to"]');
    this.live = container.querySelector('input[type=checkbox]');
    container.querySelector('.range-presets').addEventListener('click', (e) => {
      const b = e.target.closest('button[data-range]');
      if (b) this.onChange({ range: b.dataset.range });
    });
    const abs = () => {
      const from = fromLocalInput(this.fromInput.value);
      const to = fromLocalInput(this.toInput.value);
      if (!(to > from)) {
        this.toInput.setCustomValidity('"To" must be after "From"');
        this.toInput.reportValidity();
        return;
      }
      this.toInput.setCustomValidity('');
      this.onChange({ from, to });
    };
    this.fromInput.addEventListener('change', abs);
    this.toInput.addEventListener('change', abs);
    this.textInput = container.querySelector('input[id$="range-text"]');
    this.textInput.addEventListener('keydown', (e) => {
      if (e.key !== 'Enter') return;
      e.preventDefault();
      const r = parseRangeText(this.textInput.value, Date.now());
      this.textInput.setCustomValidity(r.error || '');
      if (r.error) {
        this.textInput.reportValidity();
        return;
      }
      this.onChange(r);
    });
    this.textInput.addEventListener('input', () => this.textInput.setCustomValidity(''));
    this.zone = container.querySelector('select[id$="time-zone"]');
    this.zone.value = timeZone();
    this.zone.addEventListener('change', () => saveTimeZone(this.zone.value));
    if (this.live) this.live.addEventListener('change', () => this.onChange({ live: this.live.checked }));
    this.container = container;
  }

  // st: {range, live}; resolved: {from, to} being shown.
  set(st, resolved) {
    for (const b of this.container.querySelectorAll('[data-range]')) {
      const on = st.range === b.dataset.range;
      b.classList.toggle('active', on);
      b.setAttribute('aria-pressed', on ? 'true' : 'false');
    }
    if (document.activeElement !== this.textInput) this.textInput.value = st.range ? 'now-' + st.range : '';
    this.zone.value = timeZone();
    if (document.activeElement !== this.fromInput) this.fromInput.value = toLocalInput(resolved.from);
    if (document.activeElement !== this.toInput) this.toInput.value = toLocalInput(resolved.to);
    if (this.live) this.live.checked = !!st.live;
    this.container.classList.toggle('is-live', !!st.live);
  }
}
