/* granularity.c: which granularity a profile's reports use (go tool pprof's
 * -functions, -lines, -files, -addresses), its words, and setting it on a
 * profile; nodes.c keys and names report nodes by it. */
#include <string.h>

#include "pprof_int.h"

static const char *const words[] = {"functions", "lines", "files", "addresses"};

int pd_pprof_granularity_parse(const char *spec, enum pd_pprof_granularity *out, struct pd_err *err)
{
	if (!spec || !*spec) {
		*out = PD_PPROF_GRAN_FUNCTIONS;
		return 0;
	}
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcmp(spec, words[i]) == 0) {
			*out = (enum pd_pprof_granularity)i;
			return 0;
		}
	return pd_err_set(err, PD_EINVAL,
	                  "unknown granularity \"%.64s\": use functions, lines, files or addresses",
	                  spec);
}

const char *pd_pprof_granularity_string(enum pd_pprof_granularity g)
{
	return (unsigned)g < sizeof(words) / sizeof(words[0]) ? words[g] : "functions";
}

void pd_pprof_set_granularity(struct pd_pprof_profile *p, enum pd_pprof_granularity g)
{
	if (p && (unsigned)g < sizeof(words) / sizeof(words[0]))
		p->granularity = (uint8_t)g;
}

enum pd_pprof_granularity pd_pprof_get_granularity(const struct pd_pprof_profile *p)
{
	return (enum pd_pprof_granularity)p->granularity;
}
