/* unicode.c: the bits of Go's unicode and strings packages that relabeling's
 * results depend on: simple case mapping (strings.ToLower / ToUpper, for the
 * lowercase and uppercase actions and for action names) and the Letter and Digit
 * categories (which characters regexp.Expand takes into a $name). The tables are
 * generated from Go's own (unicode_tables.c), and the lookups follow Go's
 * unicode.to and unicode.Is, so results are Go's, code point for code point. */
#include "relabel_int.h"

#include "../labels/labels_int.h"

static uint32_t to_case(int which, uint32_t r)
{
	size_t lo = 0, hi = pd_relabel_case_ranges_len;
	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;
		const struct pd_relabel_case_range *cr = &pd_relabel_case_ranges[m];
		if (cr->lo <= r && r <= cr->hi) {
			int32_t d = cr->delta[which];
			if (d == PD_RELABEL_UPPER_LOWER) {
				/* alternating pairs start with an upper-case letter: even offsets
				 * are upper case, odd ones lower; upper (0) is even, lower (1) odd
				 */
				return cr->lo + (((r - cr->lo) & ~1u) | (uint32_t)(which & 1));
			}
			return (uint32_t)((int32_t)r + d);
		}
		if (r < cr->lo)
			hi = m;
		else
			lo = m + 1;
	}
	return r;
}

uint32_t pd_relabel_to_lower(uint32_t r)
{
	if (r < 0x80)
		return (r >= 'A' && r <= 'Z') ? r + 32 : r;
	return to_case(1, r);
}

uint32_t pd_relabel_to_upper(uint32_t r)
{
	if (r < 0x80)
		return (r >= 'a' && r <= 'z') ? r - 32 : r;
	return to_case(0, r);
}

static int in_table(const struct pd_relabel_urange *t, size_t n, uint32_t r)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;
		if (r < t[m].lo) {
			hi = m;
		} else if (r > t[m].hi) {
			lo = m + 1;
		} else {
			return t[m].stride == 1 || (r - t[m].lo) % t[m].stride == 0;
		}
	}
	return 0;
}

int pd_relabel_is_letter(uint32_t r)
{
	if (r < 0x80)
		return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z');
	return in_table(pd_relabel_letter, pd_relabel_letter_len, r);
}

int pd_relabel_is_digit(uint32_t r)
{
	if (r <= 0xFF)
		return r >= '0' && r <= '9';
	return in_table(pd_relabel_digit, pd_relabel_digit_len, r);
}

int pd_relabel_case_map(struct pd_buf *out, const char *s, size_t len, int upper)
{
	const unsigned char *p = (const unsigned char *)s;
	char enc[4];
	size_t i = 0;
	int rc;

	if ((rc = pd_buf_reserve(out, len)) < 0)
		return rc;
	while (i < len) {
		uint32_t r;
		/* Go's decoder: an invalid byte decodes as U+FFFD, width 1 */
		size_t w = pd_labels_utf8_decode(p + i, len - i, &r);
		uint32_t m = upper ? pd_relabel_to_upper(r) : pd_relabel_to_lower(r);
		size_t n = pd_labels_utf8_encode(m, enc);
		if ((rc = pd_buf_append(out, enc, n)) < 0)
			return rc;
		i += w;
	}
	return 0;
}
