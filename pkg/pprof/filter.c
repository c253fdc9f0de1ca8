/* filter.c: pprof's stack filters -focus, -ignore, -hide, -show, -show_from and
 * -prune_from, applied to a profile exactly as go tool pprof's driver applies them
 * (its FilterSamplesByName, ShowFrom and PruneFrom, in that order): regexes in
 * Go's syntax matched anywhere in a function's report name or file name, or in a
 * location's mapping file. The result is a new profile; the input is only read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof_int.h"
#include "profd/labels.h"

enum { F_FOCUS, F_IGNORE, F_HIDE, F_SHOW, F_SHOW_FROM, F_PRUNE_FROM, F_N };

static const char *const opt_names[F_N] = {"focus", "ignore", "hide", "show", "show_from",
                                           "prune_from"};

struct pd_pprof_namefilter {
	struct pd_labels_regex *rx[F_N];
	char *spec[F_N];
};

void pd_pprof_namefilter_destroy(struct pd_pprof_namefilter *f)
{
	if (!f)
		return;
	for (int i = 0; i < F_N; i++) {
		pd_labels_regex_destroy(f->rx[i]);
		free(f->spec[i]);
	}
	free(f);
}

int pd_pprof_namefilter_create(struct pd_pprof_namefilter **out,
                               const struct pd_pprof_namefilter_spec *spec, struct pd_err *err)
{
	const char *v[F_N] = {spec->focus, spec->ignore,    spec->hide,
	                      spec->show,  spec->show_from, spec->prune_from};
	*out = NULL;
	struct pd_pprof_namefilter *f = calloc(1, sizeof(*f));
	if (!f)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	int any = 0;
	for (int i = 0; i < F_N; i++) {
		if (!v[i] || !*v[i])
			continue; /* an empty option is no filter, as in pprof */
		size_t n = strlen(v[i]);
		if (n > PD_PPROF_DEFAULT_MAX_TAGFILTER_LEN) {
			pd_pprof_namefilter_destroy(f);
			return pd_err_set(err, PD_EINVAL, "%s: %zu bytes is over the limit of %d",
			                  opt_names[i], n, PD_PPROF_DEFAULT_MAX_TAGFILTER_LEN);
		}
		struct pd_err e = {0};
		int rc = pd_pprof_compile_unanchored(&f->rx[i], v[i], n, &e);
		if (!rc && !(f->spec[i] = strdup(v[i])))
			rc = pd_err_set(&e, PD_ENOMEM, "out of memory");
		if (rc) {
			pd_pprof_namefilter_destroy(f);
			return pd_err_set(err, rc, "parsing %s regexp: %s", opt_names[i], e.msg);
		}
		any = 1;
	}
	if (!any) {
		pd_pprof_namefilter_destroy(f);
		return 0;
	}
	*out = f;
	return 0;
}

size_t pd_pprof_namefilter_legend(const struct pd_pprof_namefilter *f, char lines[][96],
                                  size_t max)
{
	size_t n = 0;
	/* pprof's "Active filters:" lists all but prune_from, each cut at 80 bytes */
	for (int i = 0; f && i < F_PRUNE_FROM && n < max; i++) {
		if (!f->spec[i])
			continue;
		size_t l = strlen(f->spec[i]);
		snprintf(lines[n++], 96, "%s=%.*s%s", opt_names[i],
		         (int)(l + strlen(opt_names[i]) + 1 > 80 ? 80 - strlen(opt_names[i]) - 1 : l),
		         f->spec[i], l + strlen(opt_names[i]) + 1 > 80 ? "\xe2\x80\xa6" : "");
	}
	return n;
}

const char *pd_pprof_namefilter_option(int bit)
{
	return bit >= 0 && bit < F_N ? opt_names[bit] : "?";
}

/* What each function matches: bit i for regex i, by its report name or file. */
struct fmatch {
	uint8_t *bits;     /* per function index */
	uint8_t *pruned;   /* per function index: prune_from matches its simplified name */
};

static int rx_match(const struct pd_labels_regex *rx, const char *s, size_t len)
{
	return rx && pd_labels_regex_match(rx, s, len, NULL, 0) == 1;
}

/* pprof's simplifyFunc: the name without a leading '.', cut at the first '('
 * that does not begin "(anonymous namespace)" and is not in "operator()". */
static size_t simplified_len(const char **name, size_t len)
{
	const char *s = *name;
	if (len && s[0] == '.') {
		s++;
		len--;
	}
	*name = s;
	static const char anon[] = "(anonymous namespace)", op[] = "operator()";
	for (size_t i = 0; i < len;) {
		if (len - i >= sizeof(anon) - 1 && memcmp(s + i, anon, sizeof(anon) - 1) == 0)
			i += sizeof(anon) - 1;
		else if (len - i >= sizeof(op) - 1 && memcmp(s + i, op, sizeof(op) - 1) == 0)
			i += sizeof(op) - 1;
		else if (s[i] == '(')
			return i;
		else
			i++;
	}
	return len;
}

static int match_functions(const struct pd_pprof_profile *p, const struct pd_pprof_parts *pt,
                           const struct pd_pprof_namefilter *f, struct fmatch *m,
                           struct pd_err *err)
{
	size_t n = pt->nfunction ? pt->nfunction : 1;
	m->bits = calloc(n, 1);
	m->pruned = calloc(n, 1);
	if (!m->bits || !m->pruned)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < pt->nfunction; i++) {
		const struct pd_pprof_pfunction *fn = &pt->function[i];
		size_t nl = 0;
		char *name = pd_pprof_report_name(pt->strings[fn->name], pt->string_len[fn->name],
		                                  pt->strings[fn->system_name],
		                                  pt->string_len[fn->system_name], p->names, &nl);
		if (!name)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		const char *file = pt->strings[fn->filename];
		size_t flen = pt->string_len[fn->filename];
		for (int r = 0; r < F_PRUNE_FROM; r++)
			if (f->rx[r] && (rx_match(f->rx[r], name, nl) || rx_match(f->rx[r], file, flen)))
				m->bits[i] |= (uint8_t)(1u << r);
		if (f->rx[F_PRUNE_FROM] && nl) {
			const char *s = name;
			size_t sl = simplified_len(&s, nl);
			m->pruned[i] = (uint8_t)rx_match(f->rx[F_PRUNE_FROM], s, sl);
		}
		free(name);
	}
	return 0;
}

/* Bits of regexes matching mapping m's file (none for no mapping). */
static uint8_t mapping_bits(const struct pd_pprof_profile *p, const struct pd_pprof_parts *pt,
                            const struct pd_pprof_namefilter *f, uint64_t mapping_id)
{
	int64_t mi = mapping_id ? pd_pprof_idmap_get(&p->mappings, mapping_id) : -1;
	if (mi < 0)
		return 0;
	int64_t s = pt->mapping[mi].filename;
	uint8_t b = 0;
	for (int r = 0; r < F_PRUNE_FROM; r++)
		if (rx_match(f->rx[r], pt->strings[s], pt->string_len[s]))
			b |= (uint8_t)(1u << r);
	return b;
}

static uint8_t line_bits(const struct pd_pprof_profile *p, const struct fmatch *m,
                         const struct pd_pprof_pline *ln, int *has_fn)
{
	int64_t fi = ln->function_id ? pd_pprof_idmap_get(&p->functions, ln->function_id) : -1;
	*has_fn = fi >= 0;
	return fi >= 0 ? m->bits[fi] : 0;
}

/* Per-location state after the name filters. */
enum { L_FOCUS = 1, L_IGNORE = 2, L_HIDDEN = 4, L_SHOWFROM = 8, L_PRUNE = 16 };

int pd_pprof_filter_names(const struct pd_pprof_profile *p, const struct pd_pprof_namefilter *f,
                          struct pd_pprof_profile **out, unsigned *unmatched, struct pd_err *err)
{
	struct pd_pprof_parts pt = {0};
	struct fmatch m = {0};
	uint8_t *st = NULL;
	struct pd_pprof_pline *lines = NULL;
	struct pd_pprof_plocation *locs = NULL;
	struct pd_pprof_psample *samples = NULL;
	uint64_t *stack = NULL;
	unsigned matched = 0;
	int rc;
	*out = NULL;
	if ((rc = pd_pprof_parts_get(p, &pt, err)) || (rc = match_functions(p, &pt, f, &m, err)))
		goto out;
	size_t nlines = 0, nstack = 0;
	for (size_t i = 0; i < pt.nlocation; i++)
		nlines += pt.location[i].nline;
	for (size_t i = 0; i < pt.nsample; i++)
		nstack += pt.sample[i].nlocation;
	st = calloc(pt.nlocation ? pt.nlocation : 1, 1);
	lines = malloc((nlines ? nlines : 1) * sizeof(*lines));
	locs = malloc((pt.nlocation ? pt.nlocation : 1) * sizeof(*locs));
	samples = malloc((pt.nsample ? pt.nsample : 1) * sizeof(*samples));
	stack = malloc((nstack ? nstack : 1) * sizeof(*stack));
	if (!st || !lines || !locs || !samples || !stack) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	const struct pd_labels_regex *const *rx = (const struct pd_labels_regex *const *)f->rx;
	/* locations: FilterSamplesByName's loop, then ShowFrom's, then PruneFrom's */
	size_t lat = 0;
	for (size_t i = 0; i < pt.nlocation; i++) {
		const struct pd_pprof_plocation *l = &pt.location[i];
		struct pd_pprof_plocation *d = &locs[i];
		*d = *l;
		d->line = lines + lat;
		memcpy(d->line, l->line, l->nline * sizeof(*l->line));
		lat += l->nline;
		uint8_t mb = mapping_bits(p, &pt, f, l->mapping_id), any = mb;
		for (size_t j = 0; j < l->nline; j++) {
			int h;
			any |= line_bits(p, &m, &l->line[j], &h);
		}
		if (rx[F_IGNORE] && (any & (1u << F_IGNORE))) {
			st[i] |= L_IGNORE;
			matched |= 1u << F_IGNORE;
		} else if (!rx[F_FOCUS] || (any & (1u << F_FOCUS))) {
			st[i] |= L_FOCUS;
			matched |= 1u << F_FOCUS;
		}
		if (rx[F_HIDE] && (any & (1u << F_HIDE))) {
			matched |= 1u << F_HIDE;
			size_t k = 0;
			if (!(mb & (1u << F_HIDE)))
				for (size_t j = 0; j < d->nline; j++) {
					int h;
					uint8_t b = line_bits(p, &m, &d->line[j], &h);
					if (!h || !(b & (1u << F_HIDE)))
						d->line[k++] = d->line[j];
				}
			d->nline = k;
			if (!k)
				st[i] |= L_HIDDEN;
		}
		if (rx[F_SHOW]) {
			size_t k = 0;
			if (mb & (1u << F_SHOW))
				k = d->nline;
			else
				for (size_t j = 0; j < d->nline; j++) {
					int h;
					uint8_t b = line_bits(p, &m, &d->line[j], &h);
					if (!h || (b & (1u << F_SHOW)))
						d->line[k++] = d->line[j];
				}
			d->nline = k;
			if (!k)
				st[i] |= L_HIDDEN;
			else
				matched |= 1u << F_SHOW;
		}
	}
	for (size_t i = 0; rx[F_SHOW_FROM] && i < pt.nlocation; i++) {
		struct pd_pprof_plocation *d = &locs[i];
		if (mapping_bits(p, &pt, f, d->mapping_id) & (1u << F_SHOW_FROM)) {
			st[i] |= L_SHOWFROM;
			continue;
		}
		for (size_t j = d->nline; j-- > 0;) {
			int h;
			if (line_bits(p, &m, &d->line[j], &h) & (1u << F_SHOW_FROM)) {
				d->nline = j + 1;
				st[i] |= L_SHOWFROM;
				break;
			}
		}
		if (st[i] & L_SHOWFROM)
			matched |= 1u << F_SHOW_FROM;
	}
	for (size_t i = 0; rx[F_PRUNE_FROM] && i < pt.nlocation; i++) {
		struct pd_pprof_plocation *d = &locs[i];
		for (size_t j = 0; j < d->nline; j++) {
			int64_t fi = d->line[j].function_id
			                 ? pd_pprof_idmap_get(&p->functions, d->line[j].function_id)
			                 : -1;
			if (fi >= 0 && m.pruned[fi]) {
				d->line += j;
				d->nline -= j;
				st[i] |= L_PRUNE;
				break;
			}
		}
	}
	/* samples */
	size_t ns = 0, sat = 0;
	for (size_t i = 0; i < pt.nsample; i++) {
		const struct pd_pprof_psample *s = &pt.sample[i];
		uint64_t *ids = stack + sat;
		size_t k = 0;
		int focused = 0, ignored = 0;
		for (size_t j = 0; j < s->nlocation; j++) {
			int64_t li = pd_pprof_idmap_get(&p->locations, s->location_id[j]);
			uint8_t b = li >= 0 ? st[li] : 0;
			if (b & L_IGNORE)
				ignored = 1;
			if (b & L_FOCUS)
				focused = 1;
			if (!(b & L_HIDDEN))
				ids[k++] = s->location_id[j];
		}
		if (ignored || !focused || k == 0)
			continue; /* pprof runs this part on every report */
		if (rx[F_SHOW_FROM]) {
			size_t top = 0;
			for (size_t j = k; j-- > 0;) {
				int64_t li = pd_pprof_idmap_get(&p->locations, ids[j]);
				if (li >= 0 && (st[li] & L_SHOWFROM)) {
					top = j + 1;
					break;
				}
			}
			if (!top)
				continue;
			k = top;
		}
		if (rx[F_PRUNE_FROM]) {
			for (size_t j = 0; j < k; j++) {
				int64_t li = pd_pprof_idmap_get(&p->locations, ids[j]);
				if (li >= 0 && (st[li] & L_PRUNE)) {
					memmove(ids, ids + j, (k - j) * sizeof(*ids));
					k -= j;
					break;
				}
			}
		}
		samples[ns] = *s;
		samples[ns].location_id = ids;
		samples[ns].nlocation = k;
		ns++;
		sat += k;
	}
	struct pd_pprof_parts o = pt;
	o.location = locs;
	o.sample = samples;
	o.nsample = ns;
	o.arena = NULL;
	if ((rc = pd_pprof_parts_copy(&o, out, err)))
		goto out;
	(*out)->names = p->names;
	(*out)->granularity = p->granularity;
	if (unmatched) {
		*unmatched = 0;
		for (int r = 0; r < F_PRUNE_FROM; r++)
			if (rx[r] && !(matched & (1u << r)))
				*unmatched |= 1u << r;
	}
out:
	pd_pprof_parts_fini(&pt);
	free(m.bits);
	free(m.pruned);
	free(st);
	free(lines);
	free(locs);
	free(samples);
	free(stack);
	return rc;
}
