/* labels.c: label sets and their builder: validation, sorting, lookup, Prometheus's
 * ordering, and printing a set the way Prometheus prints a metric. */
#include "labels_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MSG_NAME_MAX 64 /* bytes of a name or value quoted in a message */

/* ---- names and limits ----------------------------------------------------- */

static int is_name_start(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_name_char(unsigned char c)
{
	return is_name_start(c) || (c >= '0' && c <= '9');
}

static int valid_name_n(const char *s, size_t n)
{
	if (n == 0 || !is_name_start((unsigned char)s[0]))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!is_name_char((unsigned char)s[i]))
			return 0;
	return 1;
}

int pd_labels_valid_name(const char *name)
{
	return name && valid_name_n(name, strlen(name));
}

int pd_labels_valid_metric_name(const char *name)
{
	static const char *const words[] = {"bool",        "on",    "ignoring", "group_left",
	                                    "group_right", "atan2", "inf",      "nan"};
	size_t n;

	if (!name || !name[0])
		return 0;
	n = strlen(name);
	if (!is_name_start((unsigned char)name[0]) && name[0] != ':')
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!is_name_char((unsigned char)name[i]) && name[i] != ':')
			return 0;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcasecmp(name, words[i]) == 0)
			return 0;
	return 1;
}

struct pd_labels_limits pd_labels_limits_resolve(const struct pd_labels_limits *limits)
{
	struct pd_labels_limits l = {0};
	if (limits)
		l = *limits;
	if (!l.max_labels)
		l.max_labels = PD_LABELS_DEFAULT_MAX_LABELS;
	if (!l.max_name_len)
		l.max_name_len = PD_LABELS_DEFAULT_MAX_NAME_LEN;
	if (!l.max_value_len)
		l.max_value_len = PD_LABELS_DEFAULT_MAX_VALUE_LEN;
	return l;
}

int pd_labels_check_label(const struct pd_labels_limits *lim, const char *name, size_t nlen,
                          const char *value, size_t vlen, char *msg, size_t cap)
{
	char qn[MSG_NAME_MAX * 4 + 16];

	pd_labels_quote_msg(qn, sizeof(qn), name, nlen, MSG_NAME_MAX);
	if (nlen > lim->max_name_len) {
		snprintf(msg, cap, "label name %s is %zu bytes long, more than the limit of %zu",
		         qn, nlen, lim->max_name_len);
		return PD_ETOOBIG;
	}
	if (!valid_name_n(name, nlen)) {
		snprintf(msg, cap, "invalid label name %s: must match [a-zA-Z_][a-zA-Z0-9_]*", qn);
		return PD_EINVAL;
	}
	if (vlen > lim->max_value_len) {
		snprintf(msg, cap,
		         "value of label %s is %zu bytes long, more than the limit of %zu", qn,
		         vlen, lim->max_value_len);
		return PD_ETOOBIG;
	}
	if (!pd_labels_utf8_valid(value, vlen)) {
		snprintf(msg, cap, "invalid UTF-8 in value of label %s", qn);
		return PD_EINVAL;
	}
	return 0;
}

/* ---- label sets ----------------------------------------------------------- */

void pd_labels_destroy(struct pd_labels *ls)
{
	free(ls);
}

struct pd_labels *pd_labels_dup(const struct pd_labels *ls)
{
	struct pd_labels *c = malloc(ls->size);
	if (!c)
		return NULL;
	memcpy(c, ls, ls->size);
	for (size_t i = 0; i < c->n; i++) {
		c->l[i].name = (const char *)c + (ls->l[i].name - (const char *)ls);
		c->l[i].value = (const char *)c + (ls->l[i].value - (const char *)ls);
	}
	return c;
}

size_t pd_labels_len(const struct pd_labels *ls)
{
	return ls->n;
}

const struct pd_label *pd_labels_at(const struct pd_labels *ls, size_t i)
{
	return i < ls->n ? &ls->l[i] : NULL;
}

const char *pd_labels_get(const struct pd_labels *ls, const char *name)
{
	size_t lo = 0, hi = ls->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, ls->l[mid].name);
		if (c == 0)
			return ls->l[mid].value;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

int pd_labels_compare(const struct pd_labels *a, const struct pd_labels *b)
{
	size_t n = a->n < b->n ? a->n : b->n;
	for (size_t i = 0; i < n; i++) {
		int c = strcmp(a->l[i].name, b->l[i].name);
		if (c)
			return c < 0 ? -1 : 1;
		c = strcmp(a->l[i].value, b->l[i].value);
		if (c)
			return c < 0 ? -1 : 1;
	}
	return a->n < b->n ? -1 : a->n > b->n ? 1 : 0;
}

int pd_labels_equal(const struct pd_labels *a, const struct pd_labels *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct pd_label *x = &a->l[i], *y = &b->l[i];
		if (x->name_len != y->name_len || x->value_len != y->value_len ||
		    memcmp(x->name, y->name, x->name_len) != 0 ||
		    memcmp(x->value, y->value, x->value_len) != 0)
			return 0;
	}
	return 1;
}

int pd_labels_format(const struct pd_labels *ls, struct pd_buf *b)
{
	const char *name = pd_labels_get(ls, PD_LABELS_METRIC_NAME);
	int bare = name && pd_labels_valid_metric_name(name);
	size_t printed = 0;
	int rc = 0;

	if (bare) {
		if ((rc = pd_buf_append(b, name, strlen(name))) < 0)
			return rc;
		if (ls->n == 1)
			return 0;
	}
	if ((rc = pd_buf_append(b, "{", 1)) < 0)
		return rc;
	if (name && !bare) {
		/* a name that cannot stand bare goes first, as a label */
		if ((rc = pd_buf_append(b, PD_LABELS_METRIC_NAME "=",
		                        sizeof(PD_LABELS_METRIC_NAME))) < 0 ||
		    (rc = pd_labels_quote(b, name, strlen(name))) < 0)
			return rc;
		printed++;
	}
	for (size_t i = 0; i < ls->n; i++) {
		const struct pd_label *l = &ls->l[i];
		if (strcmp(l->name, PD_LABELS_METRIC_NAME) == 0)
			continue;
		if ((printed && (rc = pd_buf_append(b, ", ", 2)) < 0) ||
		    (rc = pd_buf_append(b, l->name, l->name_len)) < 0 ||
		    (rc = pd_buf_append(b, "=", 1)) < 0 ||
		    (rc = pd_labels_quote(b, l->value, l->value_len)) < 0)
			return rc;
		printed++;
	}
	return pd_buf_append(b, "}", 1);
}

char *pd_labels_string(const struct pd_labels *ls)
{
	struct pd_buf b;
	size_t len;

	pd_buf_init(&b, 0);
	if (pd_labels_format(ls, &b) < 0 || pd_buf_append(&b, "", 1) < 0) {
		pd_buf_fini(&b);
		return NULL;
	}
	return (char *)pd_buf_steal(&b, &len);
}

/* ---- builder -------------------------------------------------------------- */

struct entry {
	char *name;
	char *value;
	size_t name_len;
	size_t value_len;
};

struct pd_labels_builder {
	struct pd_labels_limits lim;
	struct entry *e;
	size_t n, cap;
	int err_code; /* sticky error, 0 when none */
	char err_msg[PD_ERR_MSG_MAX];
};

struct pd_labels_builder *pd_labels_builder_create(const struct pd_labels_limits *limits)
{
	struct pd_labels_builder *b = calloc(1, sizeof(*b));
	if (b)
		b->lim = pd_labels_limits_resolve(limits);
	return b;
}

static void clear_entries(struct pd_labels_builder *b)
{
	for (size_t i = 0; i < b->n; i++) {
		free(b->e[i].name);
		free(b->e[i].value);
	}
	b->n = 0;
}

void pd_labels_builder_destroy(struct pd_labels_builder *b)
{
	if (!b)
		return;
	clear_entries(b);
	free(b->e);
	free(b);
}

static int sticky(struct pd_labels_builder *b, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int sticky(struct pd_labels_builder *b, int code, const char *fmt, ...)
{
	if (!b->err_code) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(b->err_msg, sizeof(b->err_msg), fmt, ap);
		va_end(ap);
		b->err_code = code;
	}
	return code;
}

static char *dupn(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* Appends a checked label; the caller has made sure the count limit allows it. */
static int append_entry(struct pd_labels_builder *b, const char *name, size_t nlen,
                        const char *value, size_t vlen)
{
	if (b->n == b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 8;
		struct entry *ne = realloc(b->e, ncap * sizeof(*ne));
		if (!ne)
			return sticky(b, PD_ENOMEM, "out of memory");
		b->e = ne;
		b->cap = ncap;
	}
	struct entry *e = &b->e[b->n];
	e->name = dupn(name, nlen);
	e->value = dupn(value, vlen);
	if (!e->name || !e->value) {
		free(e->name);
		free(e->value);
		return sticky(b, PD_ENOMEM, "out of memory");
	}
	e->name_len = nlen;
	e->value_len = vlen;
	b->n++;
	return 0;
}

static int check(struct pd_labels_builder *b, const char *name, size_t nlen, const char *value,
                 size_t vlen)
{
	char msg[PD_ERR_MSG_MAX];
	int rc = pd_labels_check_label(&b->lim, name, nlen, value, vlen, msg, sizeof(msg));
	if (rc < 0)
		return sticky(b, rc, "%s", msg);
	return 0;
}

static int check_count(struct pd_labels_builder *b, const char *name, size_t nlen)
{
	if (b->n + 1 > b->lim.max_labels) {
		char qn[MSG_NAME_MAX * 4 + 16];
		pd_labels_quote_msg(qn, sizeof(qn), name, nlen, MSG_NAME_MAX);
		return sticky(b, PD_ETOOBIG, "too many labels: adding %s makes %zu, limit is %zu",
		              qn, b->n + 1, b->lim.max_labels);
	}
	return 0;
}

int pd_labels_builder_reset(struct pd_labels_builder *b, const struct pd_labels *base)
{
	clear_entries(b);
	b->err_code = 0;
	b->err_msg[0] = '\0';
	if (!base)
		return 0;
	for (size_t i = 0; i < base->n; i++) {
		const struct pd_label *l = &base->l[i];
		int rc;
		/* base may have been built with looser limits: check again */
		if ((rc = check(b, l->name, l->name_len, l->value, l->value_len)) < 0 ||
		    (rc = check_count(b, l->name, l->name_len)) < 0 ||
		    (rc = append_entry(b, l->name, l->name_len, l->value, l->value_len)) < 0)
			return rc;
	}
	return 0;
}

int pd_labels_builder_add(struct pd_labels_builder *b, const char *name, const char *value)
{
	size_t nlen = strlen(name), vlen = strlen(value);
	int rc;

	if (b->err_code)
		return b->err_code;
	if ((rc = check(b, name, nlen, value, vlen)) < 0)
		return rc;
	if (vlen == 0)
		return 0;
	if ((rc = check_count(b, name, nlen)) < 0)
		return rc;
	return append_entry(b, name, nlen, value, vlen);
}

int pd_labels_builder_del(struct pd_labels_builder *b, const char *name)
{
	size_t j = 0;
	for (size_t i = 0; i < b->n; i++) {
		if (strcmp(b->e[i].name, name) == 0) {
			free(b->e[i].name);
			free(b->e[i].value);
			continue;
		}
		b->e[j++] = b->e[i];
	}
	b->n = j;
	return 0;
}

int pd_labels_builder_set(struct pd_labels_builder *b, const char *name, const char *value)
{
	size_t nlen = strlen(name), vlen = strlen(value);
	int rc;

	if (b->err_code)
		return b->err_code;
	if ((rc = check(b, name, nlen, value, vlen)) < 0)
		return rc;
	if (vlen == 0)
		return pd_labels_builder_del(b, name);
	for (size_t i = 0; i < b->n; i++) {
		if (strcmp(b->e[i].name, name) != 0)
			continue;
		char *v = dupn(value, vlen);
		if (!v)
			return sticky(b, PD_ENOMEM, "out of memory");
		free(b->e[i].value);
		b->e[i].value = v;
		b->e[i].value_len = vlen;
		/* drop any later duplicates added with _add, as Set replaces them all */
		for (size_t k = i + 1; k < b->n;) {
			if (strcmp(b->e[k].name, name) == 0) {
				free(b->e[k].name);
				free(b->e[k].value);
				memmove(&b->e[k], &b->e[k + 1], (b->n - k - 1) * sizeof(b->e[0]));
				b->n--;
			} else {
				k++;
			}
		}
		return 0;
	}
	if ((rc = check_count(b, name, nlen)) < 0)
		return rc;
	return append_entry(b, name, nlen, value, vlen);
}

const char *pd_labels_builder_get(const struct pd_labels_builder *b, const char *name)
{
	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->e[i].name, name) == 0)
			return b->e[i].value;
	return NULL;
}

const char *pd_labels_builder_error(const struct pd_labels_builder *b)
{
	return b->err_code ? b->err_msg : "";
}

static int cmp_entry(const void *x, const void *y)
{
	const struct entry *a = x, *b = y;
	return strcmp(a->name, b->name);
}

int pd_labels_builder_finish(struct pd_labels_builder *b, struct pd_labels **out,
                             struct pd_err *err)
{
	struct pd_labels *ls;
	size_t size, off;

	*out = NULL;
	if (b->err_code)
		return pd_err_set(err, b->err_code, "%s", b->err_msg);
	if (b->n > 1)
		qsort(b->e, b->n, sizeof(b->e[0]), cmp_entry);
	for (size_t i = 1; i < b->n; i++) {
		if (strcmp(b->e[i - 1].name, b->e[i].name) == 0) {
			char qn[MSG_NAME_MAX * 4 + 16];
			pd_labels_quote_msg(qn, sizeof(qn), b->e[i].name, b->e[i].name_len,
			                    MSG_NAME_MAX);
			return pd_err_set(err, PD_EINVAL, "label name %s is not unique", qn);
		}
	}
	if (b->n > b->lim.max_labels)
		return pd_err_set(err, PD_ETOOBIG, "too many labels: %zu, limit is %zu", b->n,
		                  b->lim.max_labels);

	size = sizeof(*ls) + b->n * sizeof(ls->l[0]);
	for (size_t i = 0; i < b->n; i++)
		size += b->e[i].name_len + b->e[i].value_len + 2;
	ls = malloc(size);
	if (!ls)
		return pd_err_set(err, PD_ENOMEM, "out of memory building a label set");
	ls->n = b->n;
	ls->size = size;
	off = sizeof(*ls) + b->n * sizeof(ls->l[0]);
	for (size_t i = 0; i < b->n; i++) {
		char *p = (char *)ls + off;
		memcpy(p, b->e[i].name, b->e[i].name_len + 1);
		ls->l[i].name = p;
		ls->l[i].name_len = b->e[i].name_len;
		p += b->e[i].name_len + 1;
		memcpy(p, b->e[i].value, b->e[i].value_len + 1);
		ls->l[i].value = p;
		ls->l[i].value_len = b->e[i].value_len;
		off += b->e[i].name_len + b->e[i].value_len + 2;
	}
	*out = ls;
	return 0;
}

int pd_labels_from_strings(struct pd_labels **out, struct pd_err *err, ...)
{
	struct pd_labels_builder *b;
	va_list ap;
	int rc = 0;

	*out = NULL;
	b = pd_labels_builder_create(NULL);
	if (!b)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	va_start(ap, err);
	for (;;) {
		const char *name = va_arg(ap, const char *);
		if (!name)
			break;
		const char *value = va_arg(ap, const char *);
		if (!value) {
			rc = pd_err_set(err, PD_EINVAL,
			                "label %s has no value (odd argument count)", name);
			break;
		}
		pd_labels_builder_add(b, name, value);
	}
	va_end(ap);
	if (rc == 0)
		rc = pd_labels_builder_finish(b, out, err);
	pd_labels_builder_destroy(b);
	return rc;
}
