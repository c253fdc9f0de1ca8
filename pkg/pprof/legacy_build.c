/* legacy_build.c: the builder behind the legacy profile readers (legacy_int.h):
 * interned strings, locations by address, samples with bounded stacks, the
 * /proc/self/maps section read into mappings, and the placing of locations in
 * mappings with `go tool pprof`'s heuristics (adjacent entries of one file merged,
 * the main binary first, a main binary mapped at 0x400000 unshifted, a catch-all
 * mapping for addresses outside every entry). The result goes through
 * pd_pprof_parts_build, so it is validated as any decoded profile is. */
#include <stdlib.h>
#include <string.h>

#include "legacy_int.h"

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 16;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

void pd_pprof_lb_init(struct pd_pprof_lb *b, const struct pd_pprof_decode_opts *opts)
{
	memset(b, 0, sizeof(*b));
	pd_u64map_init(&b->str_idx);
	pd_u64map_init(&b->loc_idx);
	b->max_samples =
	    opts && opts->max_samples ? opts->max_samples : PD_PPROF_LEGACY_MAX_SAMPLES;
	b->max_depth =
	    opts && opts->legacy_max_depth ? opts->legacy_max_depth : PD_PPROF_LEGACY_MAX_DEPTH;
	b->max_maps =
	    opts && opts->legacy_max_maps ? opts->legacy_max_maps : PD_PPROF_LEGACY_MAX_MAPS;
	b->max_line = pd_pprof_legacy_max_line(opts);
	b->limit_hit = opts ? opts->limit_hit : NULL;
	pd_pprof_lb_str(b, "", 0);
}

void pd_pprof_lb_fini(struct pd_pprof_lb *b)
{
	for (size_t i = 0; i < b->nstr; i++)
		free(b->str[i]);
	free(b->str);
	free(b->str_len);
	pd_u64map_fini(&b->str_idx);
	pd_u64map_fini(&b->loc_idx);
	free(b->loc);
	free(b->s);
	free(b->stk);
	free(b->map);
	free(b->fn_name);
	free(b->fn_file);
	memset(b, 0, sizeof(*b));
}

static uint64_t fnv(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return h ? h : 1;
}

int64_t pd_pprof_lb_str(struct pd_pprof_lb *b, const char *s, size_t len)
{
	uint64_t h = fnv(s, len);
	uint32_t v;
	if (pd_u64map_get(&b->str_idx, h, &v)) {
		if (b->str_len[v - 1] == len && memcmp(b->str[v - 1], s, len) == 0)
			return v - 1;
		for (size_t i = 0; i < b->nstr; i++)
			if (b->str_len[i] == len && memcmp(b->str[i], s, len) == 0)
				return (int64_t)i;
	}
	size_t cap = b->capstr;
	if (grow((void **)&b->str, &cap, b->nstr + 1, sizeof(*b->str)))
		return -1;
	cap = b->capstr;
	if (grow((void **)&b->str_len, &cap, b->nstr + 1, sizeof(*b->str_len)))
		return -1;
	b->capstr = cap;
	char *c = malloc(len + 1);
	if (!c)
		return -1;
	memcpy(c, s, len);
	c[len] = 0;
	b->str[b->nstr] = c;
	b->str_len[b->nstr] = len;
	if (!pd_u64map_get(&b->str_idx, h, &v) &&
	    pd_u64map_put(&b->str_idx, h, (uint32_t)b->nstr + 1)) {
		free(c);
		return -1;
	}
	return (int64_t)b->nstr++;
}

static int nomem(struct pd_err *err)
{
	return pd_err_set(err, PD_ENOMEM, "out of memory");
}

int pd_pprof_lb_type(struct pd_pprof_lb *b, const char *type, const char *unit, struct pd_err *err)
{
	if (b->ntypes >= 4)
		return pd_err_set(err, PD_EINVAL, "too many sample types");
	int64_t t = pd_pprof_lb_str(b, type, strlen(type)),
	        u = pd_pprof_lb_str(b, unit, strlen(unit));
	if (t < 0 || u < 0)
		return nomem(err);
	b->st_type[b->ntypes] = t;
	b->st_unit[b->ntypes++] = u;
	return 0;
}

int pd_pprof_lb_period_type(struct pd_pprof_lb *b, const char *type, const char *unit,
                            struct pd_err *err)
{
	int64_t t = pd_pprof_lb_str(b, type, strlen(type)),
	        u = pd_pprof_lb_str(b, unit, strlen(unit));
	if (t < 0 || u < 0)
		return nomem(err);
	b->pt_type = t;
	b->pt_unit = u;
	b->has_pt = 1;
	return 0;
}

uint32_t pd_pprof_lb_loc_find(const struct pd_pprof_lb *b, uint64_t addr)
{
	uint32_t v;
	if (addr == UINT64_MAX)
		return (uint32_t)b->loc_max_addr;
	return pd_u64map_get(&b->loc_idx, addr + 1, &v) ? v : 0;
}

int pd_pprof_lb_loc_at(struct pd_pprof_lb *b, uint64_t addr, uint32_t *idx, struct pd_err *err)
{
	uint32_t v = pd_pprof_lb_loc_find(b, addr);
	if (v) {
		*idx = v - 1;
		return 0;
	}
	if (b->nloc >= UINT32_MAX - 1)
		return pd_err_set(err, PD_ETOOBIG, "too many locations");
	if (grow((void **)&b->loc, &b->caploc, b->nloc + 1, sizeof(*b->loc)))
		return nomem(err);
	memset(&b->loc[b->nloc], 0, sizeof(b->loc[0]));
	b->loc[b->nloc].addr = addr;
	if (addr == UINT64_MAX)
		b->loc_max_addr = b->nloc + 1;
	else if (pd_u64map_put(&b->loc_idx, addr + 1, (uint32_t)b->nloc + 1))
		return nomem(err);
	*idx = (uint32_t)b->nloc++;
	return 0;
}

struct pd_pprof_lb_sample *pd_pprof_lb_sample(struct pd_pprof_lb *b, struct pd_err *err)
{
	if (b->ns >= b->max_samples) {
		if (b->limit_hit)
			*b->limit_hit = PD_PPROF_LIMIT_SAMPLES;
		pd_err_set(err, PD_ETOOBIG, "the profile has more than the limit of %zu samples",
		           b->max_samples);
		return NULL;
	}
	if (grow((void **)&b->s, &b->caps, b->ns + 1, sizeof(*b->s))) {
		nomem(err);
		return NULL;
	}
	struct pd_pprof_lb_sample *s = &b->s[b->ns++];
	memset(s, 0, sizeof(*s));
	s->off = b->nstk;
	return s;
}

int pd_pprof_lb_frame(struct pd_pprof_lb *b, uint64_t addr, struct pd_err *err)
{
	struct pd_pprof_lb_sample *s = &b->s[b->ns - 1];
	if (s->n >= b->max_depth)
		return pd_err_set(err, PD_ETOOBIG,
		                  "a stack of more than %zu frames (--legacy-max-stack-depth)",
		                  b->max_depth);
	uint32_t idx = 0;
	int rc = pd_pprof_lb_loc_at(b, addr, &idx, err);
	if (rc)
		return rc;
	if (grow((void **)&b->stk, &b->capstk, b->nstk + 1, sizeof(*b->stk)))
		return nomem(err);
	b->stk[b->nstk++] = idx;
	s->n++;
	return 0;
}

int pd_pprof_lb_function(struct pd_pprof_lb *b, const char *name, size_t nlen, const char *file,
                         size_t flen, uint32_t *idx, struct pd_err *err)
{
	int64_t n = pd_pprof_lb_str(b, name, nlen);
	if (n < 0)
		return nomem(err);
	for (size_t i = 0; i < b->nfn; i++)
		if (b->fn_name[i] == n) {
			*idx = (uint32_t)i;
			return 0;
		}
	int64_t f = pd_pprof_lb_str(b, file, flen);
	if (f < 0)
		return nomem(err);
	size_t cap = b->capfn;
	if (grow((void **)&b->fn_name, &cap, b->nfn + 1, sizeof(int64_t)))
		return nomem(err);
	cap = b->capfn;
	if (grow((void **)&b->fn_file, &cap, b->nfn + 1, sizeof(int64_t)))
		return nomem(err);
	b->capfn = cap;
	b->fn_name[b->nfn] = n;
	b->fn_file[b->nfn] = f;
	*idx = (uint32_t)b->nfn++;
	return 0;
}

/* ---- text helpers ---------------------------------------------------------- */

size_t pd_pprof_legacy_max_line(const struct pd_pprof_decode_opts *opts)
{
	return opts && opts->legacy_max_line ? opts->legacy_max_line : PD_PPROF_LEGACY_MAX_LINE;
}

void pd_pprof_lines_init(struct pd_pprof_lines *l, const char *buf, size_t len, size_t max)
{
	memset(l, 0, sizeof(*l));
	l->max = max;
	l->buf = buf;
	l->len = len;
	l->cur = "";
}

int pd_pprof_lines_next(struct pd_pprof_lines *l, struct pd_err *err)
{
	if (l->pos >= l->len) {
		l->cur = "";
		l->cur_len = 0;
		l->have = 0;
		return 0;
	}
	const char *s = l->buf + l->pos;
	const char *nl = memchr(s, '\n', l->len - l->pos);
	size_t n = nl ? (size_t)(nl - s) : l->len - l->pos;
	l->lineno++;
	if (n > l->max)
		return pd_err_set(
		    err, PD_ETOOBIG,
		    "line %zu: longer than the limit of %zu bytes (--legacy-max-line)", l->lineno,
		    l->max);
	l->pos += n + (nl ? 1 : 0);
	if (n && s[n - 1] == '\r')
		n--;
	l->cur = s;
	l->cur_len = n;
	l->have = 1;
	return 1;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

void pd_pprof_trim(const char **s, size_t *n)
{
	while (*n && is_space(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n && is_space((*s)[*n - 1]))
		(*n)--;
}

int pd_pprof_space_or_comment(const char *s, size_t n)
{
	pd_pprof_trim(&s, &n);
	return n == 0 || s[0] == '#';
}

int pd_pprof_has_prefix(const char *s, size_t n, const char *p)
{
	size_t k = strlen(p);
	return n >= k && memcmp(s, p, k) == 0;
}

int pd_pprof_contains(const char *s, size_t n, const char *p)
{
	size_t k = strlen(p);
	for (size_t i = 0; i + k <= n; i++)
		if (memcmp(s + i, p, k) == 0)
			return 1;
	return 0;
}

int pd_pprof_is_maps_sentinel(const char *s, size_t n)
{
	return pd_pprof_contains(s, n, "--- Memory map: ---") ||
	       pd_pprof_contains(s, n, "MAPPED_LIBRARIES:");
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int pd_pprof_hex_frames(struct pd_pprof_lb *b, const char *s, size_t n, int adjust, int adjust_leaf,
                        size_t lineno, struct pd_err *err)
{
	size_t k = 0;
	for (size_t i = 0; i + 2 < n + 1 && i + 1 < n;) {
		if (!(s[i] == '0' && s[i + 1] == 'x') || i + 2 >= n || hexval(s[i + 2]) < 0 ||
		    (s[i + 2] >= 'A' && s[i + 2] <= 'F')) {
			i++;
			continue;
		}
		size_t j = i + 2;
		uint64_t v = 0;
		int over = 0;
		while (j < n && ((s[j] >= '0' && s[j] <= '9') || (s[j] >= 'a' && s[j] <= 'f'))) {
			if (v >> 60)
				over = 1;
			v = v << 4 | (uint64_t)hexval(s[j]);
			j++;
		}
		if (over)
			return pd_err_set(err, PD_EINVAL, "line %zu: address %.*s is past 64 bits",
			                  lineno, (int)(j - i > 40 ? 40 : j - i), s + i);
		if (adjust && (b->s[b->ns - 1].n > 0 || adjust_leaf))
			v--;
		int rc = pd_pprof_lb_frame(b, v, err);
		if (rc) {
			pd_err_prefix(err, "line %zu", lineno);
			return rc;
		}
		k++;
		i = j;
	}
	return 0;
}

int pd_pprof_parse_int(const char *s, size_t n, int base0, int64_t *v)
{
	int neg = 0;
	size_t i = 0;
	if (n && (s[0] == '-' || s[0] == '+')) {
		neg = s[0] == '-';
		i = 1;
	}
	unsigned base = 10;
	if (base0 && n - i >= 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
		base = 16;
		i += 2;
	} else if (base0 && n - i >= 2 && s[i] == '0' && (s[i + 1] == 'b' || s[i + 1] == 'B')) {
		base = 2;
		i += 2;
	} else if (base0 && n - i >= 2 && s[i] == '0' && (s[i + 1] == 'o' || s[i + 1] == 'O')) {
		base = 8;
		i += 2;
	} else if (base0 && n - i >= 2 && s[i] == '0') {
		base = 8;
		i += 1;
	}
	if (i >= n)
		return -1;
	uint64_t u = 0;
	for (; i < n; i++) {
		if (base0 && s[i] == '_')
			continue;
		int d = hexval(s[i]);
		if (d < 0 || (unsigned)d >= base)
			return -1;
		if (u > (UINT64_MAX - (unsigned)d) / base)
			return -1;
		u = u * base + (unsigned)d;
	}
	if (neg ? u > (uint64_t)INT64_MAX + 1 : u > (uint64_t)INT64_MAX)
		return -1;
	*v = neg ? (int64_t)(0 - u) : (int64_t)u;
	return 0;
}

int64_t pd_pprof_f2i(double d)
{
	if (!(d == d))
		return INT64_MIN;
	if (d >= 9223372036854775807.0 || d < -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)d;
}

/* ---- /proc/self/maps ------------------------------------------------------- */

static size_t skip_ws(const char *s, size_t n, size_t i)
{
	while (i < n && is_space(s[i]))
		i++;
	return i;
}

static size_t hex_run(const char *s, size_t n, size_t i)
{
	while (i < n && hexval(s[i]) >= 0)
		i++;
	return i;
}

static int parse_hex(const char *s, size_t n, uint64_t *v)
{
	uint64_t u = 0;
	if (!n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (u >> 60)
			return -1;
		u = u << 4 | (uint64_t)hexval(s[i]);
	}
	*v = u;
	return 0;
}

struct map_entry {
	const char *start, *end, *perm, *off, *file, *bid;
	size_t start_n, end_n, perm_n, off_n, file_n, bid_n;
};

/* "\s*(?:0x)?HEX[\s-]?\s*(?:0x)?HEX:?" -> position after, or 0 on no match. */
static size_t parse_range(const char *s, size_t n, struct map_entry *e)
{
	size_t i = skip_ws(s, n, 0);
	if (i + 1 < n && s[i] == '0' && s[i + 1] == 'x' && hexval(i + 2 < n ? s[i + 2] : 'g') >= 0)
		i += 2;
	size_t a = i, ae = hex_run(s, n, i);
	if (ae == a)
		return 0;
	size_t j = ae;
	if (j < n && (is_space(s[j]) || s[j] == '-'))
		j++;
	j = skip_ws(s, n, j);
	if (j + 1 < n && s[j] == '0' && s[j + 1] == 'x' && j + 2 < n && hexval(s[j + 2]) >= 0)
		j += 2;
	size_t b = j, be = hex_run(s, n, j);
	if (be == b) {
		/* one hex run: the expression splits it, the last digit being the end */
		if (ae - a < 2)
			return 0;
		b = ae - 1;
		be = ae;
		ae = b;
	}
	e->start = s + a;
	e->start_n = ae - a;
	e->end = s + b;
	e->end_n = be - b;
	if (be < n && s[be] == ':')
		be++;
	return be;
}

static size_t ws1(const char *s, size_t n, size_t i)
{
	return i < n && is_space(s[i]) ? skip_ws(s, n, i) : 0;
}

static size_t perm_run(const char *s, size_t n, size_t i)
{
	while (i < n && strchr("-rwxp", s[i]) && s[i])
		i++;
	return i;
}

static size_t nonspace_run(const char *s, size_t n, size_t i)
{
	while (i < n && !is_space(s[i]))
		i++;
	return i;
}

/* The /proc/self/maps form: range [perm] [offset] dev inode [file]. */
static int parse_proc(const char *s, size_t n, struct map_entry *e)
{
	size_t p0 = parse_range(s, n, e);
	if (!p0)
		return 0;
	for (int variant = 0; variant < 4; variant++) {
		int want_perm = !(variant & 2), want_off = !(variant & 1);
		size_t i = p0, k;
		e->perm_n = e->off_n = e->file_n = 0;
		if (want_perm) {
			if (!(k = ws1(s, n, i)) || perm_run(s, n, k) == k)
				continue;
			e->perm = s + k;
			e->perm_n = perm_run(s, n, k) - k;
			i = k + e->perm_n;
		}
		if (want_off) {
			if (!(k = ws1(s, n, i)) || hex_run(s, n, k) == k)
				continue;
			e->off = s + k;
			e->off_n = hex_run(s, n, k) - k;
			i = k + e->off_n;
		}
		/* dev: \s+HEX:HEX, inode: \s+DIGITS */
		if (!(k = ws1(s, n, i)) || hex_run(s, n, k) == k)
			continue;
		k = hex_run(s, n, k);
		if (k >= n || s[k] != ':' || hex_run(s, n, k + 1) == k + 1)
			continue;
		k = hex_run(s, n, k + 1);
		size_t d;
		if (!(d = ws1(s, n, k)) || !(s[d] >= '0' && s[d] <= '9'))
			continue;
		while (d < n && s[d] >= '0' && s[d] <= '9')
			d++;
		if ((k = ws1(s, n, d)) && k < n) {
			e->file = s + k;
			e->file_n = nonspace_run(s, n, k) - k;
		}
		return 1;
	}
	return 0;
}

/* pprof's brief form: range [perm] [file] [(@offset)] [buildid]. */
static int parse_brief(const char *s, size_t n, struct map_entry *e)
{
	size_t i = parse_range(s, n, e), k;
	if (!i)
		return 0;
	e->perm_n = e->off_n = e->file_n = e->bid_n = 0;
	if ((k = ws1(s, n, i)) && perm_run(s, n, k) > k) {
		e->perm = s + k;
		e->perm_n = perm_run(s, n, k) - k;
		i = k + e->perm_n;
	}
	if ((k = ws1(s, n, i)) && k < n) {
		e->file = s + k;
		e->file_n = nonspace_run(s, n, k) - k;
		i = k + e->file_n;
	}
	if ((k = ws1(s, n, i)) && k + 2 < n && s[k] == '(' && s[k + 1] == '@') {
		size_t h = hex_run(s, n, k + 2);
		if (h > k + 2 && h < n && s[h] == ')') {
			e->off = s + k + 2;
			e->off_n = h - k - 2;
			i = h + 1;
		}
	}
	if ((k = ws1(s, n, i)) && hex_run(s, n, k) > k) {
		e->bid = s + k;
		e->bid_n = hex_run(s, n, k) - k;
	}
	return 1;
}

/* glog's "I0102 15:04:05.000 file.cc:123] " prefix. */
static size_t log_prefix(const char *s, size_t n)
{
	size_t k = 0;
	while (k < n && s[k] != '[' && s[k] != ']')
		k++;
	if (k >= n || s[k] != ']' || k + 1 >= n || !is_space(s[k + 1]))
		return 0;
	size_t d = k;
	while (d > 0 && s[d - 1] >= '0' && s[d - 1] <= '9')
		d--;
	if (d == k || d < 2 || s[d - 1] != ':')
		return 0;
	return k + 2;
}

struct attr {
	char *key; /* "$name" */
	size_t key_n;
	char *val;
	size_t val_n;
};

#define MAX_ATTRS 64

int pd_pprof_lb_maps(struct pd_pprof_lb *b, const char *text, size_t len, struct pd_err *err)
{
	struct pd_pprof_lines l;
	struct attr attrs[MAX_ATTRS];
	size_t nattrs = 0;
	char *rep = NULL;
	int rc = 0;
	pd_pprof_lines_init(&l, text, len, b->max_line);
	for (;;) {
		rc = pd_pprof_lines_next(&l, err);
		if (rc <= 0)
			break;
		rc = 0;
		const char *s = l.cur;
		size_t n = l.cur_len, k = log_prefix(s, n);
		s += k;
		n -= k;
		if (nattrs) {
			/* replace $attr by its value, leftmost first */
			free(rep);
			size_t cap = n * 2 + 64, m = 0;
			rep = malloc(cap);
			if (!rep) {
				rc = nomem(err);
				break;
			}
			for (size_t i = 0; i < n;) {
				size_t a;
				for (a = 0; a < nattrs; a++)
					if (attrs[a].key_n <= n - i &&
					    memcmp(s + i, attrs[a].key, attrs[a].key_n) == 0)
						break;
				const char *add = a < nattrs ? attrs[a].val : s + i;
				size_t add_n = a < nattrs ? attrs[a].val_n : 1;
				if (m + add_n > b->max_line)
					break;
				if (m + add_n > cap) {
					char *r2 = realloc(rep, (cap = (m + add_n) * 2));
					if (!r2) {
						rc = nomem(err);
						break;
					}
					rep = r2;
				}
				memcpy(rep + m, add, add_n);
				m += add_n;
				i += a < nattrs ? attrs[a].key_n : 1;
			}
			if (rc)
				break;
			s = rep;
			n = m;
		}
		struct map_entry e;
		memset(&e, 0, sizeof(e));
		int ok = parse_proc(s, n, &e) || parse_brief(s, n, &e);
		uint64_t start = 0, limit = 0, off = 0;
		if (ok &&
		    (parse_hex(e.start, e.start_n, &start) || parse_hex(e.end, e.end_n, &limit) ||
		     (e.off_n && parse_hex(e.off, e.off_n, &off))))
			ok = 0;
		if (!ok) {
			const char *eq = memchr(s, '=', n);
			if (eq && nattrs < MAX_ATTRS) {
				const char *ks = s, *vs = eq + 1;
				size_t kn = (size_t)(eq - s), vn = n - kn - 1;
				pd_pprof_trim(&ks, &kn);
				pd_pprof_trim(&vs, &vn);
				struct attr *at = &attrs[nattrs];
				at->key = malloc(kn + 2);
				at->val = malloc(vn + 1);
				if (!at->key || !at->val) {
					free(at->key);
					free(at->val);
					rc = nomem(err);
					break;
				}
				at->key[0] = '$';
				memcpy(at->key + 1, ks, kn);
				at->key_n = kn + 1;
				memcpy(at->val, vs, vn);
				at->val_n = vn;
				nattrs++;
			}
			continue;
		}
		if (e.perm_n && !memchr(e.perm, 'x', e.perm_n))
			continue;
		if (b->nmap >= b->max_maps)
			break;
		if (grow((void **)&b->map, &b->capmap, b->nmap + 1, sizeof(*b->map))) {
			rc = nomem(err);
			break;
		}
		struct pd_pprof_lb_map *m = &b->map[b->nmap];
		m->start = start;
		m->limit = limit;
		m->offset = off;
		m->file = pd_pprof_lb_str(b, e.file_n ? e.file : "", e.file_n);
		m->build_id = pd_pprof_lb_str(b, e.bid_n ? e.bid : "", e.bid_n);
		if (m->file < 0 || m->build_id < 0) {
			rc = nomem(err);
			break;
		}
		b->nmap++;
	}
	for (size_t a = 0; a < nattrs; a++) {
		free(attrs[a].key);
		free(attrs[a].val);
	}
	free(rep);
	return rc < 0 ? rc : 0;
}

/* ---- placing locations ----------------------------------------------------- */

static int is_lib(const char *f, size_t n)
{
	/* ([.]so$|[.]so[._][0-9]+) */
	for (size_t i = 0; i + 3 <= n; i++) {
		if (memcmp(f + i, ".so", 3))
			continue;
		if (i + 3 == n)
			return 1;
		if (i + 4 < n && (f[i + 3] == '.' || f[i + 3] == '_') && f[i + 4] >= '0' &&
		    f[i + 4] <= '9')
			return 1;
	}
	return 0;
}

static int adjacent(const struct pd_pprof_lb *b, const struct pd_pprof_lb_map *m1,
                    const struct pd_pprof_lb_map *m2)
{
	if (b->str_len[m1->file] && b->str_len[m2->file] && m1->file != m2->file)
		return 0;
	if (b->str_len[m1->build_id] && b->str_len[m2->build_id] && m1->build_id != m2->build_id)
		return 0;
	if (m1->limit != m2->start)
		return 0;
	if (m1->offset && m2->offset && m1->offset + (m1->limit - m1->start) != m2->offset)
		return 0;
	return 1;
}

void pd_pprof_lb_place(struct pd_pprof_lb *b)
{
	/* merge adjacent entries */
	if (b->nmap > 1) {
		size_t k = 0;
		for (size_t i = 1; i < b->nmap; i++) {
			struct pd_pprof_lb_map *lm = &b->map[k], *m = &b->map[i];
			if (adjacent(b, lm, m)) {
				lm->limit = m->limit;
				if (b->str_len[m->file])
					lm->file = m->file;
				if (b->str_len[m->build_id])
					lm->build_id = m->build_id;
				continue;
			}
			b->map[++k] = *m;
		}
		b->nmap = k + 1;
	}
	/* the main binary first: the first named entry that is no library nor [vdso] */
	for (size_t i = 0; i < b->nmap; i++) {
		const char *f = b->str[b->map[i].file];
		size_t n = b->str_len[b->map[i].file];
		/* strings.ReplaceAll(file, "(deleted)", "") then TrimSpace */
		char tmp[512];
		size_t m = 0;
		for (size_t j = 0; j < n && m < sizeof(tmp);) {
			if (n - j >= 9 && memcmp(f + j, "(deleted)", 9) == 0) {
				j += 9;
				continue;
			}
			tmp[m++] = f[j++];
		}
		const char *t = tmp;
		pd_pprof_trim(&t, &m);
		if (!m || is_lib(t, m) || t[0] == '[')
			continue;
		struct pd_pprof_lb_map x = b->map[0];
		b->map[0] = b->map[i];
		b->map[i] = x;
		break;
	}
	if (b->nmap && pd_pprof_has_prefix(b->str[b->map[0].file], b->str_len[b->map[0].file],
	                                   "/anon_hugepage")) {
		if (b->nmap > 1 && b->map[0].limit == b->map[1].start) {
			memmove(b->map, b->map + 1, (b->nmap - 1) * sizeof(*b->map));
			b->nmap--;
		}
	}
	if (b->nmap && b->map[0].start - b->map[0].offset == 0x400000) {
		b->map[0].start = 0x400000;
		b->map[0].offset = 0;
	}
	size_t fake = 0;
	for (size_t li = 0; li < b->nloc; li++) {
		struct pd_pprof_lb_loc *l = &b->loc[li];
		uint64_t a = l->addr;
		if (!l->used || l->mapping || a == 0)
			continue;
		size_t i;
		for (i = 0; i < b->nmap; i++)
			if (b->map[i].start <= a && a < b->map[i].limit)
				break;
		if (i < b->nmap) {
			l->mapping = (uint32_t)i + 1;
			continue;
		}
		for (i = 0; i < b->nmap; i++) {
			struct pd_pprof_lb_map *m = &b->map[i];
			if (m->offset && m->start - m->offset <= a && a < m->start) {
				m->start -= m->offset;
				m->offset = 0;
				break;
			}
		}
		if (i < b->nmap) {
			l->mapping = (uint32_t)i + 1;
			continue;
		}
		if (!fake) {
			if (grow((void **)&b->map, &b->capmap, b->nmap + 1, sizeof(*b->map)))
				continue; /* left without a mapping: still valid */
			memset(&b->map[b->nmap], 0, sizeof(b->map[0]));
			b->map[b->nmap].limit = UINT64_MAX;
			fake = ++b->nmap;
		}
		l->mapping = (uint32_t)fake;
	}
}

int pd_pprof_lb_finish(struct pd_pprof_lb *b, struct pd_pprof_profile **out, struct pd_err *err)
{
	struct pd_pprof_parts parts;
	memset(&parts, 0, sizeof(parts));
	int rc = 0;
	struct pd_pprof_psample *ps = calloc(b->ns ? b->ns : 1, sizeof(*ps));
	uint64_t *ids = malloc((b->nstk ? b->nstk : 1) * sizeof(*ids));
	int64_t *vals = malloc((b->ns ? b->ns : 1) * 4 * sizeof(*vals));
	struct pd_pprof_plabel *labels = calloc(b->ns ? b->ns : 1, sizeof(*labels));
	struct pd_pprof_plocation *pl = calloc(b->nloc ? b->nloc : 1, sizeof(*pl));
	struct pd_pprof_pline *plines = calloc(b->nloc ? b->nloc : 1, sizeof(*plines));
	struct pd_pprof_pmapping *pm = calloc(b->nmap + 1, sizeof(*pm));
	struct pd_pprof_pfunction *pf = calloc(b->nfn ? b->nfn : 1, sizeof(*pf));
	int64_t bytes_key = pd_pprof_lb_str(b, "bytes", 5);
	if (!ps || !ids || !vals || !labels || !pl || !plines || !pm || !pf || bytes_key < 0) {
		rc = nomem(err);
		goto out;
	}
	for (size_t i = 0; i < b->ns; i++)
		for (size_t k = 0; k < b->s[i].n; k++)
			b->loc[b->stk[b->s[i].off + k]].used = 1;
	pd_pprof_lb_place(b);
	for (size_t i = 0; i < b->ns; i++) {
		struct pd_pprof_lb_sample *s = &b->s[i];
		for (size_t k = 0; k < s->n; k++)
			ids[s->off + k] = b->stk[s->off + k] + 1;
		ps[i].location_id = ids + s->off;
		ps[i].nlocation = s->n;
		memcpy(vals + i * 4, s->v, sizeof(s->v));
		ps[i].value = vals + i * 4;
		ps[i].nvalue = b->ntypes;
		if (s->has_bytes) {
			labels[i].key = bytes_key;
			labels[i].num = s->bytes;
			ps[i].label = &labels[i];
			ps[i].nlabel = 1;
		}
	}
	size_t nl = 0;
	for (size_t i = 0; i < b->nloc; i++) {
		if (!b->loc[i].used)
			continue;
		pl[nl].id = i + 1;
		pl[nl].mapping_id = b->loc[i].mapping;
		pl[nl].address = b->loc[i].addr;
		if (b->loc[i].func) {
			plines[i].function_id = b->loc[i].func;
			plines[i].line = b->loc[i].line;
			pl[nl].line = &plines[i];
			pl[nl].nline = 1;
		}
		nl++;
	}
	for (size_t i = 0; i < b->nmap; i++) {
		pm[i].id = i + 1;
		pm[i].memory_start = b->map[i].start;
		pm[i].memory_limit = b->map[i].limit;
		pm[i].file_offset = b->map[i].offset;
		pm[i].filename = b->map[i].file;
		pm[i].build_id = b->map[i].build_id;
	}
	for (size_t i = 0; i < b->nfn; i++) {
		pf[i].id = i + 1;
		pf[i].name = pf[i].system_name = b->fn_name[i];
		pf[i].filename = b->fn_file[i];
	}
	struct pd_pprof_pvt st[4];
	for (size_t i = 0; i < b->ntypes; i++) {
		st[i].type = b->st_type[i];
		st[i].unit = b->st_unit[i];
	}
	parts.strings = (const char *const *)b->str;
	parts.string_len = b->str_len;
	parts.nstrings = b->nstr;
	parts.sample_type = st;
	parts.nsample_type = b->ntypes;
	parts.sample = ps;
	parts.nsample = b->ns;
	parts.mapping = pm;
	parts.nmapping = b->nmap;
	parts.location = pl;
	parts.nlocation = nl;
	parts.function = pf;
	parts.nfunction = b->nfn;
	parts.has_period_type = b->has_pt;
	parts.period_type.type = b->pt_type;
	parts.period_type.unit = b->pt_unit;
	parts.period = b->period;
	parts.duration_nanos = b->duration;
	parts.drop_frames = b->drop_frames;
	parts.keep_frames = b->keep_frames;
	rc = pd_pprof_parts_build(&parts, out, err);
out:
	free(ps);
	free(ids);
	free(vals);
	free(labels);
	free(pl);
	free(plines);
	free(pm);
	free(pf);
	return rc;
}
