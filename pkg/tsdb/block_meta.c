/* block_meta.c: a block's meta.json, written by hand and read back by a small,
 * strict JSON parser (profd has no JSON library): every known field must be
 * present once with the right type and range, unknown fields are skipped so that
 * later versions can add some, and every error names the field it is about.
 * Format: docs/format/meta.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_int.h"

int pd_block_meta_format(const struct pd_block_meta *m, struct pd_buf *out)
{
	int rc = pd_buf_printf(out,
			       "{\n"
			       "\t\"ulid\": \"%s\",\n"
			       "\t\"minTime\": %lld,\n"
			       "\t\"maxTime\": %lld,\n"
			       "\t\"stats\": {\n"
			       "\t\t\"numSamples\": %llu,\n"
			       "\t\t\"numSeries\": %llu,\n"
			       "\t\t\"numChunks\": %llu,\n"
			       "\t\t\"numTimestampBytes\": %llu,\n"
			       "\t\t\"numValueBytes\": %llu\n"
			       "\t},\n"
			       "\t\"compaction\": {\n"
			       "\t\t\"level\": %d,\n"
			       "\t\t\"sources\": [",
			       m->ulid, (long long)m->mint, (long long)m->maxt,
			       (unsigned long long)m->num_samples, (unsigned long long)m->num_series,
			       (unsigned long long)m->num_chunks, (unsigned long long)m->ts_bytes,
			       (unsigned long long)m->value_bytes, m->level);
	for (size_t i = 0; i < m->nsources && !rc; i++)
		rc = pd_buf_printf(out, "%s\n\t\t\t\"%s\"", i ? "," : "", m->sources[i]);
	if (!rc)
		rc = pd_buf_printf(out, "%s]", m->nsources ? "\n\t\t" : "");
	if (!rc && m->idle)
		rc = pd_buf_printf(out, ",\n\t\t\"hints\": [\n\t\t\t\"" PD_META_HINT_IDLE "\"\n\t\t]");
	if (!rc)
		rc = pd_buf_printf(out, "\n\t},\n\t\"version\": %d\n}\n", PD_META_VERSION);
	return rc;
}

/* ---- parsing -------------------------------------------------------------- */

#define MAX_DEPTH 32

struct jp {
	const char *s;
	size_t len, pos;
	struct pd_err *err;
};

enum jtype { J_STRING, J_NUMBER, J_OBJECT, J_ARRAY, J_BOOL, J_NULL, J_BAD };

static const char *jtype_name[] = {"a string", "a number",   "an object",       "an array",
				   "a boolean", "null", "an invalid value"};

static void skip_ws(struct jp *p)
{
	while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
				   p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
		p->pos++;
}

static int peek(struct jp *p)
{
	skip_ws(p);
	return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static enum jtype peek_type(struct jp *p)
{
	int c = peek(p);
	if (c == '"')
		return J_STRING;
	if (c == '-' || (c >= '0' && c <= '9'))
		return J_NUMBER;
	if (c == '{')
		return J_OBJECT;
	if (c == '[')
		return J_ARRAY;
	if (c == 't' || c == 'f')
		return J_BOOL;
	if (c == 'n')
		return J_NULL;
	return J_BAD;
}

static int syntax(struct jp *p, const char *field, const char *what)
{
	if (p->pos >= p->len)
		return pd_err_set(p->err, PD_ECORRUPT, "%s%s%sunexpected end of input, expected %s",
				  field ? "field \"" : "", field ? field : "", field ? "\": " : "",
				  what);
	return pd_err_set(p->err, PD_ECORRUPT, "%s%s%sbyte %zu: expected %s",
			  field ? "field \"" : "", field ? field : "", field ? "\": " : "", p->pos,
			  what);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Reads a string into out (cap bytes, NUL included); *trunc is set when it did not
 * fit. out may be NULL to only check the string. */
static int parse_string(struct jp *p, const char *field, char *out, size_t cap, int *trunc)
{
	size_t n = 0;
	if (trunc)
		*trunc = 0;
	if (peek(p) != '"')
		return syntax(p, field, "a string");
	p->pos++;
	for (;;) {
		if (p->pos >= p->len)
			return syntax(p, field, "the end of the string");
		unsigned char c = (unsigned char)p->s[p->pos++];
		unsigned cp;
		if (c == '"')
			break;
		if (c < 0x20) {
			p->pos--;
			return syntax(p, field, "no control character in a string");
		}
		if (c != '\\') {
			cp = c;
		} else {
			if (p->pos >= p->len)
				return syntax(p, field, "an escape sequence");
			c = (unsigned char)p->s[p->pos++];
			switch (c) {
			case '"': case '\\': case '/': cp = c; break;
			case 'b': cp = '\b'; break;
			case 'f': cp = '\f'; break;
			case 'n': cp = '\n'; break;
			case 'r': cp = '\r'; break;
			case 't': cp = '\t'; break;
			case 'u':
				cp = 0;
				for (int i = 0; i < 4; i++) {
					int h = p->pos < p->len ? hexval(p->s[p->pos]) : -1;
					if (h < 0)
						return syntax(p, field, "four hex digits after \\u");
					cp = cp << 4 | (unsigned)h;
					p->pos++;
				}
				/* code points beyond ASCII never matter here: keep a marker */
				if (cp == 0 || cp >= 0x80)
					cp = 0x7f;
				break;
			default:
				p->pos--;
				return syntax(p, field, "a valid escape sequence");
			}
		}
		if (out) {
			if (n + 1 < cap)
				out[n++] = (char)cp;
			else if (trunc)
				*trunc = 1;
		}
	}
	if (out)
		out[n] = '\0';
	return 0;
}

/* Checks the JSON number grammar; *integral tells whether it has no fraction or
 * exponent. Leaves pos after the number. */
static int scan_number(struct jp *p, const char *field, size_t *start, int *integral)
{
	const char *s = p->s;
	size_t i = p->pos;
	*start = i;
	*integral = 1;
	if (i < p->len && s[i] == '-')
		i++;
	if (i < p->len && s[i] == '0') {
		i++;
	} else if (i < p->len && s[i] >= '1' && s[i] <= '9') {
		while (i < p->len && s[i] >= '0' && s[i] <= '9')
			i++;
	} else {
		p->pos = i;
		return syntax(p, field, "a digit");
	}
	if (i < p->len && s[i] == '.') {
		*integral = 0;
		i++;
		if (i >= p->len || s[i] < '0' || s[i] > '9') {
			p->pos = i;
			return syntax(p, field, "a digit after the decimal point");
		}
		while (i < p->len && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
		*integral = 0;
		i++;
		if (i < p->len && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= p->len || s[i] < '0' || s[i] > '9') {
			p->pos = i;
			return syntax(p, field, "a digit in the exponent");
		}
		while (i < p->len && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	p->pos = i;
	return 0;
}

static int wrong_type(struct jp *p, const char *field, const char *want)
{
	return pd_err_set(p->err, PD_ECORRUPT, "field \"%s\": expected %s, found %s", field, want,
			  jtype_name[peek_type(p)]);
}

/* Reads an integer in [min, max]. */
static int parse_int(struct jp *p, const char *field, int64_t min, uint64_t max, int64_t *sv,
		     uint64_t *uv)
{
	size_t start;
	int integral, rc;
	if (peek_type(p) != J_NUMBER)
		return wrong_type(p, field, "an integer");
	if ((rc = scan_number(p, field, &start, &integral)))
		return rc;
	if (!integral)
		return pd_err_set(p->err, PD_ECORRUPT, "field \"%s\": %.*s is not an integer", field,
				  (int)(p->pos - start < 40 ? p->pos - start : 40), p->s + start);
	int neg = p->s[start] == '-';
	uint64_t v = 0;
	for (size_t i = start + neg; i < p->pos; i++) {
		unsigned d = (unsigned)(p->s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			goto range;
		v = v * 10 + d;
	}
	if (neg && v != 0) {
		if (min >= 0 || v - 1 > (uint64_t)(-(min + 1)))
			goto range;
		if (sv)
			*sv = -(int64_t)(v - 1) - 1;
		return 0;
	}
	if (v > max || (min > 0 && v < (uint64_t)min))
		goto range;
	if (sv)
		*sv = (int64_t)v;
	if (uv)
		*uv = v;
	return 0;
range:
	return pd_err_set(p->err, PD_ECORRUPT, "field \"%s\": %.*s is out of range", field,
			  (int)(p->pos - start < 40 ? p->pos - start : 40), p->s + start);
}

static int skip_value(struct jp *p, const char *field, int depth)
{
	size_t start;
	int integral;
	switch (peek_type(p)) {
	case J_STRING:
		return parse_string(p, field, NULL, 0, NULL);
	case J_NUMBER:
		return scan_number(p, field, &start, &integral);
	case J_BOOL:
	case J_NULL: {
		static const char *const words[] = {"true", "false", "null"};
		for (int i = 0; i < 3; i++) {
			size_t l = strlen(words[i]);
			if (p->len - p->pos >= l && !memcmp(p->s + p->pos, words[i], l)) {
				p->pos += l;
				return 0;
			}
		}
		return syntax(p, field, "a value");
	}
	case J_OBJECT:
	case J_ARRAY: {
		char close = p->s[p->pos] == '{' ? '}' : ']';
		int rc;
		if (depth >= MAX_DEPTH)
			return pd_err_set(p->err, PD_ECORRUPT, "field \"%s\": nested too deeply", field);
		p->pos++;
		if (peek(p) == close) {
			p->pos++;
			return 0;
		}
		for (;;) {
			if (close == '}') {
				if ((rc = parse_string(p, field, NULL, 0, NULL)))
					return rc;
				if (peek(p) != ':')
					return syntax(p, field, "':'");
				p->pos++;
			}
			if ((rc = skip_value(p, field, depth + 1)))
				return rc;
			int c = peek(p);
			if (c == close) {
				p->pos++;
				return 0;
			}
			if (c != ',')
				return syntax(p, field, close == '}' ? "',' or '}'" : "',' or ']'");
			p->pos++;
		}
	}
	default:
		return syntax(p, field, "a value");
	}
}

/* Walks the members of an object, calling member(key) for each with pos at the
 * value; member consumes the value. */
typedef int (*member_fn)(struct jp *p, const char *key, int trunc, void *ctx);

static int parse_object(struct jp *p, const char *field, member_fn member, void *ctx)
{
	char key[64];
	int trunc, rc;
	if (peek(p) != '{')
		return field ? wrong_type(p, field, "an object") : syntax(p, NULL, "'{'");
	p->pos++;
	if (peek(p) == '}') {
		p->pos++;
		return 0;
	}
	for (;;) {
		if ((rc = parse_string(p, field, key, sizeof(key), &trunc)))
			return rc;
		if (peek(p) != ':')
			return syntax(p, field, "':' after a field name");
		p->pos++;
		if ((rc = member(p, key, trunc, ctx)))
			return rc;
		int c = peek(p);
		if (c == '}') {
			p->pos++;
			return 0;
		}
		if (c != ',')
			return syntax(p, field, "',' or '}'");
		p->pos++;
	}
}

enum {
	F_ULID = 1 << 0,
	F_MINT = 1 << 1,
	F_MAXT = 1 << 2,
	F_STATS = 1 << 3,
	F_COMPACTION = 1 << 4,
	F_VERSION = 1 << 5,
	F_SAMPLES = 1 << 6,
	F_SERIES = 1 << 7,
	F_CHUNKS = 1 << 8,
	F_TSBYTES = 1 << 9,
	F_VALBYTES = 1 << 10,
	F_LEVEL = 1 << 11,
	F_SOURCES = 1 << 12,
	F_HINTS = 1 << 13,
};

struct field {
	const char *key;  /* in its object */
	const char *path; /* for messages */
	unsigned bit;
};

static const struct field top_fields[] = {
	{"ulid", "ulid", F_ULID},
	{"minTime", "minTime", F_MINT},
	{"maxTime", "maxTime", F_MAXT},
	{"stats", "stats", F_STATS},
	{"compaction", "compaction", F_COMPACTION},
	{"version", "version", F_VERSION},
};
static const struct field stats_fields[] = {
	{"numSamples", "stats.numSamples", F_SAMPLES},
	{"numSeries", "stats.numSeries", F_SERIES},
	{"numChunks", "stats.numChunks", F_CHUNKS},
	{"numTimestampBytes", "stats.numTimestampBytes", F_TSBYTES},
	{"numValueBytes", "stats.numValueBytes", F_VALBYTES},
};
static const struct field compaction_fields[] = {
	{"level", "compaction.level", F_LEVEL},
	{"sources", "compaction.sources", F_SOURCES},
	{"hints", "compaction.hints", F_HINTS},
};

struct meta_ctx {
	struct pd_block_meta *m;
	unsigned seen;
	size_t sources_cap;
};

/* Finds key among fields and marks it seen; NULL for an unknown key. */
static const struct field *lookup(struct jp *p, struct meta_ctx *c, const struct field *fields,
				  size_t n, const char *key, int trunc, int *rc)
{
	*rc = 0;
	for (size_t i = 0; i < n && !trunc; i++) {
		if (strcmp(fields[i].key, key))
			continue;
		if (c->seen & fields[i].bit) {
			*rc = pd_err_set(p->err, PD_ECORRUPT, "field \"%s\" appears twice",
					 fields[i].path);
			return NULL;
		}
		c->seen |= fields[i].bit;
		return &fields[i];
	}
	return NULL;
}

static int parse_ulid(struct jp *p, const char *field, char out[27])
{
	char s[32];
	int trunc, rc;
	if (peek_type(p) != J_STRING)
		return wrong_type(p, field, "a ULID string");
	if ((rc = parse_string(p, field, s, sizeof(s), &trunc)))
		return rc;
	if (trunc || !pd_ulid_valid(s))
		return pd_err_set(p->err, PD_ECORRUPT, "field \"%s\": \"%s%s\" is not a ULID", field, s,
				  trunc ? "..." : "");
	memcpy(out, s, 27);
	return 0;
}

static int stats_member(struct jp *p, const char *key, int trunc, void *ctx)
{
	struct meta_ctx *c = ctx;
	int rc;
	const struct field *f = lookup(p, c, stats_fields, 5, key, trunc, &rc);
	if (rc)
		return rc;
	if (!f)
		return skip_value(p, "stats", 1);
	uint64_t *dst = f->bit == F_SAMPLES ? &c->m->num_samples
		      : f->bit == F_SERIES  ? &c->m->num_series
		      : f->bit == F_CHUNKS  ? &c->m->num_chunks
		      : f->bit == F_TSBYTES ? &c->m->ts_bytes
					    : &c->m->value_bytes;
	return parse_int(p, f->path, 0, UINT64_MAX, NULL, dst);
}

/* compaction.hints: an array of strings (Prometheus writes some of its own);
 * "from-idle-series" sets m->idle, the others are skipped. */
static int parse_hints(struct jp *p, const char *field, struct pd_block_meta *m)
{
	if (peek_type(p) != J_ARRAY)
		return wrong_type(p, field, "an array of strings");
	p->pos++;
	if (peek(p) == ']') {
		p->pos++;
		return 0;
	}
	for (;;) {
		char s[64];
		int trunc, rc;
		if (peek_type(p) != J_STRING)
			return wrong_type(p, field, "an array of strings");
		if ((rc = parse_string(p, field, s, sizeof(s), &trunc)))
			return rc;
		if (!trunc && !strcmp(s, PD_META_HINT_IDLE))
			m->idle = 1;
		int ch = peek(p);
		if (ch == ']') {
			p->pos++;
			return 0;
		}
		if (ch != ',')
			return syntax(p, field, "',' or ']'");
		p->pos++;
	}
}

static int compaction_member(struct jp *p, const char *key, int trunc, void *ctx)
{
	struct meta_ctx *c = ctx;
	int64_t v;
	int rc;
	const struct field *f = lookup(p, c, compaction_fields, 3, key, trunc, &rc);
	if (rc)
		return rc;
	if (!f)
		return skip_value(p, "compaction", 1);
	if (f->bit == F_LEVEL) {
		if ((rc = parse_int(p, f->path, 1, 1000000, &v, NULL)))
			return rc;
		c->m->level = (int)v;
		return 0;
	}
	if (f->bit == F_HINTS)
		return parse_hints(p, f->path, c->m);
	if (peek_type(p) != J_ARRAY)
		return wrong_type(p, f->path, "an array of ULIDs");
	p->pos++;
	if (peek(p) == ']') {
		p->pos++;
		return 0;
	}
	for (;;) {
		if (c->m->nsources == c->sources_cap) {
			size_t cap = c->sources_cap ? c->sources_cap * 2 : 8;
			void *q = realloc(c->m->sources, cap * sizeof(*c->m->sources));
			if (!q)
				return pd_err_set(p->err, PD_ENOMEM, "out of memory");
			c->m->sources = q;
			c->sources_cap = cap;
		}
		if ((rc = parse_ulid(p, f->path, c->m->sources[c->m->nsources])))
			return rc;
		c->m->nsources++;
		int ch = peek(p);
		if (ch == ']') {
			p->pos++;
			return 0;
		}
		if (ch != ',')
			return syntax(p, f->path, "',' or ']'");
		p->pos++;
	}
}

static int top_member(struct jp *p, const char *key, int trunc, void *ctx)
{
	struct meta_ctx *c = ctx;
	int64_t v;
	int rc;
	const struct field *f = lookup(p, c, top_fields, 6, key, trunc, &rc);
	if (rc)
		return rc;
	if (!f)
		return skip_value(p, key, 1);
	switch (f->bit) {
	case F_ULID:
		return parse_ulid(p, f->path, c->m->ulid);
	case F_MINT:
		return parse_int(p, f->path, INT64_MIN, INT64_MAX, &c->m->mint, NULL);
	case F_MAXT:
		return parse_int(p, f->path, INT64_MIN, INT64_MAX, &c->m->maxt, NULL);
	case F_STATS:
		return parse_object(p, f->path, stats_member, c);
	case F_COMPACTION:
		return parse_object(p, f->path, compaction_member, c);
	default:
		if ((rc = parse_int(p, f->path, 0, INT32_MAX, &v, NULL)))
			return rc;
		if (v != PD_META_VERSION)
			return pd_err_set(p->err, PD_ECORRUPT, "field \"version\": unsupported version %lld",
					  (long long)v);
		return 0;
	}
}

int pd_block_meta_parse(const char *s, size_t len, struct pd_block_meta *m, struct pd_err *err)
{
	struct jp p = {s, len, 0, err};
	struct meta_ctx c = {m, 0, 0};
	int rc;

	memset(m, 0, sizeof(*m));
	if ((rc = parse_object(&p, NULL, top_member, &c)))
		goto fail;
	if (peek(&p) != -1) {
		rc = syntax(&p, NULL, "the end of the input after the top-level object");
		goto fail;
	}
	static const struct field *const all[] = {
		&top_fields[0],	  &top_fields[1],   &top_fields[2],   &top_fields[3],
		&stats_fields[0], &stats_fields[1], &stats_fields[2], &stats_fields[3],
		&stats_fields[4], &top_fields[4],   &compaction_fields[0], &compaction_fields[1],
		&top_fields[5],
	};
	for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++) {
		if (!(c.seen & all[i]->bit)) {
			/* a missing object is reported as such, not as its members */
			if ((all[i]->bit & (F_SAMPLES | F_SERIES | F_CHUNKS | F_TSBYTES | F_VALBYTES)) &&
			    !(c.seen & F_STATS))
				continue;
			if ((all[i]->bit & (F_LEVEL | F_SOURCES)) && !(c.seen & F_COMPACTION))
				continue;
			rc = pd_err_set(err, PD_ECORRUPT, "field \"%s\" is missing", all[i]->path);
			goto fail;
		}
	}
	if (m->mint >= m->maxt) {
		rc = pd_err_set(err, PD_ECORRUPT, "field \"maxTime\": %lld is not after minTime %lld",
				(long long)m->maxt, (long long)m->mint);
		goto fail;
	}
	if (m->nsources == 0) {
		rc = pd_err_set(err, PD_ECORRUPT, "field \"compaction.sources\" is empty");
		goto fail;
	}
	return 0;
fail:
	free(m->sources);
	m->sources = NULL;
	m->nsources = 0;
	return rc;
}
