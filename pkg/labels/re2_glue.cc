/* re2_glue.cc: the C interface (re2_glue.h) to Google's RE2 (C++), the linear-time engine that
 * runs label matchers and relabeling regexes. Nothing here knows about Go's
 * syntax rules or messages (pkg/labels/regex.c does): it compiles a pattern that
 * has already been checked, reports RE2's error code and fragment when RE2 still
 * rejects it, and matches a text in full with or without submatches. No C++
 * exception leaves this file: an allocation failure becomes PD_LABELS_RE2_NOMEM. */
#include <re2/re2.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>

#include "re2_glue.h"

struct pd_labels_re2 {
	re2::RE2 *re;
	size_t ngroups;
	char **names; /* [ngroups + 1], names[0] NULL */
};

static void free_names(struct pd_labels_re2 *r)
{
	if (r->names)
		for (size_t i = 0; i <= r->ngroups; i++)
			std::free(r->names[i]);
	std::free(r->names);
	r->names = nullptr;
}

void pd_labels_re2_free(struct pd_labels_re2 *r)
{
	if (!r)
		return;
	delete r->re;
	free_names(r);
	std::free(r);
}

/* Copies RE2's group names into a plain array, so that C reads them without
 * touching C++ containers. */
static int copy_names(struct pd_labels_re2 *r)
{
	r->names = static_cast<char **>(std::calloc(r->ngroups + 1, sizeof(char *)));
	if (!r->names)
		return PD_LABELS_RE2_NOMEM;
	const std::map<int, std::string> &m = r->re->CapturingGroupNames();
	for (const auto &kv : m) {
		if (kv.first <= 0 || static_cast<size_t>(kv.first) > r->ngroups)
			continue;
		r->names[kv.first] = strdup(kv.second.c_str());
		if (!r->names[kv.first])
			return PD_LABELS_RE2_NOMEM;
	}
	return 0;
}

int pd_labels_re2_new(struct pd_labels_re2 **out, const char *pattern, size_t len,
                                 int captures, int64_t max_mem, int *code, char *arg,
                                 size_t argcap)
{
	struct pd_labels_re2 *r;
	int rc = PD_LABELS_RE2_NOMEM;

	*out = nullptr;
	*code = PD_LABELS_RE2_OK;
	if (argcap)
		arg[0] = '\0';
	r = static_cast<struct pd_labels_re2 *>(std::calloc(1, sizeof(*r)));
	if (!r)
		return PD_LABELS_RE2_NOMEM;
	try {
		re2::RE2::Options o;
		o.set_encoding(re2::RE2::Options::EncodingUTF8);
		o.set_posix_syntax(false); /* Perl's classes, \b, \A, \z, (?flags): Go's syntax */
		o.set_longest_match(false); /* leftmost-first, as Go's regexp */
		o.set_log_errors(false);
		o.set_never_capture(!captures);
		o.set_case_sensitive(true);
		o.set_max_mem(max_mem);
		r->re = new re2::RE2(re2::StringPiece(pattern, len), o);
		if (!r->re->ok()) {
			*code = static_cast<int>(r->re->error_code());
			if (argcap)
				std::snprintf(arg, argcap, "%s", r->re->error_arg().c_str());
			rc = PD_LABELS_RE2_INVALID;
			goto fail;
		}
		r->ngroups = static_cast<size_t>(r->re->NumberOfCapturingGroups());
		if ((rc = copy_names(r)) < 0)
			goto fail;
	} catch (const std::bad_alloc &) {
		rc = PD_LABELS_RE2_NOMEM;
		goto fail;
	}
	*out = r;
	return 0;
fail:
	pd_labels_re2_free(r);
	return rc;
}

size_t pd_labels_re2_ngroups(const struct pd_labels_re2 *r)
{
	return r->ngroups;
}

const char *pd_labels_re2_group_name(const struct pd_labels_re2 *r, size_t i)
{
	return i <= r->ngroups ? r->names[i] : nullptr;
}

int pd_labels_re2_match(const struct pd_labels_re2 *r, const char *s, size_t len,
                                   size_t *ov, size_t nov)
{
	/* without submatches RE2 answers with its DFA alone; with them, up to 1 + ngroups
	 * pieces, on the stack for the usual few groups */
	enum { STACK_PIECES = 16 };
	re2::StringPiece stack[STACK_PIECES];
	re2::StringPiece *sub = stack;
	size_t n = nov;
	int matched = 0;

	if (n > r->ngroups + 1)
		n = r->ngroups + 1;
	try {
		if (n > STACK_PIECES)
			sub = new re2::StringPiece[n];
		matched = r->re->Match(re2::StringPiece(s, len), 0, len, re2::RE2::ANCHOR_BOTH, sub,
		                       static_cast<int>(n));
	} catch (const std::bad_alloc &) {
		return PD_LABELS_RE2_NOMEM;
	}
	if (matched && ov) {
		for (size_t i = 0; i < nov; i++) {
			if (i < n && sub[i].data() != nullptr) {
				ov[2 * i] = static_cast<size_t>(sub[i].data() - s);
				ov[2 * i + 1] = ov[2 * i] + sub[i].size();
			} else {
				ov[2 * i] = ov[2 * i + 1] = PD_LABELS_RE2_UNSET;
			}
		}
	}
	if (sub != stack)
		delete[] sub;
	return matched;
}
