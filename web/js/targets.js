// The targets page (/targets): every scrape pool with its targets (health, profile type,
// last scrape, duration, error, URL, labels, discovered labels on demand) and the
// dropped targets, filtered by health and text; the filter is kept in the URL.

import { apiGet } from './api.js';
import { formatRelative, formatSeconds, formatTime } from './format.js';
import { escapeHtml, seriesSelector } from './timeline.js';
import { pagePath } from './base.js';

const HEALTHS = ['up', 'down', 'unknown'];
const ZERO_TIME = '0001-01-01T00:00:00Z';
const REFRESH_MS = 15e3;

// Whether a target passes the filter {health ('' for any), text}: the text matches,
// case-insensitively, its pool, profile type, URL, error or any label name or value.
export function targetMatches(t, filter) {
  if (filter.health && t.health !== filter.health) return false;
  const q = (filter.text || '').trim().toLowerCase();
  if (!q) return true;
  const hay = [t.scrapePool, t.profileType, t.scrapeUrl, t.lastError];
  for (const [k, v] of Object.entries(t.labels || {})) hay.push(k + '=' + v, k + '="' + v + '"');
  for (const [k, v] of Object.entries(t.discoveredLabels || {})) hay.push(k + '=' + v);
  return q.split(/\s+/).every((w) => hay.some((h) => String(h || '').toLowerCase().includes(w)));
}

// Active targets grouped by pool: [{pool, targets, up, total}] in the pools' order of
// first appearance, targets by instance then profile type.
export function groupByPool(active) {
  const pools = new Map();
  for (const t of active || []) {
    if (!pools.has(t.scrapePool)) pools.set(t.scrapePool, []);
    pools.get(t.scrapePool).push(t);
  }
  const out = [];
  for (const [pool, targets] of pools) {
    targets.sort((a, b) => {
      const ia = (a.labels && a.labels.instance) || a.scrapeUrl;
      const ib = (b.labels && b.labels.instance) || b.scrapeUrl;
      return ia < ib ? -1 : ia > ib ? 1 : (a.profileType < b.profileType ? -1 : a.profileType > b.profileType ? 1 : 0);
    });
    out.push({ pool, targets, up: targets.filter((t) => t.health === 'up').length,
      total: targets.length });
  }
  return out;
}

function labelChips(labels, skipName) {
  return Object.keys(labels || {}).sort()
    .filter((k) => !(skipName && k === '__name__'))
    .map((k) => `<span class="label-chip"><span class="k">${escapeHtml(k)}</span>=<span class="v">${escapeHtml(labels[k])}</span></span>`)
    .join(' ');
}

function lastScrapeCell(t, now) {
  if (!t.lastScrape || t.lastScrape === ZERO_TIME) return '<span class="muted">never</span>';
  const ms = Date.parse(t.lastScrape);
  if (!Number.isFinite(ms)) return escapeHtml(t.lastScrape);
  return `<time datetime="${escapeHtml(t.lastScrape)}" title="${escapeHtml(formatTime(ms))}">${escapeHtml(formatRelative(ms, now))}</time>`;
}

// Mounts the page into main; returns {destroy, popstate}.
export function mountTargets(main) {
  const params = new URLSearchParams(location.search);
  const filter = { health: HEALTHS.includes(params.get('health')) ? params.get('health') : '',
    text: params.get('search') || '' };
  const expanded = new Set();
  const collapsed = new Set();
  let data = null;
  let abort = null;
  main.innerHTML = `
    <section class="page targets-page">
      <div class="page-head">
        <h2>Targets</h2>
        <div class="filters">
          <div class="seg" role="group" aria-label="Filter by health">
            <button type="button" class="seg-btn" data-health="">All</button>
            <button type="button" class="seg-btn" data-health="up">Up</button>
            <button type="button" class="seg-btn" data-health="down">Down</button>
            <button type="button" class="seg-btn" data-health="unknown">Unknown</button>
          </div>
          <input type="search" id="targets-filter" placeholder="Filter: pool, type, URL, label…"
                 aria-label="Filter targets by text">
          <button type="button" class="btn small" id="targets-refresh" title="Reload the targets">Refresh</button>
        </div>
      </div>
      <p class="muted page-sub"></p>
      <div class="targets-body"><div class="skeleton-block"></div></div>
    </section>`;
  const body = main.querySelector('.targets-body');
  const sub = main.querySelector('.page-sub');
  const search = main.querySelector('#targets-filter');
  search.value = filter.text;

  function syncUrl() {
    const p = new URLSearchParams();
    if (filter.health) p.set('health', filter.health);
    if (filter.text) p.set('search', filter.text);
    const s = p.toString();
    const url = pagePath('/targets') + (s ? '?' + s : '');
    if (url !== location.pathname + location.search) history.replaceState(null, '', url);
  }

  function render() {
    for (const b of main.querySelectorAll('[data-health]')) {
      if (b.tagName !== 'BUTTON') continue;
      const on = b.dataset.health === filter.health;
      b.classList.toggle('active', on);
      b.setAttribute('aria-pressed', on ? 'true' : 'false');
    }
    if (!data) return;
    const now = Date.now();
    const active = data.activeTargets || [];
    const dropped = data.droppedTargets || [];
    const counts = { up: 0, down: 0, unknown: 0 };
    for (const t of active) counts[t.health] = (counts[t.health] || 0) + 1;
    sub.textContent = `${active.length} target${active.length === 1 ? '' : 's'} (one per target and profile type): ` +
      `${counts.up} up, ${counts.down} down, ${counts.unknown} not scraped yet; ${dropped.length} dropped by relabeling.`;
    for (const b of main.querySelectorAll('button[data-health]')) {
      const h = b.dataset.health;
      const n = h ? counts[h] || 0 : active.length;
      b.textContent = (h ? h[0].toUpperCase() + h.slice(1) : 'All') + ' ' + n;
    }
    const groups = groupByPool(active);
    let html = '';
    if (!groups.length) {
      html += `<div class="empty"><h3>No scrape pools</h3><p>profd scrapes nothing: add
        <code>scrape_configs</code> to the configuration file (the loaded one is on the
        <a href="status">status page</a>) and reload it with <code>SIGHUP</code> (or
        <code>POST /-/reload</code> when profd runs with
        <code>--web.enable-lifecycle</code>).</p></div>`;
    }
    let shown = 0;
    for (const g of groups) {
      const rows = g.targets.filter((t) => targetMatches(t, filter));
      shown += rows.length;
      const isCollapsed = collapsed.has(g.pool);
      const droppedN = (data.droppedTargetCounts || {})[g.pool] || 0;
      const cls = g.up === g.total ? 'ok' : g.up === 0 ? 'bad' : 'warn';
      html += `<section class="pool" data-pool="${escapeHtml(g.pool)}">
        <h3 class="pool-head">
          <button type="button" class="pool-toggle" data-pool-toggle="${escapeHtml(g.pool)}" aria-expanded="${!isCollapsed}">
            <span class="chev">${isCollapsed ? '▸' : '▾'}</span> ${escapeHtml(g.pool)}</button>
          <span class="count ${cls}">${g.up}/${g.total} up</span>
          ${droppedN ? `<span class="muted small-text">${droppedN} dropped</span>` : ''}
          ${rows.length !== g.total ? `<span class="muted small-text">${rows.length} shown</span>` : ''}
        </h3>`;
      if (!isCollapsed) {
        if (!rows.length) {
          html += '<p class="muted pool-none">No target of this pool matches the filter.</p>';
        } else {
          html += `<table class="table targets-table"><thead><tr>
            <th>Endpoint</th><th>Type</th><th>State</th><th>Labels</th><th>Last scrape</th>
            <th class="num">Duration</th><th>Error</th></tr></thead><tbody>`;
          for (const t of rows) {
            const id = t.scrapePool + '\n' + t.scrapeUrl;
            const open = expanded.has(id);
            const sel = seriesSelector(t.labels || {});
            html += `<tr class="target" data-health="${escapeHtml(t.health)}">
              <td class="endpoint"><a href="${escapeHtml(t.scrapeUrl)}" target="_blank" rel="noopener" title="${escapeHtml(t.globalUrl || t.scrapeUrl)}">${escapeHtml(t.scrapeUrl)}</a>
                <div class="row-links">
                  <a href="./?query=${encodeURIComponent(sel)}&range=1h" title="Open this target's profiles on the query page">profiles</a>
                  <button type="button" class="linkish" data-expand="${escapeHtml(id)}" aria-expanded="${open}">${open ? 'hide' : 'show'} discovered labels</button>
                </div></td>
              <td><code>${escapeHtml(t.profileType || '')}</code></td>
              <td><span class="health health-${escapeHtml(t.health)}">${escapeHtml(t.health)}</span></td>
              <td class="labels">${labelChips(t.labels, true)}</td>
              <td data-label="Last scrape" class="nowrap">${lastScrapeCell(t, now)}</td>
              <td data-label="Duration" class="num nowrap">${t.lastScrape && t.lastScrape !== ZERO_TIME ? escapeHtml(formatSeconds(t.lastScrapeDuration)) : ''}</td>
              <td class="error-cell">${t.lastError ? `<span class="error-text">${escapeHtml(t.lastError)}</span>` : ''}</td>
            </tr>`;
            if (open) {
              html += `<tr class="discovered"><td colspan="7"><div class="muted small-text">Discovered labels (before relabeling):</div>${labelChips(t.discoveredLabels, false)}</td></tr>`;
            }
          }
          html += '</tbody></table>';
        }
      }
      html += '</section>';
    }
    if (groups.length && !shown) {
      html += '<p class="empty-inline muted">No target matches the filter.</p>';
    }
    // dropped
    const dropOpen = expanded.has('\ndropped');
    const dropRows = dropped.filter((t) => targetMatches({ ...t, labels: {} }, { text: filter.text }));
    const perPool = Object.entries(data.droppedTargetCounts || {}).filter(([, n]) => n > 0);
    html += `<section class="dropped">
      <h3 class="pool-head"><button type="button" class="pool-toggle" data-expand="\ndropped" aria-expanded="${dropOpen}">
        <span class="chev">${dropOpen ? '▾' : '▸'}</span> Dropped targets</button>
        <span class="count">${dropped.length}</span>
        ${perPool.map(([p, n]) => `<span class="muted small-text">${escapeHtml(p)}: ${n}</span>`).join(' ')}
      </h3>`;
    if (dropOpen) {
      if (!dropRows.length) html += '<p class="muted">No dropped targets' + (filter.text ? ' match the filter' : '') + '.</p>';
      else {
        html += `<table class="table"><thead><tr><th>Pool</th><th>Type</th><th>Discovered labels</th></tr></thead><tbody>
          ${dropRows.map((t) => `<tr class="dropped-target"><td>${escapeHtml(t.scrapePool)}</td><td><code>${escapeHtml(t.profileType || '')}</code></td><td class="labels">${labelChips(t.discoveredLabels, false)}</td></tr>`).join('')}
          </tbody></table>`;
      }
    }
    html += '</section>';
    body.innerHTML = html;
  }

  async function load() {
    if (abort) abort.abort();
    const ac = new AbortController();
    abort = ac;
    try {
      const r = await apiGet('targets', {}, ac.signal);
      if (ac !== abort) return;
      data = r.data || {};
      render();
    } catch (e) {
      if (e && e.name === 'AbortError') return;
      if (data) return; // keep what is shown; the next refresh may succeed
      body.innerHTML = '';
      const p = document.createElement('p');
      p.className = 'error-text';
      p.textContent = 'Loading the targets failed: ' + e.message;
      body.appendChild(p);
    }
  }

  main.querySelector('.filters').addEventListener('click', (e) => {
    const b = e.target.closest('button[data-health]');
    if (b) {
      filter.health = b.dataset.health;
      syncUrl();
      render();
    }
    if (e.target.closest('#targets-refresh')) load();
  });
  search.addEventListener('input', () => {
    filter.text = search.value;
    syncUrl();
    render();
  });
  body.addEventListener('click', (e) => {
    const ex = e.target.closest('[data-expand]');
    if (ex) {
      const id = ex.dataset.expand;
      if (expanded.has(id)) expanded.delete(id);
      else expanded.add(id);
      render();
      return;
    }
    const tg = e.target.closest('[data-pool-toggle]');
    if (tg) {
      const p = tg.dataset.poolToggle;
      if (collapsed.has(p)) collapsed.delete(p);
      else collapsed.add(p);
      render();
    }
  });
  const timer = setInterval(() => { if (!document.hidden) load(); }, REFRESH_MS);
  load();
  return {
    destroy() {
      clearInterval(timer);
      if (abort) abort.abort();
    },
    popstate() {
      const p = new URLSearchParams(location.search);
      filter.health = HEALTHS.includes(p.get('health')) ? p.get('health') : '';
      filter.text = p.get('search') || '';
      search.value = filter.text;
      render();
    },
  };
}
