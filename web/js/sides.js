// The sides of the compare page (/compare) and of a diff: one profile or a merge of a
// range, as the compare page's URL holds them (decodeCompare), with their times made
// absolute (resolveSide), as /api/v1/query parameters (sideParams), and the compare
// page's requests of a side (metaRequest, dataRequest) and of both at once
// (compareRequests). Its only imports are api.js, base.js and format.js, none of which
// imports more: index.html also loads this module on its own (async), and run on a
// page loaded at /compare it starts that page's requests at once, before the other
// modules have arrived, instead of when compare.js runs; compare.js takes them over
// (takeEarly) and makes them itself when the page is opened from another.

import { apiGet } from './api.js';
import { innerPath } from './base.js';
import { parseDuration } from './format.js';

export const SIDES = ['a', 'b'];

// The view keys kept in the compare page's URL, as the query page names them.
// (agg: a merged side's aggregation, 'sum' or 'avg'; '' for the server's default)
export const VIEW_KEYS = [['sample', 'sample'], ['focus', 'focus'], ['search', 'search'], ['sort', 'sort'],
  ['filter', 'filter'], ['agg', 'agg']];

// A single profile's time relative to now: 'now' (the latest) or 'now-15m'.
export const AT_RE = /^now(?:-(\d+(?:ms|s|m|h|d|w|y)))?$/;

function int(s) {
  if (s == null || !/^-?\d+$/.test(s)) return null;
  return Number(s);
}

// Unix ms → the API's seconds (undefined stays undefined).
export function secs(ms) {
  return ms === undefined || ms === null || ms === '' ? undefined : Number(ms) / 1000;
}

// Whether a side (of a diff or the compare page, resolved) is a range.
export function isRange(side) {
  return !!side && (side.start !== undefined || side.end !== undefined);
}

// One side from the URL's parameters under prefix ('a.' or 'b.'):
// {query, at} (one profile, relative: 'now' or 'now-1h'), {query, time} (one profile,
// Unix ms), {query, range} (a merge of the last range, '1h'), {query, start, end} (a
// merge, Unix ms). A side whose time is missing or unreadable shows the latest profile.
export function decodeSide(p, prefix) {
  const query = p.get(prefix + 'sel') || '';
  const range = p.get(prefix + 'range');
  const start = int(p.get(prefix + 'start'));
  const end = int(p.get(prefix + 'end'));
  const time = p.get(prefix + 'time') || '';
  if (range && parseDuration(range) > 0) return { query, range };
  if (start != null && end != null && end > start) return { query, start, end };
  if (int(time) != null) return { query, time: int(time) };
  const m = AT_RE.exec(time);
  if (m && (!m[1] || parseDuration(m[1]) > 0)) return { query, at: time };
  return { query, at: 'now' };
}

// The compare page's state from location.search: {a, b (decodeSide), sample, focus (a
// call path, names joined by ';'), search, sort, filter, agg, scale ('same' or 'own')}.
export function decodeCompare(search) {
  const p = new URLSearchParams(search || '');
  const st = { a: decodeSide(p, 'a.'), b: decodeSide(p, 'b.'), scale: p.get('scale') === 'own' ? 'own' : 'same' };
  for (const [k, name] of VIEW_KEYS) st[k] = p.get(name) || '';
  if (st.agg !== 'sum' && st.agg !== 'avg') st.agg = '';
  return st;
}

// A side with its times made absolute at `now` (ms): {query, time} or {query, start, end}.
export function resolveSide(s, now) {
  if (s.range) return { query: s.query, start: now - parseDuration(s.range), end: now };
  if (s.start != null) return { query: s.query, start: s.start, end: s.end };
  if (s.time != null) return { query: s.query, time: s.time };
  const m = AT_RE.exec(s.at || 'now');
  return { query: s.query, time: now - (m && m[1] ? parseDuration(m[1]) : 0) };
}

// The /api/v1/query parameters of one side, as a request of its own:
// {mode:'single', query, time} or {mode:'merge', query, start, end} (times in seconds).
// aggregation (optional): how a merge adds its profiles up ('sum', 'avg'; '' for the
// server's default: averages of snapshot types such as inuse_space, sums of the rest).
export function sideParams(side, fallbackQuery, aggregation) {
  const query = (side && side.query) || fallbackQuery;
  if (isRange(side)) {
    const p = { mode: 'merge', query, start: secs(side.start), end: secs(side.end) };
    if (aggregation) p.aggregation = aggregation;
    return p;
  }
  return { mode: 'single', query, time: secs(side && side.time) };
}

// A compare page side's meta request (apiGet's promise); resolved: resolveSide's;
// priority: apiGet's.
export function metaRequest(resolved, agg, signal, priority) {
  return apiGet('query', { ...sideParams(resolved, undefined, agg), report: 'meta' }, signal, priority);
}

// A compare page side's flame graph and top table in sample type si ('' for the
// profile's default): a promise of [flamegraph answer, top answer].
export function dataRequest(resolved, agg, si, signal, priority) {
  const params = { ...sideParams(resolved, undefined, agg), sample_index: si || undefined };
  return Promise.all([
    apiGet('query', { ...params, report: 'flamegraph' }, signal, priority),
    apiGet('query', { ...params, report: 'top' }, signal, priority),
  ]);
}

// Both sides' meta and data requests of a compare page state (decodeCompare's) at
// `now` (ms), at once, with the state's sample type (or each profile's default):
// {now, ctrl, sides: [{resolved, meta, data}]} (meta and data null for a side without
// a selector; data resolves to null on an error, which the meta's reports). The page
// uses the data when it is of the sample type it picks from the metas (the usual
// case), so that it waits for one round of requests, not two. priority: apiGet's.
export function compareRequests(state, now, priority) {
  const ctrl = new AbortController();
  const sides = SIDES.map((k) => {
    const resolved = resolveSide(state[k], now);
    if (!resolved.query) return { resolved, meta: null, data: null };
    const meta = metaRequest(resolved, state.agg, ctrl.signal, priority);
    meta.catch(() => {}); // the page reports its error
    const data = dataRequest(resolved, state.agg, state.sample, ctrl.signal, priority).catch(() => null);
    return { resolved, meta, data };
  });
  return { now, ctrl, sides };
}

// The requests started when this module ran on a page loaded at /compare:
// {search, requests}, until taken.
let early = null;

// compareRequests of the page's URL made when this module ran, for the compare page
// with location.search `search`: once, and only when the URL is still the one they
// were made for (else they are stopped); null otherwise.
export function takeEarly(search) {
  const e = early;
  early = null;
  if (!e) return null;
  if (e.search === search) return e.requests;
  e.requests.ctrl.abort();
  return null;
}

// low priority: the app's modules, still coming, are what the page waits for first;
// the answers are in before they have all run
if (typeof location !== 'undefined' && (innerPath(location.pathname) || '').replace(/\/+$/, '') === '/compare') {
  early = { search: location.search, requests: compareRequests(decodeCompare(location.search), Date.now(), 'low') };
}
