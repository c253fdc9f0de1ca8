/* batch.c: the profiles one request turns into, and the limits that bound it. */
#include <stdlib.h>
#include <string.h>

#include "ingest_int.h"

const char *pd_ingest_limit_reason(int limit)
{
	switch (limit) {
	case PD_INGEST_LIMIT_DECOMPRESSED:
		return "decompressed_size";
	case PD_INGEST_LIMIT_RATIO:
		return "gzip_ratio";
	case PD_INGEST_LIMIT_SAMPLES:
		return "samples";
	case PD_INGEST_LIMIT_STACK_DEPTH:
		return "stack_depth";
	case PD_INGEST_LIMIT_LABELS:
		return "labels";
	case PD_INGEST_LIMIT_LABEL_NAME_LEN:
		return "label_name_length";
	case PD_INGEST_LIMIT_LABEL_VALUE_LEN:
		return "label_value_length";
	case PD_INGEST_LIMIT_SYMBOL_LEN:
		return "symbol_length";
	case PD_INGEST_LIMIT_PROFILES:
		return "profiles";
	case PD_INGEST_LIMIT_JSON_DEPTH:
		return "json_depth";
	case PD_INGEST_LIMIT_JSON_SIZE:
		return "json_size";
	case PD_INGEST_LIMIT_REQUEST_MEMORY:
		return "request_memory";
	default:
		return "none";
	}
}

const char *pd_ingest_limit_flag(int limit)
{
	switch (limit) {
	case PD_INGEST_LIMIT_DECOMPRESSED:
		return "--storage.tsdb.max-profile-decoded-size";
	case PD_INGEST_LIMIT_RATIO:
		return "--storage.tsdb.max-profile-gzip-ratio";
	case PD_INGEST_LIMIT_SAMPLES:
		return "--storage.tsdb.max-profile-samples";
	case PD_INGEST_LIMIT_STACK_DEPTH:
		return "--ingest.max-stack-depth";
	case PD_INGEST_LIMIT_LABELS:
		return "--ingest.max-labels-per-series";
	case PD_INGEST_LIMIT_LABEL_NAME_LEN:
		return "--ingest.max-label-name-length";
	case PD_INGEST_LIMIT_LABEL_VALUE_LEN:
		return "--ingest.max-label-value-length";
	case PD_INGEST_LIMIT_SYMBOL_LEN:
		return "--ingest.max-symbol-length";
	case PD_INGEST_LIMIT_PROFILES:
		return "--ingest.max-profiles-per-request";
	case PD_INGEST_LIMIT_JSON_DEPTH:
		return "--ingest.max-json-depth";
	case PD_INGEST_LIMIT_JSON_SIZE:
		return "--ingest.max-json-size";
	case PD_INGEST_LIMIT_REQUEST_MEMORY:
		return "--ingest.max-request-memory";
	default:
		return "";
	}
}

struct pd_ingest_limits pd_ingest_limits_resolve(const struct pd_ingest_limits *lim)
{
	struct pd_ingest_limits l = {0};
	if (lim)
		l = *lim;
#define DEF(f, v)                                                                                  \
	if (!l.f)                                                                                  \
		l.f = v;
	DEF(max_decompressed, PD_INGEST_DEFAULT_MAX_DECOMPRESSED)
	DEF(max_ratio, PD_INGEST_DEFAULT_MAX_RATIO)
	DEF(max_samples, PD_INGEST_DEFAULT_MAX_SAMPLES)
	DEF(max_stack_depth, PD_INGEST_DEFAULT_MAX_STACK_DEPTH)
	DEF(max_labels, PD_INGEST_DEFAULT_MAX_LABELS)
	DEF(max_label_name_len, PD_INGEST_DEFAULT_MAX_LABEL_NAME_LEN)
	DEF(max_label_value_len, PD_INGEST_DEFAULT_MAX_LABEL_VALUE_LEN)
	DEF(max_symbol_len, PD_INGEST_DEFAULT_MAX_SYMBOL_LEN)
	DEF(max_profiles, PD_INGEST_DEFAULT_MAX_PROFILES)
	DEF(max_json_depth, PD_INGEST_DEFAULT_MAX_JSON_DEPTH)
	DEF(max_json_size, PD_INGEST_DEFAULT_MAX_JSON_SIZE)
	DEF(max_request_memory, PD_INGEST_DEFAULT_MAX_REQUEST_MEMORY)
	DEF(max_decoded_memory, PD_PPROF_STORE_MAX_MEMORY)
	DEF(max_sample_labels, PD_PPROF_STORE_MAX_SAMPLE_LABELS)
#undef DEF
	return l;
}

int pd_ingest_batch_add(struct pd_ingest_batch *b, const struct pd_ingest_limits *lim,
			struct pd_labels *labels, uint8_t *pprof, size_t len,
			struct pd_pprof_profile *decoded, int64_t t_ms, struct pd_err *err)
{
	struct pd_ingest_limits l = pd_ingest_limits_resolve(lim);
	int rc = 0;
	if (b->n >= l.max_profiles) {
		b->limit_hit = PD_INGEST_LIMIT_PROFILES;
		rc = pd_err_set(err, PD_ETOOBIG,
				"the request makes more than %zu profiles (%s)", l.max_profiles,
				pd_ingest_limit_flag(PD_INGEST_LIMIT_PROFILES));
		goto fail;
	}
	/* a decoded profile takes a few times its protobuf's bytes */
	size_t charge = len + (decoded ? 4 * len : 0) + 256;
	if (charge > l.max_request_memory || b->memory > l.max_request_memory - charge) {
		b->limit_hit = PD_INGEST_LIMIT_REQUEST_MEMORY;
		rc = pd_err_set(err, PD_ETOOBIG,
				"the request's profiles take more than %zu bytes of memory (%s)",
				l.max_request_memory,
				pd_ingest_limit_flag(PD_INGEST_LIMIT_REQUEST_MEMORY));
		goto fail;
	}
	b->memory += charge;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 8;
		struct pd_ingest_profile *v = realloc(b->v, cap * sizeof(*v));
		if (!v) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto fail;
		}
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n++] = (struct pd_ingest_profile){
	    .labels = labels, .pprof = pprof, .len = len, .decoded = decoded, .t_ms = t_ms};
	return 0;
fail:
	pd_labels_destroy(labels);
	free(pprof);
	pd_pprof_destroy(decoded);
	return rc;
}

void pd_ingest_batch_fini(struct pd_ingest_batch *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++) {
		pd_labels_destroy(b->v[i].labels);
		free(b->v[i].pprof);
		pd_pprof_destroy(b->v[i].decoded);
		free(b->v[i].gz);
	}
	free(b->v);
	memset(b, 0, sizeof(*b));
}

void ingest_batch_keep_gzip(struct pd_ingest_batch *b, const struct pd_ingest_limits *lim,
			    const uint8_t *gz, size_t len)
{
	struct pd_ingest_limits l = pd_ingest_limits_resolve(lim);
	if (b->n == 0 || b->v[b->n - 1].gz || len > l.max_request_memory ||
	    b->memory > l.max_request_memory - len)
		return; /* the WAL compresses the profile itself */
	uint8_t *g = malloc(len ? len : 1);
	if (!g)
		return;
	memcpy(g, gz, len);
	b->v[b->n - 1].gz = g;
	b->v[b->n - 1].gzlen = len;
	b->memory += len;
}
