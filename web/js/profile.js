// The profile view: what is shown (one profile, a merge or a diff), the sample type,
// the flame graph and the top table side by side (or either alone), a function's
// sandwich (sandwich.js) in the flame graph's place, and a .pb.gz download for go tool
// pprof. mountProfile's contract is in web/README.md.

import { apiGet, apiUrl } from './api.js';
import { formatTime, formatRelative, formatValue, formatPercent } from './format.js';
import { FlameView, combineDiff, findPath, pathsTo, escapeRegExp } from './flame.js';
import { TopTable } from './top.js';
import { SandwichView, collapseRuntime, flameOptions, storedOrient } from './sandwich.js';
import { ExportMenu } from './export.js';
import { CallGraphView } from './callgraph.js';
import { quoteLabelValue, isBareMetricName } from './timeline.js';
import { splitSelector } from './chart.js';
import { secs, isRange, sideParams } from './sides.js';

// ---------------------------------------------------------------------------------
// Pure helpers

// The API's stack filters (pprof's -focus ... -prune_from; the query page keeps them in
// its URL as f.<name>) and granularities (gran=).
export const STACK_FILTERS = ['focus', 'ignore', 'hide', 'show', 'show_from', 'prune_from'];
export const GRANULARITIES = ['functions', 'lines', 'files', 'addresses'];

// The stack filters, granularity and normalize of a request, as API parameters.
export function reportParams(req) {
  const p = {};
  for (const k of STACK_FILTERS) if (req && req.filters && req.filters[k]) p[k] = req.filters[k];
  if (req && req.granularity && req.granularity !== 'functions') p.granularity = req.granularity;
  return p;
}

// A flame tree ({name, self, total, children}) with its values times r, rounded: side
// b of a normalized diff, scaled as the API scaled it.
export function scaleTree(node, r) {
  if (!node) return node;
  return { ...node, self: Math.round((node.self || 0) * r), total: Math.round((node.total || 0) * r),
    children: (node.children || []).map((c) => scaleTree(c, r)) };
}

// The tag_focus of one label value, as pprof's -tagfocus reads it: a string value as
// an anchored regex (endpoint=^/api$), a number with a unit as pprof names numeric
// labels (bytes=72kB) as itself, which pprof takes for that exact amount.
export function tagFocusOf(key, value) {
  if (/^-?\d+(\.\d+)?[a-zA-Z]+$/.test(value)) return `${key}=${value}`;
  return `${key}=^${escapeRegExp(value)}$`;
}

// sideParams (sides.js): a diff side's parameters, as a request of its own
export { sideParams };

// The /api/v1/query parameters of a profile view request (without report).
// req.tagFocus (optional): the sample-label filter, as tag_focus; req.aggregation
// (optional): a merge's aggregation, as aggregation.
export function queryParams(req) {
  if (!req) return {};
  const tf = { ...(req.tagFocus ? { tag_focus: req.tagFocus } : {}), ...reportParams(req) };
  if (req.mode === 'diff' && req.normalize) tf.normalize = 'true';
  if (req.aggregation && (req.mode === 'merge' || (req.mode === 'diff' && (isRange(req.a) || isRange(req.b))))) {
    tf.aggregation = req.aggregation;
  }
  if (req.mode === 'diff') {
    const p = { mode: 'diff', ...tf };
    if (req.query) p.query = req.query;
    for (const k of ['a', 'b']) {
      const s = req[k] || {};
      p[k + '.query'] = s.query || req.query;
      if (isRange(s)) {
        p[k + '.start'] = secs(s.start);
        p[k + '.end'] = secs(s.end);
      } else {
        p[k + '.time'] = secs(s.time);
      }
    }
    return p;
  }
  if (req.mode === 'merge') return { mode: 'merge', query: req.query, start: secs(req.start), end: secs(req.end), ...tf };
  return { mode: 'single', query: req.query, time: secs(req.time), ...tf };
}

// The selector of one group of a merge grouped by `label`: the merge's selector with
// label="value" added (for __name__, the name replaced), so that a group is a merge of
// its own. The empty value is the group of series without the label, as in PromQL
// (label="" matches them). ('heap{job="x"}', 'zone', 'a') → 'heap{job="x", zone="a"}'.
export function groupSelector(selector, label, value) {
  let name = '';
  let matchers = [];
  try {
    ({ name, matchers } = splitSelector(selector));
  } catch (e) {
    return selector; // not a selector the view can extend: the API names the error
  }
  if (label === '__name__') name = value;
  else {
    // an equality matcher on the label already there gives way to the group's
    const same = new RegExp(`^${label}\\s*=\\s*["'\`]`);
    matchers = matchers.filter((m) => !same.test(m)).concat(`${label}=${quoteLabelValue(value)}`);
  }
  if (name && !isBareMetricName(name)) {
    matchers.unshift(`__name__=${quoteLabelValue(name)}`);
    name = '';
  }
  return matchers.length ? `${name}{${matchers.join(', ')}}` : name;
}

// A group of a group_by answer as a matcher, which is also its key in the URL (the
// view's groupPick): {zone: 'a'} under group_by=zone → 'zone="a"'.
export function groupKey(label, labels) {
  return `${label}=${quoteLabelValue((labels && labels[label]) || '')}`;
}

// The groups of a group_by answer, the heaviest first (as a person asks "which one
// holds the most"; the API orders them by label value), each with its share of the
// groups' sum: [{key, value, total, share, profileCount, seriesCount, top}] where top
// is the group's heaviest function by flat (or '').
export function groupRows(data, label) {
  const groups = (data && data.groups) || [];
  let sum = 0;
  for (const g of groups) sum += Math.abs(g.total || 0);
  return groups.map((g) => {
    const rows = (g.report && g.report.rows) || [];
    return {
      key: groupKey(label, g.labels),
      value: (g.labels && g.labels[label]) || '',
      total: g.total || 0,
      unit: g.unit || '',
      share: sum ? (100 * Math.abs(g.total || 0)) / sum : 0,
      profileCount: g.profileCount || 0,
      seriesCount: g.seriesCount || 0,
      top: rows.length ? rows[0].name : '',
    };
  }).sort((a, b) => Math.abs(b.total) - Math.abs(a.total) || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
}

// {__name__:"heap", job:"api"} → 'heap{job="api"}', as Prometheus prints series (values
// quoted as Go's %q: a newline is \n, so the header stays one line and a valid selector).
export function seriesLabel(labels) {
  if (!labels) return '';
  const name = labels.__name__ || '';
  const rest = Object.keys(labels).filter((k) => k !== '__name__').sort()
    .map((k) => `${k}=${quoteLabelValue(labels[k])}`);
  return rest.length || !name ? `${name}{${rest.join(', ')}}` : name;
}

// The sample types in the order the select shows them: the default first.
export function orderSampleTypes(meta) {
  const types = (meta && meta.sampleTypes) || [];
  const def = meta && meta.defaultSampleType;
  const first = types.filter((t) => t.type === def);
  return first.concat(types.filter((t) => t.type !== def));
}

// The sample type to show: the view's when the profile has it, else the default.
export function chooseSampleType(meta, wanted) {
  const types = (meta && meta.sampleTypes) || [];
  if (wanted && types.some((t) => t.type === wanted)) return wanted;
  if (wanted && /^\d+$/.test(wanted) && types[Number(wanted)]) return types[Number(wanted)].type;
  return (meta && meta.defaultSampleType) || (types.length ? types[types.length - 1].type : '');
}

// The sample type to show when one is carried over from the profile open before:
// that one when this profile has a sample type of that name, else this one's default.
export function carrySampleType(meta, preferred) {
  const types = (meta && meta.sampleTypes) || [];
  if (preferred && types.some((t) => t.type === preferred)) return preferred;
  return chooseSampleType(meta, '');
}

// A one-line description of a set of profiles (a whole merge, or a diff side):
// "heap{…} at 2026-… (3m ago)" for one profile, "12 profiles of 2 series, … to …"
// for several.
export function describeProfiles(part, nowMs = Date.now()) {
  if (!part) return 'no profile';
  const series = part.series || [];
  const count = part.profileCount || 0;
  const nSeries = part.seriesCount || series.length;
  if (count <= 1 && nSeries <= 1) {
    const t = part.timestamp !== undefined ? part.timestamp : part.maxTime;
    return `${seriesLabel(series[0])} at ${formatTime(t)} (${formatRelative(t, nowMs)})`;
  }
  const one = nSeries === 1 && series[0] ? ` of ${seriesLabel(series[0])}` : ` of ${nSeries} series`;
  return `${count} profile${count === 1 ? '' : 's'}${one}, ${formatTime(part.minTime)} to ${formatTime(part.maxTime)}`;
}

// Header title and detail lines from the request alone (until meta answers, or when
// there is no profile): what was asked for.
export function describeRequest(req) {
  if (!req) return { title: '', lines: [] };
  const side = (s) => {
    const q = (s && s.query) || req.query || '';
    return isRange(s) ? `${q} from ${formatTime(s.start)} to ${formatTime(s.end)}` : `${q} at ${formatTime(s && s.time)}`;
  };
  if (req.mode === 'diff') {
    return { title: 'Diff: new (b) against base (a)', lines: [['base (a)', side(req.a)], ['new (b)', side(req.b)]] };
  }
  if (req.mode === 'merge') {
    return { title: 'Merge', lines: [['query', req.query || ''], ['time', `${formatTime(req.start)} to ${formatTime(req.end)}`]] };
  }
  return { title: req.query || 'Profile', lines: [['time', formatTime(req.time)]] };
}

// The API's warning for a diff with a side without profiles ("side b of the diff
// has no profile, so there is no diff"): the view says it once, in its message.
const EMPTY_SIDE_RE = /^side ([ab]) of the diff has no profile/;

// A diff without a profile on a side: one message naming the side and what it asked
// for, from the API's warnings; null when no side is named.
export function emptySideMessage(req, warnings) {
  const m = (warnings || []).map((x) => EMPTY_SIDE_RE.exec(x)).find(Boolean);
  if (!req || req.mode !== 'diff' || !m) return null;
  const k = m[1];
  const asked = describeRequest(req).lines[k === 'a' ? 0 : 1][1];
  const name = k === 'a' ? 'A (base)' : 'B (new)';
  return `Side ${name} has no profile: nothing matches ${asked}. Pick another mark or range for side ${k === 'a' ? 'A' : 'B'}.`;
}

// The header's line for a sample-label filter, or none.
function filterLines(req) {
  const out = req && req.tagFocus ? [['samples', `with labels matching ${req.tagFocus}`]] : [];
  const f = STACK_FILTERS.filter((k) => req && req.filters && req.filters[k]).map((k) => `${k}=${req.filters[k]}`);
  if (f.length) out.push(['stacks', f.join(', ')]);
  if (req && req.granularity && req.granularity !== 'functions') out.push(['granularity', req.granularity]);
  if (req && req.mode === 'diff' && req.normalize) out.push(['normalize', 'B scaled to A\'s totals']);
  return out;
}

// Header title and detail lines for a meta answer.
// The header's line for a merge's aggregation (meta's sampleTypes[].aggregation):
// 'average per profile' / 'sum' / 'average per profile of inuse_space, …; sum of the rest'.
export function aggregationLine(meta) {
  const types = (meta && meta.sampleTypes) || [];
  const avg = types.filter((t) => t.aggregation === 'avg').map((t) => t.type);
  if (!types.some((t) => t.aggregation)) return [];
  if (!avg.length) return [['aggregate', 'sum of the profiles']];
  if (avg.length === types.length) return [['aggregate', 'average per profile']];
  return [['aggregate', `average per profile of ${avg.join(', ')}; sum of the rest`]];
}

export function describe(meta, req, nowMs = Date.now()) {
  if (!meta) return { title: '', lines: [] };
  if (req.mode === 'diff') {
    return {
      title: 'Diff: new (b) against base (a)',
      lines: [['base (a)', describeProfiles(meta.a, nowMs)], ['new (b)', describeProfiles(meta.b, nowMs)],
        ...aggregationLine(meta)],
    };
  }
  if (req.mode === 'merge') {
    const n = meta.profileCount || 0;
    const s = meta.seriesCount || 0;
    return {
      title: `Merge of ${n} profile${n === 1 ? '' : 's'} of ${s} series`,
      lines: [['query', req.query || ''], ['time', `${formatTime(meta.minTime)} to ${formatTime(meta.maxTime)}`],
        ...aggregationLine(meta)],
    };
  }
  const t = meta.timestamp !== undefined ? meta.timestamp : meta.maxTime;
  return {
    title: seriesLabel((meta.series || [])[0]) || req.query || 'profile',
    lines: [['time', `${formatTime(t)} (${formatRelative(t, nowMs)})`]],
  };
}

// ---------------------------------------------------------------------------------
// The view (browser only)

const LAYOUTS = [['both', 'Both'], ['flame', 'Flame graph'], ['top', 'Top'], ['graph', 'Graph']];
const LAYOUT_KEY = 'profd.profile.layout';

function ensureStylesheet() {
  if (document.querySelector('link[rel="stylesheet"][href$="css/profile.css"]')) return;
  const link = document.createElement('link');
  link.rel = 'stylesheet';
  link.href = 'css/profile.css'; // under the page's <base href>
  document.head.append(link);
}

function h(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids) e.append(k);
  return e;
}

function storedLayout() {
  try {
    const v = localStorage.getItem(LAYOUT_KEY);
    return LAYOUTS.some(([k]) => k === v) ? v : 'both';
  } catch (e) {
    return 'both';
  }
}

export function mountProfile(container, req, view = {}, onView = () => {}, opts = {}) {
  ensureStylesheet();
  view = { ...view };
  const diff = req && req.mode === 'diff';
  // a merge split by a series label (req.groupBy): the groups, and the one shown
  const groupBy = req && req.mode === 'merge' && req.groupBy ? req.groupBy : '';
  let groups = null; // groupRows of the answer, once it is in
  let pick = groupBy && view.groupPick ? view.groupPick : '';
  let base = queryParams(pickedReq());
  let ctrl = new AbortController();
  let dataCtrl = null;
  let meta = null;
  let sampleType = view.sampleIndex || '';
  // a sample type carried over from the profile open before (used if this one has it)
  const carried = !sampleType && opts && opts.sampleType ? String(opts.sampleType) : '';
  let flameTree = null;
  let flameUnit = '';
  let destroyed = false;

  // --- DOM
  const root = h('section', { id: 'profile', class: 'pf-profile', 'data-state': 'loading', 'aria-busy': 'true' });
  const title = h('h2', { class: 'pf-title' }, diff ? 'Diff' : 'Profile');
  const details = h('dl', { class: 'pf-details' });
  const select = h('select', { id: 'sample-type', 'aria-label': 'Sample type', disabled: true });
  const layoutBar = h('div', { class: 'pf-seg', role: 'tablist', 'aria-label': 'Show' });
  let layout = storedLayout();
  for (const [k, label] of LAYOUTS) {
    layoutBar.append(h('button', { type: 'button', role: 'tab', 'data-layout': k, 'aria-selected': String(k === layout) }, label));
  }
  const download = h('a', {
    id: 'download', class: 'pf-button', href: apiUrl('query', { ...base, report: 'proto' }), download: '',
    title: 'The profile as .pb.gz, for go tool pprof',
  }, 'Download .pb.gz');
  const groupSelect = h('select', { id: 'profile-group-by', 'aria-label': 'Group the merge by a series label' },
    h('option', { value: '' }, 'nothing'));
  const groupLabel = h('label', { class: 'pf-label', title: 'One merge per value of a series label (as the values chart\'s Group by)' },
    h('span', {}, 'Group by'), groupSelect);
  const controls = h('div', { class: 'pf-controls' },
    h('label', { class: 'pf-label' }, h('span', {}, 'Sample type'), select), layoutBar, download);
  // the export menu (export.js); its flame graph is set once the view exists
  const exportMenu = new ExportMenu({ diff, copyLink: opts && opts.copyLink,
    name: () => [((meta && meta.series && meta.series[0]) || {}).__name__ || 'profile', sampleType, 'flame'] });
  controls.append(exportMenu.el);
  if (req && req.mode === 'merge') controls.insertBefore(groupLabel, layoutBar);
  // how a merge adds its profiles up (the API's aggregation): shown for merges and
  // for diffs with a merged side
  const ranged = req && (req.mode === 'merge' || (diff && (isRange(req.a) || isRange(req.b))));
  const aggSelect = h('select', { id: 'profile-aggregation', 'aria-label': 'How the merge adds its profiles up' },
    h('option', { value: '' }, 'by type'), h('option', { value: 'sum' }, 'sum'), h('option', { value: 'avg' }, 'average'));
  aggSelect.value = (req && req.aggregation) || '';
  const aggLabel = h('label', { class: 'pf-label', title: 'Sum the merged profiles, or average them per profile; by type averages snapshots (heap in use, goroutines, threads) and sums the rest' },
    h('span', {}, 'Aggregate'), aggSelect);
  if (ranged) controls.insertBefore(aggLabel, layoutBar);
  aggSelect.addEventListener('change', () => {
    if (opts && opts.onAggregation) opts.onAggregation(aggSelect.value);
  });
  const groupList = h('div', { id: 'profile-groups', class: 'pf-groups', role: 'radiogroup',
    'aria-label': 'The groups of the merge', 'data-state': groupBy ? 'loading' : 'none', hidden: !groupBy });
  const head = h('header', { class: 'pf-head' }, h('div', { class: 'pf-what' }, title, details), controls);
  const warn = h('div', { class: 'pf-warn', role: 'status', hidden: true });
  const msg = h('div', { class: 'pf-msg', role: 'alert', hidden: true });
  const topPane = h('div', { class: 'pf-pane pf-pane-top' });
  const flamePane = h('div', { class: 'pf-pane pf-pane-flame' });
  const graphPane = h('div', { class: 'pf-pane pf-pane-graph' });
  const body = h('div', { class: 'pf-body', 'data-layout': layout }, topPane, flamePane, graphPane);
  // stack filters (pprof's -focus ... -prune_from), granularity and, for a diff,
  // normalize: applied by the API to every report; kept in the URL by the app
  const FILTER_HELP = {
    focus: 'keep samples with a frame matching', ignore: 'drop samples with a frame matching',
    hide: 'drop matching frames', show: 'keep only matching frames',
    show_from: 'cut stacks above the outermost match', prune_from: 'cut stacks below the leaf-most match',
  };
  const filterInputs = {};
  const filterBox = h('details', { id: 'stack-filters', class: 'pf-filters' },
    h('summary', {}, 'Stack filters and granularity'));
  const filterGrid = h('div', { class: 'pf-filter-grid' });
  for (const k of STACK_FILTERS) {
    const inp = h('input', { type: 'text', class: 'mono', 'data-filter': k, spellcheck: 'false', autocomplete: 'off',
      placeholder: 'regex', 'aria-label': `${k}: ${FILTER_HELP[k]} (pprof's -${k})`, title: `${FILTER_HELP[k]} (pprof's -${k})` });
    inp.value = (req && req.filters && req.filters[k]) || '';
    filterInputs[k] = inp;
    filterGrid.append(h('label', { class: 'pf-label' }, h('span', {}, k), inp));
  }
  const granSelect = h('select', { id: 'granularity', 'aria-label': 'What a node is: functions, lines, files or addresses (pprof\'s -lines ...)' },
    ...GRANULARITIES.map((g) => h('option', { value: g }, g)));
  granSelect.value = (req && req.granularity) || 'functions';
  filterGrid.append(h('label', { class: 'pf-label' }, h('span', {}, 'granularity'), granSelect));
  const normalizeBox = h('input', { type: 'checkbox', id: 'normalize' });
  normalizeBox.checked = !!(req && req.normalize);
  if (diff) {
    filterGrid.append(h('label', { class: 'pf-label pf-check', title: 'Scale B so that its total equals A\'s before subtracting (pprof\'s -normalize): ranges of different lengths compare by shape' },
      normalizeBox, h('span', {}, 'normalize B to A')));
  }
  const applyFilters = h('button', { type: 'button', id: 'filters-apply', class: 'pf-button' }, 'Apply');
  const clearFilters = h('button', { type: 'button', id: 'filters-clear', class: 'pf-button' }, 'Clear');
  filterGrid.append(h('div', { class: 'pf-filter-acts' }, applyFilters, clearFilters));
  filterBox.append(filterGrid);
  if (req && (req.filters || req.granularity || req.normalize)) filterBox.open = true;
  const submitFilters = (clear = false) => {
    const filters = {};
    if (!clear) for (const k of STACK_FILTERS) if (filterInputs[k].value.trim()) filters[k] = filterInputs[k].value.trim();
    if (opts && opts.onFilters) {
      opts.onFilters({ filters, gran: clear || granSelect.value === 'functions' ? '' : granSelect.value,
        normalize: !clear && diff && normalizeBox.checked });
    }
  };
  applyFilters.addEventListener('click', () => submitFilters());
  clearFilters.addEventListener('click', () => submitFilters(true));
  filterGrid.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && e.target.dataset && e.target.dataset.filter) { e.preventDefault(); submitFilters(); }
  });
  granSelect.addEventListener('change', () => submitFilters());
  normalizeBox.addEventListener('change', () => submitFilters());

  // the sample-label explorer: report=tags's keys and values with their shares of the
  // sample type shown; a value focuses the view on its samples (tag_focus)
  const labelBody = h('div', { class: 'pf-label-keys' });
  const labelBox = h('details', { id: 'label-explorer', class: 'pf-labels', 'data-state': 'idle' },
    h('summary', {}, 'Sample labels'), labelBody);
  let labelCtrl = null;
  async function loadLabels() {
    if (!labelBox.open || !req || (!diff && !req.query)) return;
    if (labelCtrl) labelCtrl.abort();
    labelCtrl = new AbortController();
    const signal = labelCtrl.signal;
    labelBox.dataset.state = 'loading';
    labelBody.textContent = 'Loading…';
    try {
      const r = await apiGet('query', { ...base, report: 'tags', sample_index: sampleType || undefined }, signal);
      if (signal.aborted) return;
      renderLabels(r.data);
    } catch (e) {
      if (e.name === 'AbortError' || signal.aborted) return;
      labelBox.dataset.state = 'error';
      labelBody.textContent = errorText(e);
    }
  }
  function renderLabels(data) {
    labelBody.textContent = '';
    const keys = (data && data.keys) || [];
    labelBox.dataset.state = 'ready';
    if (!keys.length) {
      labelBody.append(h('span', { class: 'pf-muted' }, 'The samples carry no labels.'));
      return;
    }
    for (const k of keys) {
      const list = h('div', { class: 'pf-label-values' });
      for (const v of (k.values || []).slice(0, 20)) {
        const b = h('button', { type: 'button', class: 'pf-label-value', 'data-key': k.key, 'data-value': v.value,
          title: `Show only the samples with ${k.key}=${v.value}` },
        h('span', { class: 'pf-label-bar', 'aria-hidden': 'true' }, h('span', { style: `width:${Math.max(0, Math.min(100, Math.abs(v.percent || 0))).toFixed(1)}%` })),
        h('span', { class: 'pf-label-name' }, v.value),
        h('span', { class: 'pf-label-share' }, `${formatPercent(v.percent)} · ${formatValue(v.total, data.unit)}`));
        list.append(b);
      }
      if ((k.values || []).length > 20) list.append(h('span', { class: 'pf-muted' }, `… ${k.values.length - 20} more`));
      labelBody.append(h('div', { class: 'pf-label-key', 'data-key': k.key },
        h('div', { class: 'pf-label-head' }, h('strong', {}, k.key), ` ${formatValue(k.total, data.unit)} `,
          h('button', { type: 'button', class: 'btn small pf-label-group', 'data-group': k.key,
            title: `Each value of ${k.key} with the function that weighs most in its samples (group_by_sample_label)` }, 'Top function of each value')),
        list));
    }
  }
  // a key's breakdown: group_by_sample_label's groups, each value's top function
  // (report=top, limit=1) written under the value
  async function breakDownLabel(key, box) {
    const btn = box.querySelector('button.pf-label-group');
    btn.disabled = true;
    box.dataset.state = 'loading';
    try {
      const r = await apiGet('query', { ...base, report: 'top', limit: 1, group_by_sample_label: key,
        sample_index: sampleType || undefined }, labelCtrl ? labelCtrl.signal : undefined);
      const groups = (r.data && r.data.groups) || [];
      for (const b of box.querySelectorAll('button.pf-label-value')) {
        const g = groups.find((x) => x.value === b.dataset.value);
        const row = g && g.report && g.report.rows && g.report.rows[0];
        let t = b.querySelector('.pf-label-top');
        if (!t) { t = h('span', { class: 'pf-label-top' }); b.append(t); }
        t.textContent = row ? `top ${row.name}` : 'no samples';
      }
      box.dataset.state = 'grouped';
    } catch (e) {
      if (e.name === 'AbortError') return;
      box.dataset.state = 'error';
      btn.disabled = false;
      btn.textContent = `Failed: ${errorText(e)}`;
    }
  }
  labelBox.addEventListener('toggle', () => loadLabels());
  labelBody.addEventListener('click', (e) => {
    const g = e.target.closest('button.pf-label-group');
    if (g) { breakDownLabel(g.dataset.group, g.closest('.pf-label-key')); return; }
    const b = e.target.closest('button.pf-label-value');
    if (b && opts && opts.onTagFocus) opts.onTagFocus(tagFocusOf(b.dataset.key, b.dataset.value));
  });

  // a diff's legend: what its colours and its table's columns are
  const legend = diff ? h('div', { id: 'diff-legend', class: 'pf-legend', role: 'note', 'aria-label': 'Diff colours' },
    h('span', { class: 'pf-key pf-key-up' }, h('i', { 'aria-hidden': 'true' }), 'more in B (grew)'),
    h('span', { class: 'pf-key pf-key-down' }, h('i', { 'aria-hidden': 'true' }), 'less in B (shrank)'),
    h('span', { class: 'pf-key pf-key-same' }, h('i', { 'aria-hidden': 'true' }), 'unchanged'),
    h('span', {}, 'A: the base, B: the new; Δ = B − A, Δ% of A')) : '';
  root.append(head, filterBox, labelBox, warn, msg, groupList, legend, body);
  container.append(root);

  const flame = new FlameView(flamePane, {
    inverted: (view.orient || storedOrient()) === 'flame',
    onContext: (name) => setPivot(name),
    onZoom(path) {
      view.focus = path.join(';');
      top.setFocus(path.length ? path[path.length - 1] : '');
      onView({ focus: view.focus });
    },
    onSearch(q) {
      view.search = q;
      onView({ search: q });
    },
  });
  const top = new TopTable(topPane, {
    onSort(s) {
      view.sort = s;
      onView({ sort: s });
    },
    onFilter(f) {
      view.filter = f;
      onView({ filter: f });
    },
    onFocus(name) {
      const search = '^' + escapeRegExp(name) + '$';
      view.focus = name;
      view.search = search;
      flame.setSearch(search);
      applyFocus();
      onView({ focus: name, search });
      if (layout === 'top') setLayout('both');
    },
    onSandwich: (name) => setPivot(name),
  });
  exportMenu.opts.flame = flame;
  top.setView(view);
  flame.setSearch(view.search || '');
  // the call graph: a click on a function focuses it as a top-table row click does
  const graph = new CallGraphView(graphPane, {
    onFocus(name) {
      const search = '^' + escapeRegExp(name) + '$';
      view.focus = name;
      view.search = search;
      flame.setSearch(search);
      applyFocus();
      onView({ focus: name, search });
    },
  });
  const showGraph = () => graph.show(apiUrl('query', { ...base, report: 'svg', sample_index: sampleType || undefined }), layout === 'graph');

  // --- the flame graph's options and the sandwich (view.orient, view.runtime, view.pivot)
  let sandwich = null;
  flame.bar.append(flameOptions(view, (partial) => {
    Object.assign(view, partial);
    onView(partial);
    if ('orient' in partial) flame.setInverted(partial.orient === 'flame');
    if ('runtime' in partial) showTree();
  }));
  function showTree() {
    if (flame.canvas.dataset.state === 'ready' || flameTree) {
      flame.setData(flameTree && view.runtime === 'collapse' ? collapseRuntime(flameTree) : flameTree, flameUnit, diff);
      applyFocus();
    }
    if (sandwich && flameTree) sandwich.setData(flameTree, view.pivot, flameUnit, diff, view.runtime === 'collapse');
  }
  function setPivot(name) {
    view.pivot = name || '';
    onView({ pivot: view.pivot });
    showPivot();
  }
  function showPivot() {
    flame.root.hidden = !!view.pivot;
    if (!view.pivot) {
      if (sandwich) sandwich.destroy();
      sandwich = null;
      flame.relayout(true);
      return;
    }
    if (!sandwich) sandwich = new SandwichView(flamePane, { onClose: () => setPivot(''), onPivot: setPivot });
    if (layout === 'top') setLayout('both');
    if (flameTree) sandwich.setData(flameTree, view.pivot, flameUnit, diff, view.runtime === 'collapse');
    else sandwich.setState(flame.canvas.dataset.state, flame.msg.textContent);
  }
  showPivot();

  // --- groups
  // The request of what is shown: the whole merge, or the picked group's merge.
  function pickedReq() {
    if (!pick) return req;
    const m = /^([a-zA-Z_][a-zA-Z0-9_]*)=/.exec(pick);
    if (!m || m[1] !== groupBy) return req;
    const known = groups && groups.find((g) => g.key === pick);
    let value = known ? known.value : '';
    if (!known) {
      try {
        value = JSON.parse(pick.slice(m[0].length));
      } catch (e) {
        return req; // not a group of this merge: loadGroups says so once they are in
      }
    }
    return { ...req, query: groupSelector(req.query, groupBy, String(value)) };
  }

  function setPick(key, report = true) {
    pick = key;
    base = queryParams(pickedReq());
    download.href = apiUrl('query', { ...base, report: 'proto' });
    if (report) {
      view.groupPick = key;
      onView({ groupPick: key });
    }
    renderGroups();
    if (meta) renderDescription(describe(meta, req));
  }

  // The label names of the merge's series, for the group-by select.
  async function loadGroupLabels() {
    let names = [];
    try {
      const r = await apiGet('labels', { 'match[]': req.query, start: secs(req.start), end: secs(req.end) }, ctrl.signal);
      names = (r.data || []).filter((n) => n !== '__name__');
    } catch (e) {
      if (e.name === 'AbortError') return;
    }
    if (groupBy && !names.includes(groupBy)) names.push(groupBy);
    for (const n of names.sort()) groupSelect.append(h('option', { value: n }, n));
    groupSelect.value = groupBy;
  }
  groupSelect.addEventListener('change', () => {
    if (opts && opts.onGroupBy) opts.onGroupBy(groupSelect.value);
  });

  function renderGroups() {
    groupList.textContent = '';
    if (!groupBy) return;
    if (!groups) {
      groupList.append(h('span', { class: 'pf-muted' }, `Grouping by ${groupBy}…`));
      return;
    }
    let sum = 0;
    let weighted = 0;
    let profiles = 0;
    for (const g of groups) { sum += g.total; weighted += g.total * g.profileCount; profiles += g.profileCount; }
    // an averaged sample type: the whole merge is the average over every group's
    // profiles, each group's average weighed by its number of profiles
    const shown = meta && (meta.sampleTypes || []).find((t) => t.type === (sampleType || meta.defaultSampleType));
    if (shown && shown.aggregation === 'avg' && profiles) sum = Math.round(weighted / profiles);
    const unit = groups.length ? groups[0].unit : '';
    const item = (key, name, total, share, detail, title, raw, topFn) => {
      const b = h('button', { type: 'button', class: 'pf-group', role: 'radio', 'data-key': key,
        'data-total': String(raw), 'aria-checked': String(key === pick), title },
      h('span', { class: 'pf-group-name' }, h('span', { class: 'pf-group-swatch', 'aria-hidden': 'true' }), name),
      h('span', { class: 'pf-group-total' }, total),
      h('span', { class: 'pf-group-bar', 'aria-hidden': 'true' }, h('span', { style: `width:${Math.max(0, Math.min(100, share)).toFixed(1)}%` })),
      h('span', { class: 'pf-group-detail pf-muted' }, detail));
      // the top function on a line of its own, so that the counts do not cut it off
      if (topFn) b.append(h('span', { class: 'pf-group-top', title: topFn }, h('span', { class: 'pf-muted' }, 'top '), topFn));
      return b;
    };
    groupList.append(item('', `All ${groups.length} group${groups.length === 1 ? '' : 's'}`, formatValue(sum, unit), 100,
      `${profiles} profile${profiles === 1 ? '' : 's'}`, 'The whole merge', sum));
    for (const g of groups) {
      const name = g.value === '' ? `no ${groupBy}` : g.value;
      const detail = `${formatPercent(g.share)} · ${g.profileCount} profile${g.profileCount === 1 ? '' : 's'} of ${g.seriesCount} series`;
      groupList.append(item(g.key, name, formatValue(g.total, g.unit), g.share, detail,
        `${g.key}: ${detail}${g.top ? ` · top: ${g.top}` : ''}`, g.total, g.top));
    }
    paintSwatches();
  }

  // Each group's swatch in the colour of its line on the values chart, when the chart
  // draws one (opts.groupColor).
  function paintSwatches() {
    for (const b of groupList.querySelectorAll('button[data-key]')) {
      const g = groups && groups.find((x) => x.key === b.dataset.key);
      const c = g && opts && opts.groupColor ? opts.groupColor(g.value) : '';
      const sw = b.querySelector('.pf-group-swatch');
      sw.style.background = c || '';
      sw.hidden = !c;
      b.dataset.color = c || '';
    }
  }
  groupList.addEventListener('click', (e) => {
    const b = e.target.closest('button[data-key]');
    if (!b || b.dataset.key === pick) return;
    setPick(b.dataset.key);
    loadData();
  });
  groupList.addEventListener('keydown', (e) => {
    if (!['ArrowDown', 'ArrowRight', 'ArrowUp', 'ArrowLeft'].includes(e.key)) return;
    const bs = [...groupList.querySelectorAll('button[data-key]')];
    const i = bs.indexOf(document.activeElement);
    if (i < 0) return;
    e.preventDefault();
    const next = bs[(i + (e.key === 'ArrowDown' || e.key === 'ArrowRight' ? 1 : bs.length - 1)) % bs.length];
    next.focus();
    next.click();
  });

  // The groups' totals (and each one's top function) in the sample type shown.
  let groupCtrl = null;
  async function loadGroups() {
    if (!groupBy || destroyed) return;
    if (groupCtrl) groupCtrl.abort();
    groupCtrl = new AbortController();
    const signal = groupCtrl.signal;
    const si = sampleType || undefined;
    groupList.dataset.state = 'loading';
    try {
      const r = await apiGet('query', { ...queryParams(req), report: 'top', limit: 1, group_by: groupBy, sample_index: si }, signal);
      if (signal.aborted) return;
      addWarnings(r.warnings);
      groups = groupRows(r.data, groupBy);
      groupList.dataset.state = 'ready';
      groupList.dataset.groups = String(groups.length);
      if (pick && !groups.some((g) => g.key === pick)) {
        // the URL's group is not one of this merge's: show the whole merge, and say so
        setPick('');
        loadData();
        return;
      }
      renderGroups();
    } catch (e) {
      if (e.name === 'AbortError' || signal.aborted) return;
      groupList.dataset.state = 'error';
      groupList.textContent = 'No groups: ' + errorText(e);
    }
  }

  // --- behaviour
  function setLayout(k) {
    layout = k;
    body.dataset.layout = k;
    for (const b of layoutBar.children) b.setAttribute('aria-selected', String(b.dataset.layout === k));
    try {
      localStorage.setItem(LAYOUT_KEY, k);
    } catch (e) { /* private mode */ }
    flame.relayout(true);
    if (sandwich) sandwich.relayout();
    showGraph();
  }
  layoutBar.addEventListener('click', (e) => {
    const b = e.target.closest('button[data-layout]');
    if (b) setLayout(b.dataset.layout);
  });

  select.addEventListener('change', () => {
    sampleType = select.value;
    view.sampleIndex = sampleType;
    onView({ sampleIndex: sampleType });
    loadData();
    loadGroups();
    loadLabels();
  });

  // Inside the view "/" goes to the flame graph's search (not the page's selector
  // input); Escape leaves a zoom from anywhere on the page but a field.
  const typingIn = (t) => t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable);
  const onRootKey = (e) => {
    if (e.key !== '/' || typingIn(e.target) || e.ctrlKey || e.metaKey || e.altKey) return;
    e.preventDefault();
    e.stopPropagation();
    flame.searchInput.focus();
    flame.searchInput.select();
  };
  root.addEventListener('keydown', onRootKey);
  const onKey = (e) => {
    const t = e.target;
    if (e.key !== 'Escape' || typingIn(t) || e.ctrlKey || e.metaKey || e.altKey) return;
    const inside = root.contains(t) || t === document.body || t === document.documentElement;
    if (inside && flame.canvas.dataset.root !== 'root') flame.userZoom([]);
  };
  document.addEventListener('keydown', onKey);

  function applyFocus() {
    const f = view.focus || '';
    let path = [];
    if (f && flameTree) {
      const p = f.split(';');
      if (findPath(flameTree, p)) path = p;
      else {
        const found = pathsTo(flameTree, f, 2);
        if (found.length === 1) path = found[0];
      }
    }
    flame.setZoom(path);
    const zp = flame.layout.zoomPath || [];
    top.setFocus(zp.length ? zp[zp.length - 1] : f.includes(';') ? '' : f);
    graph.setFocus(zp.length ? zp[zp.length - 1] : f.includes(';') ? '' : f);
  }

  function setRootState() {
    const states = [flame.canvas.dataset.state, top.table.dataset.state];
    let s = 'ready';
    if (msg.dataset.kind === 'error' || states.includes('error')) s = 'error';
    else if (msg.dataset.kind === 'empty') s = 'empty';
    else if (!meta || states.includes('loading')) s = 'loading';
    root.dataset.state = s;
    root.setAttribute('aria-busy', String(s === 'loading'));
  }

  function showMessage(kind, text) {
    msg.dataset.kind = kind || '';
    msg.textContent = text || '';
    msg.hidden = !text;
    msg.className = 'pf-msg' + (kind ? ' pf-msg-' + kind : '');
    // nothing to show below a whole-view message
    body.hidden = !!text;
    controls.hidden = !!text;
  }

  const warnings = new Set();
  function addWarnings(ws) {
    // a diff's empty side is said once, by the view's message (emptySideMessage)
    for (const w of ws || []) if (!EMPTY_SIDE_RE.test(w)) warnings.add(w);
    warn.textContent = '';
    for (const w of warnings) warn.append(h('div', {}, '⚠ ' + w));
    warn.hidden = warnings.size === 0;
  }

  function errorText(e) {
    return e && e.message ? e.message : String(e);
  }

  function renderDescription(d) {
    title.textContent = d.title;
    title.title = d.title;
    details.textContent = '';
    for (const [k, v] of d.lines.concat(filterLines(req), groupLines())) {
      const dt = h('dt', {}, k);
      // a diff's sides carry the A and B of the timeline's picks
      const side = diff ? (k.startsWith('base') ? 'a' : k.startsWith('new') ? 'b' : '') : '';
      if (side) dt.prepend(h('span', { class: `tag tag-${side}` }, side.toUpperCase()), ' ');
      details.append(h('div', {}, dt, h('dd', { title: v }, v)));
    }
  }
  function groupLines() {
    if (!groupBy) return [];
    if (!pick) return [['groups', `by ${groupBy}: all`]];
    const g = groups && groups.find((x) => x.key === pick);
    return [['group', g ? `${pick}, ${g.profileCount} profile${g.profileCount === 1 ? '' : 's'} of ${g.seriesCount} series` : pick]];
  }
  renderDescription(describeRequest(req));
  if (req && req.mode === 'merge') loadGroupLabels();
  renderGroups();

  function renderHeader() {
    renderDescription(describe(meta, req));
    renderGroups(); // the whole merge's total depends on the sample type's aggregation
    select.textContent = '';
    for (const t of orderSampleTypes(meta)) {
      const total = formatValue(t.total, t.unit);
      // a diff's menu says each side's total, named
      const text = diff && t.baseTotal !== undefined
        ? `${t.type} (A ${formatValue(t.baseTotal, t.unit)} → B ${formatValue(t.newTotal, t.unit)})`
        : `${t.type} (${t.aggregation === 'avg' ? 'average ' : ''}${total})`;
      const o = h('option', { value: t.type }, text);
      if (t.type === sampleType) o.selected = true;
      select.append(o);
    }
    select.value = sampleType;
    select.disabled = select.options.length < 2;
  }

  async function loadData() {
    if (dataCtrl) dataCtrl.abort();
    dataCtrl = new AbortController();
    const signal = dataCtrl.signal;
    const si = sampleType || undefined;
    exportMenu.update({ ...base, sample_index: si });
    flame.setState('loading');
    top.setState('loading');
    setRootState();
    showGraph();

    const topP = apiGet('query', { ...base, report: 'top', sample_index: si }, signal)
      .then(({ data, warnings: ws }) => {
        if (signal.aborted) return;
        addWarnings(ws);
        if (data) top.setData(data, diff);
        else top.setState('empty', 'No profile.');
      })
      .catch((e) => {
        if (e.name === 'AbortError' || signal.aborted) return;
        top.setState('error', errorText(e));
      });

    const flameP = (async () => {
      try {
        let tree;
        let unit;
        if (diff) {
          const [ra, rb] = await Promise.all(['a', 'b'].map((k) =>
            apiGet('query', { ...sideParams(req[k], req.query, req.aggregation), ...reportParams(req), tag_focus: req.tagFocus || undefined, report: 'flamegraph', sample_index: si }, signal)));
          addWarnings(ra.warnings.map((w) => 'base (a): ' + w));
          addWarnings(rb.warnings.map((w) => 'new (b): ' + w));
          let bRoot = rb.data && rb.data.root;
          if (req.normalize && bRoot && bRoot.total) {
            // b as the API scaled it (normalize): its total in the diff's meta over its own
            const m = await apiGet('query', { ...base, report: 'meta' }, signal);
            const types = (m.data && m.data.sampleTypes) || [];
            const t = types.find((x) => x.type === (si || (m.data && m.data.defaultSampleType)));
            if (t && t.newTotal !== undefined) bRoot = scaleTree(bRoot, t.newTotal / bRoot.total);
          }
          tree = combineDiff(ra.data && ra.data.root, bRoot);
          unit = (rb.data && rb.data.unit) || (ra.data && ra.data.unit);
          if (!ra.data && !rb.data) tree = null;
        } else {
          const r = await apiGet('query', { ...base, report: 'flamegraph', sample_index: si }, signal);
          addWarnings(r.warnings);
          tree = r.data && r.data.root;
          unit = r.data && r.data.unit;
        }
        if (signal.aborted) return;
        flameTree = tree;
        flameUnit = unit;
        flame.setState('ready');
        showTree();
      } catch (e) {
        if (e.name === 'AbortError' || signal.aborted) return;
        flame.setState('error', errorText(e));
        if (sandwich) sandwich.setState('error', errorText(e));
      }
    })();

    await Promise.all([topP, flameP]);
    if (!destroyed && !signal.aborted) setRootState();
  }

  async function load() {
    if (!req || (!diff && !req.query)) {
      showMessage('empty', 'Pick a profile: enter a selector and click a mark on the timeline.');
      flame.setState('empty');
      top.setState('empty');
      setRootState();
      return;
    }
    // the data does not wait for meta: the view's sample type (or the server's default)
    // is fetched at once, and again only if the profile turns out not to have it
    const metaP = apiGet('query', { ...queryParams(req), report: 'meta' }, ctrl.signal);
    const wanted = sampleType;
    // a carried sample type waits for meta (the profile may not have it)
    const dataP = carried ? null : loadData();
    if (carried) {
      flame.setState('loading');
      top.setState('loading');
      setRootState();
    }
    let res;
    try {
      res = await metaP;
    } catch (e) {
      if (e.name === 'AbortError') return;
      if (dataCtrl) dataCtrl.abort();
      showMessage('error', errorText(e));
      flame.setState('error');
      top.setState('error');
      setRootState();
      return;
    }
    if (destroyed) return; // closed while meta was on its way: fetch nothing more
    const empty = res.data ? null : emptySideMessage(req, res.warnings);
    addWarnings(res.warnings);
    meta = res.data;
    if (!meta) {
      if (dataCtrl) dataCtrl.abort();
      showMessage('empty', empty || 'No profile at that time — pick a mark on the timeline.');
      title.textContent = diff ? 'Diff' : 'No profile';
      flame.setState('empty');
      top.setState('empty');
      setRootState();
      return;
    }
    if (carried) {
      sampleType = carrySampleType(meta, carried);
      renderHeader();
      loadGroups();
      if (sampleType === carried) {
        view.sampleIndex = sampleType;
        onView({ sampleIndex: sampleType });
      }
      await loadData();
      setRootState();
      return;
    }
    sampleType = chooseSampleType(meta, wanted);
    renderHeader();
    loadGroups();
    if (sampleType !== wanted && !(wanted === '' && sampleType === meta.defaultSampleType)) {
      // the URL's sample type is not this profile's: say what is shown instead
      if (wanted) {
        view.sampleIndex = /^\d+$/.test(wanted) ? sampleType : '';
        onView({ sampleIndex: view.sampleIndex });
      }
      loadData();
    } else {
      await dataP.catch(() => {});
    }
    setRootState();
  }

  load().catch((e) => {
    if (destroyed) return;
    showMessage('error', errorText(e));
    setRootState();
  });

  return {
    recolor: paintSwatches,
    destroy() {
      destroyed = true;
      ctrl.abort();
      if (dataCtrl) dataCtrl.abort();
      if (groupCtrl) groupCtrl.abort();
      document.removeEventListener('keydown', onKey);
      flame.destroy();
      if (sandwich) sandwich.destroy();
      top.destroy();
      exportMenu.destroy();
      graph.destroy();
      root.remove();
    },
  };
}
