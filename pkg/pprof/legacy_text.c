/* legacy_text.c: the text profiles of gperftools and of Go before 1.8, read as
 * `go tool pprof` reads them: heap ("heap profile: N: B [N: B] @ heap/RATE",
 * heapz_v2, heapprofile), growth and fragmentation, Go's count profiles
 * ("goroutine profile: total N"), threadz and thread stacks, and contention
 * ("--- contentionz", "--- mutex:", "--- contention:" with its attributes). Each
 * may end with a "--- Memory map: ---" or "MAPPED_LIBRARIES:" section in
 * /proc/self/maps form. Hand-written: no Debian library reads these formats. */
#include <math.h>
#include <string.h>

#include "legacy_int.h"

void pd_pprof_scale_heap(int64_t *count, int64_t *size, int64_t rate)
{
	if (*count == 0 || *size == 0) {
		*count = *size = 0;
		return;
	}
	if (rate <= 1)
		return;
	double avg = (double)*size / (double)*count;
	double scale = 1 / (1 - exp(-avg / (double)rate));
	*count = pd_pprof_f2i((double)*count * scale);
	*size = pd_pprof_f2i((double)*size * scale);
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Reads the remaining lines: skips to the memory map sentinel (the current line
 * counts), then reads the maps. */
static int additional_sections(struct pd_pprof_lb *b, struct pd_pprof_lines *l, struct pd_err *err)
{
	int rc;
	while (!pd_pprof_is_maps_sentinel(l->cur, l->cur_len)) {
		if ((rc = pd_pprof_lines_next(l, err)) < 0)
			return rc;
		if (!rc)
			return 0;
	}
	return pd_pprof_lb_maps(b, l->buf + l->pos, l->len - l->pos, err);
}

/* ---- small matchers for pprof's expressions -------------------------------- */

struct cur {
	const char *s;
	size_t n, i;
};

static void spaces(struct cur *c)
{
	while (c->i < c->n && c->s[c->i] == ' ')
		c->i++;
}

static int lit(struct cur *c, const char *p)
{
	size_t k = strlen(p);
	if (c->n - c->i < k || memcmp(c->s + c->i, p, k))
		return 0;
	c->i += k;
	return 1;
}

/* -?\d+ (neg allowed when neg is set): the digits' span into *a, *an. */
static int num(struct cur *c, int neg, const char **a, size_t *an)
{
	size_t st = c->i;
	if (neg && c->i < c->n && c->s[c->i] == '-')
		c->i++;
	size_t d = c->i;
	while (c->i < c->n && is_digit(c->s[c->i]))
		c->i++;
	if (c->i == d) {
		c->i = st;
		return 0;
	}
	*a = c->s + st;
	*an = c->i - st;
	return 1;
}

/* "heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\]" from position i; then the
 * rest is left at c->i. */
static int heap_counts(struct cur *c, const char *v[4], size_t vn[4])
{
	if (!lit(c, "heap profile:"))
		return 0;
	spaces(c);
	if (!num(c, 0, &v[0], &vn[0]) || !lit(c, ":"))
		return 0;
	spaces(c);
	if (!num(c, 0, &v[1], &vn[1]))
		return 0;
	spaces(c);
	if (!lit(c, "["))
		return 0;
	spaces(c);
	if (!num(c, 0, &v[2], &vn[2]) || !lit(c, ":"))
		return 0;
	spaces(c);
	if (!num(c, 0, &v[3], &vn[3]))
		return 0;
	spaces(c);
	return lit(c, "]");
}

enum heap_kind { HEAP_NONE, HEAP_HEAP, HEAP_GROWTH, HEAP_FRAG };

/* Finds the heap header in a line: its kind, the four counts, the sampler's name
 * and rate text. */
static enum heap_kind heap_header(const char *s, size_t n, const char *v[4], size_t vn[4],
                                  const char **name, size_t *name_n, const char **rate,
                                  size_t *rate_n)
{
	for (size_t st = 0; st < n; st++) {
		struct cur c = {s, n, st};
		if (!heap_counts(&c, v, vn))
			continue;
		size_t after = c.i;
		spaces(&c);
		if (lit(&c, "@")) {
			spaces(&c);
			if (lit(&c, "heap")) {
				size_t ns = c.i - 4;
				while (c.i < n &&
				       (c.s[c.i] == '_' || (c.s[c.i] >= 'a' && c.s[c.i] <= 'z') ||
				        is_digit(c.s[c.i])))
					c.i++;
				*name = s + ns;
				*name_n = c.i - ns;
				lit(&c, "/");
				size_t rs = c.i;
				while (c.i < n && is_digit(c.s[c.i]))
					c.i++;
				*rate = s + rs;
				*rate_n = c.i - rs;
				return HEAP_HEAP;
			}
		}
		c.i = after;
		if (lit(&c, " @ growth"))
			return HEAP_GROWTH;
		c.i = after;
		if (lit(&c, " @ fragmentation"))
			return HEAP_FRAG;
	}
	return HEAP_NONE;
}

static int span_is(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && memcmp(s, w, n) == 0;
}

static int span_eq(const char *a, size_t an, const char *b, size_t bn)
{
	return an == bn && memcmp(a, b, an) == 0;
}

/* One heap sample line: "(-?\d+): *(-?\d+) *\[ *(\d+): *(\d+) *] @([ x0-9a-f]*)"
 * anywhere in the line. */
static int heap_sample_match(const char *s, size_t n, const char *v[4], size_t vn[4],
                             const char **stk, size_t *stk_n)
{
	for (size_t st = 0; st < n; st++) {
		struct cur c = {s, n, st};
		if (!num(&c, 1, &v[0], &vn[0]) || !lit(&c, ":"))
			continue;
		spaces(&c);
		if (!num(&c, 1, &v[1], &vn[1]))
			continue;
		spaces(&c);
		if (!lit(&c, "["))
			continue;
		spaces(&c);
		if (!num(&c, 0, &v[2], &vn[2]) || !lit(&c, ":"))
			continue;
		spaces(&c);
		if (!num(&c, 0, &v[3], &vn[3]))
			continue;
		spaces(&c);
		if (!lit(&c, "] @"))
			continue;
		size_t a = c.i;
		while (c.i < n && (c.s[c.i] == ' ' || c.s[c.i] == 'x' || is_digit(c.s[c.i]) ||
		                   (c.s[c.i] >= 'a' && c.s[c.i] <= 'f')))
			c.i++;
		*stk = s + a;
		*stk_n = c.i - a;
		return 1;
	}
	return 0;
}

static int heap_values(const char *cs, size_t cn, const char *ss, size_t sn, const char *label,
                       int v2, int64_t rate, int64_t *out, int64_t *blocksize, size_t lineno,
                       struct pd_err *err)
{
	int64_t count, size;
	if (pd_pprof_parse_int(cs, cn, 0, &count) || pd_pprof_parse_int(ss, sn, 0, &size))
		return pd_err_set(err, PD_EINVAL, "line %zu: a number past 64 bits", lineno);
	if (count == 0 && size != 0)
		return pd_err_set(err, PD_EINVAL, "line %zu: %s count was 0 but %s bytes was %lld",
		                  lineno, label, label, (long long)size);
	if (count != 0) {
		*blocksize = count == -1 && size == INT64_MIN ? size : size / count;
		if (v2)
			pd_pprof_scale_heap(&count, &size, rate);
	}
	out[0] = count;
	out[1] = size;
	return 0;
}

int pd_pprof_legacy_heap(struct pd_pprof_profile **out, const char *buf, size_t len,
                         const struct pd_pprof_decode_opts *opts, struct pd_err *err)
{
	struct pd_pprof_lines l;
	pd_pprof_lines_init(&l, buf, len, pd_pprof_legacy_max_line(opts));
	int rc = pd_pprof_lines_next(&l, err);
	if (rc <= 0)
		return PD_PPROF_LEGACY_NOT_MINE;
	const char *v[4], *name = "", *rate = "";
	size_t vn[4], name_n = 0, rate_n = 0;
	enum heap_kind kind = heap_header(l.cur, l.cur_len, v, vn, &name, &name_n, &rate, &rate_n);
	if (kind == HEAP_NONE)
		return PD_PPROF_LEGACY_NOT_MINE;
	int64_t period = 1;
	int v2 = 0, has_alloc = 0;
	if (kind == HEAP_HEAP) {
		period = 0;
		if (rate_n && pd_pprof_parse_int(rate, rate_n, 0, &period))
			return PD_PPROF_LEGACY_NOT_MINE;
		if ((!span_eq(v[2], vn[2], v[0], vn[0]) && !span_is(v[2], vn[2], "0")) ||
		    (!span_eq(v[3], vn[3], v[1], vn[1]) && !span_is(v[3], vn[3], "0")))
			has_alloc = 1;
		if (span_is(name, name_n, "heapz_v2") || span_is(name, name_n, "heap_v2"))
			v2 = 1;
		else if (span_is(name, name_n, "heapprofile"))
			period = 1;
		else if (span_is(name, name_n, "heap"))
			v2 = 1, period /= 2;
		else
			return PD_PPROF_LEGACY_NOT_MINE;
	}
	struct pd_pprof_lb b;
	pd_pprof_lb_init(&b, opts);
	b.period = period;
	if ((rc = pd_pprof_lb_period_type(&b, "space", "bytes", err)))
		goto done;
	if (has_alloc)
		rc = pd_pprof_lb_type(&b, "alloc_objects", "count", err) ||
		     pd_pprof_lb_type(&b, "alloc_space", "bytes", err) ||
		     pd_pprof_lb_type(&b, "inuse_objects", "count", err) ||
		     pd_pprof_lb_type(&b, "inuse_space", "bytes", err);
	else
		rc = pd_pprof_lb_type(&b, "objects", "count", err) ||
		     pd_pprof_lb_type(&b, "space", "bytes", err);
	if (rc) {
		rc = err->code;
		goto done;
	}
	for (;;) {
		if ((rc = pd_pprof_lines_next(&l, err)) <= 0)
			break;
		const char *s = l.cur;
		size_t n = l.cur_len;
		pd_pprof_trim(&s, &n);
		if (pd_pprof_space_or_comment(s, n))
			continue;
		if (pd_pprof_is_maps_sentinel(s, n))
			break;
		const char *sv[4], *stk;
		size_t svn[4], stk_n;
		if (!heap_sample_match(s, n, sv, svn, &stk, &stk_n)) {
			rc = pd_err_set(
			    err, PD_EINVAL,
			    "line %zu: not a heap sample (\"N: BYTES [N: BYTES] @ 0x...\")",
			    l.lineno);
			goto done;
		}
		int64_t vals[4] = {0}, bs = 0;
		size_t k = 0;
		if (has_alloc) {
			if ((rc = heap_values(sv[2], svn[2], sv[3], svn[3], "allocation", v2,
			                      period, vals, &bs, l.lineno, err)))
				goto done;
			k = 2;
		}
		if ((rc = heap_values(sv[0], svn[0], sv[1], svn[1], "inuse", v2, period, vals + k,
		                      &bs, l.lineno, err)))
			goto done;
		struct pd_pprof_lb_sample *smp = pd_pprof_lb_sample(&b, err);
		if (!smp) {
			rc = err->code;
			goto done;
		}
		memcpy(smp->v, vals, sizeof(vals));
		smp->bytes = bs;
		smp->has_bytes = 1;
		if ((rc = pd_pprof_hex_frames(&b, stk, stk_n, 1, 1, l.lineno, err)))
			goto done;
	}
	if (rc < 0 || (rc = additional_sections(&b, &l, err)))
		goto done;
	const char *drop =
	    "calloc|cfree|malloc|free|memalign|do_memalign|(__)?posix_memalign|"
	    "pvalloc|valloc|realloc|tcmalloc::.*|tc_calloc|tc_cfree|tc_malloc|"
	    "tc_free|tc_memalign|tc_posix_memalign|tc_pvalloc|tc_valloc|tc_realloc|"
	    "tc_new|tc_delete|tc_newarray|tc_deletearray|tc_new_nothrow|"
	    "tc_newarray_nothrow|malloc_zone_malloc|malloc_zone_calloc|"
	    "malloc_zone_valloc|malloc_zone_realloc|malloc_zone_memalign|"
	    "malloc_zone_free|runtime\\..*|BaseArena::.*|(::)?do_malloc_no_errno|"
	    "(::)?do_malloc_pages|(::)?do_malloc|DoSampledAllocation|"
	    "MallocedMemBlock::MallocedMemBlock|_M_allocate|__builtin_(vec_)?delete|"
	    "__builtin_(vec_)?new|__gnu_cxx::new_allocator::allocate|__libc_malloc|"
	    "__malloc_alloc_template::allocate|allocate|cpp_alloc|operator new(\\[\\])?|"
	    "simple_alloc::allocate";
	const char *keep = "runtime\\.panic|runtime\\.reflectcall|runtime\\.call[0-9]*";
	b.drop_frames = pd_pprof_lb_str(&b, drop, strlen(drop));
	b.keep_frames = pd_pprof_lb_str(&b, keep, strlen(keep));
	rc = pd_pprof_lb_finish(&b, out, err);
done:
	pd_pprof_lb_fini(&b);
	if (rc)
		pd_err_prefix(err, "heap profile");
	return rc;
}

/* ---- Go's count profiles --------------------------------------------------- */

int pd_pprof_legacy_count(struct pd_pprof_profile **out, const char *buf, size_t len,
                          const struct pd_pprof_decode_opts *opts, struct pd_err *err)
{
	struct pd_pprof_lines l;
	pd_pprof_lines_init(&l, buf, len, pd_pprof_legacy_max_line(opts));
	int rc;
	while ((rc = pd_pprof_lines_next(&l, err)) > 0 &&
	       pd_pprof_space_or_comment(l.cur, l.cur_len))
		;
	if (rc < 0)
		return PD_PPROF_LEGACY_NOT_MINE;
	/* \A(\S+) profile: total \d+\z */
	const char *s = l.cur;
	size_t n = l.cur_len, t = 0;
	while (t < n && s[t] != ' ' && s[t] != '\t')
		t++;
	if (t == 0 || t == n)
		return PD_PPROF_LEGACY_NOT_MINE;
	struct cur c = {s, n, t};
	const char *d;
	size_t dn;
	if (!lit(&c, " profile: total ") || !num(&c, 0, &d, &dn) || c.i != n)
		return PD_PPROF_LEGACY_NOT_MINE;
	for (size_t i = 0; i < t; i++)
		if (s[i] == '\v' || s[i] == '\f' || s[i] == '\r' || s[i] == '\n')
			return PD_PPROF_LEGACY_NOT_MINE;
	char type[256];
	if (t >= sizeof(type))
		return PD_PPROF_LEGACY_NOT_MINE;
	memcpy(type, s, t);
	type[t] = 0;
	struct pd_pprof_lb b;
	pd_pprof_lb_init(&b, opts);
	b.period = 1;
	if ((rc = pd_pprof_lb_period_type(&b, type, "count", err)) ||
	    (rc = pd_pprof_lb_type(&b, type, "count", err)))
		goto done;
	for (;;) {
		if ((rc = pd_pprof_lines_next(&l, err)) <= 0)
			break;
		s = l.cur;
		n = l.cur_len;
		if (pd_pprof_space_or_comment(s, n))
			continue;
		if (pd_pprof_has_prefix(s, n, "---"))
			break;
		/* \A(\d+) @(( 0x[0-9a-f]+)+)\z */
		struct cur sc = {s, n, 0};
		int64_t v;
		int ok =
		    num(&sc, 0, &d, &dn) && lit(&sc, " @") && pd_pprof_parse_int(d, dn, 1, &v) == 0;
		size_t st = sc.i;
		int frames = 0;
		while (ok && sc.i < n) {
			if (!lit(&sc, " 0x")) {
				ok = 0;
				break;
			}
			size_t h = sc.i;
			while (sc.i < n &&
			       (is_digit(s[sc.i]) || (s[sc.i] >= 'a' && s[sc.i] <= 'f')))
				sc.i++;
			if (sc.i == h)
				ok = 0;
			frames++;
		}
		if (!ok || !frames) {
			rc = pd_err_set(err, PD_EINVAL,
			                "line %zu: not a sample (\"N @ 0x... 0x...\")", l.lineno);
			goto done;
		}
		struct pd_pprof_lb_sample *smp = pd_pprof_lb_sample(&b, err);
		if (!smp) {
			rc = err->code;
			goto done;
		}
		smp->v[0] = v;
		if ((rc = pd_pprof_hex_frames(&b, s + st, n - st, 1, 1, l.lineno, err)))
			goto done;
	}
	if (rc < 0 || (rc = additional_sections(&b, &l, err)))
		goto done;
	const char *drop = "ProfileData::Add|ProfileData::prof_handler|CpuProfiler::prof_handler|"
	                   "__pthread_sighandler|__restore";
	b.drop_frames = pd_pprof_lb_str(&b, drop, strlen(drop));
	rc = pd_pprof_lb_finish(&b, out, err);
done:
	pd_pprof_lb_fini(&b);
	if (rc)
		pd_err_prefix(err, "%s profile", type);
	return rc;
}

/* ---- threadz ---------------------------------------------------------------- */

static int is_xdigit(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* --- Thread ([[:xdigit:]]+) \(name: (.*)/(\d+)\) stack: --- */
static int thread_start(const char *s, size_t n)
{
	for (size_t st = 0; st + 11 <= n; st++) {
		struct cur c = {s, n, st};
		if (!lit(&c, "--- Thread "))
			continue;
		size_t h = c.i;
		while (c.i < n && is_xdigit(s[c.i]))
			c.i++;
		if (c.i == h || !lit(&c, " (name: "))
			continue;
		for (size_t j = c.i; j < n; j++) {
			if (s[j] == '\n')
				break;
			if (s[j] != '/')
				continue;
			struct cur e = {s, n, j + 1};
			const char *d;
			size_t dn;
			if (num(&e, 0, &d, &dn) && lit(&e, ") stack: ---"))
				return 1;
		}
	}
	return 0;
}

/* --- threadz \d+ --- */
static int threadz_start(const char *s, size_t n)
{
	for (size_t st = 0; st + 11 <= n; st++) {
		struct cur c = {s, n, st};
		const char *d;
		size_t dn;
		if (lit(&c, "--- threadz ") && num(&c, 0, &d, &dn) && lit(&c, " ---"))
			return 1;
	}
	return 0;
}

int pd_pprof_legacy_thread(struct pd_pprof_profile **out, const char *buf, size_t len,
                           const struct pd_pprof_decode_opts *opts, struct pd_err *err)
{
	struct pd_pprof_lines l;
	pd_pprof_lines_init(&l, buf, len, pd_pprof_legacy_max_line(opts));
	int rc;
	while ((rc = pd_pprof_lines_next(&l, err)) > 0 &&
	       pd_pprof_space_or_comment(l.cur, l.cur_len))
		;
	if (rc < 0)
		return PD_PPROF_LEGACY_NOT_MINE;
	const char *line = l.cur;
	size_t line_n = l.cur_len;
	if (threadz_start(line, line_n)) {
		while ((rc = pd_pprof_lines_next(&l, err)) > 0) {
			line = l.cur;
			line_n = l.cur_len;
			if (pd_pprof_is_maps_sentinel(line, line_n) ||
			    pd_pprof_has_prefix(line, line_n, "-"))
				break;
		}
		if (rc < 0)
			return rc;
	} else if (!thread_start(line, line_n)) {
		return PD_PPROF_LEGACY_NOT_MINE;
	}
	struct pd_pprof_lb b;
	pd_pprof_lb_init(&b, opts);
	b.period = 1;
	if ((rc = pd_pprof_lb_period_type(&b, "thread", "count", err)) ||
	    (rc = pd_pprof_lb_type(&b, "thread", "count", err)))
		goto done;
	while (!pd_pprof_is_maps_sentinel(line, line_n)) {
		if (pd_pprof_has_prefix(line, line_n, "---- no stack trace for"))
			break;
		if (!thread_start(line, line_n)) {
			rc = b.ns ? pd_err_set(
			                err, PD_EINVAL,
			                "line %zu: not a thread header (\"--- Thread ID (name: "
			                "NAME/N) stack: ---\")",
			                l.lineno)
			          : PD_PPROF_LEGACY_NOT_MINE;
			goto done;
		}
		/* the stack: hex addresses up to the next "---" line */
		size_t first = b.nstk;
		int same = 0;
		struct pd_pprof_lb_sample *smp = pd_pprof_lb_sample(&b, err);
		if (!smp) {
			rc = err->code;
			goto done;
		}
		line = "";
		line_n = 0;
		while ((rc = pd_pprof_lines_next(&l, err)) > 0) {
			line = l.cur;
			line_n = l.cur_len;
			pd_pprof_trim(&line, &line_n);
			if (!line_n)
				continue;
			if (pd_pprof_has_prefix(line, line_n, "---"))
				break;
			if (pd_pprof_contains(line, line_n, "same as previous thread")) {
				same = 1;
				continue;
			}
			if ((rc = pd_pprof_hex_frames(&b, line, line_n, 1, 0, l.lineno, err)))
				goto done;
		}
		if (rc < 0)
			goto done;
		rc = 0;
		if (same || b.s[b.ns - 1].n == 0) {
			b.nstk = first;
			b.ns--;
			if (b.ns)
				b.s[b.ns - 1].v[0]++;
			continue;
		}
		b.s[b.ns - 1].v[0] = 1;
	}
	if ((rc = additional_sections(&b, &l, err)))
		goto done;
	for (size_t i = 0; i < b.ns; i++) {
		struct pd_pprof_lb_sample *s = &b.s[i];
		if (s->n > 1 && b.loc[b.stk[s->off]].addr == b.loc[b.stk[s->off + 1]].addr + 1) {
			memmove(b.stk + s->off + 1, b.stk + s->off + 2,
			        (s->n - 2) * sizeof(*b.stk));
			s->n--;
		}
	}
	const char *drop = "ProfileData::Add|ProfileData::prof_handler|CpuProfiler::prof_handler|"
	                   "__pthread_sighandler|__restore";
	b.drop_frames = pd_pprof_lb_str(&b, drop, strlen(drop));
	rc = pd_pprof_lb_finish(&b, out, err);
done:
	pd_pprof_lb_fini(&b);
	if (rc && rc != PD_PPROF_LEGACY_NOT_MINE)
		pd_err_prefix(err, "thread profile");
	return rc;
}

/* ---- contention ------------------------------------------------------------- */

int pd_pprof_legacy_contention(struct pd_pprof_profile **out, const char *buf, size_t len,
                               const struct pd_pprof_decode_opts *opts, struct pd_err *err)
{
	struct pd_pprof_lines l;
	pd_pprof_lines_init(&l, buf, len, pd_pprof_legacy_max_line(opts));
	int rc = pd_pprof_lines_next(&l, err);
	if (rc <= 0)
		return PD_PPROF_LEGACY_NOT_MINE;
	if (!pd_pprof_has_prefix(l.cur, l.cur_len, "--- contentionz ") &&
	    !pd_pprof_has_prefix(l.cur, l.cur_len, "--- mutex:") &&
	    !pd_pprof_has_prefix(l.cur, l.cur_len, "--- contention:"))
		return PD_PPROF_LEGACY_NOT_MINE;
	int64_t cpuhz = 0, period = 1, duration = 0;
	for (;;) {
		if ((rc = pd_pprof_lines_next(&l, err)) < 0)
			return rc;
		if (!rc)
			break;
		const char *s = l.cur;
		size_t n = l.cur_len;
		pd_pprof_trim(&s, &n);
		if (pd_pprof_space_or_comment(s, n))
			continue;
		if (pd_pprof_has_prefix(s, n, "---"))
			break;
		const char *eq = memchr(s, '=', n);
		if (!eq)
			break;
		const char *k = s, *v = eq + 1;
		size_t kn = (size_t)(eq - s), vn = n - kn - 1;
		pd_pprof_trim(&k, &kn);
		pd_pprof_trim(&v, &vn);
		int64_t x;
		if (span_is(k, kn, "cycles/second")) {
			if (pd_pprof_parse_int(v, vn, 1, &cpuhz))
				return PD_PPROF_LEGACY_NOT_MINE;
		} else if (span_is(k, kn, "sampling period")) {
			if (pd_pprof_parse_int(v, vn, 1, &period))
				return PD_PPROF_LEGACY_NOT_MINE;
		} else if (span_is(k, kn, "ms since reset")) {
			if (pd_pprof_parse_int(v, vn, 1, &x))
				return PD_PPROF_LEGACY_NOT_MINE;
			duration = (int64_t)((uint64_t)x * 1000000u);
		} else if (!span_is(k, kn, "discarded samples")) {
			return PD_PPROF_LEGACY_NOT_MINE; /* format, resolution: Java's */
		}
	}
	struct pd_pprof_lb b;
	pd_pprof_lb_init(&b, opts);
	b.period = period;
	b.duration = duration;
	if ((rc = pd_pprof_lb_period_type(&b, "contentions", "count", err)) ||
	    (rc = pd_pprof_lb_type(&b, "contentions", "count", err)) ||
	    (rc = pd_pprof_lb_type(&b, "delay", "nanoseconds", err)))
		goto done;
	for (;;) {
		const char *s = l.cur;
		size_t n = l.cur_len;
		pd_pprof_trim(&s, &n);
		if (pd_pprof_has_prefix(s, n, "---"))
			break;
		if (!pd_pprof_space_or_comment(s, n)) {
			/* (\d+) *(\d+) @([ x0-9a-f]*) anywhere */
			int ok = 0;
			const char *a, *c2, *stk = "";
			size_t an, cn, stk_n = 0;
			for (size_t st = 0; st < n && !ok; st++) {
				struct cur c = {s, n, st};
				if (!num(&c, 0, &a, &an))
					continue;
				/* (\d+) *(\d+): the first run gives back its last digit when no
				 * space separates them */
				size_t after = c.i;
				spaces(&c);
				if (c.i == after) {
					if (an < 2)
						continue;
					c.i = after - 1;
					an--;
				}
				if (!num(&c, 0, &c2, &cn) || !lit(&c, " @"))
					continue;
				size_t h = c.i;
				while (c.i < n &&
				       (s[c.i] == ' ' || s[c.i] == 'x' || is_digit(s[c.i]) ||
				        (s[c.i] >= 'a' && s[c.i] <= 'f')))
					c.i++;
				stk = s + h;
				stk_n = c.i - h;
				ok = 1;
			}
			int64_t v1, v2;
			if (!ok || pd_pprof_parse_int(a, an, 0, &v1) ||
			    pd_pprof_parse_int(c2, cn, 0, &v2)) {
				rc = b.ns ? pd_err_set(
				                err, PD_EINVAL,
				                "line %zu: not a contention sample (\"CYCLES COUNT "
				                "@ 0x...\")",
				                l.lineno)
				          : PD_PPROF_LEGACY_NOT_MINE;
				goto done;
			}
			if (period > 0) {
				if (cpuhz > 0) {
					double ghz = (double)cpuhz / 1e9;
					v1 = pd_pprof_f2i((double)v1 * (double)period / ghz);
				}
				v2 = (int64_t)((uint64_t)v2 * (uint64_t)period);
			}
			struct pd_pprof_lb_sample *smp = pd_pprof_lb_sample(&b, err);
			if (!smp) {
				rc = err->code;
				goto done;
			}
			smp->v[0] = v2;
			smp->v[1] = v1;
			if ((rc = pd_pprof_hex_frames(&b, stk, stk_n, 1, 1, l.lineno, err)))
				goto done;
		}
		if ((rc = pd_pprof_lines_next(&l, err)) < 0)
			goto done;
		if (!rc)
			break;
	}
	if ((rc = additional_sections(&b, &l, err)))
		goto done;
	const char *drop =
	    "RecordLockProfileData|(base::)?RecordLockProfileData.*|(base::)?"
	    "SubmitMutexProfileData.*|"
	    "(base::)?SubmitSpinLockProfileData.*|(base::Mutex::)?AwaitCommon.*|"
	    "(base::Mutex::)?Unlock.*|(base::Mutex::)?UnlockSlow.*|(base::Mutex::)?ReaderUnlock.*|"
	    "(base::MutexLock::)?~MutexLock.*|(Mutex::)?AwaitCommon.*|(Mutex::)?Unlock.*|"
	    "(Mutex::)?UnlockSlow.*|(Mutex::)?ReaderUnlock.*|(MutexLock::)?~MutexLock.*|"
	    "(SpinLock::)?Unlock.*|(SpinLock::)?SlowUnlock.*|(SpinLockHolder::)?~SpinLockHolder.*";
	b.drop_frames = pd_pprof_lb_str(&b, drop, strlen(drop));
	rc = pd_pprof_lb_finish(&b, out, err);
done:
	pd_pprof_lb_fini(&b);
	if (rc && rc != PD_PPROF_LEGACY_NOT_MINE)
		pd_err_prefix(err, "contention profile");
	return rc;
}
