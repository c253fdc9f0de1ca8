/* tags.c: labels on samples, as `go tool pprof` calls them tags: the -tagfocus and
 * -tagignore filters (parsed and matched exactly as pprof's driver does, numeric
 * ranges with units included), the -tags report, and splitting a profile by the
 * values of one key. Regexes are Go's, run by pkg/labels (RE2). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof_int.h"
#include "profd/labels.h"

/* ---- pprof's measurement package: units and scaling ------------------------ */

struct unit {
	const char *name; /* canonical */
	const char *aliases[4];
	double factor;
};

struct unit_type {
	struct unit def;
	const struct unit *units;
	size_t n;
};

static const struct unit mem_units[] = {
    {"B", {"b", "byte"}, 1},
    {"kB", {"kb", "kbyte", "kilobyte"}, 1024.0},
    {"MB", {"mb", "mbyte", "megabyte"}, 1048576.0},
    {"GB", {"gb", "gbyte", "gigabyte"}, 1073741824.0},
    {"TB", {"tb", "tbyte", "terabyte"}, 1099511627776.0},
    {"PB", {"pb", "pbyte", "petabyte"}, 1125899906842624.0},
};
static const struct unit time_units[] = {
    {"ns", {"ns", "nanosecond"}, 1},    {"us", {"\xce\xbcs", "us", "microsecond"}, 1e3},
    {"ms", {"ms", "millisecond"}, 1e6}, {"s", {"s", "sec", "second"}, 1e9},
    {"hrs", {"hour", "hr"}, 3600e9},
};
static const struct unit gcu_units[] = {
    {"n*GCU", {"nanogcu"}, 1e-9}, {"u*GCU", {"microgcu"}, 1e-6}, {"m*GCU", {"milligcu"}, 1e-3},
    {"GCU", {"gcu"}, 1},          {"k*GCU", {"kilogcu"}, 1e3},   {"M*GCU", {"megagcu"}, 1e6},
    {"G*GCU", {"gigagcu"}, 1e9},  {"T*GCU", {"teragcu"}, 1e12},  {"P*GCU", {"petagcu"}, 1e15},
};
static const struct unit_type unit_types[] = {
    {{"B", {"b", "byte"}, 1}, mem_units, sizeof(mem_units) / sizeof(mem_units[0])},
    {{"s", {NULL}, 1e9}, time_units, sizeof(time_units) / sizeof(time_units[0])},
    {{"GCU", {NULL}, 1}, gcu_units, sizeof(gcu_units) / sizeof(gcu_units[0])},
};

/* sniffUnit: lower-cased, a trailing 's' dropped when longer than 2 bytes. */
static const struct unit *sniff(const struct unit_type *ut, const char *unit)
{
	char u[64];
	size_t n = strlen(unit);
	if (n >= sizeof(u))
		return NULL; /* no alias is that long */
	for (size_t i = 0; i < n; i++)
		u[i] = (char)tolower((unsigned char)unit[i]);
	u[n] = '\0';
	if (n > 2 && u[n - 1] == 's')
		u[n - 1] = '\0';
	for (size_t i = 0; i < ut->n; i++)
		for (size_t k = 0; k < 4 && ut->units[i].aliases[k]; k++)
			if (strcmp(u, ut->units[i].aliases[k]) == 0)
				return &ut->units[i];
	return NULL;
}

static int is_auto(const char *u)
{
	return strcmp(u, "minimum") == 0 || strcmp(u, "auto") == 0;
}

/* measurement.Scale: value in from, expressed in to; *out_unit is borrowed (from
 * the tables, or `to` itself). */
static double scale(int64_t value, const char *from, const char *to, const char **out_unit)
{
	if (value < 0 && value != INT64_MIN)
		return -scale(-value, from, to, out_unit);
	for (size_t t = 0; t < sizeof(unit_types) / sizeof(unit_types[0]); t++) {
		const struct unit_type *ut = &unit_types[t];
		const struct unit *fu = sniff(ut, from);
		if (!fu)
			continue;
		double v = (double)value * fu->factor;
		if (is_auto(to)) {
			double f = 0;
			const char *name = NULL;
			for (size_t i = 0; i < ut->n; i++)
				if (ut->units[i].factor >= f && v / ut->units[i].factor >= 1.0) {
					f = ut->units[i].factor;
					name = ut->units[i].name;
				}
			if (f != 0) {
				*out_unit = name;
				return v / f;
			}
			*out_unit = ut->def.name;
			return v / ut->def.factor;
		}
		const struct unit *tu = sniff(ut, to);
		if (!tu) {
			*out_unit = ut->def.name;
			return v / ut->def.factor;
		}
		*out_unit = tu->name;
		return v / tu->factor;
	}
	if (strcmp(to, "count") == 0 || strcmp(to, "sample") == 0 || strcmp(to, "unit") == 0 ||
	    is_auto(to))
		*out_unit = "";
	else
		*out_unit = to;
	return (double)value;
}

/* measurement.ScaledLabel: "%.2f" without ".00", then the unit; "0" for zero. */
static void scaled_label(int64_t value, const char *from, const char *to, char *out, size_t size)
{
	const char *u;
	double v = scale(value, from, to, &u);
	char num[64];
	snprintf(num, sizeof(num), "%.2f", v);
	size_t n = strlen(num);
	if (n > 3 && strcmp(num + n - 3, ".00") == 0)
		num[n - 3] = '\0';
	if (strcmp(num, "0") == 0 || strcmp(num, "-0") == 0)
		snprintf(out, size, "0");
	else
		snprintf(out, size, "%s%s", num, u);
}

/* ---- filters ------------------------------------------------------------------ */

enum { RANGE_EQ, RANGE_GE, RANGE_LE, RANGE_BETWEEN };

struct pd_pprof_tagfilter {
	char *key; /* NULL: any key */
	int is_range;
	int kind;
	double lo, hi;
	char unit[32];
	struct pd_labels_regex **rx;
	size_t nrx;
};

void pd_pprof_tagfilter_destroy(struct pd_pprof_tagfilter *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nrx; i++)
		pd_labels_regex_destroy(f->rx[i]);
	free(f->rx);
	free(f->key);
	free(f);
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}
static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* One match of ([+-]?[[:digit:]]+)([[:alpha:]]+)? at or after *pos in s[0..len):
 * the match [ms, me), the number [ms, ne) and the unit [ne, me). */
struct rmatch {
	size_t ms, ne, me;
};

static int find_range(const char *s, size_t len, size_t from, struct rmatch *m)
{
	for (size_t i = from; i < len; i++) {
		size_t d = i;
		if ((s[i] == '+' || s[i] == '-') && i + 1 < len && is_digit(s[i + 1]))
			d = i + 1;
		else if (!is_digit(s[i]))
			continue;
		size_t j = d;
		while (j < len && is_digit(s[j]))
			j++;
		m->ms = i;
		m->ne = j;
		while (j < len && is_alpha(s[j]))
			j++;
		m->me = j;
		return 1;
	}
	return 0;
}

/* strconv.ParseInt of s[a..b) (an optional sign and digits). */
static int parse_i64(const char *s, size_t a, size_t b, int64_t *out)
{
	char buf[64];
	if (b - a >= sizeof(buf))
		return -1;
	memcpy(buf, s + a, b - a);
	buf[b - a] = '\0';
	errno = 0;
	char *end;
	long long v = strtoll(buf, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* parseTagFilterRange: 1 and f set when value is a range, 0 when it is not (so a
 * regex), PD_EINVAL when a number overflows. */
static int parse_range(struct pd_pprof_tagfilter *f, const char *s, size_t len, struct pd_err *err)
{
	struct rmatch m[2];
	int n = 0;
	size_t at = 0;
	while (n < 2 && find_range(s, len, at, &m[n])) {
		at = m[n].me;
		n++;
	}
	if (n == 0)
		return 0;
	int64_t v;
	char u0[64];
	if (parse_i64(s, m[0].ms, m[0].ne, &v))
		return pd_err_set(err, PD_EINVAL, "the number \"%.*s\" is out of the int64 range",
		                  (int)(m[0].ne - m[0].ms), s + m[0].ms);
	snprintf(u0, sizeof(u0), "%.*s", (int)(m[0].me - m[0].ne), s + m[0].ne);
	if (m[0].me - m[0].ne >= sizeof(u0))
		return 0; /* no unit is that long: as a regex */
	const char *unit;
	double sv = scale(v, u0, u0, &unit);
	size_t mlen = m[0].me - m[0].ms;
	if (snprintf(f->unit, sizeof(f->unit), "%s", unit) >= (int)sizeof(f->unit))
		return 0;
	if (n == 1) {
		if (m[0].ms == 0 && m[0].me == len)
			f->kind = RANGE_EQ;
		else if (m[0].ms == 0 && len == mlen + 1 && s[len - 1] == ':')
			f->kind = RANGE_GE;
		else if (m[0].ms == 1 && s[0] == ':' && m[0].me == len)
			f->kind = RANGE_LE;
		else
			return 0;
		f->lo = f->hi = sv;
		f->is_range = 1;
		return 1;
	}
	/* filter == m0 + ":" + m1 */
	if (m[0].ms != 0 || m[0].me >= len || s[m[0].me] != ':' || m[1].ms != m[0].me + 1 ||
	    m[1].me != len)
		return 0;
	int64_t v2;
	if (parse_i64(s, m[1].ms, m[1].ne, &v2))
		return pd_err_set(err, PD_EINVAL, "the number \"%.*s\" is out of the int64 range",
		                  (int)(m[1].ne - m[1].ms), s + m[1].ms);
	char u1[64];
	if (m[1].me - m[1].ne >= sizeof(u1))
		return 0;
	snprintf(u1, sizeof(u1), "%.*s", (int)(m[1].me - m[1].ne), s + m[1].ne);
	const char *unit2;
	double sv2 = scale(v2, u1, f->unit, &unit2);
	if (strcmp(unit2, f->unit) != 0)
		return 0;
	f->kind = RANGE_BETWEEN;
	f->lo = sv;
	f->hi = sv2;
	f->is_range = 1;
	return 1;
}

/* Go's unanchored MatchString over pkg/labels' anchored regexes: ^(?s:.*)(?:re)(?s:.*)$
 * with re's own flags as Go's defaults leave them (s off). */
int pd_pprof_compile_unanchored(struct pd_labels_regex **out, const char *re, size_t len,
                              struct pd_err *err)
{
	struct pd_labels_regex *check = NULL;
	/* first as written, so that errors are Go's, at offsets in the user's regex */
	int rc = pd_labels_regex_compile(&check, re, len, 0, 0, err);
	pd_labels_regex_destroy(check);
	if (rc)
		return rc;
	static const char pre[] = ".*(?-s:", post[] = ").*";
	size_t n = sizeof(pre) - 1 + len + sizeof(post) - 1;
	char *w = malloc(n + 1);
	if (!w)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	memcpy(w, pre, sizeof(pre) - 1);
	memcpy(w + sizeof(pre) - 1, re, len);
	memcpy(w + sizeof(pre) - 1 + len, post, sizeof(post));
	rc = pd_labels_regex_compile(out, w, n, 0, 0, err);
	free(w);
	return rc;
}

int pd_pprof_tagfilter_parse(struct pd_pprof_tagfilter **out, const char *spec, size_t len,
                             struct pd_err *err)
{
	*out = NULL;
	if (len > PD_PPROF_DEFAULT_MAX_TAGFILTER_LEN)
		return pd_err_set(err, PD_ETOOBIG, "the filter is %zu bytes, over the limit of %d",
		                  len, PD_PPROF_DEFAULT_MAX_TAGFILTER_LEN);
	if (memchr(spec, '\0', len))
		return pd_err_set(err, PD_EINVAL, "the filter contains a NUL byte");
	struct pd_pprof_tagfilter *f = calloc(1, sizeof(*f));
	if (!f)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	int rc;
	const char *v = spec;
	size_t vlen = len;
	const char *eq = memchr(spec, '=', len);
	if (eq) {
		size_t klen = (size_t)(eq - spec);
		if (klen) {
			f->key = strndup(spec, klen);
			if (!f->key) {
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
				goto fail;
			}
		}
		v = eq + 1;
		vlen = len - klen - 1;
	}
	rc = parse_range(f, v, vlen, err);
	if (rc < 0)
		goto fail;
	if (rc == 1) {
		*out = f;
		return 0;
	}
	size_t parts = 1;
	for (size_t i = 0; i < vlen; i++)
		parts += v[i] == ',';
	if (parts > PD_PPROF_DEFAULT_MAX_TAGFILTER_REGEXES) {
		rc = pd_err_set(err, PD_ETOOBIG,
		                "the filter has %zu comma-separated regexes, over "
		                "the limit of %d",
		                parts, PD_PPROF_DEFAULT_MAX_TAGFILTER_REGEXES);
		goto fail;
	}
	f->rx = calloc(parts, sizeof(*f->rx));
	if (!f->rx) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}
	size_t a = 0;
	for (size_t i = 0; i <= vlen; i++) {
		if (i < vlen && v[i] != ',')
			continue;
		rc = pd_pprof_compile_unanchored(&f->rx[f->nrx], v + a, i - a, err);
		if (rc)
			goto fail;
		f->nrx++;
		a = i + 1;
	}
	*out = f;
	return 0;
fail:
	pd_pprof_tagfilter_destroy(f);
	return rc;
}

/* ---- matching ------------------------------------------------------------------ */

/* pprof's NumLabelUnits: per numeric key, the first non-empty unit its labels
 * carry; keys with none are "bytes" for alignment and request, else the key. */
struct numunits {
	const struct pd_pprof_profile *p;
	int64_t *key; /* string indices of p (keys may hold NULs: compared by bytes) */
	const char **unit;
	size_t n;
};

static const char *numunit_of(const struct numunits *nu, int64_t key)
{
	for (size_t i = 0; i < nu->n; i++)
		if (pd_pprof_str_eq(nu->p, nu->key[i], nu->p, key))
			return nu->unit[i];
	return pd_pprof_str(nu->p, key);
}

static int is_num(const pb_label *l)
{
	return !l->str && (l->num || l->num_unit);
}

static int numunits_build(const struct pd_pprof_profile *p, struct numunits *nu, struct pd_err *err)
{
	const pb_profile *pb = p->pb;
	memset(nu, 0, sizeof(*nu));
	nu->p = p;
	size_t cap = 0;
	for (size_t i = 0; i < pb->n_sample; i++) {
		const pb_sample *s = pb->sample[i];
		for (size_t k = 0; k < s->n_label; k++) {
			const pb_label *l = s->label[k];
			if (!is_num(l))
				continue;
			int64_t key = l->key;
			const char *unit = l->num_unit ? pd_pprof_str(p, l->num_unit) : "";
			size_t j = 0;
			while (j < nu->n && !pd_pprof_str_eq(p, nu->key[j], p, key))
				j++;
			if (j == nu->n) {
				if (nu->n == cap) {
					cap = cap ? cap * 2 : 8;
					int64_t *nk = realloc(nu->key, cap * sizeof(*nk));
					if (nk)
						nu->key = nk;
					const char **nv =
					    nk ? realloc(nu->unit, cap * sizeof(*nv)) : NULL;
					if (!nv)
						return pd_err_set(err, PD_ENOMEM, "out of memory");
					nu->unit = nv;
				}
				nu->key[j] = key;
				nu->unit[j] = "";
				nu->n++;
			}
			if (!*nu->unit[j] && *unit)
				nu->unit[j] = unit;
		}
	}
	for (size_t j = 0; j < nu->n; j++)
		if (!*nu->unit[j])
			nu->unit[j] = pd_pprof_str_is(p, nu->key[j], "alignment") ||
			                      pd_pprof_str_is(p, nu->key[j], "request")
			                  ? "bytes"
			                  : pd_pprof_str(p, nu->key[j]);
	return 0;
}

static void numunits_fini(struct numunits *nu)
{
	free(nu->key);
	free(nu->unit);
}

static int range_match(const struct pd_pprof_tagfilter *f, int64_t v, const char *unit)
{
	const char *su;
	double sv = scale(v, unit, f->unit, &su);
	if (strcmp(su, f->unit) != 0)
		return 0;
	switch (f->kind) {
	case RANGE_EQ:
		return sv == f->lo;
	case RANGE_GE:
		return sv >= f->lo;
	case RANGE_LE:
		return sv <= f->lo;
	default:
		return sv >= f->lo && sv <= f->hi;
	}
}

/* Matches s against rx; a failure to match for lack of memory is no match. */
static int rx_match(const struct pd_labels_regex *rx, const char *s, size_t len)
{
	return pd_labels_regex_match(rx, s, len, NULL, 0) == 1;
}

static int filter_match(const struct pd_pprof_profile *p, const struct numunits *nu,
                        const struct pd_pprof_tagfilter *f, const pb_sample *s, char **scratch,
                        size_t *scap)
{
	if (f->is_range) {
		for (size_t k = 0; k < s->n_label; k++) {
			const pb_label *l = s->label[k];
			if (!is_num(l))
				continue;
			if (f->key && !pd_pprof_str_is(p, l->key, f->key))
				continue;
			if (range_match(f, l->num, numunit_of(nu, l->key)))
				return 1;
		}
		return 0;
	}
	if (f->key) {
		for (size_t k = 0; k < s->n_label; k++) {
			const pb_label *l = s->label[k];
			if (!l->str || !pd_pprof_str_is(p, l->key, f->key))
				continue;
			const char *v = pd_pprof_str(p, l->str);
			size_t vl = p->str_len[l->str];
			for (size_t r = 0; r < f->nrx; r++)
				if (rx_match(f->rx[r], v, vl))
					return 1;
		}
		return 0;
	}
	/* every regex matches some "key:value" */
	for (size_t r = 0; r < f->nrx; r++) {
		int found = 0;
		for (size_t k = 0; k < s->n_label && !found; k++) {
			const pb_label *l = s->label[k];
			if (!l->str)
				continue;
			size_t kl = p->str_len[l->key], vl = p->str_len[l->str];
			if (kl + vl + 2 > *scap) {
				char *ns = realloc(*scratch, kl + vl + 2);
				if (!ns)
					return -1;
				*scratch = ns;
				*scap = kl + vl + 2;
			}
			memcpy(*scratch, pd_pprof_str(p, l->key), kl);
			(*scratch)[kl] = ':';
			memcpy(*scratch + kl + 1, pd_pprof_str(p, l->str), vl);
			found = rx_match(f->rx[r], *scratch, kl + vl + 1);
		}
		if (!found)
			return 0;
	}
	return 1;
}

/* A profile of the samples of p whose keep[i] is set. */
static int build_subset(const struct pd_pprof_profile *p, struct pd_pprof_parts *parts,
                        const unsigned char *keep, struct pd_pprof_profile **out,
                        struct pd_err *err)
{
	struct pd_pprof_psample *all = parts->sample;
	size_t nall = parts->nsample, k = 0;
	struct pd_pprof_psample *sub = malloc((nall ? nall : 1) * sizeof(*sub));
	if (!sub)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < nall; i++)
		if (keep[i])
			sub[k++] = all[i];
	parts->sample = sub;
	parts->nsample = k;
	int rc = pd_pprof_parts_build(parts, out, err);
	parts->sample = all;
	parts->nsample = nall;
	free(sub);
	if (!rc) {
		(*out)->names = p->names; /* its reports name and key nodes as p's do */
		(*out)->granularity = p->granularity;
	}
	return rc;
}

int pd_pprof_filter_tags(const struct pd_pprof_profile *p,
                         const struct pd_pprof_tagfilter *const *focus, size_t nfocus,
                         const struct pd_pprof_tagfilter *const *ignore, size_t nignore,
                         struct pd_pprof_profile **out, size_t *kept, struct pd_err *err)
{
	const pb_profile *pb = p->pb;
	struct numunits nu = {0};
	struct pd_pprof_parts parts = {0};
	unsigned char *keep = NULL;
	char *scratch = NULL;
	size_t scap = 0, nk = 0;
	int rc;
	*out = NULL;
	if ((rc = numunits_build(p, &nu, err)))
		goto out;
	keep = malloc(pb->n_sample ? pb->n_sample : 1);
	if (!keep) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < pb->n_sample; i++) {
		int k = 1;
		for (size_t f = 0; f < nfocus && k == 1; f++)
			k = filter_match(p, &nu, focus[f], pb->sample[i], &scratch, &scap);
		for (size_t f = 0; f < nignore && k == 1; f++) {
			int m = filter_match(p, &nu, ignore[f], pb->sample[i], &scratch, &scap);
			k = m < 0 ? m : !m;
		}
		if (k < 0) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto out;
		}
		keep[i] = (unsigned char)k;
		nk += (size_t)k;
	}
	if ((rc = pd_pprof_parts_get(p, &parts, err)))
		goto out;
	rc = build_subset(p, &parts, keep, out, err);
	if (!rc && kept)
		*kept = nk;
out:
	pd_pprof_parts_fini(&parts);
	numunits_fini(&nu);
	free(keep);
	free(scratch);
	return rc;
}

/* ---- the -tags report ----------------------------------------------------------- */

struct tag_entry {
	const char *key, *name; /* with their lengths: both may hold NULs */
	size_t klen, nlen;
	int64_t v;
};

static int entry_key_cmp(const struct tag_entry *x, const struct tag_entry *y)
{
	return pd_pprof_bytes_cmp(x->key, x->klen, y->key, y->klen);
}

static int entry_name_cmp(const struct tag_entry *x, const struct tag_entry *y)
{
	return pd_pprof_bytes_cmp(x->name, x->nlen, y->name, y->nlen);
}

static int entry_cmp(const void *a, const void *b)
{
	int c = entry_key_cmp(a, b);
	return c ? c : entry_name_cmp(a, b);
}

static int value_cmp(const void *a, const void *b)
{
	const struct pd_pprof_tag_value *x = a, *y = b;
	uint64_t ax = pd_uabs64(x->total), ay = pd_uabs64(y->total);
	if (x->total != y->total && ax != ay)
		return ax > ay ? -1 : 1;
	return pd_pprof_bytes_cmp(x->name, x->name_len, y->name, y->name_len);
}

/* Every (key, value name) of every sample into an arena-backed array. */
static int collect_entries(const struct pd_pprof_profile *p, const struct numunits *nu, int idx,
                           const char *unit, const char *only_key, struct pd_arena *a,
                           struct tag_entry **out, size_t *n, struct pd_err *err)
{
	const pb_profile *pb = p->pb;
	size_t total = 0, k = 0;
	for (size_t i = 0; i < pb->n_sample; i++)
		total += pb->sample[i]->n_label;
	struct tag_entry *e = pd_arena_calloc(a, total ? total : 1, sizeof(*e));
	if (!e)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < pb->n_sample; i++) {
		const pb_sample *s = pb->sample[i];
		for (size_t j = 0; j < s->n_label; j++) {
			const pb_label *l = s->label[j];
			if (only_key && !pd_pprof_str_is(p, l->key, only_key))
				continue;
			const char *name;
			size_t nlen;
			if (l->str) {
				name = pd_pprof_str(p, l->str);
				nlen = pd_pprof_str_len(p, l->str);
			} else if (is_num(l)) {
				char buf[96];
				scaled_label(l->num, numunit_of(nu, l->key), unit, buf, sizeof(buf));
				nlen = strlen(buf); /* our own formatting: no NUL inside */
				name = pd_arena_strndup(a, buf, nlen);
				if (!name)
					return pd_err_set(err, PD_ENOMEM, "out of memory");
			} else {
				continue; /* neither string nor number: pprof drops it */
			}
			e[k].key = pd_pprof_str(p, l->key);
			e[k].klen = pd_pprof_str_len(p, l->key);
			e[k].name = name;
			e[k].nlen = nlen;
			e[k].v = idx >= 0 ? s->value[idx] : (int64_t)i;
			k++;
		}
	}
	*out = e;
	*n = k;
	return 0;
}

void pd_pprof_tags_destroy(struct pd_pprof_tags *t)
{
	if (!t)
		return;
	pd_arena_destroy(t->priv);
	free(t);
}

int pd_pprof_tags(const struct pd_pprof_profile *p, int sample_index, const char *unit,
                  struct pd_pprof_tags **out, struct pd_err *err)
{
	struct numunits nu = {0};
	struct pd_pprof_tags *t = NULL;
	struct tag_entry *e = NULL;
	size_t n = 0;
	int rc;
	*out = NULL;
	if (sample_index < 0 || (size_t)sample_index >= p->pb->n_sample_type)
		return pd_err_set(err, PD_EINVAL, "sample index %d is out of range", sample_index);
	if (!unit || !*unit)
		unit = "minimum";
	t = calloc(1, sizeof(*t));
	if (!t || !(t->priv = pd_arena_create(0))) {
		free(t);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	t->sample_index = sample_index;
	struct pd_arena *a = t->priv;
	if ((rc = numunits_build(p, &nu, err)) ||
	    (rc = collect_entries(p, &nu, sample_index, unit, NULL, a, &e, &n, err)))
		goto fail;
	qsort(e, n, sizeof(*e), entry_cmp);
	size_t nkeys = 0;
	for (size_t i = 0; i < n; i++)
		nkeys += i == 0 || entry_key_cmp(&e[i], &e[i - 1]) != 0;
	t->keys = pd_arena_calloc(a, nkeys ? nkeys : 1, sizeof(*t->keys));
	if (!t->keys)
		goto nomem;
	for (size_t i = 0; i < n;) {
		size_t j = i, nv = 0;
		while (j < n && entry_key_cmp(&e[j], &e[i]) == 0) {
			nv += j == i || entry_name_cmp(&e[j], &e[j - 1]) != 0;
			j++;
		}
		struct pd_pprof_tag_key *k = &t->keys[t->nkeys++];
		k->key = pd_arena_strndup(a, e[i].key, e[i].klen); /* copies NULs too */
		k->key_len = e[i].klen;
		k->values = pd_arena_calloc(a, nv, sizeof(*k->values));
		if (!k->key || !k->values)
			goto nomem;
		for (size_t m = i; m < j; m++) {
			if (m == i || entry_name_cmp(&e[m], &e[m - 1]) != 0) {
				struct pd_pprof_tag_value *v = &k->values[k->nvalues++];
				v->name = pd_arena_strndup(a, e[m].name, e[m].nlen);
				v->name_len = e[m].nlen;
				if (!v->name)
					goto nomem;
			}
			k->values[k->nvalues - 1].total =
			    pd_add64(k->values[k->nvalues - 1].total, e[m].v);
			k->total = pd_add64(k->total, e[m].v);
		}
		qsort(k->values, k->nvalues, sizeof(*k->values), value_cmp);
		i = j;
	}
	numunits_fini(&nu);
	*out = t;
	return 0;
nomem:
	rc = pd_err_set(err, PD_ENOMEM, "out of memory");
fail:
	numunits_fini(&nu);
	pd_pprof_tags_destroy(t);
	return rc;
}

/* ---- splitting by a key ------------------------------------------------------------ */

void pd_pprof_tag_groups_free(struct pd_pprof_tag_group *g, size_t n)
{
	if (!g)
		return;
	for (size_t i = 0; i < n; i++) {
		free((char *)g[i].value);
		pd_pprof_destroy(g[i].profile);
	}
	free(g);
}

struct vsum {
	const char *name;
	size_t len;
	uint64_t weight;
};

static int vsum_name_cmp(const void *a, const void *b)
{
	const struct vsum *x = a, *y = b;
	return pd_pprof_bytes_cmp(x->name, x->len, y->name, y->len);
}

static int vsum_weight_cmp(const void *a, const void *b)
{
	const struct vsum *x = a, *y = b;
	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return vsum_name_cmp(a, b);
}

/* Orders an entry's value against a group's. */
static int entry_vsum_cmp(const struct tag_entry *e, const struct vsum *v)
{
	return pd_pprof_bytes_cmp(e->name, e->nlen, v->name, v->len);
}

int pd_pprof_split_by_tag(const struct pd_pprof_profile *p, const char *key, int sample_index,
                          size_t max_values, struct pd_pprof_tag_group **groups, size_t *n,
                          size_t *dropped, struct pd_err *err)
{
	const pb_profile *pb = p->pb;
	struct numunits nu = {0};
	struct pd_arena *a = NULL;
	struct pd_pprof_parts parts = {0};
	struct tag_entry *e = NULL;
	struct vsum *vs = NULL;
	struct pd_pprof_tag_group *g = NULL;
	unsigned char *keep = NULL;
	size_t ne = 0, nv = 0, ng = 0;
	int rc;
	*groups = NULL;
	*n = 0;
	*dropped = 0;
	if (sample_index < 0 || (size_t)sample_index >= pb->n_sample_type)
		return pd_err_set(err, PD_EINVAL, "sample index %d is out of range", sample_index);
	if (!(a = pd_arena_create(0)))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	/* entries carry the sample's index in v (idx -1) */
	if ((rc = numunits_build(p, &nu, err)) ||
	    (rc = collect_entries(p, &nu, -1, "minimum", key, a, &e, &ne, err)))
		goto out;
	qsort(e, ne, sizeof(*e), entry_cmp);
	vs = calloc(ne + 1, sizeof(*vs));
	keep = calloc(pb->n_sample + 1, 1);
	if (!vs || !keep)
		goto nomem;
	for (size_t i = 0; i < ne; i++) {
		if (i == 0 || entry_name_cmp(&e[i], &e[i - 1]) != 0) {
			vs[nv].name = e[i].name;
			vs[nv++].len = e[i].nlen;
		}
		vs[nv - 1].weight += pd_uabs64(pb->sample[e[i].v]->value[sample_index]);
	}
	if (max_values && nv > max_values) {
		qsort(vs, nv, sizeof(*vs), vsum_weight_cmp);
		*dropped = nv - max_values;
		nv = max_values;
		qsort(vs, nv, sizeof(*vs), vsum_name_cmp);
	}
	g = calloc(nv + 1, sizeof(*g));
	if (!g)
		goto nomem;
	if ((rc = pd_pprof_parts_get(p, &parts, err)))
		goto out;
	size_t ei = 0;
	for (size_t i = 0; i < nv; i++) {
		memset(keep, 0, pb->n_sample);
		size_t cnt = 0;
		while (ei < ne && entry_vsum_cmp(&e[ei], &vs[i]) < 0)
			ei++;
		for (; ei < ne && entry_vsum_cmp(&e[ei], &vs[i]) == 0; ei++) {
			cnt += !keep[e[ei].v];
			keep[e[ei].v] = 1;
		}
		char *val = malloc(vs[i].len + 1);
		if (!val)
			goto nomem;
		memcpy(val, vs[i].name, vs[i].len);
		val[vs[i].len] = '\0';
		g[ng].value = val;
		g[ng].value_len = vs[i].len;
		g[ng].samples = cnt;
		if ((rc = build_subset(p, &parts, keep, &g[ng].profile, err))) {
			ng++;
			goto out;
		}
		ng++;
	}
	/* the samples without the key */
	memset(keep, 1, pb->n_sample);
	size_t cnt = pb->n_sample;
	for (size_t i = 0; i < ne; i++) {
		cnt -= keep[e[i].v];
		keep[e[i].v] = 0;
	}
	if (cnt) {
		g[ng].samples = cnt;
		if ((rc = build_subset(p, &parts, keep, &g[ng].profile, err))) {
			ng++;
			goto out;
		}
		ng++;
	}
	*groups = g;
	*n = ng;
	g = NULL;
	rc = 0;
	goto out;
nomem:
	rc = pd_err_set(err, PD_ENOMEM, "out of memory");
out:
	pd_pprof_tag_groups_free(g, ng);
	pd_pprof_parts_fini(&parts);
	numunits_fini(&nu);
	pd_arena_destroy(a);
	free(vs);
	free(keep);
	return rc;
}
