/* v2_tables.c: the deduplicated tables of a columnar value chunk: interning of
 * strings, mappings, functions, locations and stack-tree nodes as an appender
 * adds profiles, and their serialised form (column by column, so that zstd sees
 * like next to like). Layout: docs/format/chunks.md. */
#include <stdlib.h>
#include <string.h>

#include "v2_int.h"

/* ---- varints ---------------------------------------------------------------- */

int v2_put_uv_slow(struct pd_buf *b, uint64_t v)
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

uint64_t v2_uv_slow(struct v2_rd *r)
{
	uint64_t v = 0;
	if (r->bad)
		return 0;
	for (unsigned i = 0; i < 10; i++) {
		if (r->pos >= r->len)
			break;
		uint8_t b = r->p[r->pos++];
		if (i == 9 && b > 1)
			break;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return v;
	}
	r->bad = 1;
	return 0;
}

size_t v2_count(struct v2_rd *r, size_t min_bytes)
{
	uint64_t n = v2_uv(r);
	if (r->bad)
		return 0;
	if (min_bytes && n > (r->len - r->pos) / min_bytes) {
		r->bad = 1;
		return 0;
	}
	if (n > UINT32_MAX - 1) {
		r->bad = 1;
		return 0;
	}
	return (size_t)n;
}

/* ---- tables ------------------------------------------------------------------- */

void v2_tables_init(struct v2_tables *t)
{
	memset(t, 0, sizeof(*t));
	pd_buf_init(&t->sbytes, 0);
}

void v2_tables_fini(struct v2_tables *t)
{
	pd_buf_fini(&t->sbytes);
	free(t->soff);
	free(t->map);
	free(t->fn);
	free(t->loc);
	free(t->line);
	free(t->node);
	free(t->istr.slot);
	free(t->imap.slot);
	free(t->ifn.slot);
	free(t->iloc.slot);
	free(t->inode.slot);
	memset(t, 0, sizeof(*t));
}

size_t v2_tables_memory(const struct v2_tables *t)
{
	return t->sbytes.cap + t->str_cap * sizeof(*t->soff) + t->map_cap * sizeof(*t->map) +
	       t->fn_cap * sizeof(*t->fn) + t->loc_cap * sizeof(*t->loc) +
	       t->line_cap * sizeof(*t->line) + t->node_cap * sizeof(*t->node) +
	       (t->istr.cap + t->imap.cap + t->ifn.cap + t->iloc.cap + t->inode.cap) *
		   sizeof(uint32_t);
}

/* Grows *arr (of *cap elements of size sz) to hold need; 0 or -1. Grows by half
 * rather than doubling: a head holds one set of tables per series. */
static int grow(void **arr, size_t *cap, size_t need, size_t sz)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap + *cap / 2 : 16;
	if (c < need)
		c = need;
	void *n = realloc(*arr, c * sz);
	if (!n)
		return -1;
	*arr = n;
	*cap = c;
	return 0;
}

#define GROW(arr, cap, need) grow((void **)&(arr), &(cap), (need), sizeof(*(arr)))

static uint64_t hash_str(const char *s, size_t len) { return pd_hash_bytes(s, len, 0x51); }

static uint64_t hash_map(const struct v2_mapping *m)
{
	uint64_t h = pd_hash_u64(0x4d, m->start);
	h = pd_hash_u64(h, m->limit);
	h = pd_hash_u64(h, m->offset);
	h = pd_hash_u64(h, (uint64_t)m->filename << 32 | m->build_id);
	return pd_hash_u64(h, m->flags);
}

static uint64_t hash_fn(const struct v2_function *f)
{
	uint64_t h = pd_hash_u64(0x46, (uint64_t)f->name << 32 | f->system_name);
	h = pd_hash_u64(h, f->filename);
	return pd_hash_u64(h, (uint64_t)f->start_line);
}

static uint64_t hash_loc(const struct v2_location *l, const struct v2_line *lines)
{
	uint64_t h = pd_hash_u64(0x4c, l->address);
	h = pd_hash_u64(h, (uint64_t)l->mapping << 1 | l->folded);
	for (uint32_t k = 0; k < l->nline; k++) {
		h = pd_hash_u64(h, lines[k].function);
		h = pd_hash_u64(h, (uint64_t)lines[k].line);
		h = pd_hash_u64(h, (uint64_t)lines[k].column);
	}
	return h;
}

static uint64_t hash_node(uint32_t parent, uint32_t location)
{
	return pd_hash_u64(0x4e, (uint64_t)parent << 32 | location);
}

static uint64_t entry_hash(const struct v2_tables *t, const struct v2_index *ix, uint32_t i)
{
	if (ix == &t->istr)
		return hash_str(v2_str(t, i), v2_str_len(t, i));
	if (ix == &t->imap)
		return hash_map(&t->map[i]);
	if (ix == &t->ifn)
		return hash_fn(&t->fn[i]);
	if (ix == &t->iloc)
		return hash_loc(&t->loc[i], t->line ? t->line + t->loc[i].line : NULL);
	return hash_node(t->node[i].parent, t->node[i].location);
}

/* Makes room for one more entry (n entries now); rebuilds at 3/4 full. */
static int ix_reserve(struct v2_tables *t, struct v2_index *ix, size_t n)
{
	if ((n + 1) * 4 <= ix->cap * 3)
		return 0;
	size_t cap = ix->cap ? ix->cap * 2 : 64;
	uint32_t *s = calloc(cap, sizeof(*s));
	if (!s)
		return -1;
	for (size_t i = 0; i < n; i++) {
		size_t j = entry_hash(t, ix, (uint32_t)i) & (cap - 1);
		while (s[j])
			j = (j + 1) & (cap - 1);
		s[j] = (uint32_t)i + 1;
	}
	free(ix->slot);
	ix->slot = s;
	ix->cap = cap;
	return 0;
}

/* Interning an entry that frozen tables do not hold. */
static int64_t missing(struct v2_tables *t)
{
	t->missed = 1;
	return -1;
}

/* Readies an index for a lookup that may add an entry: 0, or -1 when out of
 * memory (or when the tables are frozen and the index is empty). */
static int ix_ready(struct v2_tables *t, struct v2_index *ix, size_t n)
{
	if (!t->frozen)
		return ix_reserve(t, ix, n);
	return ix->cap ? 0 : (int)missing(t);
}

int64_t v2_intern_str(struct v2_tables *t, const char *s, size_t len)
{
	if (ix_ready(t, &t->istr, t->nstr))
		return -1;
	uint64_t h = hash_str(s, len);
	size_t j = h & (t->istr.cap - 1);
	for (uint32_t v; (v = t->istr.slot[j]); j = (j + 1) & (t->istr.cap - 1))
		if (v2_str_len(t, v - 1) == len && memcmp(v2_str(t, v - 1), s, len) == 0)
			return v - 1;
	if (t->frozen)
		return missing(t);
	if (GROW(t->soff, t->str_cap, t->nstr + 2))
		return -1;
	if (t->nstr == 0)
		t->soff[0] = 0;
	if (t->sbytes.len + len + 1 > UINT32_MAX)
		return -1;
	if (pd_buf_append(&t->sbytes, s, len) || pd_buf_append(&t->sbytes, "", 1))
		return -1;
	t->soff[t->nstr + 1] = (uint32_t)t->sbytes.len;
	t->istr.slot[j] = (uint32_t)++t->nstr;
	return (int64_t)t->nstr - 1;
}

/* Field by field: the struct has padding, which memcmp would compare. */
static int map_equal(const struct v2_mapping *a, const struct v2_mapping *b)
{
	return a->start == b->start && a->limit == b->limit && a->offset == b->offset &&
	       a->filename == b->filename && a->build_id == b->build_id && a->flags == b->flags;
}

/* True when entry i of a table may not be reused. */
static int avoided(const uint8_t *avoid, uint32_t i)
{
	return avoid && avoid[i];
}

int64_t v2_intern_map(struct v2_tables *t, const struct v2_mapping *m,
		      const uint8_t *avoid)
{
	if (ix_ready(t, &t->imap, t->nmap))
		return -1;
	size_t j = hash_map(m) & (t->imap.cap - 1);
	for (uint32_t v; (v = t->imap.slot[j]); j = (j + 1) & (t->imap.cap - 1))
		if (map_equal(&t->map[v - 1], m) && !avoided(avoid, v - 1))
			return v - 1;
	if (t->frozen)
		return missing(t);
	if (GROW(t->map, t->map_cap, t->nmap + 1))
		return -1;
	t->map[t->nmap] = *m;
	t->imap.slot[j] = (uint32_t)++t->nmap;
	return (int64_t)t->nmap - 1;
}

int64_t v2_intern_fn(struct v2_tables *t, const struct v2_function *f,
		     const uint8_t *avoid)
{
	if (ix_ready(t, &t->ifn, t->nfn))
		return -1;
	size_t j = hash_fn(f) & (t->ifn.cap - 1);
	for (uint32_t v; (v = t->ifn.slot[j]); j = (j + 1) & (t->ifn.cap - 1)) {
		const struct v2_function *g = &t->fn[v - 1];
		if (g->name == f->name && g->system_name == f->system_name &&
		    g->filename == f->filename && g->start_line == f->start_line &&
		    !avoided(avoid, v - 1))
			return v - 1;
	}
	if (t->frozen)
		return missing(t);
	if (GROW(t->fn, t->fn_cap, t->nfn + 1))
		return -1;
	t->fn[t->nfn] = *f;
	t->ifn.slot[j] = (uint32_t)++t->nfn;
	return (int64_t)t->nfn - 1;
}

static int lines_equal(const struct v2_line *a, const struct v2_line *b, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		if (a[k].function != b[k].function || a[k].line != b[k].line ||
		    a[k].column != b[k].column)
			return 0;
	return 1;
}

int64_t v2_intern_loc(struct v2_tables *t, const struct v2_location *l,
		      const struct v2_line *lines, const uint8_t *avoid)
{
	if (ix_ready(t, &t->iloc, t->nloc))
		return -1;
	size_t j = hash_loc(l, lines) & (t->iloc.cap - 1);
	for (uint32_t v; (v = t->iloc.slot[j]); j = (j + 1) & (t->iloc.cap - 1)) {
		const struct v2_location *g = &t->loc[v - 1];
		if (g->address == l->address && g->mapping == l->mapping &&
		    g->folded == l->folded && g->nline == l->nline &&
		    (!l->nline || lines_equal(t->line + g->line, lines, l->nline)) &&
		    !avoided(avoid, v - 1))
			return v - 1;
	}
	if (t->frozen)
		return missing(t);
	if (GROW(t->loc, t->loc_cap, t->nloc + 1) || GROW(t->line, t->line_cap, t->nline + l->nline) ||
	    t->nline + l->nline > UINT32_MAX)
		return -1;
	struct v2_location *d = &t->loc[t->nloc];
	*d = *l;
	d->line = (uint32_t)t->nline;
	if (l->nline)
		memcpy(t->line + t->nline, lines, l->nline * sizeof(*lines));
	t->nline += l->nline;
	t->iloc.slot[j] = (uint32_t)++t->nloc;
	return (int64_t)t->nloc - 1;
}

int64_t v2_intern_node(struct v2_tables *t, uint32_t parent, uint32_t location)
{
	if (ix_ready(t, &t->inode, t->nnode))
		return -1;
	size_t j = hash_node(parent, location) & (t->inode.cap - 1);
	for (uint32_t v; (v = t->inode.slot[j]); j = (j + 1) & (t->inode.cap - 1))
		if (t->node[v - 1].parent == parent && t->node[v - 1].location == location)
			return v - 1;
	if (t->frozen)
		return missing(t);
	if (GROW(t->node, t->node_cap, t->nnode + 1))
		return -1;
	t->node[t->nnode] = (struct v2_node){parent, location};
	t->inode.slot[j] = (uint32_t)++t->nnode;
	return (int64_t)t->nnode - 1;
}

/* ---- serialised form ---------------------------------------------------------- */

/* Length of the common prefix of strings a and b. */
static size_t common_prefix(const struct v2_tables *t, uint32_t a, uint32_t b)
{
	const char *x = v2_str(t, a), *y = v2_str(t, b);
	size_t n = v2_str_len(t, a) < v2_str_len(t, b) ? v2_str_len(t, a) : v2_str_len(t, b), k = 0;
	while (k < n && x[k] == y[k])
		k++;
	return k;
}

/* The value of a lowercase hex digit, or -1. */
static int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Whether a string is written as the bytes its digits spell: lowercase hex of an
 * even length of at least V2_HEX_MIN (a build id, usually), which then takes half
 * its length, where zstd's entropy coding of the digits among other text took
 * five or six bits a digit (docs/format/chunks.md, "Tables"). */
static int hex_packable(const char *x, size_t l)
{
	if (l < V2_HEX_MIN || l % 2)
		return 0;
	for (size_t k = 0; k < l; k++)
		if (hex_digit(x[k]) < 0)
			return 0;
	return 1;
}

int v2_tables_write(const struct v2_tables *t, struct pd_buf *b, size_t cuts[V2_TABLES_CUTS],
		    int hex)
{
	int e = 0;
	size_t base = b->len, nc = 0;
#define CUT() \
	do { \
		if (cuts) \
			cuts[nc++] = b->len - base; \
	} while (0)
	/* strings: when none holds a NUL byte, a 0, the count, and each string
	 * followed by a NUL (zstd matches whole names best when nothing sits between
	 * them: 6-10% smaller tables than the other form on Go profiles); otherwise the
	 * count; for each, the prefix it shares with the one before and the length of
	 * the rest; then the rests back to back */
	int nul_free = 1;
	for (size_t i = 0; i < t->nstr && nul_free; i++)
		nul_free = memchr(v2_str(t, (uint32_t)i), 0, v2_str_len(t, (uint32_t)i)) == NULL;
	size_t nhex = 0;
	for (size_t i = 0; i < t->nstr && nul_free && hex; i++)
		nhex += hex_packable(v2_str(t, (uint32_t)i), v2_str_len(t, (uint32_t)i));
	if (nul_free && nhex) {
		/* the same with packed hex strings (build ids): a second 0, the count,
		 * the hex strings' indices, then each string NUL-terminated or, when
		 * listed, as its length in bytes and the bytes its digits spell */
		e |= v2_put_uv(b, 0) | v2_put_uv(b, 0) | v2_put_uv(b, t->nstr) | v2_put_uv(b, nhex);
		for (size_t i = 0, last = 0; i < t->nstr; i++)
			if (hex_packable(v2_str(t, (uint32_t)i), v2_str_len(t, (uint32_t)i))) {
				e |= v2_put_uv(b, i - last);
				last = i;
			}
		for (size_t i = 0; i < t->nstr && !e; i++) {
			const char *x = v2_str(t, (uint32_t)i);
			size_t l = v2_str_len(t, (uint32_t)i);
			if (!hex_packable(x, l)) {
				e |= pd_buf_append(b, x, l + 1);
				continue;
			}
			e |= v2_put_uv(b, l / 2);
			for (size_t k = 0; k < l && !e; k += 2) {
				uint8_t v = (uint8_t)(hex_digit(x[k]) << 4 | hex_digit(x[k + 1]));
				e |= pd_buf_append(b, &v, 1);
			}
		}
	} else if (nul_free) {
		e |= v2_put_uv(b, 0) | v2_put_uv(b, t->nstr);
		for (size_t i = 0; i < t->nstr && !e; i++)
			e |= pd_buf_append(b, v2_str(t, (uint32_t)i), v2_str_len(t, (uint32_t)i) + 1);
	} else {
		e |= v2_put_uv(b, t->nstr);
		for (size_t i = 0; i < t->nstr; i++) {
			size_t p = i ? common_prefix(t, (uint32_t)i, (uint32_t)i - 1) : 0;
			e |= v2_put_uv(b, p);
			e |= v2_put_uv(b, v2_str_len(t, (uint32_t)i) - p);
		}
		for (size_t i = 0; i < t->nstr && !e; i++) {
			size_t p = i ? common_prefix(t, (uint32_t)i, (uint32_t)i - 1) : 0;
			e |= pd_buf_append(b, v2_str(t, (uint32_t)i) + p, v2_str_len(t, (uint32_t)i) - p);
		}
	}
	CUT();
	/* mappings, row by row: few and unlike each other */
	e |= v2_put_uv(b, t->nmap);
	for (size_t i = 0; i < t->nmap; i++) {
		const struct v2_mapping *m = &t->map[i];
		e |= v2_put_uv(b, m->start);
		e |= v2_put_uv(b, m->limit - m->start);
		e |= v2_put_uv(b, m->offset);
		e |= v2_put_uv(b, m->filename);
		e |= v2_put_uv(b, m->build_id);
		e |= pd_buf_append(b, &m->flags, 1);
	}
	/* functions, column by column: name and file name as differences from the
	 * previous function's (functions and their strings are added in the same
	 * order, so these are small), system_name as the difference from name */
	CUT();
	e |= v2_put_uv(b, t->nfn);
	int64_t prev = 0;
	for (size_t i = 0; i < t->nfn; i++) {
		e |= v2_put_sv(b, (int64_t)t->fn[i].name - prev);
		prev = t->fn[i].name;
	}
	for (size_t i = 0; i < t->nfn; i++)
		e |= v2_put_sv(b, (int64_t)t->fn[i].system_name - (int64_t)t->fn[i].name);
	prev = 0;
	for (size_t i = 0; i < t->nfn; i++) {
		e |= v2_put_sv(b, (int64_t)t->fn[i].filename - prev);
		prev = t->fn[i].filename;
	}
	for (size_t i = 0; i < t->nfn; i++)
		e |= v2_put_sv(b, t->fn[i].start_line);
	/* locations: mapping, address (as the difference from the previous one),
	 * line count and folded flag; then every line's function (as the difference
	 * from the previous line's), line (from its function's start line), column */
	CUT();
	e |= v2_put_uv(b, t->nloc);
	for (size_t i = 0; i < t->nloc; i++)
		e |= v2_put_uv(b, t->loc[i].mapping);
	uint64_t pa = 0;
	for (size_t i = 0; i < t->nloc; i++) {
		e |= v2_put_sv(b, (int64_t)(t->loc[i].address - pa));
		pa = t->loc[i].address;
	}
	for (size_t i = 0; i < t->nloc; i++)
		e |= v2_put_uv(b, (uint64_t)t->loc[i].nline << 1 | t->loc[i].folded);
	prev = 0;
	for (size_t i = 0; i < t->nline; i++) {
		e |= v2_put_sv(b, (int64_t)t->line[i].function - prev);
		prev = t->line[i].function;
	}
	for (size_t i = 0; i < t->nline; i++)
		e |= v2_put_sv(b, (int64_t)((uint64_t)t->line[i].line -
					    (uint64_t)t->fn[t->line[i].function].start_line));
	for (size_t i = 0; i < t->nline; i++)
		e |= v2_put_sv(b, t->line[i].column);
	/* stack tree: each node's distance to its parent (0: a root), and its
	 * location as the difference from the previous node's */
	CUT();
	e |= v2_put_uv(b, t->nnode);
	for (size_t i = 0; i < t->nnode; i++)
		e |= v2_put_uv(b, t->node[i].parent ? i + 1 - t->node[i].parent : 0);
	prev = 0;
	for (size_t i = 0; i < t->nnode; i++) {
		e |= v2_put_sv(b, (int64_t)t->node[i].location - prev);
		prev = t->node[i].location;
	}
#undef CUT
	return e ? PD_ENOMEM : 0;
}

static int corrupt(struct pd_err *err, const char *what)
{
	return pd_err_set(err, PD_ECORRUPT, "value chunk tables: %s", what);
}

/* The NUL-terminated string form (after its 0 marker): n strings, each ending in
 * a NUL, copied as they are into t's string bytes. */
static int read_strings_nul(struct v2_tables *t, struct v2_rd *r, struct pd_err *err)
{
	size_t n = v2_count(r, 1);
	if (r->bad || n == 0)
		return corrupt(err, "string count is missing or zero");
	if (!(t->soff = malloc((n + 1) * sizeof(*t->soff))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	t->str_cap = n + 1;
	const uint8_t *start = r->p + r->pos, *q = start, *end = r->p + r->len;
	t->soff[0] = 0;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *z = memchr(q, 0, (size_t)(end - q));
		if (!z)
			return corrupt(err, "string bytes are truncated");
		q = z + 1;
		if ((size_t)(q - start) > UINT32_MAX)
			return corrupt(err, "strings are too large");
		t->soff[i + 1] = (uint32_t)(q - start);
	}
	if (pd_buf_append(&t->sbytes, start, (size_t)(q - start)))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	r->pos += (size_t)(q - start);
	t->nstr = n;
	return 0;
}

/* The NUL-terminated form with packed hex strings (after its two 0 markers). */
static int read_strings_hex(struct v2_tables *t, struct v2_rd *r, struct pd_err *err)
{
	size_t n = v2_count(r, 1);
	if (r->bad || n == 0)
		return corrupt(err, "string count is missing or zero");
	size_t nhex = v2_count(r, 2);
	if (r->bad || nhex == 0 || nhex > n)
		return corrupt(err, "packed hex string count is missing or too large");
	uint8_t *packed = calloc(n, 1);
	if (!packed || !(t->soff = malloc((n + 1) * sizeof(*t->soff)))) {
		free(packed);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	t->str_cap = n + 1;
	for (size_t k = 0, at = 0; k < nhex; k++) {
		uint64_t gap = v2_uv(r);
		if (r->bad || (k && gap == 0) || gap >= n - at) {
			free(packed);
			return corrupt(err, "packed hex string index is out of order or range");
		}
		at += (size_t)gap;
		packed[at] = 1;
	}
	static const char digits[] = "0123456789abcdef";
	t->soff[0] = 0;
	for (size_t i = 0; i < n; i++) {
		int e = 0;
		if (packed[i]) {
			size_t l = v2_count(r, 1);
			if (r->bad || l == 0) {
				free(packed);
				return corrupt(err, "packed hex string is truncated");
			}
			for (size_t k = 0; k < l && !e; k++) {
				uint8_t v = r->p[r->pos + k];
				char two[2] = {digits[v >> 4], digits[v & 15]};
				e = pd_buf_append(&t->sbytes, two, 2);
			}
			r->pos += l;
			e |= pd_buf_append(&t->sbytes, "", 1);
		} else {
			const uint8_t *q = r->p + r->pos, *z = memchr(q, 0, r->len - r->pos);
			if (!z) {
				free(packed);
				return corrupt(err, "string bytes are truncated");
			}
			e = pd_buf_append(&t->sbytes, q, (size_t)(z - q) + 1);
			r->pos += (size_t)(z - q) + 1;
		}
		if (e) {
			free(packed);
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		}
		if (t->sbytes.len > UINT32_MAX) {
			free(packed);
			return corrupt(err, "strings are too large");
		}
		t->soff[i + 1] = (uint32_t)t->sbytes.len;
	}
	free(packed);
	t->nstr = n;
	return 0;
}

/* The prefix-shared string form: n, (shared, rest) pairs, then the rests. */
static int read_strings_shared(struct v2_tables *t, struct v2_rd *r, size_t n, struct pd_err *err)
{
	const uint8_t *p = r->p;
	size_t len = r->len;
	if (!(t->soff = malloc((n + 1) * sizeof(*t->soff))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	t->str_cap = n + 1;
	uint64_t *pre = malloc(n * sizeof(*pre));
	if (!pre)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	uint64_t total = 0, rest = 0;
	t->soff[0] = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t shared = v2_uv(r), l = v2_uv(r);
		uint64_t prevlen = i ? t->soff[i] - t->soff[i - 1] - 1 : 0;
		rest += l;
		total += shared + l + 1;
		if (r->bad || shared > prevlen || l > len || rest > len || total > UINT32_MAX) {
			free(pre);
			return corrupt(err, "string lengths are truncated or too large");
		}
		pre[i] = shared;
		t->soff[i + 1] = (uint32_t)total;
	}
	if (rest > len - r->pos) {
		free(pre);
		return corrupt(err, "string bytes are truncated");
	}
	if (pd_buf_reserve(&t->sbytes, total)) {
		free(pre);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		size_t l = t->soff[i + 1] - t->soff[i] - 1 - pre[i];
		if (pre[i])
			pd_buf_append(&t->sbytes, t->sbytes.data + t->soff[i - 1], pre[i]);
		pd_buf_append(&t->sbytes, p + r->pos, l);
		pd_buf_append(&t->sbytes, "", 1);
		r->pos += l;
	}
	free(pre);
	t->nstr = n;
	return 0;
}

int v2_tables_read(struct v2_tables *t, const uint8_t *p, size_t len, struct pd_err *err)
{
	struct v2_rd r = {p, len, 0, 0};
	uint64_t first = v2_uv(&r);
	if (r.bad)
		return corrupt(err, "string count is missing or zero");
	int rc;
	if (first == 0 && r.pos < r.len && r.p[r.pos] == 0) {
		r.pos++;
		rc = read_strings_hex(t, &r, err);
	} else if (first == 0)
		rc = read_strings_nul(t, &r, err);
	else if (first > len - r.pos)
		rc = corrupt(err, "string count is larger than the tables");
	else
		rc = read_strings_shared(t, &r, (size_t)first, err);
	if (rc)
		return rc;
	size_t n = t->nstr;
	if (t->soff[1] != 1)
		return corrupt(err, "string 0 is not empty");

	size_t nm = v2_count(&r, 6);
	if (nm && !(t->map = calloc(nm, sizeof(*t->map))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	t->nmap = t->map_cap = nm;
	for (size_t i = 0; i < nm && !r.bad; i++) {
		struct v2_mapping *m = &t->map[i];
		m->start = v2_uv(&r);
		m->limit = m->start + v2_uv(&r);
		m->offset = v2_uv(&r);
		uint64_t fnm = v2_uv(&r), bid = v2_uv(&r);
		m->flags = v2_byte(&r);
		if (fnm >= n || bid >= n || m->flags > 15)
			return corrupt(err, "a mapping refers to a missing string");
		m->filename = (uint32_t)fnm;
		m->build_id = (uint32_t)bid;
	}

	size_t nf = v2_count(&r, 4);
	if (nf && !(t->fn = calloc(nf, sizeof(*t->fn))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	t->nfn = t->fn_cap = nf;
	int64_t prev = 0;
	for (size_t i = 0; i < nf; i++)
		t->fn[i].name = (uint32_t)(prev = (int64_t)((uint64_t)prev + (uint64_t)v2_sv(&r)));
	for (size_t i = 0; i < nf; i++)
		t->fn[i].system_name = (uint32_t)((uint64_t)t->fn[i].name + (uint64_t)v2_sv(&r));
	prev = 0;
	for (size_t i = 0; i < nf; i++)
		t->fn[i].filename = (uint32_t)(prev = (int64_t)((uint64_t)prev + (uint64_t)v2_sv(&r)));
	for (size_t i = 0; i < nf; i++)
		t->fn[i].start_line = v2_sv(&r);
	for (size_t i = 0; i < nf; i++)
		if (t->fn[i].name >= n || t->fn[i].system_name >= n || t->fn[i].filename >= n)
			return corrupt(err, "a function refers to a missing string");

	size_t nl = v2_count(&r, 3);
	if (nl && !(t->loc = calloc(nl, sizeof(*t->loc))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	t->nloc = t->loc_cap = nl;
	for (size_t i = 0; i < nl; i++) {
		uint64_t m = v2_uv(&r);
		if (m > nm)
			return corrupt(err, "a location refers to a missing mapping");
		t->loc[i].mapping = (uint32_t)m;
	}
	uint64_t pa = 0;
	for (size_t i = 0; i < nl; i++)
		t->loc[i].address = pa = pa + (uint64_t)v2_sv(&r);
	uint64_t lines = 0;
	for (size_t i = 0; i < nl; i++) {
		uint64_t v = v2_uv(&r);
		t->loc[i].folded = v & 1;
		t->loc[i].line = (uint32_t)lines;
		lines += v >> 1;
		if (r.bad || lines > len - r.pos)
			return corrupt(err, "location lines are truncated");
		t->loc[i].nline = (uint32_t)(v >> 1);
	}
	if (lines && !(t->line = calloc(lines, sizeof(*t->line))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	t->nline = t->line_cap = lines;
	prev = 0;
	for (size_t i = 0; i < lines; i++) {
		prev = (int64_t)((uint64_t)prev + (uint64_t)v2_sv(&r));
		if (prev < 0 || (uint64_t)prev >= nf)
			return corrupt(err, "a line refers to a missing function");
		t->line[i].function = (uint32_t)prev;
	}
	for (size_t i = 0; i < lines; i++)
		t->line[i].line = (int64_t)((uint64_t)v2_sv(&r) +
					    (uint64_t)t->fn[t->line[i].function].start_line);
	for (size_t i = 0; i < lines; i++)
		t->line[i].column = v2_sv(&r);

	size_t nn = v2_count(&r, 2);
	if (nn && !(t->node = calloc(nn, sizeof(*t->node))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	t->nnode = t->node_cap = nn;
	for (size_t i = 0; i < nn; i++) {
		uint64_t d = v2_uv(&r);
		if (d > i)
			return corrupt(err, "a stack node's parent comes after it");
		t->node[i].parent = d ? (uint32_t)(i + 1 - d) : 0;
	}
	prev = 0;
	for (size_t i = 0; i < nn; i++) {
		prev = (int64_t)((uint64_t)prev + (uint64_t)v2_sv(&r));
		if (prev < 0 || (uint64_t)prev >= nl)
			return corrupt(err, "a stack node refers to a missing location");
		t->node[i].location = (uint32_t)prev;
	}
	if (r.bad)
		return corrupt(err, "truncated");
	if (r.pos != len)
		return corrupt(err, "bytes left over at the end");
	return 0;
}
