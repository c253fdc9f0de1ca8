/* folded.c: folded stacks, Pyroscope's /ingest formats `groups` (the default:
 * `root;child;leaf 12` per line, the count after the last space) and `lines` (one
 * stack per line, each counting 1), turned into one pprof profile whose sample
 * type the name's suffix selects. CPU and wall counts are samples at sampleRate
 * Hz, stored as nanoseconds (count * 1e9 / sampleRate), as Pyroscope stores
 * them. Hand-written: the format is a line and a number. */
#include <stdlib.h>
#include <string.h>

#include "pyro.h"

/* Adds one stack (root first, frames separated by ';') with value v. */
static int add_stack(struct ingest_pb *pb, const struct pd_ingest_limits *lim, const char *s,
                     size_t n, int64_t v, uint64_t **locs, size_t *cap, size_t lineno,
                     struct pd_err *err)
{
	size_t depth = 0;
	for (size_t i = 0; i < n; i++)
		depth += s[i] == ';';
	depth++;
	if (depth > lim->max_stack_depth)
		return pd_err_set(err, PD_ETOOBIG,
		                  "line %zu: the stack has %zu frames, more than %zu (%s)", lineno,
		                  depth, lim->max_stack_depth,
		                  pd_ingest_limit_flag(PD_INGEST_LIMIT_STACK_DEPTH));
	if (depth > *cap) {
		size_t nc = depth < 64 ? 64 : depth;
		uint64_t *p = realloc(*locs, nc * sizeof(*p));
		if (!p)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		*locs = p;
		*cap = nc;
	}
	/* frames leaf first: walk the line from its end */
	size_t nl = 0, end = n;
	for (size_t i = n + 1; i-- > 0;) {
		if (i == 0 || s[i - 1] == ';') {
			size_t fl = end - i;
			if (fl > 0) { /* an empty frame (";;", a trailing ';') is no frame */
				uint64_t fn =
				    ingest_pb_function(pb, s + i, fl, NULL, 0, NULL, 0, 0);
				uint64_t loc = fn ? ingest_pb_frame(pb, fn, 0) : 0;
				if (!loc)
					return 1;
				(*locs)[nl++] = loc;
			}
			end = i ? i - 1 : 0;
		}
	}
	if (nl == 0)
		return 0;
	if (ingest_pb_sample(pb, *locs, nl, &v, 1, NULL, 0, 1))
		return 1;
	return 0;
}

/* Pyroscope's strconv.Atoi of the count; 0 when s is not a number that fits. */
static int parse_count(const char *s, size_t n, int64_t *v)
{
	size_t i = 0;
	int neg = 0;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	if (i == n)
		return 0;
	int64_t x = 0;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' || x > (INT64_MAX - 9) / 10)
			return 0;
		x = x * 10 + (s[i] - '0');
	}
	*v = neg ? -x : x;
	return 1;
}

int pyro_folded(struct pyro_req *r, const uint8_t *body, size_t len, int lines, struct pd_err *err)
{
	const struct pyro_type *t = pyro_type_find(r->name.type);
	if (!t)
		return pd_err_set(err, PD_EINVAL,
		                  "name \"%.200s\": unknown profile type \"%.64s\" (the part after "
		                  "the last dot; one of %s)",
		                  r->name.full, r->name.type, pyro_type_list());
	int64_t scale;
	struct ingest_pb *pb = pyro_builder(r, t, r->sample_rate, &scale);
	struct pd_labels *labels = NULL;
	uint64_t *locs = NULL;
	size_t cap = 0;
	int rc = 0;
	if (!pb)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	const char *s = (const char *)body, *end = s + len;
	size_t lineno = 0;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *le = nl ? nl : end;
		lineno++;
		if (le > s && le[-1] == '\r')
			le--;
		size_t n = (size_t)(le - s);
		int64_t count = 1;
		if (!lines) {
			const char *sp = NULL;
			for (const char *p = le; p > s; p--)
				if (p[-1] == ' ') {
					sp = p - 1;
					break;
				}
			if (!sp) /* a line without a count is skipped, as Pyroscope skips it */
				goto next;
			if (!parse_count(sp + 1, (size_t)(le - sp - 1), &count)) {
				rc = pd_err_set(
				    err, PD_EINVAL,
				    "line %zu: \"%.*s\" is not a count: a line of format "
				    "groups is a stack, a space and a whole number "
				    "(a;b;c 12)",
				    lineno, (int)((le - sp - 1) < 64 ? (le - sp - 1) : 64), sp + 1);
				goto out;
			}
			if (count < 0) {
				rc = pd_err_set(err, PD_EINVAL,
				                "line %zu: the count %lld is negative", lineno,
				                (long long)count);
				goto out;
			}
			n = (size_t)(sp - s);
		}
		if (n == 0 || count == 0)
			goto next;
		if (count > INT64_MAX / scale) {
			rc = pd_err_set(err, PD_EINVAL,
			                "line %zu: the count %lld overflows once in nanoseconds",
			                lineno, (long long)count);
			goto out;
		}
		rc = add_stack(pb, &r->lim, s, n, count * scale, &locs, &cap, lineno, err);
		if (rc == 1) {
			int limit = 0;
			rc = ingest_pb_err(pb, err, &limit);
			if (rc == PD_ETOOBIG)
				r->out->limit_hit = limit;
			pd_err_prefix(err, "line %zu", lineno);
			goto out;
		}
		if (rc) {
			if (rc == PD_ETOOBIG)
				r->out->limit_hit = PD_INGEST_LIMIT_STACK_DEPTH;
			goto out;
		}
	next:
		s = nl ? nl + 1 : end;
	}
	if ((rc = pyro_series(r, t->name, r->name.app, NULL, 0, &labels, err)))
		goto out;
	rc = pyro_add_built(r, pb, labels, err);
out:
	free(locs);
	ingest_pb_destroy(pb);
	return rc;
}
