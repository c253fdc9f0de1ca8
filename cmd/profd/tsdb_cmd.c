/* tsdb_cmd.c: `profd tsdb`, tools over a storage directory: import pprof files
 * as blocks, check a store for damage, analyze what is stored, list series and timestamps for a selector,
 * and dump one stored profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "profd/labels.h"
#include "profd/pprof.h"
#include "profd/tsdb.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: profd tsdb <subcommand> [flags] ...\n"
	    "\n"
	    "subcommands:\n"
	    "  import --storage.tsdb.path=DIR --labels='heap{job=\"x\"}' [--time=T] FILE...\n"
	    "        append each profile at its time_nanos and write the result as blocks\n"
	    "        (no WAL is left behind); with --time, the i-th file named (from 0) at\n"
	    "        T + i ms instead; a profile without time_nanos (legacy ones) at its\n"
	    "        file's modification time, or 1 ms after the previous such file named\n"
	    "        if that is not later; a profile whose time the series already\n"
	    "        holds (in the store, or earlier in the input) is skipped and counted;\n"
	    "        on a terminal, progress is shown on stderr\n"
	    "  check DIR\n"
	    "        read every block, chunk and WAL record and report damage (block, file,\n"
	    "        byte offset, what); changes nothing; exit status 1 when damage is found\n"
	    "  analyze DIR\n"
	    "        series, samples, chunks and bytes of timestamps and of profiles, per block\n"
	    "        and in total, and label cardinalities\n"
	    "  query DIR SELECTOR [--start=T] [--end=T] [--timestamps] [--totals]\n"
	    "        series matching a PromQL selector, with their sample counts (and times;\n"
	    "        with --totals, each profile's duration and sum per sample type)\n"
	    "  dump-profile DIR SELECTOR --time=T -o OUT.pb.gz\n"
	    "        the profile of the one matching series at time T (the latest sample at\n"
	    "        or before T), as a gzip pprof file\n"
	    "\n"
	    "Times are Unix seconds (fractions allowed) or RFC 3339, as Prometheus's API\n"
	    "takes them.\n");
}

struct args {
	const char *path, *labels, *start, *end, *time, *out;
	int timestamps, totals;
	char **pos;
	int npos;
};

static int parse_args(int argc, char **argv, struct args *a)
{
	memset(a, 0, sizeof(*a));
	a->pos = calloc((size_t)argc + 1, sizeof(char *));
	if (!a->pos)
		return -1;
	for (int i = 0; i < argc; i++) {
		char *s = argv[i];
		if (strncmp(s, "--", 2) != 0 && strcmp(s, "-o") != 0) {
			a->pos[a->npos++] = s;
			continue;
		}
		if (strcmp(s, "--timestamps") == 0) {
			a->timestamps = 1;
			continue;
		}
		if (strcmp(s, "--totals") == 0) {
			a->totals = 1;
			continue;
		}
		const char *eq = strchr(s, '=');
		size_t nl = eq ? (size_t)(eq - s) : strlen(s);
#define IS(x) (nl == strlen(x) && strncmp(s, x, nl) == 0)
		if (!(IS("--storage.tsdb.path") || IS("--labels") || IS("--start") || IS("--end") ||
		      IS("--time") || IS("-o") || IS("--output"))) {
			fprintf(stderr, "profd tsdb: unknown flag %.*s\n", (int)nl, s);
			return -1;
		}
		/* "-o -" writes to stdout; another flag is not a value */
		const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
		if (!eq && v && strncmp(v, "--", 2) == 0)
			v = NULL;
		if (!v) {
			fprintf(stderr, "profd tsdb: flag %.*s needs a value\n", (int)nl, s);
			return -1;
		}
		if (!eq)
			i++;
		if (IS("--storage.tsdb.path"))
			a->path = v;
		else if (IS("--labels"))
			a->labels = v;
		else if (IS("--start"))
			a->start = v;
		else if (IS("--end"))
			a->end = v;
		else if (IS("--time"))
			a->time = v;
		else if (IS("-o") || IS("--output"))
			a->out = v;
		else {
			fprintf(stderr, "profd tsdb: unknown flag %.*s\n", (int)nl, s);
			return -1;
		}
#undef IS
	}
	return 0;
}

struct item {
	const char *file;
	uint8_t *raw;
	size_t len;
	int64_t t;
	int order; /* position on the command line */
};

static int item_cmp(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Progress on stderr when it is a terminal: "\r<what> n/total", at most every
 * 100 ms, and always at the end (done). Nothing when stderr is a file or pipe. */
struct progress {
	int on;
	int64_t last_ms;
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void progress(struct progress *p, const char *what, int n, int total, int done)
{
	if (!p->on)
		return;
	int64_t t = now_ms();
	if (!done && t - p->last_ms < 100)
		return;
	p->last_ms = t;
	fprintf(stderr, "\rprofd tsdb import: %s %d/%d files%s", what, n, total, done ? "\n" : "");
	fflush(stderr);
}

/* The timestamps the store holds for exactly the label set tl (not a series
 * with more labels), ascending, into *out (malloc'd; NULL and 0 when none). */
static int stored_times(struct pd_tsdb *db, const struct pd_storage_label *tl, size_t n, int64_t **out,
                        size_t *nout, struct pd_err *err)
{
	struct pd_storage_matcher *m = calloc(n ? n : 1, sizeof(*m));
	struct pd_storage_result *r = NULL;
	*out = NULL;
	*nout = 0;
	if (!m)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		m[i].name = tl[i].name;
		m[i].matches = pd_storage_match_equal;
		m[i].ctx = tl[i].value;
	}
	int rc = pd_tsdb_select(db, m, n, INT64_MIN, INT64_MAX, 0, &r, err);
	free(m);
	if (rc)
		return rc;
	for (size_t i = 0; i < r->nseries; i++) {
		const struct pd_storage_series *s = &r->series[i];
		if (s->nlabels != n)
			continue;
		size_t k = 0;
		/* both sorted by name */
		while (k < n && strcmp(s->labels[k].name, tl[k].name) == 0 &&
		       strcmp(s->labels[k].value, tl[k].value) == 0)
			k++;
		if (k != n || !s->nts)
			continue;
		if (!(*out = malloc(s->nts * sizeof(**out)))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			break;
		}
		memcpy(*out, s->ts, s->nts * sizeof(**out));
		*nout = s->nts;
		break;
	}
	pd_storage_result_destroy(r);
	return rc;
}

static int has_time(const int64_t *ts, size_t n, int64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ts[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && ts[lo] == t;
}

static int parse_time_flag(const char *flag, const char *v, int64_t def, int64_t *out);

/* The time of the i-th file named (docs/storage.md, "Times of imported profiles"):
 * with --time, T plus i ms for every file; else its time_nanos (*t on entry);
 * else its modification time, but after the previous file without a time
 * (*prev_untimed), so that such files keep the order they were named in. */
static int import_time(const struct args *a, int i, int64_t flag_t, int64_t *prev_untimed,
                       int64_t *t)
{
	const char *f = a->pos[i];
	if (a->time) {
		*t = flag_t + i;
		return 0;
	}
	if (*t)
		return 0;
	struct stat st;
	struct timespec now;
	if (strcmp(f, "-") != 0 && stat(f, &st) == 0) {
		*t = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
	} else if (strcmp(f, "-") == 0 && clock_gettime(CLOCK_REALTIME, &now) == 0) {
		*t = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	} else {
		fprintf(stderr,
		        "profd tsdb import: %s: the profile has no time_nanos, and the "
		        "file's modification time cannot be read: give --time\n",
		        f);
		return -1;
	}
	if (*prev_untimed != INT64_MIN && *t <= *prev_untimed)
		*t = *prev_untimed + 1;
	*prev_untimed = *t;
	char ts[64];
	pd_time_format(*t, ts, sizeof(ts));
	printf("%s: no time_nanos: at %s (%s)\n", f, ts,
	       strcmp(f, "-") == 0 ? "the time it was read" : "the file's modification time");
	return 0;
}

static int cmd_import(struct args *a)
{
	struct progress pr = {isatty(2), 0};
	struct pd_err err = {0};
	struct pd_labels *ls = NULL;
	struct pd_tsdb *db = NULL;
	struct item *items = NULL;
	int rc = 1;
	if (!a->path || !a->labels || a->npos == 0) {
		fprintf(stderr, "profd tsdb import: needs --storage.tsdb.path, --labels and files\n");
		return 2;
	}
	if (pd_labels_parse(&ls, a->labels, NULL, &err)) {
		fprintf(stderr, "profd tsdb import: --labels: %s\n", err.msg);
		return 2;
	}
	if (!pd_labels_get(ls, PD_LABELS_METRIC_NAME)) {
		fprintf(stderr, "profd tsdb import: --labels must name the profile type, e.g. "
				"heap{job=\"x\"}\n");
		goto out;
	}
	int64_t flag_t = 0, prev_untimed = INT64_MIN;
	if (a->time && parse_time_flag("--time", a->time, 0, &flag_t))
		goto out;
	items = calloc((size_t)a->npos, sizeof(*items));
	if (!items)
		goto out;
	for (int i = 0; i < a->npos; i++) {
		uint8_t *buf;
		size_t len;
		struct pd_pprof_profile *p;
		int legacy = 0;
		struct pd_pprof_decode_opts dopts = {.legacy = &legacy};
		progress(&pr, "reading", i, a->npos, 0);
		items[i].file = a->pos[i];
		if (pd_file_read(a->pos[i], PD_PPROF_DEFAULT_MAX_DECOMPRESSED, &buf, &len, &err) ||
		    pd_pprof_decode(&p, buf, len, &dopts, &err)) {
			fprintf(stderr, "profd tsdb import: %s: %s\n", a->pos[i], err.msg);
			if (buf)
				free(buf);
			goto out;
		}
		items[i].t = pd_pprof_time_nanos(p) / 1000000;
		if (import_time(a, i, flag_t, &prev_untimed, &items[i].t)) {
			pd_pprof_destroy(p);
			free(buf);
			goto out;
		}
		if (legacy) {
			/* a legacy format: stored as its conversion, as a push is */
			free(buf);
			int erc = pd_pprof_encode(p, 0, &items[i].raw, &items[i].len, &err);
			pd_pprof_destroy(p);
			if (erc) {
				fprintf(stderr, "profd tsdb import: %s: %s\n", a->pos[i], err.msg);
				goto out;
			}
			continue;
		}
		pd_pprof_destroy(p);
		/* stored as the validated, uncompressed protobuf the target served */
		if (pd_gzip_is(buf, len)) {
			if (pd_gunzip(buf, len, PD_PPROF_DEFAULT_MAX_DECOMPRESSED, &items[i].raw, &items[i].len,
				      &err)) {
				fprintf(stderr, "profd tsdb import: %s: %s\n", a->pos[i], err.msg);
				free(buf);
				goto out;
			}
			free(buf);
		} else {
			items[i].raw = buf;
			items[i].len = len;
		}
	}
	progress(&pr, "reading", a->npos, a->npos, 1);
	/* stable for equal times: the first file named wins, later ones are skipped */
	for (int i = 0; i < a->npos; i++)
		items[i].order = i;
	qsort(items, (size_t)a->npos, sizeof(*items), item_cmp);
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	o.wal_disabled = 1;
	o.retention_ms = -1;
	if (pd_tsdb_open(&db, a->path, &o, &err)) {
		fprintf(stderr, "profd tsdb import: %s\n", err.msg);
		goto out;
	}
	size_t n = pd_labels_len(ls);
	struct pd_storage_label *tl = calloc(n ? n : 1, sizeof(*tl));
	if (!tl)
		goto out;
	for (size_t i = 0; i < n; i++) {
		tl[i].name = pd_labels_at(ls, i)->name;
		tl[i].value = pd_labels_at(ls, i)->value;
	}
	int64_t *have = NULL;
	size_t nhave = 0;
	if (stored_times(db, tl, n, &have, &nhave, &err)) {
		fprintf(stderr, "profd tsdb import: reading what the store holds: %s\n", err.msg);
		free(tl);
		goto out;
	}
	int failed = 0, imported = 0, dup_input = 0, dup_store = 0;
	const char *first_dup = NULL;
	for (int i = 0; i < a->npos && !failed; i++) {
		progress(&pr, "appending", i, a->npos, 0);
		/* one sample per timestamp in a series: a repeat is skipped, not fatal */
		if (i > 0 && items[i].t == items[i - 1].t) {
			dup_input++;
			first_dup = first_dup ? first_dup : items[i].file;
			continue;
		}
		if (has_time(have, nhave, items[i].t)) {
			dup_store++;
			first_dup = first_dup ? first_dup : items[i].file;
			continue;
		}
		struct pd_tsdb_appender *app = pd_tsdb_appender(db);
		if (!app || pd_tsdb_append(app, tl, n, items[i].t, items[i].raw, items[i].len, &err)) {
			fprintf(stderr, "profd tsdb import: %s: %s\n", items[i].file, err.msg);
			pd_tsdb_rollback(app);
			failed = 1;
			break;
		}
		if (pd_tsdb_commit(app, &err)) {
			fprintf(stderr, "profd tsdb import: %s: %s\n", items[i].file, err.msg);
			failed = 1;
		}
		imported++;
	}
	if (!failed)
		progress(&pr, "appending", a->npos, a->npos, 1);
	free(have);
	free(tl);
	if (!failed && pd_tsdb_flush(db, 1, &err)) {
		fprintf(stderr, "profd tsdb import: writing blocks: %s\n", err.msg);
		failed = 1;
	}
	if (!failed) {
		struct pd_storage_stats st;
		pd_tsdb_stats(db, &st);
		printf("imported %d %s into %s: %llu blocks, %llu bytes\n", imported,
		       imported == 1 ? "profile" : "profiles", a->path,
		       (unsigned long long)st.blocks, (unsigned long long)st.block_bytes);
		if (dup_input + dup_store)
			printf("skipped %d %s (a profile at a time the series already has): "
			       "%d repeated in the input, %d already in the store; the first: %s\n",
			       dup_input + dup_store,
			       dup_input + dup_store == 1 ? "duplicate" : "duplicates", dup_input,
			       dup_store, first_dup);
		rc = 0;
	}
out:
	pd_tsdb_close(db);
	if (items)
		for (int i = 0; i < a->npos; i++)
			free(items[i].raw);
	free(items);
	pd_labels_destroy(ls);
	return rc;
}

static int open_selector(struct args *a, const char *cmd, struct pd_tsdb **db,
			 struct pd_labels_selector **sel, struct pd_storage_matcher **m, size_t *nm)
{
	struct pd_err err = {0};
	struct pd_tsdb_opts o;
	if (a->npos != 2) {
		fprintf(stderr, "profd tsdb %s: needs DIR and SELECTOR\n", cmd);
		return 2;
	}
	if (pd_labels_selector_parse(sel, a->pos[1], strlen(a->pos[1]), NULL, &err)) {
		fprintf(stderr, "profd tsdb %s: selector: %s\n", cmd, err.msg);
		return 2;
	}
	if (pd_storage_matchers_from_selector(*sel, m, nm, &err))
		return 1;
	pd_tsdb_opts_init(&o);
	o.retention_ms = -1;
	o.read_only = 1;
	if (pd_tsdb_open(db, a->pos[0], &o, &err)) {
		fprintf(stderr, "profd tsdb %s: %s\n", cmd, err.msg);
		return 1;
	}
	return 0;
}

static int parse_time_flag(const char *flag, const char *v, int64_t def, int64_t *out)
{
	struct pd_err err = {0};
	if (!v) {
		*out = def;
		return 0;
	}
	if (pd_time_parse(v, out, &err)) {
		fprintf(stderr, "profd tsdb: %s: %s\n", flag, err.msg);
		return -1;
	}
	return 0;
}

static void print_labels(FILE *f, const struct pd_storage_series *s)
{
	const char *name = "";
	for (size_t i = 0; i < s->nlabels; i++)
		if (strcmp(s->labels[i].name, "__name__") == 0)
			name = s->labels[i].value;
	fprintf(f, "%s{", name);
	int first = 1;
	for (size_t i = 0; i < s->nlabels; i++) {
		if (strcmp(s->labels[i].name, "__name__") == 0)
			continue;
		struct pd_buf b;
		pd_buf_init(&b, 0);
		pd_labels_quote(&b, s->labels[i].value, strlen(s->labels[i].value));
		fprintf(f, "%s%s=%.*s", first ? "" : ", ", s->labels[i].name, (int)b.len, (char *)b.data);
		pd_buf_fini(&b);
		first = 0;
	}
	fprintf(f, "}");
}

/* --totals: per series, then per profile "  <ms> duration=<ns> type/unit=sum ...". */
static int print_totals(struct pd_tsdb *db, const struct pd_storage_matcher *m, size_t nm,
			int64_t start, int64_t end)
{
	struct pd_storage_totals_result *r = NULL;
	struct pd_err err = {0};
	if (pd_tsdb_select_totals(db, m, nm, start, end, 0, &r, &err)) {
		fprintf(stderr, "profd tsdb query: %s\n", err.msg);
		return 1;
	}
	for (size_t i = 0; i < r->nseries; i++) {
		const struct pd_storage_totals *t = &r->series[i];
		struct pd_storage_series s = {t->labels, t->nlabels, t->ts, t->nts};
		char t0[40], t1[40];
		pd_time_format(t->ts[0], t0, sizeof(t0));
		pd_time_format(t->ts[t->nts - 1], t1, sizeof(t1));
		print_labels(stdout, &s);
		printf(" %zu samples %s .. %s\n", t->nts, t0, t1);
		for (size_t j = 0; j < t->nts; j++) {
			printf("  %lld duration=%lld", (long long)t->ts[j], (long long)t->duration_nanos[j]);
			for (size_t k = 0; k < t->ntypes; k++)
				if (t->present[k * t->nts + j])
					printf(" %s/%s=%lld", t->types[k].type, t->types[k].unit,
					       (long long)t->values[k * t->nts + j]);
			printf("\n");
		}
	}
	pd_storage_totals_result_destroy(r);
	return 0;
}

static int cmd_query(struct args *a)
{
	struct pd_tsdb *db = NULL;
	struct pd_labels_selector *sel = NULL;
	struct pd_storage_matcher *m = NULL;
	struct pd_storage_result *r = NULL;
	struct pd_err err = {0};
	size_t nm;
	int64_t start, end;
	int rc = open_selector(a, "query", &db, &sel, &m, &nm);
	if (rc)
		goto out;
	rc = 2;
	if (parse_time_flag("--start", a->start, INT64_MIN, &start) ||
	    parse_time_flag("--end", a->end, INT64_MAX, &end))
		goto out;
	rc = 1;
	if (a->totals) {
		rc = print_totals(db, m, nm, start, end);
		goto out;
	}
	if (pd_tsdb_select(db, m, nm, start, end, 0, &r, &err)) {
		fprintf(stderr, "profd tsdb query: %s\n", err.msg);
		goto out;
	}
	for (size_t i = 0; i < r->nseries; i++) {
		const struct pd_storage_series *s = &r->series[i];
		char t0[40], t1[40];
		pd_time_format(s->ts[0], t0, sizeof(t0));
		pd_time_format(s->ts[s->nts - 1], t1, sizeof(t1));
		print_labels(stdout, s);
		printf(" %zu samples %s .. %s\n", s->nts, t0, t1);
		if (a->timestamps)
			for (size_t k = 0; k < s->nts; k++)
				printf("  %lld\n", (long long)s->ts[k]);
	}
	rc = 0;
out:
	pd_storage_result_destroy(r);
	free(m);
	pd_labels_selector_destroy(sel);
	pd_tsdb_close(db);
	return rc;
}

static int cmd_dump(struct args *a)
{
	struct pd_tsdb *db = NULL;
	struct pd_labels_selector *sel = NULL;
	struct pd_storage_matcher *m = NULL;
	struct pd_storage_result *r = NULL;
	struct pd_err err = {0};
	uint8_t *raw = NULL, *gz = NULL;
	size_t nm, len, gzlen;
	int64_t t;
	int rc;
	if (!a->time || !a->out) {
		fprintf(stderr, "profd tsdb dump-profile: needs --time and -o\n");
		return 2;
	}
	if ((rc = open_selector(a, "dump-profile", &db, &sel, &m, &nm)))
		goto out;
	rc = 2;
	if (parse_time_flag("--time", a->time, 0, &t))
		goto out;
	rc = 1;
	if (pd_tsdb_select(db, m, nm, INT64_MIN, t, 0, &r, &err)) {
		fprintf(stderr, "profd tsdb dump-profile: %s\n", err.msg);
		goto out;
	}
	if (r->nseries != 1) {
		fprintf(stderr, "profd tsdb dump-profile: the selector matches %zu series with samples "
				"at or before the time; it must match exactly one\n",
			r->nseries);
		for (size_t i = 0; i < r->nseries && i < 10; i++) {
			fprintf(stderr, "  ");
			print_labels(stderr, &r->series[i]);
			fprintf(stderr, "\n");
		}
		goto out;
	}
	const struct pd_storage_series *s = &r->series[0];
	int64_t at = s->ts[s->nts - 1];
	if (pd_tsdb_read(db, s->labels, s->nlabels, at, &raw, &len, &err) ||
	    pd_gzip(raw, len, 6, &gz, &gzlen, &err) || pd_file_write(a->out, gz, gzlen, &err)) {
		fprintf(stderr, "profd tsdb dump-profile: %s\n", err.msg);
		goto out;
	}
	char ts[40];
	pd_time_format(at, ts, sizeof(ts));
	fprintf(stderr, "wrote the profile of %s (%zu bytes) to %s\n", ts, len, a->out);
	rc = 0;
out:
	free(raw);
	free(gz);
	pd_storage_result_destroy(r);
	free(m);
	pd_labels_selector_destroy(sel);
	pd_tsdb_close(db);
	return rc;
}

static void print_damage(void *ctx, const struct pd_tsdb_damage *d)
{
	(void)ctx;
	printf("damaged: block=%s file=%s offset=%lld: %s\n", d->block[0] ? d->block : "-",
	       d->file, (long long)d->offset, d->what);
}

/* Exit status: 0 nothing found, 1 damage found, or the check failed. */
static int cmd_check(const char *dir)
{
	struct pd_err err = {0};
	uint64_t found = 0;
	if (pd_tsdb_check(dir, print_damage, NULL, &found, &err)) {
		fprintf(stderr, "profd tsdb check: %s\n", err.msg);
		return 1;
	}
	if (found) {
		printf("%llu damaged %s in %s\n", (unsigned long long)found,
		       found == 1 ? "place" : "places", dir);
		return 1;
	}
	printf("no damage found in %s\n", dir);
	return 0;
}

int pd_cmd_tsdb(int argc, char **argv)
{
	struct args a;
	int rc;
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	const char *sub = argv[1];
	for (int i = 2; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		}
	if (parse_args(argc - 2, argv + 2, &a)) {
		free(a.pos);
		return 2;
	}
	if (strcmp(sub, "import") == 0)
		rc = cmd_import(&a);
	else if (strcmp(sub, "query") == 0)
		rc = cmd_query(&a);
	else if (strcmp(sub, "dump-profile") == 0)
		rc = cmd_dump(&a);
	else if (strcmp(sub, "check") == 0) {
		if (a.npos != 1) {
			fprintf(stderr, "profd tsdb check: needs DIR\n");
			rc = 2;
		} else {
			rc = cmd_check(a.pos[0]);
		}
	} else if (strcmp(sub, "analyze") == 0) {
		if (a.npos != 1) {
			fprintf(stderr, "profd tsdb analyze: needs DIR\n");
			rc = 2;
		} else {
			rc = pd_cmd_tsdb_analyze(a.pos[0]);
		}
	} else {
		fprintf(stderr, "profd tsdb: unknown subcommand \"%s\"\n", sub);
		usage(stderr);
		rc = 2;
	}
	free(a.pos);
	return rc;
}
