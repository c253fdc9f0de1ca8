/* labels.h: label sets, label matchers and the PromQL series-selector parser.
 *
 * A series is named by a label set: name/value pairs sorted by name, names unique,
 * where the label `__name__` holds the profile type (`heap`, `goroutine`, ...).
 * Queries pick series with a selector in PromQL syntax, `heap{job="api",
 * instance=~"10\\.0\\..*"}`, which parses into a list of matchers. Everything here
 * follows Prometheus: labels.Labels and its Compare, String and Hash, labels.Matcher
 * with fully anchored regexes, and the vector-selector grammar of the PromQL parser
 * with its error messages. docs/selectors.md is the user-facing description and lists
 * the few places where profd differs.
 *
 * Strings are NUL-terminated C strings, so no label value and no matcher value can
 * contain a NUL byte; the parsers reject escapes that would produce one. */
#ifndef PROFD_LABELS_H
#define PROFD_LABELS_H

#include <stddef.h>
#include <stdint.h>

#include "profd/util.h"

/* The label that holds the metric name, i.e. the profile type. */
#define PD_LABELS_METRIC_NAME "__name__"
/* The reserved label that holds a series' tenant with --auth.multitenancy-enabled
 * (docs/storage.md#tenants); series of the default tenant have none. */
#define PD_LABELS_TENANT "__tenant__"

/* ---- limits --------------------------------------------------------------- */

#define PD_LABELS_DEFAULT_MAX_LABELS 64
#define PD_LABELS_DEFAULT_MAX_NAME_LEN 256       /* bytes */
#define PD_LABELS_DEFAULT_MAX_VALUE_LEN 4096     /* bytes */
#define PD_LABELS_DEFAULT_MAX_SELECTOR_LEN 65536 /* bytes of selector text */
#define PD_LABELS_DEFAULT_MAX_MATCHERS 256
/* memory one compiled regex may use for its program and its DFA caches (RE2's
 * max_mem, and its default); a regex whose program does not fit is rejected with
 * "expression too large", a DFA cache that fills up is flushed, never a failure */
#define PD_LABELS_DEFAULT_REGEX_MAX_MEM (8 << 20) /* bytes */

/* Limits on one label set. A zero field means its default above. */
struct pd_labels_limits {
	size_t max_labels;    /* labels in a set, __name__ included */
	size_t max_name_len;  /* bytes of a label name */
	size_t max_value_len; /* bytes of a label value */
};

/* ---- label sets ----------------------------------------------------------- */

/* One label. name and value are NUL-terminated; the lengths are given so that
 * hashing and comparing need no strlen. */
struct pd_label {
	const char *name;
	const char *value;
	size_t name_len;
	size_t value_len;
};

/* An immutable label set, held in one allocation. Invariants, checked when it is
 * built: labels sorted by name (bytewise), names unique and matching
 * [a-zA-Z_][a-zA-Z0-9_]*, values non-empty valid UTF-8, counts and lengths within
 * the limits it was built with. A label with an empty value is the same as no label
 * (Prometheus semantics), so such labels are dropped while building. */
struct pd_labels;

/* Frees a label set; NULL does nothing. */
void pd_labels_destroy(struct pd_labels *ls);

/* Returns a copy of ls owned by the caller, or NULL when out of memory. */
struct pd_labels *pd_labels_dup(const struct pd_labels *ls);

/* Number of labels in ls. */
size_t pd_labels_len(const struct pd_labels *ls);

/* The i-th label (i < pd_labels_len) in name order; borrowed from ls, valid as long
 * as ls is. */
const struct pd_label *pd_labels_at(const struct pd_labels *ls, size_t i);

/* The value of label name, borrowed from ls, or NULL when ls has no such label. */
const char *pd_labels_get(const struct pd_labels *ls, const char *name);

/* Orders label sets as Prometheus's labels.Compare does: label by label, first by
 * name then by value (bytewise), and a set that is a prefix of the other sorts
 * first. Returns <0, 0 or >0. Only reads its arguments. */
int pd_labels_compare(const struct pd_labels *a, const struct pd_labels *b);

/* 1 when a and b hold the same labels, else 0. Only reads its arguments. */
int pd_labels_equal(const struct pd_labels *a, const struct pd_labels *b);

/* The label set's 64-bit hash. It is persisted (series references in the WAL and
 * index depend on it), so it is defined byte for byte and never changes:
 *
 *   hash = XXH64(seed 0) of the byte string
 *          name_1 0xff value_1 0xff name_2 0xff value_2 0xff ... name_n 0xff value_n 0xff
 *
 * over the labels in name order, __name__ included; the empty set hashes the empty
 * string (0xef46db3751d8e999). XXH64 is Yann Collet's xxHash64 as specified in
 * xxhash's doc/xxhash_spec.md (pd_labels_xxh64 below). This is exactly what
 * Prometheus's labels.Labels.Hash() computes, so hashes agree with Prometheus. */
uint64_t pd_labels_hash(const struct pd_labels *ls);

/* XXH64 of len bytes with the given seed, as the xxHash specification defines it. */
uint64_t pd_labels_xxh64(const void *p, size_t len, uint64_t seed);

/* Appends ls to b as Prometheus prints a metric (model.Metric.String()):
 * `heap{instance="a:1", job="api"}`; `heap` when there are no other labels; `{}` for
 * the empty set; `{job="api"}` without __name__. Values are quoted as Go's
 * strconv.Quote does. When __name__ is not a valid metric name (or is a word the
 * PromQL lexer would take as a keyword), it is printed as a label first:
 * `{__name__="my type", job="api"}`. The output parses back with pd_labels_parse to
 * an equal set. PD_ETOOBIG or PD_ENOMEM when b cannot grow. */
int pd_labels_format(const struct pd_labels *ls, struct pd_buf *b);

/* As pd_labels_format, into a new NUL-terminated string owned by the caller
 * (free()), or NULL when out of memory. */
char *pd_labels_string(const struct pd_labels *ls);

/* Parses a label set written as pd_labels_format prints it, the form
 * `profd tsdb import --labels` takes: an optional metric name followed by an
 * optional `{name="value", ...}` (trailing comma allowed, PromQL strings and escapes,
 * only `=`). "" and "{}" are the empty set. On success *out is a new set owned by the
 * caller; limits may be NULL for the defaults. Errors are PromQL-style
 * (`1:7: parse error: ...`), e.g. `1:12: parse error: label name "job" is not
 * unique`. */
int pd_labels_parse(struct pd_labels **out, const char *s, const struct pd_labels_limits *limits,
                    struct pd_err *err);

/* Builds a set from name, value pairs ending with NULL:
 * pd_labels_from_strings(&ls, &err, "__name__", "heap", "job", "api", NULL).
 * Same validation as a builder with default limits; *out is owned by the caller. */
int pd_labels_from_strings(struct pd_labels **out, struct pd_err *err, ...);

/* 1 when name matches [a-zA-Z_][a-zA-Z0-9_]* (Prometheus's legacy label names), else 0. */
int pd_labels_valid_name(const char *name);

/* 1 when name can be written bare as a PromQL metric name: it matches
 * [a-zA-Z_:][a-zA-Z0-9_:]* and is not one of the words the PromQL lexer reads as
 * something else (bool, on, ignoring, group_left, group_right, atan2, inf, nan, in
 * any case). */
int pd_labels_valid_metric_name(const char *name);

/* Appends s (len bytes) to b as Go's strconv.Quote does: in double quotes, with `"`
 * and `\` backslashed, \a \b \f \n \r \t \v for those controls, \xNN for other
 * ASCII controls, DEL and bytes that are not UTF-8, \uNNNN or \UNNNNNNNN for
 * non-printable characters (controls, format characters, non-ASCII spaces, private
 * use, noncharacters). PD_ETOOBIG or PD_ENOMEM when b cannot grow. */
int pd_labels_quote(struct pd_buf *b, const char *s, size_t len);

/* ---- building label sets ------------------------------------------------- */

/* A mutable list of labels that becomes a struct pd_labels with
 * pd_labels_builder_finish. Like a decoder, it keeps a sticky error: the first
 * invalid add or set (bad name, bad UTF-8, a limit exceeded) is remembered with a
 * message naming the label, later calls do nothing, and finish reports it. */
struct pd_labels_builder;

/* Returns a new, empty builder owned by the caller, or NULL when out of memory.
 * limits may be NULL for the defaults; they are copied. */
struct pd_labels_builder *pd_labels_builder_create(const struct pd_labels_limits *limits);

/* Frees a builder; NULL does nothing. */
void pd_labels_builder_destroy(struct pd_labels_builder *b);

/* Empties the builder and clears its sticky error, then copies the labels of base
 * into it (base may be NULL; it is only read). */
int pd_labels_builder_reset(struct pd_labels_builder *b, const struct pd_labels *base);

/* Appends name=value without looking for an existing label of that name (finish
 * reports duplicates), as Prometheus's ScratchBuilder.Add; cheapest when labels come
 * in name order. An empty value adds nothing. name and value are copied. */
int pd_labels_builder_add(struct pd_labels_builder *b, const char *name, const char *value);

/* Sets name to value, replacing the value of an existing label of that name; an
 * empty value deletes the label, as Prometheus's labels.Builder.Set. Copies both. */
int pd_labels_builder_set(struct pd_labels_builder *b, const char *name, const char *value);

/* Deletes every label called name; absent names are fine. */
int pd_labels_builder_del(struct pd_labels_builder *b, const char *name);

/* The current value of name in the builder (borrowed until the next call that
 * changes the builder), or NULL. */
const char *pd_labels_builder_get(const struct pd_labels_builder *b, const char *name);

/* Sorts the labels, checks them (duplicate names, the label-count limit) and the
 * sticky error, and on success stores a new set owned by the caller in *out. The
 * builder keeps its labels, so more sets can be derived from it. Errors name the
 * label: `invalid label name "1x"`, `label name "job" is not unique`,
 * `invalid UTF-8 in value of label "path"`, `too many labels: 65, limit is 64`. */
int pd_labels_builder_finish(struct pd_labels_builder *b, struct pd_labels **out,
                             struct pd_err *err);

/* ---- matchers ------------------------------------------------------------- */

/* The four PromQL match operators. Fixed values, in Prometheus's order. */
enum pd_labels_match_type {
	PD_LABELS_MATCH_EQUAL = 0,      /* =  */
	PD_LABELS_MATCH_NOT_EQUAL = 1,  /* != */
	PD_LABELS_MATCH_REGEXP = 2,     /* =~ */
	PD_LABELS_MATCH_NOT_REGEXP = 3, /* !~ */
};

/* The operator as written in PromQL: "=", "!=", "=~", "!~" (static). */
const char *pd_labels_match_type_string(enum pd_labels_match_type t);

/* A label matcher. Immutable once created, so one matcher may be used by several
 * threads at once. Regexes are compiled once, when the matcher is created. */
struct pd_labels_matcher;

/* Creates a matcher on label name (which must be a valid label name). For =~ and !~,
 * value is a regex in RE2 syntax, as Prometheus takes it, fully anchored: it must
 * match the whole label value, as if written ^(?s:value)$, so `.` also matches a
 * newline. It is compiled once, as pd_labels_regex_compile does (without capture
 * groups), and runs in time linear in the value's length. A bad regex gives Go's
 * words with the byte offset in the regex:
 * `error parsing regexp "(a" at offset 2: missing closing ): `(a``.
 * *out is owned by the caller; name and value are copied. */
int pd_labels_matcher_create(struct pd_labels_matcher **out, enum pd_labels_match_type type,
                             const char *name, const char *value, struct pd_err *err);

/* Frees a matcher; NULL does nothing. */
void pd_labels_matcher_destroy(struct pd_labels_matcher *m);

enum pd_labels_match_type pd_labels_matcher_type(const struct pd_labels_matcher *m);
/* Name and value as given at creation, borrowed from m. */
const char *pd_labels_matcher_name(const struct pd_labels_matcher *m);
const char *pd_labels_matcher_value(const struct pd_labels_matcher *m);

/* 1 when the label value matches, else 0. value NULL means the series has no such
 * label, which matches as the empty string does (Prometheus semantics: `job=""`
 * selects series without a job label, `job!=""` those with one). A value that is not
 * valid UTF-8 (no label set holds one) never matches a regex other than `.*`. */
int pd_labels_matcher_matches(const struct pd_labels_matcher *m, const char *value);

/* 1 when the matcher matches the empty string, i.e. also selects series that lack
 * the label (computed once at creation). */
int pd_labels_matcher_matches_empty(const struct pd_labels_matcher *m);

/* 1 when every one of the n matchers matches its label's value in ls (missing
 * labels as ""), else 0. */
int pd_labels_matches(const struct pd_labels *ls, struct pd_labels_matcher *const *ms, size_t n);

/* Appends the matcher as Prometheus prints it: `job=~"a|b"` (value Go-quoted). */
int pd_labels_matcher_format(const struct pd_labels_matcher *m, struct pd_buf *b);

/* ---- regexes -------------------------------------------------------------- */

/* A regex with Go's syntax and Prometheus's anchoring, run by RE2 (linear time in
 * the text's length, whatever the regex). Immutable once compiled: any number of
 * threads may match with one at once. Matchers use it; so do relabeling rules,
 * which need capture groups. */
struct pd_labels_regex;

/* pd_labels_regex_compile flags */
#define PD_LABELS_REGEX_CAPTURE 1u /* record capture groups (costs speed otherwise) */

/* Compiles re (len bytes) as Prometheus does, ^(?s:re)$ with Go's regexp: what Go
 * rejects is rejected (backreferences, lookarounds, atomic groups, possessive and
 * nested quantifiers, \C, \Z, flags other than imsU, repeat counts over 1000, ...)
 * with Go's words and the byte offset in re:
 * `error parsing regexp "a**" at offset 2: invalid nested repetition operator: `**``.
 * max_mem 0 means PD_LABELS_DEFAULT_REGEX_MAX_MEM. *out is owned by the caller
 * (pd_labels_regex_destroy); re is copied. PD_EINVAL for a bad regex, PD_ENOMEM. */
int pd_labels_regex_compile(struct pd_labels_regex **out, const char *re, size_t len,
                            unsigned flags, size_t max_mem, struct pd_err *err);

/* Frees a regex; NULL does nothing. */
void pd_labels_regex_destroy(struct pd_labels_regex *rx);

/* Capture groups, not counting the whole match (0 unless compiled with
 * PD_LABELS_REGEX_CAPTURE). */
size_t pd_labels_regex_groups(const struct pd_labels_regex *rx);

/* The name of group i (1..groups) as written in (?P<name>...) or (?<name>...),
 * borrowed from rx; NULL when it has none. Two groups may share a name, as in Go. */
const char *pd_labels_regex_group_name(const struct pd_labels_regex *rx, size_t i);

/* An offset of a group that took no part in the match. */
#define PD_LABELS_REGEX_UNSET SIZE_MAX

/* Matches the whole of s (len bytes) as Go's regexp does (leftmost-first, so the
 * groups are Go's FindSubmatchIndex). Returns 1 on a match, 0 on none (also when s
 * is not valid UTF-8 where the regex reads a character), PD_ENOMEM when memory
 * ran out. On a match, when ov is not NULL, fills 2 * nov offsets: ov[2i] and
 * ov[2i+1] the start and end of group i (0: the whole text), PD_LABELS_REGEX_UNSET
 * for a group that took no part or does not exist. nov 0 is the fastest. */
int pd_labels_regex_match(const struct pd_labels_regex *rx, const char *s, size_t len,
                          size_t *ov, size_t nov);

/* ---- selectors ------------------------------------------------------------ */

/* Limits on selector parsing. A zero field means its default. */
struct pd_labels_parse_opts {
	size_t max_len;      /* bytes of selector text; PD_LABELS_DEFAULT_MAX_SELECTOR_LEN */
	size_t max_matchers; /* matchers, the metric name's included; ..._MAX_MATCHERS */
};

/* A parsed series selector. Owned by whoever parsed it; read-only to others. */
struct pd_labels_selector {
	/* The metric name (profile type) the selector fixes, when it does: the name
	 * written before the braces, else the value of the first __name__="..." matcher;
	 * NULL otherwise. Borrowed from the selector. Informational: the same condition is
	 * also among the matchers. */
	const char *name;
	/* Every matcher, in the order written; a name written before the braces becomes
	 * a __name__="name" matcher at the end, as Prometheus appends it. */
	struct pd_labels_matcher **matchers;
	size_t nmatchers;
};

/* Parses a PromQL series selector, e.g. `heap{job="api",instance=~"a|b"}`, `heap`,
 * `{__name__="heap"}`, `{job="x",}`, as Prometheus's parser.ParseMetricSelector
 * does, plus the PromQL check that at least one matcher does not match the empty
 * string. input is len bytes (need not be NUL-terminated). On success *out is new and
 * owned by the caller (pd_labels_selector_destroy). On failure err holds Prometheus's
 * message with its line:column (1-based, in bytes), e.g.
 * `1:6: parse error: unexpected character inside braces: '%'`; PD_ETOOBIG when a
 * limit is exceeded, PD_EINVAL otherwise. opts may be NULL. Anything after the
 * selector (a range, an offset, a function call, an operator) is an error: profd
 * takes a single series selector, not a PromQL expression. */
int pd_labels_selector_parse(struct pd_labels_selector **out, const char *input, size_t len,
                             const struct pd_labels_parse_opts *opts, struct pd_err *err);

/* Frees a selector and its matchers; NULL does nothing. */
void pd_labels_selector_destroy(struct pd_labels_selector *s);

/* 1 when ls matches every matcher of s, else 0. */
int pd_labels_selector_matches(const struct pd_labels_selector *s, const struct pd_labels *ls);

/* Appends s as PromQL prints a vector selector: `heap{job="api",instance=~"a|b"}`
 * (the name bare when it can be, matchers joined by ","). The output parses back to
 * the same matchers. */
int pd_labels_selector_format(const struct pd_labels_selector *s, struct pd_buf *b);

#endif
