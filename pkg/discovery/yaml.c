/* yaml.c: reads a YAML target-group document (file_sd .yml/.yaml files) with
 * libyaml's document loader and converts it into the document tree of
 * discovery_int.h. As Go's yaml.v2 reads into strings, every scalar is a string
 * except the plain null forms ("", ~, null, Null, NULL). Aliases are followed (the
 * tree shares the node); an alias that refers to its own ancestor is cut off by the
 * depth limit. Only the first document of a stream is read, as yaml.v2 does. */
#include "discovery_int.h"

#include <stdlib.h>
#include <string.h>

#include <yaml.h>

struct yconv {
	struct pd_sd_doc *doc;
	yaml_document_t *y;
	struct pd_sd_node **memo; /* by node index - 1 */
	size_t nnodes;
	struct pd_err *err;
};

static int is_null(const yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;
	size_t len = n->data.scalar.length;
	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	return len == 0 || (len == 1 && v[0] == '~') ||
	       (len == 4 &&
	        (!memcmp(v, "null", 4) || !memcmp(v, "Null", 4) || !memcmp(v, "NULL", 4)));
}

static int nomem(struct yconv *c)
{
	return pd_err_set(c->err, PD_ENOMEM, "%s: document too large to parse", c->doc->prefix);
}

static int convert(struct yconv *c, int idx, int depth, struct pd_sd_node **out)
{
	yaml_node_t *yn = yaml_document_get_node(c->y, idx);
	struct pd_sd_node *n;
	int rc;

	if (!yn || idx < 1 || (size_t)idx > c->nnodes)
		return pd_err_set(c->err, PD_ECORRUPT, "%s: broken YAML document", c->doc->prefix);
	if (c->memo[idx - 1]) {
		*out = c->memo[idx - 1];
		return 0;
	}
	if (depth >= PD_SD_MAX_DEPTH) {
		struct pd_sd_node at = {.pos = yn->start_mark.line + 1,
		                        .col = (uint32_t)yn->start_mark.column + 1};
		return pd_sd_doc_err(c->doc, &at, 0, c->err, PD_EINVAL, "exceeded max depth");
	}
	if (!(n = pd_arena_calloc(c->doc->arena, 1, sizeof(*n))))
		return nomem(c);
	n->pos = yn->start_mark.line + 1;
	n->col = (uint32_t)yn->start_mark.column + 1;
	switch (yn->type) {
	case YAML_SCALAR_NODE:
		if (is_null(yn)) {
			n->kind = PD_SD_NULL;
			n->str = "";
			break;
		}
		n->kind = PD_SD_STRING;
		n->len = yn->data.scalar.length;
		if (!(n->str = pd_arena_strndup(c->doc->arena, (const char *)yn->data.scalar.value,
		                                n->len)))
			return nomem(c);
		break;
	case YAML_SEQUENCE_NODE: {
		size_t cnt = (size_t)(yn->data.sequence.items.top - yn->data.sequence.items.start);
		n->kind = PD_SD_LIST;
		n->n = cnt;
		if (cnt && !(n->kids = pd_arena_calloc(c->doc->arena, cnt, sizeof(*n->kids))))
			return nomem(c);
		for (size_t i = 0; i < cnt; i++)
			if ((rc = convert(c, yn->data.sequence.items.start[i], depth + 1,
			                  &n->kids[i])))
				return rc;
		break;
	}
	case YAML_MAPPING_NODE: {
		size_t cnt = (size_t)(yn->data.mapping.pairs.top - yn->data.mapping.pairs.start);
		n->kind = PD_SD_MAP;
		n->n = cnt;
		if (cnt && !(n->kids = pd_arena_calloc(c->doc->arena, 2 * cnt, sizeof(*n->kids))))
			return nomem(c);
		for (size_t i = 0; i < cnt; i++) {
			yaml_node_pair_t *pr = &yn->data.mapping.pairs.start[i];
			if ((rc = convert(c, pr->key, depth + 1, &n->kids[2 * i])) ||
			    (rc = convert(c, pr->value, depth + 1, &n->kids[2 * i + 1])))
				return rc;
		}
		break;
	}
	default:
		return pd_err_set(c->err, PD_ECORRUPT, "%s: broken YAML document", c->doc->prefix);
	}
	c->memo[idx - 1] = n;
	*out = n;
	return 0;
}

/* "prefix:line:col: problem (context at line:col)" from libyaml's error fields. */
static int yaml_error(struct pd_sd_doc *doc, yaml_parser_t *p, struct pd_err *err)
{
	struct pd_sd_node at = {.pos = p->problem_mark.line + 1,
	                        .col = (uint32_t)p->problem_mark.column + 1};
	const char *problem = p->problem ? p->problem : "unknown error";

	switch (p->error) {
	case YAML_MEMORY_ERROR:
		return pd_err_set(err, PD_ENOMEM, "%s: out of memory parsing YAML", doc->prefix);
	case YAML_READER_ERROR:
		if (p->problem_value != -1)
			return pd_sd_doc_err(doc, NULL, p->problem_offset, err, PD_EINVAL,
			                     "%s: #%X", problem, (unsigned)p->problem_value);
		return pd_sd_doc_err(doc, NULL, p->problem_offset, err, PD_EINVAL, "%s", problem);
	default:
		if (p->context)
			return pd_sd_doc_err(doc, &at, 0, err, PD_EINVAL, "%s (%s at %zu:%zu)",
			                     problem, p->context, p->context_mark.line + 1,
			                     p->context_mark.column + 1);
		return pd_sd_doc_err(doc, &at, 0, err, PD_EINVAL, "%s", problem);
	}
}

int pd_discovery_yaml_nesting(const char *text, size_t len, size_t max_depth, size_t *line,
                              size_t *col)
{
	yaml_parser_t p;
	yaml_event_t ev;
	size_t depth = 0;
	int rc = 0, done = 0;

	if (!yaml_parser_initialize(&p))
		return 0; /* the loader fails the same way, and says so */
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	while (!done && yaml_parser_parse(&p, &ev)) {
		switch (ev.type) {
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (++depth > max_depth) {
				*line = ev.start_mark.line + 1;
				*col = ev.start_mark.column + 1;
				rc = PD_EINVAL;
				done = 1;
			}
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_DOCUMENT_END_EVENT:
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	return rc;
}

int pd_sd_yaml_parse(struct pd_sd_doc *doc, struct pd_err *err)
{
	yaml_parser_t parser;
	yaml_document_t ydoc;
	struct yconv c = {.doc = doc, .y = &ydoc, .err = err};
	yaml_node_t *root;
	int rc = 0;

	doc->root = NULL;
	size_t line, col;
	if (pd_discovery_yaml_nesting(doc->text, doc->len, PD_SD_MAX_DEPTH, &line, &col)) {
		struct pd_sd_node at = {.pos = line, .col = (uint32_t)col};
		return pd_sd_doc_err(doc, &at, 0, err, PD_EINVAL, "exceeded max depth");
	}
	if (!yaml_parser_initialize(&parser))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)doc->text, doc->len);
	if (!yaml_parser_load(&parser, &ydoc)) {
		rc = yaml_error(doc, &parser, err);
		yaml_parser_delete(&parser);
		return rc;
	}
	root = yaml_document_get_root_node(&ydoc);
	if (root) {
		c.nnodes = (size_t)(ydoc.nodes.top - ydoc.nodes.start);
		if (!(c.memo = calloc(c.nnodes, sizeof(*c.memo)))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto out;
		}
		rc = convert(&c, 1, 0, &doc->root);
	}
out:
	free(c.memo);
	yaml_document_delete(&ydoc);
	yaml_parser_delete(&parser);
	if (rc)
		doc->root = NULL;
	return rc;
}
