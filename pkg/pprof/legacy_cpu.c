/* legacy_cpu.c: gperftools' binary CPU profile (CPUPROFILE=file), and Java's
 * binary CPU profile of the same layout. Hand-written: no Debian library reads
 * this format (libgoogle-perftools writes it only; pprof, in Go and Perl, reads it).
 *
 * Layout, in words of 32 or 64 bits of the writer's byte order (the header tells
 * which, as no other header fits):
 *   header:  0, 3, 0 (C++) or 1 (Java), sampling period in microseconds, 0
 *   sample:  count, depth N, N program counters, leaf first
 *   end:     0, 1, 0
 * then text: /proc/self/maps of the process (C++), or Java's symbol lines. A
 * sample's values are [count, count * period in ns]; frames after the leaf are
 * return addresses, moved back by one onto their call as pprof does. */
#include <string.h>

#include "legacy_int.h"

struct words {
	const uint8_t *p;
	size_t n;
	int w64, big;
	int bad; /* sticky: ran past the end */
};

static uint64_t word(struct words *w)
{
	size_t k = w->w64 ? 8 : 4;
	if (w->n < k) {
		w->bad = 1;
		w->n = 0;
		return 0;
	}
	uint64_t v = 0;
	for (size_t i = 0; i < k; i++)
		v |= (uint64_t)w->p[w->big ? k - 1 - i : i] << (8 * i);
	w->p += k;
	w->n -= k;
	return v;
}

/* Drops frame 1 of sample s. */
static void drop_second(struct pd_pprof_lb *b, struct pd_pprof_lb_sample *s)
{
	uint32_t *f = b->stk + s->off;
	memmove(f + 1, f + 2, (s->n - 2) * sizeof(*f));
	s->n--;
}

/* Strips up to two frames that nearly every sample has second from the leaf: the
 * signal handler's own frames (pprof's rule: all but one in 32 samples). */
static int strip_handler_frames(struct pd_pprof_lb *b, struct pd_err *err)
{
	size_t margin = b->ns / 32;
	for (int iter = 0; iter < 2; iter++) {
		struct pd_u64map cnt;
		pd_u64map_init(&cnt);
		uint64_t found = 0;
		int have = 0;
		for (size_t i = 0; i < b->ns; i++) {
			struct pd_pprof_lb_sample *s = &b->s[i];
			if (s->n <= 1)
				continue;
			uint64_t key = (uint64_t)b->stk[s->off + 1] + 1;
			uint32_t c = 0;
			pd_u64map_get(&cnt, key, &c);
			if (pd_u64map_put(&cnt, key, c + 1)) {
				pd_u64map_fini(&cnt);
				return pd_err_set(err, PD_ENOMEM, "out of memory");
			}
		}
		/* the location (and so address) that passes the threshold */
		for (size_t i = 0; i < b->ns; i++) {
			struct pd_pprof_lb_sample *s = &b->s[i];
			if (s->n <= 1)
				continue;
			uint32_t c = 0;
			pd_u64map_get(&cnt, (uint64_t)b->stk[s->off + 1] + 1, &c);
			if (c >= b->ns - margin) {
				found = b->stk[s->off + 1];
				have = 1;
				break;
			}
		}
		pd_u64map_fini(&cnt);
		if (!have)
			continue;
		for (size_t i = 0; i < b->ns; i++) {
			struct pd_pprof_lb_sample *s = &b->s[i];
			if (s->n > 1 && b->stk[s->off + 1] == found)
				drop_second(b, s);
		}
	}
	return 0;
}

/* The leaf may come twice, once from the signal context and once, less one,
 * from unwinding: keep the first. */
static void drop_duplicate_leaf(struct pd_pprof_lb *b)
{
	for (size_t i = 0; i < b->ns; i++) {
		struct pd_pprof_lb_sample *s = &b->s[i];
		if (s->n > 1 && b->loc[b->stk[s->off]].addr == b->loc[b->stk[s->off + 1]].addr + 1)
			drop_second(b, s);
	}
}

static int parse_samples(struct pd_pprof_lb *b, struct words *w, int adjust, size_t hdr,
                         struct pd_err *err)
{
	size_t wsz = w->w64 ? 8 : 4;
	size_t total = w->n + hdr;
	while (w->n > 0) {
		size_t at = total - w->n;
		uint64_t count = word(w), depth = word(w);
		if (w->bad || depth > w->n / 4)
			return pd_err_set(
			    err, PD_ECORRUPT,
			    "byte %zu: a sample of %llu frames runs past the end of the "
			    "profile",
			    at, (unsigned long long)depth);
		if (count == 0 && depth == 1 && w->n >= wsz) {
			struct words peek = *w;
			if (word(&peek) == 0) {
				*w = peek;
				return 0;
			}
		}
		if (depth > b->max_depth)
			return pd_err_set(
			    err, PD_ETOOBIG,
			    "byte %zu: a stack of %llu frames, more than the limit of %zu "
			    "(--legacy-max-stack-depth)",
			    at, (unsigned long long)depth, b->max_depth);
		struct pd_pprof_lb_sample *s = pd_pprof_lb_sample(b, err);
		if (!s)
			return err->code;
		for (uint64_t i = 0; i < depth; i++) {
			uint64_t a = word(w);
			if (w->bad)
				return pd_err_set(
				    err, PD_ECORRUPT,
				    "byte %zu: a sample of %llu frames runs past the end "
				    "of the profile",
				    at, (unsigned long long)depth);
			if (adjust && i > 0)
				a--;
			int rc = pd_pprof_lb_frame(b, a, err);
			if (rc) {
				pd_err_prefix(err, "byte %zu", at);
				return rc;
			}
		}
		s = &b->s[b->ns - 1];
		s->v[0] = (int64_t)count;
		s->v[1] = (int64_t)((uint64_t)count * (uint64_t)b->period);
	}
	return 0;
}

int pd_pprof_legacy_cpu(struct pd_pprof_profile **out, const uint8_t *buf, size_t len,
                        const struct pd_pprof_decode_opts *opts, struct pd_err *err)
{
	static const int forms[4][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}}; /* w64, big */
	for (int f = 0; f < 4; f++) {
		struct words w = {buf, len, forms[f][0], forms[f][1], 0};
		uint64_t h[5];
		for (int i = 0; i < 5; i++)
			h[i] = word(&w);
		if (w.bad || h[0] != 0 || h[1] != 3 || h[2] > 1 || h[3] == 0 || h[4] != 0)
			continue;
		int java = h[2] == 1;
		struct pd_pprof_lb b;
		pd_pprof_lb_init(&b, opts);
		b.period = (int64_t)(h[3] * 1000);
		int rc;
		if ((rc = pd_pprof_lb_period_type(&b, "cpu", "nanoseconds", err)) ||
		    (rc = pd_pprof_lb_type(&b, "samples", "count", err)) ||
		    (rc = pd_pprof_lb_type(&b, "cpu", "nanoseconds", err)) ||
		    (rc = parse_samples(&b, &w, !java, len - w.n, err)))
			goto done;
		if (java) {
			rc = pd_pprof_legacy_java_symbols(&b, (const char *)w.p, w.n, err);
		} else {
			if ((rc = strip_handler_frames(&b, err)) ||
			    (rc = pd_pprof_lb_maps(&b, (const char *)w.p, w.n, err)))
				goto done;
			drop_duplicate_leaf(&b);
		}
		if (!rc) {
			const char *drop =
			    "ProfileData::Add|ProfileData::prof_handler|"
			    "CpuProfiler::prof_handler|__pthread_sighandler|__restore";
			b.drop_frames = pd_pprof_lb_str(&b, drop, strlen(drop));
			if (b.drop_frames < 0)
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			else
				rc = pd_pprof_lb_finish(&b, out, err);
		}
	done:
		pd_pprof_lb_fini(&b);
		if (rc)
			pd_err_prefix(err, "%s CPU profile (%d-bit, %s-endian)",
			              java ? "Java" : "gperftools", forms[f][0] ? 64 : 32,
			              forms[f][1] ? "big" : "little");
		return rc;
	}
	return PD_PPROF_LEGACY_NOT_MINE;
}
