/* json.c: a strict JSON reader for target-group documents (file_sd .json files and
 * http_sd bodies) that builds the document tree of discovery_int.h. It accepts what
 * Go's encoding/json accepts and says what it says ("invalid character 'x' after
 * array element", "unexpected end of JSON input"), plus the line and column:
 * RFC 8259 syntax, \uXXXX escapes with UTF-16 surrogate pairs (a lone surrogate
 * becomes U+FFFD), invalid UTF-8 replaced by U+FFFD, raw control characters in
 * strings rejected. libyaml reads most JSON too, but not all of it (it rejects
 * surrogate-pair escapes, which Python's json.dumps writes by default, folds raw
 * U+2028 in strings, and takes comments and single quotes), so JSON gets its own
 * reader. */
#include "discovery_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jp {
	struct pd_sd_doc *doc;
	const unsigned char *s;
	size_t len, pos;
	struct pd_buf str; /* scratch for decoding strings */
	struct pd_err *err;
};

/* Go's quoteChar: 'x', '\n', '\x01', and the character itself for non-ASCII. */
static void quote_char(const struct jp *p, size_t at, char *dst, size_t cap)
{
	unsigned char c = p->s[at];
	if (c == '\'') {
		snprintf(dst, cap, "'\\''");
	} else if (c >= 0x20 && c < 0x7f) {
		snprintf(dst, cap, "'%c'", c);
	} else if (c >= 0x80) {
		size_t w = 1;
		while (w < 4 && at + w < p->len && (p->s[at + w] & 0xc0) == 0x80)
			w++;
		snprintf(dst, cap, "'%.*s'", (int)w, (const char *)p->s + at);
	} else {
		const char *e = NULL;
		switch (c) {
		case '\n':
			e = "\\n";
			break;
		case '\r':
			e = "\\r";
			break;
		case '\t':
			e = "\\t";
			break;
		case '\b':
			e = "\\b";
			break;
		case '\f':
			e = "\\f";
			break;
		case '\v':
			e = "\\v";
			break;
		case '\a':
			e = "\\a";
			break;
		}
		if (e)
			snprintf(dst, cap, "'%s'", e);
		else
			snprintf(dst, cap, "'\\x%02x'", c);
	}
}

static int eof_err(struct jp *p)
{
	return pd_sd_doc_err(p->doc, NULL, p->len, p->err, PD_EINVAL,
	                     "unexpected end of JSON input");
}

/* "invalid character 'x' <what>" at the current position. */
static int char_err(struct jp *p, const char *what)
{
	char q[16];
	if (p->pos >= p->len)
		return eof_err(p);
	quote_char(p, p->pos, q, sizeof(q));
	return pd_sd_doc_err(p->doc, NULL, p->pos, p->err, PD_EINVAL, "invalid character %s %s", q,
	                     what);
}

static void skip_ws(struct jp *p)
{
	while (p->pos < p->len) {
		unsigned char c = p->s[p->pos];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		p->pos++;
	}
}

static struct pd_sd_node *new_node(struct jp *p, enum pd_sd_kind kind, size_t off)
{
	struct pd_sd_node *n = pd_arena_calloc(p->doc->arena, 1, sizeof(*n));
	if (!n) {
		pd_err_set(p->err, PD_ENOMEM, "%s: document too large to parse", p->doc->prefix);
		return NULL;
	}
	n->kind = kind;
	n->pos = off;
	return n;
}

static int set_text(struct jp *p, struct pd_sd_node *n, const void *s, size_t len)
{
	char *t = pd_arena_strndup(p->doc->arena, s, len);
	if (!t)
		return pd_err_set(p->err, PD_ENOMEM, "%s: document too large to parse",
		                  p->doc->prefix);
	n->str = t;
	n->len = len;
	return 0;
}

static int put_utf8(struct pd_buf *b, uint32_t r)
{
	unsigned char u[4];
	size_t n;
	if (r < 0x80) {
		u[0] = (unsigned char)r;
		n = 1;
	} else if (r < 0x800) {
		u[0] = (unsigned char)(0xc0 | (r >> 6));
		u[1] = (unsigned char)(0x80 | (r & 0x3f));
		n = 2;
	} else if (r < 0x10000) {
		u[0] = (unsigned char)(0xe0 | (r >> 12));
		u[1] = (unsigned char)(0x80 | ((r >> 6) & 0x3f));
		u[2] = (unsigned char)(0x80 | (r & 0x3f));
		n = 3;
	} else {
		u[0] = (unsigned char)(0xf0 | (r >> 18));
		u[1] = (unsigned char)(0x80 | ((r >> 12) & 0x3f));
		u[2] = (unsigned char)(0x80 | ((r >> 6) & 0x3f));
		u[3] = (unsigned char)(0x80 | (r & 0x3f));
		n = 4;
	}
	return pd_buf_append(b, u, n);
}

/* Width of the valid UTF-8 sequence at s (len > 0 bytes), or 0 when it is not one
 * (bad lead byte, truncated, overlong, surrogate, above U+10FFFF). */
static size_t utf8_width(const unsigned char *s, size_t len)
{
	unsigned char c = s[0];
	size_t w;
	uint32_t r;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		w = 2, r = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		w = 3, r = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		w = 4, r = c & 0x07;
	else
		return 0;
	if (len < w)
		return 0;
	for (size_t i = 1; i < w; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		r = (r << 6) | (s[i] & 0x3f);
	}
	if ((w == 3 && r < 0x800) || (w == 4 && (r < 0x10000 || r > 0x10ffff)) ||
	    (r >= 0xd800 && r <= 0xdfff))
		return 0;
	return w;
}

static int hex4(struct jp *p, uint32_t *out)
{
	uint32_t r = 0;
	for (int i = 0; i < 4; i++) {
		if (p->pos >= p->len)
			return eof_err(p);
		unsigned char c = p->s[p->pos];
		uint32_t d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return char_err(p, "in \\u hexadecimal character escape");
		r = r << 4 | d;
		p->pos++;
	}
	*out = r;
	return 0;
}

/* Decodes the string at p->pos (the opening quote) into p->str. */
static int scan_string(struct jp *p)
{
	int rc;
	p->str.len = 0;
	p->pos++;
	for (;;) {
		if (p->pos >= p->len)
			return eof_err(p);
		unsigned char c = p->s[p->pos];
		if (c == '"') {
			p->pos++;
			return 0;
		}
		if (c < 0x20)
			return char_err(p, "in string literal");
		if (c == '\\') {
			p->pos++;
			if (p->pos >= p->len)
				return eof_err(p);
			char e = (char)p->s[p->pos];
			char out;
			switch (e) {
			case '"':
				out = '"';
				break;
			case '\\':
				out = '\\';
				break;
			case '/':
				out = '/';
				break;
			case 'b':
				out = '\b';
				break;
			case 'f':
				out = '\f';
				break;
			case 'n':
				out = '\n';
				break;
			case 'r':
				out = '\r';
				break;
			case 't':
				out = '\t';
				break;
			case 'u': {
				uint32_t r, r2;
				p->pos++;
				if ((rc = hex4(p, &r)))
					return rc;
				if (r >= 0xd800 && r < 0xdc00 && p->pos + 1 < p->len &&
				    p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u') {
					/* a high surrogate: combine with a following low one,
					 * as Go's utf16.DecodeRune; otherwise U+FFFD and the
					 * next escape is read on its own */
					size_t save = p->pos;
					p->pos += 2;
					if ((rc = hex4(p, &r2)))
						return rc;
					if (r2 >= 0xdc00 && r2 < 0xe000)
						r = 0x10000 + ((r - 0xd800) << 10) + (r2 - 0xdc00);
					else {
						r = 0xfffd;
						p->pos = save;
					}
				} else if (r >= 0xd800 && r < 0xe000) {
					r = 0xfffd;
				}
				if ((rc = put_utf8(&p->str, r)))
					goto nomem;
				continue;
			}
			default:
				return char_err(p, "in string escape code");
			}
			if ((rc = pd_buf_append(&p->str, &out, 1)))
				goto nomem;
			p->pos++;
			continue;
		}
		if (c < 0x80) {
			size_t start = p->pos;
			while (p->pos < p->len && p->s[p->pos] >= 0x20 && p->s[p->pos] < 0x80 &&
			       p->s[p->pos] != '"' && p->s[p->pos] != '\\')
				p->pos++;
			if ((rc = pd_buf_append(&p->str, p->s + start, p->pos - start)))
				goto nomem;
			continue;
		}
		size_t w = utf8_width(p->s + p->pos, p->len - p->pos);
		if (w == 0) {
			if ((rc = put_utf8(&p->str, 0xfffd)))
				goto nomem;
			p->pos++;
		} else {
			if ((rc = pd_buf_append(&p->str, p->s + p->pos, w)))
				goto nomem;
			p->pos += w;
		}
	}
nomem:
	return pd_err_set(p->err, rc, "%s: document too large to parse", p->doc->prefix);
}

static int is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* Scans a number as Go's scanner does; the character after it is the caller's. */
static int scan_number(struct jp *p)
{
	if (p->s[p->pos] == '-') {
		p->pos++;
		if (p->pos >= p->len)
			return eof_err(p);
		if (!is_digit(p->s[p->pos]))
			return char_err(p, "in numeric literal");
	}
	if (p->s[p->pos] == '0') {
		p->pos++;
	} else {
		while (p->pos < p->len && is_digit(p->s[p->pos]))
			p->pos++;
	}
	if (p->pos < p->len && p->s[p->pos] == '.') {
		p->pos++;
		if (p->pos >= p->len)
			return eof_err(p);
		if (!is_digit(p->s[p->pos]))
			return char_err(p, "after decimal point in numeric literal");
		while (p->pos < p->len && is_digit(p->s[p->pos]))
			p->pos++;
	}
	if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
		p->pos++;
		if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
			p->pos++;
		if (p->pos >= p->len)
			return eof_err(p);
		if (!is_digit(p->s[p->pos]))
			return char_err(p, "in exponent of numeric literal");
		while (p->pos < p->len && is_digit(p->s[p->pos]))
			p->pos++;
	}
	return 0;
}

static int scan_literal(struct jp *p, const char *word)
{
	char what[48];
	for (size_t i = 0; word[i]; i++) {
		if (p->pos >= p->len)
			return eof_err(p);
		if (p->s[p->pos] != (unsigned char)word[i]) {
			snprintf(what, sizeof(what), "in literal %s (expecting '%c')", word,
			         word[i]);
			return char_err(p, what);
		}
		p->pos++;
	}
	return 0;
}

/* A growable list of node pointers, for the children of one container. */
struct kids {
	struct pd_sd_node **v;
	size_t n, cap;
};

static int kids_push(struct kids *k, struct pd_sd_node *n)
{
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 8;
		struct pd_sd_node **v = realloc(k->v, cap * sizeof(*v));
		if (!v)
			return PD_ENOMEM;
		k->v = v;
		k->cap = cap;
	}
	k->v[k->n++] = n;
	return 0;
}

static int kids_finish(struct jp *p, struct kids *k, struct pd_sd_node *n, size_t count)
{
	if (k->n) {
		n->kids = pd_arena_alloc(p->doc->arena, k->n * sizeof(*n->kids));
		if (!n->kids)
			return pd_err_set(p->err, PD_ENOMEM, "%s: document too large to parse",
			                  p->doc->prefix);
		memcpy(n->kids, k->v, k->n * sizeof(*n->kids));
	}
	n->n = count;
	return 0;
}

static int parse_value(struct jp *p, int depth, struct pd_sd_node **out);

static int parse_container(struct jp *p, int depth, struct pd_sd_node *n)
{
	int is_map = n->kind == PD_SD_MAP, rc = 0;
	char close = is_map ? '}' : ']';
	struct kids k = {0};
	struct pd_sd_node *child;

	if (depth >= PD_SD_MAX_DEPTH)
		return pd_sd_doc_err(p->doc, NULL, p->pos, p->err, PD_EINVAL, "exceeded max depth");
	p->pos++;
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		return 0;
	}
	for (;;) {
		skip_ws(p);
		if (is_map) {
			if (p->pos >= p->len) {
				rc = eof_err(p);
				goto out;
			}
			if (p->s[p->pos] != '"') {
				rc = char_err(p, "looking for beginning of object key string");
				goto out;
			}
			if ((rc = parse_value(p, depth + 1, &child)))
				goto out;
			if (kids_push(&k, child))
				goto nomem;
			skip_ws(p);
			if (p->pos >= p->len) {
				rc = eof_err(p);
				goto out;
			}
			if (p->s[p->pos] != ':') {
				rc = char_err(p, "after object key");
				goto out;
			}
			p->pos++;
		}
		if ((rc = parse_value(p, depth + 1, &child)))
			goto out;
		if (kids_push(&k, child))
			goto nomem;
		skip_ws(p);
		if (p->pos >= p->len) {
			rc = eof_err(p);
			goto out;
		}
		if (p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->s[p->pos] == close) {
			p->pos++;
			break;
		}
		rc = char_err(p, is_map ? "after object key:value pair" : "after array element");
		goto out;
	}
	rc = kids_finish(p, &k, n, is_map ? k.n / 2 : k.n);
out:
	free(k.v);
	return rc;
nomem:
	free(k.v);
	return pd_err_set(p->err, PD_ENOMEM, "%s: document too large to parse", p->doc->prefix);
}

static int parse_value(struct jp *p, int depth, struct pd_sd_node **out)
{
	struct pd_sd_node *n;
	size_t start;
	int rc;

	skip_ws(p);
	if (p->pos >= p->len)
		return eof_err(p);
	start = p->pos;
	switch (p->s[p->pos]) {
	case '{':
	case '[':
		if (!(n = new_node(p, p->s[p->pos] == '{' ? PD_SD_MAP : PD_SD_LIST, start)))
			return PD_ENOMEM;
		if ((rc = parse_container(p, depth, n)))
			return rc;
		break;
	case '"':
		if (!(n = new_node(p, PD_SD_STRING, start)))
			return PD_ENOMEM;
		if ((rc = scan_string(p)))
			return rc;
		if ((rc = set_text(p, n, p->str.len ? (const char *)p->str.data : "", p->str.len)))
			return rc;
		break;
	case 't':
	case 'f':
	case 'n': {
		const char *word = p->s[p->pos] == 't'   ? "true"
		                   : p->s[p->pos] == 'f' ? "false"
		                                         : "null";
		if (!(n = new_node(p, word[0] == 'n' ? PD_SD_NULL : PD_SD_BOOL, start)))
			return PD_ENOMEM;
		if ((rc = scan_literal(p, word)))
			return rc;
		if (word[0] != 'n' && (rc = set_text(p, n, word, strlen(word))))
			return rc;
		break;
	}
	default:
		if (p->s[p->pos] != '-' && !is_digit(p->s[p->pos]))
			return char_err(p, "looking for beginning of value");
		if (!(n = new_node(p, PD_SD_NUMBER, start)))
			return PD_ENOMEM;
		if ((rc = scan_number(p)))
			return rc;
		if ((rc = set_text(p, n, p->s + start, p->pos - start)))
			return rc;
		break;
	}
	*out = n;
	return 0;
}

int pd_sd_json_parse(struct pd_sd_doc *doc, struct pd_err *err)
{
	struct jp p = {
	    .doc = doc, .s = (const unsigned char *)doc->text, .len = doc->len, .err = err};
	int rc;

	pd_buf_init(&p.str, 0);
	doc->root = NULL;
	if ((rc = parse_value(&p, 0, &doc->root)))
		goto out;
	skip_ws(&p);
	if (p.pos < p.len)
		rc = char_err(&p, "after top-level value");
out:
	pd_buf_fini(&p.str);
	if (rc)
		doc->root = NULL;
	return rc;
}
