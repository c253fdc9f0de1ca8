/* totals.c: the totals section of a timestamp chunk: for each profile of the
 * chunk, the sum of each sample type's values and the profile's duration, so
 * that values over time are read beside the timestamps without opening a
 * profile. The section follows the timestamp chunk's bit stream (from the next
 * byte boundary); a chunk without it ends with the bit stream.
 *
 *   ┌──────────────┬──────────────────────────────────────────────┐
 *   │ version <1B> │ one record per timestamp, in order            │
 *   └──────────────┴──────────────────────────────────────────────┘
 *
 *   record:  tag <uvar>        0 not a profile (nothing follows)
 *                              1 a new set of sample types follows, then the
 *                                profile's fields (the set gets the next index)
 *                              2 (version 2) a repeat: n <uvar> >= 1, then
 *                                nothing: this record and the n - 1 after it
 *                                are profiles equal to the last profile record
 *                                before them (its set, duration and totals)
 *                              s >= 3 (versions 2 and 3; s >= 2 in version 1):
 *                                the profile has set s - 3 (s - 2); version 4:
 *                                set (s - 3) >> 2, and bit 0 of s - 3 says the
 *                                duration is the previous profile's (not
 *                                written), bit 1 that the totals are written
 *                                as second differences
 *            new set:          n <uvar>, then n times: k <uvar>: 0 = a new type
 *                              follows (type and unit, each len <uvar> + bytes);
 *                              version 3: 1 <= k <= 32 = a new type, well-known
 *                              entry k - 1 (below), k >= 33 = type k - 33;
 *                              versions 1 and 2: k >= 1 = type k - 1
 *            duration_nanos    <sv> difference from the previous profile's
 *            per type of set   <sv> difference from the previous total of that
 *                              type in the chunk (0 before its first); version
 *                              4 with bit 1: that difference less the type's
 *                              previous difference
 *
 * Types and sets are numbered in order of definition, from 0. Full
 * specification: docs/format/chunks.md. */
#include <stdlib.h>
#include <string.h>

#include "profd/chunkenc.h"
#include "profd/pprof.h"
#include "v2_int.h" /* v2_sv_len */

/* ---- well-known sample types -------------------------------------------------- */

/* Version 3 names these types by their place in this list, instead of spelling
 * them out in every chunk: the sample types Go's runtime writes, which nearly every
 * profile a chunk holds has. The list is part of the format: entries are only ever
 * added at the end, up to WELL_KNOWN_MAX. */
static const char *const well_known[][2] = {
    {"samples", "count"},      {"cpu", "nanoseconds"},     {"alloc_objects", "count"},
    {"alloc_space", "bytes"},  {"inuse_objects", "count"}, {"inuse_space", "bytes"},
    {"contentions", "count"},  {"delay", "nanoseconds"},   {"goroutine", "count"},
    {"threadcreate", "count"},
};
#define NWELL_KNOWN (sizeof(well_known) / sizeof(well_known[0]))
#define WELL_KNOWN_MAX 32 /* codes 1..32 name a well-known type in version 3 */

/* Whether the n bytes at s are the C string w. */
static int bytes_are(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && memcmp(s, w, n) == 0;
}

/* The well-known code of a type and unit given with their lengths (a name with
 * a NUL byte in it is none). */
static long well_known_n(const char *type, size_t tl, const char *unit, size_t ul)
{
	for (size_t i = 0; i < NWELL_KNOWN; i++)
		if (bytes_are(type, tl, well_known[i][0]) && bytes_are(unit, ul, well_known[i][1]))
			return (long)i;
	return -1;
}

long pd_chunkenc_totals_well_known(const char *type, const char *unit)
{
	return well_known_n(type, strlen(type), unit, strlen(unit));
}

/* ---- coding helpers --------------------------------------------------------- */

static int put_uvar(struct pd_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;
	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	return pd_buf_append(b, tmp, n);
}

static int put_svar(struct pd_buf *b, int64_t v)
{
	return put_uvar(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static int put_str(struct pd_buf *b, const char *s, size_t n)
{
	return put_uvar(b, n) || pd_buf_append(b, s, n) ? PD_ENOMEM : 0;
}

/* wrapping difference and sum, as the totals themselves wrap */
static int64_t wsub(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a - (uint64_t)b);
}

static int64_t wadd(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 8;
	while (c < need)
		c *= 2;
	void *n = realloc(*v, c * size);
	if (!n)
		return PD_ENOMEM;
	*v = n;
	*cap = c;
	return 0;
}

/* ---- encoder ------------------------------------------------------------------ */

struct enc_type {
	char *type, *unit; /* NUL-terminated copies; the names may hold NULs */
	size_t type_len, unit_len;
	int64_t prev;
	int64_t pdelta; /* the change of its total in the last record that listed it */
};

struct pd_chunkenc_totals {
	struct pd_buf b;
	uint32_t count;
	struct enc_type *types;
	size_t ntypes, types_cap;
	uint32_t *set_types; /* the sets' type indices back to back */
	size_t nset_types, set_types_cap;
	size_t *set_off, *set_len;
	size_t nsets, sets_cap, sets_len_cap;
	size_t last_set; /* index of the set used last, SIZE_MAX for none */
	int64_t prev_duration;
	int have_profile;  /* a profile record was appended */
	size_t run_pos;    /* where the repeat run the section ends with starts, or SIZE_MAX */
	uint64_t run_n;    /* its length */
	uint32_t *scratch; /* the type indices of the profile being appended */
	size_t scratch_cap;
};

struct pd_chunkenc_totals *pd_chunkenc_totals_create(void)
{
	struct pd_chunkenc_totals *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	pd_buf_init(&c->b, 0);
	c->last_set = SIZE_MAX;
	c->run_pos = SIZE_MAX;
	if (pd_buf_append(&c->b, &(uint8_t){PD_CHUNKENC_TOTALS_VERSION}, 1)) {
		pd_buf_fini(&c->b);
		free(c);
		return NULL;
	}
	return c;
}

void pd_chunkenc_totals_destroy(struct pd_chunkenc_totals *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->ntypes; i++) {
		free(c->types[i].type);
		free(c->types[i].unit);
	}
	free(c->types);
	free(c->set_types);
	free(c->set_off);
	free(c->set_len);
	free(c->scratch);
	pd_buf_fini(&c->b);
	free(c);
}

size_t pd_chunkenc_totals_memory(const struct pd_chunkenc_totals *c)
{
	size_t m = sizeof(*c) + c->b.cap + c->types_cap * sizeof(*c->types) +
	           c->set_types_cap * sizeof(uint32_t) + c->sets_cap * 2 * sizeof(size_t) +
	           c->scratch_cap * sizeof(uint32_t);
	for (size_t i = 0; i < c->ntypes; i++)
		m += c->types[i].type_len + c->types[i].unit_len + 2;
	return m;
}

uint32_t pd_chunkenc_totals_count(const struct pd_chunkenc_totals *c)
{
	return c->count;
}

const uint8_t *pd_chunkenc_totals_bytes(const struct pd_chunkenc_totals *c, size_t *len)
{
	*len = c->b.len;
	return c->b.data;
}

static int same_bytes(const char *a, size_t al, const char *b, size_t bl)
{
	return al == bl && (al == 0 || memcmp(a, b, al) == 0);
}

static long find_type(const struct pd_chunkenc_totals *c, const char *type, size_t tl,
                      const char *unit, size_t ul)
{
	for (size_t i = 0; i < c->ntypes; i++)
		if (same_bytes(c->types[i].type, c->types[i].type_len, type, tl) &&
		    same_bytes(c->types[i].unit, c->types[i].unit_len, unit, ul))
			return (long)i;
	return -1;
}

static char *copy_bytes(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		if (n)
			memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static int set_equals(const struct pd_chunkenc_totals *c, size_t s, const uint32_t *ty, size_t n)
{
	return c->set_len[s] == n &&
	       (n == 0 || !memcmp(c->set_types + c->set_off[s], ty, n * sizeof(*ty)));
}

/* pd_chunkenc_totals_append with the names' lengths (tlen, ulen), which may hold
 * NUL bytes. */
static int append_n(struct pd_chunkenc_totals *c, size_t n, const char *const *types,
                    const size_t *tlen, const char *const *units, const size_t *ulen,
                    const int64_t *sums, int64_t duration, struct pd_err *err)
{
	size_t mark = c->b.len, ntypes0 = c->ntypes, nsets0 = c->nsets, nst0 = c->nset_types;
	int rc = 0;
	if (c->count == PD_CHUNKENC_MAX_SAMPLES)
		return pd_err_set(err, PD_ETOOBIG, "totals section is full (%d profiles)",
		                  PD_CHUNKENC_MAX_SAMPLES);
	if (grow((void **)&c->scratch, &c->scratch_cap, n + 1, sizeof(*c->scratch)))
		goto nomem;
	/* the profile's types, known ones found, new ones marked (index ntypes + j) */
	size_t added = 0;
	for (size_t i = 0; i < n; i++) {
		long k = find_type(c, types[i], tlen[i], units[i], ulen[i]);
		if (k < 0) {
			for (size_t j = 0; j < i && k < 0; j++)
				if (c->scratch[j] >= c->ntypes &&
				    same_bytes(types[j], tlen[j], types[i], tlen[i]) &&
				    same_bytes(units[j], ulen[j], units[i], ulen[i]))
					k = (long)c->scratch[j];
			if (k < 0)
				k = (long)(c->ntypes + added++);
		}
		c->scratch[i] = (uint32_t)k;
	}
	size_t set = SIZE_MAX;
	if (!added) {
		if (c->last_set != SIZE_MAX && set_equals(c, c->last_set, c->scratch, n))
			set = c->last_set;
		for (size_t s = 0; s < c->nsets && set == SIZE_MAX; s++)
			if (set_equals(c, s, c->scratch, n))
				set = s;
	}
	/* the same as the last profile record (an idle program's block, mutex and
	 * threadcreate profiles, scrape after scrape): a repeat, or one more of the
	 * repeat the section ends with */
	int same = c->have_profile && set != SIZE_MAX && set == c->last_set &&
	           duration == c->prev_duration;
	for (size_t i = 0; i < n && same; i++)
		same = sums[i] == c->types[c->set_types[c->set_off[set] + i]].prev;
	if (same) {
		if (pd_buf_reserve(&c->b, 11))
			goto nomem;
		if (c->run_pos != SIZE_MAX) {
			c->b.len = c->run_pos; /* rewritten with the new length: cannot fail now */
			c->run_n++;
		} else {
			c->run_pos = c->b.len;
			c->run_n = 1;
		}
		put_uvar(&c->b, 2);
		put_uvar(&c->b, c->run_n);
		c->count++;
		return 0;
	}
	c->run_pos = SIZE_MAX;
	/* an existing set: its duration left out when unchanged, and its totals as
	 * second differences when that is shorter (a cumulative profile's totals
	 * grow by about as much at every scrape) */
	int second = 0, dsame = 0;
	if (set != SIZE_MAX) {
		size_t off = c->set_off[set], first = 0, sec = 0;
		int dup = 0;
		for (size_t i = 0; i < n; i++) {
			const struct enc_type *t = &c->types[c->set_types[off + i]];
			int64_t d = wsub(sums[i], t->prev);
			first += v2_sv_len(d);
			sec += v2_sv_len(wsub(d, t->pdelta));
			for (size_t j = 0; j < i; j++)
				dup |= c->set_types[off + j] == c->set_types[off + i];
		}
		second = !dup && sec < first;
		dsame = duration == c->prev_duration;
		if (put_uvar(&c->b, 3 + 4 * (uint64_t)set + (uint64_t)dsame + 2 * (uint64_t)second))
			goto nomem;
	} else {
		/* a new set, with its new types */
		if (put_uvar(&c->b, 1) || put_uvar(&c->b, n))
			goto nomem;
		if (grow((void **)&c->types, &c->types_cap, c->ntypes + added, sizeof(*c->types)) ||
		    grow((void **)&c->set_types, &c->set_types_cap, c->nset_types + n,
		         sizeof(*c->set_types)) ||
		    grow((void **)&c->set_off, &c->sets_cap, c->nsets + 1, sizeof(*c->set_off)) ||
		    grow((void **)&c->set_len, &c->sets_len_cap, c->nsets + 1, sizeof(*c->set_len)))
			goto nomem;
		for (size_t i = 0; i < n; i++) {
			uint32_t k = c->scratch[i];
			if (k == c->ntypes) {
				struct enc_type *t = &c->types[c->ntypes];
				t->type = copy_bytes(types[i], tlen[i]);
				t->unit = copy_bytes(units[i], ulen[i]);
				t->type_len = tlen[i];
				t->unit_len = ulen[i];
				t->prev = t->pdelta = 0;
				if (!t->type || !t->unit) {
					free(t->type);
					free(t->unit);
					goto nomem;
				}
				c->ntypes++;
				long w = well_known_n(types[i], tlen[i], units[i], ulen[i]);
				if (w >= 0 ? put_uvar(&c->b, (uint64_t)w + 1)
				           : put_uvar(&c->b, 0) || put_str(&c->b, types[i], tlen[i]) ||
				                 put_str(&c->b, units[i], ulen[i]))
					goto nomem;
			} else if (put_uvar(&c->b, (uint64_t)k + WELL_KNOWN_MAX + 1)) {
				goto nomem;
			}
			c->set_types[c->nset_types + i] = k;
		}
		c->set_off[c->nsets] = c->nset_types;
		c->set_len[c->nsets] = n;
		c->nset_types += n;
		set = c->nsets++;
	}
	/* room for every varint below, so that none of them fails half-way */
	if (pd_buf_reserve(&c->b, 10 * (n + 1)))
		goto nomem;
	if (!dsame)
		put_svar(&c->b, wsub(duration, c->prev_duration));
	/* deltas, applied in order: a type listed twice takes its last sum */
	size_t off = c->set_off[set];
	for (size_t i = 0; i < n; i++) {
		struct enc_type *t = &c->types[c->set_types[off + i]];
		int64_t d = wsub(sums[i], t->prev);
		put_svar(&c->b, second ? wsub(d, t->pdelta) : d);
		t->prev = sums[i];
		t->pdelta = d;
	}
	c->prev_duration = duration;
	c->last_set = set;
	c->have_profile = 1;
	c->count++;
	return rc;
nomem:
	/* back to the state before this profile: the section stays usable */
	c->b.len = mark;
	for (size_t i = ntypes0; i < c->ntypes; i++) {
		free(c->types[i].type);
		free(c->types[i].unit);
	}
	c->ntypes = ntypes0;
	c->nsets = nsets0;
	c->nset_types = nst0;
	return pd_err_set(err, PD_ENOMEM, "out of memory appending a profile's totals");
}

int pd_chunkenc_totals_append(struct pd_chunkenc_totals *c, size_t n, const char *const *types,
                              const char *const *units, const int64_t *sums, int64_t duration,
                              struct pd_err *err)
{
	size_t tl[8] = {0}, ul[8] = {0}, *tlen = tl, *ulen = ul;
	if (n > 8) {
		tlen = malloc(n * sizeof(*tlen));
		ulen = malloc(n * sizeof(*ulen));
		if (!tlen || !ulen) {
			free(tlen);
			free(ulen);
			return pd_err_set(err, PD_ENOMEM, "out of memory appending a profile's totals");
		}
	}
	for (size_t i = 0; i < n; i++) {
		tlen[i] = strlen(types[i]);
		ulen[i] = strlen(units[i]);
	}
	int rc = append_n(c, n, types, tlen, units, ulen, sums, duration, err);
	if (n > 8) {
		free(tlen);
		free(ulen);
	}
	return rc;
}

int pd_chunkenc_totals_append_opaque(struct pd_chunkenc_totals *c, struct pd_err *err)
{
	if (c->count == PD_CHUNKENC_MAX_SAMPLES)
		return pd_err_set(err, PD_ETOOBIG, "totals section is full (%d profiles)",
		                  PD_CHUNKENC_MAX_SAMPLES);
	if (put_uvar(&c->b, 0))
		return pd_err_set(err, PD_ENOMEM, "out of memory appending a profile's totals");
	c->run_pos = SIZE_MAX;
	c->count++;
	return 0;
}

int pd_chunkenc_totals_append_profile(struct pd_chunkenc_totals *c,
                                      const struct pd_pprof_profile *p, struct pd_err *err)
{
	if (!p)
		return pd_chunkenc_totals_append_opaque(c, err);
	size_t n = pd_pprof_sample_type_count(p);
	const char *st[8] = {0}, *su[8] = {0};
	size_t stl[8] = {0}, sul[8] = {0};
	int64_t ss[8] = {0};
	const char **types = st, **units = su;
	size_t *tlen = stl, *ulen = sul;
	int64_t *sums = ss;
	if (n > 8) {
		types = malloc(n * sizeof(*types));
		units = malloc(n * sizeof(*units));
		tlen = malloc(n * sizeof(*tlen));
		ulen = malloc(n * sizeof(*ulen));
		sums = malloc(n * sizeof(*sums));
	}
	int rc;
	if (!types || !units || !tlen || !ulen || !sums) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory appending a profile's totals");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		types[i] = pd_pprof_sample_type_n(p, i, &tlen[i]);
		units[i] = pd_pprof_sample_unit_n(p, i, &ulen[i]);
		sums[i] = pd_pprof_sum(p, (int)i);
	}
	rc = append_n(c, n, types, tlen, units, ulen, sums, pd_pprof_duration_nanos(p), err);
out:
	if (n > 8) {
		free(types);
		free(units);
		free(tlen);
		free(ulen);
		free(sums);
	}
	return rc;
}

/* ---- reader ------------------------------------------------------------------- */

static uint64_t get_uvar(struct pd_chunkenc_totals_iter *it)
{
	uint64_t r = 0;
	if (it->err)
		return 0;
	if (it->pos < it->len && it->p[it->pos] < 0x80)
		return it->p[it->pos++]; /* one byte: most of a section's varints */
	for (unsigned i = 0; i < 10 && it->pos < it->len; i++) {
		uint8_t b = it->p[it->pos++];
		if (i == 9 && b > 1)
			break;
		r |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return r;
	}
	it->err = PD_ECORRUPT;
	return 0;
}

static int64_t get_svar(struct pd_chunkenc_totals_iter *it)
{
	uint64_t u = get_uvar(it);
	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static const char *get_str(struct pd_chunkenc_totals_iter *it, size_t *n)
{
	uint64_t l = get_uvar(it);
	if (it->err || l > it->len - it->pos) {
		it->err = PD_ECORRUPT;
		*n = 0;
		return "";
	}
	const char *s = (const char *)it->p + it->pos;
	it->pos += (size_t)l;
	*n = (size_t)l;
	return s;
}

int pd_chunkenc_totals_iter_init(struct pd_chunkenc_totals_iter *it, const uint8_t *p, size_t len,
                                 uint32_t count)
{
	memset(it, 0, sizeof(*it));
	return pd_chunkenc_totals_iter_reuse(it, p, len, count);
}

int pd_chunkenc_totals_iter_reuse(struct pd_chunkenc_totals_iter *it, const uint8_t *p, size_t len,
                                  uint32_t count)
{
	it->p = p;
	it->len = len;
	it->pos = 0;
	it->left = count;
	it->err = 0;
	it->profile = 0;
	it->duration = it->prev_duration = 0;
	it->n = 0;
	it->type_idx = NULL;
	it->ntypes = it->nset_types = it->nsets = 0;
	it->rep = 0;
	it->last_set = SIZE_MAX;
	if (len == 0 || p[0] < 1 || p[0] > PD_CHUNKENC_TOTALS_VERSION)
		return PD_ENOTFOUND;
	it->version = p[0];
	it->pos = 1;
	return 0;
}

void pd_chunkenc_totals_iter_fini(struct pd_chunkenc_totals_iter *it)
{
	free(it->types);
	free(it->set_types);
	free(it->set_off);
	free(it->set_len);
	free(it->vals);
	free(it->prev);
	free(it->pdelta);
	memset(it, 0, sizeof(*it));
}

/* Reads a set definition. */
static void read_set(struct pd_chunkenc_totals_iter *it)
{
	uint64_t n = get_uvar(it);
	/* every entry takes at least one byte */
	if (it->err || n > it->len - it->pos) {
		it->err = PD_ECORRUPT;
		return;
	}
	/* + 1: a set of no types still points into the array */
	if (grow((void **)&it->set_types, &it->set_types_cap, it->nset_types + (size_t)n + 1,
	         sizeof(*it->set_types)) ||
	    grow((void **)&it->set_off, &it->sets_cap, it->nsets + 1, sizeof(*it->set_off)) ||
	    grow((void **)&it->set_len, &it->sets_len_cap, it->nsets + 1, sizeof(*it->set_len)) ||
	    grow((void **)&it->vals, &it->vals_cap, (size_t)n + 1, sizeof(*it->vals))) {
		it->err = PD_ENOMEM;
		return;
	}
	/* codes of types already defined start after the well-known ones in version 3 */
	uint64_t base = it->version >= 3 ? WELL_KNOWN_MAX + 1 : 1;
	for (uint64_t i = 0; i < n && !it->err; i++) {
		uint64_t k = get_uvar(it);
		if (k < base) { /* a new type: spelled out (0) or well-known */
			if (k > NWELL_KNOWN) {
				it->err = PD_ECORRUPT;
				return;
			}
			if (grow((void **)&it->types, &it->types_cap, it->ntypes + 1,
			         sizeof(*it->types)) ||
			    grow((void **)&it->prev, &it->prev_cap, it->ntypes + 1,
			         sizeof(*it->prev)) ||
			    grow((void **)&it->pdelta, &it->pdelta_cap, it->ntypes + 1,
			         sizeof(*it->pdelta))) {
				it->err = PD_ENOMEM;
				return;
			}
			struct pd_chunkenc_totals_type *t = &it->types[it->ntypes];
			if (k == 0) {
				t->type = get_str(it, &t->type_len);
				t->unit = get_str(it, &t->unit_len);
			} else {
				t->type = well_known[k - 1][0];
				t->type_len = strlen(t->type);
				t->unit = well_known[k - 1][1];
				t->unit_len = strlen(t->unit);
			}
			it->prev[it->ntypes] = it->pdelta[it->ntypes] = 0;
			k = ++it->ntypes;
		} else if ((k = k - base + 1) > it->ntypes) {
			it->err = PD_ECORRUPT;
		}
		it->set_types[it->nset_types + i] = (uint32_t)(k - 1);
	}
	it->set_off[it->nsets] = it->nset_types;
	it->set_len[it->nsets] = (size_t)n;
	it->nset_types += (size_t)n;
	it->nsets++;
}

/* The last profile record again: its set, duration and totals (prev holds them). */
static int repeat_last(struct pd_chunkenc_totals_iter *it)
{
	size_t set = it->last_set;
	it->profile = 1;
	it->duration = it->prev_duration;
	it->n = it->set_len[set];
	it->type_idx = it->set_types + it->set_off[set];
	for (size_t i = 0; i < it->n; i++)
		it->vals[i] = it->prev[it->type_idx[i]];
	return 1;
}

int pd_chunkenc_totals_iter_next(struct pd_chunkenc_totals_iter *it)
{
	if (it->err)
		return 0;
	if (it->left == 0) {
		if (it->pos != it->len)
			it->err = PD_ECORRUPT; /* bytes after the last record */
		return 0;
	}
	if (it->rep) { /* one more of a repeat: the last profile record again */
		it->rep--;
		it->left--;
		return repeat_last(it);
	}
	uint64_t tag = get_uvar(it);
	if (it->err)
		return 0;
	it->left--;
	if (tag == 0) {
		it->profile = 0;
		it->duration = 0;
		it->n = 0;
		return 1;
	}
	size_t set = 0, first = it->version == 1 ? 2 : 3;
	if (tag == 2 && it->version >= 2) {
		uint64_t n = get_uvar(it);
		/* the records it stands for are among those still to come */
		if (it->err || n == 0 || n - 1 > it->left || it->last_set == SIZE_MAX) {
			it->err = PD_ECORRUPT;
			return 0;
		}
		it->rep = n - 1;
		return repeat_last(it);
	}
	/* version 4: the duration left out, the totals as second differences */
	int dsame = 0, second = 0;
	if (tag == 1) {
		read_set(it);
		set = it->nsets - 1;
	} else if (it->version >= 4) {
		uint64_t s = (tag - first) >> 2;
		dsame = (int)((tag - first) & 1);
		second = (int)((tag - first) >> 1 & 1);
		if (s < it->nsets)
			set = (size_t)s;
		else
			it->err = PD_ECORRUPT;
	} else if (tag - first < it->nsets) {
		set = (size_t)(tag - first);
	} else {
		it->err = PD_ECORRUPT;
	}
	if (it->err)
		return 0;
	it->last_set = set;
	it->profile = 1;
	if (!dsame)
		it->prev_duration = wadd(it->prev_duration, get_svar(it));
	it->duration = it->prev_duration;
	it->n = it->set_len[set];
	it->type_idx = it->set_types + it->set_off[set];
	for (size_t i = 0; i < it->n; i++) {
		uint32_t k = it->type_idx[i];
		int64_t d = get_svar(it);
		if (second)
			d = wadd(d, it->pdelta[k]);
		it->prev[k] = wadd(it->prev[k], d);
		it->pdelta[k] = d;
		it->vals[i] = it->prev[k];
	}
	return it->err ? 0 : 1;
}
