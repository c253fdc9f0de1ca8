/* re2_glue.h: the C interface to RE2 that pkg/labels/re2_glue.cc implements in C++.
 * Plain C types only, so that both languages include it. Its one caller is regex.c,
 * which checks Go's syntax first and words errors as Go does. */
#ifndef PROFD_LABELS_RE2_GLUE_H
#define PROFD_LABELS_RE2_GLUE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A compiled RE2 program. Immutable once compiled: any number of threads may match
 * with it at once. */
struct pd_labels_re2;

/* Results of pd_labels_re2_new. */
#define PD_LABELS_RE2_INVALID (-1) /* RE2 rejected the pattern: see *code and arg */
#define PD_LABELS_RE2_NOMEM (-2)

/* An offset of a group that took no part in the match. */
#define PD_LABELS_RE2_UNSET SIZE_MAX

/* RE2's error codes (RE2::ErrorCode of libre2 2022-06-01, same order). */
enum pd_labels_re2_code {
	PD_LABELS_RE2_OK = 0,
	PD_LABELS_RE2_INTERNAL,
	PD_LABELS_RE2_BAD_ESCAPE,
	PD_LABELS_RE2_BAD_CHAR_CLASS,
	PD_LABELS_RE2_BAD_CHAR_RANGE,
	PD_LABELS_RE2_MISSING_BRACKET,
	PD_LABELS_RE2_MISSING_PAREN,
	PD_LABELS_RE2_UNEXPECTED_PAREN,
	PD_LABELS_RE2_TRAILING_BACKSLASH,
	PD_LABELS_RE2_REPEAT_ARGUMENT,
	PD_LABELS_RE2_REPEAT_SIZE,
	PD_LABELS_RE2_REPEAT_OP,
	PD_LABELS_RE2_BAD_PERL_OP,
	PD_LABELS_RE2_BAD_UTF8,
	PD_LABELS_RE2_BAD_NAMED_CAPTURE,
	PD_LABELS_RE2_PATTERN_TOO_LARGE,
};

/* Compiles pattern (len bytes, UTF-8, RE2's Perl-like syntax, leftmost-first
 * matching; capture groups only when captures is non-zero) within max_mem bytes of
 * program and DFA memory. Returns 0 and sets *out (owned by the caller:
 * pd_labels_re2_free); PD_LABELS_RE2_INVALID with RE2's error code in *code and
 * the fragment it names in arg (argcap bytes, NUL-terminated, cut to fit); or
 * PD_LABELS_RE2_NOMEM. */
int pd_labels_re2_new(struct pd_labels_re2 **out, const char *pattern, size_t len,
                      int captures, int64_t max_mem, int *code, char *arg, size_t argcap);

/* Frees a program; NULL does nothing. */
void pd_labels_re2_free(struct pd_labels_re2 *r);

/* Capture groups, not counting the whole match (0 when compiled without captures). */
size_t pd_labels_re2_ngroups(const struct pd_labels_re2 *r);

/* The name of group i (1..ngroups), borrowed from r; NULL when it has none. */
const char *pd_labels_re2_group_name(const struct pd_labels_re2 *r, size_t i);

/* Matches the whole of s (len bytes). Returns 1 on a match, 0 on none,
 * PD_LABELS_RE2_NOMEM when memory ran out. On a match, when ov is not NULL, fills
 * 2 * nov offsets: ov[2i], ov[2i+1] the start and end of group i (0 is the whole
 * match), PD_LABELS_RE2_UNSET for groups that took no part or do not exist. nov 0
 * (or 1) lets RE2 answer with its DFA alone, the fastest way. */
int pd_labels_re2_match(const struct pd_labels_re2 *r, const char *s, size_t len, size_t *ov,
                        size_t nov);

#ifdef __cplusplus
}
#endif

#endif
