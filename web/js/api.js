// The one way the UI talks to profd: GET an /api/v1 endpoint (or /prometheus/api/v1) and unwrap
// Prometheus's envelope, or build the URL of a download. URLs are under the route
// prefix the page was served with (base.js).

import { BASE } from './base.js';

export class ApiError extends Error {
  constructor(status, errorType, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status;       // HTTP status, 0 when the request never got an answer
    this.errorType = errorType; // "bad_data", "internal", … or "network"
  }
}

// The tenant of the UI's requests with --auth.multitenancy-enabled: the page's `tenant`
// parameter (…/?tenant=team-a), remembered for the browser tab, since the pages' own
// links do not carry it. null: none (profd answers with the user's bound tenant, or
// "no org id"). search and store stand in for location.search and sessionStorage.
export function tenantOf(search, store) {
  if (search === undefined) search = typeof location !== 'undefined' ? location.search : '';
  if (store === undefined) store = typeof sessionStorage !== 'undefined' ? sessionStorage : null;
  const t = new URLSearchParams(search || '').get('tenant');
  try {
    if (t && store) store.setItem('profd.tenant', t);
    return t || (store && store.getItem('profd.tenant')) || null;
  } catch (e) {
    return t || null; // storage refused (private mode)
  }
}

// The request headers of the UI's calls: accept, and X-Scope-OrgID of tenantOf().
export function apiHeaders(accept, tenant = tenantOf()) {
  const h = { Accept: accept };
  if (tenant) h['X-Scope-OrgID'] = tenant;
  return h;
}

// Builds "/api/v1/<path>?k=v&…" (under base: "/profd/api/v1/…") from a params object;
// undefined/null/'' values are left out, arrays give repeated parameters (match[]).
export function apiUrl(path, params = {}, base = BASE) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) v.forEach((x) => q.append(k, String(x)));
    else q.append(k, String(v));
  }
  const s = q.toString();
  return base + 'api/v1/' + path.replace(/^\/+/, '') + (s ? '?' + s : '');
}

// Resolves to {data, warnings} of a successful answer; rejects with ApiError carrying
// the API's own message (which names the bad parameter). signal: an AbortSignal;
// priority (optional): fetch's, 'low' for a request that may wait for the page's own
// files (the compare page's early requests, sides.js).
export async function apiGet(path, params = {}, signal, priority) {
  return getJson(apiUrl(path, params), signal, priority);
}

async function getJson(url, signal, priority) {
  let res;
  try {
    const opts = { signal, headers: apiHeaders('application/json') };
    if (priority) opts.priority = priority;
    res = await fetch(url, opts);
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new ApiError(0, 'network', 'profd did not answer: ' + (e && e.message ? e.message : e));
  }
  let body = null;
  try {
    body = await res.json();
  } catch (e) {
    throw new ApiError(res.status, 'internal', `profd answered ${res.status} without JSON`);
  }
  if (!res.ok || !body || body.status !== 'success') {
    throw new ApiError(res.status, (body && body.errorType) || 'internal',
      (body && body.error) || `profd answered ${res.status}`);
  }
  return { data: body.data, warnings: body.warnings || [] };
}

// The URL of profd's Prometheus-compatible endpoint: "/prometheus/api/v1/<path>?…"
// (under base).
export function promUrl(path, params = {}, base = BASE) {
  return apiUrl(path, params, base + 'prometheus/');
}

// As apiGet, against the Prometheus-compatible endpoint (the values chart).
export async function promGet(path, params = {}, signal) {
  return getJson(promUrl(path, params), signal);
}
