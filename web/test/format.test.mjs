// Unit tests of format.js: bytes, durations, counts, units as pprof names them,
// negative values, zero, huge values, percentages and times.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  formatBytes, formatDuration, formatSeconds, formatCount, formatValue, formatPercent,
  formatTime, formatRelative, unitKind, setTimeZone, timeZone, zoneOffset, zoneName,
} from '../js/format.js';

test('bytes scale by 1024 with pprof labels and three significant digits', () => {
  assert.equal(formatBytes(0), '0 B');
  assert.equal(formatBytes(1), '1 B');
  assert.equal(formatBytes(1023), '1023 B');
  assert.equal(formatBytes(1024), '1 kB');
  assert.equal(formatBytes(1536), '1.5 kB');
  assert.equal(formatBytes(1.2 * 1024 * 1024), '1.2 MB');
  assert.equal(formatBytes(7354904), '7.01 MB');
  assert.equal(formatBytes(123.4 * 1024 * 1024), '123 MB');
  assert.equal(formatBytes(1288490188), '1.2 GB');
  assert.equal(formatBytes(5 * 1024 ** 4), '5 TB');
});

test('bytes round up into the next unit instead of showing 1024', () => {
  assert.equal(formatBytes(1023.9), '1 kB');
  assert.equal(formatBytes(1024 * 1024 - 1), '1 MB');
});

test('huge byte values stay readable', () => {
  assert.equal(formatBytes(9.2e18), '7.98 EB');
  assert.match(formatBytes(2 ** 63), /EB$/);
});

test('negative values (diffs) carry a sign; sign option adds +', () => {
  assert.equal(formatBytes(-2048), '-2 kB');
  assert.equal(formatBytes(2048, { sign: true }), '+2 kB');
  assert.equal(formatBytes(0, { sign: true }), '0 B');
  assert.equal(formatDuration(-5e9), '-5 s');
  assert.equal(formatCount(-12500), '-12.5k');
  assert.equal(formatValue(-350e6, 'nanoseconds'), '-350 ms');
  assert.equal(formatValue(350e6, 'nanoseconds', { sign: true }), '+350 ms');
});

test('durations from nanoseconds', () => {
  assert.equal(formatDuration(0), '0 s');
  assert.equal(formatDuration(850), '850 ns');
  assert.equal(formatDuration(12500), '12.5 µs');
  assert.equal(formatDuration(999999), '1 ms');
  assert.equal(formatDuration(350e6), '350 ms');
  assert.equal(formatDuration(5.36e9), '5.36 s');
  assert.equal(formatDuration(59.9e9), '59.9 s');
  assert.equal(formatDuration(125e9), '2m 5s');
  assert.equal(formatDuration(3725e9), '1h 2m');
  assert.equal(formatDuration(90000e9), '1d 1h');
});

test('seconds', () => {
  assert.equal(formatSeconds(0.35), '350 ms');
  assert.equal(formatSeconds(30), '30 s');
  assert.equal(formatSeconds(-1.5), '-1.5 s');
});

test('counts', () => {
  assert.equal(formatCount(0), '0');
  assert.equal(formatCount(950), '950');
  assert.equal(formatCount(999), '999');
  assert.equal(formatCount(1000), '1k');
  assert.equal(formatCount(12500), '12.5k');
  assert.equal(formatCount(3400000), '3.4M');
  assert.equal(formatCount(999999), '1M');
  assert.equal(formatCount(0.5), '0.5');
  assert.equal(formatCount(2.5e9), '2.5G');
  assert.equal(formatCount(1e30), '1.00e+30');
});

test('formatValue follows the unit pprof names', () => {
  assert.equal(formatValue(1288490188, 'bytes'), '1.2 GB');
  assert.equal(formatValue(5360000000, 'nanoseconds'), '5.36 s');
  assert.equal(formatValue(1500, 'microseconds'), '1.5 ms');
  assert.equal(formatValue(250, 'milliseconds'), '250 ms');
  assert.equal(formatValue(2, 'seconds'), '2 s');
  assert.equal(formatValue(12500, 'count'), '12.5k');
  assert.equal(formatValue(31286, ''), '31.3k');
  assert.equal(formatValue(1234567, 'widgets'), '1,234,567 widgets');
  assert.equal(formatValue(NaN, 'bytes'), 'n/a');
  assert.equal(unitKind('bytes'), 'bytes');
  assert.equal(unitKind('nanoseconds'), 'time');
  assert.equal(unitKind('count'), 'count');
  assert.equal(unitKind('widgets'), null);
});

test('percentages have a fixed precision', () => {
  assert.equal(formatPercent(78.6111), '78.61%');
  // trailing zeros are kept, so a column lines up
  assert.equal(formatPercent(89.8), '89.80%');
  assert.equal(formatPercent(89.02), '89.02%');
  assert.equal(formatPercent(5), '5.00%');
  assert.equal(formatPercent(100), '100.00%');
  assert.equal(formatPercent(250.55), '250.55%');
  assert.equal(formatPercent(0), '0.00%');
  assert.equal(formatPercent(0.004), '<0.01%');
  assert.equal(formatPercent(-0.004, { sign: true }), '-<0.01%');
  assert.equal(formatPercent(-1e-13), '0.00%');
  assert.equal(formatPercent(-12.3456, { sign: true }), '-12.35%');
  assert.equal(formatPercent(5, { sign: true }), '+5.00%');
  for (const p of [0.5, 1, 12.3, 45.678, 99.999]) {
    assert.match(formatPercent(p), /^\d+\.\d\d%$/, `${p}: two decimals`);
  }
});

test('formatTime is local YYYY-MM-DD HH:MM:SS', () => {
  const d = new Date(2026, 10, 2, 3, 4, 5); // local time
  assert.equal(formatTime(d.getTime()), '2026-11-02 03:04:05');
  assert.match(formatTime(Date.UTC(2026, 0, 1)), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
});

test('formatRelative', () => {
  const now = 1_800_000_000_000;
  assert.equal(formatRelative(now - 12_000, now), '12s ago');
  assert.equal(formatRelative(now - 3 * 60_000 - 5_000, now), '3m ago');
  assert.equal(formatRelative(now - 5 * 3600_000, now), '5h ago');
  assert.equal(formatRelative(now - 2 * 86400_000, now), '2d ago');
  assert.equal(formatRelative(now + 5_000, now), 'in 5s');
  assert.equal(formatRelative(now - 300, now), 'now');
});

test('values that round up to the next unit take it', () => {
  assert.equal(formatCount(999.7), '1k');
  assert.equal(formatCount(-999.7, { sign: true }), '-1k');
  assert.equal(formatCount(999.4), '999');
  assert.equal(formatDuration(999.7), '1 µs');
  assert.equal(formatDuration(999), '999 ns');
});

test('times in UTC when chosen, else in the browser\'s zone', () => {
  const ms = Date.UTC(2026, 10, 22, 23, 30, 5);
  assert.equal(timeZone(), 'local');
  const local = new Date(ms);
  assert.equal(formatTime(ms).slice(11), [local.getHours(), local.getMinutes(), local.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':'));
  setTimeZone('utc');
  try {
    assert.equal(timeZone(), 'utc');
    assert.equal(formatTime(ms), '2026-11-22 23:30:05');
    assert.equal(zoneOffset(ms), 0);
    assert.equal(zoneName(ms), 'UTC');
  } finally {
    setTimeZone('local');
  }
  assert.match(zoneName(ms), /^UTC([+−]\d\d:\d\d)?$/);
});
