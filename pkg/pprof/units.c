/* units.c: pprof's measurement units: which units are bytes and which are time,
 * how to convert between them, and how reports print values and percentages. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pprof_int.h"
#include "units.h"

static void lower(const char *in, char *out, size_t size)
{
	size_t i = 0;
	for (; in[i] && i + 1 < size; i++)
		out[i] = (char)tolower((unsigned char)in[i]);
	out[i] = '\0';
}

static void trim_s(char *s, size_t min_len)
{
	size_t n = strlen(s);
	if (n > min_len && s[n - 1] == 's')
		s[n - 1] = '\0';
}

static const struct {
	const char *alias;
	double factor;
} mem_units[] = {{"byte", 1},
		 {"b", 1},
		 {"kb", 1024.0},
		 {"kbyte", 1024.0},
		 {"kilobyte", 1024.0},
		 {"mb", 1048576.0},
		 {"mbyte", 1048576.0},
		 {"megabyte", 1048576.0},
		 {"gb", 1073741824.0},
		 {"gbyte", 1073741824.0},
		 {"gigabyte", 1073741824.0},
		 {"tb", 1099511627776.0},
		 {"tbyte", 1099511627776.0},
		 {"terabyte", 1099511627776.0},
		 {"pb", 1125899906842624.0},
		 {"pbyte", 1125899906842624.0},
		 {"petabyte", 1125899906842624.0}},
  time_units[] = {{"nanosecond", 1}, {"ns", 1},       {"microsecond", 1e3}, {"us", 1e3},
		  {"\xce\xbcs", 1e3},   {"millisecond", 1e6}, {"ms", 1e6},        {"second", 1e9},
		  {"sec", 1e9},       {"s", 1e9},       {"hour", 3600e9},     {"hr", 3600e9}};

int pd_pprof_unit_kind(const char *unit, double *factor)
{
	char u[64];
	lower(unit, u, sizeof(u));
	char m[64];
	memcpy(m, u, sizeof(m));
	trim_s(m, 0);
	for (size_t i = 0; i < sizeof(mem_units) / sizeof(mem_units[0]); i++)
		if (strcmp(m, mem_units[i].alias) == 0) {
			*factor = mem_units[i].factor;
			return PD_UNIT_BYTES;
		}
	trim_s(u, 2);
	for (size_t i = 0; i < sizeof(time_units) / sizeof(time_units[0]); i++)
		if (strcmp(u, time_units[i].alias) == 0) {
			*factor = time_units[i].factor;
			return PD_UNIT_TIME;
		}
	*factor = 1;
	return PD_UNIT_OTHER;
}

double pd_pprof_unit_ratio(const char *from, const char *to)
{
	double ff, ft;
	int kf = pd_pprof_unit_kind(from, &ff), kt = pd_pprof_unit_kind(to, &ft);
	if (kf != kt || kf == PD_UNIT_OTHER)
		return 1;
	return ff / ft;
}

/* Scales v (in unit) to a readable unit; *label gets the unit's printed name. */
static double autoscale(int64_t value, const char *unit, const char **label)
{
	double f;
	int kind = pd_pprof_unit_kind(unit, &f);
	double v = (double)value * f;
	double a = fabs(v);
	if (kind == PD_UNIT_BYTES) {
		static const char *names[] = {"B", "kB", "MB", "GB", "TB", "PB"};
		int i = 0;
		double s = 1;
		while (i < 5 && a >= s * 1024) {
			s *= 1024;
			i++;
		}
		*label = names[i];
		return v / s;
	}
	if (kind == PD_UNIT_TIME) {
		/* the largest unit the value reaches, as pprof's time units go */
		static const struct {
			double div;
			const char *name;
		} t[] = {{1, "ns"}, {1e3, "us"}, {1e6, "ms"}, {1e9, "s"}, {3600e9, "hrs"}};
		size_t i = 0;
		while (i + 1 < sizeof(t) / sizeof(t[0]) && a >= t[i + 1].div)
			i++;
		*label = t[i].name;
		return v / t[i].div;
	}
	*label = "";
	return (double)value;
}

/* Prints v with two decimals, ".00" dropped, then the unit label; 0 prints bare. */
static void format_number(double v, const char *label, char *out, size_t size)
{
	char num[64];
	snprintf(num, sizeof(num), "%.2f", v);
	size_t n = strlen(num);
	if (n > 3 && strcmp(num + n - 3, ".00") == 0)
		num[n - 3] = '\0';
	if (strcmp(num, "0") == 0 || strcmp(num, "-0") == 0)
		snprintf(out, size, "0");
	else
		snprintf(out, size, "%s%s", num, label);
}

void pd_pprof_format_value(int64_t value, const char *unit, char *out, size_t size)
{
	const char *label;
	double v = autoscale(value, unit, &label);
	format_number(v, label, out, size);
}

void pd_pprof_format_percent(int64_t value, int64_t total, char *out, size_t size)
{
	double ratio = 0;
	if (total != 0)
		ratio = fabs((double)value / (double)total) * 100;
	if (ratio >= 99.95 && ratio <= 100.05)
		snprintf(out, size, "  100%%");
	else if (ratio >= 1.0)
		snprintf(out, size, "%5.2f%%", ratio);
	else
		snprintf(out, size, "%5.2g%%", ratio);
}

static const struct {
	const char *label;
	double size; /* in bytes or nanoseconds */
} out_units[] = {{"B", 1},          {"kB", 1024.0},      {"MB", 1048576.0},   {"GB", 1073741824.0},
		 {"TB", 1099511627776.0}, {"PB", 1125899906842624.0}, {"ns", 1},  {"us", 1e3},
		 {"ms", 1e6},       {"s", 1e9},          {"hrs", 3600e9}};

const char *pd_pprof_pick_unit(int64_t min, int64_t max, const char *unit)
{
	const char *lmin, *lmax;
	min = (int64_t)(pd_uabs64(min) >> (min == INT64_MIN));
	max = (int64_t)(pd_uabs64(max) >> (max == INT64_MIN));
	if (min == 0)
		min = max;
	autoscale(min, unit, &lmin);
	autoscale(max, unit, &lmax);
	if (strcmp(lmin, lmax) != 0 && min <= INT64_MAX / 100 && min * 100 < max)
		autoscale(min * 100, unit, &lmin);
	return lmin;
}

void pd_pprof_format_value_in(int64_t value, const char *unit, const char *out_unit, char *out,
			      size_t size)
{
	double f;
	int kind = pd_pprof_unit_kind(unit, &f);
	double v = (double)value;
	const char *label = "";
	if (kind != PD_UNIT_OTHER) {
		for (size_t i = 0; i < sizeof(out_units) / sizeof(out_units[0]); i++)
			if (strcmp(out_units[i].label, out_unit) == 0) {
				v = (double)value * f / out_units[i].size;
				label = out_units[i].label;
			}
	}
	format_number(v, label, out, size);
}
