/* yaml.c: reading YAML the way Prometheus does (go-yaml v2 in strict mode) on top of
 * libyaml's document API: plain-scalar resolution (YAML 1.1 booleans, Go integer
 * syntax, nulls), `<<` merge keys, duplicate-key detection, go-yaml's type-error
 * words, and a file:line:column position on every error. */
#include "config_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/discovery.h"
#include "profd/labels.h"

/* ---- errors and warnings -------------------------------------------------- */

static int verr(struct cfg_ctx *c, int has_mark, yaml_mark_t m, int code, const char *fmt,
                va_list ap)
{
	char msg[PD_ERR_MSG_MAX];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (!has_mark) {
		if (c->filename)
			return pd_err_set(c->err, code, "%s: %s", c->filename, msg);
		return pd_err_set(c->err, code, "%s", msg);
	}
	if (c->filename)
		return pd_err_set(c->err, code, "%s:%zu:%zu: %s", c->filename, m.line + 1,
		                  m.column + 1, msg);
	return pd_err_set(c->err, code, "%zu:%zu: %s", m.line + 1, m.column + 1, msg);
}

int cy_err(struct cfg_ctx *c, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;
	yaml_mark_t m = {0, 0, 0};
	if (n)
		m = n->start_mark;
	va_start(ap, fmt);
	int rc = verr(c, n != NULL, m, PD_EINVAL, fmt, ap);
	va_end(ap);
	return rc;
}

int cy_err_mark(struct cfg_ctx *c, yaml_mark_t m, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = verr(c, 1, m, PD_EINVAL, fmt, ap);
	va_end(ap);
	return rc;
}

int cy_nomem(struct cfg_ctx *c)
{
	if (pd_arena_exhausted(c->a))
		return pd_err_set(
		    c->err, PD_ETOOBIG, "%s%sconfiguration needs more than %u MiB of memory",
		    c->filename ? c->filename : "", c->filename ? ": " : "", CFG_ARENA_LIMIT >> 20);
	return pd_err_set(c->err, PD_ENOMEM, "out of memory");
}

int cy_warn(struct cfg_ctx *c, const yaml_node_t *n, const char *fmt, ...)
{
	char msg[PD_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct pd_config *cfg = c->cfg;
	if (cfg->nwarnings == c->wcap) {
		size_t ncap = c->wcap ? 2 * c->wcap : 8;
		const char **w = cy_alloc(c, ncap, sizeof(*w));
		if (!w)
			return PD_ENOMEM;
		if (cfg->nwarnings)
			memcpy(w, cfg->warnings, cfg->nwarnings * sizeof(*w));
		cfg->warnings = w;
		c->wcap = ncap;
	}
	char *s;
	if (n && c->filename)
		s = cy_printf(c, "%s:%zu:%zu: %s", c->filename, n->start_mark.line + 1,
		              n->start_mark.column + 1, msg);
	else if (n)
		s = cy_printf(c, "%zu:%zu: %s", n->start_mark.line + 1, n->start_mark.column + 1,
		              msg);
	else
		s = cy_strdup(c, msg);
	if (!s)
		return PD_ENOMEM;
	for (size_t i = 0; i < cfg->nwarnings; i++)
		if (strcmp(cfg->warnings[i], s) == 0)
			return 0; /* a merged mapping is read once per merge */
	cfg->warnings[cfg->nwarnings++] = s;
	return 0;
}

/* ---- arena helpers -------------------------------------------------------- */

void *cy_alloc(struct cfg_ctx *c, size_t n, size_t size)
{
	void *p = pd_arena_calloc(c->a, n ? n : 1, size);
	if (!p)
		cy_nomem(c);
	return p;
}

char *cy_strdup(struct cfg_ctx *c, const char *s)
{
	char *p = pd_arena_strndup(c->a, s, strlen(s));
	if (!p)
		cy_nomem(c);
	return p;
}

char *cy_printf(struct cfg_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		pd_err_set(c->err, PD_EINVAL, "bad format");
		return NULL;
	}
	char *p = pd_arena_alloc(c->a, (size_t)n + 1);
	if (!p) {
		cy_nomem(c);
		return NULL;
	}
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

const char *cy_quote(struct cfg_ctx *c, const char *s)
{
	struct pd_buf b;
	pd_buf_init(&b, 0);
	const char *out = NULL;
	if (pd_labels_quote(&b, s, strlen(s)) == 0)
		out = pd_arena_strndup(c->a, (const char *)b.data, b.len);
	pd_buf_fini(&b);
	return out ? out : "\"\"";
}

const char *cy_path(struct cfg_ctx *c, const char *p)
{
	if (!p || !*p || p[0] == '/' || !c->dir || !*c->dir || strcmp(c->dir, ".") == 0)
		return p;
	while (p[0] == '.' && p[1] == '/')
		p += 2;
	size_t dl = strlen(c->dir);
	const char *out = cy_printf(c, "%s%s%s", c->dir, c->dir[dl - 1] == '/' ? "" : "/", p);
	return out ? out : p;
}

/* ---- loading -------------------------------------------------------------- */

int cy_load(struct cfg_ctx *c, const char *text, size_t len, yaml_document_t *doc,
            yaml_node_t **root)
{
	yaml_parser_t p;
	int rc = 0;

	*root = NULL;
	size_t line, col;
	if (pd_discovery_yaml_nesting(text, len, CFG_MAX_NESTING, &line, &col)) {
		yaml_mark_t m = {.line = line - 1, .column = col - 1};
		return cy_err_mark(c, m, "yaml: collections nested more than %d levels deep",
		                   CFG_MAX_NESTING);
	}
	if (!yaml_parser_initialize(&p))
		return cy_nomem(c);
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	if (!yaml_parser_load(&p, doc)) {
		if (p.error == YAML_MEMORY_ERROR)
			rc = cy_nomem(c);
		else if (p.context)
			rc = cy_err_mark(
			    c, p.problem_mark, "yaml: %s (%s at line %zu, column %zu)",
			    p.problem ? p.problem : "unknown problem parsing YAML content",
			    p.context, p.context_mark.line + 1, p.context_mark.column + 1);
		else
			rc = cy_err_mark(c, p.problem_mark, "yaml: %s",
			                 p.problem ? p.problem
			                           : "unknown problem parsing YAML content");
		yaml_parser_delete(&p);
		return rc;
	}
	yaml_parser_delete(&p);
	*root = yaml_document_get_root_node(doc);
	return 0;
}

/* ---- scalar resolution ---------------------------------------------------- */

static int eq(const char *s, size_t len, const char *lit)
{
	return strlen(lit) == len && memcmp(s, lit, len) == 0;
}

static int in_list(const char *s, size_t len, const char *const *list)
{
	for (; *list; list++)
		if (eq(s, len, *list))
			return 1;
	return 0;
}

static const char *const true_words[] = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                         "True", "TRUE", "on",  "On",  "ON",  NULL};
static const char *const false_words[] = {"n",     "N",     "no",  "No",  "NO",  "false",
                                          "False", "FALSE", "off", "Off", "OFF", NULL};
static const char *const null_words[] = {"~", "null", "Null", "NULL", NULL};
static const char *const float_words[] = {".inf",  ".Inf",  ".INF",  "+.inf", "+.Inf",
                                          "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",
                                          ".NaN",  ".NAN",  NULL};

/* Copies s without underscores into buf (size > len). */
static void strip_underscores(const char *s, size_t len, char *buf)
{
	size_t j = 0;
	for (size_t i = 0; i < len; i++)
		if (s[i] != '_')
			buf[j++] = s[i];
	buf[j] = '\0';
}

/* Go's strconv.ParseInt/ParseUint with base 0: sign, 0x / 0o / 0b / leading-0
 * octal prefixes. Returns 0 and the sign and magnitude, or -1. */
static int parse_goint(const char *s, int *neg, uint64_t *mag)
{
	*neg = 0;
	if (*s == '+' || *s == '-')
		*neg = *s++ == '-';
	unsigned base = 10;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	} else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
		base = 2;
		s += 2;
	} else if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) {
		base = 8;
		s += 2;
	} else if (s[0] == '0' && s[1]) {
		base = 8;
		s += 1;
	}
	if (!*s)
		return -1;
	uint64_t v = 0;
	for (; *s; s++) {
		unsigned d;
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (*s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			return -1;
		if (d >= base)
			return -1;
		if (v > (UINT64_MAX - d) / base)
			return -1;
		v = v * base + d;
	}
	*mag = v;
	return 0;
}

/* go-yaml's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static int yaml_style_float(const char *s)
{
	if (*s == '+' || *s == '-')
		s++;
	if (*s == '.') {
		s++;
		if (!(*s >= '0' && *s <= '9'))
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	} else {
		if (!(*s >= '0' && *s <= '9'))
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
		if (*s == '.') {
			s++;
			while (*s >= '0' && *s <= '9')
				s++;
		}
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

enum cy_tag cy_resolve(const char *s, size_t len)
{
	if (len == 0 || in_list(s, len, null_words))
		return CY_NULL;
	if (in_list(s, len, true_words) || in_list(s, len, false_words))
		return CY_BOOL;
	if (in_list(s, len, float_words))
		return CY_FLOAT;
	if (eq(s, len, "<<"))
		return CY_MERGE;
	char c0 = s[0];
	if (!((c0 >= '0' && c0 <= '9') || c0 == '+' || c0 == '-' || c0 == '.'))
		return CY_STR;
	if (len > 128)
		return CY_STR;
	char buf[130];
	strip_underscores(s, len, buf);
	if (c0 != '.') {
		int neg;
		uint64_t mag;
		if (parse_goint(buf, &neg, &mag) == 0 && (!neg || mag <= (uint64_t)1 << 63))
			return CY_INT;
	}
	if (yaml_style_float(buf))
		return CY_FLOAT;
	return CY_STR;
}

static int is_plain(const yaml_node_t *n)
{
	return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ||
	       n->data.scalar.style == YAML_ANY_SCALAR_STYLE;
}

static const char *sval(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

int cy_is_null(const yaml_node_t *n)
{
	if (!n)
		return 1;
	if (n->type != YAML_SCALAR_NODE || !is_plain(n))
		return 0;
	return cy_resolve(sval(n), n->data.scalar.length) == CY_NULL;
}

/* go-yaml's short tag of a node, for type errors. */
static const char *short_tag(const yaml_node_t *n)
{
	if (n->type == YAML_MAPPING_NODE)
		return "!!map";
	if (n->type == YAML_SEQUENCE_NODE)
		return "!!seq";
	if (!is_plain(n))
		return "!!str";
	switch (cy_resolve(sval(n), n->data.scalar.length)) {
	case CY_NULL:
		return "!!null";
	case CY_BOOL:
		return "!!bool";
	case CY_INT:
		return "!!int";
	case CY_FLOAT:
		return "!!float";
	case CY_MERGE:
		return "!!merge";
	default:
		return "!!str";
	}
}

/* `cannot unmarshal !!str `abc` into bool`, as go-yaml's terror words it. */
static int type_error(struct cfg_ctx *c, const yaml_node_t *n, const char *into)
{
	if (n->type != YAML_SCALAR_NODE)
		return cy_err(c, n, "cannot unmarshal %s into %s", short_tag(n), into);
	const char *v = sval(n);
	size_t len = n->data.scalar.length;
	if (len > 10)
		return cy_err(c, n, "cannot unmarshal %s `%.7s...` into %s", short_tag(n), v, into);
	return cy_err(c, n, "cannot unmarshal %s `%s` into %s", short_tag(n), v, into);
}

/* ---- mappings and sequences ----------------------------------------------- */

struct evec {
	struct cy_entry *e;
	size_t n, cap;
};

static int evec_push(struct cfg_ctx *c, struct evec *v, const struct cy_entry *e)
{
	if (v->n == v->cap) {
		size_t ncap = v->cap ? 2 * v->cap : 16;
		struct cy_entry *ne = realloc(v->e, ncap * sizeof(*ne));
		if (!ne)
			return pd_err_set(c->err, PD_ENOMEM, "out of memory");
		v->e = ne;
		v->cap = ncap;
	}
	v->e[v->n++] = *e;
	return 0;
}

static int cmp_name_order(const void *pa, const void *pb)
{
	const struct cy_entry *a = pa, *b = pb;
	int r = strcmp(a->name, b->name);
	if (r)
		return r;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* Rejects a key given twice among v->e[start..]: the later one is reported. */
static int check_dups(struct cfg_ctx *c, struct evec *v, size_t start, const char *type,
                      int struct_like)
{
	size_t n = v->n - start;
	if (n < 2)
		return 0;
	struct cy_entry *tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return pd_err_set(c->err, PD_ENOMEM, "out of memory");
	memcpy(tmp, v->e + start, n * sizeof(*tmp));
	qsort(tmp, n, sizeof(*tmp), cmp_name_order);
	/* the key given a second time earliest in the file is reported */
	const struct cy_entry *dup = NULL;
	for (size_t i = 1; i < n; i++)
		if (strcmp(tmp[i].name, tmp[i - 1].name) == 0 &&
		    (!dup || tmp[i].order < dup->order))
			dup = &tmp[i];
	int rc = 0;
	if (dup && struct_like)
		rc = cy_err(c, dup->key, "field %s already set in type %s", dup->name, type);
	else if (dup)
		rc = cy_err(c, dup->key, "key %s already set in map", cy_quote(c, dup->name));
	free(tmp);
	return rc;
}

static int has_name(const struct evec *v, size_t start, size_t end, const char *name)
{
	for (size_t i = start; i < end; i++)
		if (strcmp(v->e[i].name, name) == 0)
			return 1;
	return 0;
}

static int collect(struct cfg_ctx *c, yaml_node_t *n, const char *type, int struct_like, int depth,
                   struct evec *v, size_t *order);

/* Appends the entries of the merge source src to v, skipping names present in
 * v->e[start..]. */
static int merge_from(struct cfg_ctx *c, yaml_node_t *src, const char *type, int struct_like,
                      int depth, struct evec *v, size_t start, size_t *order)
{
	struct evec sub = {0};
	int rc = collect(c, src, type, struct_like, depth + 1, &sub, order);
	for (size_t i = 0; rc == 0 && i < sub.n; i++) {
		if (has_name(v, start, v->n, sub.e[i].name))
			continue;
		sub.e[i].merged = 1;
		rc = evec_push(c, v, &sub.e[i]);
	}
	free(sub.e);
	return rc;
}

static int collect(struct cfg_ctx *c, yaml_node_t *n, const char *type, int struct_like, int depth,
                   struct evec *v, size_t *order)
{
	if (depth > CFG_MAX_MERGE_DEPTH)
		return cy_err(c, n,
		              "map merge nested too deeply (is an alias merged into itself?)");
	size_t start = v->n;
	int rc;
	yaml_node_pair_t *pair;

	for (pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = yaml_document_get_node(c->doc, pair->key);
		yaml_node_t *val = yaml_document_get_node(c->doc, pair->value);
		if (!k || !val)
			return cy_err(c, n, "yaml: broken document");
		if (c->budget == 0)
			return cy_err(c, k,
			              "document too complex: more than %d mapping entries "
			              "(aliases included)",
			              CFG_NODE_BUDGET);
		c->budget--;
		if (k->type == YAML_SCALAR_NODE && is_plain(k) &&
		    eq(sval(k), k->data.scalar.length, "<<"))
			continue;
		if (k->type != YAML_SCALAR_NODE)
			return type_error(c, k, "string");
		if (memchr(sval(k), '\0', k->data.scalar.length))
			return cy_err(c, k, "key contains a NUL byte");
		/* libyaml NUL-terminates scalars; the name lives as long as the document */
		struct cy_entry e = {k, val, sval(k), (*order)++, depth > 0};
		if ((rc = evec_push(c, v, &e)))
			return rc;
	}
	if ((rc = check_dups(c, v, start, type, struct_like)))
		return rc;
	for (pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = yaml_document_get_node(c->doc, pair->key);
		yaml_node_t *val = yaml_document_get_node(c->doc, pair->value);
		if (!(k->type == YAML_SCALAR_NODE && is_plain(k) &&
		      eq(sval(k), k->data.scalar.length, "<<")))
			continue;
		if (val->type == YAML_MAPPING_NODE) {
			rc = merge_from(c, val, type, struct_like, depth, v, start, order);
		} else if (val->type == YAML_SEQUENCE_NODE) {
			rc = 0;
			for (yaml_node_item_t *it = val->data.sequence.items.start;
			     rc == 0 && it < val->data.sequence.items.top; it++) {
				yaml_node_t *src = yaml_document_get_node(c->doc, *it);
				if (!src || src->type != YAML_MAPPING_NODE)
					return cy_err(
					    c, src ? src : val,
					    "map merge requires map or sequence of maps as "
					    "the value");
				rc = merge_from(c, src, type, struct_like, depth, v, start, order);
			}
		} else {
			rc = cy_err(c, val,
			            "map merge requires map or sequence of maps as the value");
		}
		if (rc)
			return rc;
	}
	return 0;
}

int cy_map(struct cfg_ctx *c, yaml_node_t *n, const char *type, int struct_like, struct cy_map *m)
{
	memset(m, 0, sizeof(*m));
	if (cy_is_null(n))
		return 0;
	if (n->type != YAML_MAPPING_NODE)
		return type_error(c, n, type);
	struct evec v = {0};
	size_t order = 0;
	int rc = collect(c, n, type, struct_like, 0, &v, &order);
	if (rc == 0 && v.n) {
		m->e = cy_alloc(c, v.n, sizeof(*m->e));
		if (!m->e)
			rc = PD_ENOMEM;
		else
			memcpy(m->e, v.e, v.n * sizeof(*m->e));
	}
	if (rc == 0) {
		m->node = n;
		m->n = v.n;
	}
	free(v.e);
	return rc;
}

int cy_unknown(struct cfg_ctx *c, const struct cy_entry *e, const char *type)
{
	return cy_err(c, e->key, "field %s not found in type %s", e->name, type);
}

int cy_seq(struct cfg_ctx *c, yaml_node_t *n, const char *type, yaml_node_t ***items, size_t *count)
{
	*items = NULL;
	*count = 0;
	if (cy_is_null(n))
		return 0;
	if (n->type != YAML_SEQUENCE_NODE)
		return type_error(c, n, type);
	size_t k = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (c->budget < k)
		return cy_err(c, n, "document too complex: more than %d nodes (aliases included)",
		              CFG_NODE_BUDGET);
	c->budget -= k;
	yaml_node_t **out = cy_alloc(c, k, sizeof(*out));
	if (!out)
		return PD_ENOMEM;
	for (size_t i = 0; i < k; i++) {
		out[i] = yaml_document_get_node(c->doc, n->data.sequence.items.start[i]);
		if (!out[i])
			return cy_err(c, n, "yaml: broken document");
	}
	*items = out;
	*count = k;
	return 0;
}

/* ---- scalars -------------------------------------------------------------- */

int cy_str(struct cfg_ctx *c, yaml_node_t *n, const char **out)
{
	*out = "";
	if (cy_is_null(n))
		return 0;
	if (n->type != YAML_SCALAR_NODE)
		return type_error(c, n, "string");
	if (memchr(sval(n), '\0', n->data.scalar.length))
		return cy_err(c, n, "string contains a NUL byte");
	char *s = pd_arena_strndup(c->a, sval(n), n->data.scalar.length);
	if (!s)
		return cy_nomem(c);
	*out = s;
	return 0;
}

int cy_bool(struct cfg_ctx *c, yaml_node_t *n, int *out)
{
	*out = 0;
	if (cy_is_null(n))
		return 0;
	if (n->type != YAML_SCALAR_NODE || !is_plain(n) ||
	    cy_resolve(sval(n), n->data.scalar.length) != CY_BOOL)
		return type_error(c, n, "bool");
	*out = in_list(sval(n), n->data.scalar.length, true_words);
	return 0;
}

/* An integer or float scalar as sign and magnitude (floats truncated, as go-yaml
 * stores a float into an integer field). */
static int scalar_int(struct cfg_ctx *c, yaml_node_t *n, const char *into, int *neg, uint64_t *mag)
{
	if (n->type != YAML_SCALAR_NODE || !is_plain(n))
		return type_error(c, n, into);
	size_t len = n->data.scalar.length;
	enum cy_tag t = cy_resolve(sval(n), len);
	char buf[130];
	if (t == CY_INT) {
		strip_underscores(sval(n), len, buf);
		parse_goint(buf, neg, mag);
		return 0;
	}
	if (t == CY_FLOAT && len < sizeof(buf) - 1) {
		strip_underscores(sval(n), len, buf);
		double d = strtod(buf, NULL);
		if (isfinite(d) && fabs(d) < 18446744073709551616.0) {
			*neg = d < 0;
			*mag = (uint64_t)fabs(d);
			if (*mag == 0)
				*neg = 0;
			return 0;
		}
	}
	return type_error(c, n, into);
}

int cy_int(struct cfg_ctx *c, yaml_node_t *n, int64_t *out)
{
	int neg;
	uint64_t mag;
	*out = 0;
	if (cy_is_null(n))
		return 0;
	int rc = scalar_int(c, n, "int", &neg, &mag);
	if (rc)
		return rc;
	if ((!neg && mag > INT64_MAX) || (neg && mag > (uint64_t)1 << 63))
		return type_error(c, n, "int");
	*out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return 0;
}

int cy_uint64(struct cfg_ctx *c, yaml_node_t *n, uint64_t *out)
{
	int neg;
	uint64_t mag;
	*out = 0;
	if (cy_is_null(n))
		return 0;
	int rc = scalar_int(c, n, "uint64", &neg, &mag);
	if (rc)
		return rc;
	if (neg)
		return type_error(c, n, "uint64");
	*out = mag;
	return 0;
}

int cy_duration(struct cfg_ctx *c, yaml_node_t *n, int64_t *ms)
{
	const char *s;
	struct pd_err e = {0};
	*ms = 0;
	int rc = cy_str(c, n, &s);
	if (rc || cy_is_null(n))
		return rc;
	if (pd_config_parse_duration(s, ms, &e))
		return cy_err(c, n, "%s", e.msg);
	return 0;
}

int cy_size(struct cfg_ctx *c, yaml_node_t *n, int64_t *bytes)
{
	const char *s;
	struct pd_err e = {0};
	*bytes = 0;
	int rc = cy_str(c, n, &s);
	if (rc || cy_is_null(n))
		return rc;
	if (pd_config_parse_size(s, bytes, &e))
		return cy_err(c, n, "%s", e.msg);
	return 0;
}

int cy_strlist(struct cfg_ctx *c, yaml_node_t *n, const char ***out, size_t *count)
{
	yaml_node_t **items;
	size_t k;
	*out = NULL;
	*count = 0;
	int rc = cy_seq(c, n, "[]string", &items, &k);
	if (rc || cy_is_null(n))
		return rc;
	const char **v = cy_alloc(c, k, sizeof(*v));
	if (!v)
		return PD_ENOMEM;
	for (size_t i = 0; i < k; i++)
		if ((rc = cy_str(c, items[i], &v[i])))
			return rc;
	*out = v;
	*count = k;
	return 0;
}
