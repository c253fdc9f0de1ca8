/* legacy_java.c: Java's legacy text profiles ("--- heapz 1 ---" and
 * "--- contentionz 1 ---" with "format = java") and the symbol lines that follow
 * the samples of those and of Java's binary CPU profile, read as `go tool pprof`
 * reads them. Hand-written: no Debian library reads these formats.
 *
 *   --- heapz 1 ---            the profile's kind
 *   format = java              attributes: resolution (the unit of the size),
 *   resolution = bytes         sampling period, ms since reset
 *     BYTES COUNT @ 0x1 0x2    samples (size first, unlike the C++ forms)
 *   0x1 java.util.X.y (X.java:12)   symbols: function, file and line
 *
 * Heap samples are unsampled for a 512 KiB Poisson rate, contention samples are
 * multiplied by the sampling period; locations lose their addresses. */
#include <string.h>

#include "legacy_int.h"

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static int is_word(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '_';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* ([\w ]+)=([\w ]+) anywhere: the attribute and its value, trimmed. */
static int attribute(const char *s, size_t n, const char **k, size_t *kn, const char **v,
                     size_t *vn)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '=' || i == 0 || !(is_word(s[i - 1]) || s[i - 1] == ' '))
			continue;
		if (i + 1 >= n || !(is_word(s[i + 1]) || s[i + 1] == ' '))
			continue;
		size_t a = i;
		while (a > 0 && (is_word(s[a - 1]) || s[a - 1] == ' '))
			a--;
		size_t e = i + 1;
		while (e < n && (is_word(s[e]) || s[e] == ' '))
			e++;
		*k = s + a;
		*kn = i - a;
		*v = s + i + 1;
		*vn = e - i - 1;
		pd_pprof_trim(k, kn);
		pd_pprof_trim(v, vn);
		return 1;
	}
	return 0;
}

static int span_is(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && memcmp(s, w, n) == 0;
}

/* " *(\d+) +(\d+) +@ +([ x0-9a-f]*)" anywhere. */
static int java_sample(const char *s, size_t n, const char **a, size_t *an, const char **b2,
                       size_t *bn, const char **stk, size_t *stk_n)
{
	for (size_t st = 0; st < n; st++) {
		size_t i = st;
		while (i < n && s[i] == ' ')
			i++;
		size_t d = i;
		while (i < n && is_digit(s[i]))
			i++;
		if (i == d)
			continue;
		size_t de = i, sp = i;
		while (i < n && s[i] == ' ')
			i++;
		if (i == sp) {
			continue;
		}
		size_t d2 = i;
		while (i < n && is_digit(s[i]))
			i++;
		if (i == d2)
			continue;
		size_t d2e = i;
		sp = i;
		while (i < n && s[i] == ' ')
			i++;
		if (i == sp || i >= n || s[i] != '@')
			continue;
		i++;
		sp = i;
		while (i < n && s[i] == ' ')
			i++;
		if (i == sp)
			continue;
		size_t h = i;
		while (i < n && (s[i] == ' ' || s[i] == 'x' || is_digit(s[i]) ||
		                 (s[i] >= 'a' && s[i] <= 'f')))
			i++;
		*a = s + d;
		*an = de - d;
		*b2 = s + d2;
		*bn = d2e - d2;
		*stk = s + h;
		*stk_n = i - h;
		return 1;
	}
	return 0;
}

int pd_pprof_legacy_java_symbols(struct pd_pprof_lb *b, const char *text, size_t len,
                                 struct pd_err *err)
{
	struct pd_pprof_lines l;
	pd_pprof_lines_init(&l, text, len, b->max_line);
	int rc;
	while ((rc = pd_pprof_lines_next(&l, err)) > 0) {
		const char *s = l.cur;
		size_t n = l.cur_len;
		pd_pprof_trim(&s, &n);
		/* ^\s*0x([[:xdigit:]]+)\s+(.*)\s*$ */
		if (n < 4 || s[0] != '0' || s[1] != 'x')
			continue;
		size_t i = 2;
		uint64_t addr = 0;
		int over = 0;
		while (i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		                 (s[i] >= 'A' && s[i] <= 'F'))) {
			if (addr >> 60)
				over = 1;
			char c = s[i];
			addr = addr << 4 | (uint64_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
			i++;
		}
		if (i == 2 || i >= n || !is_space(s[i]))
			continue;
		if (over)
			return pd_err_set(err, PD_EINVAL, "line %zu: address past 64 bits",
			                  l.lineno);
		while (i < n && is_space(s[i]))
			i++;
		const char *r = s + i;
		size_t rn = n - i;
		uint32_t li = pd_pprof_lb_loc_find(b, addr);
		if (!li)
			continue;
		const char *fn = r, *file = "";
		size_t fnn = rn, filen = 0;
		int64_t lineno = 0;
		int done = 0;
		if (rn && r[rn - 1] == ')') {
			/* function (file:line) */
			size_t e = rn - 1, d = e;
			while (d > 0 && is_digit(r[d - 1]))
				d--;
			size_t c = d;
			if (d < e && c > 0 && r[c - 1] == '-')
				c--;
			if (d < e && c > 0 && r[c - 1] == ':') {
				size_t colon = c - 1;
				for (size_t p = colon; p-- > 1;) {
					if (r[p] == '(' && is_space(r[p - 1]) && colon > p + 1) {
						fn = r;
						fnn = p - 1;
						file = r + p + 1;
						filen = colon - p - 1;
						int64_t v;
						if (pd_pprof_parse_int(r + c, e - c, 0, &v) == 0 &&
						    v > 0)
							lineno = v;
						done = 1;
						break;
					}
				}
			}
			if (!done) {
				/* function (path): the path's base name */
				for (size_t p = e; p-- > 1;) {
					if (r[p] == '(' && is_space(r[p - 1])) {
						fn = r;
						fnn = p - 1;
						const char *path = r + p + 1;
						size_t pn = e - p - 1;
						while (pn > 1 && path[pn - 1] == '/')
							pn--;
						size_t k = pn;
						while (k > 0 && path[k - 1] != '/')
							k--;
						if (pn == 0) {
							file = ".";
							filen = 1;
						} else if (pn == 1 && path[0] == '/') {
							file = "/";
							filen = 1;
						} else {
							file = path + k;
							filen = pn - k;
						}
						done = 1;
						break;
					}
				}
			}
		}
		if (!done && pd_pprof_contains(r, rn, "generated stub/JIT")) {
			fn = "STUB";
			fnn = 4;
		}
		uint32_t fi = 0;
		if ((rc = pd_pprof_lb_function(b, fn, fnn, file, filen, &fi, err)))
			return rc;
		b->loc[li - 1].func = fi + 1;
		b->loc[li - 1].line = lineno;
	}
	if (rc < 0)
		return rc;
	/* named locations lose their address, the others are placed by theirs; then
	 * every address is dropped, as pprof does */
	for (size_t i = 0; i < b->nloc; i++)
		if (b->loc[i].func)
			b->loc[i].addr = 0;
	for (size_t i = 0; i < b->ns; i++)
		for (size_t k = 0; k < b->s[i].n; k++)
			b->loc[b->stk[b->s[i].off + k]].used = 1;
	pd_pprof_lb_place(b);
	for (size_t i = 0; i < b->nloc; i++)
		b->loc[i].addr = 0;
	return 0;
}

int pd_pprof_legacy_java(struct pd_pprof_profile **out, const char *buf, size_t len,
                         const struct pd_pprof_decode_opts *opts, struct pd_err *err)
{
	struct pd_pprof_lines l;
	pd_pprof_lines_init(&l, buf, len, pd_pprof_legacy_max_line(opts));
	int rc = pd_pprof_lines_next(&l, err);
	if (rc <= 0 || buf[l.pos - 1] != '\n')
		return PD_PPROF_LEGACY_NOT_MINE;
	const char *h = l.cur;
	size_t hn = l.cur_len;
	pd_pprof_trim(&h, &hn);
	int heap;
	if (span_is(h, hn, "--- heapz 1 ---"))
		heap = 1;
	else if (span_is(h, hn, "--- contentionz 1 ---"))
		heap = 0;
	else
		return PD_PPROF_LEGACY_NOT_MINE;
	struct pd_pprof_lb b;
	pd_pprof_lb_init(&b, opts);
	b.has_pt = 1; /* an empty period type, as pprof's */
	int in_samples = 0;
	size_t rest = l.pos;
	for (;;) {
		size_t at = l.pos;
		if ((rc = pd_pprof_lines_next(&l, err)) <= 0)
			break;
		/* a last line without its \n is no attribute nor sample: symbols */
		if (l.pos == len && buf[len - 1] != '\n') {
			rest = at;
			break;
		}
		const char *s = l.cur;
		size_t n = l.cur_len;
		pd_pprof_trim(&s, &n);
		rest = l.pos;
		if (!n)
			continue;
		if (!in_samples) {
			const char *k, *v;
			size_t kn, vn;
			if (attribute(s, n, &k, &kn, &v, &vn)) {
				int64_t x;
				if (span_is(k, kn, "format")) {
					if (!span_is(v, vn, "java")) {
						rc = PD_PPROF_LEGACY_NOT_MINE;
						goto done;
					}
				} else if (span_is(k, kn, "resolution")) {
					char unit[64];
					size_t un = vn < sizeof(unit) - 1 ? vn : sizeof(unit) - 1;
					memcpy(unit, v, un);
					unit[un] = 0;
					b.ntypes = 0;
					if ((rc = pd_pprof_lb_type(
					         &b, heap ? "inuse_objects" : "contentions",
					         "count", err)) ||
					    (rc = pd_pprof_lb_type(
					         &b, heap ? "inuse_space" : "delay", unit, err)))
						goto done;
				} else if (!heap && span_is(k, kn, "sampling period")) {
					if ((rc = pd_pprof_lb_period_type(&b, "contentions",
					                                  "count", err)))
						goto done;
					if (pd_pprof_parse_int(v, vn, 1, &b.period)) {
						rc = pd_err_set(
						    err, PD_EINVAL,
						    "line %zu: sampling period is no number",
						    l.lineno);
						goto done;
					}
				} else if (!heap && span_is(k, kn, "ms since reset")) {
					if (pd_pprof_parse_int(v, vn, 1, &x)) {
						rc = pd_err_set(
						    err, PD_EINVAL,
						    "line %zu: ms since reset is no number",
						    l.lineno);
						goto done;
					}
					b.duration = (int64_t)((uint64_t)x * 1000000u);
				} else {
					rc = PD_PPROF_LEGACY_NOT_MINE;
					goto done;
				}
				continue;
			}
			in_samples = 1;
		}
		const char *a, *c, *stk;
		size_t an, cn, stk_n;
		if (!java_sample(s, n, &a, &an, &c, &cn, &stk, &stk_n)) {
			rest = at;
			break;
		}
		struct pd_pprof_lb_sample *smp = pd_pprof_lb_sample(&b, err);
		if (!smp) {
			rc = err->code;
			goto done;
		}
		int64_t v0, v1;
		if (pd_pprof_parse_int(c, cn, 1, &v0) || pd_pprof_parse_int(a, an, 1, &v1)) {
			rc =
			    pd_err_set(err, PD_EINVAL, "line %zu: a number past 64 bits", l.lineno);
			goto done;
		}
		if (heap) {
			if (v0 == 0) {
				rc = pd_err_set(
				    err, PD_EINVAL,
				    "line %zu: the sample's count (its second number) is 0",
				    l.lineno);
				goto done;
			}
			smp->has_bytes = 1;
			smp->bytes = v0 == -1 ? (int64_t)(0 - (uint64_t)v1) : v1 / v0;
			pd_pprof_scale_heap(&v0, &v1, 524288);
		} else if (b.period) {
			v0 = (int64_t)((uint64_t)v0 * (uint64_t)b.period);
			v1 = (int64_t)((uint64_t)v1 * (uint64_t)b.period);
		}
		smp->v[0] = v0;
		smp->v[1] = v1;
		if ((rc = pd_pprof_hex_frames(&b, stk, stk_n, 0, 0, l.lineno, err)))
			goto done;
	}
	if (rc < 0)
		goto done;
	if ((rc = pd_pprof_legacy_java_symbols(&b, buf + rest, len - rest, err)))
		goto done;
	if (heap) {
		const char *drop =
		    "calloc|cfree|malloc|free|memalign|do_memalign|(__)?posix_memalign|"
		    "pvalloc|valloc|realloc|tcmalloc::.*|runtime\\..*|allocate|"
		    "operator new(\\[\\])?";
		b.drop_frames = pd_pprof_lb_str(&b, drop, strlen(drop));
	} else {
		const char *drop = "RecordLockProfileData|(base::)?RecordLockProfileData.*";
		b.drop_frames = pd_pprof_lb_str(&b, drop, strlen(drop));
	}
	rc = pd_pprof_lb_finish(&b, out, err);
done:
	pd_pprof_lb_fini(&b);
	if (rc && rc != PD_PPROF_LEGACY_NOT_MINE)
		pd_err_prefix(err, "Java %s profile", heap ? "heap" : "contention");
	return rc;
}
