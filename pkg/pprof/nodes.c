/* nodes.c: pprof's report nodes. Every (location, line) of a profile becomes a
 * node keyed as pprof keys it at the profile's granularity (pd_pprof_granularity):
 * by function name (its report name, names.c); a frame whose function has no
 * name is keyed by its binary (and start line) instead, and is printed as
 * "[binary]" or "<unknown>". Finer granularities add the file, the line and the
 * address, printed as pprof's NameComponents prints them. The frames the
 * profile's drop_frames prunes are left out here, and pd_pprof_nodes_stack_lo says
 * where a sample's stack is cut (pd_pprof_stack_lo). Top tables, flame graphs and call graphs are
 * all built on these. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof_int.h"
#include "profd/labels.h"

struct keytab {
	char **keys;
	size_t *lens;
	uint32_t *slots; /* node index + 1, 0 empty */
	uint64_t *hashes;
	size_t cap;
};

static int keytab_grow(struct keytab *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 1024;
	uint32_t *slots = calloc(ncap, sizeof(*slots));
	if (!slots)
		return PD_ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->slots[i])
			continue;
		size_t j = t->hashes[t->slots[i] - 1] & (ncap - 1);
		while (slots[j])
			j = (j + 1) & (ncap - 1);
		slots[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = slots;
	t->cap = ncap;
	return 0;
}

/* The last element of the len bytes at path (its length into *n). */
static const char *base_name(const char *path, size_t len, size_t *n)
{
	size_t i = len;
	while (i && path[i - 1] != '/')
		i--;
	if (i && i < len) {
		*n = len - i;
		return path + i;
	}
	*n = len;
	return path;
}

static char *copy(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		if (n)
			memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* pprof's trimPath with no -trim_path nor -source_path (the /proc/self/cwd/
 * prefixes cut), then Go's filepath.Clean: the file a finer granularity shows.
 * Malloc'd, its length into *out_len; NULL when memory ran out. */
static char *clean_file(const char *f, size_t n, size_t *out_len)
{
	static const char *const trims[] = {"/proc/self/cwd/./", "/proc/self/cwd/"};
	for (size_t i = 0; i < 2; i++) {
		size_t tl = strlen(trims[i]);
		if (n >= tl && memcmp(f, trims[i], tl) == 0) {
			f += tl;
			n -= tl;
			break;
		}
	}
	char *d = malloc(n + 2);
	if (!d)
		return NULL;
	if (n == 0) {
		*out_len = 0; /* pprof leaves an empty file name unset */
		d[0] = '\0';
		return d;
	}
	/* Go's path.Clean, lexically: one slash between elements, no "." elements,
	 * ".." eating the element before it (or dropped at the root) */
	int rooted = f[0] == '/';
	size_t o = 0, r = 0, dotdot = 0;
	if (rooted) {
		d[o++] = '/';
		r = 1;
		dotdot = 1;
	}
	while (r < n) {
		if (f[r] == '/') {
			r++;
		} else if (f[r] == '.' && (r + 1 == n || f[r + 1] == '/')) {
			r++;
		} else if (f[r] == '.' && f[r + 1] == '.' && (r + 2 == n || f[r + 2] == '/')) {
			r += 2;
			if (o > dotdot) {
				o--;
				while (o > dotdot && d[o] != '/')
					o--;
			} else if (!rooted) {
				if (o > 0)
					d[o++] = '/';
				d[o++] = '.';
				d[o++] = '.';
				dotdot = o;
			}
		} else {
			if ((rooted && o != 1) || (!rooted && o != 0))
				d[o++] = '/';
			for (; r < n && f[r] != '/'; r++)
				d[o++] = f[r];
		}
	}
	if (o == 0)
		d[o++] = '.';
	d[o] = '\0';
	*out_len = o;
	return d;
}

/* Appends n bytes to the growing buffer *b (*len used, *cap allocated). */
static int put(char **b, size_t *len, size_t *cap, const void *s, size_t n)
{
	if (*len + n > *cap) {
		size_t c = *cap ? *cap : 256;
		while (c < *len + n)
			c *= 2;
		char *nb = realloc(*b, c);
		if (!nb)
			return PD_ENOMEM;
		*b = nb;
		*cap = c;
	}
	if (n)
		memcpy(*b + *len, s, n);
	*len += n;
	return 0;
}

/* A node at a granularity finer than functions, as pprof's NodeInfo: its key
 * (address, line, name, file, and binary and start line for a frame without a
 * name) into *key and its printable name (NameComponents joined by spaces)
 * into *name, both grown as needed. */
static int fine_node(char **key, size_t *klen, size_t *kcap, char **name, size_t *nlen,
                     size_t *ncap, uint64_t addr, int64_t lineno, const char *nm, size_t nml,
                     const char *fl, size_t fll, const char *obj, size_t ol, int64_t start_line)
{
	int noname = nml == 0;
	uint64_t ln[4] = {addr, (uint64_t)lineno, nml, fll};
	*klen = *nlen = 0;
	int rc = put(key, klen, kcap, ln, sizeof(ln));
	rc = rc ? rc : put(key, klen, kcap, nm, nml);
	rc = rc ? rc : put(key, klen, kcap, fl, fll);
	if (noname) {
		uint64_t ob[2] = {ol, (uint64_t)start_line};
		rc = rc ? rc : put(key, klen, kcap, ob, sizeof(ob));
		rc = rc ? rc : put(key, klen, kcap, obj, ol);
	}
	char num[40];
	if (addr) {
		snprintf(num, sizeof(num), "%016llx", (unsigned long long)addr);
		rc = rc ? rc : put(name, nlen, ncap, num, strlen(num));
	}
	if (nml) {
		if (*nlen)
			rc = rc ? rc : put(name, nlen, ncap, " ", 1);
		rc = rc ? rc : put(name, nlen, ncap, nm, nml);
	}
	const char *tail = NULL;
	size_t tl = 0;
	if (lineno || fll || !nml) {
		if (*nlen)
			rc = rc ? rc : put(name, nlen, ncap, " ", 1);
		if (lineno) {
			snprintf(num, sizeof(num), ":%lld", (long long)lineno);
			rc = rc ? rc : put(name, nlen, ncap, fl, fll);
			tail = num;
			tl = strlen(num);
		} else if (fll) {
			tail = fl;
			tl = fll;
		} else if (ol) {
			size_t bl;
			const char *b = base_name(obj, ol, &bl);
			rc = rc ? rc : put(name, nlen, ncap, "[", 1);
			rc = rc ? rc : put(name, nlen, ncap, b, bl);
			tail = "]";
			tl = 1;
		} else {
			tail = "<unknown>";
			tl = 9;
		}
	}
	rc = rc ? rc : put(name, nlen, ncap, tail, tl);
	return rc;
}

/* Finds or adds the node for key; the printable name is made on insertion. */
static int intern(struct keytab *t, struct pd_pprof_nodes *n, size_t *ncap, const char *key,
                  size_t klen, const char *name, size_t nlen, const char *objfile, size_t olen,
                  uint32_t *out)
{
	uint64_t h = pd_hash_bytes(key, klen, 0);
	if ((n->count + 1) * 2 > t->cap && keytab_grow(t))
		return PD_ENOMEM;
	size_t j = h & (t->cap - 1);
	while (t->slots[j]) {
		uint32_t id = t->slots[j] - 1;
		if (t->hashes[id] == h && t->lens[id] == klen &&
		    memcmp(t->keys[id], key, klen) == 0) {
			*out = id;
			return 0;
		}
		j = (j + 1) & (t->cap - 1);
	}
	if (n->count == *ncap) {
		size_t c = *ncap ? *ncap * 2 : 256;
		char **names = realloc(n->names, c * sizeof(*names));
		if (!names)
			return PD_ENOMEM;
		n->names = names;
		size_t *name_len = realloc(n->name_len, c * sizeof(*name_len));
		if (!name_len)
			return PD_ENOMEM;
		n->name_len = name_len;
		char **keys = realloc(t->keys, c * sizeof(*keys));
		if (!keys)
			return PD_ENOMEM;
		t->keys = keys;
		size_t *lens = realloc(t->lens, c * sizeof(*lens));
		if (!lens)
			return PD_ENOMEM;
		t->lens = lens;
		uint64_t *hashes = realloc(t->hashes, c * sizeof(*hashes));
		if (!hashes)
			return PD_ENOMEM;
		t->hashes = hashes;
		*ncap = c;
	}
	uint32_t id = (uint32_t)n->count;
	char *k = malloc(klen ? klen : 1);
	char *pn;
	size_t pl;
	if (nlen) {
		pn = copy(name, pl = nlen);
	} else if (olen) {
		size_t bl;
		const char *b = base_name(objfile, olen, &bl);
		pl = bl + 2;
		pn = malloc(bl + 3);
		if (pn) {
			pn[0] = '[';
			memcpy(pn + 1, b, bl);
			pn[bl + 1] = ']';
			pn[bl + 2] = '\0';
		}
	} else {
		pn = copy("<unknown>", pl = 9);
	}
	if (!k || !pn) {
		free(k);
		free(pn);
		return PD_ENOMEM;
	}
	memcpy(k, key, klen);
	t->keys[id] = k;
	t->lens[id] = klen;
	t->hashes[id] = h;
	n->names[id] = pn;
	n->name_len[id] = pl;
	n->count++;
	t->slots[j] = id + 1;
	*out = id;
	return 0;
}

/* The function name pprof's Prune matches: a leading '.' (PPC's ELF v1 ABI) and
 * an argument list left in the name cut off, "(anonymous namespace)" and
 * "operator()" kept. */
static size_t prune_name_len(const char **s, size_t n)
{
	static const char anon[] = "(anonymous namespace)", call[] = "operator()";
	if (n && (*s)[0] == '.') {
		(*s)++;
		n--;
	}
	const char *f = *s;
	for (size_t i = 0; i < n;) {
		if (n - i >= sizeof(anon) - 1 && memcmp(f + i, anon, sizeof(anon) - 1) == 0)
			i += sizeof(anon) - 1;
		else if (n - i >= sizeof(call) - 1 && memcmp(f + i, call, sizeof(call) - 1) == 0)
			i += sizeof(call) - 1;
		else if (f[i] == '(')
			return i;
		else
			i++;
	}
	return n;
}

/* pprof's regexp.Compile("^(" + re + ")$"): a regex that compiles alone, fully
 * anchored, '.' not matching a newline. NULL when it does not compile. */
static struct pd_labels_regex *prune_regex(const struct pd_pprof_profile *p, int64_t si)
{
	const char *re = pd_pprof_str(p, si);
	size_t len = pd_pprof_str_len(p, si);
	struct pd_labels_regex *rx = NULL;
	struct pd_err e = {0};
	if (pd_labels_regex_compile(&rx, re, len, 0, 0, &e))
		return NULL;
	pd_labels_regex_destroy(rx);
	rx = NULL;
	char *w = malloc(len + 8);
	if (!w)
		return NULL;
	memcpy(w, "(?-s:", 5);
	memcpy(w + 5, re, len);
	w[5 + len] = ')';
	if (pd_labels_regex_compile(&rx, w, len + 6, 0, 0, &e))
		rx = NULL;
	free(w);
	return rx;
}

int pd_pprof_nodes_build(const struct pd_pprof_profile *p, struct pd_pprof_nodes *n,
                         struct pd_err *err)
{
	const pb_profile *pb = p->pb;
	struct keytab t = {0};
	size_t ncap = 0, total = 0;
	uint32_t *fn_node = NULL;
	char **fn_own = NULL;        /* report names made (pd_pprof_report_name) */
	const char **fn_name = NULL; /* each function's report name, borrowed or made */
	size_t *fn_nlen = NULL;
	uint8_t *fn_drop = NULL; /* 0 not known yet, 1 dropped, 2 kept */
	struct pd_labels_regex *drop = NULL, *keep = NULL;
	char *kbuf = NULL;
	size_t kcap = 0;
	int rc = 0;
	enum pd_pprof_names mode = (enum pd_pprof_names)p->names;
	enum pd_pprof_granularity gran = (enum pd_pprof_granularity)p->granularity;
	char **fn_file = NULL; /* finer granularities: each function's file, cleaned */
	size_t *fn_flen = NULL;
	char *nbuf = NULL;
	size_t ncapb = 0;

	memset(n, 0, sizeof(*n));
	if (pb->drop_frames && pd_pprof_str_len(p, pb->drop_frames)) {
		/* a regex that does not compile prunes nothing, as pprof ignores it */
		drop = prune_regex(p, pb->drop_frames);
		if (drop && pb->keep_frames && pd_pprof_str_len(p, pb->keep_frames) &&
		    !(keep = prune_regex(p, pb->keep_frames))) {
			pd_labels_regex_destroy(drop);
			drop = NULL;
		}
	}
	for (size_t i = 0; i < pb->n_location; i++)
		total += pb->location[i]->n_line ? pb->location[i]->n_line : 1;
	size_t nf = pb->n_function ? pb->n_function : 1;
	n->loc_off = malloc((pb->n_location + 1) * sizeof(*n->loc_off));
	n->loc_node = malloc((total ? total : 1) * sizeof(*n->loc_node));
	fn_node = malloc(nf * sizeof(*fn_node));
	fn_name = calloc(nf, sizeof(*fn_name));
	fn_own = calloc(nf, sizeof(*fn_own));
	fn_nlen = calloc(nf, sizeof(*fn_nlen));
	fn_drop = drop ? calloc(nf, 1) : NULL;
	if (gran != PD_PPROF_GRAN_FUNCTIONS) {
		fn_file = calloc(nf, sizeof(*fn_file));
		fn_flen = calloc(nf, sizeof(*fn_flen));
		if (!fn_file || !fn_flen)
			goto nomem;
	}
	if (drop)
		n->loc_prune = calloc(pb->n_location ? pb->n_location : 1, 1);
	if (!n->loc_off || !n->loc_node || !fn_node || !fn_name || !fn_own || !fn_nlen ||
	    (drop && (!fn_drop || !n->loc_prune)) || total > UINT32_MAX)
		goto nomem;
	memset(fn_node, 0xff, nf * sizeof(*fn_node));

	uint32_t off = 0;
	for (size_t i = 0; i < pb->n_location; i++) {
		const pb_location *l = pb->location[i];
		int64_t objfile_idx = 0;
		if (l->mapping_id) {
			int64_t mi = pd_pprof_idmap_get(&p->mappings, l->mapping_id);
			objfile_idx = pb->mapping[mi]->filename;
		}
		const char *objfile = pd_pprof_str(p, objfile_idx);
		size_t olen = pd_pprof_str_len(p, objfile_idx);
		n->loc_off[i] = off;
		size_t nl = l->n_line ? l->n_line : 1;
		/* each function's report name, made once */
		for (size_t j = 0; j < l->n_line; j++) {
			int64_t fi = pd_pprof_idmap_get(&p->functions, l->line[j]->function_id);
			if (fn_name[fi])
				continue;
			const pb_function *f = pb->function[fi];
			const char *nm = pd_pprof_str(p, f->name),
			           *sy = pd_pprof_str(p, f->system_name);
			size_t nml = pd_pprof_str_len(p, f->name),
			       syl = pd_pprof_str_len(p, f->system_name);
			if (pd_pprof_name_as_is(nm, nml, sy, syl, mode)) {
				fn_name[fi] = nm;
				fn_nlen[fi] = nml;
				continue;
			}
			fn_own[fi] = pd_pprof_report_name(nm, nml, sy, syl, mode, &fn_nlen[fi]);
			if (!fn_own[fi])
				goto nomem;
			fn_name[fi] = fn_own[fi];
		}
		/* drop_frames: the outermost matching line, and every line inlined into it */
		size_t first = 0;
		if (drop && l->n_line) {
			size_t j = nl;
			while (j-- > 0) {
				int64_t fi =
				    pd_pprof_idmap_get(&p->functions, l->line[j]->function_id);
				if (!fn_nlen[fi])
					continue;
				if (!fn_drop[fi]) {
					const char *s = fn_name[fi];
					size_t sl = prune_name_len(&s, fn_nlen[fi]);
					int d = pd_labels_regex_match(drop, s, sl, NULL, 0) == 1 &&
					        !(keep &&
					          pd_labels_regex_match(keep, s, sl, NULL, 0) == 1);
					fn_drop[fi] = d ? 1 : 2;
				}
				if (fn_drop[fi] == 1)
					break;
			}
			if (j != (size_t)-1) {
				n->loc_prune[i] = j == nl - 1 ? 2 : 1;
				if (j < nl - 1)
					first = j + 1;
			}
		}
		for (size_t j = first; j < nl; j++) {
			uint32_t node;
			const char *name = "";
			size_t nlen = 0;
			int64_t start_line = 0;
			int64_t fi = -1;
			if (gran != PD_PPROF_GRAN_FUNCTIONS) {
				/* pprof's Aggregate then NodeInfo: files drop the name and
				 * line, only addresses keep the address */
				uint64_t addr = gran == PD_PPROF_GRAN_ADDRESSES ? l->address : 0;
				int64_t lineno = 0;
				const char *fl = "";
				size_t fll = 0;
				if (l->n_line) {
					fi = pd_pprof_idmap_get(&p->functions,
					                        l->line[j]->function_id);
					const pb_function *f = pb->function[fi];
					if (gran != PD_PPROF_GRAN_FILES) {
						name = fn_name[fi];
						nlen = fn_nlen[fi];
						lineno = l->line[j]->line;
					}
					if (!fn_file[fi] &&
					    !(fn_file[fi] = clean_file(
					          pd_pprof_str(p, f->filename),
					          pd_pprof_str_len(p, f->filename), &fn_flen[fi])))
						goto nomem;
					fl = fn_file[fi];
					fll = fn_flen[fi];
					start_line = f->start_line;
				}
				size_t klen = 0, pl = 0;
				if (fine_node(&kbuf, &klen, &kcap, &nbuf, &pl, &ncapb, addr, lineno,
				              name, nlen, fl, fll, objfile, olen, start_line) ||
				    intern(&t, n, &ncap, kbuf, klen, nbuf, pl, objfile, olen,
				           &node))
					goto nomem;
				n->loc_node[off++] = node;
				continue;
			}
			if (l->n_line) {
				fi = pd_pprof_idmap_get(&p->functions, l->line[j]->function_id);
				name = fn_name[fi];
				nlen = fn_nlen[fi];
				start_line = pb->function[fi]->start_line;
				if (nlen && fn_node[fi] != UINT32_MAX) {
					n->loc_node[off++] = fn_node[fi];
					continue;
				}
			}
			/* key: 1 + name, or for unnamed frames 0 + objfile + start line (names
			 * and file names may hold any byte, NUL included) */
			size_t klen = nlen ? 1 + nlen : 1 + olen + sizeof(start_line);
			if (klen > kcap) {
				char *nb = realloc(kbuf, klen);
				if (!nb)
					goto nomem;
				kbuf = nb;
				kcap = klen;
			}
			if (nlen) {
				kbuf[0] = 1;
				memcpy(kbuf + 1, name, nlen);
			} else {
				kbuf[0] = 0;
				if (olen)
					memcpy(kbuf + 1, objfile, olen);
				memcpy(kbuf + 1 + olen, &start_line, sizeof(start_line));
			}
			if (intern(&t, n, &ncap, kbuf, klen, name, nlen, objfile, olen, &node))
				goto nomem;
			if (nlen && fi >= 0)
				fn_node[fi] = node;
			n->loc_node[off++] = node;
		}
	}
	n->loc_off[pb->n_location] = off;
	goto out;
nomem:
	rc = pd_err_set(err, PD_ENOMEM, "out of memory building report nodes");
out:
	for (size_t i = 0; i < n->count; i++)
		free(t.keys[i]);
	free(t.keys);
	free(t.lens);
	free(t.hashes);
	free(t.slots);
	free(fn_node);
	if (fn_own)
		for (size_t i = 0; i < nf; i++)
			free(fn_own[i]);
	free(fn_own);
	free(fn_name);
	free(fn_nlen);
	free(fn_drop);
	if (fn_file)
		for (size_t i = 0; i < nf; i++)
			free(fn_file[i]);
	free(fn_file);
	free(fn_flen);
	free(nbuf);
	pd_labels_regex_destroy(drop);
	pd_labels_regex_destroy(keep);
	free(kbuf);
	if (rc)
		pd_pprof_nodes_fini(n);
	return rc;
}

size_t pd_pprof_stack_lo(const uint8_t *loc_prune, const struct pd_pprof_profile *p,
                         const pb_sample *s)
{
	if (!loc_prune)
		return 0;
	/* from the root: nothing is cut before the first frame that is kept */
	int user = 0;
	for (size_t k = s->n_location_id; k-- > 0;) {
		int64_t li = pd_pprof_idmap_get(&p->locations, s->location_id[k]);
		uint8_t pr = loc_prune[li];
		if (!pr) {
			user = 1;
			continue;
		}
		if (!user)
			continue;
		return pr == 2 ? k + 1 : k;
	}
	return 0;
}

void pd_pprof_nodes_fini(struct pd_pprof_nodes *n)
{
	for (size_t i = 0; i < n->count; i++)
		free(n->names[i]);
	free(n->names);
	free(n->name_len);
	free(n->loc_off);
	free(n->loc_node);
	free(n->loc_prune);
	memset(n, 0, sizeof(*n));
}
