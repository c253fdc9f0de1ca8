/* metrics.c: /metrics in the Prometheus text exposition format (0.0.4): the
 * server's own counters (HTTP requests by handler and code, request durations
 * as a histogram, queries, pushes, reloads), the scrape manager's and the
 * store's statistics, process metrics as client_golang names them
 * (process_cpu_seconds_total, process_resident_memory_bytes, ...), and
 * profd_build_info. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include "api_int.h"
#include "profd/discovery.h"
#include "profd/scrape.h"

const unsigned api_codes[API_NCODES] = {200, 201, 204, 302, 304, 400, 401, 403,
                                        404, 405, 413, 415, 422, 429, 500, 503};
const double api_buckets[API_NBUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                          1,     2.5,  5,     10,   30,  60};

void api_metrics_observe(struct pd_api_server *s, int handler, unsigned status, double seconds)
{
	size_t c = API_NCODES;
	for (size_t i = 0; i < API_NCODES; i++)
		if (api_codes[i] == status)
			c = i;
	pthread_mutex_lock(&s->m.mu);
	s->m.c.requests[handler][c]++;
	for (size_t b = 0; b < API_NBUCKETS; b++)
		if (seconds <= api_buckets[b])
			s->m.c.dur_bucket[handler][b]++;
	s->m.c.dur_count[handler]++;
	s->m.c.dur_sum[handler] += seconds;
	pthread_mutex_unlock(&s->m.mu);
}

void pd_api_record_reload(struct pd_api_server *s, int ok)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->m.mu);
	s->m.c.reloads++;
	s->m.c.last_reload_ok = ok ? 1 : 0;
	if (ok)
		s->m.c.last_reload_ms = api_now_ms();
	else
		s->m.c.reload_failures++;
	pthread_mutex_unlock(&s->m.mu);
}

static void family(struct api_resp *w, const char *name, const char *type, const char *help)
{
	jprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample_u(struct api_resp *w, const char *name, uint64_t v)
{
	jprintf(w, "%s %llu\n", name, (unsigned long long)v);
}

static void sample_d(struct api_resp *w, const char *name, double v)
{
	jprintf(w, "%s %.17g\n", name, v);
}

/* A label value as the exposition format escapes it: \\, \" and \n. */
static void label_value(struct api_resp *w, const char *v)
{
	jput(w, "\"");
	for (const char *p = v; *p; p++) {
		if (*p == '\\')
			jput(w, "\\\\");
		else if (*p == '"')
			jput(w, "\\\"");
		else if (*p == '\n')
			jput(w, "\\n");
		else
			jputn(w, p, 1);
	}
	jput(w, "\"");
}

/* Process start time from /proc/self/stat (field 22, clock ticks since boot)
 * and the boot time in /proc/stat; 0 when unknown. */
static double process_start_time(void)
{
	char buf[1024];
	double btime = 0;
	unsigned long long start = 0;
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return 0;
	while (fgets(buf, sizeof(buf), f))
		if (strncmp(buf, "btime ", 6) == 0)
			btime = strtod(buf + 6, NULL);
	fclose(f);
	f = fopen("/proc/self/stat", "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* after ") " come fields 3, 4, ...: skip to field 22 */
	p += 2;
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p)
		return 0;
	start = strtoull(p, NULL, 10);
	long hz = sysconf(_SC_CLK_TCK);
	return hz > 0 ? btime + (double)start / (double)hz : 0;
}

static void process_metrics(struct api_resp *w)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		             (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
		family(w, "process_cpu_seconds_total", "counter",
		       "Total user and system CPU time spent in seconds.");
		sample_d(w, "process_cpu_seconds_total", cpu);
	}
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		unsigned long long size = 0, resident = 0;
		if (fscanf(f, "%llu %llu", &size, &resident) == 2) {
			long page = sysconf(_SC_PAGESIZE);
			family(w, "process_resident_memory_bytes", "gauge",
			       "Resident memory size in bytes.");
			sample_u(w, "process_resident_memory_bytes",
			         resident * (unsigned long long)page);
			family(w, "process_virtual_memory_bytes", "gauge",
			       "Virtual memory size in bytes.");
			sample_u(w, "process_virtual_memory_bytes",
			         size * (unsigned long long)page);
		}
		fclose(f);
	}
	DIR *d = opendir("/proc/self/fd");
	if (d) {
		uint64_t n = 0;
		struct dirent *e;
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				n++;
		closedir(d);
		family(w, "process_open_fds", "gauge", "Number of open file descriptors.");
		sample_u(w, "process_open_fds", n > 0 ? n - 1 : 0); /* less the DIR's own */
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		family(w, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
		sample_u(w, "process_max_fds", rl.rlim_cur == RLIM_INFINITY ? 0 : rl.rlim_cur);
	}
	double st = process_start_time();
	if (st > 0) {
		family(w, "process_start_time_seconds", "gauge",
		       "Start time of the process since unix epoch in seconds.");
		sample_d(w, "process_start_time_seconds", st);
	}
}

const char *api_push_refusal_name(int why)
{
	if (why == API_PUSH_CONCURRENCY)
		return "concurrency";
	if (why == API_PUSH_BODY_SIZE)
		return "body_size";
	return pd_pprof_limit_name(why);
}

void api_push_refused(struct pd_api_server *s, int why)
{
	if (why <= 0 || why >= API_PUSH_REFUSALS)
		return;
	pthread_mutex_lock(&s->m.mu);
	s->m.c.push_refused[why]++;
	pthread_mutex_unlock(&s->m.mu);
}

void api_metrics(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	struct api_counters m;
	w->content_type = "text/plain; version=0.0.4; charset=utf-8";

	family(w, "profd_build_info", "gauge",
	       "A metric with a constant '1' value labeled by version and compiler from which "
	       "profd was built.");
	jput(w, "profd_build_info{version=");
	label_value(w, s->version);
	jput(w, ",compiler=");
	label_value(w, API_COMPILER);
	jput(w, "} 1\n");

	/* scraping */
	if (s->o.scrape) {
		struct pd_scrape_stats ss;
		pd_scrape_manager_stats(s->o.scrape, &ss);
		family(w, "profd_scrapes_total", "counter", "Scrapes by result.");
		jprintf(w, "profd_scrapes_total{result=\"success\"} %llu\n",
		        (unsigned long long)ss.scrapes_ok);
		jprintf(w, "profd_scrapes_total{result=\"failure\"} %llu\n",
		        (unsigned long long)ss.scrapes_failed);
		family(w, "profd_scrape_bytes_total", "counter",
		       "Bytes of profiles scraped, after content decoding.");
		sample_u(w, "profd_scrape_bytes_total", ss.bytes_scraped);
		family(w, "profd_scrape_refused_total", "counter",
		       "Scrapes whose profile was refused for a limit, by the limit: "
		       "decompressed_size, decompression_ratio, decoded_size, samples, sample_labels.");
		for (int i = 1; i < PD_PPROF_LIMIT_COUNT; i++)
			jprintf(w, "profd_scrape_refused_total{reason=\"%s\"} %llu\n",
			        pd_pprof_limit_name(i), (unsigned long long)ss.refused[i]);
		family(w, "profd_scrape_targets", "gauge", "Scrape targets by state.");
		jprintf(w, "profd_scrape_targets{state=\"active\"} %llu\n",
		        (unsigned long long)ss.active_targets);
		jprintf(w, "profd_scrape_targets{state=\"dropped\"} %llu\n",
		        (unsigned long long)ss.dropped_targets);
		family(w, "prometheus_target_scrape_pool_exceeded_target_limit_total", "counter",
		       "Total number of times scrape pools hit the target limit, during sync or "
		       "config reload.");
		sample_u(w, "prometheus_target_scrape_pool_exceeded_target_limit_total",
		         ss.target_limit_exceeded);
		family(w, "profd_scrape_duration_seconds", "histogram",
		       "Duration of scrapes, from request to the end of the response.");
		for (size_t b = 0; b < PD_SCRAPE_DURATION_BUCKETS; b++)
			jprintf(w, "profd_scrape_duration_seconds_bucket{le=\"%g\"} %llu\n",
			        pd_scrape_duration_bounds[b], (unsigned long long)ss.duration_buckets[b]);
		jprintf(w, "profd_scrape_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
		        (unsigned long long)ss.duration_count);
		jprintf(w, "profd_scrape_duration_seconds_sum %.6f\n", ss.duration_sum_seconds);
		jprintf(w, "profd_scrape_duration_seconds_count %llu\n",
		        (unsigned long long)ss.duration_count);
		pthread_mutex_lock(&s->m.mu);
		uint64_t pushed = s->m.c.pushed;
		pthread_mutex_unlock(&s->m.mu);
		family(w, "profd_profiles_appended_total", "counter",
		       "Profiles appended to the store, by source.");
		jprintf(w, "profd_profiles_appended_total{source=\"scrape\"} %llu\n",
		        (unsigned long long)ss.profiles_appended);
		jprintf(w, "profd_profiles_appended_total{source=\"push\"} %llu\n",
		        (unsigned long long)pushed);
	} else {
		pthread_mutex_lock(&s->m.mu);
		uint64_t pushed = s->m.c.pushed;
		pthread_mutex_unlock(&s->m.mu);
		family(w, "profd_profiles_appended_total", "counter",
		       "Profiles appended to the store, by source.");
		jprintf(w, "profd_profiles_appended_total{source=\"push\"} %llu\n",
		        (unsigned long long)pushed);
	}

	/* the store */
	struct pd_storage_stats st;
	pd_storage_stats(s->o.db, &st);
	family(w, "profd_tsdb_head_series", "gauge", "Series in the head.");
	sample_u(w, "profd_tsdb_head_series", st.head_series);
	family(w, "profd_tsdb_head_series_limit", "gauge",
	       "Series the head holds at most (--storage.tsdb.max-series; 0: no limit).");
	sample_u(w, "profd_tsdb_head_series_limit", st.head_series_limit);
	family(w, "profd_tsdb_head_series_limit_refused_total", "counter",
	       "New series refused because the head held its series limit.");
	sample_u(w, "profd_tsdb_head_series_limit_refused_total", st.head_series_limit_refused);
	family(w, "profd_tsdb_head_series_removed_total", "counter",
	       "Series dropped from the head, having no sample left in it.");
	sample_u(w, "profd_tsdb_head_series_removed_total", st.head_series_removed);
	family(w, "profd_tsdb_head_series_idle_written_total", "counter",
	       "Series written to a block of idle series and taken out of the head.");
	sample_u(w, "profd_tsdb_head_series_idle_written_total", st.head_series_idle_written);
	family(w, "profd_tsdb_head_chunk_files", "gauge", "Head chunk files (chunks_head/).");
	sample_u(w, "profd_tsdb_head_chunk_files", st.head_chunk_files);
	family(w, "profd_tsdb_head_chunk_bytes", "gauge", "Bytes of the head chunk files.");
	sample_u(w, "profd_tsdb_head_chunk_bytes", st.head_chunk_bytes);
	family(w, "profd_tsdb_head_chunks_mapped", "gauge",
	       "Sealed head chunks kept in the head chunk files, mapped, not on the heap.");
	sample_u(w, "profd_tsdb_head_chunks_mapped", st.head_chunks_mapped);
	family(w, "profd_tsdb_head_open_frame_files", "gauge",
	       "Open chunks' frame files (chunks_open/).");
	sample_u(w, "profd_tsdb_head_open_frame_files", st.head_open_frame_files);
	family(w, "profd_tsdb_head_open_frame_bytes", "gauge",
	       "Bytes of the open chunks' frame files.");
	sample_u(w, "profd_tsdb_head_open_frame_bytes", st.head_open_frame_bytes);
	family(w, "profd_tsdb_head_open_frame_live_bytes", "gauge",
	       "Bytes of the frames in the open chunks' frame files still in use.");
	sample_u(w, "profd_tsdb_head_open_frame_live_bytes", st.head_open_frame_live_bytes);
	family(w, "profd_tsdb_head_open_frame_write_failures_total", "counter",
	       "Open-chunk frames kept in memory because writing them failed.");
	sample_u(w, "profd_tsdb_head_open_frame_write_failures_total",
		 st.head_open_frame_write_failures);
	family(w, "profd_tsdb_head_chunk_files_damaged_total", "counter",
	       "Head chunk files found damaged or missing at open.");
	sample_u(w, "profd_tsdb_head_chunk_files_damaged_total", st.head_chunk_files_damaged);
	family(w, "profd_tsdb_head_chunk_write_failures_total", "counter",
	       "Sealed chunks whose write to the head chunk files failed (kept in memory).");
	sample_u(w, "profd_tsdb_head_chunk_write_failures_total", st.head_chunk_write_failures);
	family(w, "profd_tsdb_head_samples", "gauge", "Profiles in the head.");
	sample_u(w, "profd_tsdb_head_samples", st.head_samples);
	family(w, "profd_tsdb_head_chunks", "gauge", "Chunks in the head.");
	sample_u(w, "profd_tsdb_head_chunks", st.head_chunks);
	if (st.head_series && st.head_mint <= st.head_maxt) {
		family(w, "profd_tsdb_head_min_time", "gauge",
		       "Minimum time bound of the head block, in milliseconds.");
		jprintf(w, "profd_tsdb_head_min_time %lld\n", (long long)st.head_mint);
		family(w, "profd_tsdb_head_max_time", "gauge",
		       "Maximum timestamp of the head block, in milliseconds.");
		jprintf(w, "profd_tsdb_head_max_time %lld\n", (long long)st.head_maxt);
	}
	family(w, "profd_tsdb_blocks_loaded", "gauge", "Number of currently loaded data blocks.");
	sample_u(w, "profd_tsdb_blocks_loaded", st.blocks);
	family(w, "profd_tsdb_storage_blocks_bytes", "gauge",
	       "The number of bytes that are currently used for local storage by all blocks.");
	sample_u(w, "profd_tsdb_storage_blocks_bytes", st.block_bytes);
	family(w, "profd_tsdb_wal_storage_size_bytes", "gauge", "Size of the write log directory.");
	sample_u(w, "profd_tsdb_wal_storage_size_bytes", st.wal_bytes);
	family(w, "profd_tsdb_wal_commits_total", "counter",
	       "Commits written to the write log, one record each.");
	sample_u(w, "profd_tsdb_wal_commits_total", st.wal_records);
	family(w, "profd_tsdb_wal_writes_total", "counter",
	       "Group writes to the write log: concurrent commits share one.");
	sample_u(w, "profd_tsdb_wal_writes_total", st.wal_writes);
	family(w, "profd_tsdb_wal_fsyncs_total", "counter",
	       "fsyncs that made group writes of the write log durable.");
	sample_u(w, "profd_tsdb_wal_fsyncs_total", st.wal_fsyncs);
	family(w, "profd_tsdb_wal_lazy_commits_total", "counter",
	       "Commits (scrapes) acknowledged once written to the write log, before an fsync; "
	       "a background fsync follows within 100 ms.");
	sample_u(w, "profd_tsdb_wal_lazy_commits_total", st.wal_lazy_commits);
	family(w, "profd_tsdb_wal_background_fsyncs_total", "counter",
	       "fsyncs of the write log made by the background sync for lazy commits.");
	sample_u(w, "profd_tsdb_wal_background_fsyncs_total", st.wal_lazy_syncs);
	family(w, "profd_tsdb_wal_writes_failed_total", "counter",
	       "Group writes or fsyncs of the write log that failed.");
	sample_u(w, "profd_tsdb_wal_writes_failed_total", st.wal_failed_writes);
	family(w, "profd_tsdb_wal_damaged_records_total", "counter",
	       "Write log records skipped as damaged by the replay at open (a torn tail included).");
	sample_u(w, "profd_tsdb_wal_damaged_records_total", st.wal_damaged_records);
	family(w, "profd_tsdb_wal_damaged_bytes_total", "counter",
	       "Write log bytes skipped as damaged by the replay at open.");
	sample_u(w, "profd_tsdb_wal_damaged_bytes_total", st.wal_damaged_bytes);
	family(w, "profd_tsdb_blocks_damaged_total", "counter",
	       "Blocks that did not open and were moved to the damaged/ directory.");
	sample_u(w, "profd_tsdb_blocks_damaged_total", st.blocks_damaged);
	family(w, "profd_tsdb_chunks_damaged_total", "counter",
	       "Chunk reads that found a damaged chunk (the read of that series failed or left "
	       "the chunk out).");
	sample_u(w, "profd_tsdb_chunks_damaged_total", st.chunks_damaged);
	family(w, "profd_tsdb_head_truncations_failed_total", "counter",
	       "Head cuts (writing a block, checkpointing the write log) that failed.");
	sample_u(w, "profd_tsdb_head_truncations_failed_total", st.head_cut_failures);
	family(w, "profd_tsdb_compactions_failed_total", "counter", "Compactions that failed.");
	sample_u(w, "profd_tsdb_compactions_failed_total", st.compaction_failures);
	family(w, "profd_tsdb_out_of_bound_samples_total", "counter",
	       "Samples refused because they are older than the store accepts, or dated too far "
	       "after the clock (pushes and scrapes).");
	sample_u(w, "profd_tsdb_out_of_bound_samples_total", st.out_of_bounds);
	family(w, "profd_tsdb_too_far_in_future_samples_total", "counter",
	       "Of the samples refused as out of bounds, those dated more than "
	       "--storage.tsdb.max-future-time after the clock.");
	sample_u(w, "profd_tsdb_too_far_in_future_samples_total", st.too_far_in_future);
	family(w, "profd_tsdb_wal_replay_skipped_samples_total", "counter",
	       "Samples the write log replay at open left out (of a series the log does not "
	       "name, damaged, or duplicates).");
	sample_u(w, "profd_tsdb_wal_replay_skipped_samples_total", st.wal_replay_skipped);
	family(w, "profd_tsdb_vertical_compactions_total", "counter",
	       "Compactions that merged blocks whose time ranges overlapped.");
	sample_u(w, "profd_tsdb_vertical_compactions_total", st.vertical_compactions);
	family(w, "profd_tsdb_compactions_total", "counter", "Total number of compactions run.");
	sample_u(w, "profd_tsdb_compactions_total", st.compactions);
	family(w, "profd_tsdb_retention_deletions_total", "counter",
	       "Blocks deleted because of the time or size retention.");
	sample_u(w, "profd_tsdb_retention_deletions_total", st.retention_deletions);
	family(w, "profd_tsdb_tombstones", "gauge",
	       "Deleted intervals of series (tombstones) in the blocks and the head.");
	sample_u(w, "profd_tsdb_tombstones", st.tombstones + st.head_tombstones);
	family(w, "profd_tsdb_deletions_total", "counter",
	       "Deletions of series done (each match[] of delete_series is one).");
	sample_u(w, "profd_tsdb_deletions_total", st.deletions);
	family(w, "profd_tsdb_tombstone_cleanups_total", "counter",
	       "Blocks rewritten without their deleted samples by clean_tombstones.");
	sample_u(w, "profd_tsdb_tombstone_cleanups_total", st.tombstones_cleaned);
	family(w, "profd_tsdb_snapshots_total", "counter", "Snapshots written.");
	sample_u(w, "profd_tsdb_snapshots_total", st.snapshots);
	family(w, "profd_tsdb_snapshots_failed_total", "counter", "Snapshots that failed.");
	sample_u(w, "profd_tsdb_snapshots_failed_total", st.snapshot_failures);

	/* the ClickHouse spool: the WAL's records ClickHouse has not taken yet */
	if (st.remote) {
		family(w, "profd_clickhouse_spool_bytes", "gauge",
		       "Bytes of WAL records not yet accepted by ClickHouse.");
		sample_u(w, "profd_clickhouse_spool_bytes", st.remote_spool_bytes);
		family(w, "profd_clickhouse_spool_max_bytes", "gauge",
		       "The spool's limit (--storage.clickhouse.spool.max-size).");
		sample_u(w, "profd_clickhouse_spool_max_bytes", st.remote_spool_max);
		family(w, "profd_clickhouse_spool_profiles", "gauge",
		       "Profiles acknowledged and not yet accepted by ClickHouse.");
		sample_u(w, "profd_clickhouse_spool_profiles", st.remote_spool_profiles);
		family(w, "profd_clickhouse_sent_profiles_total", "counter",
		       "Profiles accepted by ClickHouse.");
		sample_u(w, "profd_clickhouse_sent_profiles_total", st.remote_sent_profiles);
		family(w, "profd_clickhouse_flushes_total", "counter",
		       "Batches of profiles accepted by ClickHouse.");
		sample_u(w, "profd_clickhouse_flushes_total", st.remote_flushes);
		family(w, "profd_clickhouse_flush_failures_total", "counter",
		       "Flushes of a batch (or creations of the schema) that failed.");
		sample_u(w, "profd_clickhouse_flush_failures_total", st.remote_flush_failures);
		family(w, "profd_clickhouse_spool_full_refusals_total", "counter",
		       "Commits refused because the spool was full.");
		sample_u(w, "profd_clickhouse_spool_full_refusals_total", st.remote_spool_full_refusals);
		family(w, "profd_clickhouse_skipped_profiles_total", "counter",
		       "Spooled profiles that could not be sent (not decodable, or of no known "
		       "series) and were skipped.");
		sample_u(w, "profd_clickhouse_skipped_profiles_total", st.remote_skipped_profiles);
		family(w, "profd_clickhouse_last_flush_timestamp_seconds", "gauge",
		       "When ClickHouse last accepted a batch (0: not yet).");
		jprintf(w, "profd_clickhouse_last_flush_timestamp_seconds %.3f\n",
		        (double)st.remote_last_flush_ms / 1000.0);
		family(w, "profd_clickhouse_retention_partitions_dropped_total", "counter",
		       "Partitions (UTC days) dropped from ClickHouse because they were past the "
		       "retention time.");
		sample_u(w, "profd_clickhouse_retention_partitions_dropped_total",
		         st.remote_partitions_dropped);
		family(w, "profd_clickhouse_retention_failures_total", "counter",
		       "Retention runs in ClickHouse that failed (tried again later).");
		sample_u(w, "profd_clickhouse_retention_failures_total", st.remote_retention_failures);
	}

	/* service discovery, named as Prometheus names it */
	if (s->o.discovery) {
		struct pd_discovery_stats ds;
		pd_discovery_manager_stats(s->o.discovery, &ds);
		family(w, "prometheus_sd_discovered_providers", "gauge",
		       "Service discovery providers running.");
		sample_u(w, "prometheus_sd_discovered_providers", ds.providers);
		family(w, "prometheus_sd_updates_total", "counter",
		       "Target group updates sent by service discovery to the scrape manager.");
		sample_u(w, "prometheus_sd_updates_total", ds.updates_sent);
		family(w, "prometheus_sd_refreshes_total", "counter",
		       "Refreshes of service discovery providers, failed ones included.");
		sample_u(w, "prometheus_sd_refreshes_total", ds.refreshes);
		family(w, "prometheus_sd_file_read_errors_total", "counter",
		       "File service discovery read errors.");
		sample_u(w, "prometheus_sd_file_read_errors_total", ds.file_read_errors);
		family(w, "prometheus_sd_http_failures_total", "counter",
		       "HTTP service discovery refreshes that failed.");
		sample_u(w, "prometheus_sd_http_failures_total", ds.http_failures);
		family(w, "prometheus_sd_dns_lookups_total", "counter",
		       "The number of DNS-SD lookups.");
		sample_u(w, "prometheus_sd_dns_lookups_total", ds.dns_lookups);
		family(w, "prometheus_sd_dns_lookup_failures_total", "counter",
		       "The number of DNS-SD lookup failures.");
		sample_u(w, "prometheus_sd_dns_lookup_failures_total", ds.dns_lookup_failures);
		/* every role and event, as Prometheus initialises them */
		static const char *const k8s_roles[] = {"node",      "service",       "pod",
		                                        "endpoints", "endpointslice", "ingress"};
		static const char *const k8s_events[] = {"add", "update", "delete"};
		family(w, "prometheus_sd_kubernetes_events_total", "counter",
		       "The number of Kubernetes events handled.");
		for (int ro = 0; ro < 6; ro++)
			for (int e = 0; e < 3; e++)
				jprintf(w,
				        "prometheus_sd_kubernetes_events_total{event=\"%s\",role=\"%s\"} "
				        "%llu\n",
				        k8s_events[e], k8s_roles[ro],
				        (unsigned long long)ds.k8s_events[ro][e]);
		family(w, "prometheus_sd_kubernetes_failures_total", "counter",
		       "The number of failed WATCH/LIST requests.");
		sample_u(w, "prometheus_sd_kubernetes_failures_total", ds.k8s_failures);
	}

	/* the API */
	pthread_mutex_lock(&s->m.mu);
	m = s->m.c;
	pthread_mutex_unlock(&s->m.mu);
	unsigned running, pushing;
	pthread_mutex_lock(&s->qmu);
	running = s->qrunning;
	pushing = s->pushing;
	pthread_mutex_unlock(&s->qmu);
	family(w, "profd_http_requests_total", "counter",
	       "Counter of HTTP requests by handler and status code.");
	for (int h = 0; h < API_NHANDLERS; h++)
		for (int c = 0; c <= API_NCODES; c++) {
			if (!m.requests[h][c])
				continue;
			jprintf(w, "profd_http_requests_total{code=\"");
			if (c < API_NCODES)
				jprintf(w, "%u", api_codes[c]);
			else
				jput(w, "other");
			jput(w, "\",handler=");
			label_value(w, api_handler_names[h]);
			jprintf(w, "} %llu\n", (unsigned long long)m.requests[h][c]);
		}
	family(w, "profd_http_request_duration_seconds", "histogram",
	       "Histogram of latencies for HTTP requests.");
	for (int h = 0; h < API_NHANDLERS; h++) {
		if (!m.dur_count[h])
			continue;
		for (int b = 0; b < API_NBUCKETS; b++) {
			jput(w, "profd_http_request_duration_seconds_bucket{handler=");
			label_value(w, api_handler_names[h]);
			jprintf(w, ",le=\"%g\"} %llu\n", api_buckets[b],
			        (unsigned long long)m.dur_bucket[h][b]);
		}
		jput(w, "profd_http_request_duration_seconds_bucket{handler=");
		label_value(w, api_handler_names[h]);
		jprintf(w, ",le=\"+Inf\"} %llu\n", (unsigned long long)m.dur_count[h]);
		jput(w, "profd_http_request_duration_seconds_sum{handler=");
		label_value(w, api_handler_names[h]);
		jprintf(w, "} %.17g\n", m.dur_sum[h]);
		jput(w, "profd_http_request_duration_seconds_count{handler=");
		label_value(w, api_handler_names[h]);
		jprintf(w, "} %llu\n", (unsigned long long)m.dur_count[h]);
	}
	family(w, "profd_queries_total", "counter", "Profile queries (/api/v1/query) by mode.");
	static const char *const modes[] = {"single", "merge", "diff"};
	for (int i = 0; i < 3; i++)
		jprintf(w, "profd_queries_total{mode=\"%s\"} %llu\n", modes[i],
		        (unsigned long long)m.queries[i]);
	family(w, "profd_queries_running", "gauge", "Queries running now.");
	sample_u(w, "profd_queries_running", running);
	family(w, "profd_query_profiles_read_total", "counter",
	       "Profiles read from the store by queries.");
	sample_u(w, "profd_query_profiles_read_total", m.profiles_read);
	family(w, "profd_query_profile_bytes_read_total", "counter",
	       "Stored bytes of the profiles read by queries.");
	sample_u(w, "profd_query_profile_bytes_read_total", m.profile_bytes_read);
	family(w, "profd_query_merges_truncated_total", "counter",
	       "Merges cut short by the profile count or byte limit.");
	sample_u(w, "profd_query_merges_truncated_total", m.merges_truncated);
	family(w, "profd_push_failures_total", "counter",
	       "Pushed profiles refused (bad labels, invalid profile, out of order) or failed.");
	sample_u(w, "profd_push_failures_total", m.push_failed);
	family(w, "profd_push_bytes_total", "counter", "Stored bytes of pushed profiles.");
	sample_u(w, "profd_push_bytes_total", m.pushed_bytes);
	family(w, "profd_push_refused_total", "counter",
	       "Pushes refused for a limit, by the limit: concurrency "
	       "(--web.max-concurrent-pushes), body_size, decompressed_size, decompression_ratio, "
	       "decoded_size, samples, sample_labels.");
	for (int i = 1; i < API_PUSH_REFUSALS; i++)
		jprintf(w, "profd_push_refused_total{reason=\"%s\"} %llu\n", api_push_refusal_name(i),
		        (unsigned long long)m.push_refused[i]);
	api_ingest_metrics(s, w);
	api_debuginfo_metrics(s, w);
	api_symbolizer_metrics(s, w);
	family(w, "profd_pushes_in_progress", "gauge",
	       "Pushes being received or stored now (at most --web.max-concurrent-pushes).");
	sample_u(w, "profd_pushes_in_progress", pushing);
	family(w, "profd_http_connections_reserve_total", "counter",
	       "Connections over --web.max-connections or --web.max-connections-per-client, "
	       "given to the reserve that serves only /-/healthy, /-/ready and /metrics.");
	sample_u(w, "profd_http_connections_reserve_total", m.conn_reserve);
	family(w, "profd_http_response_memory_bytes", "gauge",
	       "Bytes of responses held for clients, being built or not yet read, as counted "
	       "against --web.max-response-memory.");
	sample_u(w, "profd_http_response_memory_bytes",
	         __atomic_load_n(&s->resp_budget.used, __ATOMIC_RELAXED));
	family(w, "profd_http_response_memory_limit_bytes", "gauge",
	       "--web.max-response-memory.");
	sample_u(w, "profd_http_response_memory_limit_bytes", s->resp_budget.max);
	family(w, "profd_http_responses_refused_total", "counter",
	       "Responses refused with 503 because those held for clients filled "
	       "--web.max-response-memory.");
	sample_u(w, "profd_http_responses_refused_total",
	         __atomic_load_n(&s->resp_refused, __ATOMIC_RELAXED));
	family(w, "profd_http_connections_closed_total", "counter",
	       "Connections the server closed itself, by reason.");
	static const char *const reasons[] = {"header_timeout", "read_timeout", "evicted",
	                                      "refused"};
	for (int i = 0; i < 4; i++)
		jprintf(w, "profd_http_connections_closed_total{reason=\"%s\"} %llu\n", reasons[i],
		        (unsigned long long)m.conn_closed[i]);
	family(w, "profd_http_tls_handshake_errors_total", "counter",
	       "TLS connections that ended before or in the handshake (--web.config.file).");
	sample_u(w, "profd_http_tls_handshake_errors_total", m.tls_handshake_errors);
	family(w, "profd_http_basic_auth_checks_total", "counter",
	       "bcrypt checks of basic-auth passwords; repeated credentials are answered from "
	       "a cache and not counted.");
	sample_u(w, "profd_http_basic_auth_checks_total", m.bcrypt_checks);
	family(w, "profd_web_config_failures_total", "counter",
	       "Times the web configuration file (or a file it names) could not be read or "
	       "applied to a request or connection.");
	sample_u(w, "profd_web_config_failures_total", m.web_config_failures);
	family(w, "profd_config_last_reload_successful", "gauge",
	       "Whether the last configuration reload attempt was successful.");
	sample_u(w, "profd_config_last_reload_successful", (uint64_t)m.last_reload_ok);
	family(w, "profd_config_last_reload_success_timestamp_seconds", "gauge",
	       "Timestamp of the last successful configuration reload.");
	sample_d(w, "profd_config_last_reload_success_timestamp_seconds",
	         (double)m.last_reload_ms / 1000.0);
	family(w, "profd_config_reloads_total", "counter", "Configuration reloads, by result.");
	jprintf(w, "profd_config_reloads_total{result=\"success\"} %llu\n",
	        (unsigned long long)(m.reloads - m.reload_failures));
	jprintf(w, "profd_config_reloads_total{result=\"failure\"} %llu\n",
	        (unsigned long long)m.reload_failures);
	family(w, "profd_callgraph_layouts_running", "gauge",
	       "report=svg layouts (Graphviz, each in a child process) running now.");
	sample_u(w, "profd_callgraph_layouts_running",
	         __atomic_load_n(&s->cg_running, __ATOMIC_RELAXED));
	family(w, "profd_callgraph_layouts_total", "counter",
	       "report=svg layouts by result: ok, timeout (--callgraph.timeout), memory "
	       "(--callgraph.max-memory), too_big (the SVG), failed, busy (refused: "
	       "--callgraph.max-concurrency).");
	for (int i = 0; i < 6; i++)
		jprintf(w, "profd_callgraph_layouts_total{result=\"%s\"} %llu\n",
		        api_callgraph_results[i],
		        (unsigned long long)__atomic_load_n(&s->cg_results[i], __ATOMIC_RELAXED));

	process_metrics(w);
}
