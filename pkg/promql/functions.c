/* functions.c: the PromQL functions profd evaluates, their argument types
 * (checked by the parser), and the functions over range vectors (rate, increase,
 * delta, *_over_time, ...) with Prometheus's extrapolation and Kahan summation. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval_int.h"

#define M PQ_ARG_MATRIX
#define V PQ_ARG_VECTOR
#define S PQ_ARG_SCALAR
static const struct pd_pq_func funcs[] = {
    {"rate", F_RATE, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"increase", F_INCREASE, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"delta", F_DELTA, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"irate", F_IRATE, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"idelta", F_IDELTA, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"deriv", F_DERIV, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"sum_over_time", F_SUM_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"avg_over_time", F_AVG_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"min_over_time", F_MIN_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"max_over_time", F_MAX_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"count_over_time", F_COUNT_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"last_over_time", F_LAST_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"stddev_over_time", F_STDDEV_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"stdvar_over_time", F_STDVAR_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"present_over_time", F_PRESENT_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"changes", F_CHANGES, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"resets", F_RESETS, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"abs", F_ABS, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"ceil", F_CEIL, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"floor", F_FLOOR, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"exp", F_EXP, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"ln", F_LN, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"log2", F_LOG2, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"log10", F_LOG10, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"sqrt", F_SQRT, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"sgn", F_SGN, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"time", F_TIME, {S}, 0, 0, PD_PROMQL_SCALAR},
    {"vector", F_VECTOR, {S}, 1, 0, PD_PROMQL_VECTOR},
    {"scalar", F_SCALAR, {V}, 1, 0, PD_PROMQL_SCALAR},
    {"clamp_min", F_CLAMP_MIN, {V, S}, 2, 0, PD_PROMQL_VECTOR},
    {"clamp_max", F_CLAMP_MAX, {V, S}, 2, 0, PD_PROMQL_VECTOR},
};
#undef M
#undef V
#undef S

const struct pd_pq_func *pd_pq_func_lookup(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof funcs / sizeof funcs[0]; i++)
		if (strlen(funcs[i].name) == len && !memcmp(funcs[i].name, name, len))
			return &funcs[i];
	return NULL;
}

/* ---- functions over range vectors ---------------------------------------------- */

static void kahan_inc(double inc, double *sum, double *c)
{
	double t = *sum + inc;
	if (fabs(*sum) >= fabs(inc))
		*c += (*sum - t) + inc;
	else
		*c += (inc - t) + *sum;
	*sum = t;
}

/* rate, increase and delta, with Prometheus's extrapolation to the range's ends. */
static int extrapolated(const struct rseries *s, int64_t range_start, int64_t range_end,
                        int64_t range_ms, int counter, int is_rate, double *out)
{
	if (s->n < 2)
		return 0;
	double result = s->v[s->n - 1] - s->v[0];
	if (counter) {
		double last = 0;
		for (size_t i = 0; i < s->n; i++) {
			if (s->v[i] < last)
				result += last;
			last = s->v[i];
		}
	}
	double to_start = (double)(s->t[0] - range_start) / 1000;
	double to_end = (double)(range_end - s->t[s->n - 1]) / 1000;
	double sampled = (double)(s->t[s->n - 1] - s->t[0]) / 1000;
	double avg = sampled / (double)(s->n - 1);
	if (counter && result > 0 && s->v[0] >= 0) {
		double to_zero = sampled * (s->v[0] / result);
		if (to_zero < to_start)
			to_start = to_zero;
	}
	double threshold = avg * 1.1, interval = sampled;
	interval += to_start < threshold ? to_start : avg / 2;
	interval += to_end < threshold ? to_end : avg / 2;
	result = result * (interval / sampled);
	if (is_rate)
		result /= (double)range_ms / 1000;
	*out = result;
	return 1;
}

static int instant_value(const struct rseries *s, int is_rate, double *out)
{
	if (s->n < 2)
		return 0;
	double last = s->v[s->n - 1], prev = s->v[s->n - 2];
	double r = is_rate && last < prev ? last : last - prev;
	int64_t iv = s->t[s->n - 1] - s->t[s->n - 2];
	if (iv == 0)
		return 0;
	if (is_rate)
		r /= (double)iv / 1000;
	*out = r;
	return 1;
}

/* deriv: the slope of the least-squares line through the samples. */
static double deriv(const struct rseries *s)
{
	double n = 0, sx = 0, cx = 0, sy = 0, cy = 0, sxy = 0, cxy = 0, sx2 = 0, cx2 = 0;
	int const_y = 1;
	for (size_t i = 0; i < s->n; i++) {
		if (const_y && i > 0 && s->v[i] != s->v[0])
			const_y = 0;
		n += 1;
		double x = (double)(s->t[i] - s->t[0]) / 1e3;
		kahan_inc(x, &sx, &cx);
		kahan_inc(s->v[i], &sy, &cy);
		kahan_inc(x * s->v[i], &sxy, &cxy);
		kahan_inc(x * x, &sx2, &cx2);
	}
	if (const_y)
		return isinf(s->v[0]) ? NAN : 0;
	sx += cx;
	sy += cy;
	sxy += cxy;
	sx2 += cx2;
	double cov = sxy - sx * sy / n, var = sx2 - sx * sx / n;
	return cov / var;
}

int pd_pq_over_time(int id, const struct rseries *s, int64_t rs, int64_t re, int64_t range,
                    double *out)
{
	size_t n = s->n;
	switch (id) {
	case F_RATE:
		return extrapolated(s, rs, re, range, 1, 1, out);
	case F_INCREASE:
		return extrapolated(s, rs, re, range, 1, 0, out);
	case F_DELTA:
		return extrapolated(s, rs, re, range, 0, 0, out);
	case F_IRATE:
		return instant_value(s, 1, out);
	case F_IDELTA:
		return instant_value(s, 0, out);
	case F_DERIV:
		if (n < 2)
			return 0;
		*out = deriv(s);
		return 1;
	case F_SUM_OT: {
		double sum = 0, c = 0;
		for (size_t i = 0; i < n; i++)
			kahan_inc(s->v[i], &sum, &c);
		*out = isinf(sum) ? sum : sum + c;
		return 1;
	}
	case F_AVG_OT: {
		double mean = 0, c = 0, count = 0;
		for (size_t i = 0; i < n; i++) {
			double x = s->v[i];
			count++;
			if (isinf(mean)) {
				if (isinf(x) && (mean > 0) == (x > 0))
					continue;
				if (!isinf(x) && !isnan(x))
					continue;
			}
			kahan_inc(x / count - mean / count, &mean, &c);
		}
		*out = isinf(mean) ? mean : mean + c;
		return 1;
	}
	case F_MIN_OT:
	case F_MAX_OT: {
		double m = s->v[0];
		for (size_t i = 1; i < n; i++) {
			double x = s->v[i];
			if ((id == F_MAX_OT ? m < x : m > x) || isnan(m))
				m = x;
		}
		*out = m;
		return 1;
	}
	case F_COUNT_OT:
		*out = (double)n;
		return 1;
	case F_LAST_OT:
		*out = s->v[n - 1];
		return 1;
	case F_PRESENT_OT:
		*out = 1;
		return 1;
	case F_STDDEV_OT:
	case F_STDVAR_OT: {
		double count = 0, mean = 0, cm = 0, aux = 0, ca = 0;
		for (size_t i = 0; i < n; i++) {
			count++;
			double delta = s->v[i] - (mean + cm);
			kahan_inc(delta / count, &mean, &cm);
			kahan_inc(delta * (s->v[i] - (mean + cm)), &aux, &ca);
		}
		*out = (aux + ca) / count;
		if (id == F_STDDEV_OT)
			*out = sqrt(*out);
		return 1;
	}
	case F_CHANGES:
	case F_RESETS: {
		double c = 0;
		for (size_t i = 1; i < n; i++) {
			double prev = s->v[i - 1], cur = s->v[i];
			if (id == F_CHANGES ? !(cur == prev || (isnan(cur) && isnan(prev)))
			                    : cur < prev)
				c++;
		}
		*out = c;
		return 1;
	}
	}
	return 0;
}

double pd_pq_instant_fn(int id, double x, double arg)
{
	switch (id) {
	case F_ABS:
		return fabs(x);
	case F_CEIL:
		return ceil(x);
	case F_FLOOR:
		return floor(x);
	case F_EXP:
		return exp(x);
	case F_LN:
		return log(x);
	case F_LOG2:
		return log2(x);
	case F_LOG10:
		return log10(x);
	case F_SQRT:
		return sqrt(x);
	case F_SGN:
		return x > 0 ? 1 : x < 0 ? -1 : x;
	case F_CLAMP_MIN:
		return isnan(x) || isnan(arg) ? NAN : fmax(x, arg);
	case F_CLAMP_MAX:
		return isnan(x) || isnan(arg) ? NAN : fmin(x, arg);
	}
	return x;
}
