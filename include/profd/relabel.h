/* relabel.h: Prometheus's relabeling: an ordered list of rules, each reading some
 * labels, matching a regex and rewriting, keeping or dropping the label set.
 * Semantics, defaults and validation are Prometheus's (relabel.Config and
 * relabel.Process): separator ";", regex "(.*)" fully anchored, replacement "$1",
 * action "replace", $1 / ${1} / ${name} expansion, hashmod with MD5.
 *
 * A rule set is immutable once built and may be used by several threads. */
#ifndef PROFD_RELABEL_H
#define PROFD_RELABEL_H

#include <stddef.h>
#include <stdint.h>

#include "profd/labels.h"
#include "profd/util.h"

enum pd_relabel_action {
	PD_RELABEL_REPLACE = 0,
	PD_RELABEL_KEEP,
	PD_RELABEL_DROP,
	PD_RELABEL_KEEPEQUAL,
	PD_RELABEL_DROPEQUAL,
	PD_RELABEL_HASHMOD,
	PD_RELABEL_LABELMAP,
	PD_RELABEL_LABELDROP,
	PD_RELABEL_LABELKEEP,
	PD_RELABEL_LOWERCASE,
	PD_RELABEL_UPPERCASE,
};

/* One rule as written in YAML. Unset string fields are NULL and take Prometheus's
 * defaults when the rule set is built: separator ";", regex "(.*)", replacement
 * "$1", action replace. source_labels may be empty. The config package fills these
 * from YAML; tests fill them by hand. */
struct pd_relabel_rule_config {
	const char **source_labels;
	size_t nsource_labels;
	const char *separator;
	const char *target_label;
	const char *regex;
	uint64_t modulus;
	const char *replacement;
	int action;       /* enum pd_relabel_action; -1 means unset (replace) */
	int has_modulus;  /* modulus was given */
};

/* Parses an action name as Prometheus spells it ("replace", "keep", "hashmod",
 * "labelmap", ...; case-insensitive as Prometheus's UnmarshalYAML). -1 if unknown. */
int pd_relabel_action_parse(const char *s);
const char *pd_relabel_action_name(enum pd_relabel_action a);

struct pd_relabel_rules;

/* Builds and validates n rules with Prometheus's checks and messages (e.g.
 * `relabel configuration for hashmod requires non-zero modulus`, `"1abc" is
 * invalid 'target_label' for replace action`, regex compile errors). On error, err
 * names the rule's index (0-based) and the problem. *out is owned by the caller
 * (pd_relabel_rules_destroy). n may be 0. */
int pd_relabel_rules_build(struct pd_relabel_rules **out, const struct pd_relabel_rule_config *cfg,
			   size_t n, struct pd_err *err);
void pd_relabel_rules_destroy(struct pd_relabel_rules *r);
size_t pd_relabel_rules_count(const struct pd_relabel_rules *r);

/* Applies the rules to ls in order. *out is the new label set (owned by the
 * caller), or NULL when a rule dropped the set (keep/drop/keepequal/dropequal). ls
 * is only read. Labels whose value becomes "" are removed, as in Prometheus. */
int pd_relabel_process(const struct pd_relabel_rules *r, const struct pd_labels *ls,
		       struct pd_labels **out, struct pd_err *err);

#endif
