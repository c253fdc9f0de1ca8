// Unit tests of status.js's storage section: the local store lists its blocks,
// ClickHouse mode says where the profiles are and shows its spool, with no blocks;
// and of its symbolizer section: sources (escaped), cache, hits, misses, failures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderTsdb, renderSymbolizer } from '../js/status.js';

const head = { numSeries: 2, numSamples: 5, chunkCount: 2, minTime: 1795373969500, maxTime: 1795373977983 };
const lists = { seriesCountByMetricName: [{ name: 'heap', value: 2 }] };

test('the local store lists its blocks and says nothing of ClickHouse', () => {
  const html = renderTsdb({ storage: 'local', headStats: head, walBytes: 2048, blockBytes: 4096,
    blocks: [{ ulid: '01M82FTY1G5D2YRXN6C1Z2E735', minTime: 1, maxTime: 2, level: 1, numSeries: 1,
      numSamples: 3, numChunks: 1, timestampBytes: 12, profileBytes: 13865, sizeBytes: 14442 }], ...lists });
  assert.match(html, /01M82FTY1G5D2YRXN6C1Z2E735/);
  assert.match(html, /in 1 block</);
  assert.doesNotMatch(html, /ClickHouse/);
  assert.match(html, /Series by profile type/);
});

test('an answer without storage (an older server) is the local store', () => {
  const html = renderTsdb({ headStats: head, blocks: [] });
  assert.match(html, /No persisted blocks yet/);
});

test('ClickHouse mode names the database, the spool and no blocks', () => {
  const html = renderTsdb({ storage: 'clickhouse', headStats: head, walBytes: 2048, blockBytes: 0, blocks: [],
    clickhouse: { database: 'prof<d>', cluster: '', sentProfiles: 1234, spoolProfiles: 1, spoolBytes: 1536,
      spoolMaxBytes: 1073741824, flushes: 7, flushFailures: 2, lastFlush: 1795373977983 }, ...lists });
  assert.match(html, /data-storage="clickhouse"/);
  assert.match(html, /Profiles are kept in ClickHouse database <span class="mono">prof&lt;d&gt;<\/span>/);
  assert.match(html, /Profiles sent to ClickHouse<\/th><td>1234<\/td>/, "the exact count");
  assert.match(html, /1 profile, 1\.5 kB of 1 GB/);
  assert.match(html, /7 \(2 failed\)/);
  assert.doesNotMatch(html, /Blocks|block</, 'no blocks section or count');
  assert.doesNotMatch(html, /on cluster/);
  assert.match(html, /Series by profile type/);
});

test('ClickHouse mode on a cluster names it', () => {
  const html = renderTsdb({ storage: 'clickhouse', headStats: {}, clickhouse: { database: 'profd', cluster: 'two' } });
  assert.match(html, /on cluster <span class="mono">two<\/span>/);
  assert.match(html, /Last flush<\/th><td><span class="muted">none yet/);
});

test('a warning of the answer (ClickHouse down) is shown above the storage, escaped', () => {
  const html = renderTsdb({ storage: 'clickhouse', headStats: {}, clickhouse: { database: 'profd' } },
    ['the series lists are empty: ClickHouse did not answer: <refused>']);
  assert.match(html, /^<p class="warn-text storage-warning">the series lists are empty: ClickHouse did not answer: &lt;refused&gt;<\/p>/);
  assert.match(html, /Profiles are kept in ClickHouse/);
  assert.doesNotMatch(renderTsdb({ storage: 'clickhouse', headStats: {}, clickhouse: {} }), /storage-warning/);
});

test('the symbolizer lists its sources, escaped, and its counters', () => {
  const html = renderSymbolizer({ enabled: true, sources: [{ type: 'dir', path: '/srv/<debug>&' },
    { type: 'mapping-file' }, { type: 'debuginfod', urls: 'https://d.example/?a=1&b=<2>' }],
  cacheBytes: 2048, cacheEntries: 96, hits: 412, misses: 97, failures: 3 });
  assert.match(html, /directory \/srv\/&lt;debug&gt;&amp;/);
  assert.match(html, /debuginfod https:\/\/d\.example\/\?a=1&amp;b=&lt;2&gt;/);
  assert.doesNotMatch(html, /<debug>|<2>/);
  assert.match(html, /Cache size<\/th><td>2 kB \(96 addresses\)/);
  assert.match(html, /Hits<\/th><td>412</);
  assert.match(html, /Misses<\/th><td>97</);
  assert.match(html, /Failures<\/th><td>3</);
});

test('a server without a symbolizer says it is off', () => {
  assert.match(renderSymbolizer({ enabled: false }), /The symbolizer is off/);
});
