/* pprof_cmd.c: `profd pprof`, a command-line tool over pprof files: top tables,
 * flame graph JSON, folded stacks and speedscope exports, call graphs in DOT,
 * merge, diff and validation, with go tool pprof's semantics. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "profd/pprof.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: profd pprof <subcommand> [flags] FILE...\n"
		"\n"
		"subcommands:\n"
		"  top [flags] FILE...          top table by function; several files are merged first\n"
		"  flame [flags] FILE...        flame graph call tree as JSON\n"
		"  folded [flags] FILE...       folded stacks of one sample type, as flamegraph.pl\n"
		"                               reads them\n"
		"  speedscope [flags] FILE...   a speedscope JSON file of every sample type (the\n"
		"                               chosen one active)\n"
		"  dot [flags] FILE...          call graph in Graphviz's DOT language, as go tool\n"
		"                               pprof -dot; several files are merged first\n"
		"  merge -o OUT FILE...         merge profiles into OUT (gzip pprof)\n"
		"  diff -o OUT BASE FILE        FILE minus BASE, as go tool pprof -diff_base, into OUT\n"
		"  validate FILE...             check files against the pprof format\n"
		"\n"
		"flags:\n"
		"  --sample-index=N|NAME  sample type by index or name (default: the profile's\n"
		"                         default_sample_type, else the last type); top: \"all\"\n"
		"                         prints the table of every type in turn\n"
		"  --nodecount=N          top: show at most N rows (default, and 0: all); dot: keep at\n"
		"                         most N nodes (default 80, 0 keeps all)\n"
		"  --nodefraction=F       top, dot: hide nodes whose cum is below F of the total\n"
		"                         (default 0.005; tsv output shows every row)\n"
		"  --edgefraction=F       top, dot: hide edges below F of the total (default 0.001)\n"
		"  --diff-base=FILE       top, flame, folded, dot, merge: FILE... minus this base, as\n"
		"                         go tool pprof -diff_base (repeatable: the bases are added\n"
		"                         up; percentages are of the base's total)\n"
		"  --focus=RE, --ignore=RE, --hide=RE, --show=RE, --show-from=RE, --prune-from=RE\n"
		"                         top, flame, folded, speedscope, dot: pprof's stack\n"
		"                         filters (-focus ... -prune_from), Go regex syntax\n"
		"  --normalize            with --diff-base: scale FILE... to the bases' totals\n"
		"                         first, per sample type, as pprof's -normalize\n"
		"  --granularity=functions|lines|files|addresses  top, flame, folded, dot: what a\n"
		"                         node is, as pprof's -functions, -lines, -files, -addresses\n"
		"  --format=text|tsv      top: tsv prints name<TAB>flat<TAB>cum in raw units, every\n"
		"                         function, no cut\n"
		"  --min-total=N          flame: leave out nodes whose total is below N (default 0)\n"
		"  --symbolize=none|demangle=default|templates|full|none  report names as pprof's\n"
		"                         -symbolize: none shows names as stored (default:\n"
		"                         demangle=default, C++ without parameters or templates)\n"
		"  --max-decompressed=N   largest decompressed profile in bytes (default 268435456)\n"
		"  --legacy-max-stack-depth=N  legacy formats: frames of one sample (default 4096)\n"
		"  --legacy-max-line=N    legacy text formats: bytes of one line (default 1048576)\n"
		"  --legacy-max-maps=N    legacy formats: memory map entries kept (default 65536)\n"
		"  -o FILE                output file for merge and diff (\"-\" is stdout)\n");
}

struct opts {
	const char *sample_index;
	long nodecount;
	double nodefraction, edgefraction;
	const char **bases; /* --diff-base files, in order */
	int nbases;
	int tsv;
	long long min_total;
	enum pd_pprof_names names;
	enum pd_pprof_granularity gran;
	int normalize; /* --normalize: FILE... scaled to the bases' totals */
	struct pd_pprof_namefilter_spec nf; /* --focus ... --prune-from */
	struct pd_pprof_namefilter *filter; /* compiled from nf, or NULL */
	const char *out;
	struct pd_pprof_decode_opts dec;
	char **files;
	int nfiles;
};

static int parse_num(const char *flag, const char *v, long long *out)
{
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (!*v || *end || errno || n < 0) {
		fprintf(stderr, "profd pprof: %s: \"%s\" is not a non-negative integer\n", flag, v);
		return -1;
	}
	*out = n;
	return 0;
}

/* Parses flags anywhere among the arguments; the rest are files. */
static int parse(int argc, char **argv, struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->nodecount = -1;
	o->nodefraction = 0.005;
	o->edgefraction = 0.001;
	o->files = calloc((size_t)argc + 1, sizeof(char *));
	o->bases = calloc((size_t)argc + 1, sizeof(char *));
	if (!o->files || !o->bases)
		return -1;
	for (int i = 0; i < argc; i++) {
		char *a = argv[i];
		const char *v = NULL;
		long long n;
		if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "profd pprof: %s needs a file name\n", a);
				return -1;
			}
			o->out = argv[++i];
			continue;
		}
		if (strncmp(a, "--", 2) != 0 || strcmp(a, "--") == 0) {
			o->files[o->nfiles++] = a;
			continue;
		}
		char *eq = strchr(a, '=');
		char name[64];
		size_t nl = eq ? (size_t)(eq - a) : strlen(a);
		if (nl >= sizeof(name))
			nl = sizeof(name) - 1;
		memcpy(name, a, nl);
		name[nl] = '\0';
		for (char *c = name; *c; c++)
			if (*c == '_')
				*c = '-';
		if (strcmp(name, "--normalize") == 0) { /* a switch: --normalize[=true|false] */
			if (eq && strcmp(eq + 1, "true") != 0 && strcmp(eq + 1, "false") != 0) {
				fprintf(stderr, "profd pprof: --normalize: \"%s\" is not true or false\n", eq + 1);
				return -1;
			}
			o->normalize = !eq || strcmp(eq + 1, "true") == 0;
			continue;
		}
		if (eq)
			v = eq + 1;
		else if (i + 1 < argc && strcmp(name, "--help") != 0)
			v = argv[++i];
		if (strcmp(name, "--help") == 0) {
			usage(stdout);
			exit(0);
		} else if (!v) {
			fprintf(stderr, "profd pprof: flag %s needs a value\n", name);
			return -1;
		} else if (strcmp(name, "--sample-index") == 0) {
			o->sample_index = v;
		} else if (strcmp(name, "--nodecount") == 0) {
			if (parse_num(name, v, &n))
				return -1;
			o->nodecount = (long)n;
		} else if (strcmp(name, "--nodefraction") == 0) {
			char *end;
			o->nodefraction = strtod(v, &end);
			if (!*v || *end || o->nodefraction < 0 || o->nodefraction > 1) {
				fprintf(stderr, "profd pprof: --nodefraction: \"%s\" is not a number in [0, 1]\n", v);
				return -1;
			}
		} else if (strcmp(name, "--edgefraction") == 0) {
			char *end;
			o->edgefraction = strtod(v, &end);
			if (!*v || *end || o->edgefraction < 0 || o->edgefraction > 1) {
				fprintf(stderr, "profd pprof: --edgefraction: \"%s\" is not a number in [0, 1]\n", v);
				return -1;
			}
		} else if (strcmp(name, "--diff-base") == 0) {
			o->bases[o->nbases++] = v;
		} else if (strcmp(name, "--granularity") == 0) {
			struct pd_err e = {0};
			if (pd_pprof_granularity_parse(v, &o->gran, &e)) {
				fprintf(stderr, "profd pprof: --granularity: %s\n", e.msg);
				return -1;
			}
		} else if (strcmp(name, "--focus") == 0) {
			o->nf.focus = v;
		} else if (strcmp(name, "--ignore") == 0) {
			o->nf.ignore = v;
		} else if (strcmp(name, "--hide") == 0) {
			o->nf.hide = v;
		} else if (strcmp(name, "--show") == 0) {
			o->nf.show = v;
		} else if (strcmp(name, "--show-from") == 0 /* --show_from too: _ became - */) {
			o->nf.show_from = v;
		} else if (strcmp(name, "--prune-from") == 0) {
			o->nf.prune_from = v;
		} else if (strcmp(name, "--format") == 0) {
			if (strcmp(v, "tsv") == 0)
				o->tsv = 1;
			else if (strcmp(v, "text") != 0) {
				fprintf(stderr, "profd pprof: --format: \"%s\" is not text or tsv\n", v);
				return -1;
			}
		} else if (strcmp(name, "--symbolize") == 0) {
			struct pd_err e = {0};
			if (pd_pprof_names_parse(v, &o->names, &e)) {
				fprintf(stderr, "profd pprof: --%s\n", e.msg);
				return -1;
			}
		} else if (strcmp(name, "--min-total") == 0) {
			if (parse_num(name, v, &o->min_total))
				return -1;
		} else if (strcmp(name, "--max-decompressed") == 0) {
			if (parse_num(name, v, &n) || n == 0) {
				if (n == 0)
					fprintf(stderr, "profd pprof: --max-decompressed must be positive\n");
				return -1;
			}
			o->dec.max_decompressed = (size_t)n;
		} else if (strcmp(name, "--legacy-max-stack-depth") == 0 ||
			   strcmp(name, "--legacy-max-line") == 0 || strcmp(name, "--legacy-max-maps") == 0) {
			if (parse_num(name, v, &n) || n == 0) {
				if (n == 0)
					fprintf(stderr, "profd pprof: %s must be positive\n", name);
				return -1;
			}
			if (name[13] == 's')
				o->dec.legacy_max_depth = (size_t)n;
			else if (name[13] == 'l')
				o->dec.legacy_max_line = (size_t)n;
			else
				o->dec.legacy_max_maps = (size_t)n;
		} else {
			fprintf(stderr, "profd pprof: unknown flag %s\n", name);
			return -1;
		}
	}
	struct pd_err e = {0};
	if (pd_pprof_namefilter_create(&o->filter, &o->nf, &e)) {
		fprintf(stderr, "profd pprof: %s\n", e.msg);
		return -1;
	}
	return 0;
}

/* With stack filters, *p becomes the filtered profile and *whole the one read (the
 * percentages' total), else *whole is NULL. Warns on stderr, as pprof, about each
 * filter that matched nothing. */
static int apply_filter(struct opts *o, struct pd_pprof_profile **p,
                        struct pd_pprof_profile **whole)
{
	*whole = NULL;
	if (!o->filter)
		return 0;
	struct pd_pprof_profile *f = NULL;
	struct pd_err err = {0};
	unsigned un = 0;
	if (pd_pprof_filter_names(*p, o->filter, &f, &un, &err)) {
		fprintf(stderr, "profd pprof: %s\n", err.msg);
		return -1;
	}
	static const char *const cap[] = {"Focus", "Ignore", "Hide", "Show", "ShowFrom"};
	for (int i = 0; i < 5; i++)
		if (un & (1u << i))
			fprintf(stderr, "%s expression matched no samples\n", cap[i]);
	*whole = *p;
	*p = f;
	return 0;
}

/* Reads every file; merges them when there are several, one file at a time so that
 * each input is freed before the next is read. */
/* Reads files (n of them) into one profile, merged when there are several. */
static int merge_files(struct opts *o, char *const *files, int n, struct pd_pprof_profile **out)
{
	struct pd_err err = {0};
	struct pd_pprof_merger *m = NULL;
	int rc;
	if (n == 1) {
		if ((rc = pd_pprof_read_file(out, files[0], &o->dec, &err)))
			fprintf(stderr, "profd pprof: %s\n", err.msg);
		return rc;
	}
	if ((rc = pd_pprof_merger_create(&m, &err))) {
		fprintf(stderr, "profd pprof: %s\n", err.msg);
		return rc;
	}
	for (int i = 0; i < n; i++) {
		struct pd_pprof_profile *p;
		if ((rc = pd_pprof_read_file(&p, files[i], &o->dec, &err))) {
			fprintf(stderr, "profd pprof: %s\n", err.msg);
			pd_pprof_merger_destroy(m);
			return rc;
		}
		rc = pd_pprof_merger_add(m, p, &err);
		pd_pprof_destroy(p);
		if (rc) {
			fprintf(stderr, "profd pprof: merging %s: %s\n", files[i], err.msg);
			pd_pprof_merger_destroy(m);
			return rc;
		}
	}
	if ((rc = pd_pprof_merger_finish(m, out, &err)))
		fprintf(stderr, "profd pprof: merging: %s\n", err.msg);
	return rc;
}

/* --normalize with --diff-base: FILE... merged and scaled by pd_pprof_normalize to
 * the merged bases' totals, then diffed against them, as go tool pprof -normalize. */
static int load_normalized(struct opts *o, struct pd_pprof_profile **out)
{
	struct pd_pprof_profile *p = NULL, *b = NULL, *n = NULL;
	struct pd_pprof_merger *m = NULL;
	struct pd_err err = {0};
	int rc = merge_files(o, o->files, o->nfiles, &p);
	if (!rc)
		rc = merge_files(o, (char *const *)o->bases, o->nbases, &b);
	if (!rc && (rc = pd_pprof_normalize(p, b, &n, &err)))
		fprintf(stderr, "profd pprof: %s\n", err.msg);
	if (!rc && !(rc = pd_pprof_merger_create(&m, &err)) &&
	    !(rc = pd_pprof_merger_add(m, n, &err)) && !(rc = pd_pprof_merger_add_base(m, b, &err))) {
		rc = pd_pprof_merger_finish(m, out, &err);
		m = NULL;
	}
	if (rc && err.msg[0])
		fprintf(stderr, "profd pprof: diffing: %s\n", err.msg);
	pd_pprof_merger_destroy(m);
	pd_pprof_destroy(p);
	pd_pprof_destroy(b);
	pd_pprof_destroy(n);
	if (!rc) {
		pd_pprof_set_names(*out, o->names);
		pd_pprof_set_granularity(*out, o->gran);
	}
	return rc;
}

static int load(struct opts *o, struct pd_pprof_profile **out)
{
	struct pd_err err = {0};
	struct pd_pprof_merger *m = NULL;
	int rc;
	if (o->normalize && o->nbases)
		return load_normalized(o, out);
	if (o->nfiles == 1 && o->nbases == 0) {
		if ((rc = pd_pprof_read_file(out, o->files[0], &o->dec, &err)))
			fprintf(stderr, "profd pprof: %s\n", err.msg);
		else {
			pd_pprof_set_names(*out, o->names);
			pd_pprof_set_granularity(*out, o->gran);
		}
		return rc;
	}
	if ((rc = pd_pprof_merger_create(&m, &err))) {
		fprintf(stderr, "profd pprof: %s\n", err.msg);
		return rc;
	}
	/* then the --diff-base files: negated, labelled pprof::base=true (-diff_base) */
	for (int i = 0; i < o->nfiles + o->nbases; i++) {
		struct pd_pprof_profile *p;
		const char *f = i < o->nfiles ? o->files[i] : o->bases[i - o->nfiles];
		if ((rc = pd_pprof_read_file(&p, f, &o->dec, &err))) {
			fprintf(stderr, "profd pprof: %s\n", err.msg);
			pd_pprof_merger_destroy(m);
			return rc;
		}
		rc = i < o->nfiles ? pd_pprof_merger_add(m, p, &err)
		                   : pd_pprof_merger_add_base(m, p, &err);
		pd_pprof_destroy(p);
		if (rc) {
			fprintf(stderr, "profd pprof: %s %s: %s\n",
			        i < o->nfiles ? "merging" : "diffing against", f, err.msg);
			pd_pprof_merger_destroy(m);
			return rc;
		}
	}
	if ((rc = pd_pprof_merger_finish(m, out, &err)))
		fprintf(stderr, "profd pprof: merging: %s\n", err.msg);
	else {
		pd_pprof_set_names(*out, o->names);
		pd_pprof_set_granularity(*out, o->gran);
	}
	return rc;
}

static int choose_index(struct pd_pprof_profile *p, const char *spec, int *idx)
{
	struct pd_err err = {0};
	if (pd_pprof_sample_index(p, spec, idx, &err)) {
		fprintf(stderr, "profd pprof: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static int cmd_top(struct opts *o)
{
	struct pd_pprof_profile *p = NULL, *whole = NULL;
	struct pd_pprof_top *t = NULL;
	struct pd_err err = {0};
	int idx, rc = 1;

	if (load(o, &p) || choose_index(p, o->sample_index, &idx) || apply_filter(o, &p, &whole))
		goto out;
	if (pd_pprof_top(p, idx, &t, &err)) {
		fprintf(stderr, "profd pprof: %s\n", err.msg);
		goto out;
	}
	if (whole)
		t->total = pd_pprof_total(whole, idx);
	if (o->tsv) {
		for (size_t i = 0; i < t->nrows; i++) {
			/* a name's bytes as they are, NULs included, as pprof prints them */
			fwrite(t->rows[i].name, 1, t->rows[i].name_len, stdout);
			printf("\t%lld\t%lld\n", (long long)t->rows[i].flat,
			       (long long)t->rows[i].cum);
		}
		rc = 0;
		goto out;
	}
	size_t all = t->nrows;
	int64_t cutoff = 0;
	size_t cut = pd_pprof_top_apply_nodefraction(t, o->nodefraction, &cutoff);
	size_t dropped = all - cut;
	/* the marks, as pprof's, come from the rows shown */
	size_t shown = pd_pprof_top_keep(t, p, o->nodecount > 0 ? (size_t)o->nodecount : 0,
					 o->edgefraction);
	char a[64], b[64], c[64], d[64], e[64];
	int64_t shown_flat = 0, minv = 0;
	for (size_t i = 0; i < shown; i++) {
		int64_t v = t->rows[i].flat ? t->rows[i].flat : t->rows[i].cum;
		v = v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v;
		shown_flat = (int64_t)((uint64_t)shown_flat + (uint64_t)t->rows[i].flat);
		if (v && (!minv || v < minv))
			minv = v;
	}
	const char *ou = pd_pprof_pick_unit(minv, t->total, t->unit);
	struct pd_buf hb;
	pd_buf_init(&hb, 1 << 20);
	if (pd_pprof_header(p, idx, t->total, ou, &hb)) {
		fprintf(stderr, "profd pprof: out of memory writing the report's header\n");
		pd_buf_fini(&hb);
		goto out;
	}
	fwrite(hb.data, 1, hb.len, stdout);
	pd_buf_fini(&hb);
	char fl[8][96];
	size_t nfl = pd_pprof_namefilter_legend(o->filter, fl, 8);
	if (nfl)
		printf("Active filters:\n");
	for (size_t i = 0; i < nfl; i++)
		printf("   %s\n", fl[i]);
	pd_pprof_format_value_in(shown_flat, t->unit, ou, a, sizeof(a));
	pd_pprof_format_percent(shown_flat, t->total, b, sizeof(b));
	pd_pprof_format_value_in(t->total, t->unit, ou, c, sizeof(c));
	char *pct = b;
	while (*pct == ' ')
		pct++;
	printf("Showing nodes accounting for %s, %s of %s total\n", a, pct, c);
	if (dropped) {
		pd_pprof_format_value_in(cutoff, t->unit, ou, a, sizeof(a));
		printf("Dropped %zu node%s (cum <= %s)\n", dropped, dropped == 1 ? "" : "s", a);
	}
	if (shown < cut)
		printf("Showing top %zu nodes out of %zu\n", shown, cut);
	printf("%10s %5s%% %5s%% %10s %5s%%\n", "flat", "flat", "sum", "cum", "cum");
	int64_t sum = 0;
	for (size_t i = 0; i < shown; i++) {
		const struct pd_pprof_top_row *r = &t->rows[i];
		sum = (int64_t)((uint64_t)sum + (uint64_t)r->flat);
		pd_pprof_format_value_in(r->flat, t->unit, ou, a, sizeof(a));
		pd_pprof_format_percent(r->flat, t->total, b, sizeof(b));
		pd_pprof_format_percent(sum, t->total, c, sizeof(c));
		pd_pprof_format_value_in(r->cum, t->unit, ou, d, sizeof(d));
		pd_pprof_format_percent(r->cum, t->total, e, sizeof(e));
		const char *inl = r->inline_kind == PD_PPROF_INLINED           ? " (inline)"
				  : r->inline_kind == PD_PPROF_PARTIAL_INLINE ? " (partial-inline)"
									      : "";
		printf("%10s %s %s %10s %s  ", a, b, c, d, e);
		fwrite(r->name, 1, r->name_len, stdout);
		printf("%s\n", inl);
	}
	rc = 0;
out:
	pd_pprof_top_destroy(t);
	pd_pprof_destroy(p);
	pd_pprof_destroy(whole);
	return rc;
}

/* --sample-index=all: the top of every sample type, one after the other, each
 * after a line "==> sample type N: TYPE/UNIT <==" */
static int cmd_top_all(struct opts *o)
{
	struct pd_pprof_profile *p = NULL;
	char idx[32];
	int rc = 1;
	if (load(o, &p))
		return 1;
	size_t n = pd_pprof_sample_type_count(p);
	for (size_t i = 0; i < n; i++) {
		printf("==> sample type %zu: %s/%s <==\n", i, pd_pprof_sample_type(p, i),
		       pd_pprof_sample_unit(p, i));
		fflush(stdout);
		snprintf(idx, sizeof(idx), "%zu", i);
		o->sample_index = idx;
		if ((rc = cmd_top(o)))
			break;
	}
	o->sample_index = "all";
	pd_pprof_destroy(p);
	return rc;
}

static int cmd_flame(struct opts *o)
{
	struct pd_pprof_profile *p = NULL, *whole = NULL;
	struct pd_pprof_flame *f = NULL;
	struct pd_err err = {0};
	struct pd_buf b;
	int idx, rc = 1;

	pd_buf_init(&b, 0);
	if (load(o, &p) || choose_index(p, o->sample_index, &idx) || apply_filter(o, &p, &whole))
		goto out;
	if (pd_pprof_flame(p, idx, &f, &err)) {
		fprintf(stderr, "profd pprof: %s\n", err.msg);
		goto out;
	}
	if (pd_pprof_flame_json(f, o->min_total, &b) || pd_buf_append(&b, "\n", 1) ||
	    pd_file_write("-", b.data, b.len, &err)) {
		fprintf(stderr, "profd pprof: writing the flame graph failed\n");
		goto out;
	}
	rc = 0;
out:
	pd_buf_fini(&b);
	pd_pprof_flame_destroy(f);
	pd_pprof_destroy(p);
	pd_pprof_destroy(whole);
	return rc;
}

static int cmd_export(struct opts *o, int speedscope)
{
	struct pd_pprof_profile *p = NULL, *whole = NULL;
	struct pd_err err = {0};
	struct pd_buf b;
	int idx, rc = 1;

	pd_buf_init(&b, 0);
	if (load(o, &p) || choose_index(p, o->sample_index, &idx) || apply_filter(o, &p, &whole))
		goto out;
	const char *slash = strrchr(o->files[0], '/');
	if ((speedscope ? pd_pprof_speedscope(p, idx, 1, slash ? slash + 1 : o->files[0], &b, &err)
	                : pd_pprof_folded(p, idx, &b, &err)) ||
	    (speedscope && pd_buf_append(&b, "\n", 1)) || pd_file_write("-", b.data, b.len, &err)) {
		fprintf(stderr, "profd pprof: %s\n", err.msg[0] ? err.msg : "out of memory");
		goto out;
	}
	rc = 0;
out:
	pd_buf_fini(&b);
	pd_pprof_destroy(p);
	pd_pprof_destroy(whole);
	return rc;
}

static int write_profile(const struct pd_pprof_profile *p, const char *path)
{
	struct pd_err err = {0};
	uint8_t *buf;
	size_t len;
	if (pd_pprof_encode(p, 1, &buf, &len, &err) || pd_file_write(path, buf, len, &err)) {
		fprintf(stderr, "profd pprof: %s\n", err.msg);
		return 1;
	}
	free(buf);
	return 0;
}

static int cmd_merge(struct opts *o)
{
	struct pd_pprof_profile *p = NULL;
	if (!o->out) {
		fprintf(stderr, "profd pprof merge: -o OUT is required\n");
		return 2;
	}
	if (load(o, &p))
		return 1;
	int rc = write_profile(p, o->out);
	pd_pprof_destroy(p);
	return rc;
}

static int cmd_diff(struct opts *o)
{
	struct pd_pprof_profile *base = NULL, *p = NULL, *d = NULL;
	struct pd_err err = {0};
	int rc = 1;
	if (!o->out || o->nfiles != 2) {
		fprintf(stderr, "profd pprof diff: usage: profd pprof diff -o OUT BASE FILE\n");
		return 2;
	}
	if (pd_pprof_read_file(&base, o->files[0], &o->dec, &err) ||
	    pd_pprof_read_file(&p, o->files[1], &o->dec, &err)) {
		fprintf(stderr, "profd pprof: %s\n", err.msg);
		goto out;
	}
	if (pd_pprof_diff(base, p, &d, &err)) {
		fprintf(stderr, "profd pprof: diff: %s\n", err.msg);
		goto out;
	}
	rc = write_profile(d, o->out);
out:
	pd_pprof_destroy(base);
	pd_pprof_destroy(p);
	pd_pprof_destroy(d);
	return rc;
}

static int cmd_dot(struct opts *o)
{
	struct pd_pprof_profile *p = NULL, *whole = NULL;
	struct pd_pprof_graph *g = NULL;
	struct pd_err err = {0};
	struct pd_buf b;
	int idx, rc = 1;
	pd_buf_init(&b, 0);
	if (load(o, &p) || choose_index(p, o->sample_index, &idx) || apply_filter(o, &p, &whole))
		goto out;
	struct pd_pprof_graph_opts go = {
	    .nodecount = o->nodecount < 0 ? PD_PPROF_DEFAULT_NODECOUNT
	                 : o->nodecount > PD_PPROF_MAX_NODECOUNT ? PD_PPROF_MAX_NODECOUNT
	                                                          : (int)o->nodecount,
	    .nodefraction = o->nodefraction,
	    .edgefraction = o->edgefraction,
	    .total = whole ? pd_pprof_total(whole, idx) : 0};
	if (pd_pprof_graph(p, idx, &go, &g, &err)) {
		fprintf(stderr, "profd pprof: %s\n", err.msg);
		goto out;
	}
	const char *bin = pd_pprof_main_binary(p);
	const char *slash = strrchr(bin, '/');
	const char *title = slash && slash[1] ? slash + 1 : bin;
	char file[512], type[256];
	const char *legend[12];
	char fl[8][96], flx[8][100];
	size_t nl = 0;
	if (*title) {
		snprintf(file, sizeof(file), "File: %s", title);
		legend[nl++] = file;
	}
	snprintf(type, sizeof(type), "Type: %s", g->sample_type);
	legend[nl++] = type;
	size_t nfl = pd_pprof_namefilter_legend(o->filter, fl, 8);
	if (nfl)
		legend[nl++] = "Active filters:";
	for (size_t i = 0; i < nfl; i++) {
		size_t l = strnlen(fl[i], sizeof(fl[i]) - 1);
		memcpy(flx[i], "   ", 3);
		memcpy(flx[i] + 3, fl[i], l);
		flx[i][3 + l] = '\0';
		legend[nl++] = flx[i];
	}
	if (pd_pprof_graph_dot(g, title, legend, nl, &b)) {
		fprintf(stderr, "profd pprof: out of memory writing the graph\n");
		goto out;
	}
	rc = fwrite(b.data, 1, b.len, stdout) == b.len ? 0 : 1;
out:
	pd_buf_fini(&b);
	pd_pprof_graph_destroy(g);
	pd_pprof_destroy(p);
	pd_pprof_destroy(whole);
	return rc;
}

static int cmd_validate(struct opts *o)
{
	int bad = 0;
	for (int i = 0; i < o->nfiles; i++) {
		struct pd_pprof_profile *p = NULL;
		struct pd_err err = {0};
		if (pd_pprof_read_file(&p, o->files[i], &o->dec, &err)) {
			printf("%s: invalid: %s\n", o->files[i], strchr(err.msg, ':') ? err.msg + strlen(o->files[i]) + 2 : err.msg);
			bad = 1;
			continue;
		}
		printf("%s: ok: %zu samples, %zu locations, %zu functions, %zu mappings; types",
		       o->files[i], pd_pprof_sample_count(p), pd_pprof_location_count(p),
		       pd_pprof_function_count(p), pd_pprof_mapping_count(p));
		for (size_t t = 0; t < pd_pprof_sample_type_count(p); t++)
			printf(" %s/%s", pd_pprof_sample_type(p, t), pd_pprof_sample_unit(p, t));
		printf("\n");
		pd_pprof_destroy(p);
	}
	return bad;
}

int pd_cmd_pprof(int argc, char **argv)
{
	struct opts o;
	int rc;
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	const char *sub = argv[1];
	if (parse(argc - 2, argv + 2, &o)) {
		free(o.files);
		free(o.bases);
		return 2;
	}
	if (o.nfiles == 0) {
		fprintf(stderr, "profd pprof %s: no input files\n", sub);
		free(o.files);
		free(o.bases);
		return 2;
	}
	if (o.nbases && (strcmp(sub, "speedscope") == 0 || strcmp(sub, "diff") == 0 ||
	                 strcmp(sub, "validate") == 0)) {
		/* never ignored: a report that cannot show a difference refuses it */
		fprintf(stderr, "profd pprof %s: --diff-base is not supported here%s\n", sub,
		        strcmp(sub, "speedscope") == 0 ? " (speedscope weights cannot be negative)"
		        : strcmp(sub, "diff") == 0     ? " (diff takes BASE as its first file)"
		                                       : "");
		rc = 2;
	} else if (strcmp(sub, "top") == 0 && o.sample_index && strcmp(o.sample_index, "all") == 0)
		rc = cmd_top_all(&o);
	else if (strcmp(sub, "top") == 0)
		rc = cmd_top(&o);
	else if (strcmp(sub, "flame") == 0)
		rc = cmd_flame(&o);
	else if (strcmp(sub, "folded") == 0)
		rc = cmd_export(&o, 0);
	else if (strcmp(sub, "speedscope") == 0)
		rc = cmd_export(&o, 1);
	else if (strcmp(sub, "dot") == 0)
		rc = cmd_dot(&o);
	else if (strcmp(sub, "merge") == 0)
		rc = cmd_merge(&o);
	else if (strcmp(sub, "diff") == 0)
		rc = cmd_diff(&o);
	else if (strcmp(sub, "validate") == 0)
		rc = cmd_validate(&o);
	else {
		fprintf(stderr, "profd pprof: unknown subcommand \"%s\"\n", sub);
		usage(stderr);
		rc = 2;
	}
	free(o.files);
	free(o.bases);
	pd_pprof_namefilter_destroy(o.filter);
	return rc;
}
