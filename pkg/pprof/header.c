/* header.c: the lines pprof prints above a text report (its ProfileLabels): the
 * main binary, its build id, the profile's comments, the sample type, the time in
 * pprof's layout and the duration with the share of it the samples cover. */
#include <stdio.h>
#include <time.h>

#include "pprof_int.h"
#include "units.h"

int pd_pprof_header(const struct pd_pprof_profile *p, int idx, int64_t total, const char *out_unit,
		    struct pd_buf *b)
{
	const pb_profile *pb = p->pb;
	int rc = 0;
	if (pb->n_mapping) {
		const pb_mapping *m = pb->mapping[0];
		if (pd_pprof_str_len(p, m->filename)) {
			const char *f = pd_pprof_str(p, m->filename);
			size_t n = pd_pprof_str_len(p, m->filename), s = n;
			while (s > 0 && f[s - 1] != '/')
				s--;
			/* filepath.Base: a path that ends in '/' is named by what is before */
			if (s == n && n > 1) {
				size_t e = n;
				while (e > 1 && f[e - 1] == '/')
					e--;
				s = e;
				while (s > 0 && f[s - 1] != '/')
					s--;
				n = e;
			}
			rc = rc ? rc : pd_buf_printf(b, "File: ");
			rc = rc ? rc : pd_buf_append(b, f + s, n - s);
			rc = rc ? rc : pd_buf_printf(b, "\n");
		}
		if (pd_pprof_str_len(p, m->build_id)) {
			rc = rc ? rc : pd_buf_printf(b, "Build ID: ");
			rc = rc ? rc : pd_buf_append(b, pd_pprof_str(p, m->build_id),
						     pd_pprof_str_len(p, m->build_id));
			rc = rc ? rc : pd_buf_printf(b, "\n");
		}
	}
	for (size_t i = 0; i < pb->n_comment; i++) {
		const char *c = pd_pprof_str(p, pb->comment[i]);
		size_t n = pd_pprof_str_len(p, pb->comment[i]);
		if (n && c[0] == '#')
			continue;
		rc = rc ? rc : pd_buf_append(b, c, n);
		rc = rc ? rc : pd_buf_printf(b, "\n");
	}
	if (idx >= 0 && (size_t)idx < pb->n_sample_type) {
		size_t n;
		const char *t = pd_pprof_sample_type_n(p, (size_t)idx, &n);
		rc = rc ? rc : pd_buf_printf(b, "Type: ");
		rc = rc ? rc : pd_buf_append(b, t, n);
		rc = rc ? rc : pd_buf_printf(b, "\n");
	}
	if (pb->time_nanos) {
		/* Go's "Jan 2, 2006 at 3:04pm (MST)", in the local time zone */
		int64_t ns = pb->time_nanos;
		time_t secs = (time_t)(ns / 1000000000 - (ns % 1000000000 < 0));
		struct tm tm;
		char ts[96];
		if (localtime_r(&secs, &tm) && strftime(ts, sizeof(ts), "%b %-d, %Y at %-I:%M%P (%Z)", &tm))
			rc = rc ? rc : pd_buf_printf(b, "Time: %s\n", ts);
	}
	if (pb->duration_nanos) {
		char d[64], v[64], r[64] = "";
		pd_pprof_format_value(pb->duration_nanos, "nanoseconds", d, sizeof(d));
		const char *unit = idx >= 0 && (size_t)idx < pb->n_sample_type
					   ? pd_pprof_sample_unit(p, (size_t)idx)
					   : "";
		pd_pprof_format_value_in(total, unit, out_unit, v, sizeof(v));
		double f;
		if (pd_pprof_unit_kind(unit, &f) == PD_UNIT_TIME) {
			double tn = (double)total * f;
			if (tn >= -9.2e18 && tn <= 9.2e18 && (int64_t)tn != 0) {
				char pc[32];
				pd_pprof_format_percent((int64_t)tn, pb->duration_nanos, pc, sizeof(pc));
				snprintf(r, sizeof(r), "(%s)", pc);
			}
		}
		rc = rc ? rc : pd_buf_printf(b, "Duration: %s, Total samples = %s %s\n", d, v, r);
	}
	return rc;
}
