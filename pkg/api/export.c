/* export.c: the query API's file reports besides report=proto: report=folded
 * (folded stacks as flamegraph.pl reads them, text/plain) and report=speedscope
 * (a speedscope JSON file). Both answer the file itself, not the JSON envelope,
 * with a Content-Disposition naming it; errors still answer the envelope. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "profd/pprof.h"

void api_report_export(struct api_resp *w, int speedscope, const struct pd_pprof_profile *p,
                       int idx, const char *filename)
{
	struct pd_err err = {0};
	struct pd_buf out;
	int rc;
	pd_buf_init(&out, w->body.max);
	if (speedscope)
		rc = pd_pprof_speedscope(p, idx, 1, filename, &out, &err);
	else
		rc = pd_pprof_folded(p, idx, &out, &err);
	if (rc == PD_ETOOBIG) {
		/* the envelope names the response limit */
		w->berr = rc;
		goto out;
	}
	if (rc == PD_EINVAL) {
		api_bad_param(w, "report", "%s", err.msg);
		goto out;
	}
	if (rc) {
		api_internal(w,
		             speedscope ? "writing speedscope JSON failed"
		                        : "writing folded stacks failed",
		             rc, &err);
		goto out;
	}
	w->json = 0;
	w->status = 200;
	w->content_type = speedscope ? "application/json" : "text/plain; charset=utf-8";
	pd_buf_fini(&w->body);
	w->body = out;
	pd_buf_init(&out, 0);
	size_t n = strlen(filename) + 40;
	w->disposition = malloc(n);
	if (w->disposition)
		snprintf(w->disposition, n, "attachment; filename=\"%s\"", filename);
out:
	pd_buf_fini(&out);
}
