/* labels_int.h: what the files of pkg/labels share privately: the layout of a label
 * set, UTF-8 and Go-style quoting helpers, and the selector lexer's tokens. */
#ifndef PROFD_LABELS_INT_H
#define PROFD_LABELS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "profd/labels.h"

/* A label set is one malloc'd block: this header, then n struct pd_label, then the
 * strings they point to (each NUL-terminated), so that a copy is one memcpy plus a
 * pointer fix-up. */
struct pd_labels {
	size_t n;
	size_t size; /* bytes of the whole block */
	struct pd_label l[];
};

/* ---- UTF-8 ---------------------------------------------------------------- */

#define PD_LABELS_RUNE_ERROR 0xFFFDu

/* Decodes one UTF-8 sequence at s (len > 0 bytes available) as Go's
 * utf8.DecodeRune does: returns its width and sets *r; an invalid or truncated
 * sequence, overlong form or surrogate gives width 1 and *r = PD_LABELS_RUNE_ERROR. */
size_t pd_labels_utf8_decode(const unsigned char *s, size_t len, uint32_t *r);

/* 1 when s (len bytes) is valid UTF-8. */
int pd_labels_utf8_valid(const char *s, size_t len);

/* Appends the UTF-8 encoding of r (r <= 0x10FFFF, not a surrogate) to out, returns
 * the number of bytes (1..4). out needs room for 4. */
size_t pd_labels_utf8_encode(uint32_t r, char *out);

/* Approximates Go's strconv.IsPrint: 0 for controls, format characters, non-ASCII
 * spaces, private use, noncharacters and surrogates; 1 otherwise. */
int pd_labels_is_print(uint32_t r);

/* ---- quoting -------------------------------------------------------------- */

/* Appends s quoted with quote char q ('"' or '\'') as Go's strconv.Quote does. */
int pd_labels_quote_with(struct pd_buf *b, const char *s, size_t len, char q);

/* Writes s quoted as Go's %q into dst (always NUL-terminated), cutting the input to
 * max bytes and adding "..." after the closing quote when it was longer. For
 * messages; never fails. */
void pd_labels_quote_msg(char *dst, size_t cap, const char *s, size_t len, size_t max);

/* Writes r as Go's %q of a rune ('x', '\n', '\x00') into dst. */
void pd_labels_quote_rune(char *dst, size_t cap, uint32_t r);

/* Writes r as Go's %#U ("U+0071 'q'", or "U+0007" when not printable) into dst. */
void pd_labels_format_U(char *dst, size_t cap, uint32_t r);

/* ---- limits --------------------------------------------------------------- */

/* Copies limits with zero fields replaced by the defaults (limits may be NULL). */
struct pd_labels_limits pd_labels_limits_resolve(const struct pd_labels_limits *limits);

/* Checks one label against the name syntax and the limits. On failure writes a
 * message naming the label into msg (cap bytes) and returns PD_EINVAL or PD_ETOOBIG. */
int pd_labels_check_label(const struct pd_labels_limits *lim, const char *name, size_t nlen,
                          const char *value, size_t vlen, char *msg, size_t cap);

/* The message of a builder's sticky error ("" when there is none). */
const char *pd_labels_builder_error(const struct pd_labels_builder *b);

/* ---- regexes -------------------------------------------------------------- */

/* Checks re (len bytes) against the syntax of Go's regexp and writes the pattern RE2
 * compiles to the same meaning, wrapped as ^(?s:...)$ (re2.c). On success *out
 * (malloc'd, NUL-terminated, caller frees) is the pattern and *map (malloc'd, caller
 * frees) maps each byte offset of *out, and the offset just past its end, to an
 * offset in re, so that a fault RE2 finds is reported in the user's terms. On
 * failure writes a message (without the regex) into msg and the offset into
 * *err_off, and returns PD_EINVAL (or PD_ENOMEM). */
int pd_labels_re2_translate(const char *re, size_t len, char **out, size_t **map, char *msg,
                            size_t cap, size_t *err_off);

#endif
