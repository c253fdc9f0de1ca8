/* relabel.c: Prometheus's relabeling: building and validating rules as
 * relabel.Config's UnmarshalYAML and Validate do, and applying them as
 * relabel.Process does.
 *
 * Process works on a model of Prometheus's labels.Builder rather than on a sorted
 * set, because some results depend on it: the builder keeps the input set (base),
 * a list of labels set since (add, in the order they were first set) and a list of
 * names deleted since (del), and labelmap, labeldrop and labelkeep visit the base
 * labels that were neither set nor deleted, in name order, and then the added ones
 * in their order. So when two labels map to the same name, the one visited last
 * wins, as in Prometheus. Strings made while processing live in an arena that is
 * freed when processing ends. */
#include "relabel_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../labels/labels_int.h"

/* The longest joined value or expansion processing makes: a bound on what a rule
 * can build, far above what label values need. */
#define MAX_VALUE (1u << 20)
/* The most memory one pd_relabel_process may use for the strings it makes. */
#define MAX_ARENA ((size_t)64 << 20)

static const char *const action_names[] = {
    [PD_RELABEL_REPLACE] = "replace",     [PD_RELABEL_KEEP] = "keep",
    [PD_RELABEL_DROP] = "drop",           [PD_RELABEL_KEEPEQUAL] = "keepequal",
    [PD_RELABEL_DROPEQUAL] = "dropequal", [PD_RELABEL_HASHMOD] = "hashmod",
    [PD_RELABEL_LABELMAP] = "labelmap",   [PD_RELABEL_LABELDROP] = "labeldrop",
    [PD_RELABEL_LABELKEEP] = "labelkeep", [PD_RELABEL_LOWERCASE] = "lowercase",
    [PD_RELABEL_UPPERCASE] = "uppercase",
};
#define NACTIONS (sizeof(action_names) / sizeof(action_names[0]))

int pd_relabel_action_parse(const char *s)
{
	struct pd_buf b;
	int found = -1;

	/* strings.ToLower, as Prometheus's UnmarshalYAML: Go's case mapping, so even
	 * the Kelvin sign lowercases to 'k' */
	pd_buf_init(&b, 64);
	if (pd_relabel_case_map(&b, s, strlen(s), 0) == 0 && pd_buf_append(&b, "", 1) == 0) {
		for (size_t i = 0; i < NACTIONS; i++)
			if (strcmp((const char *)b.data, action_names[i]) == 0)
				found = (int)i;
	}
	pd_buf_fini(&b);
	return found;
}

const char *pd_relabel_action_name(enum pd_relabel_action a)
{
	if ((unsigned)a < NACTIONS)
		return action_names[a];
	return "unknown";
}

/* ---- building and validation --------------------------------------------- */

/* Prometheus's relabelTargetLegacy, ^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$: a
 * label name in which $1, $name, ${1} and ${name} may stand for characters. */
static int is_word(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

static int valid_target_template(const char *s)
{
	size_t i = 0;
	int first = 1;

	if (!*s)
		return 0;
	while (s[i]) {
		if (s[i] == '$') {
			i++;
			if (s[i] == '{') {
				size_t j = ++i;
				while (is_word(s[i]))
					i++;
				if (i == j || s[i] != '}')
					return 0;
				i++;
			} else {
				size_t j = i;
				while (is_word(s[i]))
					i++;
				if (i == j)
					return 0;
			}
		} else if (is_word(s[i]) && !(first && s[i] >= '0' && s[i] <= '9')) {
			i++;
		} else {
			return 0;
		}
		first = 0;
	}
	return 1;
}

static int needs_target(enum pd_relabel_action a)
{
	return a == PD_RELABEL_REPLACE || a == PD_RELABEL_HASHMOD || a == PD_RELABEL_LOWERCASE ||
	       a == PD_RELABEL_UPPERCASE || a == PD_RELABEL_KEEPEQUAL || a == PD_RELABEL_DROPEQUAL;
}

static int is_case_or_equal(enum pd_relabel_action a)
{
	return a == PD_RELABEL_LOWERCASE || a == PD_RELABEL_UPPERCASE ||
	       a == PD_RELABEL_KEEPEQUAL || a == PD_RELABEL_DROPEQUAL;
}

static int invalid_field(struct pd_err *err, const char *value, const char *field,
                         enum pd_relabel_action a)
{
	char q[300];
	pd_labels_quote_msg(q, sizeof(q), value, strlen(value), 200);
	return pd_err_set(err, PD_EINVAL, "%s is invalid '%s' for %s action", q, field,
	                  pd_relabel_action_name(a));
}

/* relabel.Config.Validate, with classic label names (Prometheus's legacy
 * validation scheme), in Prometheus's order of checks. regex_given: the rule set a
 * regex (Prometheus compares the regex object with the default's, so an explicit
 * "(.*)" counts as set). */
static int validate(const struct pd_relabel_rule *r, const struct pd_relabel_rule_config *c,
                    int regex_given, struct pd_err *err)
{
	enum pd_relabel_action a = r->action;
	const char *an = pd_relabel_action_name(a);
	const char *t = r->target_label;
	int default_repl = strcmp(r->replacement, "$1") == 0;

	if (a == PD_RELABEL_HASHMOD && r->modulus == 0)
		return pd_err_set(err, PD_EINVAL,
		                  "relabel configuration for hashmod requires non-zero modulus");
	if (needs_target(a) && !*t)
		return pd_err_set(
		    err, PD_EINVAL,
		    "relabel configuration for %s action requires 'target_label' value", an);
	if (a == PD_RELABEL_REPLACE && !strchr(t, '$') && !pd_labels_valid_name(t))
		return invalid_field(err, t, "target_label", a);
	if (a == PD_RELABEL_REPLACE && strchr(t, '$') && !valid_target_template(t))
		return invalid_field(err, t, "target_label", a);
	if (is_case_or_equal(a) && !pd_labels_valid_name(t))
		return invalid_field(err, t, "target_label", a);
	if (is_case_or_equal(a) && !default_repl)
		return pd_err_set(err, PD_EINVAL, "'replacement' can not be set for %s action", an);
	if (a == PD_RELABEL_LABELMAP && !valid_target_template(r->replacement))
		return invalid_field(err, r->replacement, "replacement", a);
	if (a == PD_RELABEL_HASHMOD && !pd_labels_valid_name(t))
		return invalid_field(err, t, "target_label", a);
	if (a == PD_RELABEL_KEEPEQUAL || a == PD_RELABEL_DROPEQUAL) {
		if (regex_given || r->modulus != 0 || strcmp(r->separator, ";") != 0 ||
		    !default_repl)
			return pd_err_set(
			    err, PD_EINVAL,
			    "%s action requires only 'source_labels' and `target_label`, "
			    "and no other fields",
			    an);
	}
	if (a == PD_RELABEL_LABELDROP || a == PD_RELABEL_LABELKEEP) {
		if (c->source_labels || c->nsource_labels || *t || r->modulus != 0 ||
		    strcmp(r->separator, ";") != 0 || !default_repl)
			return pd_err_set(err, PD_EINVAL,
			                  "%s action requires only 'regex', and no other fields",
			                  an);
	}
	return 0;
}

static void rule_fini(struct pd_relabel_rule *r)
{
	if (r->source_labels)
		for (size_t i = 0; i < r->nsource_labels; i++)
			free(r->source_labels[i]);
	free(r->source_labels);
	free(r->separator);
	free(r->target_label);
	free(r->replacement);
	pd_relabel_regex_fini(&r->regex);
}

static int rule_build(struct pd_relabel_rule *r, const struct pd_relabel_rule_config *c,
                      struct pd_err *err)
{
	int rc;

	if (c->action < -1 || c->action >= (int)NACTIONS)
		return pd_err_set(err, PD_EINVAL, "unknown relabel action %d", c->action);
	r->action = c->action == -1 ? PD_RELABEL_REPLACE : (enum pd_relabel_action)c->action;
	r->modulus = c->modulus;
	r->separator = strdup(c->separator ? c->separator : ";");
	r->target_label = strdup(c->target_label ? c->target_label : "");
	r->replacement = strdup(c->replacement ? c->replacement : "$1");
	if (!r->separator || !r->target_label || !r->replacement)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (c->nsource_labels) {
		if (!c->source_labels)
			return pd_err_set(err, PD_EINVAL, "source_labels is NULL");
		r->source_labels = calloc(c->nsource_labels, sizeof(char *));
		if (!r->source_labels)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		r->nsource_labels = c->nsource_labels;
		for (size_t i = 0; i < c->nsource_labels; i++) {
			const char *s = c->source_labels[i] ? c->source_labels[i] : "";
			/* model.LabelName's UnmarshalYAML */
			if (!pd_labels_valid_name(s)) {
				char q[300];
				pd_labels_quote_msg(q, sizeof(q), s, strlen(s), 200);
				return pd_err_set(err, PD_EINVAL, "%s is not a valid label name",
				                  q);
			}
			if (!(r->source_labels[i] = strdup(s)))
				return pd_err_set(err, PD_ENOMEM, "out of memory");
		}
	}
	rc = pd_relabel_regex_compile(&r->regex, c->regex ? c->regex : "(.*)", c->regex == NULL,
	                              err);
	if (rc < 0)
		return rc;
	return validate(r, c, c->regex != NULL, err);
}

int pd_relabel_rules_build(struct pd_relabel_rules **out, const struct pd_relabel_rule_config *cfg,
                           size_t n, struct pd_err *err)
{
	struct pd_relabel_rules *rs;
	int rc;

	*out = NULL;
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (n) {
		rs->rules = calloc(n, sizeof(*rs->rules));
		if (!rs->rules) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto fail;
		}
	}
	for (size_t i = 0; i < n; i++) {
		rs->n = i + 1; /* so that destroy frees what rule_build made */
		if ((rc = rule_build(&rs->rules[i], &cfg[i], err)) < 0) {
			pd_err_prefix(err, "relabel rule %zu", i);
			goto fail;
		}
		if (rs->rules[i].regex.ncap > rs->max_ncap)
			rs->max_ncap = rs->rules[i].regex.ncap;
	}
	*out = rs;
	return 0;
fail:
	pd_relabel_rules_destroy(rs);
	return rc;
}

void pd_relabel_rules_destroy(struct pd_relabel_rules *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		rule_fini(&r->rules[i]);
	free(r->rules);
	free(r);
}

size_t pd_relabel_rules_count(const struct pd_relabel_rules *r)
{
	return r ? r->n : 0;
}

/* ---- a model of Prometheus's labels.Builder ------------------------------ */

struct kv {
	const char *name;
	const char *value;
};

struct lb {
	const struct pd_labels *base;
	struct kv *add; /* set since, in the order first set; values never "" */
	size_t nadd, cap_add;
	const char **del; /* deleted since; only grows, may repeat */
	size_t ndel, cap_del;
	struct pd_arena *arena; /* every string lb points to that base and rules do not own */
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 16;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * elem);
	if (!q)
		return PD_ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static int in_del(const struct lb *b, size_t ndel, const char *name)
{
	for (size_t i = 0; i < ndel; i++)
		if (strcmp(b->del[i], name) == 0)
			return 1;
	return 0;
}

static int in_kv(const struct kv *a, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(a[i].name, name) == 0)
			return 1;
	return 0;
}

/* Builder.Get: "" when absent. */
static const char *lb_get(const struct lb *b, const char *name)
{
	const char *v;
	for (size_t i = 0; i < b->nadd; i++)
		if (strcmp(b->add[i].name, name) == 0)
			return b->add[i].value;
	if (in_del(b, b->ndel, name))
		return "";
	v = pd_labels_get(b->base, name);
	return v ? v : "";
}

/* Builder.Del */
static int lb_del(struct lb *b, const char *name)
{
	for (size_t i = 0; i < b->nadd; i++) {
		if (strcmp(b->add[i].name, name) == 0) {
			memmove(&b->add[i], &b->add[i + 1], (b->nadd - i - 1) * sizeof(b->add[0]));
			b->nadd--;
			break; /* add holds each name once */
		}
	}
	if (grow((void **)&b->del, &b->cap_del, b->ndel + 1, sizeof(b->del[0])) < 0)
		return PD_ENOMEM;
	b->del[b->ndel++] = name;
	return 0;
}

/* Builder.Set: name and value must outlive processing (arena, rules or base). */
static int lb_set(struct lb *b, const char *name, const char *value)
{
	if (!*value)
		return lb_del(b, name);
	for (size_t i = 0; i < b->nadd; i++) {
		if (strcmp(b->add[i].name, name) == 0) {
			b->add[i].value = value;
			return 0;
		}
	}
	if (grow((void **)&b->add, &b->cap_add, b->nadd + 1, sizeof(b->add[0])) < 0)
		return PD_ENOMEM;
	b->add[b->nadd].name = name;
	b->add[b->nadd].value = value;
	b->nadd++;
	return 0;
}

/* The labels Builder.Range visits, in its order, as a snapshot that later Set and
 * Del calls do not change: base labels neither deleted nor set, then the set ones.
 * Also what Builder.Labels holds, before sorting. *out is malloc'd. */
static int lb_snapshot(const struct lb *b, struct kv **out, size_t *n)
{
	size_t nb = pd_labels_len(b->base), k = 0;
	struct kv *l = malloc((nb + b->nadd + 1) * sizeof(*l));
	if (!l)
		return PD_ENOMEM;
	for (size_t i = 0; i < nb; i++) {
		const struct pd_label *x = pd_labels_at(b->base, i);
		if (in_del(b, b->ndel, x->name) || in_kv(b->add, b->nadd, x->name))
			continue;
		l[k].name = x->name;
		l[k].value = x->value;
		k++;
	}
	if (b->nadd)
		memcpy(l + k, b->add, b->nadd * sizeof(*l));
	*out = l;
	*n = k + b->nadd;
	return 0;
}

static const char *arena_str(struct lb *b, const struct pd_buf *s)
{
	return pd_arena_strndup(b->arena, s->len ? (const char *)s->data : "", s->len);
}

/* ---- processing ---------------------------------------------------------- */

struct proc {
	struct lb lb;
	size_t *ov;
	struct pd_buf val, t1, t2;
};

/* The rule's source values joined with its separator, into p->val (NUL-ended). */
static int join_sources(struct proc *p, const struct pd_relabel_rule *r)
{
	int rc;
	p->val.len = 0;
	for (size_t i = 0; i < r->nsource_labels; i++) {
		const char *v = lb_get(&p->lb, r->source_labels[i]);
		if (i && (rc = pd_buf_append(&p->val, r->separator, strlen(r->separator))) < 0)
			return rc;
		if ((rc = pd_buf_append(&p->val, v, strlen(v))) < 0)
			return rc;
	}
	return pd_buf_append(&p->val, "", 1);
}

static int nul(struct pd_buf *b)
{
	int rc = pd_buf_append(b, "", 1);
	if (rc == 0)
		b->len--;
	return rc;
}

static int do_replace(struct proc *p, const struct pd_relabel_rule *r, const char *val, size_t vlen)
{
	const char *target, *value;
	int rc;

	if (!pd_relabel_regex_match(&r->regex, val, vlen, p->ov))
		return 0; /* no match: no change */
	p->t1.len = 0;
	p->t2.len = 0;
	if ((rc = pd_relabel_expand(&p->t1, r->target_label, &r->regex, val, p->ov)) < 0 ||
	    (rc = nul(&p->t1)) < 0)
		return rc;
	/* a target that expands to an invalid name is skipped */
	if (!pd_labels_valid_name((const char *)p->t1.data))
		return 0;
	if ((rc = pd_relabel_expand(&p->t2, r->replacement, &r->regex, val, p->ov)) < 0)
		return rc;
	target = arena_str(&p->lb, &p->t1);
	if (!target)
		return PD_ENOMEM;
	if (p->t2.len == 0)
		return lb_del(&p->lb, target);
	value = arena_str(&p->lb, &p->t2);
	if (!value)
		return PD_ENOMEM;
	return lb_set(&p->lb, target, value);
}

static int do_names(struct proc *p, const struct pd_relabel_rule *r)
{
	struct kv *l = NULL;
	size_t n = 0;
	int rc = lb_snapshot(&p->lb, &l, &n);

	for (size_t i = 0; rc == 0 && i < n; i++) {
		const char *name = l[i].name;
		size_t nlen = strlen(name);
		int m = pd_relabel_regex_match(&r->regex, name, nlen, p->ov);
		if (r->action == PD_RELABEL_LABELDROP) {
			if (m)
				rc = lb_del(&p->lb, name);
		} else if (r->action == PD_RELABEL_LABELKEEP) {
			if (!m)
				rc = lb_del(&p->lb, name);
		} else if (m) { /* labelmap: the regex matches the whole name once */
			const char *to;
			p->t1.len = 0;
			if ((rc = pd_relabel_expand(&p->t1, r->replacement, &r->regex, name,
			                            p->ov)) < 0)
				break;
			if (!(to = arena_str(&p->lb, &p->t1))) {
				rc = PD_ENOMEM;
				break;
			}
			rc = lb_set(&p->lb, to, l[i].value);
		}
	}
	free(l);
	return rc;
}

static int do_hashmod(struct proc *p, const struct pd_relabel_rule *r, const char *val, size_t vlen)
{
	uint8_t d[16];
	uint64_t h = 0;
	char num[24];
	const char *v;

	pd_relabel_md5(val, vlen, d);
	/* the last 8 bytes of the digest, big-endian */
	for (int i = 8; i < 16; i++)
		h = h << 8 | d[i];
	snprintf(num, sizeof(num), "%" PRIu64, h % r->modulus);
	if (!(v = pd_arena_strndup(p->lb.arena, num, strlen(num))))
		return PD_ENOMEM;
	return lb_set(&p->lb, r->target_label, v);
}

static int do_case(struct proc *p, const struct pd_relabel_rule *r, const char *val, size_t vlen)
{
	const char *v;
	int rc;
	p->t1.len = 0;
	if ((rc = pd_relabel_case_map(&p->t1, val, vlen, r->action == PD_RELABEL_UPPERCASE)) < 0)
		return rc;
	if (!(v = arena_str(&p->lb, &p->t1)))
		return PD_ENOMEM;
	return lb_set(&p->lb, r->target_label, v);
}

/* Applies one rule. Returns 1 to keep the set, 0 to drop it, <0 on error. */
static int apply(struct proc *p, const struct pd_relabel_rule *r)
{
	int rc;
	if ((rc = join_sources(p, r)) < 0)
		return rc;
	const char *val = (const char *)p->val.data;
	size_t vlen = p->val.len - 1;

	switch (r->action) {
	case PD_RELABEL_DROP:
		return !pd_relabel_regex_match(&r->regex, val, vlen, NULL);
	case PD_RELABEL_KEEP:
		return pd_relabel_regex_match(&r->regex, val, vlen, NULL);
	case PD_RELABEL_DROPEQUAL:
		return strcmp(lb_get(&p->lb, r->target_label), val) != 0;
	case PD_RELABEL_KEEPEQUAL:
		return strcmp(lb_get(&p->lb, r->target_label), val) == 0;
	case PD_RELABEL_REPLACE:
		rc = do_replace(p, r, val, vlen);
		break;
	case PD_RELABEL_LOWERCASE:
	case PD_RELABEL_UPPERCASE:
		rc = do_case(p, r, val, vlen);
		break;
	case PD_RELABEL_HASHMOD:
		rc = do_hashmod(p, r, val, vlen);
		break;
	case PD_RELABEL_LABELMAP:
	case PD_RELABEL_LABELDROP:
	case PD_RELABEL_LABELKEEP:
		rc = do_names(p, r);
		break;
	}
	return rc < 0 ? rc : 1;
}

/* Builder.Labels: the final set. Relabeling sets no limits of its own (a target's
 * set may hold more __meta_* labels than a series may): the builder's limits are
 * raised to fit; whoever stores the set applies its own. */
static int finish(struct proc *p, struct pd_labels **out, struct pd_err *err)
{
	struct kv *l = NULL;
	size_t n = 0;
	struct pd_labels_limits lim = {0};
	struct pd_labels_builder *b = NULL;
	int rc;

	if ((rc = lb_snapshot(&p->lb, &l, &n)) < 0)
		return pd_err_set(err, rc, "out of memory");
	lim = pd_labels_limits_resolve(NULL);
	if (n > lim.max_labels)
		lim.max_labels = n;
	for (size_t i = 0; i < n; i++) {
		size_t nl = strlen(l[i].name), vl = strlen(l[i].value);
		if (nl > lim.max_name_len)
			lim.max_name_len = nl;
		if (vl > lim.max_value_len)
			lim.max_value_len = vl;
	}
	b = pd_labels_builder_create(&lim);
	if (!b) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		pd_labels_builder_add(b, l[i].name, l[i].value); /* errors are sticky */
	if ((rc = pd_labels_builder_finish(b, out, err)) < 0)
		pd_err_prefix(err, "relabeling produced an invalid label set");
out:
	pd_labels_builder_destroy(b);
	free(l);
	return rc;
}

int pd_relabel_process(const struct pd_relabel_rules *r, const struct pd_labels *ls,
                       struct pd_labels **out, struct pd_err *err)
{
	struct proc p;
	int rc = 0;

	*out = NULL;
	memset(&p, 0, sizeof(p));
	p.lb.base = ls;
	pd_buf_init(&p.val, MAX_VALUE);
	pd_buf_init(&p.t1, MAX_VALUE);
	pd_buf_init(&p.t2, MAX_VALUE);
	p.lb.arena = pd_arena_create(MAX_ARENA);
	p.ov = malloc(2 * ((size_t)r->max_ncap + 1) * sizeof(size_t));
	if (!p.lb.arena || !p.ov) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < r->n; i++) {
		const struct pd_relabel_rule *rule = &r->rules[i];
		rc = apply(&p, rule);
		if (rc < 0) {
			const char *an = pd_relabel_action_name(rule->action);
			if (pd_arena_exhausted(p.lb.arena))
				rc = pd_err_set(
				    err, PD_ETOOBIG,
				    "relabel rule %zu (%s): relabeling one label set would "
				    "make more than %zu bytes of strings",
				    i, an, MAX_ARENA);
			else if (rc == PD_ETOOBIG)
				pd_err_set(err, rc,
				           "relabel rule %zu (%s): a value would be longer than %u "
				           "bytes",
				           i, an, MAX_VALUE);
			else
				pd_err_set(err, rc, "relabel rule %zu (%s): %s", i, an,
				           pd_strerror(rc));
			goto out;
		}
		if (rc == 0) /* dropped */
			goto out;
	}
	rc = finish(&p, out, err);
out:
	pd_buf_fini(&p.val);
	pd_buf_fini(&p.t1);
	pd_buf_fini(&p.t2);
	free(p.ov);
	free(p.lb.add);
	free(p.lb.del);
	pd_arena_destroy(p.lb.arena);
	return rc < 0 ? rc : 0;
}
