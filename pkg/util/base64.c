/* base64.c: decoding standard base64 (RFC 4648's alphabet) in the two forms profd
 * meets: HTTP Basic credentials, which Go reads strictly (padding required, no
 * white space, the bits padding drops zero), and kubeconfig's *-data fields, which
 * may be wrapped and unpadded. Hand-written rather than OpenSSL's EVP_DecodeBlock,
 * which skips white space in every case, cannot do without padding, and returns
 * the padding's zero bytes as data. */
#include <ctype.h>

#include "profd/util.h"

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int pd_base64_decode(const char *s, size_t n, unsigned flags, uint8_t *out, size_t cap,
		     size_t *outlen)
{
	int strict = (flags & PD_BASE64_STRICT) != 0;
	uint32_t acc = 0;
	unsigned bits = 0;
	size_t len = 0, data = 0, pad = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (isspace(c)) { /* the C locale's: profd sets no other */
			if (strict)
				return PD_EINVAL;
			continue;
		}
		if (c == '=') {
			pad++;
			continue;
		}
		int v = b64_value(c);
		if (pad || v < 0)
			return PD_EINVAL; /* data after padding, or not base64 */
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		data++;
		if (bits >= 8) {
			bits -= 8;
			if (len >= cap)
				return PD_ETOOBIG;
			out[len++] = (uint8_t)(acc >> bits);
		}
	}
	/* a last group of one character holds no byte */
	if (pad > 2 || data % 4 == 1)
		return PD_EINVAL;
	if (strict) {
		size_t want = data % 4 == 2 ? 2 : data % 4 == 3 ? 1 : 0;
		if (pad != want || (acc & ((1u << bits) - 1)) != 0)
			return PD_EINVAL;
	}
	*outlen = len;
	return 0;
}
