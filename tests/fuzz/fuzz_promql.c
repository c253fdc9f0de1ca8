/* fuzz_promql.c: libFuzzer target for the promql package: the input is a PromQL
 * query. Any input may be rejected, with a message and an errorType; what parses
 * must print (pd_promql_expr_format) to text that parses again and prints the
 * same, and must evaluate, as an instant and as a range query, over a few small
 * series without crashing, leaking or running unbounded (the samples limit and
 * the step limit are small here). A failed round trip is a bug, and aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/labels.h"
#include "profd/promql.h"
#include "profd/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct pd_promql_memstore *store;

static void pd_fuzz_bug(const char *what, const char *in, size_t len, const char *out,
                        const char *msg)
{
	fprintf(stderr, "fuzz_promql: BUG: %s\n  input:  %.*s\n  output: %s\n  error:  %s\n", what,
	        (int)len, in, out ? out : "", msg ? msg : "");
	abort();
}

static void pd_fuzz_store(void)
{
	static const char *const series[] = {"a{job=\"x\",i=\"1\"}", "a{job=\"x\",i=\"2\"}",
	                                     "a{job=\"y\",i=\"1\"}", "b{job=\"x\",i=\"1\"}",
	                                     "b{job=\"y\"}"};
	struct pd_err err;
	store = pd_promql_memstore_create();
	if (!store)
		abort();
	for (size_t s = 0; s < sizeof series / sizeof series[0]; s++) {
		struct pd_labels *ls;
		if (pd_labels_parse(&ls, series[s], NULL, &err))
			abort();
		for (int64_t t = 0; t < 900; t += 15 + (int64_t)s)
			pd_promql_memstore_add(store, ls, t * 1000 + (int64_t)s,
			                       (double)((t * 7 + (int64_t)s * 13) % 50) - 10);
		pd_labels_destroy(ls);
	}
}

/* The timeout hook, asked per series read, per step and per vector node: a query
 * stops after 5,000 such calls, each a few small vectors' work. */
static int pd_fuzz_stop(void *ctx)
{
	return ++*(int *)ctx > 5000;
}

static int pd_fuzz_format(const struct pd_promql_expr *e, struct pd_buf *b)
{
	b->len = 0;
	int rc = pd_promql_expr_format(e, b);
	if (!rc)
		rc = pd_buf_append(b, "", 1);
	if (!rc)
		b->len--;
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *q = (const char *)data;
	struct pd_promql_expr *e1 = NULL, *e2 = NULL;
	struct pd_promql_err err = {0};
	struct pd_buf b1, b2;

	if (!store)
		pd_fuzz_store();
	pd_buf_init(&b1, (size_t)1 << 20);
	pd_buf_init(&b2, (size_t)1 << 20);
	if (pd_promql_parse(&e1, q, size, NULL, &err)) {
		if (!err.err.msg[0] || err.type == PD_PROMQL_ERR_NONE)
			pd_fuzz_bug("an error without a message or type", q, size, NULL, NULL);
		goto out;
	}
	if (pd_fuzz_format(e1, &b1))
		goto out; /* the printed text outgrew the buffer */
	if (pd_promql_parse(&e2, (const char *)b1.data, b1.len, NULL, &err)) {
		/* printing adds parentheses, which may pass the nesting or length limit */
		if (strstr(err.err.msg, "levels deep") || err.err.code == PD_ETOOBIG)
			goto out;
		pd_fuzz_bug("the printed query does not parse", q, size, (const char *)b1.data,
		            err.err.msg);
	}
	if (pd_promql_expr_type(e1) != pd_promql_expr_type(e2))
		pd_fuzz_bug("the printed query has another type", q, size, (const char *)b1.data,
		            NULL);
	if (pd_fuzz_format(e2, &b2))
		goto out;
	if (b1.len != b2.len || memcmp(b1.data, b2.data, b1.len))
		pd_fuzz_bug("format(parse(format(q))) differs from format(q)", q, size,
		            (const char *)b2.data, NULL);

	struct pd_promql_source src = pd_promql_memstore_source(store);
	int calls = 0;
	struct pd_promql_opts o = {.max_samples = 100000,
	                           .max_points = 30,
	                           .interrupted = pd_fuzz_stop,
	                           .interrupted_ctx = &calls};
	struct pd_promql_result *r = NULL;
	if (!pd_promql_query_instant(&r, &src, q, size, 600000, &o, &err)) {
		b1.len = 0;
		(void)pd_promql_result_json(r, &b1);
		pd_promql_result_destroy(r);
		r = NULL;
	}
	calls = 0;
	if (!pd_promql_query_range(&r, &src, q, size, 0, 900000, 60000, &o, &err)) {
		b1.len = 0;
		(void)pd_promql_result_json(r, &b1);
		pd_promql_result_destroy(r);
	}
out:
	pd_promql_expr_destroy(e1);
	pd_promql_expr_destroy(e2);
	pd_buf_fini(&b1);
	pd_buf_fini(&b2);
	return 0;
}
