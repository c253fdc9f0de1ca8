/* querier_int.h: what the files of Pyroscope's query API (querier*.c) share: a
 * call's context and its Connect errors, profile type ids, the series a
 * selector picks with service_name derived for scraped series, merges, and the
 * handlers of each method. docs/grafana.md describes the API. */
#ifndef PROFD_QUERIER_INT_H
#define PROFD_QUERIER_INT_H

#include <protobuf-c/protobuf-c.h>

#include "api_int.h"
#include "querier.pb-c.h"
#include "types.pb-c.h"

/* The flame graph nodes of a response at most, when a request asks for none or
 * more (--query.max-flamegraph-nodes). */
#define QUERIER_DEFAULT_MAX_NODES 16384
/* Points of one SelectSeries series at most, as Prometheus limits a range query. */
#define QUERIER_MAX_POINTS 11000

/* One call: its request, the encoding of both bodies, and its answer. */
struct qcall {
	struct api_req *r;
	struct api_resp *w;
	int json; /* the request came as JSON: so goes the answer */
	int failed;
	int64_t sym_deadline; /* one symbolization deadline for the call (api_symbolize) */
};

/* Answers a Connect error: code ("invalid_argument", ...) with the HTTP status
 * Connect gives it. Only the first error of a call is kept. */
void querier_fail(struct qcall *c, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A store error: invalid_argument for PD_EINVAL, resource_exhausted for a
 * limit, internal otherwise (the message logged, not sent). */
void querier_fail_store(struct qcall *c, const char *what, int rc, const struct pd_err *err);
/* Answers m, in the request's encoding. */
void querier_reply(struct qcall *c, const ProtobufCMessage *m);

/* ---- profile types (querier_select.c) ------------------------------------- */

/* Pyroscope's name of a profd profile type (__name__): profile -> process_cpu,
 * heap and allocs -> memory, goroutine -> goroutines, others as they are. */
const char *querier_pyro_name(const char *name);

/* A profile type id, `<name>:<sample type>:<unit>:<period type>:<period unit>`,
 * split; the strings point into buf. */
struct qtype {
	const char *name, *type, *unit, *period_type, *period_unit;
	char buf[512];
};
/* Splits id; -1 after answering invalid_argument naming what. */
int querier_type_parse(struct qcall *c, const char *what, const char *id, struct qtype *t);

/* ---- series (querier_select.c) --------------------------------------------- */

/* A series picked by a selector, with its labels as the query API shows them:
 * the stored ones, plus service_name (the job's value) when the series has none. */
struct qseries {
	struct pd_storage_label *labels; /* sorted; owned by the set */
	size_t nlabels;
	const struct pd_storage_series *s;  /* with timestamps (totals 0) */
	const struct pd_storage_totals *t;  /* with totals (totals 1) */
};

struct qset {
	struct qseries *v;
	size_t n;
	void *res[2]; /* the store's results the series point into */
	int totals;
	struct pd_arena *arena;
};

/* The series that selector (PromQL syntax; "" or "{}": every series) picks in
 * [mint, maxt], of profile type t's name when t is not NULL, with timestamps
 * (totals 0) or totals (1). A matcher on service_name applies to the derived
 * value too; a __profile_type__ matcher (= only) is read as t. -1 after
 * answering. set is the caller's (querier_set_fini). */
int querier_select(struct qcall *c, const char *selector, const struct qtype *t, int64_t mint,
		   int64_t maxt, int totals, struct qset *set);
void querier_set_fini(struct qset *set);
/* The value of label name of s, "" when it has none. */
const char *querier_label(const struct qseries *s, const char *name);

/* [start, end] of a select call: end 0 is now, start 0 an hour before end; end
 * before start or a range past --query.max-range is invalid_argument. -1 after
 * answering. */
int querier_range(struct qcall *c, int64_t start, int64_t end, int64_t *mint, int64_t *maxt);

/* A valid UTF-8 copy of s (bytes that start no valid sequence become '?') in the
 * arena, or s itself when it is valid: proto3 strings must be UTF-8. */
const char *querier_utf8(struct pd_arena *a, const char *s);

/* ---- merges (querier_flame.c) ------------------------------------------------- */

/* The merge of the profiles of type t that selector picks in [mint, maxt]
 * (within the merge limits, symbolized): *out, the caller's, is NULL when there
 * are none. -1 after answering. */
int querier_merge(struct qcall *c, const char *selector, const struct qtype *t, int64_t mint,
		  int64_t maxt, struct pd_pprof_profile **out);
/* The index of t's sample type (and unit, when t has one) in p, or -1. */
int querier_type_index(const struct pd_pprof_profile *p, const struct qtype *t);

/* ---- methods ----------------------------------------------------------------- */

void querier_profile_types(struct qcall *c, const ProtobufCMessage *req);
void querier_label_names(struct qcall *c, const ProtobufCMessage *req);
void querier_label_values(struct qcall *c, const ProtobufCMessage *req);
void querier_series(struct qcall *c, const ProtobufCMessage *req);
void querier_select_merge_stacktraces(struct qcall *c, const ProtobufCMessage *req);
void querier_select_merge_profile(struct qcall *c, const ProtobufCMessage *req);
void querier_diff(struct qcall *c, const ProtobufCMessage *req);
void querier_select_series(struct qcall *c, const ProtobufCMessage *req);

#endif
