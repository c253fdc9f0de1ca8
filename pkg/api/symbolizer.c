/* symbolizer.c: what the HTTP API does with pkg/symbolize: the symbolization of
 * a query's result (once per merged result, before any report; the stored
 * profiles are not changed), GET /api/v1/status/symbolizer, and the
 * profd_symbolizer_* metrics. */
#include "api_int.h"

#include <string.h>
#include <time.h>

#include "profd/symbolize.h"

#define DEFAULT_TIMEOUT_MS 2000

static int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int api_report_names(struct api_req *r, struct api_resp *w, enum pd_pprof_names *out)
{
	struct pd_err err = {0};
	if (pd_pprof_names_parse(api_param(r, "symbolize"), out, &err)) {
		api_bad_param(w, "symbolize", "%s", err.msg);
		return -1;
	}
	return 0;
}

int api_symbolize(struct api_req *r, struct api_resp *w, const struct pd_pprof_profile *p,
                  struct pd_pprof_profile **out, struct pd_symbolize_result *res,
                  int64_t *deadline_us)
{
	struct pd_api_server *s = r->srv;
	*out = NULL;
	memset(res, 0, sizeof(*res));
	enum pd_pprof_names names;
	if (api_report_names(r, w, &names))
		return -1;
	/* symbolize=false (none): the locations and names as stored */
	if (!s->o.symbolizer || names == PD_PPROF_NAMES_RAW)
		return 0;
	int64_t t = s->o.symbolize_timeout_ms ? s->o.symbolize_timeout_ms : DEFAULT_TIMEOUT_MS;
	if (!*deadline_us)
		*deadline_us = t > 0 ? mono_us() + t * 1000 : 1;
	int64_t deadline = *deadline_us;
	struct pd_err err = {0};
	int rc = pd_symbolizer_run(s->o.symbolizer, p, deadline, out, res, &err);
	if (rc) {
		api_internal(w, "symbolizing the profile failed", rc, &err);
		return -1;
	}
	if (res->locations == 0)
		return 0;
	w->symbolized = res->partial ? "partial" : "full";
	if (res->partial)
		api_warn(w,
		         "symbolization is partial: debug information was still being fetched "
		         "after %lld ms (--symbolizer.timeout); %zu of %zu locations show as "
		         "<binary>+0x<offset>: %s",
		         (long long)t, res->unresolved, res->locations, res->missing);
	return 0;
}

int api_symbolize_merge(struct api_req *r, struct api_resp *w, const struct pd_pprof_profile *p,
                        struct pd_pprof_profile **out, struct pd_symbolize_result *res,
                        int64_t *deadline_us)
{
	struct pd_api_server *s = r->srv;
	*out = NULL;
	memset(res, 0, sizeof(*res));
	if (!s->o.symbolizer)
		return 0;
	int64_t t = s->o.symbolize_timeout_ms ? s->o.symbolize_timeout_ms : DEFAULT_TIMEOUT_MS;
	if (!*deadline_us)
		*deadline_us = t > 0 ? mono_us() + t * 1000 : 1;
	struct pd_err err = {0};
	int rc = pd_symbolizer_run(s->o.symbolizer, p, *deadline_us, out, res, &err);
	if (rc) {
		pd_log_warn("api", "symbolizing a merge failed; answered unsymbolized", "err=%s",
		            err.msg);
		*out = NULL;
		return -1;
	}
	if (res->locations)
		w->symbolized = res->partial ? "partial" : "full";
	return 0;
}

void api_status_symbolizer(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	if (!s->o.symbolizer) {
		jput(w, "{\"enabled\":false}");
		return;
	}
	struct pd_symbolizer_stats st;
	pd_symbolizer_get_stats(s->o.symbolizer, &st);
	struct pd_buf b;
	pd_buf_init(&b, 0);
	int rc = pd_symbolizer_sources_json(s->o.symbolizer, &b);
	jput(w, "{\"enabled\":true,\"sources\":[");
	if (rc == 0)
		jputn(w, (const char *)b.data, b.len);
	pd_buf_fini(&b);
	int64_t t = s->o.symbolize_timeout_ms ? s->o.symbolize_timeout_ms : DEFAULT_TIMEOUT_MS;
	jprintf(w,
	        "],\"timeoutMs\":%lld,\"cacheBytes\":%llu,\"cacheEntries\":%llu,"
	        "\"buildIds\":%llu,\"hits\":%llu,\"misses\":%llu,\"failures\":%llu,"
	        "\"fetches\":%llu,\"downloads\":%llu,\"partial\":%llu,\"inFlight\":%llu,"
	        "\"openFiles\":%llu,\"evictions\":%llu,\"reopens\":%llu}",
	        (long long)t, (unsigned long long)st.cache_bytes,
	        (unsigned long long)st.cache_entries, (unsigned long long)st.build_ids,
	        (unsigned long long)st.hits, (unsigned long long)st.misses,
	        (unsigned long long)st.failures, (unsigned long long)st.fetches,
	        (unsigned long long)st.downloads, (unsigned long long)st.partial,
	        (unsigned long long)st.in_flight, (unsigned long long)st.open_files,
	        (unsigned long long)st.evictions, (unsigned long long)st.reopens);
}

static void counter(struct api_resp *w, const char *name, const char *type, const char *help,
                    uint64_t v)
{
	jprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
	        (unsigned long long)v);
}

void api_symbolizer_metrics(struct pd_api_server *s, struct api_resp *w)
{
	if (!s->o.symbolizer)
		return;
	struct pd_symbolizer_stats st;
	pd_symbolizer_get_stats(s->o.symbolizer, &st);
	counter(
	    w, "profd_symbolizer_cache_hits_total", "counter",
	    "Addresses symbolized from the symbolizer's cache (memory, or disk after a restart).",
	    st.hits);
	counter(w, "profd_symbolizer_cache_misses_total", "counter",
	        "Addresses looked up in debug information.", st.misses);
	counter(w, "profd_symbolizer_failures_total", "counter",
	        "Attempts to find a build id's debug information that found nothing.", st.failures);
	counter(w, "profd_symbolizer_fetches_total", "counter",
	        "Debug files found (any source) and opened.", st.fetches);
	counter(w, "profd_symbolizer_downloads_total", "counter",
	        "Debug files downloaded from debuginfod.", st.downloads);
	counter(w, "profd_symbolizer_partial_total", "counter",
	        "Queries answered before their debug information was there (--symbolizer.timeout).",
	        st.partial);
	counter(w, "profd_symbolizer_in_flight", "gauge",
	        "Build ids whose debug information is being looked for now.", st.in_flight);
	counter(w, "profd_symbolizer_cache_bytes", "gauge",
	        "Bytes of the symbolizer's memory cache (--symbolizer.cache-size).",
	        st.cache_bytes);
	counter(w, "profd_symbolizer_build_ids", "gauge",
	        "Build ids the symbolizer knows (found, not found or being looked for).",
	        st.build_ids);
	counter(w, "profd_symbolizer_open_files", "gauge",
	        "Debug files open now (--symbolizer.max-open-files).", st.open_files);
	counter(w, "profd_symbolizer_evictions_total", "counter",
	        "Debug files closed to stay within --symbolizer.max-open-files.", st.evictions);
	counter(w, "profd_symbolizer_build_id_evictions_total", "counter",
	        "Build ids dropped from memory to stay within --symbolizer.max-build-ids.",
	        st.build_id_evictions);
	counter(w, "profd_symbolizer_reopens_total", "counter",
	        "Debug files closed that way and opened again for a later lookup.", st.reopens);
}
