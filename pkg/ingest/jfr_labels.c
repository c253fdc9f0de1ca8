/* jfr_labels.c: the `labels` part that pyroscope-java sends beside a JFR
 * recording: a LabelsSnapshot (pkg/ingest/proto/jfr_labels.proto) mapping each
 * contextId that events carry to label pairs, names and values given as ids into
 * a string table. Decoded with protobuf-c under a memory cap; looked up by id.
 * Where an id appears twice, the later entry wins, as with protobuf maps. */
#include <stdlib.h>
#include <string.h>

#include "jfr_int.h"
#include "jfr_labels.pb-c.h"

struct ctx {
	int64_t *keys, *values;
	size_t n;
};

struct jfr_labels {
	Profd__Ingest__Jfr__LabelsSnapshot *msg;
	struct ctx *ctx;
	struct pd_u64map ctx_ids, str_ids; /* id + 1 -> index */
	int has_max_ctx, has_max_str;      /* the id UINT64_MAX, kept apart */
	uint32_t max_ctx, max_str;
};

struct cap_alloc {
	size_t used, max;
};

static void *cap_alloc(void *data, size_t n)
{
	struct cap_alloc *a = data;
	if (n > a->max - a->used)
		return NULL;
	a->used += n;
	return malloc(n);
}

static void cap_free(void *data, void *p)
{
	(void)data;
	free(p);
}

static int put(struct pd_u64map *m, int *has_max, uint32_t *max, int64_t id, uint32_t v)
{
	if ((uint64_t)id == UINT64_MAX) {
		*has_max = 1;
		*max = v;
		return 0;
	}
	return pd_u64map_put(m, (uint64_t)id + 1, v);
}

static int get(const struct pd_u64map *m, int has_max, uint32_t max, uint64_t id, uint32_t *v)
{
	if (id == UINT64_MAX) {
		*v = max;
		return has_max;
	}
	return pd_u64map_get(m, id + 1, v);
}

int jfr_labels_decode(const uint8_t *buf, size_t len, size_t max_memory, struct jfr_labels **out,
                      struct pd_err *err)
{
	*out = NULL;
	struct jfr_labels *l = calloc(1, sizeof(*l));
	if (!l)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	pd_u64map_init(&l->ctx_ids);
	pd_u64map_init(&l->str_ids);
	if (len == 0) {
		*out = l;
		return 0;
	}
	struct cap_alloc ca = {.max = max_memory};
	ProtobufCAllocator a = {.alloc = cap_alloc, .free = cap_free, .allocator_data = &ca};
	l->msg = profd__ingest__jfr__labels_snapshot__unpack(&a, len, buf);
	if (!l->msg) {
		int big = ca.used + 4096 > ca.max;
		jfr_labels_destroy(l);
		if (big)
			return pd_err_set(
			    err, PD_ETOOBIG,
			    "the labels part needs more than %zu bytes of memory (%s)", max_memory,
			    pd_ingest_limit_flag(PD_INGEST_LIMIT_DECOMPRESSED));
		return pd_err_set(err, PD_EINVAL,
		                  "the labels part is not a LabelsSnapshot protobuf message");
	}
	Profd__Ingest__Jfr__LabelsSnapshot *m = l->msg;
	if (m->n_contexts && !(l->ctx = calloc(m->n_contexts, sizeof(*l->ctx))))
		goto oom;
	for (size_t i = 0; i < m->n_contexts; i++) {
		const Profd__Ingest__Jfr__ContextEntry *e = m->contexts[i];
		struct ctx *c = &l->ctx[i];
		size_t n = e->value ? e->value->n_labels : 0;
		if (n) {
			c->keys = malloc(n * sizeof(*c->keys));
			c->values = malloc(n * sizeof(*c->values));
			if (!c->keys || !c->values)
				goto oom;
			for (size_t j = 0; j < n; j++) {
				c->keys[j] = e->value->labels[j]->key;
				c->values[j] = e->value->labels[j]->value;
			}
		}
		c->n = n;
		if (put(&l->ctx_ids, &l->has_max_ctx, &l->max_ctx, e->key, (uint32_t)i))
			goto oom;
	}
	for (size_t i = 0; i < m->n_strings; i++)
		if (put(&l->str_ids, &l->has_max_str, &l->max_str, m->strings[i]->key, (uint32_t)i))
			goto oom;
	*out = l;
	return 0;
oom:
	jfr_labels_destroy(l);
	return pd_err_set(err, PD_ENOMEM, "out of memory");
}

void jfr_labels_destroy(struct jfr_labels *l)
{
	if (!l)
		return;
	if (l->ctx) {
		for (size_t i = 0; i < l->msg->n_contexts; i++) {
			free(l->ctx[i].keys);
			free(l->ctx[i].values);
		}
		free(l->ctx);
	}
	if (l->msg)
		profd__ingest__jfr__labels_snapshot__free_unpacked(l->msg, NULL);
	pd_u64map_fini(&l->ctx_ids);
	pd_u64map_fini(&l->str_ids);
	free(l);
}

int jfr_labels_context(const struct jfr_labels *l, uint64_t id, const int64_t **keys,
                       const int64_t **values, size_t *n)
{
	uint32_t i;
	if (!l->msg || !get(&l->ctx_ids, l->has_max_ctx, l->max_ctx, id, &i))
		return 0;
	*keys = l->ctx[i].keys;
	*values = l->ctx[i].values;
	*n = l->ctx[i].n;
	return 1;
}

int jfr_labels_string(const struct jfr_labels *l, int64_t id, const char **s, size_t *len)
{
	uint32_t i;
	if (!l->msg || !get(&l->str_ids, l->has_max_str, l->max_str, (uint64_t)id, &i))
		return 0;
	*s = (const char *)l->msg->strings[i]->value.data;
	*len = l->msg->strings[i]->value.len;
	return 1;
}
