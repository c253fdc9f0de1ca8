/* fuzz_api_params.c: libFuzzer target for the API's parameter parsing
 * (pkg/api/params.c). The input is an application/x-www-form-urlencoded string,
 * as a query string or a POSTed form of the read endpoints brings it, parsed with
 * api_params_parse_form; then every typed parser reads the parameters the
 * endpoints read: times (start, end, time), durations (step, lookback), numbers
 * (limit, max_profiles, a double), selectors (query, match[]) and the start/end
 * pair with its range limit, and group_by's label names. Each may refuse; what it
 * accepts must hold: no parameter holds a NUL, a refusal is a 400 naming the
 * parameter, a duration is not negative, a range has start <= end within the
 * limit, an unsigned number reads back as its text, and group_by gives at most
 * 16 valid, distinct label names. A broken property aborts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bug(const char *what, const uint8_t *in, size_t n)
{
	fprintf(stderr, "fuzz_api_params: BUG: %s\n  input: %.*s\n", what, (int)n,
	        (const char *)in);
	abort();
}

static void resp_start(struct api_resp *w)
{
	memset(w, 0, sizeof(*w));
	w->status = 200;
	pd_buf_init(&w->body, 1 << 20);
}

static void resp_end(struct api_resp *w)
{
	pd_buf_fini(&w->body);
	for (size_t i = 0; i < w->nwarnings; i++)
		free(w->warnings[i]);
	free(w->warnings);
	free(w->disposition);
}

/* A refusal must be a 400 whose message names the parameter. */
static void check_refusal(const struct api_resp *w, const char *name, const uint8_t *in, size_t n)
{
	if (!w->error_set || w->status != 400)
		bug("a parser failed without setting a 400", in, n);
	if (!strstr(w->error, name))
		bug("a 400 that does not name its parameter", in, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 16)
		return 0;
	struct pd_api_server srv;
	memset(&srv, 0, sizeof(srv));
	srv.o.max_range_ms = PD_API_DEFAULT_MAX_RANGE_MS;
	struct api_req r;
	memset(&r, 0, sizeof(r));
	r.srv = &srv;
	r.route = -1;
	r.now_ms = 1700000000000LL;
	int rc = api_params_parse_form(&r, (const char *)data, size);
	if (rc && rc != PD_EINVAL && rc != PD_ENOMEM)
		bug("api_params_parse_form: an unexpected error code", data, size);
	if (rc == PD_EINVAL && !memchr(data, '%', size) && !memchr(data, 0, size))
		bug("api_params_parse_form: refused a form without a NUL or any %XX", data, size);
	size_t amps = 0;
	for (size_t i = 0; i < size; i++)
		amps += data[i] == '&';
	if (r.nparams > amps + 1)
		bug("more parameters than pairs", data, size);
	for (size_t i = 0; i < r.nparams; i++)
		if (!r.params[i].name || !r.params[i].value)
			bug("a parameter without name or value", data, size);

	struct api_resp w;
	static const char *const times[] = {"time", "start", "end"};
	for (int i = 0; i < 3; i++) {
		int64_t t;
		resp_start(&w);
		if (api_time_param(&r, &w, times[i], 42, &t))
			check_refusal(&w, times[i], data, size);
		else if (!api_param(&r, times[i]) || !*api_param(&r, times[i]))
			if (t != 42)
				bug("a missing time did not give the default", data, size);
		resp_end(&w);
	}
	static const char *const durs[] = {"step", "lookback"};
	for (int i = 0; i < 2; i++) {
		int64_t d;
		resp_start(&w);
		if (api_duration_param(&r, &w, durs[i], 7, &d))
			check_refusal(&w, durs[i], data, size);
		else if (d < 0)
			bug("a negative duration was accepted", data, size);
		resp_end(&w);
	}
	{
		uint64_t u;
		resp_start(&w);
		if (api_uint_param(&r, &w, "limit", 3, &u)) {
			check_refusal(&w, "limit", data, size);
		} else if (api_param(&r, "limit") && *api_param(&r, "limit")) {
			errno = 0;
			unsigned long long x = strtoull(api_param(&r, "limit"), NULL, 10);
			if (errno || x != u)
				bug("an unsigned number read differently from its text", data, size);
		}
		resp_end(&w);
	}
	{
		int64_t x;
		resp_start(&w);
		if (api_int_param(&r, &w, "max_profiles", 3, &x))
			check_refusal(&w, "max_profiles", data, size);
		resp_end(&w);
	}
	{
		double d;
		resp_start(&w);
		if (api_double_param(&r, &w, "ratio", 0.5, 0, 1, &d))
			check_refusal(&w, "ratio", data, size);
		else if (!(d >= 0 && d <= 1))
			bug("a number outside its bounds was accepted", data, size);
		resp_end(&w);
	}
	static const char *const prefixes[] = {"", "a.", "b."};
	for (int i = 0; i < 3; i++) {
		int64_t s, e;
		resp_start(&w);
		if (api_range_params(&r, &w, prefixes[i], &s, &e)) {
			if (!w.error_set || w.status != 400)
				bug("a range was refused without a 400", data, size);
		} else if (e < s || (uint64_t)e - (uint64_t)s > (uint64_t)srv.o.max_range_ms) {
			bug("a range outside its limit was accepted", data, size);
		}
		resp_end(&w);
	}
	const char **sels;
	size_t nsel;
	if (api_params(&r, "match[]", &sels, &nsel) == 0) {
		for (size_t i = 0; i < nsel && i < 8; i++) {
			struct api_sel sel;
			resp_start(&w);
			if (api_sel_parse(&w, "match[]", sels[i], &sel) == 0) {
				if (!sel.sel || (sel.nm && !sel.m))
					bug("a parsed selector without matchers", data, size);
				api_sel_fini(&sel);
			} else if (!w.error_set) {
				bug("a selector refused without an error", data, size);
			}
			resp_end(&w);
		}
		free(sels);
	}
	{
		struct api_sel sel;
		resp_start(&w);
		if (api_sel_parse(&w, "query", api_param(&r, "query"), &sel) == 0)
			api_sel_fini(&sel);
		else if (!w.error_set)
			bug("a query refused without an error", data, size);
		resp_end(&w);
	}
	{
		struct api_group_by gb;
		resp_start(&w);
		if (api_group_by_parse(&r, &w, "group_by", &gb)) {
			check_refusal(&w, "group_by", data, size);
		} else {
			if (gb.n > API_GROUP_BY_MAX_LABELS)
				bug("group_by: more names than the limit", data, size);
			for (size_t i = 0; i < gb.n; i++) {
				if (!pd_labels_valid_name(gb.names[i]))
					bug("group_by: an invalid label name accepted", data, size);
				for (size_t j = 0; j < i; j++)
					if (strcmp(gb.names[i], gb.names[j]) == 0)
						bug("group_by: a name accepted twice", data, size);
			}
			api_group_by_fini(&gb);
		}
		resp_end(&w);
	}
	for (size_t i = 0; i < r.nparams; i++) {
		free(r.params[i].name);
		free(r.params[i].value);
	}
	free(r.params);
	return 0;
}
