/* memstore.c: an in-memory struct pd_promql_source: series kept in a list with
 * their samples sorted by time, for tests and for tools that load samples from a
 * file. Selection is a scan of every series; it is not meant for large stores. */
#include <stdlib.h>
#include <string.h>

#include "promql_int.h"

struct memseries {
	struct pd_labels *ls;
	int64_t *t;
	double *v;
	size_t n, cap;
};

struct pd_promql_memstore {
	struct memseries *s;
	size_t n, cap;
};

struct pd_promql_memstore *pd_promql_memstore_create(void)
{
	return calloc(1, sizeof(struct pd_promql_memstore));
}

void pd_promql_memstore_destroy(struct pd_promql_memstore *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		pd_labels_destroy(m->s[i].ls);
		free(m->s[i].t);
		free(m->s[i].v);
	}
	free(m->s);
	free(m);
}

int pd_promql_memstore_add(struct pd_promql_memstore *m, const struct pd_labels *ls, int64_t t,
                           double v)
{
	struct memseries *s = NULL;
	for (size_t i = 0; i < m->n; i++)
		if (pd_labels_equal(m->s[i].ls, ls)) {
			s = &m->s[i];
			break;
		}
	if (!s) {
		if (m->n == m->cap) {
			size_t nc = m->cap ? m->cap * 2 : 8;
			struct memseries *ns = realloc(m->s, nc * sizeof *ns);
			if (!ns)
				return PD_ENOMEM;
			m->s = ns;
			m->cap = nc;
		}
		s = &m->s[m->n];
		memset(s, 0, sizeof *s);
		if (!(s->ls = pd_labels_dup(ls)))
			return PD_ENOMEM;
		m->n++;
	}
	size_t i = s->n;
	while (i > 0 && s->t[i - 1] > t)
		i--;
	if (i > 0 && s->t[i - 1] == t) {
		s->v[i - 1] = v;
		return 0;
	}
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 16;
		int64_t *nt = realloc(s->t, nc * sizeof *nt);
		if (!nt)
			return PD_ENOMEM;
		s->t = nt;
		double *nv = realloc(s->v, nc * sizeof *nv);
		if (!nv)
			return PD_ENOMEM;
		s->v = nv;
		s->cap = nc;
	}
	memmove(s->t + i + 1, s->t + i, (s->n - i) * sizeof *s->t);
	memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof *s->v);
	s->t[i] = t;
	s->v[i] = v;
	s->n++;
	return 0;
}

static int mem_select(void *ctx, struct pd_labels_matcher *const *ms, size_t n, int64_t mint,
                      int64_t maxt, pd_promql_series_fn fn, void *arg, struct pd_err *err)
{
	struct pd_promql_memstore *m = ctx;
	for (size_t i = 0; i < m->n; i++) {
		struct memseries *s = &m->s[i];
		if (!pd_labels_matches(s->ls, ms, n))
			continue;
		size_t a = 0, b;
		while (a < s->n && s->t[a] < mint)
			a++;
		b = a;
		while (b < s->n && s->t[b] <= maxt)
			b++;
		if (a == b)
			continue;
		int rc = fn(arg, s->ls, s->t + a, s->v + a, b - a);
		if (rc)
			return rc;
	}
	return 0;
}

struct pd_promql_source pd_promql_memstore_source(struct pd_promql_memstore *m)
{
	return (struct pd_promql_source){.select = mem_select, .ctx = m};
}
