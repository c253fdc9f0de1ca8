/* series.c: the series labels of an ingested profile, named as Pyroscope names
 * them: __name__ the profile type, service_name always there, and label names
 * sanitized as Pyroscope's distributor does (dots become underscores; any other
 * byte outside [a-zA-Z0-9_], or a leading digit, refuses the request), with the
 * limits of struct pd_ingest_limits checked first. */
#include <stdlib.h>
#include <string.h>

#include "ingest_int.h"

/* 1: name is a legal Prometheus label name once its dots are underscores. */
static int legacy_ok(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.' ||
			 (c >= '0' && c <= '9' && i > 0);
		if (!ok)
			return 0;
	}
	return 1;
}

int ingest_series(const struct ingest_label *ls, size_t n, const char *metric,
		  const char *fallback_service, const struct pd_ingest_limits *lim,
		  struct pd_labels **out, int *limit, struct pd_err *err)
{
	struct pd_ingest_limits l = pd_ingest_limits_resolve(lim);
	struct pd_labels_builder *b = pd_labels_builder_create(NULL);
	char *name = NULL, *value = NULL;
	int rc = 0;
	*out = NULL;
	if (!b)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	pd_labels_builder_set(b, PD_LABELS_METRIC_NAME, metric);
	for (size_t i = 0; i < n; i++) {
		const struct ingest_label *x = &ls[i];
		if (x->name_len >= 2 && memcmp(x->name, "__", 2) == 0)
			continue; /* private labels are not taken from clients */
		if (x->name_len > l.max_label_name_len) {
			*limit = PD_INGEST_LIMIT_LABEL_NAME_LEN;
			rc = pd_err_set(err, PD_ETOOBIG,
					"label name \"%.64s...\" is %zu bytes, longer than %zu (%s)",
					x->name, x->name_len, l.max_label_name_len,
					pd_ingest_limit_flag(*limit));
			goto out;
		}
		if (x->value_len > l.max_label_value_len) {
			*limit = PD_INGEST_LIMIT_LABEL_VALUE_LEN;
			rc = pd_err_set(err, PD_ETOOBIG,
					"the value of label \"%.*s\" is %zu bytes, longer than %zu (%s)",
					(int)(x->name_len < 128 ? x->name_len : 128), x->name,
					x->value_len, l.max_label_value_len,
					pd_ingest_limit_flag(*limit));
			goto out;
		}
		if (!legacy_ok(x->name, x->name_len)) {
			rc = pd_err_set(err, PD_EINVAL, "invalid label name \"%.*s\"",
					(int)(x->name_len < 128 ? x->name_len : 128), x->name);
			goto out;
		}
		if (x->value_len == 0)
			continue;
		free(name);
		free(value);
		name = strndup(x->name, x->name_len);
		value = strndup(x->value, x->value_len);
		if (!name || !value) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto out;
		}
		if (memchr(x->value, 0, x->value_len)) {
			rc = pd_err_set(err, PD_EINVAL, "the value of label \"%s\" has a NUL byte",
					name);
			goto out;
		}
		for (char *p = name; *p; p++)
			if (*p == '.')
				*p = '_';
		const char *had = pd_labels_builder_get(b, name);
		if (had && strcmp(had, value) != 0) {
			rc = pd_err_set(err, PD_EINVAL,
					"label name \"%s\" is given twice with different values (after "
					"dots became underscores)",
					name);
			goto out;
		}
		if (strcmp(name, PD_LABELS_METRIC_NAME) != 0)
			pd_labels_builder_set(b, name, value);
	}
	if (!pd_labels_builder_get(b, "service_name")) {
		if (!fallback_service || !*fallback_service) {
			rc = pd_err_set(err, PD_EINVAL,
					"the profile names no service: give a service_name label or "
					"an application name");
			goto out;
		}
		pd_labels_builder_set(b, "service_name", fallback_service);
	}
	if ((rc = pd_labels_builder_finish(b, out, err)))
		goto out;
	if (pd_labels_len(*out) > l.max_labels) {
		*limit = PD_INGEST_LIMIT_LABELS;
		rc = pd_err_set(err, PD_ETOOBIG, "the series has %zu labels, more than %zu (%s)",
				pd_labels_len(*out), l.max_labels, pd_ingest_limit_flag(*limit));
		pd_labels_destroy(*out);
		*out = NULL;
	}
out:
	free(name);
	free(value);
	pd_labels_builder_destroy(b);
	return rc;
}
