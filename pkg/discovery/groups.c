/* groups.c: target groups: reading the file_sd / http_sd document format into
 * struct pd_target_group with Prometheus's rules (targetgroup.Group's JSON and YAML
 * unmarshalling, model.LabelSet's name check), and the helpers the providers use
 * to compare and label groups. */
#include "discovery_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- messages ----------------------------------------------------------------- */

void pd_sd_line_col(const char *text, size_t len, size_t off, size_t *line, size_t *col)
{
	size_t l = 1, c = 1;
	if (off > len)
		off = len;
	for (size_t i = 0; i < off; i++) {
		unsigned char ch = (unsigned char)text[i];
		if (ch == '\n') {
			l++;
			c = 1;
		} else if ((ch & 0xc0) != 0x80) {
			c++;
		}
	}
	*line = l;
	*col = c;
}

int pd_sd_doc_err(const struct pd_sd_doc *doc, const struct pd_sd_node *node, size_t off,
                  struct pd_err *err, int code, const char *fmt, ...)
{
	char msg[PD_ERR_MSG_MAX];
	size_t line, col;
	va_list ap;

	if (!err)
		return code;
	if (node && node->col) {
		line = node->pos;
		col = node->col;
	} else {
		pd_sd_line_col(doc->text, doc->len, node ? node->pos : off, &line, &col);
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return pd_err_set(err, code, "%s:%zu:%zu: %s", doc->prefix, line, col, msg);
}

void pd_sd_quote(char *dst, size_t cap, const char *s, size_t len)
{
	struct pd_buf b;
	size_t n = len > 64 ? 64 : len;
	pd_buf_init(&b, cap > 8 ? cap - 4 : cap);
	if (pd_labels_quote(&b, s, n) || b.len + (len > n ? 3 : 0) + 1 > cap) {
		snprintf(dst, cap, "\"...\"");
	} else {
		memcpy(dst, b.data, b.len);
		dst[b.len] = '\0';
		if (len > n)
			strcat(dst, "...");
	}
	pd_buf_fini(&b);
}

static const char *kind_name(enum pd_sd_kind k)
{
	switch (k) {
	case PD_SD_NULL:
		return "null";
	case PD_SD_BOOL:
		return "boolean";
	case PD_SD_NUMBER:
		return "number";
	case PD_SD_STRING:
		return "string";
	case PD_SD_LIST:
		return "list";
	case PD_SD_MAP:
		return "map";
	}
	return "value";
}

/* ---- groups ------------------------------------------------------------------- */

void pd_target_group_free(struct pd_target_group *g, size_t n)
{
	if (!g)
		return;
	for (size_t i = 0; i < n; i++) {
		free(g[i].source);
		for (size_t j = 0; j < g[i].ntargets; j++)
			pd_labels_destroy(g[i].targets[j]);
		free(g[i].targets);
		pd_labels_destroy(g[i].labels);
	}
	free(g);
}

int pd_sd_groups_equal(const struct pd_target_group *a, size_t na, const struct pd_target_group *b,
                       size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++) {
		if (strcmp(a[i].source, b[i].source) || a[i].ntargets != b[i].ntargets ||
		    !pd_labels_equal(a[i].labels, b[i].labels))
			return 0;
		for (size_t j = 0; j < a[i].ntargets; j++)
			if (!pd_labels_equal(a[i].targets[j], b[i].targets[j]))
				return 0;
	}
	return 1;
}

int pd_sd_groups_set_label(struct pd_target_group *g, size_t n, const char *name, const char *value,
                           struct pd_err *err)
{
	struct pd_labels_builder *b = pd_labels_builder_create(NULL);
	int rc = 0;
	if (!b)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < n && !rc; i++) {
		struct pd_labels *ls = NULL;
		if ((rc = pd_labels_builder_reset(b, g[i].labels)) ||
		    (pd_labels_builder_set(b, name, value), /* finish reports its error */
		     (rc = pd_labels_builder_finish(b, &ls, err)))) {
			if (rc == PD_ENOMEM)
				pd_err_set(err, rc, "out of memory");
			break;
		}
		pd_labels_destroy(g[i].labels);
		g[i].labels = ls;
	}
	pd_labels_builder_destroy(b);
	return rc;
}

/* ---- reading the document format ----------------------------------------------- */

struct walk {
	struct pd_sd_doc *doc;
	struct pd_labels_builder *b;
	struct pd_err *err;
	size_t total; /* groups plus targets so far */
};

static int key_is(const struct walk *w, const struct pd_sd_node *k, const char *name)
{
	if (k->kind != PD_SD_STRING || k->len != strlen(name))
		return 0;
	/* Go's encoding/json matches field names case-insensitively; yaml.v2 does not */
	return w->doc->yaml ? !strcmp(k->str, name) : !strcasecmp(k->str, name);
}

/* A string value: NULL reads as "" (as Go decodes null into a string); anything
 * but a string is an error. */
static int string_value(struct walk *w, const struct pd_sd_node *n, const char *what,
                        const char **out)
{
	if (n->kind == PD_SD_NULL) {
		*out = "";
		return 0;
	}
	if (n->kind != PD_SD_STRING)
		return pd_sd_doc_err(w->doc, n, 0, w->err, PD_EINVAL, "%s must be a string, got %s",
		                     what, kind_name(n->kind));
	if (memchr(n->str, '\0', n->len))
		return pd_sd_doc_err(w->doc, n, 0, w->err, PD_EINVAL, "%s contains a NUL character",
		                     what);
	*out = n->str;
	return 0;
}

static int builder_err(struct walk *w, const struct pd_sd_node *at, int rc)
{
	if (rc == PD_ENOMEM)
		return pd_err_set(w->err, rc, "out of memory");
	/* the builder's message names the label; add the position */
	char msg[PD_ERR_MSG_MAX];
	snprintf(msg, sizeof(msg), "%s", w->err ? w->err->msg : "");
	return pd_sd_doc_err(w->doc, at, 0, w->err, rc, "%s", msg);
}

static int read_targets(struct walk *w, const struct pd_sd_node *n, struct pd_target_group *g)
{
	int rc;
	if (n->kind == PD_SD_NULL)
		return 0;
	if (n->kind != PD_SD_LIST)
		return pd_sd_doc_err(w->doc, n, 0, w->err, PD_EINVAL,
		                     "\"targets\" must be a list of strings, got %s",
		                     kind_name(n->kind));
	if (n->n > PD_DISCOVERY_MAX_TARGETS - w->total)
		return pd_sd_doc_err(
		    w->doc, n, 0, w->err, PD_ETOOBIG,
		    "too many targets: the limit is %d groups plus targets per document",
		    PD_DISCOVERY_MAX_TARGETS);
	w->total += n->n;
	if (n->n && !(g->targets = calloc(n->n, sizeof(*g->targets))))
		return pd_err_set(w->err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < n->n; i++) {
		const char *v;
		if ((rc = string_value(w, n->kids[i], "target", &v)))
			return rc;
		/* the builder's error is sticky: finish reports what add found */
		pd_labels_builder_reset(w->b, NULL);
		pd_labels_builder_add(w->b, "__address__", v);
		if ((rc = pd_labels_builder_finish(w->b, &g->targets[i], w->err)))
			return builder_err(w, n->kids[i], rc);
		g->ntargets++;
	}
	return 0;
}

static int read_labels(struct walk *w, const struct pd_sd_node *n, struct pd_target_group *g)
{
	int rc;
	pd_labels_builder_reset(w->b, NULL);
	if (n && n->kind != PD_SD_NULL) {
		if (n->kind != PD_SD_MAP)
			return pd_sd_doc_err(w->doc, n, 0, w->err, PD_EINVAL,
			                     "\"labels\" must be a map of label names to strings, "
			                     "got %s",
			                     kind_name(n->kind));
		if (w->doc->yaml && n->n > PD_LABELS_DEFAULT_MAX_LABELS)
			return pd_sd_doc_err(w->doc, n, 0, w->err, PD_EINVAL,
			                     "too many labels: %zu, limit is %d", n->n,
			                     PD_LABELS_DEFAULT_MAX_LABELS);
		for (size_t i = 0; i < n->n; i++) {
			const struct pd_sd_node *k = n->kids[2 * i], *v = n->kids[2 * i + 1];
			const char *name, *value;
			char q[96];
			if (k->kind != PD_SD_STRING && k->kind != PD_SD_NULL)
				return pd_sd_doc_err(w->doc, k, 0, w->err, PD_EINVAL,
				                     "label name must be a string, got %s",
				                     kind_name(k->kind));
			name = k->kind == PD_SD_NULL ? "" : k->str;
			if (!pd_labels_valid_name(name) || strlen(name) != k->len) {
				pd_sd_quote(q, sizeof(q), name, k->len);
				return pd_sd_doc_err(w->doc, k, 0, w->err, PD_EINVAL,
				                     "%s is not a valid label name", q);
			}
			if (w->doc->yaml) {
				/* yaml.UnmarshalStrict rejects a key given twice; Go's JSON
				 * decoder keeps the last value */
				for (size_t j = 0; j < i; j++) {
					if (!strcmp(n->kids[2 * j]->str, name)) {
						pd_sd_quote(q, sizeof(q), name, k->len);
						return pd_sd_doc_err(w->doc, k, 0, w->err,
						                     PD_EINVAL,
						                     "label %s is defined more "
						                     "than once",
						                     q);
					}
				}
			}
			snprintf(q, sizeof(q), "value of label \"%s\"", name);
			if ((rc = string_value(w, v, q, &value)))
				return rc;
			pd_labels_builder_set(w->b, name, value); /* finish reports errors */
		}
	}
	if ((rc = pd_labels_builder_finish(w->b, &g->labels, w->err)))
		return builder_err(w, n, rc);
	return 0;
}

static int read_group(struct walk *w, const struct pd_sd_node *n, struct pd_target_group *g)
{
	int seen_targets = 0, seen_labels = 0, rc;

	if (n->kind == PD_SD_NULL)
		return pd_sd_doc_err(w->doc, n, 0, w->err, PD_EINVAL,
		                     "nil target group item found");
	if (n->kind != PD_SD_MAP)
		return pd_sd_doc_err(w->doc, n, 0, w->err, PD_EINVAL,
		                     "target group must be a map, got %s", kind_name(n->kind));
	/* in document order, so that the first fault is the one reported, as Go's
	 * decoders report it; a key given twice in JSON is read twice, the last wins */
	for (size_t i = 0; i < n->n; i++) {
		const struct pd_sd_node *k = n->kids[2 * i], *v = n->kids[2 * i + 1];
		int is_targets = key_is(w, k, "targets");
		char q[96];
		if (!is_targets && !key_is(w, k, "labels")) {
			if (k->kind == PD_SD_STRING)
				pd_sd_quote(q, sizeof(q), k->str, k->len);
			else
				snprintf(q, sizeof(q), "of type %s", kind_name(k->kind));
			return pd_sd_doc_err(w->doc, k, 0, w->err, PD_EINVAL,
			                     "unknown field %s in target group (expected "
			                     "\"targets\" or \"labels\")",
			                     q);
		}
		if ((is_targets ? seen_targets : seen_labels) && w->doc->yaml)
			return pd_sd_doc_err(w->doc, k, 0, w->err, PD_EINVAL,
			                     "field \"%s\" is defined more than once", k->str);
		if (is_targets) {
			for (size_t j = 0; j < g->ntargets; j++)
				pd_labels_destroy(g->targets[j]);
			free(g->targets);
			g->targets = NULL;
			w->total -= g->ntargets;
			g->ntargets = 0;
			seen_targets = 1;
			rc = read_targets(w, v, g);
		} else {
			pd_labels_destroy(g->labels);
			g->labels = NULL;
			seen_labels = 1;
			rc = read_labels(w, v, g);
		}
		if (rc)
			return rc;
	}
	return seen_labels ? 0 : read_labels(w, NULL, g);
}

/* Counts groups and targets before anything is built, so that a document past the
 * limit (YAML aliases can multiply a small one) costs nothing more to refuse. */
static int check_size(struct walk *w, const struct pd_sd_node *root)
{
	size_t total = root->n;
	for (size_t i = 0; i < root->n; i++) {
		const struct pd_sd_node *g = root->kids[i];
		if (g->kind != PD_SD_MAP)
			continue;
		for (size_t j = 0; j < g->n; j++) {
			const struct pd_sd_node *v = g->kids[2 * j + 1];
			if (!key_is(w, g->kids[2 * j], "targets") || v->kind != PD_SD_LIST)
				continue;
			if (v->n > PD_DISCOVERY_MAX_TARGETS - total)
				return pd_sd_doc_err(
				    w->doc, v, 0, w->err, PD_ETOOBIG,
				    "too many targets: the limit is %d groups plus "
				    "targets per document",
				    PD_DISCOVERY_MAX_TARGETS);
			total += v->n;
		}
	}
	return 0;
}

int pd_discovery_parse_groups(const char *text, size_t len, int yaml, const char *source_prefix,
                              struct pd_target_group **out, size_t *n, struct pd_err *err)
{
	struct pd_sd_doc doc = {.text = text, .len = len, .prefix = source_prefix, .yaml = yaml};
	struct walk w = {.doc = &doc, .err = err};
	struct pd_target_group *g = NULL;
	size_t ng = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (!source_prefix)
		doc.prefix = source_prefix = "";
	/* the tree costs a few times the text (the target "a:1", in a list costs 56
	 * bytes for its 6); bound it */
	doc.arena = pd_arena_create(len < (SIZE_MAX - (1u << 20)) / 32 ? 32 * len + (1u << 20) : 0);
	w.b = pd_labels_builder_create(NULL);
	if (!doc.arena || !w.b) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}
	rc = yaml ? pd_sd_yaml_parse(&doc, err) : pd_sd_json_parse(&doc, err);
	if (rc)
		goto fail;
	if (!doc.root || doc.root->kind == PD_SD_NULL)
		goto done;
	if (doc.root->kind != PD_SD_LIST) {
		rc = pd_sd_doc_err(&doc, doc.root, 0, err, PD_EINVAL,
		                   "expected a list of target groups, got %s",
		                   kind_name(doc.root->kind));
		goto fail;
	}
	if (doc.root->n > PD_DISCOVERY_MAX_TARGETS) {
		rc = pd_sd_doc_err(&doc, doc.root, 0, err, PD_ETOOBIG,
		                   "too many target groups: the limit is %d per document",
		                   PD_DISCOVERY_MAX_TARGETS);
		goto fail;
	}
	if ((rc = check_size(&w, doc.root)))
		goto fail;
	w.total = doc.root->n;
	if (doc.root->n && !(g = calloc(doc.root->n, sizeof(*g)))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < doc.root->n; i++) {
		int len_src;
		ng = i + 1;
		if ((rc = read_group(&w, doc.root->kids[i], &g[i])))
			goto fail;
		len_src = snprintf(NULL, 0, "%s:%zu", source_prefix, i);
		if (!(g[i].source = malloc((size_t)len_src + 1))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto fail;
		}
		snprintf(g[i].source, (size_t)len_src + 1, "%s:%zu", source_prefix, i);
	}
done:
	*out = g;
	*n = ng;
	pd_labels_builder_destroy(w.b);
	pd_arena_destroy(doc.arena);
	return 0;
fail:
	pd_target_group_free(g, ng);
	pd_labels_builder_destroy(w.b);
	pd_arena_destroy(doc.arena);
	return rc;
}
