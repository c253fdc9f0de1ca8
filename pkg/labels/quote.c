/* quote.c: UTF-8 decoding and validation, and quoting strings the way Go's
 * strconv.Quote and fmt's %q and %#U do, which is how Prometheus prints label
 * values and how its parser words errors. */
#include "labels_int.h"

#include <stdio.h>
#include <string.h>

static const char lowerhex[] = "0123456789abcdef";

size_t pd_labels_utf8_decode(const unsigned char *s, size_t len, uint32_t *r)
{
	unsigned char c = s[0];
	uint32_t v, min;
	size_t n;

	if (c < 0x80) {
		*r = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		n = 2;
		v = c & 0x1F;
		min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		v = c & 0x0F;
		min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		v = c & 0x07;
		min = 0x10000;
	} else {
		goto bad;
	}
	if (len < n)
		goto bad;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			goto bad;
		v = (v << 6) | (s[i] & 0x3F);
	}
	if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		goto bad;
	*r = v;
	return n;
bad:
	*r = PD_LABELS_RUNE_ERROR;
	return 1;
}

int pd_labels_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < len) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		uint32_t r;
		size_t w = pd_labels_utf8_decode(p + i, len - i, &r);
		if (r == PD_LABELS_RUNE_ERROR && w == 1)
			return 0;
		i += w;
	}
	return 1;
}

size_t pd_labels_utf8_encode(uint32_t r, char *out)
{
	unsigned char *o = (unsigned char *)out;
	if (r < 0x80) {
		o[0] = (unsigned char)r;
		return 1;
	}
	if (r < 0x800) {
		o[0] = (unsigned char)(0xC0 | (r >> 6));
		o[1] = (unsigned char)(0x80 | (r & 0x3F));
		return 2;
	}
	if (r < 0x10000) {
		o[0] = (unsigned char)(0xE0 | (r >> 12));
		o[1] = (unsigned char)(0x80 | ((r >> 6) & 0x3F));
		o[2] = (unsigned char)(0x80 | (r & 0x3F));
		return 3;
	}
	o[0] = (unsigned char)(0xF0 | (r >> 18));
	o[1] = (unsigned char)(0x80 | ((r >> 12) & 0x3F));
	o[2] = (unsigned char)(0x80 | ((r >> 6) & 0x3F));
	o[3] = (unsigned char)(0x80 | (r & 0x3F));
	return 4;
}

/* Writes the escaped form of rune r (width bytes at s) into out; returns its length
 * (at most 10 bytes). An invalid byte (r is the error rune, width 1) becomes \xNN. */
static size_t escape_rune(char *out, const char *s, uint32_t r, size_t width, char q)
{
	size_t n = 0;
	if (width == 1 && r == PD_LABELS_RUNE_ERROR) {
		unsigned char c = (unsigned char)s[0];
		out[n++] = '\\';
		out[n++] = 'x';
		out[n++] = lowerhex[c >> 4];
		out[n++] = lowerhex[c & 15];
		return n;
	}
	if (r == (uint32_t)(unsigned char)q || r == '\\') {
		out[n++] = '\\';
		out[n++] = (char)r;
		return n;
	}
	if (pd_labels_is_print(r)) {
		memcpy(out, s, width);
		return width;
	}
	out[n++] = '\\';
	switch (r) {
	case '\a':
		out[n++] = 'a';
		return n;
	case '\b':
		out[n++] = 'b';
		return n;
	case '\f':
		out[n++] = 'f';
		return n;
	case '\n':
		out[n++] = 'n';
		return n;
	case '\r':
		out[n++] = 'r';
		return n;
	case '\t':
		out[n++] = 't';
		return n;
	case '\v':
		out[n++] = 'v';
		return n;
	default:
		break;
	}
	if (r < ' ' || r == 0x7f) {
		out[n++] = 'x';
		out[n++] = lowerhex[r >> 4];
		out[n++] = lowerhex[r & 15];
	} else if (r < 0x10000) {
		out[n++] = 'u';
		for (int sh = 12; sh >= 0; sh -= 4)
			out[n++] = lowerhex[(r >> sh) & 15];
	} else {
		out[n++] = 'U';
		for (int sh = 28; sh >= 0; sh -= 4)
			out[n++] = lowerhex[(r >> sh) & 15];
	}
	return n;
}

int pd_labels_quote_with(struct pd_buf *b, const char *s, size_t len, char q)
{
	const unsigned char *p = (const unsigned char *)s;
	char tmp[16];
	size_t i = 0, run = 0; /* run: start of bytes that need no escaping */
	int rc;

	if ((rc = pd_buf_append(b, &q, 1)) < 0)
		return rc;
	while (i < len) {
		uint32_t r;
		size_t w;
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != (unsigned char)q && p[i] != '\\') {
			i++;
			continue;
		}
		w = pd_labels_utf8_decode(p + i, len - i, &r);
		size_t n = escape_rune(tmp, s + i, r, w, q);
		if (n == w && memcmp(tmp, s + i, w) == 0) {
			i += w; /* printable non-ASCII: stays in the run */
			continue;
		}
		if ((rc = pd_buf_append(b, s + run, i - run)) < 0 ||
		    (rc = pd_buf_append(b, tmp, n)) < 0)
			return rc;
		i += w;
		run = i;
	}
	if ((rc = pd_buf_append(b, s + run, len - run)) < 0 || (rc = pd_buf_append(b, &q, 1)) < 0)
		return rc;
	return 0;
}

int pd_labels_quote(struct pd_buf *b, const char *s, size_t len)
{
	return pd_labels_quote_with(b, s, len, '"');
}

void pd_labels_quote_msg(char *dst, size_t cap, const char *s, size_t len, size_t max)
{
	struct pd_buf b;
	size_t cut = len;

	if (cap == 0)
		return;
	if (cut > max) {
		/* cut at a character boundary */
		cut = max;
		while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
			cut--;
	}
	pd_buf_init(&b, 0);
	if (pd_labels_quote_with(&b, s, cut, '"') < 0 ||
	    (cut < len && pd_buf_append(&b, "...", 3) < 0)) {
		snprintf(dst, cap, "\"...\"");
		pd_buf_fini(&b);
		return;
	}
	snprintf(dst, cap, "%.*s", (int)b.len, (const char *)b.data);
	pd_buf_fini(&b);
}

void pd_labels_quote_rune(char *dst, size_t cap, uint32_t r)
{
	char enc[4], tmp[16];
	size_t w, n;

	if (cap == 0)
		return;
	if (r > 0x10FFFF || (r >= 0xD800 && r <= 0xDFFF))
		r = PD_LABELS_RUNE_ERROR;
	w = pd_labels_utf8_encode(r, enc);
	/* width is never 1 for the error rune here, so it is printed, as Go does */
	n = escape_rune(tmp, enc, r, w, '\'');
	snprintf(dst, cap, "'%.*s'", (int)n, tmp);
}

void pd_labels_format_U(char *dst, size_t cap, uint32_t r)
{
	if (pd_labels_is_print(r)) {
		char enc[5];
		size_t w = pd_labels_utf8_encode(r, enc);
		enc[w] = '\0';
		snprintf(dst, cap, "U+%04X '%s'", (unsigned)r, enc);
	} else {
		snprintf(dst, cap, "U+%04X", (unsigned)r);
	}
}
