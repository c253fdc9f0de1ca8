/* json.c: results in the JSON of Prometheus's HTTP query API: the `data` object
 * with resultType and result, times as seconds with milliseconds and values as the
 * strings Go's strconv.FormatFloat(v, 'f', -1, 64) writes. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "promql_int.h"

int pd_promql_format_value(struct pd_buf *b, double v)
{
	char e[40], out[400];
	size_t o = 0;
	int p;

	if (isnan(v))
		return pd_buf_append(b, "NaN", 3);
	if (isinf(v))
		return pd_buf_append(b, v > 0 ? "+Inf" : "-Inf", 4);
	/* the shortest digits that read back as v */
	for (p = 1; p <= 17; p++) {
		snprintf(e, sizeof e, "%.*e", p - 1, v);
		if (strtod(e, NULL) == v)
			break;
	}
	/* e is [-]d[.ddd]e[+-]xx: write it without the exponent */
	const char *s = e;
	if (*s == '-') {
		out[o++] = '-';
		s++;
	}
	char digits[24];
	size_t nd = 0;
	while (*s && *s != 'e') {
		if (*s != '.')
			digits[nd++] = *s;
		s++;
	}
	int exp = atoi(s + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	if (exp < 0) {
		out[o++] = '0';
		out[o++] = '.';
		for (int i = 0; i < -exp - 1; i++)
			out[o++] = '0';
		memcpy(out + o, digits, nd);
		o += nd;
	} else {
		for (int i = 0; i <= exp; i++)
			out[o++] = (size_t)i < nd ? digits[i] : '0';
		if (nd > (size_t)exp + 1) {
			out[o++] = '.';
			memcpy(out + o, digits + exp + 1, nd - (size_t)exp - 1);
			o += nd - (size_t)exp - 1;
		}
	}
	return pd_buf_append(b, out, o);
}

/* A timestamp as Prometheus's marshalTimestamp writes it: seconds, then the
 * milliseconds as three digits when there are any. */
static int format_time(struct pd_buf *b, int64_t t)
{
	const char *sign = "";
	uint64_t u = (uint64_t)t;
	if (t < 0) {
		sign = "-";
		u = (uint64_t)0 - u;
	}
	if (u % 1000)
		return pd_buf_printf(b, "%s%" PRIu64 ".%03" PRIu64, sign, u / 1000, u % 1000);
	return pd_buf_printf(b, "%s%" PRIu64, sign, u / 1000);
}

static int point(struct pd_buf *b, int64_t t, double v)
{
	int rc;
	if ((rc = pd_buf_append(b, "[", 1)) || (rc = format_time(b, t)) ||
	    (rc = pd_buf_append(b, ",\"", 2)) || (rc = pd_promql_format_value(b, v)))
		return rc;
	return pd_buf_append(b, "\"]", 2);
}

static int metric(struct pd_buf *b, const struct pd_labels *ls)
{
	int rc = pd_buf_append(b, "{\"metric\":{", 11);
	for (size_t i = 0; !rc && i < pd_labels_len(ls); i++) {
		const struct pd_label *l = pd_labels_at(ls, i);
		if ((i && (rc = pd_buf_append(b, ",", 1))) ||
		    (rc = pd_buf_json_string(b, l->name)) || (rc = pd_buf_append(b, ":", 1)) ||
		    (rc = pd_buf_json_string(b, l->value)))
			return rc;
	}
	return rc ? rc : pd_buf_append(b, "},", 2);
}

int pd_promql_result_json(const struct pd_promql_result *r, struct pd_buf *b)
{
	enum pd_promql_type type = pd_promql_result_type(r);
	int rc =
	    pd_buf_printf(b, "{\"resultType\":\"%s\",\"result\":", pd_promql_type_string(type));
	if (rc)
		return rc;
	if (type == PD_PROMQL_SCALAR) {
		if ((rc = point(b, pd_promql_result_time(r), pd_promql_result_scalar(r))))
			return rc;
		return pd_buf_append(b, "}", 1);
	}
	if (type == PD_PROMQL_STRING) {
		if ((rc = pd_buf_append(b, "[", 1)) ||
		    (rc = format_time(b, pd_promql_result_time(r))) ||
		    (rc = pd_buf_append(b, ",", 1)) ||
		    (rc = pd_buf_json_string(b, pd_promql_result_string(r))))
			return rc;
		return pd_buf_append(b, "]}", 2);
	}
	if ((rc = pd_buf_append(b, "[", 1)))
		return rc;
	for (size_t i = 0; i < pd_promql_result_len(r); i++) {
		const int64_t *t;
		const double *v;
		size_t n;
		const struct pd_labels *ls = pd_promql_result_series(r, i, &t, &v, &n);
		if ((i && (rc = pd_buf_append(b, ",", 1))) || (rc = metric(b, ls)))
			return rc;
		if (type == PD_PROMQL_VECTOR) {
			if ((rc = pd_buf_append(b, "\"value\":", 8)) || (rc = point(b, t[0], v[0])))
				return rc;
		} else {
			if ((rc = pd_buf_append(b, "\"values\":[", 10)))
				return rc;
			for (size_t j = 0; j < n; j++)
				if ((j && (rc = pd_buf_append(b, ",", 1))) ||
				    (rc = point(b, t[j], v[j])))
					return rc;
			if ((rc = pd_buf_append(b, "]", 1)))
				return rc;
		}
		if ((rc = pd_buf_append(b, "}", 1)))
			return rc;
	}
	return pd_buf_append(b, "]}", 2);
}
