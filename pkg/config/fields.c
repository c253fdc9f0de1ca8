/* fields.c: what the schema files (parse.c, parse_http.c, parse_sd.c) share: tests
 * of a field's name, the warning for a field profd accepts and ignores, the error
 * for one it cannot honour, Go's UTF-8 check, and YAML label sets. */
#include "config_int.h"

#include <string.h>

#include "profd/labels.h"

int cfg_is(const struct cy_entry *e, const char *name)
{
	return strcmp(e->name, name) == 0;
}

int cfg_listed(const char *name, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(name, *list) == 0)
			return 1;
	return 0;
}

int cfg_ignored(struct cfg_ctx *c, const struct cy_entry *e)
{
	return cy_warn(c, e->key,
	               "field %s is accepted for Prometheus compatibility and ignored "
	               "by profd",
	               e->name);
}

int cfg_unsupported(struct cfg_ctx *c, const struct cy_entry *e, const char *where)
{
	return cy_err(c, e->key, "field %s%s%s is not supported by profd", where ? where : "",
	              where ? "." : "", e->name);
}

int cfg_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Go's utf8.ValidString. */
int cfg_valid_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		unsigned c = *p;
		int n;
		unsigned min;
		if (c < 0x80) {
			p++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 1;
			min = 0x80;
			c &= 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2;
			min = 0x800;
			c &= 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3;
			min = 0x10000;
			c &= 0x07;
		} else {
			return 0;
		}
		for (int i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return 0;
			c = (c << 6) | (p[i] & 0x3f);
		}
		if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return 0;
		p += n + 1;
	}
	return 1;
}

/* ---- label sets ----------------------------------------------------------- */

/* A YAML map of label name -> value as a label set (*out NULL when empty).
 * expand: apply $VAR expansion to values (external_labels). */
int cfg_parse_labels(struct cfg_ctx *c, yaml_node_t *n, int expand, struct pd_labels **out)
{
	struct cy_map m;
	struct pd_labels_builder *b = NULL;
	struct pd_err e = {0};
	int rc;

	*out = NULL;
	if ((rc = cy_map(c, n, "model.LabelSet", 0, &m)))
		return rc;
	if (m.n == 0)
		return 0;
	b = pd_labels_builder_create(NULL);
	if (!b)
		return cy_nomem(c);
	for (size_t i = 0; i < m.n; i++) {
		const char *v;
		if (!pd_labels_valid_name(m.e[i].name)) {
			rc = cy_err(c, m.e[i].key, "%s is not a valid label name",
			            cy_quote(c, m.e[i].name));
			goto out;
		}
		if ((rc = cy_str(c, m.e[i].val, &v)))
			goto out;
		if (!cfg_valid_utf8(v)) {
			rc = cy_err(c, m.e[i].val, "%s is not a valid label value", cy_quote(c, v));
			goto out;
		}
		if (expand && !(v = cfg_expand_env(c, v))) {
			rc = PD_ENOMEM;
			goto out;
		}
		pd_labels_builder_add(b, m.e[i].name, v);
	}
	if (pd_labels_builder_finish(b, out, &e)) {
		rc = cy_err(c, n, "%s", e.msg);
		goto out;
	}
	if (pd_labels_len(*out) == 0) {
		pd_labels_destroy(*out);
		*out = NULL;
	}
out:
	pd_labels_builder_destroy(b);
	return rc;
}
