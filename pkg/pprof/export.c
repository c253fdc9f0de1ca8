/* export.c: a profile in the formats other flame graph tools read. Folded stacks
 * are what Brendan Gregg's flamegraph.pl takes (one "root;caller;callee value"
 * line per distinct stack); speedscope JSON is speedscope's file format (a table
 * of frames shared by one "sampled" profile per sample type). Both are built on
 * the flame graph's call tree, so frames are named and inlined frames expanded
 * exactly as in the top table and the flame graph, and identical stacks are
 * summed. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pprof_int.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

/* Appends name with ';' turned into ':' and line breaks and other control bytes
 * into ' ', so that a folded line stays one line of ';'-separated frames. */
static int folded_name(struct pd_buf *b, const char *name, size_t n)
{
	if (pd_buf_reserve(b, n))
		return PD_ETOOBIG;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (c == ';')
			c = ':';
		else if ((unsigned char)c < 0x20 || c == 0x7f)
			c = ' ';
		int rc = pd_buf_append(b, &c, 1);
		if (rc)
			return rc;
	}
	return 0;
}

typedef int (*emit_fn)(void *arg, const struct pd_pprof_flame_node *const *path, size_t n,
                       int64_t value);

/* Walks the tree depth first, calling emit for every node with a non-zero self
 * with the path from the outermost caller to it (the root left out). */
static int walk_tree(const struct pd_pprof_flame *f, emit_fn emit, void *arg)
{
	struct frame {
		const struct pd_pprof_flame_node *n;
		size_t next;
	};
	size_t cap = 64, depth = 0;
	struct frame *st = malloc(cap * sizeof(*st));
	const struct pd_pprof_flame_node **path = malloc(cap * sizeof(*path));
	int rc = 0;
	if (!st || !path) {
		rc = PD_ENOMEM;
		goto out;
	}
	st[depth++] = (struct frame){&f->root, 0};
	while (depth) {
		struct frame *top = &st[depth - 1];
		if (top->next == 0 && depth > 1) {
			path[depth - 2] = top->n;
			if (top->n->self != 0 && (rc = emit(arg, path, depth - 1, top->n->self)))
				goto out;
		}
		if (top->next == top->n->nchildren) {
			depth--;
			continue;
		}
		const struct pd_pprof_flame_node *c = &top->n->children[top->next++];
		if (depth == cap) {
			struct frame *ns = realloc(st, cap * 2 * sizeof(*st));
			if (!ns) {
				rc = PD_ENOMEM;
				goto out;
			}
			st = ns;
			const struct pd_pprof_flame_node **np =
			    realloc(path, cap * 2 * sizeof(*path));
			if (!np) {
				rc = PD_ENOMEM;
				goto out;
			}
			path = np;
			cap *= 2;
		}
		st[depth++] = (struct frame){c, 0};
	}
out:
	free(st);
	free(path);
	return rc;
}

static int emit_folded(void *arg, const struct pd_pprof_flame_node *const *path, size_t n,
                       int64_t value)
{
	struct pd_buf *b = arg;
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		if (i)
			rc = pd_buf_append(b, ";", 1);
		if (!rc)
			rc = folded_name(b, path[i]->name, path[i]->name_len);
	}
	if (!rc)
		rc = pd_buf_printf(b, " %" PRId64 "\n", value);
	return rc;
}

static int out_err(struct pd_err *err, int rc, const char *what)
{
	if (rc == PD_ETOOBIG)
		return pd_err_set(err, rc, "the %s output is larger than its limit", what);
	return pd_err_set(err, rc, "writing the %s output failed: %s", what, pd_strerror(rc));
}

int pd_pprof_folded(const struct pd_pprof_profile *p, int sample_index, struct pd_buf *b,
                    struct pd_err *err)
{
	struct pd_pprof_flame *f = NULL;
	int rc = pd_pprof_flame(p, sample_index, &f, err);
	if (rc)
		return rc;
	rc = walk_tree(f, emit_folded, b);
	pd_pprof_flame_destroy(f);
	return rc ? out_err(err, rc, "folded stacks") : 0;
}

/* ---- speedscope ------------------------------------------------------------ */

/* Frame names interned to indices of shared.frames, in first-seen order; the
 * names are copies owned by the table. */
struct frames {
	const char **names;
	size_t *lens; /* names may hold NUL bytes */
	size_t n, cap;
	size_t *slots; /* index + 1, 0 empty; open addressing */
	size_t nslots;
};

static int frames_intern(struct frames *t, const char *name, size_t len, size_t *out)
{
	if ((t->n + 1) * 2 > t->nslots) {
		size_t ns = t->nslots ? t->nslots * 2 : 1024;
		size_t *slots = calloc(ns, sizeof(*slots));
		if (!slots)
			return PD_ENOMEM;
		for (size_t i = 0; i < t->nslots; i++) {
			if (!t->slots[i])
				continue;
			size_t k = t->slots[i] - 1;
			size_t j = pd_hash_bytes(t->names[k], t->lens[k], 0) & (ns - 1);
			while (slots[j])
				j = (j + 1) & (ns - 1);
			slots[j] = t->slots[i];
		}
		free(t->slots);
		t->slots = slots;
		t->nslots = ns;
	}
	size_t j = pd_hash_bytes(name, len, 0) & (t->nslots - 1);
	while (t->slots[j]) {
		size_t k = t->slots[j] - 1;
		if (t->lens[k] == len && memcmp(t->names[k], name, len) == 0) {
			*out = t->slots[j] - 1;
			return 0;
		}
		j = (j + 1) & (t->nslots - 1);
	}
	if (t->n == t->cap) {
		size_t c = t->cap ? t->cap * 2 : 256;
		const char **nn = realloc(t->names, c * sizeof(*nn));
		if (!nn)
			return PD_ENOMEM;
		t->names = nn;
		size_t *nl = realloc(t->lens, c * sizeof(*nl));
		if (!nl)
			return PD_ENOMEM;
		t->lens = nl;
		t->cap = c;
	}
	char *copy = malloc(len + 1);
	if (!copy)
		return PD_ENOMEM;
	memcpy(copy, name, len);
	copy[len] = '\0';
	t->names[t->n] = copy;
	t->lens[t->n] = len;
	t->slots[j] = t->n + 1;
	*out = t->n++;
	return 0;
}

/* One sample type's profile, written aside while the frame table grows, so that
 * it can follow the table in the output. */
struct sampled {
	struct frames *fr;
	struct pd_buf samples; /* "[0,1,2],[0,3]" */
	struct pd_buf weights; /* "10,20" */
	int64_t sum;
	size_t count;
};

static int emit_sampled(void *arg, const struct pd_pprof_flame_node *const *path, size_t n,
                        int64_t value)
{
	struct sampled *s = arg;
	int rc = pd_buf_append(&s->samples, s->count ? ",[" : "[", s->count ? 2 : 1);
	for (size_t i = 0; i < n && !rc; i++) {
		size_t idx;
		if ((rc = frames_intern(s->fr, path[i]->name, path[i]->name_len, &idx)))
			break;
		rc = pd_buf_printf(&s->samples, i ? ",%zu" : "%zu", idx);
	}
	if (!rc)
		rc = pd_buf_append(&s->samples, "]", 1);
	if (!rc)
		rc = pd_buf_printf(&s->weights, s->count ? ",%" PRId64 : "%" PRId64, value);
	s->sum = pd_add64(s->sum, value);
	s->count++;
	return rc;
}

const char *pd_pprof_speedscope_unit(const char *unit)
{
	static const struct {
		const char *name, *unit;
	} direct[] = {{"bytes", "bytes"},
	              {"byte", "bytes"},
	              {"b", "bytes"},
	              {"nanoseconds", "nanoseconds"},
	              {"nanosecond", "nanoseconds"},
	              {"ns", "nanoseconds"},
	              {"microseconds", "microseconds"},
	              {"microsecond", "microseconds"},
	              {"us", "microseconds"},
	              {"\xc2\xb5s", "microseconds"},
	              {"\xce\xbcs", "microseconds"},
	              {"milliseconds", "milliseconds"},
	              {"millisecond", "milliseconds"},
	              {"ms", "milliseconds"},
	              {"seconds", "seconds"},
	              {"second", "seconds"},
	              {"s", "seconds"}};
	for (size_t i = 0; i < sizeof(direct) / sizeof(direct[0]); i++)
		if (strcasecmp(unit, direct[i].name) == 0)
			return direct[i].unit;
	return "none";
}

static int json_field(struct pd_buf *b, const char *key, const char *val)
{
	int rc = pd_buf_printf(b, ",\"%s\":", key);
	return rc ? rc : pd_buf_json_string(b, val);
}

int pd_pprof_speedscope(const struct pd_pprof_profile *p, int sample_index, int all_types,
                        const char *name, struct pd_buf *b, struct pd_err *err)
{
	size_t ntypes = p->pb->n_sample_type;
	struct frames fr = {0};
	struct sampled *ss = NULL;
	size_t first = 0, last = ntypes;
	int rc = 0;

	if (ntypes == 0)
		return pd_err_set(err, PD_EINVAL, "the profile has no sample types");
	if (sample_index < 0 || (size_t)sample_index >= ntypes)
		return pd_err_set(err, PD_EINVAL,
		                  "sample index %d out of range (profile has %zu sample types)",
		                  sample_index, ntypes);
	if (!all_types) {
		first = (size_t)sample_index;
		last = first + 1;
	}
	for (size_t si = 0; si < p->pb->n_sample; si++)
		for (size_t t = first; t < last; t++)
			if (p->pb->sample[si]->value[t] < 0)
				return pd_err_set(
				    err, PD_EINVAL,
				    "sample %zu has a negative %s value (%" PRId64
				    "), which speedscope cannot show: its weights are amounts, not "
				    "changes",
				    si, pd_pprof_sample_type(p, t), p->pb->sample[si]->value[t]);
	ss = calloc(last - first, sizeof(*ss));
	if (!ss)
		return pd_err_set(err, PD_ENOMEM, "out of memory writing speedscope JSON");
	for (size_t t = first; t < last; t++) {
		pd_buf_init(&ss[t - first].samples, b->max);
		pd_buf_init(&ss[t - first].weights, b->max);
		ss[t - first].fr = &fr;
	}
	for (size_t t = first; t < last; t++) {
		struct pd_pprof_flame *f = NULL;
		if ((rc = pd_pprof_flame(p, (int)t, &f, err)))
			goto out;
		rc = walk_tree(f, emit_sampled, &ss[t - first]);
		pd_pprof_flame_destroy(f);
		if (rc)
			goto write_fail;
	}

	rc = pd_buf_append(
	    b, "{\"$schema\":\"" SPEEDSCOPE_SCHEMA "\",\"shared\":{\"frames\":[",
	    sizeof("{\"$schema\":\"" SPEEDSCOPE_SCHEMA "\",\"shared\":{\"frames\":[") - 1);
	for (size_t i = 0; i < fr.n && !rc; i++) {
		rc = pd_buf_append(b, i ? ",{\"name\":" : "{\"name\":", i ? 9 : 8);
		if (!rc)
			rc = pd_buf_json_stringn(b, fr.names[i], fr.lens[i]);
		if (!rc)
			rc = pd_buf_append(b, "}", 1);
	}
	if (!rc)
		rc = pd_buf_append(b, "]},\"profiles\":[", 15);
	for (size_t t = first; t < last && !rc; t++) {
		struct sampled *s = &ss[t - first];
		const char *unit = pd_pprof_sample_unit(p, t);
		rc =
		    pd_buf_append(b, t > first ? ",{\"type\":\"sampled\"" : "{\"type\":\"sampled\"",
		                  t > first ? 18 : 17);
		int64_t ti = p->pb->sample_type[t]->type;
		if (!rc)
			rc = pd_buf_append(b, ",\"name\":", 8);
		if (!rc)
			rc = pd_buf_json_stringn(b, pd_pprof_str(p, ti), pd_pprof_str_len(p, ti));
		if (!rc)
			rc = json_field(b, "unit", pd_pprof_speedscope_unit(unit));
		if (!rc)
			rc = pd_buf_printf(
			    b, ",\"startValue\":0,\"endValue\":%" PRId64 ",\"samples\":[", s->sum);
		if (!rc)
			rc = pd_buf_append(b, s->samples.data, s->samples.len);
		if (!rc)
			rc = pd_buf_append(b, "],\"weights\":[", 13);
		if (!rc)
			rc = pd_buf_append(b, s->weights.data, s->weights.len);
		if (!rc)
			rc = pd_buf_append(b, "]}", 2);
	}
	if (!rc)
		rc = pd_buf_printf(b, "],\"activeProfileIndex\":%d", all_types ? sample_index : 0);
	if (!rc)
		rc = json_field(b, "name", name ? name : "profile");
	if (!rc)
		rc = json_field(b, "exporter", "profd");
	if (!rc)
		rc = pd_buf_append(b, "}", 1);
write_fail:
	if (rc)
		rc = out_err(err, rc, "speedscope");
out:
	for (size_t t = 0; t < last - first; t++) {
		pd_buf_fini(&ss[t].samples);
		pd_buf_fini(&ss[t].weights);
	}
	free(ss);
	for (size_t i = 0; i < fr.n; i++)
		free((char *)fr.names[i]);
	free(fr.names);
	free(fr.lens);
	free(fr.slots);
	return rc;
}
