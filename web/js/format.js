// Human units for profile values and times: bytes, durations, counts, percentages,
// timestamps in the chosen zone and "3m ago", and Prometheus durations read ("1h30m").
// Pure functions, usable in node without a DOM; no imports.
//
// Conventions (as pprof): bytes scale by 1024 and are labelled B, kB, MB, GB, TB, PB,
// EB ("1.2 MB" is 1.2 × 1024² bytes). Values keep three significant digits with
// trailing zeros dropped ("1.2 MB", "12.3 MB", "123 MB"). Negative values (diffs)
// carry "-"; with {sign:true} positive values carry "+" too. Zero is "0 B", "0 s", "0".
// Percentages are the exception: always two decimals (formatPercent).

const BYTE_UNITS = ['B', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB'];
const COUNT_UNITS = ['', 'k', 'M', 'G', 'T', 'P', 'E'];

// Three significant digits, trailing zeros dropped: 1.2, 12.3, 123, 1000.
function sig3(x) {
  if (x === 0) return '0';
  const a = Math.abs(x);
  let s;
  if (a >= 100) s = x.toFixed(0);
  else if (a >= 10) s = x.toFixed(1);
  else if (a >= 1) s = x.toFixed(2);
  else s = x.toPrecision(3);
  if (s.indexOf('.') >= 0 && s.indexOf('e') < 0) s = s.replace(/0+$/, '').replace(/\.$/, '');
  return s;
}

function signOf(n, opts) {
  if (n < 0) return '-';
  if (opts && opts.sign && n > 0) return '+';
  return '';
}

// Scales |n| in steps of `base` while >= base (rounding first so 1023.9 → "1 kB"
// rather than "1024 B"), returning [mantissa string, unit index].
function scale(a, base, units, minIndex = 0) {
  let i = minIndex;
  let v = a;
  while (i < units.length - 1 && Number(sig3(v)) >= base) {
    v /= base;
    i++;
  }
  return [sig3(v), i];
}

function bad(n) {
  return typeof n !== 'number' || !Number.isFinite(n);
}

// 1288490188 → "1.2 GB"; 512 → "512 B"; -2048 → "-2 kB".
export function formatBytes(n, opts) {
  if (bad(n)) return 'n/a';
  const a = Math.abs(n);
  if (Math.round(a) < 1024) return signOf(n, opts) + String(Math.round(a)) + ' B';
  const [m, i] = scale(a, 1024, BYTE_UNITS);
  return signOf(n, opts) + m + ' ' + BYTE_UNITS[i];
}

// Nanoseconds → "850 ns", "12.5 µs", "350 ms", "5.36 s", "2m 5s", "1h 2m", "3d 4h".
export function formatDuration(ns, opts) {
  if (bad(ns)) return 'n/a';
  const sign = signOf(ns, opts);
  const a = Math.abs(ns);
  if (a === 0) return '0 s';
  if (a < 1e3 && Number(sig3(a)) < 1000) return sign + sig3(a) + ' ns';
  if (a < 1e6 && Number(sig3(a / 1e3)) < 1000) return sign + sig3(a / 1e3) + ' µs';
  if (a < 1e9 && Number(sig3(a / 1e6)) < 1000) return sign + sig3(a / 1e6) + ' ms';
  const s = a / 1e9;
  if (Number(sig3(s)) < 60) return sign + sig3(s) + ' s';
  const totalS = Math.round(s);
  if (totalS < 3600) return sign + Math.floor(totalS / 60) + 'm ' + (totalS % 60) + 's';
  const totalM = Math.round(s / 60);
  if (totalM < 24 * 60) return sign + Math.floor(totalM / 60) + 'h ' + (totalM % 60) + 'm';
  const totalH = Math.round(s / 3600);
  return sign + Math.floor(totalH / 24) + 'd ' + (totalH % 24) + 'h';
}

// Seconds → as formatDuration: 0.35 → "350 ms".
export function formatSeconds(s, opts) {
  if (bad(s)) return 'n/a';
  return formatDuration(s * 1e9, opts);
}

// 950 → "950"; 12500 → "12.5k"; 3400000 → "3.4M"; 0.5 → "0.5".
export function formatCount(n, opts) {
  if (bad(n)) return 'n/a';
  const a = Math.abs(n);
  if (Number(sig3(a)) < 1000) return signOf(n, opts) + sig3(a); // 999.7 is "1k", not "1000"
  if (a >= 1e21) return signOf(n, opts) + a.toExponential(2);
  const [m, i] = scale(a, 1000, COUNT_UNITS);
  return signOf(n, opts) + m + COUNT_UNITS[i];
}

// A raw number with thousands grouping, for units profd does not know: 1234567 → "1,234,567".
function formatRaw(n, opts) {
  const a = Math.abs(n);
  const s = Number.isInteger(a)
    ? String(a).replace(/\B(?=(\d{3})+(?!\d))/g, ',')
    : sig3(a);
  return signOf(n, opts) + s;
}

// What kind of quantity a pprof unit name is, and its factor to the base unit
// (bytes, or nanoseconds for time).
const UNIT_ALIASES = {
  b: ['bytes', 1], byte: ['bytes', 1], bytes: ['bytes', 1],
  kb: ['bytes', 1024], kilobyte: ['bytes', 1024], kilobytes: ['bytes', 1024],
  mb: ['bytes', 1024 ** 2], megabyte: ['bytes', 1024 ** 2], megabytes: ['bytes', 1024 ** 2],
  gb: ['bytes', 1024 ** 3], gigabyte: ['bytes', 1024 ** 3], gigabytes: ['bytes', 1024 ** 3],
  ns: ['time', 1], nanosecond: ['time', 1], nanoseconds: ['time', 1],
  us: ['time', 1e3], 'µs': ['time', 1e3], microsecond: ['time', 1e3], microseconds: ['time', 1e3],
  ms: ['time', 1e6], millisecond: ['time', 1e6], milliseconds: ['time', 1e6],
  s: ['time', 1e9], sec: ['time', 1e9], second: ['time', 1e9], seconds: ['time', 1e9],
  m: ['time', 60e9], min: ['time', 60e9], minute: ['time', 60e9], minutes: ['time', 60e9],
  h: ['time', 3600e9], hour: ['time', 3600e9], hours: ['time', 3600e9],
  count: ['count', 1], '': ['count', 1],
};

// The kind of a pprof unit: "bytes", "time", "count" or null (unknown, shown raw).
export function unitKind(unit) {
  const u = UNIT_ALIASES[String(unit == null ? '' : unit).toLowerCase()];
  return u ? u[0] : null;
}

// A value in a sample type's unit, as a person reads it:
// (1288490188, "bytes") → "1.2 GB"; (350e6, "nanoseconds") → "350 ms";
// (12500, "count") → "12.5k"; (42, "widgets") → "42 widgets".
// opts.sign: prefix "+" on positive values (for diffs).
export function formatValue(value, unit, opts) {
  if (bad(value)) return 'n/a';
  const u = UNIT_ALIASES[String(unit == null ? '' : unit).toLowerCase()];
  if (!u) return formatRaw(value, opts) + ' ' + unit;
  const [kind, factor] = u;
  if (kind === 'bytes') return formatBytes(value * factor, opts);
  if (kind === 'time') return formatDuration(value * factor, opts);
  return formatCount(value, opts);
}

// A percentage with a fixed precision, two decimals, so that a column of them lines up
// and "89.80%" reads beside "89.02%": 78.6111 → "78.61%", 100 → "100.00%". A share too
// small for two decimals is "<0.01%" (not 0), and float noise of running sums below
// 0.0005 is "0.00%".
export function formatPercent(p, opts) {
  if (bad(p)) return 'n/a';
  const a = Math.abs(p);
  if (a < 0.0005) return '0.00%';
  if (a < 0.005) return signOf(p, opts) + '<0.01%';
  return signOf(p, opts) + a.toFixed(2) + '%';
}

const pad2 = (n) => String(n).padStart(2, '0');

// The time zone every time is shown in: the browser's ('local', the default) or
// 'utc'. The UI sets it from the user's choice (setTimeZone); formatTime, the
// timeline's and chart's axes and the range inputs all read it through zoneOffset.
let zoneUtc = false;
export function setTimeZone(z) { zoneUtc = z === 'utc'; }
export function timeZone() { return zoneUtc ? 'utc' : 'local'; }

// The shown zone's offset at t, in ms to add to UTC to get its wall clock.
export function zoneOffset(t) {
  return zoneUtc ? 0 : -new Date(t).getTimezoneOffset() * 60e3;
}

// The shown zone's name: "UTC", or the browser's offset as "UTC+01:00".
export function zoneName(t = Date.now()) {
  const o = zoneOffset(t) / 60e3;
  if (o === 0) return 'UTC';
  const a = Math.abs(o);
  return `UTC${o < 0 ? '−' : '+'}${pad2(Math.floor(a / 60))}:${pad2(a % 60)}`;
}

// Unix ms → "YYYY-MM-DD HH:MM:SS" in the shown zone.
export function formatTime(ms) {
  if (bad(ms)) return 'n/a';
  const d = new Date(ms + zoneOffset(ms));
  return `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())} ` +
    `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}`;
}

// How long ago (or ahead) ms is from nowMs: "12s ago", "3m ago", "5h ago", "2d ago",
// "in 5s"; "now" within a second.
export function formatRelative(ms, nowMs = Date.now()) {
  if (bad(ms) || bad(nowMs)) return 'n/a';
  const d = nowMs - ms;
  const a = Math.abs(d);
  if (a < 1000) return 'now';
  let s;
  if (a < 60e3) s = Math.floor(a / 1e3) + 's';
  else if (a < 3600e3) s = Math.floor(a / 60e3) + 'm';
  else if (a < 86400e3) s = Math.floor(a / 3600e3) + 'h';
  else s = Math.floor(a / 86400e3) + 'd';
  return d > 0 ? s + ' ago' : 'in ' + s;
}

const UNIT_MS = { ms: 1, s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3,
  y: 365 * 86400e3 };

// A Prometheus duration ("15m", "1h30m", "7d") in ms; NaN when it is not one.
export function parseDuration(s) {
  const str = String(s == null ? '' : s).trim();
  if (!str) return NaN;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)/y;
  let total = 0;
  let i = 0;
  while (i < str.length) {
    re.lastIndex = i;
    const m = re.exec(str);
    if (!m) return NaN;
    total += Number(m[1]) * UNIT_MS[m[2]];
    i = re.lastIndex;
  }
  return total;
}
