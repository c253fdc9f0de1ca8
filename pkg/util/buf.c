/* buf.c: a growable byte buffer with a hard maximum, and JSON string escaping
 * (invalid UTF-8 replaced, so that every JSON profd writes is UTF-8, as RFC 8259
 * asks; profiles' strings are outside bytes). */
#include "profd/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pd_buf_init(struct pd_buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max ? max : SIZE_MAX;
	b->budget = NULL;
}

int pd_buf_budget_take(struct pd_buf_budget *bb, size_t n)
{
	size_t used = __atomic_load_n(&bb->used, __ATOMIC_RELAXED);
	do {
		if (bb->max && (n > bb->max || used > bb->max - n))
			return PD_EFULL;
	} while (!__atomic_compare_exchange_n(&bb->used, &used, used + n, 1, __ATOMIC_ACQ_REL,
	                                      __ATOMIC_RELAXED));
	return 0;
}

void pd_buf_budget_release(struct pd_buf_budget *bb, size_t n)
{
	if (bb && n)
		__atomic_fetch_sub(&bb->used, n, __ATOMIC_ACQ_REL);
}

/* What a capacity of cap charges to bb. */
static size_t charge_of(const struct pd_buf_budget *bb, size_t cap)
{
	return cap > bb->free_each ? cap - bb->free_each : 0;
}

size_t pd_buf_charge(const struct pd_buf *b)
{
	return b->budget ? charge_of(b->budget, b->cap) : 0;
}

void pd_buf_fini(struct pd_buf *b)
{
	pd_buf_budget_release(b->budget, pd_buf_charge(b));
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int pd_buf_reserve(struct pd_buf *b, size_t n)
{
	if (n > b->max || b->len > b->max - n)
		return PD_ETOOBIG;
	size_t need = b->len + n;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (cap > b->max)
		cap = b->max;
	size_t more = b->budget ? charge_of(b->budget, cap) - charge_of(b->budget, b->cap) : 0;
	if (more && pd_buf_budget_take(b->budget, more))
		return PD_EFULL;
	uint8_t *d = realloc(b->data, cap);
	if (!d) {
		pd_buf_budget_release(b->budget, more);
		return PD_ENOMEM;
	}
	b->data = d;
	b->cap = cap;
	return 0;
}

int pd_buf_append(struct pd_buf *b, const void *p, size_t n)
{
	int rc = pd_buf_reserve(b, n);
	if (rc)
		return rc;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

int pd_buf_printf(struct pd_buf *b, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return PD_EINVAL;
	if ((size_t)n < sizeof(small))
		return pd_buf_append(b, small, (size_t)n);
	int rc = pd_buf_reserve(b, (size_t)n + 1);
	if (rc)
		return rc;
	va_start(ap, fmt);
	vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

/* Length of the valid UTF-8 sequence at p (2-4; p[0] >= 0x80), which has n bytes
 * left, or 0 when it is not one (an overlong form, a surrogate, past U+10FFFF, or
 * cut short by the end of the string). */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
		if (n < 3 || p[1] < lo || p[1] > hi || (p[2] & 0xc0) != 0x80)
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
		if (n < 4 || p[1] < lo || p[1] > hi || (p[2] & 0xc0) != 0x80 ||
		    (p[3] & 0xc0) != 0x80)
			return 0;
		return 4;
	}
	return 0;
}

int pd_buf_json_string(struct pd_buf *b, const char *s)
{
	return pd_buf_json_stringn(b, s, strlen(s));
}

int pd_buf_json_stringn(struct pd_buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	int rc = pd_buf_append(b, "\"", 1);
	if (!s) {
		s = "";
		len = 0;
	}
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	while (rc == 0 && p < end) {
		const unsigned char *run = p;
		while (p < end) {
			if (*p >= 0x80) {
				size_t k = utf8_seq(p, (size_t)(end - p));
				if (!k)
					break;
				p += k;
			} else if (*p >= 0x20 && *p != '"' && *p != '\\') {
				p++;
			} else {
				break;
			}
		}
		if (p > run && (rc = pd_buf_append(b, run, (size_t)(p - run))))
			break;
		if (p == end)
			break;
		if (*p >= 0x80) {
			/* a byte that starts no UTF-8 sequence: U+FFFD, as Go's
			 * encoding/json writes it */
			rc = pd_buf_append(b, "\xef\xbf\xbd", 3);
			p++;
			continue;
		}
		char esc[6] = {'\\', 0, 0, 0, 0, 0};
		size_t n = 2;
		switch (*p) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		default:
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex[*p >> 4];
			esc[5] = hex[*p & 15];
			n = 6;
		}
		rc = pd_buf_append(b, esc, n);
		p++;
	}
	if (rc == 0)
		rc = pd_buf_append(b, "\"", 1);
	return rc;
}

uint8_t *pd_buf_steal(struct pd_buf *b, size_t *len)
{
	uint8_t *d = b->data;
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return d;
}
