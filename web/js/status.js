// The status page (/status): build information, storage statistics (where profiles
// are kept; head, blocks or ClickHouse's spool; cardinality), the query-time
// symbolizer (its sources and cache), the loaded configuration and the
// command-line flags.

import { apiGet } from './api.js';
import { formatBytes, formatCount, formatTime, formatDuration } from './format.js';
import { escapeHtml } from './timeline.js';

const BUILD_FIELDS = [['version', 'Version'], ['revision', 'Revision'], ['branch', 'Branch'],
  ['buildUser', 'Build user'], ['buildDate', 'Build date'], ['goVersion', 'Go version'],
  ['compiler', 'Compiler']];

// A time range in ms as "start – end (duration)"; "empty" when both are 0.
export function formatSpan(min, max) {
  if (!min && !max) return 'empty';
  return `${formatTime(min)} – ${formatTime(max)} (${formatDuration((max - min) * 1e6)})`;
}

function section(id, title, inner) {
  return `<section class="card" id="${id}"><h3>${escapeHtml(title)}</h3>${inner}</section>`;
}

function kvTable(rows) {
  return `<table class="table kv"><tbody>${rows.map(([k, v]) =>
    `<tr><th>${escapeHtml(k)}</th><td>${v}</td></tr>`).join('')}</tbody></table>`;
}

function errorBox(what, e) {
  return `<p class="error-text">Loading ${escapeHtml(what)} failed: ${escapeHtml(e.message || String(e))}</p>`;
}

function cardinality(title, list) {
  if (!list || !list.length) return `<div class="card-list"><h4>${escapeHtml(title)}</h4><p class="muted">none</p></div>`;
  const max = Math.max(...list.map((x) => x.value), 1);
  return `<div class="card-list"><h4>${escapeHtml(title)}</h4><table class="table compact"><tbody>${list.map((x) =>
    `<tr><td class="mono wrap">${escapeHtml(x.name)}</td><td class="num">${escapeHtml(formatCount(x.value))}</td>
      <td class="bar-cell"><span class="bar" style="width:${((100 * x.value) / max).toFixed(1)}%"></span></td></tr>`).join('')}</tbody></table></div>`;
}

// ClickHouse mode: where the profiles are, and the local WAL that spools what
// ClickHouse has not taken yet (the head is that spool's, there are no blocks).
function renderClickhouse(d) {
  const h = d.headStats || {};
  const c = d.clickhouse || {};
  const where = `ClickHouse database <span class="mono">${escapeHtml(c.database || 'default')}</span>` +
    (c.cluster ? ` on cluster <span class="mono">${escapeHtml(c.cluster)}</span>` : '');
  let html = `<p class="storage-mode" data-storage="clickhouse">Profiles are kept in ${where}: every query reads ClickHouse. ` +
    'This server keeps no blocks; its WAL holds what ClickHouse has not taken yet.</p>';
  html += kvTable([
    ['Storage', where],
    ['Profiles sent to ClickHouse', String(Number(c.sentProfiles) || 0)],
    ['Waiting in the spool', `${escapeHtml(formatCount(c.spoolProfiles || 0))} profile${c.spoolProfiles === 1 ? '' : 's'}, ` +
      `${escapeHtml(formatBytes(c.spoolBytes || 0))} of ${escapeHtml(formatBytes(c.spoolMaxBytes || 0))}`],
    ['Last flush', c.lastFlush ? escapeHtml(formatTime(c.lastFlush)) : '<span class="muted">none yet</span>'],
    ['Flushes', `${escapeHtml(formatCount(c.flushes || 0))} (${escapeHtml(formatCount(c.flushFailures || 0))} failed)`],
    ['WAL size', escapeHtml(formatBytes(d.walBytes || 0))],
    ['WAL series', escapeHtml(formatCount(h.numSeries || 0))],
    ['WAL time range', escapeHtml(formatSpan(h.minTime, h.maxTime))],
  ]);
  return html;
}

// warnings: the answer's (in ClickHouse mode, why the series lists are empty)
export function renderTsdb(d, warnings = []) {
  const warn = warnings.map((x) => `<p class="warn-text storage-warning">${escapeHtml(x)}</p>`).join('');
  if (d.storage === 'clickhouse') return warn + renderClickhouse(d) + cardinalities(d);
  const h = d.headStats || {};
  const blocks = d.blocks || [];
  let html = kvTable([
    ['Head series', escapeHtml(formatCount(h.numSeries || 0))],
    ['Head profiles', escapeHtml(formatCount(h.numSamples || 0))],
    ['Head chunks', escapeHtml(formatCount(h.chunkCount || 0))],
    ['Head time range', escapeHtml(formatSpan(h.minTime, h.maxTime))],
    ['WAL size', escapeHtml(formatBytes(d.walBytes || 0))],
    ['Blocks size', `${escapeHtml(formatBytes(d.blockBytes || 0))} in ${blocks.length} block${blocks.length === 1 ? '' : 's'}`],
  ]);
  html += '<h4>Blocks</h4>';
  if (!blocks.length) {
    html += '<p class="muted">No persisted blocks yet: profiles are in the head (and its WAL) until the first compaction.</p>';
  } else {
    html += `<div class="table-scroll"><table class="table"><thead><tr><th>ULID</th><th>Time range</th><th class="num">Level</th>
      <th class="num">Series</th><th class="num">Profiles</th><th class="num">Chunks</th>
      <th class="num">Timestamps</th><th class="num">Profiles size</th><th class="num">Size</th></tr></thead><tbody>
      ${blocks.map((b) => `<tr><td class="mono">${escapeHtml(b.ulid)}</td>
        <td class="nowrap">${escapeHtml(formatSpan(b.minTime, b.maxTime))}</td>
        <td class="num">${b.level}</td><td class="num">${escapeHtml(formatCount(b.numSeries))}</td>
        <td class="num">${escapeHtml(formatCount(b.numSamples))}</td><td class="num">${escapeHtml(formatCount(b.numChunks))}</td>
        <td class="num">${escapeHtml(formatBytes(b.timestampBytes))}</td><td class="num">${escapeHtml(formatBytes(b.profileBytes))}</td>
        <td class="num">${escapeHtml(formatBytes(b.sizeBytes))}</td></tr>`).join('')}
      </tbody></table></div>`;
  }
  return warn + html + cardinalities(d);
}

// One source of /api/v1/status/symbolizer's list, as text.
function symbolizerSource(x) {
  if (x.type === 'dir') return `directory ${x.path}`;
  if (x.type === 'mapping-file') return 'the mapped file itself (when its build id matches)';
  if (x.type === 'debuginfod') return `debuginfod ${x.urls}`;
  return String(x.type);
}

// The symbolizer card from /api/v1/status/symbolizer's data.
export function renderSymbolizer(d) {
  if (!d.enabled) return '<p class="muted symbolizer-off">The symbolizer is off (--no-symbolizer.enabled): native profiles are shown as stored.</p>';
  const sources = d.sources || [];
  const n = (v) => escapeHtml(formatCount(Number(v) || 0));
  return kvTable([
    ['Sources', sources.length ? `<ol class="symbolizer-sources">${sources.map((x) =>
      `<li class="mono wrap">${escapeHtml(symbolizerSource(x))}</li>`).join('')}</ol>` : '<span class="muted">none</span>'],
    ['Cache size', `${escapeHtml(formatBytes(Number(d.cacheBytes) || 0))} (${n(d.cacheEntries)} addresses)`],
    ['Hits', n(d.hits)],
    ['Misses', n(d.misses)],
    ['Failures', n(d.failures)],
  ]);
}

function cardinalities(d) {
  return `<div class="card-lists">
    ${cardinality('Series by profile type', d.seriesCountByMetricName)}
    ${cardinality('Values by label name', d.labelValueCountByLabelName)}
    ${cardinality('Series by label pair', d.seriesCountByLabelValuePair)}</div>`;
}

// Mounts the page into main; returns {destroy}. The sections are drawn together
// once every request has answered (or failed), under a loading line until then:
// sections filled one by one, each of its own height, pushed the ones below
// about (a layout shift of 0.16, bench/ui_pages.sh).
export function mountStatus(main) {
  const ac = new AbortController();
  main.innerHTML = `
    <section class="page status-page">
      <div class="page-head"><h2>Status</h2>
        <nav class="toc"><a href="#status-build">Build</a> · <a href="#status-storage">Storage</a> ·
          <a href="#status-symbolizer">Symbolizer</a> · <a href="#status-config">Configuration</a> · <a href="#status-flags">Flags</a></nav></div>
      <p class="muted status-loading">Loading…</p>
    </section>`;
  const get = (path) => apiGet(path, {}, ac.signal);
  const ignoreAbort = (e) => e && e.name === 'AbortError';
  // each section: its id, title, and a promise of its HTML
  const part = (id, title, path, html, what) => ({
    id, title,
    html: get(path).then((r) => html(r), (e) => (ignoreAbort(e) ? null : errorBox(what, e))),
  });
  let yaml = '';
  const parts = [
    part('status-build', 'Build information', 'status/buildinfo', (r) => {
      const d = r.data || {};
      // only what the build says: a C build has a compiler and no Go version, and a
      // build outside git no revision, so empty fields are left out, not shown as —
      return kvTable(BUILD_FIELDS.filter(([k]) => d[k]).map(([k, label]) => [label, escapeHtml(d[k])]));
    }, 'the build information'),
    part('status-storage', 'Storage', 'status/tsdb', (r) => renderTsdb(r.data || {}, r.warnings || []),
      'the storage statistics'),
    part('status-symbolizer', 'Symbolizer', 'status/symbolizer', (r) => renderSymbolizer(r.data || {}),
      'the symbolizer statistics'),
    part('status-config', 'Configuration', 'status/config', (r) => {
      yaml = (r.data && r.data.yaml) || '';
      return `<div class="pre-wrap"><button type="button" class="btn small copy-btn" data-copy>Copy</button><pre class="config-yaml"></pre></div>`;
    }, 'the configuration'),
    part('status-flags', 'Command-line flags', 'status/flags', (r) => {
      const d = r.data || {};
      const names = Object.keys(d).sort();
      return `<table class="table kv flags"><tbody>${names.map((k) =>
        `<tr><th class="mono">--${escapeHtml(k)}</th><td class="mono">${escapeHtml(d[k])}</td></tr>`).join('')}</tbody></table>`;
    }, 'the flags'),
  ];
  Promise.all(parts.map((x) => x.html)).then((htmls) => {
    if (ac.signal.aborted) return;
    const page = main.querySelector('.status-page');
    page.querySelector('.status-loading').remove();
    page.insertAdjacentHTML('beforeend', parts.map((x, i) => section(x.id, x.title, htmls[i] || '')).join(''));
    const pre = main.querySelector('.config-yaml');
    if (pre) pre.textContent = yaml;
    const copy = main.querySelector('[data-copy]');
    if (copy) {
      copy.addEventListener('click', (e) => {
        if (navigator.clipboard) {
          navigator.clipboard.writeText(yaml).then(() => { e.target.textContent = 'Copied'; }, () => {});
        }
      });
    }
  });

  main.querySelector('.toc').addEventListener('click', (e) => {
    const a = e.target.closest('a[href^="#"]');
    if (!a) return;
    e.preventDefault();
    const el = main.querySelector(a.getAttribute('href'));
    if (el) el.scrollIntoView({ behavior: 'smooth', block: 'start' });
  });
  return { destroy() { ac.abort(); } };
}
