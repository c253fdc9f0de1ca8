/* relabel_int.h: what the files of pkg/relabel share privately: the compiled form
 * of a rule, the anchored regex with capture groups and Go's regexp.Expand, MD5
 * for hashmod, and the Unicode tables that make lowercase, uppercase and $name
 * expansion behave as Go's strings and regexp packages do. */
#ifndef PROFD_RELABEL_INT_H
#define PROFD_RELABEL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "profd/relabel.h"

/* ---- regexes ------------------------------------------------------------- */

/* A rule's regex, anchored as Prometheus anchors it: ^(?s:RE)$. The default
 * "(.*)" never goes through RE2: it matches everything, group 1 is the whole
 * input. */
struct pd_relabel_regex {
	char *src;                  /* the regex as written */
	int any;                    /* the default (.*) */
	struct pd_labels_regex *re; /* with capture groups; NULL when any */
	uint32_t ncap;              /* capture groups, not counting group 0 */
};

/* An unset capture offset (a group that took no part in the match). */
#define PD_RELABEL_UNSET SIZE_MAX

/* Compiles src with the labels package's regexes (Go's syntax, RE2), so that it
 * means what it means in Prometheus. On failure err says
 * `error parsing regexp "(a" at offset 2: ...`, as matchers do. */
int pd_relabel_regex_compile(struct pd_relabel_regex *rx, const char *src, int is_default,
                             struct pd_err *err);
void pd_relabel_regex_fini(struct pd_relabel_regex *rx);

/* Matches s (len bytes) in full, in time linear in len. On a match returns 1 and
 * fills ov with 2 * (ncap + 1) offsets (PD_RELABEL_UNSET for groups that did not
 * take part); ov may be NULL when only the yes/no matters. Returns 0 when there is
 * no match (also when s is not valid UTF-8 where the regex reads a character, or
 * memory ran out). Thread-safe: rx is only read. */
int pd_relabel_regex_match(const struct pd_relabel_regex *rx, const char *s, size_t len,
                           size_t *ov);

/* Appends template to out with $-expansion exactly as Go's regexp.Expand: $$ is a
 * literal $; $name and ${name} take the longest run of letters, digits and '_'
 * (Unicode, as Go's unicode.IsLetter / IsDigit); a name that is a decimal number
 * without leading zeros (below 1e8) is a group number, any other name a named
 * group; a group that does not exist or did not take part gives ""; a $ that
 * starts no valid reference ("$", "${", "${}", "${x", "$-") is copied as is. */
int pd_relabel_expand(struct pd_buf *out, const char *tmpl, const struct pd_relabel_regex *rx,
                      const char *src, const size_t *ov);

/* ---- rules --------------------------------------------------------------- */

struct pd_relabel_rule {
	enum pd_relabel_action action;
	char **source_labels;
	size_t nsource_labels;
	char *separator;
	char *target_label;
	char *replacement;
	uint64_t modulus;
	struct pd_relabel_regex regex;
};

struct pd_relabel_rules {
	struct pd_relabel_rule *rules;
	size_t n;
	uint32_t max_ncap; /* the most capture groups of any rule's regex */
};

/* ---- MD5 (RFC 1321) ------------------------------------------------------ */

void pd_relabel_md5(const void *p, size_t len, uint8_t digest[16]);

/* ---- Unicode, as Go's unicode package ------------------------------------ */

/* Go's unicode.UpperLower: in a case range, the delta that means "alternating
 * upper/lower pairs". */
#define PD_RELABEL_UPPER_LOWER (0x10FFFF + 1)

struct pd_relabel_case_range {
	uint32_t lo, hi;
	int32_t delta[3]; /* to upper, to lower, to title */
};

struct pd_relabel_urange {
	uint32_t lo, hi, stride;
};

extern const struct pd_relabel_case_range pd_relabel_case_ranges[];
extern const size_t pd_relabel_case_ranges_len;
extern const struct pd_relabel_urange pd_relabel_letter[];
extern const size_t pd_relabel_letter_len;
extern const struct pd_relabel_urange pd_relabel_digit[];
extern const size_t pd_relabel_digit_len;

/* unicode.ToLower / unicode.ToUpper of one code point. */
uint32_t pd_relabel_to_lower(uint32_t r);
uint32_t pd_relabel_to_upper(uint32_t r);
/* unicode.IsLetter / unicode.IsDigit. */
int pd_relabel_is_letter(uint32_t r);
int pd_relabel_is_digit(uint32_t r);

/* Appends s (len bytes) to out as Go's strings.ToLower (upper = 0) or
 * strings.ToUpper (upper = 1) returns it: each code point mapped by its simple
 * case mapping, bytes that are not valid UTF-8 replaced by U+FFFD. */
int pd_relabel_case_map(struct pd_buf *out, const char *s, size_t len, int upper);

#endif
